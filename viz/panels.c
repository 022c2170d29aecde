/* panels.c — the parts of a frame around the cluster: the top bar (title, engine, mode,
 * global step, time, speed, LIVE/REPLAY, paused), the side panels (loss per worker and
 * overall, test accuracy, throughput, staleness histogram, per-ps traffic with the hot
 * ps marked) and the timeline (one lane per task coloured by activity, markers for
 * evaluations / checkpoints / failures, and the scrubber). Curves are drawn up to the
 * shown time; the timeline shows the whole run with the future faded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

static double tx(const viz_ctx *c, viz_rect r, int64_t t)
{
    return r.x + r.w * (double)t / (double)(c->t_end > 0 ? c->t_end : 1);
}

/* The start-up segment's share of the timeline's width, when it would take more. */
#define STORY_FRAC 0.09

/* The time where the start-up ends on c's axis, or 0 when it is not compressed. */
static int64_t story_end(const viz_ctx *c)
{
    int64_t ts = c->src->m.t_story, te = c->t_end > 0 ? c->t_end : 1;
    return ts > 0 && ts < te && (double)ts > STORY_FRAC * (double)te ? ts : 0;
}

double viz_timeline_x(const viz_ctx *c, viz_rect r, int64_t t)
{
    int64_t ts = story_end(c), te = c->t_end > 0 ? c->t_end : 1;
    if (!ts) return tx(c, r, t);
    double sw = r.w * STORY_FRAC;
    if (t <= ts) return r.x + sw * (double)t / (double)ts;
    return r.x + sw + (r.w - sw) * (double)(t - ts) / (double)(te - ts);
}

int64_t viz_timeline_time_at(const viz_ctx *c, viz_rect r, double x)
{
    int64_t ts = story_end(c), te = c->t_end > 0 ? c->t_end : 1;
    double f = r.w > 0 ? (x - r.x) / r.w : 0;
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    if (!ts) return (int64_t)(f * (double)te);
    if (f <= STORY_FRAC) return (int64_t)((double)ts * f / STORY_FRAC);
    return ts + (int64_t)((double)(te - ts) * (f - STORY_FRAC) / (1 - STORY_FRAC));
}

int viz_timeline_story_seg(const viz_ctx *c, viz_rect *seg)
{
    if (!story_end(c)) return 0;
    const viz_rect r = c->lay.lanes;
    *seg = (viz_rect){r.x, r.y, r.w * STORY_FRAC, r.h};
    return 1;
}

/* The start-up segment: a quiet fill, a dashed end, and its label wrapped over the lanes
 * ("starting tasks, / loading data"), or "start-up" when that does not fit, or nothing. */
static void draw_story_seg(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    viz_rect seg;
    if (!viz_timeline_story_seg(c, &seg)) return;
    viz_seta(cr, VIZ_BG, 0.85);
    cairo_rectangle(cr, seg.x, seg.y, seg.w, seg.h);
    cairo_fill(cr);
    static const double dash[] = {3, 3};
    viz_set(cr, VIZ_MUTED);
    cairo_set_line_width(cr, 1.2 * l->s);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, seg.x + seg.w, seg.y);
    cairo_line_to(cr, seg.x + seg.w, seg.y + seg.h);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    double fs = viz_layout_font(l, l->font_small * 0.8), lh = fs * 1.15, room = seg.w - 6 * l->s;
    viz_font(cr, fs, 0);
    static const char *const two[] = {"starting tasks,", "loading data"};
    const char *const *lines = two;
    int n = 2;
    static const char *const one[] = {"start-up"};
    if (seg.h < n * lh || viz_text_width(cr, two[0]) > room || viz_text_width(cr, two[1]) > room) {
        lines = one;
        n = 1;
    }
    if (seg.h < n * lh || viz_text_width(cr, lines[0]) > room) return;
    double y0 = seg.y + (seg.h - n * lh) / 2 + fs * 0.9;
    for (int i = 0; i < n; i++) viz_text(cr, seg.x + seg.w / 2, y0 + i * lh, lines[i], 1, 0);
}

