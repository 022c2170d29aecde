/* plot.c — report charts (plot.h): the series store, the layout of a figure (axis
 * ranges, nice ticks and their labels from plot_axis.c), its drawing with cairo, and the
 * PNG and CSV writers. Layout is one function (frame_setup) that both plot_geometry and
 * plot_draw call, so the geometry a caller reads is where the drawing lands. One
 * predicate (point_ok) decides what is drawn, and the CSV writer asks the same one, so
 * the CSV holds exactly the points in the figure. Fonts and ink are the viewer's
 * (draw_util.c); the series colours are the Okabe-Ito set the viewer's phases use, in an
 * order fit for a report. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"
#include "viz/plot.h"
#include "viz/plot_int.h"
#include "viz/png.h"

enum { PLOT_NONE, PLOT_LINES, PLOT_BARS, PLOT_HIST };

typedef struct plot_series {
    char *label;
    size_t n;
    double *a, *b, *v;   /* lines: x, -, y; bars: -, -, value; histogram: lo, hi, count */
    size_t *cat;         /* bars: index into the chart's categories */
} plot_series;

struct plot_chart {
    char *title, *x_label, *y_label;
    int kind, log_y;
    plot_series s[PLOT_MAX_SERIES];
    int n_series, n_added;          /* kept, and asked for (more fails at write time) */
    char **cats;
    size_t n_cats, cap_cats;
};

/* Blue first: black is kept for last so that series 1 never looks like the text. */
static const uint32_t series_hex[] = {0x0072B2, 0xE69F00, 0x009E73, 0xD55E00,
                                      0xCC79A7, 0x56B4E9, 0xF0E442, 0x000000};

uint32_t plot_series_color(int i)
{
    dp_assert("plot: series index is negative", i >= 0);
    return series_hex[i % (int)DP_ARRAY_LEN(series_hex)];
}

static viz_rgb series_rgb(int i)
{
    uint32_t h = plot_series_color(i);
    return (viz_rgb){(h >> 16 & 255) / 255.0, (h >> 8 & 255) / 255.0, (h & 255) / 255.0};
}

/* ---- the store ------------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s && *s ? xstrdup(s) : NULL; }

plot_chart *plot_new(const char *title, const char *x_label, const char *y_label)
{
    plot_chart *c = xcalloc(1, sizeof *c);
    c->title = dup_or_null(title);
    c->x_label = dup_or_null(x_label);
    c->y_label = dup_or_null(y_label);
    return c;
}

void plot_free(plot_chart *c)
{
    if (!c) return;
    for (plot_series *s = c->s; s < c->s + c->n_series; s++) {
        free(s->label);
        free(s->a), free(s->b), free(s->v), free(s->cat);
    }
    for (size_t i = 0; i < c->n_cats; i++) free(c->cats[i]);
    free(c->cats);
    free(c->title);
    free(c->x_label);
    free(c->y_label);
    free(c);
}

void plot_set_log_y(plot_chart *c, int on) { c->log_y = on != 0; }

static double *copy_doubles(const double *src, size_t n)
{
    dp_assert("plot: series too long", n < SIZE_MAX / sizeof(double));
    dp_assert("plot: series data is NULL", src != NULL || n == 0);
    double *d = xmalloc(n * sizeof *d);
    if (n) memcpy(d, src, n * sizeof *d);
    return d;
}

/* The next series slot, or NULL when the chart is full (counted, reported at write). */
static plot_series *add_series(plot_chart *c, int kind, const char *label, size_t n)
{
    dp_assert("plot: a series needs a label", label != NULL);
    dp_assert("plot: lines, bars and histograms do not share a chart",
              c->kind == PLOT_NONE || c->kind == kind);
    c->kind = kind;
    c->n_added++;
    if (c->n_series >= PLOT_MAX_SERIES) return NULL;
    plot_series *s = &c->s[c->n_series++];
    s->label = xstrdup(label);
    s->n = n;
    return s;
}

