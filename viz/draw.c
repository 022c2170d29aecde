/* draw.c — the cluster picture: ps boxes with their devices and variable bars (one
 * colour per variable, flashing when an update lands, with its version; global_step shows
 * the global step), worker boxes coloured by phase (compute progress, local step, loss,
 * staleness; the chief starred and, while it evaluates, in the evaluating colour; a
 * straggler tagged "slow ×F"), the edges (packets on them: packets.c), and the sync
 * barrier that waiting workers line up against. Beyond VIZ_DENSE_WORKERS workers: a grid
 * of phase-coloured cells (drawn as one scaled image) and per-ps traffic bands whose width
 * shows bytes/s. Many ps are compact cells (pscells.c); many edges become a bus. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

static void draw_chips(viz_ctx *c, viz_rect box, int job, int task, double y)
{
    cairo_t *cr = c->cr;
    uint32_t ids[4];
    int n = viz_model_task_devices(&c->src->m, job, task, ids, 4);
    double fs = viz_layout_font(&c->lay, c->lay.font_small * 0.85), x = box.x + box.w - 6 * c->lay.s;
    viz_font(cr, fs, 0);
    for (int i = n - 1; i >= 0; i--) {
        const char *name = viz_device_short(viz_source_string(c->src, ids[i]));
        double w = viz_text_width(cr, name) + fs * 0.8;
        if (x - w < box.x + box.w * 0.3) break;
        x -= w;
        viz_rect chip = {x, y - fs * 1.15, w, fs * 1.4};
        viz_set(cr, viz_device_color(viz_model_device_index(&c->src->m, ids[i])));
        viz_round_rect(cr, chip, fs * 0.3);
        cairo_fill(cr);
        viz_set(cr, VIZ_INK);
        viz_text(cr, chip.x + chip.w / 2, y, name, 1, 0);
        x -= fs * 0.3;
    }
}

void viz_var_version_label(const viz_ctx *c, int v, char *buf, size_t n)
{
    const viz_model *m = &c->src->m;
    uint32_t name = m->vars[v].name;
    if (!strcmp(viz_source_string(c->src, name), "global_step")) {
        snprintf(buf, n, "step %lld", (long long)c->st->global_step);
        return;
    }
    const evt_var_state *vs = evt_state_var(c->st, name);
    snprintf(buf, n, "v%lld", vs ? (long long)vs->version : 0LL);
}

int viz_worker_phase(const viz_ctx *c, int w)
{
    const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_WORKER, w);
    int phase = tk && tk->started ? tk->phase : EVT_PHASE_IDLE;
    if (w == c->src->m.chief && phase == EVT_PHASE_IDLE && viz_model_eval_at(&c->src->m, c->t))
        return VIZ_PHASE_EVALUATING;
    return phase;
}

/* "slow ×4" for a straggler, its link's shape ("1 Mbit/s", `cluster --net`) for a worker
 * on a slower link, "" for everyone else. */
static void slow_label(const viz_model *m, int w, char *buf, size_t n)
{
    double f = viz_model_slow(m, w);
    const char *link = viz_model_link(m, EVT_JOB_WORKER, w);
    if (f > 0) snprintf(buf, n, "slow \xc3\x97%g", f);
    else if (link) snprintf(buf, n, "%s", link);
    else if (n) buf[0] = 0;
}

/* A dead task's box: greyed, and crossed out in the dead colour. */
static void cross_out(cairo_t *cr, viz_rect b, double s)
{
    viz_seta(cr, VIZ_MUTED, 0.35);
    viz_round_rect(cr, b, 8 * s);
    cairo_fill(cr);
    viz_set(cr, viz_phase_color(EVT_PHASE_DEAD));
    cairo_set_line_width(cr, 4 * s);
    cairo_move_to(cr, b.x, b.y);
    cairo_line_to(cr, b.x + b.w, b.y + b.h);
    cairo_move_to(cr, b.x + b.w, b.y);
    cairo_line_to(cr, b.x, b.y + b.h);
    cairo_stroke(cr);
}

