/* layout.c — pure geometry for a frame (see layout.h). Everything scales with
 * s = min(width / 1280, height / 720); fonts have a floor so that text stays readable on
 * a projector even in a small window. No cairo, no state: only rectangles. */
#include "viz/layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

int viz_rect_contains(viz_rect r, double x, double y)
{
    return x >= r.x && y >= r.y && x < r.x + r.w && y < r.y + r.h;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void layout_frame(const viz_layout_input *in, viz_layout *l)
{
    double w = in->width, h = in->height, s = l->s, pad = 10 * s;
    l->top = (viz_rect){0, 0, w, l->font * 2.3};
    /* Timeline: one lane per task that fits in ~26% of the height, then the scrubber. */
    l->lane_h = fmax(l->font_small * 1.25, 14 * s);
    double scrub_h = l->font * 1.9;
    int max_lanes = (int)((h * 0.26 - scrub_h) / l->lane_h);
    if (max_lanes < 1) max_lanes = 1;
    l->n_lanes = in->timeline_lanes < max_lanes ? in->timeline_lanes : max_lanes;
    if (l->n_lanes < 1) l->n_lanes = 1;
    double tl_h = l->n_lanes * l->lane_h + scrub_h + pad;
    l->timeline = (viz_rect){pad, h - tl_h - pad * 0.5, w - 2 * pad, tl_h};
    double label_w = fmax(150 * s, l->font_small * 9);
    l->lanes = (viz_rect){l->timeline.x + label_w, l->timeline.y + pad * 0.5,
                          l->timeline.w - label_w, l->n_lanes * l->lane_h};
    l->scrub = (viz_rect){l->lanes.x, l->lanes.y + l->lanes.h + scrub_h * 0.3, l->lanes.w,
                          scrub_h * 0.45};
    double body_top = l->top.h + pad, body_bot = l->timeline.y - pad;
    double panel_w = 0;
    if (in->side_panels) {
        /* projector mode keeps loss, staleness and traffic (the lesson's story), each
         * taller; accuracy and throughput are left out (w = 0) */
        static const int all[VIZ_N_PANELS] = {1, 1, 1, 1, 1}, proj[VIZ_N_PANELS] = {1, 0, 0, 1, 1};
        const int *shown = l->projector ? proj : all;
        int n = 0;
        for (int i = 0; i < VIZ_N_PANELS; i++) n += shown[i];
        /* projector: a little narrower, so that the worker boxes gain the width */
        panel_w = clampd(w * (l->projector ? 0.25 : 0.29), 240 * s, 520 * s);
        double ph = (body_bot - body_top - (n - 1) * pad * 0.6) / n;
        for (int i = 0, k = 0; i < VIZ_N_PANELS; i++)
            if (shown[i]) {
                l->panels[i] = (viz_rect){w - pad - panel_w, body_top + k * (ph + pad * 0.6),
                                          panel_w, ph};
                k++;
            }
    }
    l->cluster = (viz_rect){pad, body_top, w - 2 * pad - (panel_w > 0 ? panel_w + pad : 0),
                            body_bot - body_top};
}

/* Compact ps: cells in the rows x cols grid that keeps them squarest and largest within
 * about a third of the cluster's height, under a caption line. Each cell carries a load
 * strip along its bottom: as long as the ps's bytes against the fullest ps, split into
 * one segment per variable (width ~ bytes). */
static void layout_ps_cells(const viz_layout_input *in, viz_layout *l, const int64_t *held)
{
    double s = l->s, pad = 10 * s, gap = fmax(3 * s, 2);
    viz_rect c = l->cluster;
    int n = l->n_ps;
    double cap_h = l->font_small * 1.3;
    double aw = c.w - pad, ah = fmax(c.h * 0.34 - cap_h, 8 * s);
    double max_w = 110 * s, max_h = l->font_small * 3.4;
    int rows = 1;
    double best = -1;
    for (int r = 1; r <= n; r++) {
        int cols = (n + r - 1) / r;
        double cw = fmin(aw / cols - gap, max_w), ch = fmin((ah + gap) / r - gap, max_h);
        if (ch < 1) break;
        if (fmin(cw, ch) > best + 1e-9) best = fmin(cw, ch), rows = r;  /* ties: fewer rows */
    }
    int cols = (n + rows - 1) / rows;
    rows = (n + cols - 1) / cols;
    double cw = fmax(fmin(aw / cols - gap, max_w), 1);
    double ch = fmax(fmin((ah + gap) / rows - gap, max_h), 1);
    double block_w = cols * (cw + gap) - gap;
    double x0 = c.x + (c.w - block_w) / 2, y0 = c.y + pad * 0.5 + cap_h;
    l->compact_ps = 1;
    l->ps_cols = cols;
    l->ps_rows = rows;
    l->ps_area = (viz_rect){c.x, c.y + pad * 0.5, c.w, cap_h + rows * (ch + gap) - gap};
    for (int p = 0; p < n; p++)
        l->ps_box[p] = (viz_rect){x0 + (p % cols) * (cw + gap), y0 + (p / cols) * (ch + gap), cw, ch};
    /* label every Nth cell, N from 1, 2, 5, 10, 20, 50 ... so that labels never collide;
     * the width is an estimate of the bold index at font_small (digits ~0.65 em) */
    int digits = 1;
    for (int k = n - 1; k >= 10; k /= 10) digits++;
    double lw = digits * 0.65 * l->font_small + 4 * s;
    int every = 1;
    while (every * (cw + gap) - gap < lw && every < n) {
        int d = every, mag = 1;
        for (; d >= 10; d /= 10) mag *= 10;
        every = (d == 1 ? 2 : d == 2 ? 5 : 10) * mag;
    }
    l->ps_label_every = every;
    /* load strips */
    int64_t max_held = 1;
    for (int p = 0; p < n; p++)
        if (held[p] > max_held) max_held = held[p];
    double inset = fmin(3 * s, cw * 0.15), sh = fmin(fmax(3 * s, ch * 0.16), ch * 0.4);
    double *cum = xcalloc((size_t)n + 1, sizeof *cum);
    for (int v = 0; v < in->n_vars; v++) {
        int p = in->var_ps[v];
        l->var_bar[v] = (viz_rect){0, 0, 0, 0};
        if (p < 0 || p >= n || held[p] <= 0) continue;
        viz_rect b = l->ps_box[p];
        double full = (b.w - 2 * inset) * (double)held[p] / (double)max_held;
        double bytes = (double)(in->var_bytes[v] > 0 ? in->var_bytes[v] : 0);
        double x = b.x + inset + full * cum[p] / (double)held[p];
        double w = full * bytes / (double)held[p];
        cum[p] += bytes;
        l->var_bar[v] = (viz_rect){x, b.y + b.h - inset - sh, w, sh};
    }
    free(cum);
}

/* Variables per ps: counts, and the largest for bar scaling. */
static void layout_ps(const viz_layout_input *in, viz_layout *l)
{
    double s = l->s, pad = 10 * s;
    viz_rect c = l->cluster;
    int n = l->n_ps;
    int *count = xcalloc((size_t)n + 1, sizeof *count);
    int64_t *held = xcalloc((size_t)n + 1, sizeof *held);
    int64_t max_bytes = 1;
    for (int v = 0; v < in->n_vars; v++) {
        int p = in->var_ps[v];
        if (p >= 0 && p < n) count[p]++;
        if (p >= 0 && p < n && in->var_bytes[v] > 0) held[p] += in->var_bytes[v];
        if (in->var_bytes[v] > max_bytes) max_bytes = in->var_bytes[v];
    }
    double per = (c.w - pad) / (n > 0 ? n : 1);
    double bw = fmin(per - pad, 420 * s);
    /* the floor on fonts makes a box unreadable before s says so (compare halves) */
    if (n > VIZ_COMPACT_PS || (n > 0 && bw < fmax(VIZ_PS_MIN_BOX_W * s, l->font_small * 8))) {
        layout_ps_cells(in, l, held);
        free(count);
        free(held);
        return;
    }
    int rows = 0;
    for (int p = 0; p < n; p++) {
        int r = count[p] > VIZ_MAX_BARS ? VIZ_MAX_BARS + 1 : count[p];
        if (r > rows) rows = r;
    }
    double title_h = l->font * 1.5, chips_h = l->font_small * 1.7;
    double bar_h = l->font_small * 1.75;
    double box_h = title_h + rows * bar_h + chips_h + pad;
    double max_h = c.h * 0.42;
    if (box_h > max_h) {
        bar_h = rows ? fmax((max_h - title_h - chips_h - pad) / rows, 4 * s) : bar_h;
        box_h = fmin(box_h, max_h);
    }
    double x0 = c.x + (c.w - n * (bw + pad) + pad) / 2;
    for (int p = 0; p < n; p++)
        l->ps_box[p] = (viz_rect){x0 + p * (bw + pad), c.y + pad * 0.5, bw, box_h};
    l->ps_area = (viz_rect){c.x, c.y + pad * 0.5, c.w, n > 0 ? box_h : 0};
    /* Bars: a row per variable (label above, fill below), fill width ~ sqrt(bytes). */
    memset(count, 0, ((size_t)n + 1) * sizeof *count);
    for (int v = 0; v < in->n_vars; v++) {
        int p = in->var_ps[v];
        l->var_bar[v] = (viz_rect){0, 0, 0, 0};
        if (p < 0 || p >= n) continue;
        int row = count[p]++;
        viz_rect b = l->ps_box[p];
        double inner = b.w - pad * 1.2;
        if (row >= VIZ_MAX_BARS) {
            l->more_bar[p] = (viz_rect){b.x + pad * 0.6, b.y + title_h + VIZ_MAX_BARS * bar_h +
                                        bar_h * 0.58, inner, bar_h * 0.34};
            continue;
        }
        double frac = 0.12 + 0.88 * sqrt((double)(in->var_bytes[v] > 0 ? in->var_bytes[v] : 0) /
                                         (double)max_bytes);
        l->var_bar[v] = (viz_rect){b.x + pad * 0.6, b.y + title_h + row * bar_h + bar_h * 0.58,
                                   inner * frac, bar_h * 0.34};
    }
    free(count);
    free(held);
}

static void layout_workers(viz_layout *l)
{
    double s = l->s, pad = 10 * s;
    viz_rect c = l->cluster;
    int n = l->n_workers;
    double ps_bottom = l->n_ps > 0 ? l->ps_area.y + l->ps_area.h + pad * 0.5 : c.y;
    double avail_top = ps_bottom + fmax(c.h * 0.16, 40 * s); /* room for edges */
    double region_h = c.y + c.h - avail_top;
    if (n <= 0) {
        l->barrier_y = avail_top;
        return;
    }
    if (n > VIZ_DENSE_WORKERS) {
        l->dense = 1;
        double gy = avail_top + l->font * 1.4; /* a caption line above the grid */
        double gh = c.y + c.h - gy, gw = c.w - 2 * pad;
        int cols = (int)ceil(sqrt((double)n * gw / fmax(gh, 1)));
        if (cols < 1) cols = 1;
        int rows_ = (n + cols - 1) / cols;
        double cell = fmin(gw / cols, gh / rows_);
        while (cols > 1 && (n + cols - 2) / (cols - 1) * cell <= gh &&
               cell * (cols - 1) >= gw * 0.98)
            cols--;
        rows_ = (n + cols - 1) / cols;
        cell = fmin(gw / cols, gh / rows_);
        l->grid_cols = cols;
        l->grid_rows = rows_;
        l->cell = cell;
        l->grid = (viz_rect){c.x + (c.w - cols * cell) / 2, gy, cols * cell, rows_ * cell};
        l->barrier_y = gy - l->font * 0.3;
        return;
    }
    double box_h_pref = l->font * 5.0, gap = pad;
    int rows = 1, cols = n;
    for (rows = 1; rows <= 8; rows++) {
        cols = (n + rows - 1) / rows;
        double bw = (c.w - pad) / cols - gap;
        double bh = fmin(box_h_pref, (region_h - (rows - 1) * gap) / rows);
        /* projector mode: wide enough for the bold phase word ("computing") at full size */
        double min_w = l->projector ? fmax(150 * s, l->font * 9) : 150 * s;
        if (bw >= min_w && bh >= l->font * 3.4) break;
        if (rows * box_h_pref + (rows - 1) * gap > region_h) break;
    }
    if (rows > 8) rows = 8;
    cols = (n + rows - 1) / rows;
    double bw = fmin((c.w - pad) / cols - gap, 300 * s);
    double bh = fmin(box_h_pref, (region_h - (rows - 1) * gap) / rows);
    l->compact_workers = bw < 120 * s || bh < l->font * 3.4;
    double y0 = c.y + c.h - rows * bh - (rows - 1) * gap;
    for (int w = 0; w < n; w++) {
        int r = w / cols, k = w % cols;
        int in_row = r == rows - 1 ? n - r * cols : cols;
        double x0 = c.x + (c.w - in_row * (bw + gap) + gap) / 2;
        l->worker_box[w] = (viz_rect){x0 + k * (bw + gap), y0 + r * (bh + gap), bw, bh};
    }
    l->barrier_y = y0 - fmax(gap, 8 * s);
}

/* One machine: the task's box takes the cluster area (no ps row above it); inside, a
 * title and a phase line, the band the copies arc through, one row of device boxes as
 * tall as the rest allows, and a legend line. */
static void layout_machine(viz_layout *l, int n_dev)
{
    double s = l->s, pad = 10 * s;
    viz_rect c = l->cluster;
    double bw = fmin(c.w - 2 * pad, 1100 * s), bh = c.h - pad;
    viz_rect b = {c.x + (c.w - bw) / 2, c.y + pad * 0.5, bw, bh};
    l->machine = 1;
    l->worker_box[0] = b;
    l->barrier_y = b.y;
    int n = n_dev < VIZ_MACHINE_DEVICES ? n_dev : VIZ_MACHINE_DEVICES;
    l->n_device_boxes = n;
    double top = b.y + l->font * 3.4, bottom = b.y + b.h - l->font_small * 1.9;
    double row_h = fmin((bottom - top) * 0.58, 220 * s), band_h = bottom - top - row_h;
    l->copy_band = (viz_rect){b.x + pad, top, b.w - 2 * pad, band_h};
    l->legend_y = b.y + b.h - l->font_small * 0.7;
    double gap = 1.5 * pad, row_y = top + band_h;
    double dw = fmin((b.w - 2 * pad - (n - 1) * gap) / (n > 0 ? n : 1), 240 * s);
    double x0 = b.x + (b.w - n * dw - (n - 1) * gap) / 2;
    for (int i = 0; i < n; i++) l->device_box[i] = (viz_rect){x0 + i * (dw + gap), row_y, dw, row_h};
}

void viz_layout_compute(const viz_layout_input *in, viz_layout *l)
{
    viz_layout_compute_mode(in, VIZ_LAYOUT_NORMAL, l);
}

void viz_layout_compute_mode(const viz_layout_input *in, int mode, viz_layout *l)
{
    dp_assert("layout: frame size must be positive", in->width > 0 && in->height > 0);
    memset(l, 0, sizeof *l);
    l->width = in->width;
    l->height = in->height;
    double dpr = in->dpr >= 1 ? in->dpr : 1;
    l->s = fmin(in->width / 1280.0, in->height / 720.0);
    l->font = fmax(19 * l->s, 15 * dpr);
    l->font_small = fmax(15 * l->s, 12 * dpr);
    l->projector = mode == VIZ_LAYOUT_PROJECTOR;
    if (l->projector) {   /* the smallest labels are 0.8 font_small: keep them at the floor */
        l->font = fmax(l->font, VIZ_PROJECTOR_FONT * 1.3);
        l->font_small = fmax(l->font_small, VIZ_PROJECTOR_FONT / 0.8);
        l->font_min = VIZ_PROJECTOR_FONT;
    }
    l->n_ps = in->n_ps > 0 ? in->n_ps : 0;
    l->n_workers = in->n_workers > 0 ? in->n_workers : 0;
    l->n_vars = in->n_vars > 0 ? in->n_vars : 0;
    l->ps_box = xcalloc((size_t)l->n_ps + 1, sizeof *l->ps_box);
    l->more_bar = xcalloc((size_t)l->n_ps + 1, sizeof *l->more_bar);
    l->var_bar = xcalloc((size_t)l->n_vars + 1, sizeof *l->var_bar);
    l->worker_box = l->n_workers <= VIZ_DENSE_WORKERS
                        ? xcalloc((size_t)l->n_workers + 1, sizeof *l->worker_box) : NULL;
    layout_frame(in, l);
    layout_ps(in, l);
    if (in->machine_devices > 0 && l->n_ps == 0 && l->n_workers == 1) layout_machine(l, in->machine_devices);
    else layout_workers(l);
}

double viz_layout_min_font(const viz_layout *l)
{
    return l->font_min;
}

double viz_layout_font(const viz_layout *l, double size)
{
    return size > l->font_min ? size : l->font_min;
}

void viz_layout_compare(int width, int height, double dpr, viz_compare_layout *o)
{
    dp_assert("layout: frame size must be positive", width > 0 && height > 0);
    double s = fmin(width / 1280.0, height / 720.0);
    if (dpr < 1) dpr = 1;
    double font = fmax(19 * s, 15 * dpr), small = fmax(15 * s, 12 * dpr);
    o->half_w = width / 2;
    o->top_h = (int)(height * 0.70);
    o->strip = (viz_rect){10 * s, o->top_h + 6 * s, width - 20 * s, height - o->top_h - 12 * s};
    double left = small * 3.2, top = font * 1.6, bottom = small * 1.5;
    double legend = small * 1.25, row = fmax(small * 0.85, 10 * s), diff_h = legend + row * VIZ_DIFF_ROWS;
    o->plot = (viz_rect){o->strip.x + 10 * s + left, o->strip.y + top,
                         o->strip.w - 20 * s - left, o->strip.h - top - bottom - diff_h - 6 * s};
    if (o->plot.w < 1) o->plot.w = 1;
    if (o->plot.h < 1) o->plot.h = 1;
    o->diff_row_h = row;
    o->diff_legend_y = o->plot.y + o->plot.h + bottom + legend * 0.8;
    o->diff = (viz_rect){o->plot.x, o->plot.y + o->plot.h + bottom + legend, o->plot.w, row * VIZ_DIFF_ROWS};
}

void viz_layout_release(viz_layout *l)
{
    if (!l) return;
    free(l->ps_box);
    free(l->more_bar);
    free(l->var_bar);
    free(l->worker_box);
    memset(l, 0, sizeof *l);
}

viz_rect viz_layout_cell(const viz_layout *l, int w)
{
    if (!l->dense || l->grid_cols <= 0) return (viz_rect){0, 0, 0, 0};
    int r = w / l->grid_cols, c = w % l->grid_cols;
    return (viz_rect){l->grid.x + c * l->cell, l->grid.y + r * l->cell, l->cell, l->cell};
}

viz_point viz_layout_ps_anchor(const viz_layout *l, int ps, int worker)
{
    viz_rect b = l->ps_box[ps];
    if (l->compact_ps)   /* under the whole block, so nothing crosses the rows below */
        return (viz_point){b.x + b.w / 2, l->ps_area.y + l->ps_area.h};
    double f = l->n_workers > 0 && !l->dense ? (worker + 0.5) / l->n_workers : 0.5;
    return (viz_point){b.x + b.w * (0.15 + 0.7 * f), b.y + b.h};
}

viz_point viz_layout_worker_anchor(const viz_layout *l, int w)
{
    if (l->dense) {
        viz_rect c = viz_layout_cell(l, w);
        return (viz_point){c.x + c.w / 2, c.y};
    }
    viz_rect b = l->worker_box[w];
    return (viz_point){b.x + b.w / 2, b.y};
}

viz_point viz_layout_packet_pos(const viz_layout *l, int ps, int worker, int is_push, double frac)
{
    viz_point a = viz_layout_ps_anchor(l, ps, worker), b = viz_layout_worker_anchor(l, worker);
    frac = clampd(frac, 0, 1);
    if (is_push) frac = 1 - frac;
    double dx = b.x - a.x, dy = b.y - a.y, len = sqrt(dx * dx + dy * dy);
    double off = (is_push ? 1 : -1) * 5 * l->s;
    double nx = len > 0 ? -dy / len : 0, ny = len > 0 ? dx / len : 0;
    return (viz_point){a.x + dx * frac + nx * off, a.y + dy * frac + ny * off};
}

viz_point viz_layout_copy_pos(const viz_layout *l, int src, int dst, int is_push, double frac)
{
    if (!l->machine || src < 0 || dst < 0 || src >= l->n_device_boxes || dst >= l->n_device_boxes)
        return (viz_point){0, 0};
    viz_rect a = l->device_box[src], b = l->device_box[dst];
    double side = (is_push ? 0.18 : -0.18);
    viz_point p0 = {a.x + a.w * (0.5 + side), a.y}, p2 = {b.x + b.w * (0.5 + side), b.y};
    /* the arc's peak: higher for farther devices, forward copies above gradients */
    double span = fabs((double)(dst - src)) / (l->n_device_boxes > 1 ? l->n_device_boxes - 1 : 1);
    double lift = l->copy_band.h * (0.35 + 0.6 * span) * (is_push ? 0.7 : 1.0);
    viz_point p1 = {(p0.x + p2.x) / 2, a.y - 2 * lift};   /* a quadratic peaks half-way */
    frac = clampd(frac, 0, 1);
    double u = 1 - frac;
    return (viz_point){u * u * p0.x + 2 * u * frac * p1.x + frac * frac * p2.x,
                       u * u * p0.y + 2 * u * frac * p1.y + frac * frac * p2.y};
}
