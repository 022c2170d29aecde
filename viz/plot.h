/* plot.h — report charts for `downpour compare`: line charts, grouped bar charts and
 * histograms drawn with cairo into a PNG, each with a title, axis labels, ticks at
 * "nice" values and a legend naming every series, and beside each PNG a CSV holding
 * exactly the points drawn, so that a reader (or a test) can check a figure without
 * reading its pixels. Series i always gets colour i of one fixed Okabe-Ito order, so a
 * variant added in the same position keeps its colour in every chart of a report.
 * Missing values (NaN, ±inf; y <= 0 on a log axis) are neither drawn nor written.
 * A chart is a plain value: build and write it on one thread; charts share nothing. */
#ifndef VIZ_PLOT_H
#define VIZ_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include <cairo.h>

#include "viz/layout.h"

/* Series a chart holds; a chart given more fails in plot_write_png (split the report). */
#define PLOT_MAX_SERIES 8

typedef struct plot_chart plot_chart;

/* A new empty chart. Labels should carry their unit ("wall time (s)", "samples/s").
 * Any of the three may be NULL or "" (no text; the title band stays, so charts of one
 * size line up in a report). The strings are copied. Never returns NULL; caller frees
 * with plot_free. */
plot_chart *plot_new(const char *title, const char *x_label, const char *y_label);
/* Frees the chart and its copies of the data; plot_free(NULL) does nothing. */
void plot_free(plot_chart *c);

/* A log10 y axis (on != 0) or a linear one (0, the default). On a log axis, y <= 0 is
 * missing; bars rise from the bottom of the axis. May be called at any time before
 * plot_write_png. */
void plot_set_log_y(plot_chart *c, int on);

/* The three kinds of series. A chart holds series of one kind only (asserted): lines,
 * bars or histograms; the kind fixes the CSV's columns. Each call adds one series, the
 * next colour and one legend entry. label (not NULL, copied) names the series in the
 * legend (cut with an ellipsis when long) and in the CSV (in full); a series with no
 * drawable point is listed in the legend as "no data". The arrays are copied; they may
 * be NULL when n is 0. Adding a series past PLOT_MAX_SERIES is recorded, not drawn, and
 * makes plot_write_png fail. */

/* A line through (x[i], y[i]) in the given order, broken where a point is missing; each
 * point is also marked when the series has few of them (always, for a lone point).
 * The x axis is numeric. */
void plot_add_line(plot_chart *c, const char *label, const double *x, const double *y,
                   size_t n);
/* Bars of values[i] over categories[i] (strings copied; each at most once per series).
 * The chart's categories are the union over its bar series, in order of first
 * appearance; in each category the series stand side by side in the order added, so
 * several calls give grouped bars (e.g. bytes per ps, one series per variant). A
 * category a series lacks, or whose value is missing, has no bar there. Bars start at 0
 * (the bottom of a log axis). Histograms with labelled bins ("0", "1", ..., "8+") are
 * bar series too. */
void plot_add_bars(plot_chart *c, const char *label, const char *const *categories,
                   const double *values, size_t n);
/* A histogram with numeric bins: bin i covers [bin_lo[i], bin_hi[i]) of the x axis
 * with height count[i]; drawn as a translucent fill with an outline in the series
 * colour, so several series overlay. A bin is missing when lo >= hi or a value is not
 * finite. */
void plot_add_histogram(plot_chart *c, const char *label, const double *bin_lo,
                        const double *bin_hi, const double *count, size_t n);

/* Writes the chart as a width x height PNG (16 .. 16384 each) at path, and its data
 * as CSV at path with a trailing ".png" replaced by ".csv" (".csv" appended when path
 * does not end in ".png"). The CSV starts with a header naming its columns:
 *     lines:      series,x,y
 *     bars:       series,category,value
 *     histograms: series,bin_lo,bin_hi,count
 * then one row per drawn point, bar or bin, series by series in the order added and
 * points in the order given; numbers in %.17g (they read back exactly), text quoted as
 * RFC 4180 when it holds a comma, quote or line break. A chart with no series writes
 * the header only. Returns 0, DP_EINVAL (bad size, more than PLOT_MAX_SERIES series) or
 * DP_EIO (a file could not be written), with a one-line message naming the chart or the
 * path in err (DP_ERRLEN bytes, may be NULL). The chart is only read. */
int plot_write_png(const plot_chart *c, const char *path, int width, int height, char *err);

/* Draws the chart into cr as a width x height figure (any surface: image, PDF, SVG);
 * the cairo state is saved and restored. Series past PLOT_MAX_SERIES are not drawn. */
void plot_draw(const plot_chart *c, cairo_t *cr, int width, int height);

/* Where plot_draw puts things for a width x height figure, in pixels, and the axis
 * ranges it chose: what a caller needs to place annotations and a test needs to find
 * the plot area. Bars use a category axis: x runs from 0 to the number of categories,
 * category i filling [i, i + 1). legend holds one row of legend_row pixels per series,
 * top to bottom in the order added (zero size when the chart has no series). */
typedef struct plot_geom {
    viz_rect title, area, legend, x_label, y_label;
    double x_lo, x_hi, y_lo, y_hi;   /* data units at the edges of area (log axis too) */
    double legend_row;               /* height of one legend entry */
} plot_geom;
void plot_geometry(const plot_chart *c, int width, int height, plot_geom *g);

/* Tick values for an axis over [lo, hi], written to out (at most cap), ascending;
 * returns their number (0 when hi <= lo or either is not finite).
 * Linear: the step is the smallest 1, 2 or 5 x 10^k that is at least (hi - lo) / 8 (at
 * most 8 intervals), and the ticks are the multiples of the step inside [lo, hi] (3 to
 * 9 of them): 0..0.87 gives 0, 0.2, 0.4, 0.6, 0.8; 0..1234 gives 0, 200, ..., 1200.
 * (The chart's axes start at 0 when the data starts within a quarter of its span from
 * 0, so data from 3 to 1234 is drawn on 0..1234 and gets those ticks.)
 * Log (log_scale != 0, lo > 0): 1, 2 and 5 x 10^k inside [lo, hi] when that gives 2 to
 * 8 ticks; when it gives more, the powers of ten inside (every k-th, so that at most 8
 * remain); when fewer, the linear ticks. */
int plot_ticks(double lo, double hi, int log_scale, double *out, int cap);

/* Colour of series i as 0xRRGGBB: Okabe-Ito blue, orange, bluish green, vermillion,
 * reddish purple, sky blue, yellow, black, then again from blue (i >= 0). */
uint32_t plot_series_color(int i);

#endif
