/* update.c — sync accumulators (SyncReplicasOptimizer), async staleness bookkeeping and
 * the SSP gate, as pure state machines shared by the runtime and the simulator.
 * Sync invariant: at most replicas_to_aggregate gradients are held, one per worker, for
 * the current step only; the mean is summed in ascending worker index so the result does
 * not depend on arrival order. No sockets, no clock, no threads: callers serialise. */
#include "cluster/update.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

int update_mode_parse(const char *s, update_mode *out)
{
    if (!s) return DP_EINVAL;
    if (!strcmp(s, "sync")) *out = MODE_SYNC;
    else if (!strcmp(s, "async")) *out = MODE_ASYNC;
    else if (!strcmp(s, "ssp")) *out = MODE_SSP;
    else return DP_EINVAL;
    return DP_OK;
}

const char *update_mode_name(update_mode m)
{
    switch (m) {
    case MODE_SYNC: return "sync";
    case MODE_ASYNC: return "async";
    case MODE_SSP: return "ssp";
    }
    return "?";
}

void stale_stats_add(stale_stats *s, int64_t staleness)
{
    assert(((void)"stale_stats_add: negative staleness", staleness >= 0));
    s->n++;
    s->sum += (uint64_t)staleness;
    if (staleness > s->max) s->max = staleness;
}

double stale_stats_mean(const stale_stats *s)
{
    return s->n ? (double)s->sum / (double)s->n : 0.0;
}

/* ---- sync ---------------------------------------------------------------------------- */

struct sync_acc {
    int n_workers, required;
    size_t n;
    int64_t step;
    int count;        /* gradients held for the current step */
    uint64_t *held;   /* per worker, one bit: holds a gradient this step (a bitmap, so
                       * that offers from many workers to many accumulators stay in cache) */
    int *buf_of;      /* sync_acc_take's scratch: per holding worker, its buffer index */
    int *holder;      /* per buffer: the worker that filled it */
    const float **src;/* per buffer: the gradient it holds (in bufs, or borrowed) */
    float *bufs;      /* required * n floats, filled in arrival order; allocated at the
                       * first copying offer (a ps that only lends its own needs none) */
};

sync_acc *sync_acc_new(int n_workers, int replicas_to_aggregate, size_t n, int64_t start_step)
{
    assert(((void)"sync_acc_new: need at least one worker", n_workers >= 1));
    assert(((void)"sync_acc_new: replicas_to_aggregate outside 1..n_workers",
            replicas_to_aggregate >= 1 && replicas_to_aggregate <= n_workers));
    sync_acc *a = xcalloc(1, sizeof *a);
    a->n_workers = n_workers;
    a->required = replicas_to_aggregate;
    a->n = n;
    a->step = start_step;
    a->held = xcalloc(((size_t)n_workers + 63) / 64, sizeof *a->held);
    a->buf_of = n ? xmalloc((size_t)n_workers * sizeof *a->buf_of) : NULL;
    a->holder = xmalloc((size_t)replicas_to_aggregate * sizeof *a->holder);
    a->src = xcalloc((size_t)replicas_to_aggregate, sizeof *a->src);
    return a;
}

void sync_acc_free(sync_acc *a)
{
    if (!a) return;
    free(a->held);
    free(a->buf_of);
    free(a->holder);
    free(a->src);
    free(a->bufs);
    free(a);
}

int64_t sync_acc_step(const sync_acc *a)
{
    return a->step;
}

int sync_acc_count(const sync_acc *a)
{
    return a->count;
}

int sync_acc_holds(const sync_acc *a, int worker)
{
    if (worker < 0 || worker >= a->n_workers) return 0;
    return (a->held[worker >> 6] >> (worker & 63)) & 1;
}

/* An offer's checks and bookkeeping: the buffer index the gradient takes, or minus the
 * reason it is dropped (-SYNC_STALE, -SYNC_DUPLICATE). */