static void draw_ps(viz_ctx *c, int p)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    viz_rect b = l->ps_box[p];
    const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_PS, p);
    double s = l->s;
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, b, 8 * s);
    cairo_fill_preserve(cr);
    viz_set(cr, tk && tk->dead ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_INK);
    cairo_set_line_width(cr, 2 * s);
    cairo_stroke(cr);
    char buf[160];
    viz_task_name(buf, sizeof buf, EVT_JOB_PS, p);
    viz_set(cr, VIZ_INK);
    viz_font(cr, l->font, 1);
    if (viz_text_width(cr, buf) > b.w - 16 * s) viz_font(cr, l->font_small, 1);   /* narrow box */
    viz_text(cr, b.x + 8 * s, b.y + l->font * 1.15, buf, 0, b.w - 16 * s);
    /* variable rows: name and version above a bar sized by bytes */
    int shown = 0, more = 0;
    int64_t more_bytes = 0;
    for (int v = 0; v < m->n_vars; v++) {
        if (m->vars[v].ps != p) continue;
        viz_rect r = l->var_bar[v];
        if (r.w <= 0) {
            more++;
            more_bytes += m->vars[v].bytes;
            continue;
        }
        shown++;
        double inner = b.w - 12 * s;
        viz_seta(cr, VIZ_LINE, 0.45);
        cairo_rectangle(cr, r.x, r.y, inner, r.h);
        cairo_fill(cr);
        viz_set(cr, viz_var_color(v));
        cairo_rectangle(cr, r.x, r.y, r.w, r.h);
        cairo_fill(cr);
        int64_t fl = c->fr.flash ? c->fr.flash[v] : -1;
        if (fl >= 0) {  /* update just applied: bright outline that fades */
            double age = (double)(c->t - fl) / (double)(m->bw > 0 ? m->bw * 8 : 1);
            double a = fmax(0.25, 1 - age);
            viz_seta(cr, VIZ_ACCENT, a);
            cairo_set_line_width(cr, 3 * s);
            cairo_rectangle(cr, r.x - 2 * s, r.y - 2 * s, r.w + 4 * s, r.h + 4 * s);
            cairo_stroke(cr);
        }
        viz_font(cr, l->font_small, 0);
        viz_set(cr, VIZ_INK);
        const char *name = viz_source_string(c->src, m->vars[v].name);
        viz_var_version_label(c, v, buf, sizeof buf);
        double vw = viz_text(cr, r.x + inner, r.y - 4 * s, buf, 2, 0);
        char sz[32];
        viz_fmt_bytes(sz, sizeof sz, (double)m->vars[v].bytes);
        char label[200];
        snprintf(label, sizeof label, "%s  %s", name, sz);
        viz_text(cr, r.x, r.y - 4 * s, label, 0, inner - vw - 8 * s);
    }
    if (more) {
        viz_rect r = l->more_bar[p];
        viz_seta(cr, VIZ_MUTED, 0.5);
        cairo_rectangle(cr, r.x, r.y, r.w, r.h);
        cairo_fill(cr);
        viz_set(cr, VIZ_INK);
        char sz[32];
        viz_fmt_bytes(sz, sizeof sz, (double)more_bytes);
        snprintf(buf, sizeof buf, "+%d more variables  %s", more, sz);
        viz_text(cr, r.x, r.y - 4 * s, buf, 0, r.w);
    }
    DP_UNUSED(shown);
    if (tk) {
        char note[96], of[112] = "";
        if (viz_model_sample_note(m, note, sizeof note)) snprintf(of, sizeof of, " (%s)", note);
        viz_font(cr, l->font_small, 0);
        viz_set(cr, tk->drops > 0 ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_MUTED);
        if (tk->drops > 0) snprintf(buf, sizeof buf, "%lld applied · %lld dropped%s",
                                    (long long)tk->applies, (long long)tk->drops, of);
        else snprintf(buf, sizeof buf, "%lld applied%s", (long long)tk->applies, of);
        viz_text(cr, b.x + 8 * s, b.y + b.h - 8 * s, buf, 0, b.w * 0.62);
    }
    draw_chips(c, b, EVT_JOB_PS, p, b.y + b.h - 6 * s);
    if (tk && tk->dead) cross_out(cr, b, s);
}

