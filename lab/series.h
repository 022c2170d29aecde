/* series.h — the numbers a compare report plots, read from one variant's trace (see
 * series.c for the bucketing rule). Internal to lab/. */
#ifndef LAB_SERIES_H
#define LAB_SERIES_H

#include <stddef.h>
#include <stdint.h>

#define LAB_BUCKETS 200       /* loss curves: at most this many points */
#define LAB_MAX_EVALS 4096
#define LAB_STALE_BINS 9      /* staleness 0, 1, ..., 7, and 8 or more */
#define LAB_MAX_PS 4096

typedef struct lab_curve { double *x, *y; size_t n; } lab_curve;

typedef struct lab_series {
    lab_curve loss_by_step;   /* x: global step read, y: mean step_end loss */
    lab_curve loss_by_time;   /* x: seconds since the trace's first event */
    lab_curve accuracy;       /* x: seconds, y: the chief's test accuracy */
    double *step_t;           /* global-step events: time (s) and new step */
    int64_t *step_n;
    size_t n_steps;
    double stale[LAB_STALE_BINS];   /* applied gradients by staleness */
    double dropped;                 /* gradients dropped as stale */
    double ps_pulled[LAB_MAX_PS], ps_pushed[LAB_MAX_PS];   /* bytes, from the trace */
    int n_ps_seen;
    double duration_s;
} lab_series;

/* Reads trace into s (zeroed first). Returns 0, or a dp_err with "path: ..." in err;
 * release s with lab_series_release either way. */
int lab_series_read(const char *trace, lab_series *s, char *err);
/* Seconds from the trace's start until the global step first reached `step` (NaN: never). */
double lab_series_time_to_step(const lab_series *s, int64_t step);
void lab_series_release(lab_series *s);

#endif