void viz_draw_topbar(viz_ctx *c, viz_rect r, const char *tag)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    const viz_view *v = c->view;
    double s = l->s, y = r.y + r.h * 0.66, x = r.x + 12 * s;
    viz_set(cr, VIZ_INK);
    cairo_rectangle(cr, r.x, r.y, r.w, r.h);
    cairo_fill(cr);
    char buf[200];
    viz_rgb white = {1, 1, 1}, soft = {0.78, 0.78, 0.82};
    viz_set(cr, white);
    viz_font(cr, l->font, 1);
    /* a compare half's tag ("A", "B fork @100") stands alone when the run has no title */
    if (tag && !m->title[0]) snprintf(buf, sizeof buf, "%s", tag);
    else snprintf(buf, sizeof buf, "%s%s%s", tag ? tag : "", tag ? " " : "", m->title[0] ? m->title : "Downpour");
    x += viz_text(cr, x, y, buf, 0, r.w * 0.28) + 16 * s;
    /* engine badge */
    int sim = !strcmp(m->engine, "sim");
    viz_font(cr, l->font_small, 1);
    const char *eng = sim ? "SIMULATED" : "REAL";
    double bw = viz_text_width(cr, eng) + 14 * s;
    viz_set(cr, sim ? viz_phase_color(EVT_PHASE_SSP) : viz_phase_color(EVT_PHASE_COMPUTING));
    viz_round_rect(cr, (viz_rect){x, r.y + r.h * 0.2, bw, r.h * 0.6}, 5 * s);
    cairo_fill(cr);
    viz_set(cr, white);
    viz_text(cr, x + bw / 2, y - 1 * s, eng, 1, 0);
    x += bw + 14 * s;
    viz_font(cr, l->font, 0);
    viz_set(cr, soft);
    char ts[48];
    viz_fmt_time(ts, sizeof ts, c->t);
    snprintf(buf, sizeof buf, "%s   step %lld   %s", m->mode[0] ? m->mode : "mode ?",
             (long long)c->st->global_step, ts);
    /* right side: speed, LIVE / REPLAY, paused */
    double xr = r.x + r.w - 12 * s;
    viz_font(cr, l->font, 1);
    const char *badge = v->live ? (v->behind_live ? "LIVE (behind)" : "LIVE") : "REPLAY";
    double w = viz_text_width(cr, badge);
    viz_set(cr, v->live ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_ACCENT);
    viz_round_rect(cr, (viz_rect){xr - w - 16 * s, r.y + r.h * 0.16, w + 16 * s, r.h * 0.68}, 6 * s);
    cairo_fill(cr);
    viz_set(cr, white);
    viz_text(cr, xr - 8 * s, y, badge, 2, 0);
    xr -= w + 28 * s;
    if (v->paused) {
        viz_set(cr, viz_phase_color(EVT_PHASE_BARRIER));
        xr -= viz_text(cr, xr, y, "\xe2\x9d\x9a\xe2\x9d\x9a PAUSED", 2, 0) + 16 * s;
    }
    char sp[32];
    if (v->speed >= 1) snprintf(sp, sizeof sp, "%g\xc3\x97", v->speed);
    else snprintf(sp, sizeof sp, "1/%g\xc3\x97", 1 / v->speed);
    viz_font(cr, l->font, 0);
    viz_set(cr, white);
    xr -= viz_text(cr, xr, y, sp, 2, 0) + 16 * s;
    viz_set(cr, soft);
    viz_text(cr, x, y, buf, 0, xr - x - 8 * s);
}

/* A panel frame with its title and current value; returns the plot area. */
static viz_rect panel(viz_ctx *c, viz_rect r, const char *title, const char *value)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, r, 6 * s);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_LINE);
    cairo_set_line_width(cr, 1 * s);
    cairo_stroke(cr);
    viz_font(cr, l->font_small, 1);
    viz_set(cr, VIZ_MUTED);
    /* a long title reflows to its head ("loss (mean, per worker)" -> "loss") rather than be cut */
    char head[96];
    snprintf(head, sizeof head, "%s", title);
    char *paren = strstr(head, " (");
    if (paren && viz_text_width(cr, head) > r.w * 0.55) *paren = 0;
    double tw = viz_text(cr, r.x + 8 * s, r.y + l->font_small * 1.2, head, 0, r.w * 0.55);
    viz_font(cr, l->font_small, 1);
    viz_set(cr, VIZ_INK);
    if (value) viz_text(cr, r.x + r.w - 8 * s, r.y + l->font_small * 1.2, value, 2, r.w - tw - 24 * s);
    return (viz_rect){r.x + 8 * s, r.y + l->font_small * 1.7, r.w - 16 * s,
                      r.h - l->font_small * 1.7 - 6 * s};
}

