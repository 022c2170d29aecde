/* test_plot.c — the report charts (viz/plot.h): nice tick values against literals; the
 * sidecar CSV parsed back with a parser written here (exact points, missing values left
 * out, quoting); axis ranges (start at 0, one point, all equal, log); then PNGs read back
 * from disk with checks against literal Okabe-Ito colours written below, never read from
 * the palette under test: a line's corners, broken lines, bar heights, grouped bars, a
 * histogram, a log axis, the title band, axis labels, tick marks, the legend (colours in
 * order, "no data"), long labels kept inside the figure; and the errors (unwritable paths
 * named, too many series, bad sizes). PLOT_KEEP=1 keeps the scratch folder and names it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/dp.h"
#include "viz/plot.h"

extern void FcFini(void) __attribute__((weak));

/* Okabe-Ito, in the order plot.h documents. */
#define BLUE 0x0072B2u
#define ORANGE 0xE69F00u
static const uint32_t okabe_ito[8] = {0x0072B2, 0xE69F00, 0x009E73, 0xD55E00,
                                      0xCC79A7, 0x56B4E9, 0xF0E442, 0x000000};
#define W 1200
#define H 700

static char dir[256];

/* ---- pixels --------------------------------------------------------------------- */

typedef struct img { cairo_surface_t *s; int w, h; } img;

static img load_png(const char *path)
{
    img m = {cairo_image_surface_create_from_png(path), 0, 0};
    if (cairo_surface_status(m.s) == CAIRO_STATUS_SUCCESS) {
        m.w = cairo_image_surface_get_width(m.s);
        m.h = cairo_image_surface_get_height(m.s);
    }
    return m;
}

static uint32_t px(const img *m, int x, int y)
{
    if (x < 0 || y < 0 || x >= m->w || y >= m->h) return 0xFFFFFF;
    const unsigned char *d = cairo_image_surface_get_data(m->s);
    const uint32_t *row = (const uint32_t *)(const void *)(d + (size_t)y * (size_t)cairo_image_surface_get_stride(m->s));
    return row[x] & 0xFFFFFF;
}

static int chan(uint32_t c, int k) { return (int)(c >> (16 - 8 * k) & 255); }

static int close_to(uint32_t a, uint32_t b, int tol)
{
    for (int k = 0; k < 3; k++)
        if (abs(chan(a, k) - chan(b, k)) > tol) return 0;
    return 1;
}

/* Dark: text ink (#1E1E24 and its anti-aliased edges), not grid lines or white. */
static int dark(uint32_t c) { return chan(c, 0) < 110 && chan(c, 1) < 110 && chan(c, 2) < 120; }

/* Pixels in [x0, x1) x [y0, y1) matching colour within tol (tol < 0: dark()). */
static int count_in(const img *m, double x0, double y0, double x1, double y1, uint32_t colour, int tol)
{
    int n = 0;
    for (int y = (int)y0; y < (int)y1; y++)
        for (int x = (int)x0; x < (int)x1; x++)
            n += tol < 0 ? dark(px(m, x, y)) : close_to(px(m, x, y), colour, tol);
    return n;
}

static int count_rect(const img *m, viz_rect r, uint32_t colour, int tol)
{
    return count_in(m, r.x, r.y, r.x + r.w, r.y + r.h, colour, tol);
}

/* Mean position (column x, row y) of the pixels of colour in the rectangle; {-1, -1} when
 * there are none. */
static viz_point centroid(const img *m, viz_rect r, uint32_t colour, int tol)
{
    double sx = 0, sy = 0;
    int n = 0;
    for (int y = (int)r.y; y < (int)(r.y + r.h); y++)
        for (int x = (int)r.x; x < (int)(r.x + r.w); x++)
            if (close_to(px(m, x, y), colour, tol)) sx += x, sy += y, n++;
    return n ? (viz_point){sx / n, sy / n} : (viz_point){-1, -1};
}

/* Pixel position of data (x, y) from the chart's reported axis ranges (linear axes). */
static double to_px_x(const plot_geom *g, double x)
{
    return g->area.x + g->area.w * (x - g->x_lo) / (g->x_hi - g->x_lo);
}
static double to_px_y(const plot_geom *g, double y)
{
    return g->area.y + g->area.h * (g->y_hi - y) / (g->y_hi - g->y_lo);
}