void plot_add_line(plot_chart *c, const char *label, const double *x, const double *y, size_t n)
{
    plot_series *s = add_series(c, PLOT_LINES, label, n);
    if (!s) return;
    s->a = copy_doubles(x, n);
    s->v = copy_doubles(y, n);
}

void plot_add_histogram(plot_chart *c, const char *label, const double *bin_lo,
                        const double *bin_hi, const double *count, size_t n)
{
    plot_series *s = add_series(c, PLOT_HIST, label, n);
    if (!s) return;
    s->a = copy_doubles(bin_lo, n);
    s->b = copy_doubles(bin_hi, n);
    s->v = copy_doubles(count, n);
}

static size_t category_index(plot_chart *c, const char *name)
{
    for (size_t i = 0; i < c->n_cats; i++)
        if (!strcmp(c->cats[i], name)) return i;
    if (c->n_cats == c->cap_cats) {
        c->cap_cats = c->cap_cats ? 2 * c->cap_cats : 16;
        c->cats = xrealloc(c->cats, c->cap_cats * sizeof *c->cats);
    }
    c->cats[c->n_cats] = xstrdup(name);
    return c->n_cats++;
}

void plot_add_bars(plot_chart *c, const char *label, const char *const *categories,
                   const double *values, size_t n)
{
    plot_series *s = add_series(c, PLOT_BARS, label, n);
    if (!s) return;
    dp_assert("plot: bar categories are NULL", categories != NULL || n == 0);
    s->v = copy_doubles(values, n);
    s->cat = xmalloc(n * sizeof *s->cat);
    for (size_t i = 0; i < n; i++) {
        dp_assert("plot: a bar category is NULL", categories[i] != NULL);
        s->cat[i] = category_index(c, categories[i]);
        for (size_t j = 0; j < i; j++)
            dp_assert("plot: a category repeats within one bar series", s->cat[j] != s->cat[i]);
    }
}

/* Whether point i of s is drawn (and written to the CSV): the one rule for both. */
static int point_ok(const plot_chart *c, const plot_series *s, size_t i)
{
    double v = s->v[i];
    if (!isfinite(v) || (c->log_y && v <= 0)) return 0;
    if (c->kind == PLOT_LINES) return isfinite(s->a[i]);
    if (c->kind == PLOT_HIST) return isfinite(s->a[i]) && isfinite(s->b[i]) && s->a[i] < s->b[i];
    return 1;
}

static size_t count_ok(const plot_chart *c, const plot_series *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) k += (size_t)point_ok(c, s, i);
    return k;
}

/* ---- ranges and layout ------------------------------------------------------------ */

#define PLOT_MAX_TICKS 16

typedef struct plot_frame {
    plot_geom g;
    double s;                                  /* 1 at 1200x700 */
    double f_title, f_label, f_tick, f_legend, f_value;
    double xlo, xhi, ylo, yhi;                 /* axis units: log10(y) on a log axis */
    double xt[PLOT_MAX_TICKS], yt[PLOT_MAX_TICKS];
    char xl[PLOT_MAX_TICKS][32], yl[PLOT_MAX_TICKS][32];
    int nxt, nyt, any;            /* ticks on x, y; anything drawn at all */
} plot_frame;

/* Extent of the drawn data along x (axis 0) or y (axis 1, log10 units on a log axis).
 * Returns 0 when nothing is drawn. */
static int data_extent(const plot_chart *c, int axis, double *lo, double *hi)
{
    int found = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int si = 0; si < c->n_series; si++) {
        const plot_series *s = &c->s[si];
        for (size_t i = 0; i < s->n; i++) {
            if (!point_ok(c, s, i)) continue;
            double a, b;
            if (axis == 1) a = b = c->log_y ? log10(s->v[i]) : s->v[i];
            else if (c->kind == PLOT_HIST) a = s->a[i], b = s->b[i];
            else a = b = s->a[i];
            *lo = fmin(*lo, a);
            *hi = fmax(*hi, b);
            found = 1;
        }
    }
    return found;
}

