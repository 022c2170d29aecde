/* series.c — what a compare report plots, read from one variant's trace in one pass:
 * loss by global step and by time, accuracy by time, the staleness histogram, bytes per
 * ps, and when the global step first reached a given value. Losses are the workers'
 * step_end losses averaged over at most LAB_BUCKETS equal buckets of global step (or of
 * time), from 0 to the largest of the points; a bucket with no step is left out. Times
 * are seconds since the trace's first event. The rules are written here once, and
 * tests/it_compare.sh recomputes the same points from the trace to check the report. */
#include "lab/series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/trace.h"

typedef struct raw_point { double x, y; } raw_point;

typedef struct raw_list { raw_point *p; size_t n, cap; } raw_list;

static void raw_add(raw_list *l, double x, double y)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->p = xrealloc(l->p, l->cap * sizeof *l->p);
    }
    l->p[l->n++] = (raw_point){x, y};
}

/* Means over `buckets` equal buckets of x in [0, x_max]: bucket b holds
 * floor(x / x_max * buckets) == b (x == x_max goes to the last one). */
static void bucket(const raw_list *l, double x_max, int buckets, lab_curve *out)
{
    out->n = 0;
    out->x = out->y = NULL;
    if (l->n == 0) return;
    double *sx = xcalloc((size_t)buckets, sizeof *sx), *sy = xcalloc((size_t)buckets, sizeof *sy);
    size_t *cnt = xcalloc((size_t)buckets, sizeof *cnt);
    for (size_t i = 0; i < l->n; i++) {
        int b = x_max > 0 ? (int)floor(l->p[i].x / x_max * buckets) : 0;
        if (b >= buckets) b = buckets - 1;
        if (b < 0) b = 0;
        sx[b] += l->p[i].x;
        sy[b] += l->p[i].y;
        cnt[b]++;
    }
    out->x = xmalloc((size_t)buckets * sizeof *out->x);
    out->y = xmalloc((size_t)buckets * sizeof *out->y);
    for (int b = 0; b < buckets; b++) {
        if (!cnt[b]) continue;
        out->x[out->n] = sx[b] / (double)cnt[b];
        out->y[out->n] = sy[b] / (double)cnt[b];
        out->n++;
    }
    free(sx);
    free(sy);
    free(cnt);
}

int lab_series_read(const char *trace, lab_series *s, char *err)
{
    memset(s, 0, sizeof *s);
    trace_reader *r = trace_reader_open(trace, err);
    if (!r) return DP_EINVAL;
    int64_t t0 = trace_reader_t0(r);
    raw_list by_step = {0}, by_time = {0};
    size_t steps_cap = 0;
    double max_gs = 0, max_t = 0, max_step_t = 0;
    evt_record e;
    int rc;
    while ((rc = trace_reader_next(r, &e)) == 1) {
        double t = (double)(e.t - t0) / 1e9;
        if (t > max_t) max_t = t;
        switch (e.kind) {
        case EVT_STEP_END:
            if (isfinite(e.value)) {
                raw_add(&by_step, e.value2, e.value);
                raw_add(&by_time, t, e.value);
                if (e.value2 > max_gs) max_gs = e.value2;
                if (t > max_step_t) max_step_t = t;
            }
            break;
        case EVT_EVAL:
            if (s->accuracy.n < LAB_MAX_EVALS && isfinite(e.value)) {
                if (!s->accuracy.x) {
                    s->accuracy.x = xmalloc(LAB_MAX_EVALS * sizeof(double));
                    s->accuracy.y = xmalloc(LAB_MAX_EVALS * sizeof(double));
                }
                s->accuracy.x[s->accuracy.n] = t;
                s->accuracy.y[s->accuracy.n++] = e.value;
            }
            break;
        case EVT_GLOBAL_STEP:
            if (s->n_steps == steps_cap) {
                steps_cap = steps_cap ? steps_cap * 2 : 1024;
                s->step_t = xrealloc(s->step_t, steps_cap * sizeof *s->step_t);
                s->step_n = xrealloc(s->step_n, steps_cap * sizeof *s->step_n);
            }
            s->step_t[s->n_steps] = t;
            s->step_n[s->n_steps++] = e.step;
            break;
        case EVT_APPLY: {
            int b = e.value < 0 ? 0 : e.value >= LAB_STALE_BINS - 1 ? LAB_STALE_BINS - 1 : (int)e.value;
            s->stale[b]++;
            break;
        }
        case EVT_DROP:
            s->dropped++;
            break;
        case EVT_PULL_END:
        case EVT_PUSH_END:
            if (e.job == EVT_JOB_WORKER && e.peer >= 0 && e.peer < LAB_MAX_PS && e.bytes > 0) {
                if (e.kind == EVT_PULL_END) s->ps_pulled[e.peer] += (double)e.bytes;
                else s->ps_pushed[e.peer] += (double)e.bytes;
                if (e.peer + 1 > s->n_ps_seen) s->n_ps_seen = e.peer + 1;
            }
            break;
        default:
            break;
        }
    }
    trace_reader_close(r);
    s->duration_s = max_t;
    bucket(&by_step, max_gs, LAB_BUCKETS, &s->loss_by_step);
    bucket(&by_time, max_step_t, LAB_BUCKETS, &s->loss_by_time);
    free(by_step.p);
    free(by_time.p);
    if (rc < 0) return dp_fail(err, DP_ECORRUPT, "%s: cannot be read to its end", trace);
    return DP_OK;
}

double lab_series_time_to_step(const lab_series *s, int64_t step)
{
    for (size_t i = 0; i < s->n_steps; i++)
        if (s->step_n[i] >= step) return s->step_t[i];
    return NAN;
}

void lab_series_release(lab_series *s)
{
    free(s->loss_by_step.x);
    free(s->loss_by_step.y);
    free(s->loss_by_time.x);
    free(s->loss_by_time.y);
    free(s->accuracy.x);
    free(s->accuracy.y);
    free(s->step_t);
    free(s->step_n);
    memset(s, 0, sizeof *s);
}