void viz_plot_loss(viz_ctx *c, viz_rect r, const viz_model *m, int64_t from, int64_t t,
                   int64_t span, viz_rgb color, int per_worker, double ymax)
{
    cairo_t *cr = c->cr;
    double s = c->lay.s;
    int last = viz_model_bucket(m, t);
    if (last >= m->nb) last = m->nb - 1;
    double xs = r.w / (double)(span > 0 ? span : 1);
    for (int w = per_worker ? 0 : VIZ_LOSS_WORKERS; w <= VIZ_LOSS_WORKERS; w++) {
        const double *v = w < VIZ_LOSS_WORKERS ? m->wloss.v + 2 * w : m->loss.v;
        int k = w < VIZ_LOSS_WORKERS ? m->wloss.k : m->loss.k, started = 0;
        for (int b = 0; b <= last; b++) {
            double n = v[(size_t)b * k + 1], bt = ((double)b + 0.5) * (double)m->bw;
            if (n <= 0 || bt < (double)from) continue;
            double y = v[(size_t)b * k] / n;
            double px = r.x + fmin(xs * (bt - (double)from), r.w);
            double py = r.y + r.h * (1 - fmin(y / ymax, 1));
            if (!started) cairo_move_to(cr, px, py);
            else cairo_line_to(cr, px, py);
            started = 1;
        }
        if (w < VIZ_LOSS_WORKERS) {
            viz_seta(cr, viz_var_color(w), 0.45);
            cairo_set_line_width(cr, 1.2 * s);
        } else {
            viz_set(cr, color);
            cairo_set_line_width(cr, 2.8 * s);
        }
        cairo_stroke(cr);
    }
}

/* A panel that counts traffic or applies, on a trace that records them for a sample of the
 * workers only: says so on its last line ("16 sampled of 1,200 workers") and returns the
 * plot area above it; otherwise returns p. */
static viz_rect sample_note(viz_ctx *c, viz_rect p)
{
    char note[96], line[128];
    if (!viz_model_sample_note(&c->src->m, note, sizeof note)) return p;
    double fs = viz_layout_font(&c->lay, c->lay.font_small * 0.85);
    snprintf(line, sizeof line, "%s workers", note);
    viz_font(c->cr, fs, 1);
    viz_set(c->cr, VIZ_INK);
    viz_text(c->cr, p.x, p.y + p.h - fs * 0.15, line, 0, p.w);
    p.h -= fs * 1.25;
    return p;
}

static void draw_loss(viz_ctx *c, viz_rect r)
{
    const evt_state *st = c->st;
    double sum = 0;
    int n = 0;
    for (int w = 0; w < st->workers_len; w++)
        if (isfinite(st->workers[w].loss)) {
            sum += st->workers[w].loss;
            n++;
        }
    char val[48] = "";
    if (n) snprintf(val, sizeof val, "%.3f", sum / n);
    viz_rect p = panel(c, r, "loss (mean, per worker)", n ? val : NULL);
    viz_plot_loss(c, p, &c->src->m, 0, c->t, c->t_end, VIZ_INK, 1,
                  viz_model_loss_max(&c->src->m) * 1.05);
}

static void draw_accuracy(viz_ctx *c, viz_rect r)
{
    cairo_t *cr = c->cr;
    const viz_model *m = &c->src->m;
    char val[48] = "";
    double last = NAN;
    size_t seen = 0;   /* evaluations so far; the simulator's have no accuracy (NaN) */
    for (size_t i = 0; i < m->n_evals && m->evals[i].t <= c->t; i++, seen++)
        if (isfinite(m->evals[i].acc)) last = m->evals[i].acc;
    if (isfinite(last)) snprintf(val, sizeof val, "%.1f%%", last * 100);
    viz_rect p = panel(c, r, "test accuracy", val[0] ? val : seen ? "no test set (simulated)" : "no eval yet");
    int started = 0;
    for (size_t i = 0; i < m->n_evals && m->evals[i].t <= c->t; i++) {
        if (!isfinite(m->evals[i].acc)) continue;
        double px = tx(c, p, m->evals[i].t), py = p.y + p.h * (1 - fmin(fmax(m->evals[i].acc, 0), 1));
        if (!started) cairo_move_to(cr, px, py);
        else cairo_line_to(cr, px, py);
        started = 1;
    }
    viz_set(cr, VIZ_ACCENT);
    cairo_set_line_width(cr, 2.5 * c->lay.s);
    cairo_stroke(cr);
    for (size_t i = 0; i < m->n_evals && m->evals[i].t <= c->t; i++) {
        if (!isfinite(m->evals[i].acc)) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, tx(c, p, m->evals[i].t), p.y + p.h * (1 - fmin(fmax(m->evals[i].acc, 0), 1)),
                  3.5 * c->lay.s, 0, 2 * M_PI);
        cairo_fill(cr);
    }
}

