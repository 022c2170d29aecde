/* frame.c — what is moving at one instant: pulls and pushes in flight (each begin matched
 * with its end by (worker, message id, direction), positioned later by interpolating
 * between the two times), gradients dropped as stale (shown dying at the ps for a
 * moment), variables just updated (flash), compute progress and the staleness of each
 * worker's latest gradient; on one machine, copies between devices (in flight or landed
 * within 8 flash windows, about a step) and the compute run open on each device. Built from the events in a window around t that is as wide
 * as the longest message, so nothing in flight is missed. Dense clusters skip packets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

#define VIZ_SCAN_MAX 400000

typedef struct scan_ctx {
    viz_source *s;
    viz_frame *f;
    int64_t t, flash_from;
    int dense;
    evt_record *ends; size_t n_ends, cap_ends;   /* pull/push/compute ends after begins */
    int64_t *comp_t0;                            /* [n_workers] compute begin time */
    int64_t *stale_t;                            /* [n_workers] time of staleness value */
} scan_ctx;

static void add_packet(viz_frame *f, const viz_packet *p)
{
    if (f->n_pk == f->cap_pk) {
        f->cap_pk = f->cap_pk ? 2 * f->cap_pk : 64;
        f->pk = xrealloc(f->pk, (size_t)f->cap_pk * sizeof *f->pk);
    }
    f->pk[f->n_pk++] = *p;
}

static void add_copy(viz_frame *f, const evt_record *e)
{
    if (f->n_cp == f->cap_cp) {
        f->cap_cp = f->cap_cp ? 2 * f->cap_cp : 32;
        f->cp = xrealloc(f->cp, (size_t)f->cap_cp * sizeof *f->cp);
    }
    f->cp[f->n_cp++] = (viz_copy){e->kind == EVT_PUSH_BEGIN, e->str, e->device, e->var, e->t,
                                  (int64_t)e->id, e->bytes};   /* t1 holds the id until matched */
}

/* The compute run on e's device: opened at its begin, closed at its end (both up to t). */
static void note_run(viz_frame *f, const evt_record *e)
{
    int i = 0;
    while (i < f->n_run && f->run_dev[i] != e->device) i++;
    if (e->kind == EVT_COMPUTE_END) {
        if (i < f->n_run) f->run_op[i] = 0, f->run_dev[i] = 0;
        return;
    }
    if (i == f->n_run) {
        for (i = 0; i < f->n_run && f->run_dev[i]; i++) {}
        if (i == f->n_run && f->n_run == VIZ_MACHINE_DEVICES) return;
        if (i == f->n_run) f->n_run++;
    }
    f->run_dev[i] = e->device;
    f->run_op[i] = e->var;
}

static void scan_cb(void *ctx, const evt_record *e)
{
    scan_ctx *c = ctx;
    viz_model *m = &c->s->m;
    int nw = m->n_workers;
    if (!c->dense && e->t <= c->t && e->device && e->job == EVT_JOB_WORKER &&
        (e->kind == EVT_COMPUTE_BEGIN || e->kind == EVT_COMPUTE_END))
        note_run(c->f, e);
    switch (e->kind) {
    case EVT_PULL_BEGIN:
    case EVT_PUSH_BEGIN:
        if (m->local && !c->dense && e->t <= c->t && e->job == EVT_JOB_WORKER && e->task == 0 &&
            e->peer < 0 && e->str && e->device)
            add_copy(c->f, e);
        if (c->dense || e->t > c->t || e->job != EVT_JOB_WORKER || e->task < 0 || e->task >= nw ||
            e->peer < 0 || e->peer >= m->n_ps)
            break;
        add_packet(c->f, &(viz_packet){e->kind == EVT_PUSH_BEGIN, 0, e->task, e->peer,
                                       viz_model_var_index(m, e->var), e->t, -1, e->bytes,
                                       e->step, e->id});
        break;
    case EVT_PULL_END:
    case EVT_PUSH_END:
    case EVT_COMPUTE_END:
        if (c->dense || e->job != EVT_JOB_WORKER) break;
        if (c->n_ends == c->cap_ends) {
            c->cap_ends = c->cap_ends ? 2 * c->cap_ends : 256;
            c->ends = xrealloc(c->ends, c->cap_ends * sizeof *c->ends);
        }
        c->ends[c->n_ends++] = *e;
        break;
    case EVT_COMPUTE_BEGIN:
        if (!c->dense && e->t <= c->t && e->job == EVT_JOB_WORKER && e->task >= 0 && e->task < nw)
            c->comp_t0[e->task] = e->t;
        break;
    case EVT_APPLY:
    case EVT_DROP: {
        if (e->t > c->t) break;
        if (e->kind == EVT_APPLY && e->t >= c->flash_from) {
            int v = viz_model_var_index(m, e->var);
            if (v >= 0 && v < m->n_vars && e->t > c->f->flash[v]) c->f->flash[v] = e->t;
        }
        if (c->dense || e->peer < 0 || e->peer >= nw) break;
        if (e->t >= c->stale_t[e->peer]) {
            c->stale_t[e->peer] = e->t;
            c->f->staleness[e->peer] = e->value;
        }
        if (e->kind == EVT_DROP && e->t >= c->flash_from && e->task >= 0 && e->task < m->n_ps)
            add_packet(c->f, &(viz_packet){1, 1, e->peer, e->task, viz_model_var_index(m, e->var),
                                           e->t, e->t, 0, e->step, e->id});
        break;
    }
    default:
        break;
    }
}