static void frame_ranges(const plot_chart *c, plot_frame *f)
{
    double lo, hi;
    int fx = c->kind == PLOT_BARS ? 0 : data_extent(c, 0, &lo, &hi);
    if (c->kind == PLOT_BARS) {
        f->xlo = 0;
        f->xhi = c->n_cats ? (double)c->n_cats : 1;
    } else {
        plot_fit_range(lo, hi, fx, 0, 0, &f->xlo, &f->xhi);
    }
    int fy = data_extent(c, 1, &lo, &hi);
    plot_fit_range(lo, hi, fy, c->kind != PLOT_LINES, c->log_y, &f->ylo, &f->yhi);
    f->any = fy;
    f->g.x_lo = f->xlo;
    f->g.x_hi = f->xhi;
    f->g.y_lo = c->log_y ? pow(10, f->ylo) : f->ylo;
    f->g.y_hi = c->log_y ? pow(10, f->yhi) : f->yhi;

    f->nyt = plot_ticks(f->g.y_lo, f->g.y_hi, c->log_y, f->yt, PLOT_MAX_TICKS);
    f->nxt = c->kind == PLOT_BARS ? 0 : plot_ticks(f->xlo, f->xhi, 0, f->xt, PLOT_MAX_TICKS);
    for (int axis = 0; axis < 2; axis++) {
        const double *t = axis ? f->yt : f->xt;
        int n = axis ? f->nyt : f->nxt;
        double amax = 0, step = n >= 2 ? t[1] - t[0] : 1;
        for (int i = 0; i < n; i++) amax = fmax(amax, fabs(t[i]));
        for (int i = 0; i < n; i++) {
            char *out = axis ? f->yl[i] : f->xl[i];
            if (axis && c->log_y) plot_fmt_value(out, 32, t[i]);
            else plot_fmt_tick(out, 32, t[i], step, amax);
        }
    }
}

static const char no_data_note[] = "\xe2\x80\x94 no data";   /* "— no data" */

/* Where everything goes for a width x height figure; text is measured with cr. */
static void frame_setup(const plot_chart *c, cairo_t *cr, int width, int height, plot_frame *f)
{
    memset(f, 0, sizeof *f);
    double w = width, h = height;
    double s = fmax(0.7, fmin(3, fmin(w / 1200, h / 700)));   /* fonts stay >= 10 px */
    f->s = s;
    f->f_title = 22 * s;
    f->f_label = 16 * s;
    f->f_tick = 14 * s;
    f->f_legend = 15 * s;
    f->f_value = 12 * s;
    frame_ranges(c, f);

    double margin = 24 * s;
    plot_geom *g = &f->g;
    g->title = (viz_rect){margin, margin * 0.75, w - 2 * margin, f->f_title * 1.5};
    double top = g->title.y + g->title.h + 16 * s;

    double right = w - margin;
    g->legend_row = f->f_legend * 1.9;
    if (c->n_series > 0) {
        viz_font(cr, f->f_legend, 0);
        double tw = 0, note = viz_text_width(cr, no_data_note) + 6 * s;
        for (int i = 0; i < c->n_series; i++)
            tw = fmax(tw, viz_text_width(cr, c->s[i].label) + (count_ok(c, &c->s[i]) ? 0 : note));
        double lw = fmin(12 * s + 30 * s + 10 * s + tw, 0.3 * w);
        g->legend = (viz_rect){w - margin - lw, top + 6 * s, lw, c->n_series * g->legend_row};
        right = g->legend.x - 28 * s;
    }

    viz_font(cr, f->f_tick, 0);
    double ytw = 0;
    for (int i = 0; i < f->nyt; i++) ytw = fmax(ytw, viz_text_width(cr, f->yl[i]));
    double ylab_w = f->f_label * 1.5;
    double xtick_h = 14 * s + f->f_tick * 1.1, xlab_h = f->f_label * 1.9;
    g->area.x = margin + ylab_w + 12 * s + ytw + 6 * s + 8 * s;
    g->area.y = top + f->f_tick * 0.5;
    g->area.w = fmax(1, right - g->area.x);
    g->area.h = fmax(1, h - margin * 0.75 - xlab_h - xtick_h - g->area.y);
    g->x_label = (viz_rect){g->area.x, g->area.y + g->area.h + xtick_h, g->area.w, xlab_h};
    g->y_label = (viz_rect){margin, g->area.y, ylab_w, g->area.h};
}