void viz_device_lanes(viz_rect inner, double lh, double s, int n, viz_rect *out)
{
    double gap = 3 * s, x0 = inner.x + 4 * s, w = (inner.w - 8 * s - gap * (n - 1)) / n;
    for (int i = 0; i < n; i++)
        out[i] = (viz_rect){x0 + i * (w + gap), inner.y + lh * 2.3, w, fmin(lh * 0.85, inner.y + inner.h - lh * 2.3 - s)};
}

/* A task with several devices (towers, a layer per device): its bottom line becomes one
 * compute lane per device, side by side in the order the devices were listed, each with
 * its device's colour as a tab, filled in the computing colour while an op runs on it,
 * and its short name ("GPU:1") where it fits. Returns 1 when drawn (2 or more devices). */
static int draw_device_lanes(viz_ctx *c, int w, viz_rect inner, double lh)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    uint32_t ids[VIZ_MAX_DEVICE_LANES];
    int n = viz_model_task_devices(&c->src->m, EVT_JOB_WORKER, w, ids, VIZ_MAX_DEVICE_LANES);
    if (n < 2) return 0;
    viz_rect lane[VIZ_MAX_DEVICE_LANES];
    viz_device_lanes(inner, lh, l->s, n, lane);
    double fs = viz_layout_font(l, fmin(l->font_small * 0.85, lane[0].h * 0.9));
    viz_font(cr, fs, 0);
    for (int i = 0; i < n; i++) {
        viz_rect r = lane[i];
        int busy = 0;
        for (int d = 0; d < c->st->n_devices; d++) {
            const evt_device_state *ds = &c->st->devices[d];
            if (ds->job == EVT_JOB_WORKER && ds->task == w && ds->name == ids[i]) busy = ds->busy > 0;
        }
        viz_seta(cr, VIZ_LINE, 0.9);
        cairo_rectangle(cr, r.x, r.y, r.w, r.h);
        cairo_fill(cr);
        if (busy) {
            viz_set(cr, viz_phase_color(EVT_PHASE_COMPUTING));
            cairo_rectangle(cr, r.x, r.y, r.w, r.h);
            cairo_fill(cr);
        }
        double tab = fmin(r.w * 0.2, r.h * 0.6);
        viz_set(cr, viz_device_color(viz_model_device_index(&c->src->m, ids[i])));
        cairo_rectangle(cr, r.x, r.y, tab, r.h);
        cairo_fill(cr);
        const char *name = viz_device_short(viz_source_string(c->src, ids[i]));
        if (fs <= r.h * 1.05 && viz_text_width(cr, name) <= r.w - tab - 4 * l->s) {
            viz_set(cr, busy ? (viz_rgb){1, 1, 1} : VIZ_INK);
            viz_text(cr, r.x + tab + 2 * l->s, r.y + r.h * 0.5 + fs * 0.36, name, 0, 0);
        }
    }
    return 1;
}

