/* plot_axis.c — the numbers on a chart's axes (plot_int.h): the range an axis spans for
 * the data it shows, nice tick values (1-2-5 steps; on a log axis 1-2-5 per decade, or
 * powers of ten), and the tick and value labels (as many decimals as the step needs,
 * thousands as k/M/G). Pure functions of their arguments: no chart, no cairo. */
#include <math.h>
#include <stdio.h>

#include "viz/plot.h"
#include "viz/plot_int.h"

/* ---- ranges ----------------------------------------------------------------------- */

/* The axis range for data in [lo, hi]: 0 included for bars (zero_base); otherwise the
 * range starts (ends) at 0 when the data starts within a quarter of its span from 0;
 * 4 % padding on each side that is not at 0 (5 % of the log span on a log axis). */
void plot_fit_range(double lo, double hi, int found, int zero_base, int is_log,
                    double *rlo, double *rhi)
{
    if (!found) {
        lo = 0;
        hi = 1;
    } else if (!is_log && zero_base) {
        lo = fmin(lo, 0);
        hi = fmax(hi, 0);
    } else if (!is_log && lo > 0 && lo <= (hi - lo) / 4) {
        lo = 0;
    } else if (!is_log && hi < 0 && -hi <= (hi - lo) / 4) {
        hi = 0;
    }
    if (hi == lo) {
        double d = is_log ? 0.5 : lo != 0 ? 0.1 * fabs(lo) : 0.5;
        if (zero_base && !is_log) hi = 1;   /* all bars 0 */
        else lo -= d, hi += d;
    }
    double pad = (hi - lo) * (is_log ? 0.05 : 0.04);
    if (is_log && zero_base) lo = floor(lo - 1e-9) - (lo - floor(lo - 1e-9) < 0.3);
    else if (is_log || lo != 0) lo -= pad;
    if (is_log || hi != 0) hi += pad;
    *rlo = lo;
    *rhi = hi;
}

/* ---- ticks ------------------------------------------------------------------------ */

/* The multiples of m x 10^e in [lo, hi], each computed from its integer so that 0.6
 * reads 0.6 and not 0.6000000000000001. */
static int multiples(double lo, double hi, double m, int e, double *out, int cap)
{
    double step = m * pow(10, e);
    double k0 = ceil(lo / step - 1e-9), k1 = floor(hi / step + 1e-9);
    int n = 0;
    for (double k = k0; k <= k1 && n < cap; k++)
        out[n++] = e >= 0 ? k * m * pow(10, e) : k * m / pow(10, -e);
    return n;
}

static int lin_ticks(double lo, double hi, double *out, int cap)
{
    double raw = (hi - lo) / 8;
    int e = (int)floor(log10(raw));
    double f = raw / pow(10, e);
    double m = f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10;
    return multiples(lo, hi, m, e, out, cap);
}

static int log_ticks(double lo, double hi, double *out, int cap)
{
    static const double mant[] = {1, 2, 5};
    int k0 = (int)floor(log10(lo)), k1 = (int)floor(log10(hi) + 1e-9), n = 0;
    for (int k = k0; k <= k1 && n < cap; k++)
        for (int j = 0; j < 3 && n < cap; j++) {
            double v = k >= 0 ? mant[j] * pow(10, k) : mant[j] / pow(10, -k);
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out[n++] = v;
        }
    if (n >= 2 && n <= 8) return n;
    if (n < 2) return lin_ticks(lo, hi, out, cap);
    /* too many: powers of ten, every stride-th one so that at most 8 remain */
    k0 = (int)ceil(log10(lo) - 1e-9);
    int stride = (k1 - k0 + 1 + 7) / 8;
    n = 0;
    for (int k = k0; k <= k1 && n < cap; k++)
        if (((k % stride) + stride) % stride == 0) out[n++] = pow(10, k);
    return n;
}

int plot_ticks(double lo, double hi, int log_scale, double *out, int cap)
{
    if (!isfinite(lo) || !isfinite(hi) || !(hi > lo) || cap <= 0) return 0;
    if (log_scale && lo > 0) return log_ticks(lo, hi, out, cap);
    return lin_ticks(lo, hi, out, cap);
}

static int decimals_for(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

static const char *const si_suffix[] = {"", "k", "M", "G", "T", "P"};

static int si_power(double amax)   /* 1000^e below amax, e in 0..5 */
{
    int e = amax > 0 ? (int)floor(log10(amax) / 3) : 0;
    return e < 0 ? 0 : e > 5 ? 5 : e;
}

/* A value on its own (bar labels, log ticks): "0.123", "12.3", "1234", "12.3k", "2e-05". */
void plot_fmt_value(char *buf, size_t n, double v)
{
    double a = fabs(v);
    int e = si_power(a);
    if (a >= 1e4) snprintf(buf, n, "%.3g%s", v / pow(1000, e), si_suffix[e]);
    else if (a >= 100) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.3g", v);
}

/* A linear tick among ticks step apart whose largest magnitude is amax: as many
 * decimals as the step needs, thousands as k/M/G. */
void plot_fmt_tick(char *buf, size_t n, double v, double step, double amax)
{
    if (fabs(v) < step * 1e-6) snprintf(buf, n, "0");
    else if (amax >= 1e4) {
        int e = si_power(amax);
        double sc = pow(1000, e);
        snprintf(buf, n, "%.*f%s", decimals_for(step / sc), v / sc, si_suffix[e]);
    } else if (amax < 1e-3) snprintf(buf, n, "%.2g", v);
    else snprintf(buf, n, "%.*f", decimals_for(step), v);
}
