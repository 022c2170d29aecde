/* lesson.c — a viewer that explains: the caption bar (the caption engine's line for the
 * shown time, or a lesson's authored caption once the global step reaches it), the caption
 * history, the "paused for the lesson" banner and the question card. A lesson rides in the
 * trace metadata as "lesson" (top level, or under "config" for the simulator); it is parsed
 * once when the source opens and kept on the source. The captioner is fed the source's
 * events lazily up to the shown time and rebuilt from the start only when the view goes
 * back past what its history holds (or, for the history list, back at all), so a frame stays
 * a function of (source, view). One thread, like its source. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/dp.h"
#include "viz/captions.h"
#include "viz/internal.h"

typedef struct lesson_caption { int64_t step; char *text; } lesson_caption;
typedef struct lesson_question {
    int64_t step;
    char *question;
    char *choices[VIZ_LESSON_CHOICES];
    int n_choices, answer;
} lesson_question;

struct viz_lesson {
    int present;                 /* the metadata has a "lesson" object */
    char *meta;                  /* the metadata, for the captioner */
    lesson_caption *caps; int n_caps;
    int64_t *pauses; int n_pauses;
    lesson_question *qs; int n_qs;
    evt_captioner *cap;          /* made on first use */
    int64_t fed_t;               /* events with time <= fed_t were fed (-1 none) */
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = xmalloc(n);
    memcpy(d, s ? s : "", n);
    return d;
}

static int by_step(const void *a, const void *b)
{
    int64_t x = ((const lesson_caption *)a)->step, y = ((const lesson_caption *)b)->step;
    return x < y ? -1 : x > y;
}

static void parse_lesson(viz_lesson *l, json_t *o)
{
    json_t *arr = json_object_get(o, "captions"), *v;
    size_t i;
    l->caps = xcalloc(json_array_size(arr) + 1, sizeof *l->caps);
    json_array_foreach(arr, i, v) {
        json_t *st = json_object_get(v, "step");
        const char *t = json_string_value(json_object_get(v, "text"));
        if (!json_is_integer(st) || !t) continue;
        l->caps[l->n_caps].step = json_integer_value(st);
        l->caps[l->n_caps++].text = dup_str(t);
    }
    qsort(l->caps, (size_t)l->n_caps, sizeof *l->caps, by_step);   /* stable enough: steps differ */
    arr = json_object_get(o, "pauses");
    l->pauses = xcalloc(json_array_size(arr) + 1, sizeof *l->pauses);
    json_array_foreach(arr, i, v)
        if (json_is_integer(v)) l->pauses[l->n_pauses++] = json_integer_value(v);
    arr = json_object_get(o, "questions");
    l->qs = xcalloc(json_array_size(arr) + 1, sizeof *l->qs);
    json_array_foreach(arr, i, v) {
        json_t *st = json_object_get(v, "step"), *ch = json_object_get(v, "choices"), *c;
        const char *q = json_string_value(json_object_get(v, "question"));
        if (!json_is_integer(st) || !q || json_array_size(ch) < 2) continue;
        lesson_question *lq = &l->qs[l->n_qs++];
        lq->step = json_integer_value(st);
        lq->question = dup_str(q);
        size_t k;
        json_array_foreach(ch, k, c)
            if (lq->n_choices < VIZ_LESSON_CHOICES) lq->choices[lq->n_choices++] = dup_str(json_string_value(c));
        json_t *ans = json_object_get(v, "answer");
        lq->answer = json_is_integer(ans) ? (int)json_integer_value(ans) : -1;
        if (lq->answer < 0 || lq->answer >= lq->n_choices) lq->answer = -1;
    }
}

