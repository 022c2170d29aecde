/* pscells.c — the ps row when there are too many ps for boxes (layout's compact_ps): each
 * ps a small cell that stays individually visible — its index (every Nth when the digits
 * do not fit), a glow whose strength is its current bytes/s against its peak (left half
 * sky blue for pulls, right half orange for pushes), a load strip of its variables' colours as long as its bytes held,
 * a blue outline flashing when an update lands, and a vermillion outline when it is dead
 * or hot (over 1.5x the mean traffic, the rule of the traffic panel). Above a dense worker
 * grid, traffic flows in one band per column of cells, so the busiest columns stand out
 * while the cells say which ps. Rates come from the model's per-ps series. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

static viz_rgb mix(viz_rgb a, viz_rgb b, double f)
{
    return (viz_rgb){a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

/* The caption above the cells: count, legend, applied / dropped totals (with the sample
 * they cover, on a sampled trace). */
static void draw_caption(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, fs = l->font_small, y = l->ps_area.y + fs * 0.95;
    double x = l->ps_area.x + 4 * s, right = l->ps_area.x + l->ps_area.w - 4 * s;
    char buf[160];
    long long applied = 0, dropped = 0;
    for (int p = 0; p < l->n_ps; p++) {
        const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_PS, p);
        if (tk) applied += tk->applies, dropped += tk->drops;
    }
    char note[96], of[112] = "";
    if (viz_model_sample_note(&c->src->m, note, sizeof note)) snprintf(of, sizeof of, " (%s)", note);
    viz_font(cr, fs, 0);
    if (dropped > 0) snprintf(buf, sizeof buf, "%lld applied · %lld dropped%s", applied, dropped, of);
    else snprintf(buf, sizeof buf, "%lld applied%s", applied, of);
    viz_set(cr, dropped > 0 ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_MUTED);
    right -= viz_text(cr, right, y, buf, 2, 0) + 16 * s;
    viz_font(cr, fs, 1);
    viz_set(cr, VIZ_INK);
    snprintf(buf, sizeof buf, "%d ps", l->n_ps);
    x += viz_text(cr, x, y, buf, 0, 0) + 10 * s;
    viz_font(cr, fs, 0);
    static const int dirs[2] = {EVT_PHASE_PULLING, EVT_PHASE_PUSHING};
    static const char *names[2] = {"pull", "push"};
    for (int d = 0; d < 2 && x + fs * 4 < right; d++) {
        viz_set(cr, viz_phase_color(dirs[d]));
        cairo_rectangle(cr, x, y - fs * 0.8, fs * 0.9, fs * 0.9);
        cairo_fill(cr);
        x += fs * 1.15;
        viz_set(cr, VIZ_MUTED);
        x += viz_text(cr, x, y, names[d], 0, 0) + 8 * s;
    }
    viz_set(cr, VIZ_MUTED);
    if (right > x)
        viz_text(cr, x, y, "· glow: bytes/s · strip: bytes held, by variable", 0, right - x);
}