static void draw_throughput(viz_ctx *c, viz_rect r)
{
    cairo_t *cr = c->cr;
    const viz_model *m = &c->src->m;
    int span = viz_model_rate_span(m), last = viz_model_bucket(m, c->t);
    if (last >= m->nb) last = m->nb - 1;
    /* prefix max of the global step once, then rates */
    double mx = 1, cur = 0;
    double rate[VIZ_BUCKETS], g = 0, hist[VIZ_BUCKETS];
    for (int b = 0; b < m->nb; b++) {
        if (m->gstep.v[b] > g) g = m->gstep.v[b];
        hist[b] = g;
    }
    for (int b = 0; b < m->nb; b++) {
        int a = b - span;
        double g0 = a >= 0 ? hist[a] : 0;
        rate[b] = (hist[b] - g0) / ((double)(a >= 0 ? span : b + 1) * (double)m->bw / 1e9);
        if (rate[b] > mx) mx = rate[b];
    }
    if (last >= 0) cur = rate[last];
    char val[48];
    snprintf(val, sizeof val, "%.4g steps/s", cur);
    viz_rect p = panel(c, r, "throughput", val);
    cairo_move_to(cr, p.x, p.y + p.h);
    for (int b = 0; b <= last; b++)
        cairo_line_to(cr, p.x + p.w * ((double)b + 0.5) * (double)m->bw / (double)c->t_end,
                      p.y + p.h * (1 - rate[b] / (mx * 1.1)));
    if (last >= 0) {
        cairo_line_to(cr, p.x + p.w * ((double)last + 0.5) * (double)m->bw / (double)c->t_end,
                      p.y + p.h);
        cairo_close_path(cr);
    }
    viz_seta(cr, viz_phase_color(EVT_PHASE_COMPUTING), 0.55);
    cairo_fill(cr);
}

static void draw_staleness(viz_ctx *c, viz_rect r)
{
    cairo_t *cr = c->cr;
    const viz_model *m = &c->src->m;
    double bins[VIZ_STALE_BINS + 1] = {0}, mx = 1;
    int last = viz_model_bucket(m, c->t);
    for (int b = 0; b <= last && b < m->nb; b++)
        for (int i = 0; i <= VIZ_STALE_BINS; i++) bins[i] += m->stale.v[(size_t)b * m->stale.k + i];
    for (int i = 0; i <= VIZ_STALE_BINS; i++) mx = fmax(mx, bins[i]);
    char val[64];
    const evt_state *st = c->st;
    snprintf(val, sizeof val, "mean %.2f · max %.0f", st->applies ? st->staleness_sum / (double)st->applies
                                                                  : 0.0, st->staleness_max);
    viz_rect p = sample_note(c, panel(c, r, "staleness", val));
    double lh = viz_layout_font(&c->lay, c->lay.font_small * 0.85);
    p.h -= lh * 1.2;
    double bw = p.w / (VIZ_STALE_BINS + 1);
    viz_font(cr, lh, 0);
    for (int i = 0; i <= VIZ_STALE_BINS; i++) {
        double h = p.h * bins[i] / mx;
        viz_set(cr, i == VIZ_STALE_BINS ? viz_phase_color(EVT_PHASE_DEAD)
                                        : (viz_rgb){0.27, 0.47, 0.67});
        cairo_rectangle(cr, p.x + i * bw + 1, p.y + p.h - h, bw - 2, h);
        cairo_fill(cr);
        static const char *const wide[] = {"8+", "32+", "256+", "2k+"};
        char lab[16];
        if (i == VIZ_STALE_BINS) snprintf(lab, sizeof lab, "drop");
        else if (i >= 8) snprintf(lab, sizeof lab, "%s", wide[i - 8]);
        else snprintf(lab, sizeof lab, "%d", i);
        if (i % 2 == 0 || i == VIZ_STALE_BINS) {
            viz_set(cr, VIZ_MUTED);
            viz_text(cr, p.x + i * bw + bw / 2, p.y + p.h + lh * 1.05, lab, 1, 0);
        }
    }
}

/* One ps's row in the traffic panel: label, pull | push bar against mx, hot outline. */
static void traffic_row(viz_ctx *c, viz_rect row, double lw, double fs, int p, const double *rate,
                        double mx, int hot)
{
    cairo_t *cr = c->cr;
    double x = row.x + lw, w = row.w - lw, rh = row.h;
    viz_set(cr, hot ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_MUTED);
    char lab[16];
    snprintf(lab, sizeof lab, "ps%d", p);
    if (rh >= fs * 0.8) viz_text(cr, row.x, row.y + rh * 0.5 + fs * 0.35, lab, 0, lw);
    double w0 = w * rate[2 * p] / mx, w1 = w * rate[2 * p + 1] / mx;
    viz_set(cr, viz_phase_color(EVT_PHASE_PULLING));
    cairo_rectangle(cr, x, row.y + rh * 0.15, w0, rh * 0.7);
    cairo_fill(cr);
    viz_set(cr, viz_phase_color(EVT_PHASE_PUSHING));
    cairo_rectangle(cr, x + w0, row.y + rh * 0.15, w1, rh * 0.7);
    cairo_fill(cr);
    if (hot) {
        viz_set(cr, viz_phase_color(EVT_PHASE_DEAD));
        cairo_set_line_width(cr, 2 * c->lay.s);
        cairo_rectangle(cr, x, row.y + rh * 0.15, w0 + w1, rh * 0.7);
        cairo_stroke(cr);
    }
}

