/* compare.c — two runs side by side on one clock (`view --compare B`, `render --compare`):
 * A on the left, B on the right, over a strip with both loss curves (A blue, B vermillion)
 * on shared axes. The clock is the time since each run's start (its CLUSTER_START), so a
 * live A whose hub started long before its cluster still lines up with a recording, or
 * (compare_by_step) B is shown when it reached A's global step. The strip has a time axis
 * and a loss axis with ticks at plot_ticks' nice values and a cursor at A's time; under it
 * a diff strip marks where the runs differ (one waits and the other does not, drops,
 * staleness), since a difference reads more easily than two animations. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"
#include "viz/plot.h"

/* B's start on its own clock. A fork of A (its metadata's "fork") is written on A's clock,
 * from the moment A reached the fork's step: it shares A's start, so both halves show the
 * same trace time. */
static int64_t origin_b(const viz_source *a, const viz_source *b)
{
    return b->m.fork_step > 0 ? viz_source_origin(a) : viz_source_origin(b);
}

int64_t viz_compare_time(viz_source *a, viz_source *b, const viz_view *v)
{
    if (v->compare_by_step) {
        int64_t step = viz_source_state_at(a, v->t)->global_step;
        return step > 0 ? viz_source_time_of_step(b, step) : origin_b(a, b);
    }
    int64_t tb = origin_b(a, b) + (v->t - viz_source_origin(a));
    return tb > 0 ? tb : 0;
}

/* A tick label on the time axis: "0", "250 ms", "1.5 s". */
static void time_label(char *buf, size_t n, double sec, double span_s)
{
    if (fabs(sec) < 1e-9 * span_s) snprintf(buf, n, "0");
    else if (span_s < 2) snprintf(buf, n, "%g ms", sec * 1e3);
    else snprintf(buf, n, "%g s", sec);
}

/* Line widths and positions on whole pixels, so that axes, ticks and the cursor are solid
 * ink on any projector rather than a grey smear: a width of w pixels at v. */
static double crisp_width(double s) { return fmax(1, round(1.5 * s)); }
static double crisp(double v, double w) { return (int)w % 2 ? floor(v) + 0.5 : round(v); }

/* Axes, ticks and the grid of the strip's chart; span in ns, ymax in loss units. */
static void draw_axes(viz_ctx *c, viz_rect p, int64_t span, double ymax)
{
    cairo_t *cr = c->cr;
    double s = c->lay.s, fs = c->lay.font_small * 0.85, tick = 4 * s, lw = crisp_width(s);
    double ticks[16], span_s = (double)span / 1e9;
    char buf[48];
    viz_font(cr, fs, 0);
    int ny = plot_ticks(0, ymax, 0, ticks, 16);
    for (int i = 0; i < ny; i++) {   /* loss: grid lines, ticks and labels on the left */
        double y = crisp(p.y + p.h * (1 - ticks[i] / ymax), lw);
        if (i > 0) {   /* the grid (the axis is the line at 0) */
            viz_set(cr, VIZ_LINE);
            cairo_set_line_width(cr, 1);
            cairo_move_to(cr, p.x, crisp(y, 1));
            cairo_line_to(cr, p.x + p.w, crisp(y, 1));
            cairo_stroke(cr);
        }
        viz_set(cr, VIZ_INK);
        cairo_set_line_width(cr, lw);
        cairo_move_to(cr, p.x - tick, y);
        cairo_line_to(cr, p.x, y);
        cairo_stroke(cr);
        snprintf(buf, sizeof buf, "%g", fabs(ticks[i]) < 1e-9 * ymax ? 0.0 : ticks[i]);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, p.x - tick - 3 * s, y + fs * 0.35, buf, 2, 0);
    }
    int nx = plot_ticks(0, span_s, 0, ticks, 16);
    for (int i = 0; i < nx; i++) {   /* time since each run's start: ticks and labels below */
        double x = crisp(p.x + p.w * ticks[i] / span_s, lw);
        viz_set(cr, VIZ_INK);
        cairo_set_line_width(cr, lw);
        cairo_move_to(cr, x, p.y + p.h);
        cairo_line_to(cr, x, p.y + p.h + tick);
        cairo_stroke(cr);
        time_label(buf, sizeof buf, ticks[i], span_s);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, x, p.y + p.h + tick + fs * 1.0, buf, i == 0 ? 0 : 1, 0);
    }
    viz_set(cr, VIZ_INK);   /* the axes themselves */
    cairo_set_line_width(cr, lw);
    double x0 = crisp(p.x, lw), y0 = crisp(p.y + p.h, lw);
    cairo_move_to(cr, x0, p.y);
    cairo_line_to(cr, x0, y0);
    cairo_line_to(cr, p.x + p.w, y0);
    cairo_stroke(cr);
}