/* Writes chart to dir/name, loads the PNG and the geometry; frees the chart. */
static img render(plot_chart *c, const char *name, plot_geom *g)
{
    char err[DP_ERRLEN] = "";
    const char *path = check_path(dir, name);
    int rc = plot_write_png(c, path, W, H, err);
    CHECK_MSG(rc == 0, "%s: %s", name, err);
    plot_geometry(c, W, H, g);
    plot_free(c);
    img m = load_png(path);
    CHECK_MSG(m.w == W && m.h == H, "%s read back as %dx%d", name, m.w, m.h);
    return m;
}

/* ---- CSV, read with a parser of its own ------------------------------------------ */

#define MAX_ROWS 64
#define MAX_FIELDS 4
typedef struct csv { int rows; int nf[MAX_ROWS]; char f[MAX_ROWS][MAX_FIELDS][128]; } csv;

/* RFC 4180: fields split on commas, "quoted" fields with "" for a quote. -1 on error. */
static int read_csv(const char *path, csv *t)
{
    memset(t, 0, sizeof *t);
    FILE *in = fopen(path, "r");
    if (!in) return -1;
    int ch, quoted = 0, rc = 0;
    size_t len = 0;
    int r = 0, k = 0;
    while ((ch = fgetc(in)) != EOF) {
        if (r >= MAX_ROWS || k >= MAX_FIELDS || len >= 127) {
            rc = -1;
            break;
        }
        if (quoted) {
            if (ch != '"') t->f[r][k][len++] = (char)ch;
            else if ((ch = fgetc(in)) == '"') t->f[r][k][len++] = '"';
            else {
                quoted = 0;
                ungetc(ch, in);
            }
        } else if (ch == '"' && len == 0) {
            quoted = 1;
        } else if (ch == ',') {
            k++, len = 0;
        } else if (ch == '\n') {
            t->nf[r++] = k + 1;
            k = 0, len = 0;
        } else {
            t->f[r][k][len++] = (char)ch;
        }
    }
    fclose(in);
    t->rows = r;
    return rc;
}

static double num(const csv *t, int r, int k) { return strtod(t->f[r][k], NULL); }

static const char *csv_of(const char *png)
{
    static char p[400];
    size_t n = strlen(png);
    snprintf(p, sizeof p, "%.*s.csv", (int)(n - 4), png);
    return p;
}

/* ---- ticks ------------------------------------------------------------------------ */