void plot_geometry(const plot_chart *c, int width, int height, plot_geom *g)
{
    cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(scratch);
    plot_frame f;
    frame_setup(c, cr, width, height, &f);
    *g = f.g;
    cairo_destroy(cr);
    cairo_surface_destroy(scratch);
}

/* ---- drawing ---------------------------------------------------------------------- */

static double map_x(const plot_frame *f, double x)
{
    return f->g.area.x + f->g.area.w * (x - f->xlo) / (f->xhi - f->xlo);
}

/* y in data units (log10 taken here on a log axis) to pixels: larger y is higher up. */
static double map_y(const plot_chart *c, const plot_frame *f, double y)
{
    double u = c->log_y ? log10(y) : y;
    return f->g.area.y + f->g.area.h * (f->yhi - u) / (f->yhi - f->ylo);
}

/* Where bars and histogram bins start: 0, or the bottom of a log axis. */
static double base_y(const plot_chart *c, const plot_frame *f)
{
    return c->log_y ? f->g.area.y + f->g.area.h : map_y(c, f, 0);
}

static void draw_grid(const plot_chart *c, cairo_t *cr, const plot_frame *f)
{
    const viz_rect a = f->g.area;
    cairo_set_line_width(cr, 1);
    viz_seta(cr, VIZ_LINE, 0.7);
    for (int i = 0; i < f->nyt; i++) {
        double y = floor(map_y(c, f, f->yt[i])) + 0.5;
        cairo_move_to(cr, a.x, y);
        cairo_line_to(cr, a.x + a.w, y);
    }
    cairo_stroke(cr);
    viz_seta(cr, VIZ_LINE, 0.4);
    for (int i = 0; i < f->nxt; i++) {
        double x = floor(map_x(f, f->xt[i])) + 0.5;
        cairo_move_to(cr, x, a.y);
        cairo_line_to(cr, x, a.y + a.h);
    }
    cairo_stroke(cr);
}

/* Whether every point of a line series gets a marker (few points: the line alone would
 * hide where the samples are). */
static int marks_points(const plot_chart *c, const plot_series *s) { return count_ok(c, s) <= 40; }

static void draw_line_series(const plot_chart *c, cairo_t *cr, const plot_frame *f, int si)
{
    const plot_series *s = &c->s[si];
    int open = 0, mark_all = marks_points(c, s);
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(c, s, i)) {
            open = 0;   /* a missing point breaks the line */
            continue;
        }
        double px = map_x(f, s->a[i]), py = map_y(c, f, s->v[i]);
        if (open) cairo_line_to(cr, px, py);
        else cairo_move_to(cr, px, py);
        open = 1;
    }
    viz_set(cr, series_rgb(si));
    cairo_set_line_width(cr, 2.5 * f->s);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_stroke(cr);
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(c, s, i)) continue;
        int lone = (i == 0 || !point_ok(c, s, i - 1)) && (i + 1 == s->n || !point_ok(c, s, i + 1));
        if (!mark_all && !lone) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, map_x(f, s->a[i]), map_y(c, f, s->v[i]), (lone ? 4.5 : 3.5) * f->s, 0, 2 * M_PI);
    }
    cairo_fill(cr);
}

/* Left edge and width of the bar for category k of series si. */
static void bar_span(const plot_chart *c, const plot_frame *f, int si, size_t k, double *x0, double *bw)
{
    double slot = f->g.area.w / (f->xhi - f->xlo), group = slot * (c->n_series == 1 ? 0.6 : 0.8);
    double w = group / c->n_series, gap = c->n_series > 1 ? fmin(3 * f->s, w * 0.15) : 0;
    *x0 = f->g.area.x + slot * (double)k + (slot - group) / 2 + si * w + gap / 2;
    *bw = w - gap;
}