static int admit(sync_acc *a, int worker, int64_t local_step, const float *g)
{
    assert(((void)"sync_acc_offer: worker index out of range", worker >= 0 && worker < a->n_workers));
    assert(((void)"sync_acc_offer: gradient from a future step", local_step <= a->step));
    assert(((void)"sync_acc_offer: NULL gradient", a->n == 0 || g));
    if (local_step < a->step) return -SYNC_STALE;
    uint64_t bit = (uint64_t)1 << (worker & 63);
    if (a->held[worker >> 6] & bit) return -SYNC_DUPLICATE;
    /* the step already has its replicas_to_aggregate gradients: a late (backup) worker's
     * gradient would be stale the moment the step is taken, so drop it now */
    if (a->count >= a->required) return -SYNC_STALE;
    int b = a->count++;
    a->held[worker >> 6] |= bit;
    a->holder[b] = worker;
    return b;
}

int sync_acc_offer(sync_acc *a, int worker, int64_t local_step, const float *g)
{
    int b = admit(a, worker, local_step, g);
    if (b < 0) return -b;
    if (a->n) {
        if (!a->bufs) a->bufs = xmalloc((size_t)a->required * a->n * sizeof *a->bufs);
        float *dst = a->bufs + (size_t)b * a->n;
        if (a->n == 1) dst[0] = g[0];  /* many small variables: no call */
        else memcpy(dst, g, a->n * sizeof *g);
        a->src[b] = dst;
    }
    return a->count == a->required ? SYNC_READY : SYNC_ACCUMULATED;
}

int sync_acc_offer_borrowed(sync_acc *a, int worker, int64_t local_step, const float *g)
{
    int b = admit(a, worker, local_step, g);
    if (b < 0) return -b;
    a->src[b] = g;
    return a->count == a->required ? SYNC_READY : SYNC_ACCUMULATED;
}

void sync_acc_rebind(sync_acc *a, int worker, const float *g)
{
    for (int b = 0; b < a->count; b++)
        if (a->holder[b] == worker) a->src[b] = g;
}

/* sync_acc_take's passes, out += g and out /= d over n floats: in blocks of DP_VEC_BLOCK
 * (common/dp.h), so vectorised and bit for bit the plain loops. The take runs them a chunk
 * at a time, so that the sum stays in L1 between passes. */
#define SYNC_TAKE_CHUNK 2048

DP_VEC_CLONES
static void vec_add(float *restrict out, const float *restrict g, size_t n)
{
    size_t i = 0;
    for (; i + DP_VEC_BLOCK <= n; i += DP_VEC_BLOCK)
        for (size_t j = i; j < i + DP_VEC_BLOCK; j++) out[j] += g[j];
    for (; i < n; i++) out[i] += g[i];
}

DP_VEC_CLONES
static void vec_div(float *restrict out, float d, size_t n)
{
    size_t i = 0;
    for (; i + DP_VEC_BLOCK <= n; i += DP_VEC_BLOCK)
        for (size_t j = i; j < i + DP_VEC_BLOCK; j++) out[j] /= d;
    for (; i < n; i++) out[i] /= d;
}

int sync_acc_take(sync_acc *a, float *mean_out, int *workers)
{
    assert(((void)"sync_acc_take: accumulator not ready", a->count == a->required));
    assert(((void)"sync_acc_take: NULL output", workers && (a->n == 0 || mean_out)));
    int k = 0;
    for (int i = 0; k < a->count && i < (a->n_workers + 63) / 64; i++) {
        for (uint64_t m = a->held[i]; m; m &= m - 1) workers[k++] = i * 64 + __builtin_ctzll(m);
        a->held[i] = 0;
    }
    assert(((void)"sync_acc_take: held count mismatch", k == a->count));
    if (a->n) {
        for (int b = 0; b < k; b++) a->buf_of[a->holder[b]] = b;
        /* sum in ascending worker order, then scale: bitwise independent of arrival. On
         * the ps this is on every sync step's critical path: as plain loops (scalar, a
         * division per float) it took 136 µs of a 1.2 ms step with 1 ps and 2 workers,
         * vectorised and chunked 24 µs. */
        for (size_t at = 0; at < a->n; at += SYNC_TAKE_CHUNK) {
            size_t len = a->n - at < SYNC_TAKE_CHUNK ? a->n - at : SYNC_TAKE_CHUNK;
            memcpy(mean_out + at, a->src[a->buf_of[workers[0]]] + at, len * sizeof *mean_out);
            for (int j = 1; j < k; j++) vec_add(mean_out + at, a->src[a->buf_of[workers[j]]] + at, len);
            vec_div(mean_out + at, (float)k, len);
        }
    }
    a->count = 0;
    a->step++;
    return k;
}