/* One machine: no ps, so the panel counts the copies between its devices instead,
 * bytes/s into each device (forward copies | gradients), a row per device. */
static void draw_copy_traffic(viz_ctx *c, viz_rect r)
{
    cairo_t *cr = c->cr;
    const viz_model *m = &c->src->m;
    uint32_t ids[VIZ_MACHINE_DEVICES];
    int n = viz_model_task_devices(m, EVT_JOB_WORKER, 0, ids, VIZ_MACHINE_DEVICES);
    double rate[2 * VIZ_MACHINE_DEVICES] = {0}, dev_rate[2 * VIZ_MACHINE_DEVICES] = {0}, total = 0, mx = 1;
    viz_model_copy_rates(m, viz_model_bucket(m, c->t), viz_model_rate_span(m), VIZ_MACHINE_DEVICES, rate);
    for (int i = 0; i < n; i++) {   /* the series is by catalogue index, rows by the task's order */
        int d = viz_model_device_index(m, ids[i]);
        if (d < 0 || d >= VIZ_MACHINE_DEVICES) continue;
        dev_rate[2 * i] = rate[2 * d];
        dev_rate[2 * i + 1] = rate[2 * d + 1];
        total += rate[2 * d] + rate[2 * d + 1];
        mx = fmax(mx, rate[2 * d] + rate[2 * d + 1]);
    }
    char val[48], tmp[32];
    viz_fmt_bytes(tmp, sizeof tmp, total);
    snprintf(val, sizeof val, "%s/s", tmp);
    viz_rect p = panel(c, r, "device copies (in: copy | grad)", val);
    double rh = p.h / (n > 0 ? n : 1), fs = viz_layout_font(&c->lay, fmin(c->lay.font_small, rh * 0.9));
    viz_font(cr, fs, 0);
    double lw = viz_text_width(cr, "CPU:0") + fs * 0.6;
    for (int i = 0; i < n; i++) {
        viz_rect row = {p.x, p.y + i * rh, p.w, rh};
        viz_set(cr, VIZ_MUTED);
        if (rh >= fs * 0.8)
            viz_text(cr, row.x, row.y + rh * 0.5 + fs * 0.35, viz_device_short(viz_source_string(c->src, ids[i])), 0, lw);
        double w0 = (row.w - lw) * dev_rate[2 * i] / mx, w1 = (row.w - lw) * dev_rate[2 * i + 1] / mx;
        viz_set(cr, viz_phase_color(EVT_PHASE_PULLING));
        cairo_rectangle(cr, row.x + lw, row.y + rh * 0.15, w0, rh * 0.7);
        cairo_fill(cr);
        viz_set(cr, viz_phase_color(EVT_PHASE_PUSHING));
        cairo_rectangle(cr, row.x + lw + w0, row.y + rh * 0.15, w1, rh * 0.7);
        cairo_fill(cr);
    }
}

/* Bytes/s per ps. When a row per ps would not be readable, the busiest ps (in one or two
 * columns, busiest first) and an "others (N ps)" line with their mean and maximum. */