static void draw_bar_series(const plot_chart *c, cairo_t *cr, const plot_frame *f, int si)
{
    const plot_series *s = &c->s[si];
    double y0 = base_y(c, f);
    viz_set(cr, series_rgb(si));
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(c, s, i)) continue;
        double x0, bw, y1 = map_y(c, f, s->v[i]);
        bar_span(c, f, si, s->cat[i], &x0, &bw);
        cairo_rectangle(cr, x0, fmin(y0, y1), bw, fabs(y1 - y0));
    }
    cairo_fill(cr);
}

/* Values above the bars (below, for negative ones): all of them when every label fits
 * its bar and there are few bars, else none, so that no bar looks unlabelled by chance. */
static void draw_bar_labels(const plot_chart *c, cairo_t *cr, const plot_frame *f)
{
    viz_font(cr, f->f_value, 0);
    size_t bars = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int si = 0; si < c->n_series; si++) {
            const plot_series *s = &c->s[si];
            for (size_t i = 0; i < s->n; i++) {
                if (!point_ok(c, s, i)) continue;
                char buf[32];
                double x0, bw, y0 = base_y(c, f), y1 = map_y(c, f, s->v[i]);
                bar_span(c, f, si, s->cat[i], &x0, &bw);
                plot_fmt_value(buf, sizeof buf, s->v[i]);
                if (pass == 0) {
                    if (++bars > 24 || viz_text_width(cr, buf) > bw + 2 * f->s) return;
                    continue;
                }
                viz_set(cr, VIZ_INK);
                double ty = y1 <= y0 ? y1 - 5 * f->s : y1 + f->f_value + 3 * f->s;
                viz_text(cr, x0 + bw / 2, ty, buf, 1, 0);
            }
        }
}

static void draw_hist_series(const plot_chart *c, cairo_t *cr, const plot_frame *f, int si)
{
    const plot_series *s = &c->s[si];
    double y0 = base_y(c, f);
    viz_rgb col = series_rgb(si);
    cairo_set_line_width(cr, 1.5 * f->s);
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(c, s, i)) continue;
        double x0 = map_x(f, s->a[i]), x1 = map_x(f, s->b[i]), y1 = map_y(c, f, s->v[i]);
        cairo_rectangle(cr, x0, fmin(y0, y1), x1 - x0, fabs(y1 - y0));
        viz_seta(cr, col, 0.35);
        cairo_fill_preserve(cr);
        viz_set(cr, col);
        cairo_stroke(cr);
    }
}

static void draw_series(const plot_chart *c, cairo_t *cr, const plot_frame *f)
{
    const viz_rect a = f->g.area;
    double m = 4 * f->s;   /* room for a marker on the edge */
    cairo_save(cr);
    cairo_rectangle(cr, a.x - m, a.y - m, a.w + 2 * m, a.h + 2 * m);
    cairo_clip(cr);
    for (int si = 0; si < c->n_series; si++) {
        if (c->kind == PLOT_LINES) draw_line_series(c, cr, f, si);
        else if (c->kind == PLOT_BARS) draw_bar_series(c, cr, f, si);
        else if (c->kind == PLOT_HIST) draw_hist_series(c, cr, f, si);
    }
    cairo_restore(cr);
    if (c->kind == PLOT_BARS) draw_bar_labels(c, cr, f);
    if (!f->any) {
        viz_font(cr, f->f_label, 0);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, a.x + a.w / 2, a.y + a.h / 2, "no data", 1, 0);
    }
}