/* A vertical cursor at x across the chart; dashed for B's moment when it is not A's. */
static void cursor(cairo_t *cr, viz_rect p, double x, viz_rgb col, int dashed, double s)
{
    if (x < p.x || x > p.x + p.w) return;
    double lw = fmax(2, round(2 * s));
    x = crisp(x, lw);
    viz_set(cr, col);
    cairo_set_line_width(cr, lw);
    double dash[] = {5 * s, 4 * s};
    if (dashed) cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, x, p.y);
    cairo_line_to(cr, x, p.y + p.h);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

/* Which run a difference belongs to in one column of the diff strip: 0 neither, 1 A, 2 B.
 * row 0: one waits (barrier or ssp) for a larger share of its workers' time (20 points or
 * more); row 1: one drops gradients and the other none (or half as many); row 2: the
 * applied gradients' mean staleness differs by 1 or more. */
int viz_diff_who(int row, const viz_diff_stats *x, const viz_diff_stats *y)
{
    if (row == 0) {
        if (!x->busy && !y->busy) return 0;
        double d = x->wait - y->wait;
        return d >= 0.2 ? 1 : d <= -0.2 ? 2 : 0;
    }
    if (row == 1) {
        if (x->drops > 0 && (y->drops <= 0 || x->drops >= 2 * y->drops)) return 1;
        if (y->drops > 0 && (x->drops <= 0 || y->drops >= 2 * x->drops)) return 2;
        return 0;
    }
    if (x->stale < 0 || y->stale < 0) return 0;
    return x->stale - y->stale >= 1 ? 1 : y->stale - x->stale >= 1 ? 2 : 0;
}

/* The diff strip: where the two runs differ, on the chart's time axis (time since each
 * run's start), up to both cursors; a row per difference, labelled, with a legend. */
static void draw_diff(viz_ctx *c, const viz_compare_layout *cl, viz_source *a, viz_source *b, int64_t oa,
                      int64_t ob, int64_t span, int64_t ta, int64_t tb)
{
    static const char *rows[VIZ_DIFF_ROWS] = {"waits", "drops", "stale"};
    cairo_t *cr = c->cr;
    double s = c->lay.s, fs = c->lay.font_small * 0.85, rh = cl->diff_row_h;
    viz_rect d = cl->diff;
    viz_rgb col[3] = {VIZ_INK, VIZ_ACCENT, viz_phase_color(EVT_PHASE_DEAD)};
    viz_font(cr, fs, 0);
    for (int r = 0; r < VIZ_DIFF_ROWS; r++) {   /* tracks and their labels */
        viz_seta(cr, VIZ_LINE, 0.45);
        cairo_rectangle(cr, d.x, d.y + rh * r + rh * 0.1, d.w, rh * 0.8);
        cairo_fill(cr);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, d.x - 6 * s, d.y + rh * r + rh * 0.5 + fs * 0.35, rows[r], 2, 0);
    }
    /* columns of at least 8 buckets of the coarser run, so bucketing never reads as a difference */
    int64_t bw = a->m.bw > b->m.bw ? a->m.bw : b->m.bw;
    int n = (int)fmax(1, fmin(fmin(160, d.w / 3), (double)span / (8.0 * (double)bw)));
    int64_t upto = ta - oa < tb - ob ? ta - oa : tb - ob;
    for (int i = 0; i < n; i++) {
        int64_t u0 = (int64_t)((double)span * i / n), u1 = (int64_t)((double)span * (i + 1) / n);
        if (u1 > upto) break;
        /* only where both runs are under way: a fork starts at its step, not at A's start,
         * and a run that has ended neither waits nor drops */
        if (oa + u0 < viz_source_t0(a) || ob + u0 < viz_source_t0(b) || oa + u1 > viz_source_t1(a) ||
            ob + u1 > viz_source_t1(b))
            continue;
        viz_diff_stats x, y;
        viz_model_diff_stats(&a->m, oa + u0, oa + u1, &x);
        viz_model_diff_stats(&b->m, ob + u0, ob + u1, &y);
        double x0 = floor(d.x + d.w * i / n), x1 = floor(d.x + d.w * (i + 1) / n);
        for (int r = 0; r < VIZ_DIFF_ROWS; r++) {
            int who = viz_diff_who(r, &x, &y);
            if (!who) continue;
            viz_set(cr, col[who]);
            cairo_rectangle(cr, x0, round(d.y + rh * r + rh * 0.1), x1 - x0, round(rh * 0.8));
            cairo_fill(cr);
        }
    }
    /* the legend: what a mark means, in the runs' colours */
    double x = d.x, y = cl->diff_legend_y, sw = fs * 0.9;
    viz_font(cr, fs, 1);
    viz_set(cr, VIZ_INK);
    x += viz_text(cr, x, y, "where the runs differ:", 0, 0) + 10 * s;
    viz_font(cr, fs, 0);
    for (int k = 1; k <= 2; k++) {
        viz_set(cr, col[k]);
        cairo_rectangle(cr, x, y - sw * 0.85, sw, sw);
        cairo_fill(cr);
        x += sw * 1.3;
        viz_set(cr, VIZ_INK);
        x += viz_text(cr, x, y, k == 1 ? "A more" : "B more", 0, 0) + 14 * s;
    }
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, x, y, "(share of time waiting at the barrier, gradients dropped as stale, mean staleness)", 0,
             d.x + d.w - x);
}