static void draw_worker(viz_ctx *c, int w, double lift)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    viz_rect b = l->worker_box[w];
    b.y -= lift;
    const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_WORKER, w);
    int phase = viz_worker_phase(c, w);
    viz_rgb pc = viz_phase_color(phase);
    char slow[32];
    slow_label(&c->src->m, w, slow, sizeof slow);
    viz_set(cr, pc);
    viz_round_rect(cr, b, 7 * s);
    cairo_fill(cr);
    viz_rect inner = {b.x + 4 * s, b.y + 4 * s, b.w - 8 * s, b.h - 8 * s};
    if (!l->compact_workers) {
        viz_seta(cr, VIZ_PANEL, 0.82);
        viz_round_rect(cr, inner, 5 * s);
        cairo_fill(cr);
    }
    /* the selection is blue, unless the box is (evaluating) */
    viz_set(cr, c->view->sel.kind == VIZ_SEL_TASK && c->view->sel.job == EVT_JOB_WORKER &&
                        c->view->sel.task == w && phase != VIZ_PHASE_EVALUATING ? VIZ_ACCENT : VIZ_INK);
    cairo_set_line_width(cr, (c->view->sel.kind == VIZ_SEL_TASK && c->view->sel.task == w &&
                              c->view->sel.job == EVT_JOB_WORKER ? 4 : 1.5) * s);
    viz_round_rect(cr, b, 7 * s);
    cairo_stroke(cr);
    char buf[160];
    viz_set(cr, VIZ_INK);
    if (l->compact_workers) {
        viz_font(cr, viz_layout_font(l, fmin(l->font_small, b.h * 0.5)), 1);
        snprintf(buf, sizeof buf, "%s%d%s%s", w == c->src->m.chief ? "\xe2\x98\x85" : "", w,
                 slow[0] ? " " : "", slow[0] ? slow + 5 : "");   /* "3 ×4" */
        /* too narrow: the bare number, else nothing rather than a lone "…" */
        if (viz_text_width(cr, buf) > b.w - 2 * s) snprintf(buf, sizeof buf, "%d", w);
        if (viz_text_width(cr, buf) <= b.w - 2 * s)
            viz_text(cr, b.x + b.w / 2, b.y + b.h * 0.62, buf, 1, b.w - 2 * s);
        return;
    }
    double x = inner.x + 5 * s, lh = inner.h / 3.2, tag_w = 0;
    if (slow[0]) {   /* the straggler's mark: an ink tag at the right of the name line */
        viz_font(cr, viz_layout_font(l, l->font_small * 0.9), 1);
        tag_w = viz_text_width(cr, slow) + 10 * s;
        viz_rect tag = {inner.x + inner.w - tag_w - 3 * s, inner.y + lh * 0.95 - l->font_small * 0.95,
                        tag_w, l->font_small * 1.25};
        viz_set(cr, VIZ_INK);
        viz_round_rect(cr, tag, 4 * s);
        cairo_fill(cr);
        viz_set(cr, VIZ_PANEL);
        viz_text(cr, tag.x + tag_w / 2, inner.y + lh * 0.95, slow, 1, 0);
        tag_w += 6 * s;
    }
    viz_set(cr, VIZ_INK);
    viz_font(cr, l->font_small, 1);
    /* the name reflows rather than be cut: /job:worker/task:3, worker 3, then 3 */
    const char *star = w == c->src->m.chief ? " \xe2\x98\x85" : "";
    double name_w = inner.w - 8 * s - tag_w;
    viz_task_name(buf, sizeof buf, EVT_JOB_WORKER, w);
    strncat(buf, star, sizeof buf - strlen(buf) - 1);
    if (viz_text_width(cr, buf) > name_w) snprintf(buf, sizeof buf, "worker %d%s", w, star);
    if (viz_text_width(cr, buf) > name_w) snprintf(buf, sizeof buf, "%d%s", w, star);
    viz_text(cr, x, inner.y + lh * 0.95, buf, 0, name_w);
    /* phase line: name, compute progress bar */
    viz_font(cr, l->font, 1);
    const char *pn = viz_phase_name(phase);
    if (phase == EVT_PHASE_SSP) pn = "blocked (ssp)";
    if (phase == EVT_PHASE_BARRIER) pn = "at barrier";
    if (tk && !tk->started) pn = "not started";
    if (tk && tk->reconnecting && phase != EVT_PHASE_DEAD) pn = "reconnecting";
    /* a transfer beside the compute (pipelined pushes, a prefetch) is said: in full where
     * it fits, else shorter ("compute + push") */
    char both[48];
    double pmax = fmax(inner.w * 0.6, inner.w - 10 * s);
    if (phase == EVT_PHASE_COMPUTING && tk && (tk->pushes_in_flight || tk->pulls_in_flight)) {
        int push = tk->pushes_in_flight > 0;
        snprintf(both, sizeof both, "%s + %s", pn, push ? "pushing" : "pulling");
        if (viz_text_width(cr, both) > pmax) snprintf(both, sizeof both, "compute + %s", push ? "push" : "pull");
        if (viz_text_width(cr, both) <= pmax) pn = both;
    }
    /* the phase word is never cut: it takes the line, and the progress bar what is left */
    double pw = viz_text(cr, x, inner.y + lh * 2.05, pn, 0, pmax);
    double prog = c->fr.progress && w < c->src->m.n_workers ? c->fr.progress[w] : -1;
    if (phase == EVT_PHASE_COMPUTING && prog >= 0) {
        viz_rect bar = {x + pw + 8 * s, inner.y + lh * 1.45, inner.w - pw - 18 * s, lh * 0.6};
        if (bar.w > 10 * s) {
            viz_seta(cr, VIZ_LINE, 0.8);
            cairo_rectangle(cr, bar.x, bar.y, bar.w, bar.h);
            cairo_fill(cr);
            viz_set(cr, pc);
            cairo_rectangle(cr, bar.x, bar.y, bar.w * prog, bar.h);
            cairo_fill(cr);
        }
    }
    if (draw_device_lanes(c, w, inner, lh)) goto crossed;
    viz_font(cr, l->font_small, 0);
    char st[32] = "";
    double sv = c->fr.staleness && w < c->src->m.n_workers ? c->fr.staleness[w] : -1;
    if (sv > 0) snprintf(st, sizeof st, " · stale %g", sv);
    long long step = tk ? (long long)tk->step : 0LL;
    /* reflows rather than be cut: the staleness, then the loss go first */
    if (tk && isfinite(tk->loss))
        snprintf(buf, sizeof buf, "step %lld · loss %.3f%s", step, tk->loss, st);
    else
        snprintf(buf, sizeof buf, "step %lld%s", step, st);
    if (viz_text_width(cr, buf) > inner.w - 8 * s && tk && isfinite(tk->loss))
        snprintf(buf, sizeof buf, "step %lld · loss %.3f", step, tk->loss);
    if (viz_text_width(cr, buf) > inner.w - 8 * s) snprintf(buf, sizeof buf, "step %lld", step);
    viz_set(cr, VIZ_INK);
    viz_text(cr, x, inner.y + lh * 3.0, buf, 0, inner.w - 8 * s);