viz_lesson *viz_lesson_new(const char *metadata_json)
{
    viz_lesson *l = xcalloc(1, sizeof *l);
    l->meta = metadata_json ? dup_str(metadata_json) : NULL;
    l->fed_t = -1;
    json_t *o = metadata_json ? json_loads(metadata_json, 0, NULL) : NULL;
    json_t *les = json_object_get(o, "lesson");
    if (!json_is_object(les)) les = json_object_get(json_object_get(o, "config"), "lesson");
    if (json_is_object(les)) {
        l->present = 1;
        parse_lesson(l, les);
    }
    json_decref(o);
    return l;
}

void viz_lesson_free(viz_lesson *l)
{
    if (!l) return;
    for (int i = 0; i < l->n_caps; i++) free(l->caps[i].text);
    for (int i = 0; i < l->n_qs; i++) {
        free(l->qs[i].question);
        for (int k = 0; k < l->qs[i].n_choices; k++) free(l->qs[i].choices[k]);
    }
    free(l->caps);
    free(l->pauses);
    free(l->qs);
    free(l->meta);
    evt_captioner_free(l->cap);
    free(l);
}

int viz_lesson_present(const viz_source *s)
{
    return s->lesson && s->lesson->present;
}

int viz_captions_on(const viz_source *s, const viz_view *v)
{
    return v->captions > 0 || (v->captions == 0 && viz_lesson_present(s));
}

/* ---- the captioner, fed up to the shown time ------------------------------------------ */
static void feed_cb(void *ctx, const evt_record *e)
{
    evt_captioner_add(ctx, e);
}

/* The captioner with every event up to t fed; exact: none later either (the history). */
static evt_captioner *captioner_at(viz_source *s, int64_t t, int exact)
{
    viz_lesson *l = s->lesson;
    if (!l->cap) {
        if (s->kind == VIZ_SRC_TRACE) l->cap = evt_captioner_new(l->meta, evt_caption_trace_str, s->r, 0);
        else l->cap = evt_captioner_new(l->meta, evt_caption_strtab_str, s->strs, 0);
    }
    if (t < l->fed_t && (exact || (!evt_captioner_at(l->cap, t) && evt_captioner_dropped(l->cap) > 0))) {
        evt_captioner_reset(l->cap);
        l->fed_t = -1;
    }
    if (t > l->fed_t) {
        viz_source_scan(s, l->fed_t + 1, t, (size_t)-1, feed_cb, l->cap);
        l->fed_t = t;
    }
    return l->cap;
}

const char *viz_lesson_caption(viz_source *s, int64_t t, int64_t gstep)
{
    if (!s->lesson) return NULL;
    const evt_caption *rc = evt_captioner_at(captioner_at(s, t, 0), t);
    const lesson_caption *lc = NULL;
    for (int i = 0; i < s->lesson->n_caps && s->lesson->caps[i].step <= gstep; i++) lc = &s->lesson->caps[i];
    if (lc && (!rc || rc->step <= lc->step)) return lc->text;   /* authored wins its step */
    return rc ? rc->text : NULL;
}

/* ---- stops: pauses and questions -------------------------------------------------------- */
/* Whether the run ever reached global step `step` (the model's last bucket). */
static int reached(const viz_source *s, int64_t step)
{
    return s->m.nb > 0 && viz_model_gstep_at(&s->m, s->m.nb - 1) >= step;
}

int viz_lesson_next_stop(viz_source *s, int64_t a, int64_t b, viz_lesson_stop *out)
{
    memset(out, 0, sizeof *out);
    viz_lesson *l = s->lesson;
    if (!l || !l->present || b <= a) return 0;
    for (int kind = VIZ_STOP_QUESTION; kind >= VIZ_STOP_PAUSE; kind--) {   /* a question wins a tie */
        int n = kind == VIZ_STOP_QUESTION ? l->n_qs : l->n_pauses;
        for (int i = 0; i < n; i++) {
            int64_t step = kind == VIZ_STOP_QUESTION ? l->qs[i].step : l->pauses[i];
            if (!reached(s, step)) continue;
            int64_t t = viz_source_time_of_step(s, step);
            if (t <= a || t > b) continue;
            if (out->kind && t >= out->t) continue;
            *out = (viz_lesson_stop){kind, i, step, t};
        }
    }
    return out->kind != VIZ_STOP_NONE;
}