void viz_draw_compare(cairo_t *cr, viz_source *a, const viz_view *v)
{
    viz_source *b = v->compare;
    int w = v->width, h = v->height;
    viz_compare_layout cl;
    viz_layout_compare(w, h, v->dpr, &cl);
    int half = cl.half_w, top_h = cl.top_h;
    int64_t tb = viz_compare_time(a, b, v);
    viz_view vb = *v;
    vb.live = viz_source_is_live(b);  /* B follows A's clock, but only A may be live */
    vb.behind_live = 0;
    vb.sel.kind = VIZ_SEL_NONE;
    vb.help = 0;
    vb.toast = NULL;
    cairo_save(cr);
    cairo_rectangle(cr, 0, 0, half, top_h);
    cairo_clip(cr);
    viz_draw_frame(cr, a, v->help || v->toast ? &vb : v, v->t, half, top_h, 0, "A");
    cairo_restore(cr);
    cairo_save(cr);
    cairo_translate(cr, half, 0);
    cairo_rectangle(cr, 0, 0, w - half, top_h);
    cairo_clip(cr);
    char tag_b[160] = "B";   /* a fork says what it is: simulated, from which step, what changed */
    if (b->m.fork_step > 0)
        snprintf(tag_b, sizeof tag_b, "B fork @%lld", (long long)b->m.fork_step);
    vb.fork_menu = 0;
    viz_draw_frame(cr, b, &vb, tb, w - half, top_h, 0, tag_b);
    cairo_restore(cr);
    /* shared strip: both loss curves against the time since each run's start */
    viz_ctx c;
    viz_ctx_begin(&c, cr, a, v, v->t, w, h, 1);
    double s = c.lay.s;
    viz_rect strip = cl.strip, plot = cl.plot;
    viz_set(cr, VIZ_BG);
    cairo_rectangle(cr, 0, top_h, w, h - top_h);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, strip, 6 * s);
    cairo_fill(cr);
    int64_t oa = viz_source_origin(a), ob = origin_b(a, b);
    int64_t da = viz_source_t1(a) - oa, db = viz_source_t1(b) - ob;
    int64_t span = da > db ? da : db;
    if (v->t - oa > span) span = v->t - oa;   /* a live A runs ahead of its last event */
    if (span < 1) span = 1;
    double ymax = fmax(viz_model_loss_max(&a->m), viz_model_loss_max(&b->m)) * 1.05;
    draw_axes(&c, plot, span, ymax);
    viz_rgb ca = VIZ_ACCENT, cb = viz_phase_color(EVT_PHASE_DEAD);
    viz_plot_loss(&c, plot, &a->m, oa, v->t, span, ca, 0, ymax);
    viz_plot_loss(&c, plot, &b->m, ob, tb, span, cb, 0, ymax);
    double xa = plot.x + plot.w * (double)(v->t - oa) / (double)span;
    double xb = plot.x + plot.w * (double)(tb - ob) / (double)span;
    if (v->compare_by_step && fabs(xb - xa) > 1) cursor(cr, plot, xb, cb, 1, s);
    cursor(cr, plot, xa, VIZ_INK, 0, s);
    draw_diff(&c, &cl, a, b, oa, ob, span, v->t, tb);
    char buf[320];
    viz_font(cr, c.lay.font_small, 1);
    viz_set(cr, ca);
    double x = strip.x + 10 * s, y = strip.y + c.lay.font * 1.1;
    snprintf(buf, sizeof buf, "loss  A: %s (%s)", a->m.title[0] ? a->m.title : "A", a->m.mode);
    x += viz_text(cr, x, y, buf, 0, strip.w * 0.45) + 24 * s;
    viz_set(cr, cb);
    if (b->m.fork_step > 0)
        snprintf(buf, sizeof buf, "B: simulated from step %lld, %s (%s)", (long long)b->m.fork_step,
                 b->m.fork_set[0] ? b->m.fork_set : "fork", b->m.mode);
    else
        snprintf(buf, sizeof buf, "B: %s (%s)", b->m.title[0] ? b->m.title : "B", b->m.mode);
    x += viz_text(cr, x, y, buf, 0, strip.w * 0.4) + 24 * s;
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, strip.x + strip.w - 10 * s, y,
             v->compare_by_step ? "clock: global step" : "clock: time since each run's start", 2,
             strip.x + strip.w - 10 * s - x);
    if (v->help) viz_draw_help(&c);
    if (v->fork_menu) viz_draw_fork_menu(&c);
    if (v->toast) viz_draw_toast(&c, v->toast);
    viz_ctx_end(&c);
}