crossed:
    if (phase == EVT_PHASE_DEAD) cross_out(cr, b, s);
}

/* Every worker talks to every ps. Up to VIZ_MESH_EDGES edges are drawn; past that a mesh
 * is a grey wall (and costs cairo tens of ms), so each ps and each worker gets a stub to
 * one shared bus line instead. */
#define VIZ_MESH_EDGES 256
static void draw_edges(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    viz_seta(cr, VIZ_LINE, 0.9);
    cairo_set_line_width(cr, 1.2 * l->s);
    double edges = (double)l->n_workers * l->n_ps;
    if (edges <= VIZ_MESH_EDGES) {
        /* one path while few; past that one stroke each: crossings within one path cost
         * cairo far more than the extra calls */
        for (int w = 0; w < l->n_workers; w++)
            for (int p = 0; p < l->n_ps; p++) {
                viz_point a = viz_layout_ps_anchor(l, p, w), b = viz_layout_worker_anchor(l, w);
                cairo_move_to(cr, a.x, a.y);
                cairo_line_to(cr, b.x, b.y);
                if (edges > 64) cairo_stroke(cr);
            }
        cairo_stroke(cr);
        return;
    }
    double top = l->ps_area.y + l->ps_area.h, y = top + (l->barrier_y - top) * 0.3;
    double x0 = l->cluster.x + l->cluster.w, x1 = l->cluster.x;
    for (int p = 0; p < l->n_ps; p++) {
        viz_point a = viz_layout_ps_anchor(l, p, 0);
        cairo_move_to(cr, a.x, a.y);
        cairo_line_to(cr, a.x, y);
        x0 = fmin(x0, a.x);
        x1 = fmax(x1, a.x);
    }
    for (int w = 0; w < l->n_workers; w++) {
        viz_point b = viz_layout_worker_anchor(l, w);
        cairo_move_to(cr, b.x, b.y);
        cairo_line_to(cr, b.x, y);
        x0 = fmin(x0, b.x);
        x1 = fmax(x1, b.x);
    }
    cairo_stroke(cr);
    viz_set(cr, VIZ_LINE);
    cairo_set_line_width(cr, 3 * l->s);
    cairo_move_to(cr, x0, y);
    cairo_line_to(cr, x1, y);
    cairo_stroke(cr);
}