static void draw_axes(const plot_chart *c, cairo_t *cr, const plot_frame *f)
{
    const viz_rect a = f->g.area;
    double s = f->s, tick = 6 * s, bottom = a.y + a.h;
    viz_set(cr, VIZ_MUTED);
    cairo_set_line_width(cr, 1.25 * s);
    cairo_move_to(cr, a.x, a.y);
    cairo_line_to(cr, a.x, bottom);
    cairo_line_to(cr, a.x + a.w, bottom);
    for (int i = 0; i < f->nyt; i++) {
        double y = map_y(c, f, f->yt[i]);
        cairo_move_to(cr, a.x, y);
        cairo_line_to(cr, a.x - tick, y);
    }
    for (int i = 0; i < f->nxt; i++) {
        double x = map_x(f, f->xt[i]);
        cairo_move_to(cr, x, bottom);
        cairo_line_to(cr, x, bottom + tick);
    }
    cairo_stroke(cr);

    viz_font(cr, f->f_tick, 0);
    double base = bottom + tick + 6 * s + f->f_tick * 0.8;
    for (int i = 0; i < f->nyt; i++)
        viz_text(cr, a.x - tick - 6 * s, map_y(c, f, f->yt[i]) + f->f_tick * 0.36, f->yl[i], 2, 0);
    for (int i = 0; i < f->nxt; i++) viz_text(cr, map_x(f, f->xt[i]), base, f->xl[i], 1, 0);
    if (c->kind == PLOT_BARS) {
        double slot = a.w / (f->xhi - f->xlo);
        for (size_t k = 0; k < c->n_cats; k++)
            viz_text(cr, a.x + slot * ((double)k + 0.5), base, c->cats[k], 1, slot * 0.94);
    }

    viz_set(cr, VIZ_INK);
    viz_font(cr, f->f_label, 0);
    if (c->x_label)
        viz_text(cr, a.x + a.w / 2, f->g.x_label.y + f->f_label * 1.15, c->x_label, 1, a.w);
    if (c->y_label) {
        cairo_save(cr);
        cairo_translate(cr, f->g.y_label.x + f->f_label * 1.05, a.y + a.h / 2);
        cairo_rotate(cr, -M_PI / 2);
        viz_text(cr, 0, 0, c->y_label, 1, a.h);
        cairo_restore(cr);
    }
    if (c->title) {
        viz_font(cr, f->f_title, 1);
        viz_text(cr, f->g.title.x, f->g.title.y + f->f_title * 1.05, c->title, 0, f->g.title.w);
    }
}

static void draw_swatch(const plot_chart *c, cairo_t *cr, const plot_frame *f, int si,
                        double x, double cy)
{
    double s = f->s;
    viz_rgb col = series_rgb(si);
    if (c->kind == PLOT_LINES) {
        viz_set(cr, col);
        cairo_set_line_width(cr, 3 * s);
        cairo_move_to(cr, x, cy);
        cairo_line_to(cr, x + 30 * s, cy);
        cairo_stroke(cr);
        if (marks_points(c, &c->s[si])) {
            cairo_arc(cr, x + 15 * s, cy, 4 * s, 0, 2 * M_PI);
            cairo_fill(cr);
        }
        return;
    }
    cairo_rectangle(cr, x + 4 * s, cy - 7 * s, 22 * s, 14 * s);
    viz_seta(cr, col, c->kind == PLOT_HIST ? 0.35 : 1);
    cairo_fill_preserve(cr);
    viz_set(cr, col);
    cairo_set_line_width(cr, 1.5 * s);
    cairo_stroke(cr);
}

static void draw_legend(const plot_chart *c, cairo_t *cr, const plot_frame *f)
{
    const viz_rect l = f->g.legend;
    double s = f->s, x = l.x + 6 * s, tx = x + 30 * s + 10 * s, avail = l.x + l.w - 6 * s - tx;
    viz_font(cr, f->f_legend, 0);
    double note_w = viz_text_width(cr, no_data_note) + 6 * s;
    for (int si = 0; si < c->n_series; si++) {
        double cy = l.y + f->g.legend_row * (si + 0.5);
        draw_swatch(c, cr, f, si, x, cy);
        int empty = count_ok(c, &c->s[si]) == 0;
        viz_set(cr, VIZ_INK);
        double base = cy + f->f_legend * 0.36;
        double used = viz_text(cr, tx, base, c->s[si].label, 0, empty ? avail - note_w : avail);
        if (empty) {
            viz_set(cr, VIZ_MUTED);
            viz_text(cr, tx + used + 6 * s, base, no_data_note, 0, 0);
        }
    }
}

