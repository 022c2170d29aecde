/* state.h — the replay state: what a run looks like at one instant, built by applying
 * events in order. It is what a viewer draws (cluster, each task's phase, where every
 * variable lives and its version, the global step, the last loss per worker) and what
 * `trace info` summarises (counts per kind, dropped events). Pure data: no I/O, no
 * clock. An evt_state is embedded by the caller (evt_state_init/evt_state_release);
 * one state is not thread-safe, separate states are independent.
 *
 * trace_reader_state_at() gives the state at any time of a recorded trace quickly, for
 * scrubbing: on its first call it replays the trace once (decoding every block, about
 * as long as `trace info`) and keeps a snapshot before every TRACE_STATE_SNAPSHOT_BLOCKS
 * blocks (spacing doubled as often as needed to keep snapshots under 256 MiB, for huge
 * simulated clusters); later calls copy the nearest snapshot at or before the target
 * (or the previous answer, when that is nearer, as when playing forward) and replay at
 * most that many blocks (~65k events). The snapshots are built on first use rather
 * than in trace_reader_open so that opening and seeking stay O(log n) for tools that
 * never scrub. */
#ifndef EVENTS_STATE_H
#define EVENTS_STATE_H

#include <stdint.h>

#include "events/event.h"
#include "events/trace.h"

/* What a task is doing. Precedence when several apply: dead > stopped > barrier >
 * ssp-blocked > paced > computing > pushing > pulling > idle. PACED (a worker holding
 * its step for --pace) comes last in the enum so the older phases keep their numbers. */
typedef enum evt_phase {
    EVT_PHASE_IDLE = 0, EVT_PHASE_PULLING, EVT_PHASE_COMPUTING, EVT_PHASE_PUSHING,
    EVT_PHASE_BARRIER, EVT_PHASE_SSP, EVT_PHASE_DEAD, EVT_PHASE_STOPPED, EVT_PHASE_PACED,
    EVT_PHASE_COUNT
} evt_phase;

/* "idle", "pulling", "computing", "pushing", "barrier", "ssp_blocked", "dead",
 * "stopped", "paced"; "unknown" out of range. */
const char *evt_phase_name(int phase);

/* Largest task index the state tracks; events naming a larger (or negative) index
 * still count but change no task. */
#define EVT_STATE_MAX_TASKS 65536

typedef struct evt_task_state {
    int seen;                /* any event from/about this task */
    int started;             /* TASK_START seen */
    uint8_t job;             /* evt_job */
    int32_t index;
    uint32_t host;           /* string id, from TASK_START */
    int64_t pid;
    int phase;               /* evt_phase, derived from the flags below */
    int64_t phase_since;     /* time the phase last changed */
    int pulls_in_flight;     /* PULL_BEGIN minus PULL_END (never below 0) */
    int pushes_in_flight;
    int computing;           /* COMPUTE_BEGIN without its END */
    int paced;               /* PACED_BEGIN without its END */
    int in_barrier, in_ssp, dead, stopped;
    int reconnecting;            /* a worker that lost a ps (PS_RETRY), until its next pull
                                  * is answered */
    int64_t step;            /* worker: last local step seen; ps: last global step applied */
    int64_t steps_done;      /* worker: STEP_END count */
    double loss;             /* worker: loss of the last STEP_END (NaN before any) */
    int64_t applies, drops;  /* ps: gradients applied / dropped here */
    int64_t bytes_pulled, bytes_pushed;   /* worker: from PULL_END / PUSH_END */
    int64_t events_dropped;  /* cumulative count reported by EVENTS_DROPPED */
    uint32_t fail_reason;    /* string id of the last FAILURE, 0 after RECOVERY */
    int32_t dev_slot_;       /* private: its last device's index in devices + 1 (0 none) */
} evt_task_state;

typedef struct evt_var_state {
    uint32_t name;           /* string id */
    uint32_t shape;          /* string id ("784x128") */
    int64_t bytes;
    int32_t ps;              /* ps task holding it, -1 unplaced */
    uint32_t device;         /* string id, 0 unplaced */
    int64_t version;         /* updates applied: the largest APPLY step (its version after), or a count of APPLYs that carry none */
    int64_t drops;
    double last_staleness;
} evt_var_state;