static void expect_ticks(double lo, double hi, int log_scale, const double *want, int n)
{
    double got[32];
    int k = plot_ticks(lo, hi, log_scale, got, 32);
    int ok = k == n;
    for (int i = 0; ok && i < n; i++) ok = fabs(got[i] - want[i]) <= 1e-12 * fmax(1, fabs(want[i]));
    char buf[400] = "";
    for (int i = 0; i < k && strlen(buf) < 350; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%g", i ? ", " : "", got[i]);
    CHECK_MSG(ok, "ticks %s%g..%g: got %d (%s), want %d", log_scale ? "log " : "", lo, hi, k, buf, n);
}

static void test_ticks(void)
{
    /* linear: step = smallest 1/2/5 x 10^k >= span / 8, multiples of it inside */
    expect_ticks(0, 0.87, 0, (double[]){0, 0.2, 0.4, 0.6, 0.8}, 5);
    expect_ticks(0, 1234, 0, (double[]){0, 200, 400, 600, 800, 1000, 1200}, 7);
    expect_ticks(3, 1234, 0, (double[]){200, 400, 600, 800, 1000, 1200}, 6);
    expect_ticks(0, 1.04, 0, (double[]){0, 0.2, 0.4, 0.6, 0.8, 1}, 6);
    expect_ticks(-3, 7, 0, (double[]){-2, 0, 2, 4, 6}, 5);
    expect_ticks(900, 1000, 0, (double[]){900, 920, 940, 960, 980, 1000}, 6);
    expect_ticks(0.0013, 0.0021, 0, (double[]){0.0013, 0.0014, 0.0015, 0.0016, 0.0017, 0.0018,
                                               0.0019, 0.002, 0.0021}, 9);
    expect_ticks(0, 12, 0, (double[]){0, 2, 4, 6, 8, 10, 12}, 7);
    expect_ticks(0, 3.5e9, 0, (double[]){0, 5e8, 1e9, 1.5e9, 2e9, 2.5e9, 3e9, 3.5e9}, 8);
    /* log: 1/2/5 x 10^k up to 8 ticks, else decades (every other one past 8), else linear */
    expect_ticks(1, 100, 1, (double[]){1, 2, 5, 10, 20, 50, 100}, 7);
    expect_ticks(1, 1000, 1, (double[]){1, 10, 100, 1000}, 4);
    expect_ticks(2, 30, 1, (double[]){2, 5, 10, 20}, 4);
    expect_ticks(1e-3, 1e12, 1, (double[]){1e-2, 1, 1e2, 1e4, 1e6, 1e8, 1e10, 1e12}, 8);
    expect_ticks(3, 4.5, 1, (double[]){3, 3.2, 3.4, 3.6, 3.8, 4, 4.2, 4.4}, 8);
    /* nothing to tick */
    double t[4];
    CHECK_MSG(plot_ticks(5, 5, 0, t, 4) == 0 && plot_ticks(1, 0, 0, t, 4) == 0 &&
              plot_ticks(NAN, 1, 0, t, 4) == 0, "empty or reversed range gives 0 ticks");
}

static void test_palette(void)
{
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= plot_series_color(i) == okabe_ito[i];
    CHECK_MSG(ok && plot_series_color(8) == BLUE, "series colours are Okabe-Ito in the documented order, "
              "then again from blue");
}

/* ---- CSV -------------------------------------------------------------------------- */

static void test_csv_lines(void)
{
    plot_chart *c = plot_new("csv", "x (s)", "y");
    const double xa[] = {0, 0.1, 1.0 / 3, 2.5, INFINITY, 1e-9, 12345.678};
    const double ya[] = {1, -2.5e-7, NAN, 4, 5, 6, 7e20};
    plot_add_line(c, "run \"b\", async", xa, ya, 7);
    const double xb[] = {10, 20};
    const double yb[] = {0.5, 0.25};
    plot_add_line(c, "plain", xb, yb, 2);
    plot_add_line(c, "empty", NULL, NULL, 0);
    char err[DP_ERRLEN] = "";
    const char *png = check_path(dir, "lines.png");
    CHECK_MSG(plot_write_png(c, png, W, H, err) == 0, "%s", err);
    plot_free(c);
    csv t;
    CHECK_MSG(read_csv(csv_of(png), &t) == 0, "read %s", csv_of(png));
    CHECK_MSG(t.rows >= 1 && t.nf[0] == 3 && !strcmp(t.f[0][0], "series") && !strcmp(t.f[0][1], "x") &&
              !strcmp(t.f[0][2], "y"), "line CSV header is series,x,y");
    /* 5 of A's 7 points are drawn (NaN y, inf x left out), then B's 2, none of "empty". */
    const int keep[] = {0, 1, 3, 5, 6};
    int ok = t.rows == 1 + 5 + 2;
    for (int i = 0; ok && i < 5; i++)
        ok = t.nf[1 + i] == 3 && !strcmp(t.f[1 + i][0], "run \"b\", async") &&
             num(&t, 1 + i, 1) == xa[keep[i]] && num(&t, 1 + i, 2) == ya[keep[i]];
    for (int i = 0; ok && i < 2; i++)
        ok = !strcmp(t.f[6 + i][0], "plain") && num(&t, 6 + i, 1) == xb[i] && num(&t, 6 + i, 2) == yb[i];
    CHECK_MSG(ok, "line CSV holds the 7 drawable points exactly (%d rows), NaN/inf rows left out, "
              "quoted label read back", t.rows);

    /* on a log axis y <= 0 is missing too */
    c = plot_new("log", "x", "y");
    plot_set_log_y(c, 1);
    plot_add_line(c, "l", (double[]){1, 2, 3, 4}, (double[]){10, 0, -1, 1000}, 4);
    png = check_path(dir, "log.png");
    CHECK_MSG(plot_write_png(c, png, W, H, err) == 0, "%s", err);
    plot_free(c);
    CHECK(read_csv(csv_of(png), &t) == 0);
    CHECK_MSG(t.rows == 3 && num(&t, 1, 1) == 1 && num(&t, 1, 2) == 10 && num(&t, 2, 1) == 4 &&
              num(&t, 2, 2) == 1000, "log-y CSV leaves out y = 0 and y = -1 (%d rows)", t.rows);
}

static void test_csv_bars_hist(void)
{
    plot_chart *c = plot_new("bars", "variant", "samples/s");
    const char *cats[] = {"sync", "async, 4 workers", "ssp"};
    plot_add_bars(c, "v1", cats, (double[]){100, 250.5, 75}, 3);
    plot_add_bars(c, "v2", (const char *[]){"ssp", "sync"}, (double[]){NAN, 3}, 2);
    const char *png = check_path(dir, "bars.png");
    char err[DP_ERRLEN] = "";
    CHECK_MSG(plot_write_png(c, png, W, H, err) == 0, "%s", err);
    plot_free(c);
    csv t;
    CHECK(read_csv(csv_of(png), &t) == 0);
    int ok = t.rows == 5 && !strcmp(t.f[0][0], "series") && !strcmp(t.f[0][1], "category") &&
             !strcmp(t.f[0][2], "value") && !strcmp(t.f[2][1], "async, 4 workers") &&
             num(&t, 2, 2) == 250.5 && !strcmp(t.f[4][0], "v2") && !strcmp(t.f[4][1], "sync") &&
             num(&t, 4, 2) == 3;
    CHECK_MSG(ok, "bar CSV is series,category,value with 4 bars (NaN left out, quoted category); %d rows", t.rows);

    c = plot_new("hist", "staleness (steps)", "applies");
    plot_add_histogram(c, "h", (double[]){0, 1, 2, 5}, (double[]){1, 2, 2, 9}, (double[]){4, 7.5, 1, 2}, 4);
    png = check_path(dir, "hist.out");   /* no .png: .csv is appended */
    CHECK_MSG(plot_write_png(c, png, W, H, err) == 0, "%s", err);
    plot_free(c);
    char path[420];
    snprintf(path, sizeof path, "%s.csv", png);
    CHECK(read_csv(path, &t) == 0);
    ok = t.rows == 4 && t.nf[0] == 4 && !strcmp(t.f[0][1], "bin_lo") && !strcmp(t.f[0][3], "count") &&
         num(&t, 2, 1) == 1 && num(&t, 2, 2) == 2 && num(&t, 2, 3) == 7.5 && num(&t, 3, 1) == 5 &&
         num(&t, 3, 2) == 9;
    CHECK_MSG(ok, "histogram CSV (at hist.out.csv) is series,bin_lo,bin_hi,count, the empty bin [2,2) left out; %d rows",
              t.rows);

    c = plot_new("nothing", NULL, NULL);
    png = check_path(dir, "none.png");
    CHECK_MSG(plot_write_png(c, png, W, H, err) == 0, "%s", err);
    plot_free(c);
    CHECK_MSG(read_csv(csv_of(png), &t) == 0 && t.rows == 1, "a chart with no series writes the header only");
}

/* ---- ranges ----------------------------------------------------------------------- */

static void test_ranges(void)
{
    plot_geom g;
    plot_chart *c = plot_new("r", "x", "y");
    plot_add_line(c, "a", (double[]){3, 1234}, (double[]){1, 2}, 2);
    plot_geometry(c, W, H, &g);
    plot_free(c);
    CHECK_MSG(g.x_lo == 0 && g.x_hi > 1234 && g.x_hi < 1234 * 1.1,
              "x from 3 to 1234 is drawn from 0 (x_lo %g, x_hi %g)", g.x_lo, g.x_hi);

    c = plot_new("r", "x", "y");
    plot_add_line(c, "a", (double[]){900, 1000}, (double[]){1, 2}, 2);
    plot_geometry(c, W, H, &g);
    plot_free(c);
    CHECK_MSG(g.x_lo > 800 && g.x_lo < 900 && g.x_hi > 1000, "x from 900 to 1000 does not start at 0 (%g..%g)",
              g.x_lo, g.x_hi);

    c = plot_new("r", "x", "y");
    plot_add_line(c, "a", (double[]){0, 5, 10}, (double[]){7, 7, 7}, 3);
    plot_geometry(c, W, H, &g);
    plot_free(c);
    CHECK_MSG(g.y_lo < 7 && g.y_hi > 7 && g.y_hi - g.y_lo < 7, "all y = 7: axis around 7 (%g..%g)", g.y_lo, g.y_hi);

    c = plot_new("r", "x", "y");
    plot_add_bars(c, "a", (const char *[]){"p", "q"}, (double[]){5, 5}, 2);
    plot_geometry(c, W, H, &g);
    plot_free(c);
    CHECK_MSG(g.y_lo == 0 && g.y_hi > 5 && g.x_lo == 0 && g.x_hi == 2,
              "bars: y from 0, x is 2 category slots (%g..%g, %g..%g)", g.y_lo, g.y_hi, g.x_lo, g.x_hi);
}

/* ---- pixels ----------------------------------------------------------------------- */

static void test_line_corners(void)
{
    plot_geom g;
    plot_chart *c = plot_new("diagonal", "x (s)", "y (units)");
    plot_add_line(c, "diag", (double[]){0, 1}, (double[]){0, 1}, 2);
    img m = render(c, "diag.png", &g);
    viz_rect a = g.area;
    double bw = a.w * 0.1, bh = a.h * 0.1;
    int ll = count_in(&m, a.x, a.y + a.h - bh, a.x + bw, a.y + a.h, BLUE, 40);
    int ur = count_in(&m, a.x + a.w - bw, a.y, a.x + a.w, a.y + bh, BLUE, 40);
    int ul = count_in(&m, a.x, a.y, a.x + bw, a.y + bh, BLUE, 40);
    int lr = count_in(&m, a.x + a.w - bw, a.y + a.h - bh, a.x + a.w, a.y + a.h, BLUE, 40);
    CHECK_MSG(ll > 20 && ur > 20, "line (0,0)-(1,1) in #0072B2 near lower-left (%d px) and upper-right (%d px)", ll, ur);
    CHECK_MSG(ul == 0 && lr == 0, "and not near upper-left (%d px) or lower-right (%d px)", ul, lr);

    /* tick marks just left of the y axis at 0, 0.2, ..., 1, none at 0.1 */
    int found = 0;
    for (int i = 0; i <= 5; i++) {
        double y = to_px_y(&g, 0.2 * i);
        found += count_in(&m, a.x - 5, y - 1, a.x - 2, y + 2, 0, -1) +
                     count_in(&m, a.x - 5, y - 1, a.x - 2, y + 2, 0x6B6B76, 60) > 0;
    }
    double y01 = to_px_y(&g, 0.1);
    int at_01 = count_in(&m, a.x - 5, y01 - 1, a.x - 2, y01 + 2, 0xFFFFFF, 8);
    CHECK_MSG(found == 6 && at_01 == 9, "y tick marks at 0, 0.2, ..., 1 (%d of 6), none at 0.1 (%d of 9 px white)",
              found, at_01);
    cairo_surface_destroy(m.s);
}

static void test_broken_line_and_lone_point(void)
{
    plot_geom g;
    plot_chart *c = plot_new("gap", "x", "y");
    plot_add_line(c, "g", (double[]){0, 1, 2, 3, 4}, (double[]){0, 1, NAN, 3, 4}, 5);
    img m = render(c, "gap.png", &g);
    double x2 = to_px_x(&g, 2), x1 = to_px_x(&g, 1.5);
    int at2 = count_in(&m, x2 - 3, g.area.y, x2 + 3, g.area.y + g.area.h, BLUE, 40);
    int at15 = count_in(&m, x1 - 3, g.area.y, x1 + 3, g.area.y + g.area.h, BLUE, 40);
    CHECK_MSG(at2 == 0 && at15 == 0, "y[2] = NaN breaks the line: no #0072B2 at x = 2 (%d px) or 1.5 (%d px)", at2, at15);
    double x05 = to_px_x(&g, 0.5);
    CHECK_MSG(count_in(&m, x05 - 3, g.area.y, x05 + 3, g.area.y + g.area.h, BLUE, 40) > 3,
              "the segment from x = 0 to 1 is drawn");
    cairo_surface_destroy(m.s);

    c = plot_new("one", "x", "y");
    plot_add_line(c, "p", (double[]){5}, (double[]){3}, 1);
    m = render(c, "one.png", &g);
    double px5 = to_px_x(&g, 5), py3 = to_px_y(&g, 3);
    int near_pt = count_in(&m, px5 - 6, py3 - 6, px5 + 6, py3 + 6, BLUE, 40);
    CHECK_MSG(g.x_lo < 5 && g.x_hi > 5 && g.y_lo < 3 && g.y_hi > 3 && near_pt >= 12,
              "one point (5, 3): inside both axes (%g..%g, %g..%g), marked in #0072B2 (%d px)",
              g.x_lo, g.x_hi, g.y_lo, g.y_hi, near_pt);
    cairo_surface_destroy(m.s);

    /* among many points (no markers), a point whose neighbours are missing is marked */
    double xs[60], ys[60];
    for (int i = 0; i < 60; i++) xs[i] = i, ys[i] = i == 29 || i == 31 ? NAN : 1 + i % 2;
    c = plot_new("lone", "x", "y");
    plot_add_line(c, "l", xs, ys, 60);
    m = render(c, "lone.png", &g);
    double px30 = to_px_x(&g, 30), py30 = to_px_y(&g, 1);
    int lone = count_in(&m, px30 - 6, py30 - 6, px30 + 6, py30 + 6, BLUE, 40);
    CHECK_MSG(lone >= 12, "a lone point (30, 1) among 60 with NaN neighbours is marked (%d px)", lone);
    cairo_surface_destroy(m.s);

    c = plot_new("flat", "x", "y");
    plot_add_line(c, "f", (double[]){0, 5, 10}, (double[]){7, 7, 7}, 3);
    m = render(c, "flat.png", &g);
    double py7 = to_px_y(&g, 7), mid = g.area.x + g.area.w / 2;
    CHECK_MSG(count_in(&m, mid - 10, py7 - 3, mid + 10, py7 + 3, BLUE, 40) >= 20,
              "all y = 7: the line is drawn at y = 7");
    cairo_surface_destroy(m.s);
}

/* Height in pixels of the run of colour in column x, from the first match down. */
static int run_height(const img *m, int x, viz_rect a, uint32_t colour, int *bottom)
{
    int top = -1, bot = -1;
    for (int y = (int)a.y; y < (int)(a.y + a.h + 2); y++)
        if (close_to(px(m, x, y), colour, 30)) {
            if (top < 0) top = y;
            bot = y;
        }
    *bottom = bot;
    return top < 0 ? 0 : bot - top + 1;
}

/* Rows from the first pixel of colour in column x down to the bottom of the area. */
static int top_to_axis(const img *m, int x, viz_rect a, uint32_t colour)
{
    for (int y = (int)a.y; y < (int)(a.y + a.h); y++)
        if (close_to(px(m, x, y), colour, 30)) return (int)(a.y + a.h) - y;
    return 0;
}

static void test_bars(void)
{
    plot_geom g;
    plot_chart *c = plot_new("bars", "variant", "samples/s");
    plot_add_bars(c, "v", (const char *[]){"one", "two"}, (double[]){1, 2}, 2);
    img m = render(c, "bar12.png", &g);
    /* columns through the middle of each category slot */
    int b1, b2;
    int h1 = run_height(&m, (int)to_px_x(&g, 0.5), g.area, BLUE, &b1);
    int h2 = run_height(&m, (int)to_px_x(&g, 1.5), g.area, BLUE, &b2);
    CHECK_MSG(h1 > 50 && abs(h2 - 2 * h1) <= 2 && abs(b1 - b2) <= 1,
              "bars 1 and 2 in #0072B2: heights %d and %d px (want 2x within 2), bottoms %d, %d", h1, h2, b1, b2);
    cairo_surface_destroy(m.s);

    c = plot_new("grouped", "variant", "bytes");
    const char *cats[] = {"a", "b", "c"};
    plot_add_bars(c, "s0", cats, (double[]){3, 2, 1}, 3);
    plot_add_bars(c, "s1", cats, (double[]){1, 2, NAN}, 3);
    m = render(c, "grouped.png", &g);
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        viz_rect slot = {to_px_x(&g, k), g.area.y, to_px_x(&g, k + 1) - to_px_x(&g, k), g.area.h};
        double bx = centroid(&m, slot, BLUE, 30).x, ox = centroid(&m, slot, ORANGE, 30).x;
        if (k < 2) ok &= bx > 0 && ox > bx;
        else ok &= bx > 0 && ox < 0;
    }
    CHECK_MSG(ok, "grouped bars: in each category #0072B2 (series 0) left of #E69F00 (series 1); "
              "no orange bar for the NaN in c");
    cairo_surface_destroy(m.s);

    c = plot_new("hist", "staleness (steps)", "applies");
    plot_add_histogram(c, "h", (double[]){0, 1, 2}, (double[]){1, 2, 3}, (double[]){1, 3, 2}, 3);
    m = render(c, "hist.png", &g);
    /* the outline's top edge is the first #0072B2 in the column; the bottom is the axis */
    int t1 = top_to_axis(&m, (int)to_px_x(&g, 0.5), g.area, BLUE);
    int t3 = top_to_axis(&m, (int)to_px_x(&g, 1.5), g.area, BLUE);
    CHECK_MSG(t1 > 30 && abs(t3 - 3 * t1) <= 4, "histogram bins 1 and 3 outlined in #0072B2: %d and %d px tall (3x within 4)",
              t1, t3);
    cairo_surface_destroy(m.s);

    c = plot_new("log", "x", "y");
    plot_set_log_y(c, 1);
    plot_add_line(c, "l", (double[]){0, 1, 2}, (double[]){1, 10, 100}, 3);
    m = render(c, "logline.png", &g);
    double r0 = centroid(&m, (viz_rect){to_px_x(&g, 0) - 2, g.area.y, 5, g.area.h}, BLUE, 30).y;
    double r1 = centroid(&m, (viz_rect){to_px_x(&g, 1) - 2, g.area.y, 5, g.area.h}, BLUE, 30).y;
    double r2 = centroid(&m, (viz_rect){to_px_x(&g, 2) - 2, g.area.y, 5, g.area.h}, BLUE, 30).y;
    CHECK_MSG(r0 > 0 && r1 > 0 && r2 > 0 && fabs(r1 - (r0 + r2) / 2) <= 3 && r0 - r2 > 200,
              "log y: 10 drawn halfway between 1 and 100 (rows %.1f, %.1f, %.1f)", r0, r1, r2);
    cairo_surface_destroy(m.s);
}