void plot_draw(const plot_chart *c, cairo_t *cr, int width, int height)
{
    plot_frame f;
    cairo_save(cr);
    frame_setup(c, cr, width, height, &f);
    viz_set(cr, VIZ_PANEL);
    cairo_paint(cr);
    draw_grid(c, cr, &f);
    draw_series(c, cr, &f);
    draw_axes(c, cr, &f);
    draw_legend(c, cr, &f);
    cairo_restore(cr);
}

/* ---- files ------------------------------------------------------------------------ */

static void csv_text(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* ",v" with the fewest of 15..17 digits that read back as v exactly. */
static void csv_num(FILE *out, double v)
{
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    fprintf(out, ",%s", buf);
}

static int write_csv(const plot_chart *c, const char *path, char *err)
{
    FILE *out = fopen(path, "w");
    if (!out) goto fail;
    static const char *const header[] = {"series,x,y", "series,x,y", "series,category,value",
                                         "series,bin_lo,bin_hi,count"};
    fprintf(out, "%s\n", header[c->kind]);
    for (int si = 0; si < c->n_series; si++) {
        const plot_series *s = &c->s[si];
        for (size_t i = 0; i < s->n; i++) {
            if (!point_ok(c, s, i)) continue;
            csv_text(out, s->label);
            if (c->kind == PLOT_BARS) {
                fputc(',', out);
                csv_text(out, c->cats[s->cat[i]]);
            } else {
                csv_num(out, s->a[i]);
            }
            if (c->kind == PLOT_HIST) csv_num(out, s->b[i]);
            csv_num(out, s->v[i]);
            fputc('\n', out);
        }
    }
    int bad = ferror(out);
    FILE *closing = out;
    out = NULL;
    if (fclose(closing) != 0 || bad) goto fail;
    return 0;
fail:;
    int e = errno ? errno : EIO;
    if (out) fclose(out);
    return dp_fail(err, DP_EIO, "%s: %s", path, strerror(e));
}

/* PATH with a trailing ".png" replaced by ".csv", or ".csv" appended. Caller frees. */
static char *csv_path_of(const char *path)
{
    size_t n = strlen(path);
    int png = n >= 4 && !strcmp(path + n - 4, ".png");
    char *p = xmalloc(n + 5);
    memcpy(p, path, n - (png ? 4 : 0));
    memcpy(p + n - (png ? 4 : 0), ".csv", 5);
    return p;
}

int plot_write_png(const plot_chart *c, const char *path, int width, int height, char *err)
{
    int rc = 0;
    char *csv = NULL;
    cairo_surface_t *img = NULL;
    if (c->n_added > PLOT_MAX_SERIES) {
        rc = dp_fail(err, DP_EINVAL, "chart \"%s\": %d series, at most %d fit one chart",
                     c->title ? c->title : "", c->n_added, PLOT_MAX_SERIES);
        goto fail;
    }
    if (width < 16 || height < 16 || width > 16384 || height > 16384) {
        rc = dp_fail(err, DP_EINVAL, "%s: image size %dx%d outside 16..16384", path, width, height);
        goto fail;
    }
    img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    cairo_t *cr = cairo_create(img);
    plot_draw(c, cr, width, height);
    cairo_destroy(cr);
    cairo_surface_flush(img);
    if ((rc = viz_png_save(img, path, err))) goto fail;
    csv = csv_path_of(path);
    errno = 0;
    rc = write_csv(c, csv, err);
fail:
    free(csv);
    if (img) cairo_surface_destroy(img);
    return rc;
}