/* ---- async --------------------------------------------------------------------------- */

int64_t async_apply(async_var *v, int64_t read_version)
{
    assert(((void)"async_apply: read a version not yet written", read_version <= v->version));
    assert(((void)"async_apply: negative read version", read_version >= 0));
    int64_t s = v->version - read_version;
    stale_stats_add(&v->stats, s);
    v->version++;
    return s;
}

/* ---- ssp ----------------------------------------------------------------------------- */

struct ssp_gate {
    int n_workers, staleness;
    int64_t *clock;
    unsigned char *retired;
    int active;       /* workers not retired */
    int64_t min;      /* min clock over active workers (max over all when none active) */
    int at_min;       /* active workers whose clock == min */
};

/* Recomputes min and at_min by a scan; amortised O(1) per clock since min only grows. */
static void ssp_rescan(ssp_gate *g)
{
    int64_t m = INT64_MAX, mx = 0;
    int cnt = 0;
    for (int w = 0; w < g->n_workers; w++) {
        if (g->clock[w] > mx) mx = g->clock[w];
        if (g->retired[w]) continue;
        if (g->clock[w] < m) { m = g->clock[w]; cnt = 1; }
        else if (g->clock[w] == m) cnt++;
    }
    g->min = cnt ? m : mx;
    g->at_min = cnt;
}

ssp_gate *ssp_gate_new(int n_workers, int staleness)
{
    assert(((void)"ssp_gate_new: need at least one worker", n_workers >= 1));
    assert(((void)"ssp_gate_new: negative staleness", staleness >= 0));
    ssp_gate *g = xcalloc(1, sizeof *g);
    g->n_workers = n_workers;
    g->staleness = staleness;
    g->clock = xcalloc((size_t)n_workers, sizeof *g->clock);
    g->retired = xcalloc((size_t)n_workers, sizeof *g->retired);
    g->active = n_workers;
    g->min = 0;
    g->at_min = n_workers;
    return g;
}

void ssp_gate_free(ssp_gate *g)
{
    if (!g) return;
    free(g->clock);
    free(g->retired);
    free(g);
}

int ssp_gate_may_start(const ssp_gate *g, int64_t step)
{
    if (g->active == 0) return 1;
    /* step - min <= staleness, written so that it cannot overflow */
    return step <= g->min || step - g->min <= g->staleness;
}

int64_t ssp_gate_clock(ssp_gate *g, int worker, int64_t completed)
{
    assert(((void)"ssp_gate_clock: worker index out of range", worker >= 0 && worker < g->n_workers));
    if (completed <= g->clock[worker]) return g->min;
    int64_t old = g->clock[worker];
    g->clock[worker] = completed;
    if (g->retired[worker]) return g->min;
    if (old == g->min && --g->at_min == 0) ssp_rescan(g);
    return g->min;
}

int64_t ssp_gate_min(const ssp_gate *g)
{
    return g->min;
}

int64_t ssp_gate_rejoin(ssp_gate *g, int worker, int64_t completed)
{
    assert(((void)"ssp_gate_rejoin: worker index out of range", worker >= 0 && worker < g->n_workers));
    if (!g->retired[worker]) {
        ssp_gate_clock(g, worker, completed);
        return g->clock[worker];
    }
    /* Where it left off, or level with the slowest of the others if they went past it
     * while it was away: it holds nobody back for steps it was not there to take. */
    int64_t c = completed > g->clock[worker] ? completed : g->clock[worker];
    if (g->active > 0 && g->min > c) c = g->min;
    g->clock[worker] = c;
    g->retired[worker] = 0;
    g->active++;
    ssp_rescan(g);
    return c;
}

void ssp_gate_retire(ssp_gate *g, int worker)
{
    assert(((void)"ssp_gate_retire: worker index out of range", worker >= 0 && worker < g->n_workers));
    if (g->retired[worker]) return;
    g->retired[worker] = 1;
    g->active--;
    if (g->active == 0 || (g->clock[worker] == g->min && --g->at_min == 0)) ssp_rescan(g);
}