typedef struct evt_device_state {
    uint8_t job;
    int32_t task;
    uint32_t name;           /* string id */
    int busy;                /* computes in flight on it */
    int64_t ops;             /* OP_PLACE events naming it */
} evt_device_state;

typedef struct evt_state {
    int64_t t;               /* time of the last applied event (0 before any) */
    uint64_t events;         /* events applied */
    uint64_t counts[EVT_KIND_COUNT];
    int cluster_started, cluster_stopped;
    uint32_t config;         /* string id of CLUSTER_START's config JSON */
    int n_ps, n_workers;     /* distinct tasks with TASK_START, per job */
    evt_task_state *ps;      /* ps[0 .. ps_len), indexed by task index */
    int ps_len;
    evt_task_state *workers;
    int workers_len;
    evt_var_state *vars;     /* in order of first appearance */
    int n_vars;
    evt_device_state *devices;
    int n_devices;
    int64_t global_step;     /* max of GLOBAL_STEP and APPLY steps */
    int64_t applies, drops;
    double staleness_sum;    /* over APPLY events */
    double staleness_max;
    double last_staleness;
    int64_t eval_step;       /* last EVAL: step, accuracy, loss (-1 / NaN before any) */
    double eval_accuracy, eval_loss;
    int64_t checkpoints;
    int64_t failures;
    int64_t events_dropped;  /* sum over tasks of their latest EVENTS_DROPPED */
    /* private: var lookup by string id (open addressing) and array capacities */
    int32_t *var_slots_;
    int var_nslots_, vars_cap_, devices_cap_;
    int64_t other_dropped_[4];   /* latest EVENTS_DROPPED of untracked tasks, per job */
} evt_state;

/* Empty state (no tasks, global step 0). Release with evt_state_release(). */
void evt_state_init(evt_state *st);
void evt_state_release(evt_state *st);
/* Back to the empty state, keeping allocations. */
void evt_state_reset(evt_state *st);
/* Makes dst (initialised) a deep copy of src. */
void evt_state_copy(evt_state *dst, const evt_state *src);
/* 1 when a and b describe the same state (NaNs compare equal to NaNs), else 0. */
int evt_state_equal(const evt_state *a, const evt_state *b);

/* Applies one event. Unknown kinds are counted under "unknown" (index 0) and change
 * nothing else. Never fails; out-of-range task indices only count. */
void evt_state_apply(evt_state *st, const evt_record *e);

/* The task (job, index), or NULL when the state has never seen it. Borrowed until
 * the next apply/reset/release. */
const evt_task_state *evt_state_task(const evt_state *st, int job, int index);
/* The variable with string id name, or NULL. Borrowed as above. */
const evt_var_state *evt_state_var(const evt_state *st, uint32_t name);

/* Fills state (initialised) with the trace's state at time t: every event, in
 * reader order, before the first event later than t (for a time-ordered trace:
 * every event with time <= t). Does not move the reader's next() cursor. Returns 0
 * or a negative dp_err (a block that fails to decode is reported in
 * trace_reader_damage() and skipped, as next() does). */
#define TRACE_STATE_SNAPSHOT_BLOCKS 16
int trace_reader_state_at(trace_reader *r, int64_t t, evt_state *state);

/* The snapshots' memory budget (default TRACE_STATE_SNAPSHOT_BUDGET bytes): when they
 * outgrow it (a huge simulated cluster's trace), every other one is dropped and the
 * spacing doubles. Set before the first trace_reader_state_at(), which builds them. */
#define TRACE_STATE_SNAPSHOT_BUDGET ((size_t)256 << 20)
void trace_reader_set_snapshot_budget(trace_reader *r, size_t bytes);
/* What trace_reader_state_at() keeps (all 0 before its first call): the snapshots, the
 * blocks between two, and their size as counted against the budget. */
typedef struct trace_snapshot_info {
    size_t count, spacing, bytes;
} trace_snapshot_info;
trace_snapshot_info trace_reader_snapshot_info(const trace_reader *r);

#endif