static int cmp_end(const void *pa, const void *pb)
{
    const evt_record *a = pa, *b = pb;
    if (a->task != b->task) return a->task < b->task ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

static const evt_record *find_end(const scan_ctx *c, int worker, int kind, uint64_t id)
{
    size_t lo = 0, hi = c->n_ends;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const evt_record *e = &c->ends[mid];
        int less = e->task != worker ? e->task < worker : e->kind != kind ? e->kind < kind
                                                                          : e->id < id;
        if (less) lo = mid + 1;
        else hi = mid;
    }
    if (lo < c->n_ends && c->ends[lo].task == worker && c->ends[lo].kind == kind &&
        c->ends[lo].id == id)
        return &c->ends[lo];
    return NULL;
}

void viz_frame_build(viz_source *s, const evt_state *st, int64_t t, viz_frame *f)
{
    DP_UNUSED(st);
    viz_model *m = &s->m;
    memset(f, 0, sizeof *f);
    int nw = m->n_workers, nv = m->n_vars;
    f->flash = xmalloc(((size_t)nv + 1) * sizeof *f->flash);
    for (int i = 0; i < nv; i++) f->flash[i] = -1;
    int dense = nw > VIZ_DENSE_WORKERS;
    f->progress = xmalloc(((size_t)(dense ? 0 : nw) + 1) * sizeof *f->progress);
    f->staleness = xmalloc(((size_t)(dense ? 0 : nw) + 1) * sizeof *f->staleness);
    scan_ctx c = {.s = s, .f = f, .t = t, .dense = dense};
    c.comp_t0 = xmalloc(((size_t)(dense ? 0 : nw) + 1) * sizeof *c.comp_t0);
    c.stale_t = xmalloc(((size_t)(dense ? 0 : nw) + 1) * sizeof *c.stale_t);
    for (int w = 0; !dense && w < nw; w++) {
        f->progress[w] = -1;
        f->staleness[w] = -1;
        c.comp_t0[w] = -1;
        c.stale_t[w] = -1;
    }
    int64_t mean_push = m->dur_n[1] ? (int64_t)(m->dur_sum[1] / (double)m->dur_n[1]) : m->bw;
    int64_t flash = mean_push > m->bw ? mean_push : m->bw;
    int64_t w = m->max_dur > 0 ? m->max_dur : m->bw;
    int64_t back = dense ? flash : (w > flash ? w : flash);
    int64_t recent = 8 * flash;   /* copies stay drawn this long after landing (about a step) */
    if (m->local && !dense && back < recent) back = recent;
    c.flash_from = t - flash;
    viz_source_scan(s, t - back, dense ? t : t + w, dense ? 20000 : VIZ_SCAN_MAX, scan_cb, &c);
    if (c.n_ends) qsort(c.ends, c.n_ends, sizeof *c.ends, cmp_end);
    /* Match packets with their ends; keep those still in flight at t. */
    int keep = 0;
    for (int i = 0; i < f->n_pk; i++) {
        viz_packet p = f->pk[i];
        if (!p.dropped) {
            const evt_record *e = find_end(&c, p.worker, p.is_push ? EVT_PUSH_END : EVT_PULL_END, p.id);
            if (e) {
                if (e->t <= t) continue;            /* arrived */
                p.t1 = e->t;
                if (p.bytes <= 0) p.bytes = e->bytes;
            } else {
                int64_t est = m->dur_n[p.is_push] ? (int64_t)(m->dur_sum[p.is_push] /
                                                              (double)m->dur_n[p.is_push]) : w;
                p.t1 = p.t0 + (est > 0 ? est : 1);
                if (!viz_source_is_live(s) && p.t1 <= t) continue;   /* end lost: not in flight */
                if (p.t1 <= t) p.t1 = t + 1;
            }
        }
        f->pk[keep++] = p;
    }
    f->n_pk = keep;
    /* Copies: keep those in flight and those landed within the flash window (a still frame
     * then shows the step's flow). Ends are matched as packets' are (one task: task 0). */
    keep = 0;
    for (int i = 0; i < f->n_cp; i++) {
        viz_copy p = f->cp[i];
        const evt_record *e = find_end(&c, 0, p.is_push ? EVT_PUSH_END : EVT_PULL_END, (uint64_t)p.t1);
        p.t1 = e ? e->t : p.t0 + 1;
        if (p.t1 < t - recent || (!e && !viz_source_is_live(s))) continue;
        f->cp[keep++] = p;
    }
    f->n_cp = keep;
    for (int k = 0; !dense && k < nw; k++) {
        if (c.comp_t0[k] < 0) continue;
        for (size_t i = 0; i < c.n_ends; i++) {
            const evt_record *e = &c.ends[i];
            if (e->task == k && e->kind == EVT_COMPUTE_END && e->t >= c.comp_t0[k]) {
                if (e->t > t) f->progress[k] = (double)(t - c.comp_t0[k]) / (double)(e->t - c.comp_t0[k]);
                break;
            }
        }
    }
    free(c.ends);
    free(c.comp_t0);
    free(c.stale_t);
}

void viz_frame_release(viz_frame *f)
{
    free(f->pk);
    free(f->cp);
    free(f->flash);
    free(f->progress);
    free(f->staleness);
    memset(f, 0, sizeof *f);
}