int viz_lesson_choices(const viz_source *s, int question, int *answer)
{
    const viz_lesson *l = s->lesson;
    if (!l || question < 0 || question >= l->n_qs) return 0;
    if (answer) *answer = l->qs[question].answer;
    return l->qs[question].n_choices;
}

/* ---- layout --------------------------------------------------------------------------- */
viz_rect viz_lesson_bar_rect(const viz_layout *l)
{
    double s = l->s, h = l->font * 2.3;
    viz_rect c = l->cluster;
    return (viz_rect){c.x + 8 * s, c.y + c.h - h - 6 * s, c.w - 16 * s, h};
}

/* The question card: centred on the cluster; the question gets three lines of qf, each
 * choice a row of 2.2 cf, then two lines for the explanation and one for the footer. */
void viz_lesson_card_layout(const viz_layout *l, int n_choices, viz_rect *card, viz_rect *choices)
{
    double s = l->s, qf = l->font * 1.5, cf = l->font * 1.3, pad = 20 * s;
    double w = fmin(l->cluster.w * 0.86, 980 * s);
    double h = pad + qf * 1.35 * 3 + pad * 0.5 + (double)n_choices * cf * 2.2 + l->font * 1.5 * 3 + pad;
    double y = fmax(l->top.y + l->top.h + 6 * s, l->cluster.y + (l->cluster.h - h) / 2);
    *card = (viz_rect){l->cluster.x + (l->cluster.w - w) / 2, y, w, h};
    for (int i = 0; i < n_choices; i++)
        choices[i] = (viz_rect){card->x + pad, card->y + pad + qf * 1.35 * 3 + pad * 0.5 + (double)i * cf * 2.2,
                                card->w - 2 * pad, cf * 1.9};
}

/* ---- drawing ---------------------------------------------------------------------------- */
/* Draws text wrapped on words into at most max_lines lines of width w from baseline y. */
static void wrap_text(cairo_t *cr, double x, double y, double w, double lh, const char *text, int max_lines)
{
    char line[512];
    const char *p = text;
    for (int n = 0; *p && n < max_lines; n++) {
        size_t fit = 0, next = 0;
        for (;;) {
            while (p[next] == ' ') next++;
            while (p[next] && p[next] != ' ') next++;
            if (next >= sizeof line) break;
            memcpy(line, p, next);
            line[next] = 0;
            if (fit && viz_text_width(cr, line) > w) break;
            fit = next;
            if (!p[next]) break;
        }
        if (!fit) fit = strlen(p) < sizeof line - 1 ? strlen(p) : sizeof line - 1;
        snprintf(line, sizeof line, "%.*s", (int)fit, p);
        viz_text(cr, x, y + lh * n, n + 1 == max_lines ? p : line, 0, w);   /* the last line gets an ellipsis */
        p += fit;
        while (*p == ' ') p++;
    }
}