static void test_text(void)
{
    plot_geom g, g0;
    double xs[] = {0, 1}, ys[] = {0, 1};
    plot_chart *c = plot_new("Throughput by variant", "wall time (s)", "samples/s");
    plot_add_line(c, "a", xs, ys, 2);
    img m = render(c, "titled.png", &g);
    c = plot_new(NULL, NULL, NULL);
    plot_add_line(c, "a", xs, ys, 2);
    img m0 = render(c, "untitled.png", &g0);
    int t = count_rect(&m, g.title, 0, -1), t0 = count_rect(&m0, g.title, 0, -1);
    CHECK_MSG(t > 100 && t0 == 0, "dark text in the title band with a title (%d px), none without (%d px)", t, t0);
    int xl = count_rect(&m, g.x_label, 0, -1), xl0 = count_rect(&m0, g.x_label, 0, -1);
    CHECK_MSG(xl > 50 && xl0 == 0, "x axis label drawn in its strip (%d px; %d without)", xl, xl0);
    int yl = count_rect(&m, g.y_label, 0, -1), yl0 = count_rect(&m0, g.y_label, 0, -1);
    /* rotated: the ink is taller than wide */
    int x0 = 99999, x1 = -1, y0 = 99999, y1 = -1;
    for (int y = (int)g.y_label.y; y < (int)(g.y_label.y + g.y_label.h); y++)
        for (int x = (int)g.y_label.x; x < (int)(g.y_label.x + g.y_label.w); x++)
            if (dark(px(&m, x, y))) {
                x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1;
                y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
            }
    CHECK_MSG(yl > 50 && yl0 == 0 && y1 - y0 > 3 * (x1 - x0), "y axis label drawn rotated in its strip "
              "(%d px, %dx%d; %d without)", yl, x1 - x0, y1 - y0, yl0);
    cairo_surface_destroy(m.s);
    cairo_surface_destroy(m0.s);

    /* long title and labels stay inside the figure; the legend keeps to 30 % of it */
    char longs[400];
    memset(longs, 'W', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    c = plot_new(longs, longs, longs);
    plot_add_line(c, longs, xs, ys, 2);
    plot_add_line(c, "short", xs, ys, 2);
    m = render(c, "long.png", &g);
    int edge = count_in(&m, W - 12, 0, W, H, 0xFFFFFF, 3);
    CHECK_MSG(edge == 12 * H && g.legend.w <= 0.3 * W + 1 && g.area.w >= 0.5 * W,
              "399-char title and labels: right 12 px column untouched (%d of %d white), legend %.0f px, area %.0f px",
              edge, 12 * H, g.legend.w, g.area.w);
    cairo_surface_destroy(m.s);
}

/* Rightmost non-white column in legend row i, relative to the legend's left edge. */
static int row_extent(const img *m, const plot_geom *g, int i)
{
    int right = -1;
    double y0 = g->legend.y + g->legend_row * i;
    for (int y = (int)y0; y < (int)(y0 + g->legend_row); y++)
        for (int x = (int)g->legend.x; x < m->w; x++)
            if (!close_to(px(m, x, y), 0xFFFFFF, 12) && x > right) right = x;
    return right < 0 ? -1 : right - (int)g->legend.x;
}

static void test_legend(void)
{
    plot_geom g;
    plot_chart *c = plot_new("eight", "x", "y");
    for (int i = 0; i < 8; i++) {
        char label[32];
        snprintf(label, sizeof label, "variant %d", i + 1);
        plot_add_line(c, label, (double[]){0, 1}, (double[]){i, i + 1}, 2);
    }
    img m = render(c, "eight.png", &g);
    int ok = 1;
    char why[300] = "";
    for (int i = 0; i < 8; i++) {
        viz_rect row = {g.legend.x, g.legend.y + g.legend_row * i, g.legend.w, g.legend_row};
        int n = count_rect(&m, row, okabe_ito[i], 24);
        if (n < 40) {
            ok = 0;
            snprintf(why + strlen(why), sizeof why - strlen(why), " row %d #%06X: %d px;", i, okabe_ito[i], n);
        }
    }
    CHECK_MSG(ok, "legend row i holds Okabe-Ito colour i, for the 8 series:%s", why);
    cairo_surface_destroy(m.s);

    /* an empty series: "— no data" after its label */
    plot_geom ge;
    c = plot_new("empty", "x", "y");
    plot_add_line(c, "alpha", NULL, NULL, 0);
    plot_add_line(c, "beta", (double[]){0, 1}, (double[]){0, 1}, 2);
    img me = render(c, "empty_series.png", &ge);
    c = plot_new("full", "x", "y");
    plot_add_line(c, "alpha", (double[]){0, 1}, (double[]){1, 0}, 2);
    plot_add_line(c, "beta", (double[]){0, 1}, (double[]){0, 1}, 2);
    m = render(c, "full_series.png", &g);
    int we = row_extent(&me, &ge, 0), wf = row_extent(&m, &g, 0);
    int swatch = count_rect(&me, (viz_rect){ge.legend.x, ge.legend.y, ge.legend.w, ge.legend_row}, BLUE, 24);
    CHECK_MSG(we > wf + 40 && swatch > 40, "empty series' legend row runs %d px past its label (the \"no data\" "
              "note), its #0072B2 swatch still drawn (%d px)", we - wf, swatch);
    cairo_surface_destroy(me.s);
    cairo_surface_destroy(m.s);

    c = plot_new("nothing", "x", "y");
    plot_add_line(c, "alpha", (double[]){0}, (double[]){NAN}, 1);
    m = render(c, "nothing.png", &g);
    double cx = g.area.x + g.area.w / 2, cy = g.area.y + g.area.h / 2;
    int note = count_in(&m, cx - 80, cy - 25, cx + 80, cy + 10, 0x6B6B76, 50);
    CHECK_MSG(note > 20, "no drawable point at all: \"no data\" written in the middle of the plot (%d px)", note);
    cairo_surface_destroy(m.s);
}

/* ---- errors ----------------------------------------------------------------------- */

static void test_errors(void)
{
    char err[DP_ERRLEN] = "";
    plot_chart *c = plot_new("err", "x", "y");
    plot_add_line(c, "a", (double[]){0, 1}, (double[]){0, 1}, 2);
    const char *bad = "/nonexistent-plot-dir/sub/chart.png";
    int rc = plot_write_png(c, bad, W, H, err);
    CHECK_MSG(rc == DP_EIO && strstr(err, bad) && !strchr(err, '\n'),
              "unwritable PNG path: DP_EIO and one line naming it (rc %d, \"%s\")", rc, err);

    char blocked[420];
    snprintf(blocked, sizeof blocked, "%s/blocked.csv", dir);
    mkdir(blocked, 0700);   /* a folder where the CSV should go */
    err[0] = 0;
    rc = plot_write_png(c, check_path(dir, "blocked.png"), W, H, err);
    CHECK_MSG(rc == DP_EIO && strstr(err, blocked), "unwritable CSV path: DP_EIO naming it (rc %d, \"%s\")", rc, err);

    rc = plot_write_png(c, check_path(dir, "size.png"), 0, H, err);
    CHECK_MSG(rc == DP_EINVAL && strstr(err, "0x700"), "0x700 image: DP_EINVAL (\"%s\")", err);
    plot_free(c);

    c = plot_new("nine variants", "x", "y");
    for (int i = 0; i < 8; i++) plot_add_line(c, "v", (double[]){0, 1}, (double[]){0, 1}, 2);
    CHECK_MSG(plot_write_png(c, check_path(dir, "eight_ok.png"), W, H, err) == 0, "8 series write: %s", err);
    plot_add_line(c, "v9", (double[]){0, 1}, (double[]){0, 1}, 2);
    rc = plot_write_png(c, check_path(dir, "nine.png"), W, H, err);
    CHECK_MSG(rc == DP_EINVAL && strstr(err, "nine variants") && strstr(err, "9 series"),
              "a 9th series: DP_EINVAL naming the chart (\"%s\")", err);
    plot_free(c);
    plot_free(NULL);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        return 1;
    }
    test_ticks();
    test_palette();
    test_csv_lines();
    test_csv_bars_hist();
    test_ranges();
    test_line_corners();
    test_broken_line_and_lone_point();
    test_bars();
    test_text();
    test_legend();
    test_errors();
    if (getenv("PLOT_KEEP")) {
        printf("kept %s\n", dir);
    } else {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    }
    cairo_debug_reset_static_data();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