/* Count of workers per phase as drawn (the chief evaluating counts as such), and the step
 * the barrier holds. */
static void phase_counts(const viz_ctx *c, int n, int *count, int64_t *barrier_step)
{
    const evt_state *st = c->st;
    memset(count, 0, VIZ_N_PHASES * sizeof *count);
    *barrier_step = -1;
    for (int w = 0; w < n && w < st->workers_len; w++) {
        const evt_task_state *tk = &st->workers[w];
        int ph = w == c->src->m.chief ? viz_worker_phase(c, w) : tk->started ? tk->phase : EVT_PHASE_IDLE;
        count[ph]++;
        if (ph == EVT_PHASE_BARRIER && tk->step > *barrier_step) *barrier_step = tk->step;
    }
    if (n > st->workers_len) count[EVT_PHASE_IDLE] += n - st->workers_len;
}

static void draw_barrier(viz_ctx *c, int waiting, int64_t step)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, y = l->barrier_y;
    viz_rgb bc = {0.55, 0.45, 0.0};
    viz_set(cr, bc);
    cairo_set_line_width(cr, 3 * s);
    double dash[] = {10 * s, 6 * s};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, l->cluster.x, y);
    cairo_line_to(cr, l->cluster.x + l->cluster.w, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    char buf[96];
    snprintf(buf, sizeof buf, "barrier · step %lld · %d/%d waiting", (long long)step, waiting,
             l->n_workers);
    viz_font(cr, l->font_small, 1);
    double w = viz_text_width(cr, buf);
    viz_set(cr, VIZ_BG);
    cairo_rectangle(cr, l->cluster.x, y - l->font_small * 1.3, w + 10 * s, l->font_small * 1.1);
    cairo_fill(cr);
    viz_set(cr, bc);
    viz_text(cr, l->cluster.x + 4 * s, y - l->font_small * 0.4, buf, 0, 0);
}

/* Traffic bands, one per ps box (compact ps: one per column of cells, pscells.c). */
static void draw_bands(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    int n = l->n_ps, span = viz_model_rate_span(m);
    if (n <= 0) return;
    double *rate = xcalloc(2 * (size_t)n, sizeof *rate);
    viz_model_ps_rates(m, viz_model_bucket(m, c->t), span, n, rate);
    double max_rate = viz_model_ps_rate_peak(m, span, n, NULL, 0);
    for (int p = 0; p < n; p++) {   /* width ~ bytes/s */
        viz_rect pb = l->ps_box[p];
        double gx = l->grid.x + l->grid.w * (p + 0.5) / n;
        for (int d = 0; d < 2; d++) {
            double r = rate[2 * p + d] / max_rate;
            double wt = pb.w * 0.4 * r, wb = fmin(l->grid.w / n * 0.45, pb.w * 0.4) * r;
            viz_band(cr, pb.x + pb.w / 2, pb.y + pb.h, gx, l->grid.y - l->font * 1.4, wt, wb, d);
        }
    }
    free(rate);
}

/* Stragglers on the dense grid: an ink ring round each slowed worker's cell where the cell
 * is big enough to hold one (4 px and up). Returns how many workers are slowed. */
static int draw_dense_slow(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    int n = 0;
    for (int w = 0; w < m->slow_len && w < l->n_workers; w++) {
        if (!(viz_model_slow(m, w) > 0)) continue;
        n++;
        if (l->cell < 4) continue;
        viz_rect r = viz_layout_cell(l, w);
        double lw = fmax(1, round(l->cell * 0.18));
        viz_set(cr, VIZ_INK);
        cairo_set_line_width(cr, lw);
        cairo_rectangle(cr, r.x + lw / 2, r.y + lw / 2, r.w - lw, r.h - lw);
        cairo_stroke(cr);
    }
    return n;
}