static void draw_cell(viz_ctx *c, int p, const double *rate, double peak, double mean,
                      int64_t flash)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double s = l->s;
    viz_rect b = l->ps_box[p];
    const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_PS, p);
    double pull = rate[2 * p], push = rate[2 * p + 1];
    double rad = fmin(4 * s, b.w * 0.2);
    /* glow: the left half lit by pulls, the right by pushes, as the bands below split */
    cairo_save(cr);
    viz_round_rect(cr, b, rad);
    cairo_clip(cr);
    for (int d = 0; d < 2; d++) {
        double g = fmin(1, (d ? push : pull) / peak);
        viz_rgb col = viz_phase_color(d ? EVT_PHASE_PUSHING : EVT_PHASE_PULLING);
        viz_set(cr, g > 0 ? mix(VIZ_PANEL, col, 0.12 + 0.8 * g) : VIZ_PANEL);
        cairo_rectangle(cr, b.x + d * b.w / 2, b.y, b.w / 2, b.h);
        cairo_fill(cr);
    }
    cairo_restore(cr);
    /* load strip: track, then one segment per variable */
    double inset = fmin(3 * s, b.w * 0.15);
    int strip = 0;
    for (int v = 0; v < m->n_vars && v < l->n_vars; v++) {
        if (m->vars[v].ps != p || l->var_bar[v].h <= 0) continue;
        viz_rect r = l->var_bar[v];
        if (!strip) {
            viz_seta(cr, VIZ_PANEL, 0.9);
            cairo_rectangle(cr, b.x + inset, r.y, b.w - 2 * inset, r.h);
            cairo_fill(cr);
            strip = 1;
        }
        viz_set(cr, viz_var_color(v));
        cairo_rectangle(cr, r.x, r.y, r.w, r.h);
        cairo_fill(cr);
    }
    int dead = tk && tk->dead;
    int hot = l->n_ps > 1 && mean > 0 && pull + push > 1.5 * mean;
    int sel = c->view->sel.kind == VIZ_SEL_TASK && c->view->sel.job == EVT_JOB_PS &&
              c->view->sel.task == p;
    viz_set(cr, sel ? VIZ_ACCENT : dead || hot ? viz_phase_color(EVT_PHASE_DEAD) : VIZ_INK);
    cairo_set_line_width(cr, (sel ? 3.5 : dead || hot ? 2.5 : 1.2) * s);
    viz_round_rect(cr, b, rad);
    cairo_stroke(cr);
    if (flash >= 0) {   /* an update just landed: a blue outline that fades */
        double age = (double)(c->t - flash) / (double)(m->bw > 0 ? m->bw * 8 : 1);
        viz_seta(cr, VIZ_ACCENT, fmax(0.25, 1 - age));
        cairo_set_line_width(cr, 2.5 * s);
        viz_round_rect(cr, (viz_rect){b.x - 2.5 * s, b.y - 2.5 * s, b.w + 5 * s, b.h + 5 * s},
                       rad + 2 * s);
        cairo_stroke(cr);
    }
    if (dead) {
        viz_set(cr, viz_phase_color(EVT_PHASE_DEAD));
        cairo_set_line_width(cr, 2 * s);
        cairo_move_to(cr, b.x, b.y);
        cairo_line_to(cr, b.x + b.w, b.y + b.h);
        cairo_move_to(cr, b.x + b.w, b.y);
        cairo_line_to(cr, b.x, b.y + b.h);
        cairo_stroke(cr);
    }
    if (p % (l->ps_label_every > 0 ? l->ps_label_every : 1)) return;
    char buf[32];
    double fs = viz_layout_font(l, fmin(l->font_small, fmax(b.h * 0.62, 1)));
    viz_font(cr, fs, 1);
    snprintf(buf, sizeof buf, "ps %d", p);
    double tw = viz_text_width(cr, buf);
    if (tw > b.w - 6 * s) {
        snprintf(buf, sizeof buf, "%d", p);
        tw = viz_text_width(cr, buf);
    }
    double y = b.y + fmin(fs * 1.05, (b.h + fs * 0.7) / 2);
    if (tw > b.w - 2 * s) {   /* every Nth label, wider than its cell: on a pill */
        viz_seta(cr, VIZ_PANEL, 0.92);
        viz_round_rect(cr, (viz_rect){b.x + b.w / 2 - tw / 2 - 2 * s, y - fs * 0.9, tw + 4 * s,
                                      fs * 1.1}, 2 * s);
        cairo_fill(cr);
    }
    viz_set(cr, VIZ_INK);
    viz_text(cr, b.x + b.w / 2, y, buf, 1, 0);
}

void viz_draw_ps_cells(viz_ctx *c)
{
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    int n = l->n_ps;
    if (n <= 0) return;
    double *rate = xcalloc(2 * (size_t)n, sizeof *rate);
    int span = viz_model_rate_span(m);
    viz_model_ps_rates(m, viz_model_bucket(m, c->t), span, n, rate);
    /* glow against each ps's own peak over the run, so a steady run glows steadily */
    double peak = viz_model_ps_rate_peak(m, span, n, NULL, 0), total = 0;
    for (int i = 0; i < 2 * n; i++) total += rate[i];
    int64_t *flash = xmalloc((size_t)n * sizeof *flash);
    for (int p = 0; p < n; p++) flash[p] = -1;
    for (int v = 0; v < m->n_vars && c->fr.flash; v++) {
        int p = m->vars[v].ps;
        if (p >= 0 && p < n && c->fr.flash[v] > flash[p]) flash[p] = c->fr.flash[v];
    }
    draw_caption(c);
    for (int p = 0; p < n; p++) draw_cell(c, p, rate, peak, total / n, flash[p]);
    free(flash);
    free(rate);
}

void viz_draw_ps_col_bands(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    int n = l->n_ps, cols = l->ps_cols;
    if (n <= 0 || cols <= 0) return;
    int span = viz_model_rate_span(m);
    double *rate = xcalloc(2 * (size_t)n, sizeof *rate);
    double *col = xcalloc(2 * (size_t)cols, sizeof *col);
    int *group = xmalloc((size_t)n * sizeof *group);
    for (int p = 0; p < n; p++) group[p] = p % cols;
    viz_model_ps_rates(m, viz_model_bucket(m, c->t), span, n, rate);
    for (int p = 0; p < n; p++)
        for (int d = 0; d < 2; d++) col[2 * group[p] + d] += rate[2 * p + d];
    double peak = viz_model_ps_rate_peak(m, span, n, group, cols);
    double pitch = cols > 1 ? l->ps_box[1].x - l->ps_box[0].x : l->ps_box[0].w;
    double y0 = l->ps_area.y + l->ps_area.h + 2 * l->s, y1 = l->grid.y - l->font * 1.4;
    for (int k = 0; k < cols; k++) {
        viz_rect cell = l->ps_box[k < n ? k : 0];
        double x0 = cell.x + cell.w / 2, gx = l->grid.x + l->grid.w * (k + 0.5) / cols;
        for (int d = 0; d < 2; d++) {
            double r = fmin(1, col[2 * k + d] / peak);
            double wt = pitch * 0.45 * r, wb = fmin(l->grid.w / cols * 0.45, pitch * 0.45) * r;
            viz_band(cr, x0, y0, gx, y1, wt, wb, d);
        }
    }
    free(group);
    free(col);
    free(rate);
}
