/* update.h — the update strategies as pure state machines, driven identically by the
 * real runtime (runtime/) and the simulator (sim/):
 *   sync:  TensorFlow's SyncReplicasOptimizer accumulator, one per variable (plus one
 *          with no floats standing for the global-step token);
 *   async: Downpour SGD staleness bookkeeping;
 *   ssp:   the stale-synchronous-parallel gate.
 * No sockets, no clock, no threads: callers serialise access. */
#ifndef CLUSTER_UPDATE_H
#define CLUSTER_UPDATE_H

#include <stddef.h>
#include <stdint.h>

typedef enum update_mode { MODE_SYNC = 0, MODE_ASYNC = 1, MODE_SSP = 2 } update_mode;

/* Parses "sync" / "async" / "ssp"; DP_EINVAL otherwise. */
int update_mode_parse(const char *s, update_mode *out);
const char *update_mode_name(update_mode m);

/* Running staleness statistics. */
typedef struct stale_stats {
    uint64_t n;
    uint64_t sum;
    int64_t max;
} stale_stats;
void stale_stats_add(stale_stats *s, int64_t staleness);
double stale_stats_mean(const stale_stats *s);

/* ---- sync ---------------------------------------------------------------------------
 * A conditional accumulator for one variable of n floats (n may be 0: a pure counter).
 * It accepts gradients computed at local_step == its current step; older ones are
 * stale and dropped (newer ones are a caller bug: asserted). When replicas_to_aggregate
 * distinct workers have offered, the mean is ready. The mean is summed in worker-index
 * order, not arrival order, so results are bit-for-bit reproducible. */
typedef struct sync_acc sync_acc;

enum sync_offer_result {
    SYNC_ACCUMULATED = 0, /* kept; the worker waits for the step to complete */
    SYNC_READY = 1,       /* kept, and replicas_to_aggregate gradients are now in */
    SYNC_STALE = 2,       /* local_step < current step: dropped */
    SYNC_DUPLICATE = 3    /* this worker already offered for this step: dropped */
};

/* Returns a new accumulator at step `start_step`; free with sync_acc_free().
 * 1 <= replicas_to_aggregate <= n_workers (asserted). */
sync_acc *sync_acc_new(int n_workers, int replicas_to_aggregate, size_t n, int64_t start_step);
void sync_acc_free(sync_acc *a);

/* Current step: gradients computed from this step are accepted. */
int64_t sync_acc_step(const sync_acc *a);

/* Offers worker's gradient g (n floats, copied; may be NULL when n == 0). */
int sync_acc_offer(sync_acc *a, int worker, int64_t local_step, const float *g);

/* The same, g lent instead of copied: when it is kept (SYNC_ACCUMULATED or SYNC_READY)
 * the caller leaves those n floats unchanged until the take that ends the step (or
 * sync_acc_free). The ps receives each worker's gradient into a buffer of its own and
 * lends it, saving a copy of every gradient on the sync step's critical path. */
int sync_acc_offer_borrowed(sync_acc *a, int worker, int64_t local_step, const float *g);

/* The gradient worker lent moves: g holds the same n floats (the ps copies one it held
 * in a connection's ring before that ring goes). No-op when worker holds none. */
void sync_acc_rebind(sync_acc *a, int worker, const float *g);

/* After SYNC_READY: writes the mean of the accepted gradients (n floats) into mean_out,
 * writes the indices of the contributing workers in ascending order into workers
 * (capacity n_workers) and returns their count; clears the accumulator and advances its
 * step by one. Asserts that the accumulator is ready. */
int sync_acc_take(sync_acc *a, float *mean_out, int *workers);

/* Number of gradients accepted for the current step so far. */
int sync_acc_count(const sync_acc *a);

/* 1 if worker's gradient for the current step is in (0 for a worker outside
 * 0..n_workers-1): who a stalled step still waits for. */
int sync_acc_holds(const sync_acc *a, int worker);

/* ---- async --------------------------------------------------------------------------
 * staleness of a gradient = version at apply - version the worker read.  The version
 * of a variable counts the gradients applied to it. */
typedef struct async_var {
    int64_t version;
    stale_stats stats;
} async_var;

/* Records one apply of a gradient computed from read_version; returns its staleness
 * and advances the version. */
int64_t async_apply(async_var *v, int64_t read_version);

/* ---- ssp ----------------------------------------------------------------------------
 * Worker w has a clock: the number of steps it has completed. A worker may start step
 * s (0-based: its (s+1)-th step) only while s - min_clock <= staleness. */
typedef struct ssp_gate ssp_gate;

ssp_gate *ssp_gate_new(int n_workers, int staleness);
void ssp_gate_free(ssp_gate *g);

/* 1 if worker may start step `step` now, 0 if it must wait. */
int ssp_gate_may_start(const ssp_gate *g, int64_t step);

/* Records that worker has completed `completed` steps (monotonic; smaller values are
 * ignored). Returns the new minimum clock. */
int64_t ssp_gate_clock(ssp_gate *g, int worker, int64_t completed);

/* The slowest worker's clock. */
int64_t ssp_gate_min(const ssp_gate *g);

/* Marks worker as finished (it will never clock again): it no longer holds others back. */
void ssp_gate_retire(ssp_gate *g, int worker);

/* Worker (re)connects having completed `completed` steps: a lost ps's session restored,
 * or the worker's process restarted (counting from 0 again). An active worker's clock
 * moves up to `completed`. A retired one (lost) takes part again at the largest of
 * `completed`, its clock when it left and, when other workers are active, the slowest
 * of their clocks: it holds nobody back for the steps it missed. Returns the worker's
 * clock afterwards, which the worker counts on from. */
int64_t ssp_gate_rejoin(ssp_gate *g, int worker, int64_t completed);

#endif