static void draw_question(viz_ctx *c, const char *explain)
{
    const viz_view *v = c->view;
    const lesson_question *q = &c->src->lesson->qs[v->question - 1];
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, qf = l->font * 1.5, cf = l->font * 1.3, pad = 20 * s;
    viz_rect card, ch[VIZ_LESSON_CHOICES];
    viz_lesson_card_layout(l, q->n_choices, &card, ch);
    viz_seta(cr, VIZ_INK, 0.18);
    viz_round_rect(cr, (viz_rect){card.x + 5 * s, card.y + 6 * s, card.w, card.h}, 12 * s);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, card, 12 * s);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_INK);
    cairo_set_line_width(cr, 2 * s);
    cairo_stroke(cr);
    viz_font(cr, qf, 1);
    wrap_text(cr, card.x + pad, card.y + pad + qf, card.w - 2 * pad, qf * 1.35, q->question, 3);
    viz_rgb right = viz_phase_color(EVT_PHASE_COMPUTING), wrong = viz_phase_color(EVT_PHASE_DEAD);
    for (int i = 0; i < q->n_choices; i++) {
        int is_right = v->revealed && i == q->answer, is_picked = v->revealed && v->picked == i + 1;
        viz_round_rect(cr, ch[i], 8 * s);
        viz_set(cr, is_right ? right : VIZ_PANEL);
        cairo_fill_preserve(cr);
        viz_set(cr, is_picked && !is_right ? wrong : VIZ_LINE);
        cairo_set_line_width(cr, (is_picked && !is_right ? 3 : 1.5) * s);
        cairo_stroke(cr);
        char label[8];
        snprintf(label, sizeof label, "%c", 'A' + i);
        viz_font(cr, cf, 1);
        viz_set(cr, is_right ? VIZ_PANEL : VIZ_ACCENT);
        double base = ch[i].y + ch[i].h / 2 + cf * 0.35;
        viz_text(cr, ch[i].x + cf * 0.8, base, label, 0, 0);
        viz_font(cr, cf, 0);
        viz_set(cr, is_right ? VIZ_PANEL : VIZ_INK);
        viz_text(cr, ch[i].x + cf * 2.4, base, q->choices[i], 0, ch[i].w - cf * 3);
    }
    double y = ch[q->n_choices - 1].y + ch[q->n_choices - 1].h + l->font * 1.6;
    viz_font(cr, l->font, 0);
    if (v->revealed && explain && *explain) {
        viz_set(cr, VIZ_INK);
        wrap_text(cr, card.x + pad, y, card.w - 2 * pad, l->font * 1.3, explain, 2);
    }
    char foot[96];
    if (v->revealed) snprintf(foot, sizeof foot, "space to go on");
    else snprintf(foot, sizeof foot, "press A\xe2\x80\x93%c or space for the answer", 'A' + q->n_choices - 1);
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, card.x + pad, card.y + card.h - pad * 0.8, foot, 0, card.w - 2 * pad);
}

static void draw_banner(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, f = l->font * 1.2;
    const char *msg = "paused for the lesson: space to go on";
    viz_font(cr, f, 1);
    double w = viz_text_width(cr, msg) + 32 * s, h = f * 2;
    viz_rect r = {l->cluster.x + (l->cluster.w - w) / 2, l->cluster.y + 8 * s, w, h};
    viz_set(cr, VIZ_ACCENT);
    viz_round_rect(cr, r, 8 * s);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_text(cr, r.x + r.w / 2, r.y + h / 2 + f * 0.35, msg, 1, 0);
}

void viz_draw_lesson(viz_ctx *c)
{
    viz_source *s = c->src;
    const viz_view *v = c->view;
    if (!s->lesson) return;
    int on = viz_captions_on(s, v);
    const char *text = on || v->revealed ? viz_lesson_caption(s, c->t, c->st->global_step) : NULL;
    if (v->history) {
        viz_rect r = c->lay.cluster;
        double in = 12 * c->lay.s;
        viz_rect h = {r.x + in, r.y + in, r.w - 2 * in, r.h - 2 * in - (on ? viz_lesson_bar_rect(&c->lay).h + in : 0)};
        viz_set(c->cr, VIZ_PANEL);
        cairo_rectangle(c->cr, h.x, h.y, h.w, h.h);
        cairo_fill(c->cr);
        viz_draw_caption_history(c->cr, h, captioner_at(s, c->t, 1), v->history_scroll);
    }
    if (on) viz_draw_caption_bar(c->cr, viz_lesson_bar_rect(&c->lay), text, 0);
    if (v->lesson_pause && !v->question) draw_banner(c);
    if (v->question > 0 && v->question <= s->lesson->n_qs) {
        const lesson_question *q = &s->lesson->qs[v->question - 1];
        const char *explain = NULL;   /* the authored caption of its step, else the rule's */
        for (int i = 0; i < s->lesson->n_caps; i++)
            if (s->lesson->caps[i].step == q->step) explain = s->lesson->caps[i].text;
        draw_question(c, explain ? explain : text);
    }
}