static void draw_traffic(viz_ctx *c, viz_rect r)
{
    cairo_t *cr = c->cr;
    const viz_model *m = &c->src->m;
    if (c->lay.machine) {
        draw_copy_traffic(c, r);
        return;
    }
    int n = m->n_ps, span = viz_model_rate_span(m);
    double *rate = xcalloc(2 * (size_t)n + 2, sizeof *rate), total = 0, mx = 1, mean;
    viz_model_ps_rates(m, viz_model_bucket(m, c->t), span, n, rate);
    for (int p = 0; p < n; p++) {
        total += rate[2 * p] + rate[2 * p + 1];
        mx = fmax(mx, rate[2 * p] + rate[2 * p + 1]);
    }
    mean = n ? total / n : 0;
    char val[48], tmp[32];
    viz_fmt_bytes(tmp, sizeof tmp, total);
    snprintf(val, sizeof val, "%s/s", tmp);
    viz_rect p = sample_note(c, panel(c, r, "ps traffic (pull | push)", val));
    double fs = c->lay.font_small;
#define HOT(i) (n > 1 && mean > 0 && rate[2 * (i)] + rate[2 * (i) + 1] > 1.5 * mean)
    if (n <= 2 || n * fs * 1.15 <= p.h) {   /* a readable row per ps */
        double rh = p.h / (n > 0 ? n : 1);
        fs = viz_layout_font(&c->lay, fmin(fs, rh * 0.9));
        viz_font(cr, fs, 0);
        for (int i = 0; i < n; i++)
            traffic_row(c, (viz_rect){p.x, p.y + i * rh, p.w, rh}, fs * 3.2, fs, i, rate, mx, HOT(i));
        free(rate);
        return;
    }
    double rh = fs * 1.2;
    int rows = (int)(p.h / rh);
    if (rows < 2) {
        rows = 2;
        rh = p.h / 2;
        fs = viz_layout_font(&c->lay, fmin(fs, rh * 0.9));
    }
    int cols = p.w >= fs * 20 && n > rows ? 2 : 1, slots = rows * cols;
    int others = n > slots;
    if (others) slots = (rows - 1) * cols;
    else rows = (n + cols - 1) / cols;   /* everyone fits: balance the columns */
    /* busiest first (ties: lower index), by selection: slots is small */
    int *pick = xmalloc((size_t)slots * sizeof *pick);
    char *used = xcalloc((size_t)n, 1);
    int k = 0;
    for (; k < slots && k < n; k++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!used[i] && (best < 0 || rate[2 * i] + rate[2 * i + 1] >
                                             rate[2 * best] + rate[2 * best + 1]))
                best = i;
        pick[k] = best;
        used[best] = 1;
    }
    if (!others) {   /* everyone fits: keep index order, which does not jump about */
        k = 0;
        for (int i = 0; i < n; i++) pick[k++] = i;
    }
    double gap = 10 * c->lay.s, cw = (p.w - (cols - 1) * gap) / cols;
    int digits = 1;
    for (int i = n - 1; i >= 10; i /= 10) digits++;
    viz_font(cr, fs, 0);
    double lw = viz_text_width(cr, "ps") + digits * fs * 0.66 + fs * 0.4;
    for (int i = 0; i < k; i++) {
        int col = i / rows, row = i % rows;
        if (others) col = i / (rows - 1), row = i % (rows - 1);
        viz_rect rr = {p.x + col * (cw + gap), p.y + row * rh, cw, rh};
        traffic_row(c, rr, lw, fs, pick[i], rate, mx, HOT(pick[i]));
    }
    if (others) {
        double sum = 0, top = 0;
        int rest = 0;
        for (int i = 0; i < n; i++)
            if (!used[i]) {
                double t = rate[2 * i] + rate[2 * i + 1];
                sum += t;
                top = fmax(top, t);
                rest++;
            }
        char a[32], b[32], line[128];
        viz_fmt_bytes(a, sizeof a, rest ? sum / rest : 0);
        viz_fmt_bytes(b, sizeof b, top);
        snprintf(line, sizeof line, "others (%d ps): mean %s/s, max %s/s", rest, a, b);
        if (viz_text_width(cr, line) > p.w)
            snprintf(line, sizeof line, "others (%d ps): mean %s/s", rest, a);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, p.x, p.y + (rows - 1) * rh + rh * 0.5 + fs * 0.35, line, 0, p.w);
    }
#undef HOT
    free(used);
    free(pick);
    free(rate);
}

void viz_draw_panels(viz_ctx *c)
{
    const viz_layout *l = &c->lay;
    void (*const draw[VIZ_N_PANELS])(viz_ctx *, viz_rect) = {draw_loss, draw_accuracy,
                                                             draw_throughput, draw_staleness,
                                                             draw_traffic};
    for (int i = 0; i < VIZ_N_PANELS; i++)   /* w = 0: left out (projector mode) */
        if (l->panels[i].w > 0) draw[i](c, l->panels[i]);
}

/* One lane as one row of pixels: each column takes the colour of the activity that
 * filled most of its time (the future faded), so a lane costs a row of pixel writes
 * however many buckets it spans. */
static void lane_pixels(const viz_ctx *c, uint32_t *row, int width, const double *v, int k,
                        double busy_ns)
{
    const viz_model *m = &c->src->m;
    int cur = viz_model_bucket(m, c->t);
    for (int px = 0; px < width; px++) {
        const viz_rect r = c->lay.lanes;
        int64_t t0 = viz_timeline_time_at(c, r, r.x + r.w * px / width);
        int64_t t1 = viz_timeline_time_at(c, r, r.x + r.w * (px + 1) / width);
        int b0 = (int)(t0 / m->bw), b1 = (int)(t1 / m->bw);
        if (b1 <= b0) b1 = b0 + 1;
        if (b1 > m->nb) b1 = m->nb;
        if (b1 <= b0) {   /* past the last event (a live view runs ahead of it): nothing */
            row[px] = 0xFF000000u | (uint32_t)(VIZ_PANEL.r * 255 + 0.5) << 16 |
                      (uint32_t)(VIZ_PANEL.g * 255 + 0.5) << 8 | (uint32_t)(VIZ_PANEL.b * 255 + 0.5);
            continue;
        }
        double sum[VIZ_N_ACT] = {0}, best = busy_ns * 0.05 * (b1 - b0);
        int act = -1;
        for (int b = b0; b < b1; b++)
            for (int a = 0; a < VIZ_N_ACT; a++) sum[a] += v[(size_t)b * k + a];
        for (int a = 0; a < VIZ_N_ACT; a++)
            if (sum[a] > best) best = sum[a], act = a;
        viz_rgb col = act >= 0 ? viz_act_color(act) : VIZ_PANEL;
        double f = act >= 0 && b0 > cur ? 0.3 : 1;   /* the future, faded */
        col = (viz_rgb){col.r * f + VIZ_PANEL.r * (1 - f), col.g * f + VIZ_PANEL.g * (1 - f),
                        col.b * f + VIZ_PANEL.b * (1 - f)};
        row[px] = 0xFF000000u | (uint32_t)(col.r * 255 + 0.5) << 16 |
                  (uint32_t)(col.g * 255 + 0.5) << 8 | (uint32_t)(col.b * 255 + 0.5);
    }
}