/* The grid's caption says which workers are slow, from x on its line: "slow: 3 ×4, 17 ×2",
 * the first few and then how many more, in an ink tag like a worker box's. */
static void dense_slow_legend(viz_ctx *c, double x, double y, int n_slow)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    char buf[200] = "slow:";
    int listed = 0;
    for (int w = 0; w < m->slow_len && w < l->n_workers && listed < 3; w++) {
        double f = viz_model_slow(m, w);
        if (!(f > 0)) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, "%s %d \xc3\x97%g", listed ? "," : "", w, f);
        listed++;
    }
    if (n_slow > listed) {
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, " +%d more", n_slow - listed);
    }
    double s = l->s, fs = viz_layout_font(l, l->font_small * 0.9), right = l->grid.x + l->grid.w;
    viz_font(cr, fs, 1);
    double w = viz_text_width(cr, buf) + 10 * s;
    if (x + w > right) x = fmax(l->grid.x, right - w);   /* no room after the counts: right-aligned */
    viz_set(cr, VIZ_INK);
    viz_round_rect(cr, (viz_rect){x, y - fs * 0.95, w, fs * 1.25}, 4 * s);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_text(cr, x + 5 * s, y, buf, 0, 0);
}

static void draw_dense(viz_ctx *c, const int *count)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    if (l->compact_ps) viz_draw_ps_col_bands(c);
    else draw_bands(c);
    /* the grid: one pixel per worker in a small image, scaled up without smoothing */
    int cols = l->grid_cols, rows = l->grid_rows;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
    uint32_t lut[VIZ_N_PHASES];
    for (int i = 0; i < VIZ_N_PHASES; i++) {
        viz_rgb pc = viz_phase_color(i);
        lut[i] = (uint32_t)(pc.r * 255 + 0.5) << 16 | (uint32_t)(pc.g * 255 + 0.5) << 8 |
                 (uint32_t)(pc.b * 255 + 0.5);
    }
    cairo_surface_flush(img);
    unsigned char *px = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (int w = 0; w < cols * rows; w++) {
        uint32_t v = 0xF6F5F1;
        if (w < l->n_workers) {
            const evt_task_state *tk = w < c->st->workers_len ? &c->st->workers[w] : NULL;
            v = lut[w == c->src->m.chief ? viz_worker_phase(c, w)
                                         : tk && tk->started ? tk->phase : EVT_PHASE_IDLE];
        }
        ((uint32_t *)(void *)(px + (size_t)(w / cols) * (size_t)stride))[w % cols] = v;
    }
    cairo_surface_mark_dirty(img);
    cairo_save(cr);
    cairo_translate(cr, l->grid.x, l->grid.y);
    cairo_scale(cr, l->cell, l->cell);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, 0, 0, cols, rows);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    int n_slow = draw_dense_slow(c);
    /* caption: counts per phase with swatches */
    static const int order[] = {EVT_PHASE_PULLING, EVT_PHASE_COMPUTING, EVT_PHASE_PACED,
                                EVT_PHASE_PUSHING, EVT_PHASE_BARRIER, EVT_PHASE_SSP,
                                VIZ_PHASE_EVALUATING, EVT_PHASE_DEAD, EVT_PHASE_IDLE};
    char buf[64];
    double x = l->grid.x, y = l->grid.y - l->font * 0.45;
    viz_font(cr, l->font_small, 1);
    viz_set(cr, VIZ_INK);
    snprintf(buf, sizeof buf, "%d workers:", l->n_workers);
    x += viz_text(cr, x, y, buf, 0, 0) + 8 * s;
    viz_font(cr, l->font_small, 0);
    for (size_t i = 0; i < DP_ARRAY_LEN(order); i++) {
        /* computing always has its entry; paced has one whenever the run is paced */
        if (!count[order[i]] && order[i] != EVT_PHASE_COMPUTING &&
            !(order[i] == EVT_PHASE_PACED && c->src->m.has_paced) &&
            !(order[i] == VIZ_PHASE_EVALUATING && c->src->m.has_eval))
            continue;
        viz_set(cr, viz_phase_color(order[i]));
        cairo_rectangle(cr, x, y - l->font_small * 0.8, l->font_small * 0.9, l->font_small * 0.9);
        cairo_fill(cr);
        x += l->font_small * 1.2;
        viz_set(cr, VIZ_INK);
        snprintf(buf, sizeof buf, "%s %d", viz_phase_name(order[i]), count[order[i]]);
        x += viz_text(cr, x, y, buf, 0, 0) + 12 * s;
    }
    if (n_slow) dense_slow_legend(c, x, y, n_slow);
}

