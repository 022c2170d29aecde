/* plot_int.h — what plot.c (the store, layout, drawing and files) takes from plot_axis.c
 * (axis ranges and tick labels). Not for use outside viz/plot*.c: the public interface
 * is plot.h. Each function is documented where it is defined. */
#ifndef VIZ_PLOT_INT_H
#define VIZ_PLOT_INT_H

#include <stddef.h>

void plot_fit_range(double lo, double hi, int found, int zero_base, int is_log, double *rlo, double *rhi);
void plot_fmt_value(char *buf, size_t n, double v);
void plot_fmt_tick(char *buf, size_t n, double v, double step, double amax);

#endif