static void blit_row(cairo_t *cr, cairo_surface_t *img, int row, int width, viz_rect r)
{
    cairo_save(cr);
    cairo_translate(cr, r.x, r.y);
    cairo_scale(cr, r.w / width, r.h);
    cairo_set_source_surface(cr, img, 0, -row);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, 0, 0, width, 1);
    cairo_fill(cr);
    cairo_restore(cr);
}

/* One timeline legend entry (swatch, name) with its baseline-left at (x, y); returns its
 * width. */
static double legend_entry(cairo_t *cr, int act, double x, double y, double fs)
{
    static const char *names[VIZ_N_ACT] = {"pull", "compute", "push", "wait", "paced", "eval"};
    viz_set(cr, viz_act_color(act));
    cairo_rectangle(cr, x, y - fs * 0.8, fs * 0.8, fs * 0.8);
    cairo_fill(cr);
    viz_set(cr, VIZ_INK);
    return fs + viz_text(cr, x + fs, y, names[act], 0, 0);
}

void viz_draw_timeline(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double s = l->s;
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, l->timeline, 6 * s);
    cairo_fill(cr);
    /* which lanes: ps, then workers; the last lane aggregates the workers when they do
     * not fit, and then the ps get at most half of the others */
    int n_tasks = l->n_ps + l->n_workers, lanes = l->n_lanes;
    int agg = n_tasks > lanes || m->n_lanes < n_tasks;
    int direct = agg ? lanes - 1 : lanes;
    int ps_lanes = l->n_ps < direct ? l->n_ps : direct;
    if (agg && l->n_workers > 0 && ps_lanes > (direct + 1) / 2) ps_lanes = (direct + 1) / 2;
    if (ps_lanes > VIZ_MAX_LANES / 2) ps_lanes = VIZ_MAX_LANES / 2;
    int job = EVT_JOB_PS, task = 0;
    char buf[96];
    int width = (int)ceil(l->lanes.w);
    if (width < 1) width = 1;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, lanes);
    cairo_surface_flush(img);
    unsigned char *px = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    viz_rect *rects = xcalloc((size_t)lanes, sizeof *rects);
    char *has = xcalloc((size_t)lanes, 1);
    for (int i = 0; i < lanes; i++) {
        viz_rect r = {l->lanes.x, l->lanes.y + i * l->lane_h + l->lane_h * 0.12, l->lanes.w,
                      l->lane_h * 0.76};
        rects[i] = r;
        viz_font(cr, viz_layout_font(l, l->font_small * 0.9), 0);
        viz_set(cr, VIZ_INK);
        if (i < direct) {
            if (job == EVT_JOB_PS && task >= ps_lanes) {
                job = EVT_JOB_WORKER;
                task = 0;
            }
            int lane = viz_model_lane(m, job, task);
            if (job == EVT_JOB_PS && task == ps_lanes - 1 && ps_lanes < l->n_ps)
                snprintf(buf, sizeof buf, "ps %d of %d", task, l->n_ps);
            else
                snprintf(buf, sizeof buf, "%s %d", job == EVT_JOB_PS ? "ps" : "worker", task);
            viz_text(cr, l->timeline.x + 8 * s, r.y + r.h * 0.85, buf, 0, l->lanes.x - l->timeline.x - 12 * s);
            if (lane >= 0) {
                lane_pixels(c, (uint32_t *)(void *)(px + (size_t)i * (size_t)stride), width,
                            m->lane.v + (size_t)lane * VIZ_N_ACT, m->lane.k, (double)m->bw);
                has[i] = 1;
            }
            task++;
        } else {
            snprintf(buf, sizeof buf, "all %d workers", l->n_workers);
            viz_text(cr, l->timeline.x + 8 * s, r.y + r.h * 0.85, buf, 0, l->lanes.x - l->timeline.x - 12 * s);
            lane_pixels(c, (uint32_t *)(void *)(px + (size_t)i * (size_t)stride), width, m->agg.v,
                        m->agg.k, (double)m->bw * l->n_workers);
            has[i] = 1;
        }
    }
    /* rows are all written before the image is first used as a source (vector
     * surfaces snapshot their sources) */
    cairo_surface_mark_dirty(img);
    for (int i = 0; i < lanes; i++)
        if (has[i]) blit_row(cr, img, i, width, rects[i]);
    cairo_surface_destroy(img);
    free(rects);
    free(has);
    /* markers */
    for (size_t i = 0; i < m->n_marks; i++) {
        const viz_mark *mk = &m->marks[i];
        double x = viz_timeline_x(c, l->lanes, mk->t);
        int resume = mk->kind == EVT_CHECKPOINT_RESTORE;
        viz_rgb col = mk->kind == EVT_EVAL ? VIZ_ACCENT
                      : mk->kind == EVT_FAILURE ? viz_phase_color(EVT_PHASE_DEAD)
                      : resume ? (viz_rgb){0.15, 0.35, 0.75}
                      : (viz_rgb){0.2, 0.55, 0.2};
        viz_seta(cr, col, mk->t > c->t ? 0.35 : 0.9);
        cairo_set_line_width(cr, 1.5 * s);
        cairo_move_to(cr, x, l->lanes.y);
        cairo_line_to(cr, x, l->lanes.y + l->lanes.h);
        cairo_stroke(cr);
        double y = l->lanes.y, d = 5 * s;
        if (resume) {   /* a resume: an arrow back, to the checkpoint's step */
            cairo_move_to(cr, x + d, y);
            cairo_line_to(cr, x - d * 1.4, y + d);
            cairo_line_to(cr, x + d, y + 2 * d);
        } else {
            cairo_move_to(cr, x - d, y);
            cairo_line_to(cr, x + d, y);
            cairo_line_to(cr, x, y + d * 1.4);
        }
        cairo_close_path(cr);
        cairo_fill(cr);
    }
    draw_story_seg(c);
    /* scrubber */
    viz_rect sc = l->scrub;
    viz_set(cr, VIZ_LINE);
    viz_round_rect(cr, sc, sc.h / 2);
    cairo_fill(cr);
    double x = viz_timeline_x(c, sc, c->t);
    viz_set(cr, VIZ_ACCENT);
    viz_round_rect(cr, (viz_rect){sc.x, sc.y, fmax(x - sc.x, sc.h), sc.h}, sc.h / 2);
    cairo_fill(cr);
    cairo_set_line_width(cr, 2 * s);
    cairo_move_to(cr, x, l->lanes.y);
    cairo_line_to(cr, x, sc.y);
    cairo_stroke(cr);
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, sc.y + sc.h / 2, sc.h * 0.95, 0, 2 * M_PI);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_PANEL);
    cairo_stroke(cr);
    viz_font(cr, viz_layout_font(l, l->font_small * 0.9), 0);
    viz_set(cr, VIZ_MUTED);
    viz_fmt_time(buf, sizeof buf, c->t_end);
    viz_text(cr, sc.x + sc.w, sc.y + sc.h + l->font_small * 1.0, buf, 2, 0);
    viz_text(cr, sc.x, sc.y + sc.h + l->font_small * 1.0, "0", 0, 0);
    /* legend in the label column of the scrubber row */
    double lx = l->timeline.x + 8 * s, ly = sc.y + sc.h * 0.2, fs = viz_layout_font(l, l->font_small * 0.8);
    viz_font(cr, fs, 0);
    if (!m->has_paced && !m->has_eval) {
        for (int a = 0; a < VIZ_ACT_PACED; a++)
            legend_entry(cr, a, lx + (a % 2) * (l->lanes.x - l->timeline.x) * 0.45,
                         ly + (a / 2) * fs * 1.25, fs);
        return;
    }
    /* A paced run, or one with evaluations, has more entries; two rows still hold them,
     * each entry as wide as its name: transfers and waits, then the workers' own time
     * (compute, paced, the chief's evaluations). */
    int second[3] = {VIZ_ACT_COMPUTE, -1, -1}, k = 1;
    if (m->has_paced) second[k++] = VIZ_ACT_PACED;
    if (m->has_eval) second[k++] = VIZ_ACT_EVAL;
    const int first[3] = {VIZ_ACT_PULL, VIZ_ACT_PUSH, VIZ_ACT_WAIT};
    const int *rows[2] = {first, second};
    double gap = k == 3 ? fs * 0.35 : fs * 0.6;
    for (int r = 0; r < 2; r++) {
        double cx = lx;
        for (int i = 0; i < 3 && rows[r][i] >= 0; i++)
            cx += legend_entry(cr, rows[r][i], cx, ly + r * fs * 1.25, fs) + gap;
    }
}