void viz_draw_cluster(viz_ctx *c)
{
    const viz_layout *l = &c->lay;
    int count[VIZ_N_PHASES];
    int64_t bstep;
    phase_counts(c, l->n_workers, count, &bstep);
    if (l->dense) {
        draw_dense(c, count);
        if (l->compact_ps) viz_draw_ps_cells(c);
        else for (int p = 0; p < l->n_ps; p++) draw_ps(c, p);
        return;
    }
    if (l->machine) {
        viz_draw_machine(c);
        return;
    }
    draw_edges(c);
    if (l->compact_ps) viz_draw_ps_cells(c);
    else for (int p = 0; p < l->n_ps; p++) draw_ps(c, p);
    int waiting = count[EVT_PHASE_BARRIER];
    if (waiting > 0) draw_barrier(c, waiting, bstep);
    double lift = 0;
    if (l->n_workers > 0) lift = l->worker_box[0].y - l->barrier_y - 2 * l->s;
    for (int w = 0; w < l->n_workers; w++) {
        const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_WORKER, w);
        /* the first row lines up against the barrier line */
        int at_barrier = tk && tk->phase == EVT_PHASE_BARRIER && l->worker_box[w].y <= l->worker_box[0].y;
        draw_worker(c, w, at_barrier ? fmax(lift, 0) : 0);
    }
    viz_draw_packets(c);
    if (l->n_ps == 0 && l->n_workers == 0) {
        viz_font(c->cr, l->font, 0);
        viz_set(c->cr, VIZ_MUTED);
        viz_text(c->cr, l->cluster.x + l->cluster.w / 2, l->cluster.y + l->cluster.h / 2,
                 "waiting for the cluster to start…", 1, 0);
    }
}

/* Hit test on the cluster picture: packets first (they sit on top), then boxes. */
void viz_cluster_hit(const viz_ctx *c, double x, double y, viz_selection *out)
{
    const viz_layout *l = &c->lay;
    memset(out, 0, sizeof *out);
    for (int i = c->fr.n_pk - 1; i >= 0 && !l->dense; i--) {
        const viz_packet *p = &c->fr.pk[i];
        if (p->dropped) continue;
        double frac = p->t1 > p->t0 ? (double)(c->t - p->t0) / (double)(p->t1 - p->t0) : 1;
        viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, frac);
        double r = 16 * l->s;
        if ((x - q.x) * (x - q.x) + (y - q.y) * (y - q.y) <= r * r) {
            *out = (viz_selection){VIZ_SEL_PACKET, EVT_JOB_WORKER, p->worker, p->id,
                                   p->is_push ? EVT_PUSH_BEGIN : EVT_PULL_BEGIN};
            return;
        }
    }
    for (int p = 0; p < l->n_ps; p++)
        if (viz_rect_contains(l->ps_box[p], x, y)) {
            *out = (viz_selection){VIZ_SEL_TASK, EVT_JOB_PS, p, 0, 0};
            return;
        }
    for (int w = 0; w < l->n_workers; w++) {
        viz_rect r = l->dense ? viz_layout_cell(l, w) : l->worker_box[w];
        if (viz_rect_contains(r, x, y)) {
            *out = (viz_selection){VIZ_SEL_TASK, EVT_JOB_WORKER, w, 0, 0};
            return;
        }
    }
}