int viz_lesson_bar_hit(viz_source *s, const viz_view *v, double x, double y)
{
    if (v->compare || !viz_captions_on(s, v)) return 0;
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, v, v->t, v->width, v->height, 1);
    int hit = viz_rect_contains(viz_lesson_bar_rect(&c.lay), x, y);
    viz_ctx_end(&c);
    return hit;
}

void viz_lesson_describe(viz_source *s, const viz_view *v, char *buf, size_t n)
{
    int on = viz_captions_on(s, v);
    int len = snprintf(buf, n, " captions=%d history=%d question=%d revealed=%d", on, v->history, v->question,
                       v->revealed);
    int answer = -1, k = viz_lesson_choices(s, v->question - 1, &answer);
    int bar = on && !v->compare;   /* where a click opens the history (viz_lesson_bar_hit) */
    if ((!k && !bar) || len < 0 || (size_t)len >= n) return;
    viz_ctx c;
    viz_rect card, ch[VIZ_LESSON_CHOICES], b = {0, 0, 0, 0};
    viz_ctx_begin(&c, NULL, s, v, v->t, v->width, v->height, 1);
    if (k) viz_lesson_card_layout(&c.lay, k, &card, ch);
    if (bar) b = viz_lesson_bar_rect(&c.lay);
    viz_ctx_end(&c);
    if (bar) len += snprintf(buf + len, n - (size_t)len, " bar=%.0f,%.0f,%.0f,%.0f", b.x, b.y, b.x + b.w, b.y + b.h);
    if (!k || len < 0 || (size_t)len >= n) return;
    len += snprintf(buf + len, n - (size_t)len, " answer=%d card=%.0f,%.0f,%.0f,%.0f", answer, card.x, card.y,
                    card.x + card.w, card.y + card.h);
    for (int i = 0; i < k && len >= 0 && (size_t)len < n; i++)
        len += snprintf(buf + len, n - (size_t)len, " choice%d=%.0f,%.0f,%.0f,%.0f", i, ch[i].x, ch[i].y,
                        ch[i].x + ch[i].w, ch[i].y + ch[i].h);
}

/* ---- for other front ends (web/): read-only accessors declared in viz.h ---------------- */
int viz_lesson_question_count(const viz_source *s)
{
    return s->lesson && s->lesson->present ? s->lesson->n_qs : 0;
}

int viz_lesson_question(const viz_source *s, int q, viz_question *out)
{
    memset(out, 0, sizeof *out);
    out->answer = -1;
    if (q < 0 || q >= viz_lesson_question_count(s)) return -1;
    const viz_lesson *l = s->lesson;
    const lesson_question *lq = &l->qs[q];
    out->step = lq->step;
    out->text = lq->question;
    out->n_choices = lq->n_choices < VIZ_QUESTION_CHOICES ? lq->n_choices : VIZ_QUESTION_CHOICES;
    for (int i = 0; i < out->n_choices; i++) out->choices[i] = lq->choices[i];
    out->answer = lq->answer < out->n_choices ? lq->answer : -1;
    for (int i = 0; i < l->n_caps; i++)   /* as draw_question: the authored caption of its step */
        if (l->caps[i].step == lq->step) out->explain = l->caps[i].text;
    return 0;
}

const char *viz_caption_text(viz_source *s, int64_t t)
{
    if (!s->lesson) return NULL;
    return viz_lesson_caption(s, t, viz_source_state_at(s, t)->global_step);
}

int viz_lesson_stop_between(viz_source *s, int64_t a, int64_t b, int64_t *t_out, int *question)
{
    viz_lesson_stop st;
    if (!viz_lesson_next_stop(s, a, b, &st)) return 0;
    *t_out = st.t;
    *question = st.kind == VIZ_STOP_QUESTION ? st.index : -1;
    return 1;
}
