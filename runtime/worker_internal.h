/* worker_internal.h — a worker task's state, shared by worker.c (the training loop, the
 * chief's duties, checkpoints) and worker_net.c (talking to the ps tasks: connecting,
 * pulls, pushes, the sync barrier's releases, the SSP gate). Not for other modules:
 * runtime/task.h is the API. */
#ifndef RUNTIME_WORKER_INTERNAL_H
#define RUNTIME_WORKER_INTERNAL_H

#include <stdint.h>

#include <ev.h>

#include "cluster/spec.h"
#include "cluster/vars.h"
#include "common/dp.h"
#include "events/event.h"
#include "net/auth.h"
#include "runtime/config.h"
#include "net/conn.h"
#include "net/sock.h"
#include "runtime/device.h"
#include "runtime/instr.h"
#include "runtime/nn.h"
#include "runtime/proto.h"
#include "runtime/task.h"
#include "runtime/towers.h"

#define LOSS_WINDOW 20
/* Returned by the wait loops when a ps connection was lost mid-run: the worker reconnects
 * and (chief) restores the session from the last checkpoint (worker.c, recover()). */
#define WK_PS_LOST (-100)
/* Reconnections in a row without a step completed between them before giving up. */
#define WK_MAX_FRUITLESS_REJOINS 5
/* How long the chief waits for the ps's final global step (FINAL_STEP) at the end. */
#define FINAL_STEP_WAIT_S 10.0
/* wk_step_progress: at most one look at what arrived in this time, between ops; a
 * call longer than WK_HOOK_MAX_NS lost its core for a while (see there). */
#define WK_POLL_NS 50000
#define WK_HOOK_MAX_NS 200000

typedef struct wk_ps {
    struct worker *wk;
    int index;
    net_conn *conn;
    char name[64];
} wk_ps;

typedef struct worker {
    struct ev_loop *loop;
    auth_key key;               /* the run's secret (key.set == 0: none); loaded with the
                                 * session token at the first wk_connect_all */
    uint64_t token;             /* this process's random session token (HELLO) */
    int auth_loaded;
    const rt_config *cfg;
    const cluster_spec *spec;
    int index;
    int chief;
    char name[64];
    var_catalog cat;
    int step_var;               /* catalogue index of global_step */
    nn_net *net, *eval_net;
    dev_set *devs;              /* --worker-devices beyond cpu:1: its devices and towers */
    tw_set *tw;
    int n_tensors;
    float *params[8], *grads[8];
    float *slots[8];            /* chief, optimizer with slots: the ps's accumulators, pulled
                                 * for checkpoints (else NULL) */
    char slot_names[8][96];     /* "hidden/weights/Momentum", as TensorFlow's Saver names them */
    int64_t final_gs;           /* FINAL_STEP_RESP: the run's final global step */
    int final_abandoned;        /* FINAL_STEP given up (a worker never joined): a late
                                 * answer is dropped, not counted */
    int64_t ckpt_step;          /* global step of the last checkpoint written or restored */
    uint64_t ckpt_ns;           /* when it was (dp_now_ns) */
    wk_ps *ps;
    int outstanding;            /* answers still awaited */
    int failed;
    char fail_msg[DP_ERRLEN];
    int finishing;
    int lost;                   /* a ps connection was lost: the waits return WK_PS_LOST */
    int lost_ps;                /* which one (the first lost) */
    char lost_msg[DP_ERRLEN];
    uint64_t lost_ns;           /* when (dp_now_ns); 0 outside a reconnection */
    int rejoining;              /* closing our own connections: not a loss */
    int rejoins;                /* sessions rejoined after a lost ps */
    int fruitless;              /* rejoins since the last completed step */
    double pull_deadline_s;     /* > 0: the next wk_pull_all fails after this long (a
                                 * reconnected worker waits for the chief's restore) */
    int64_t session;            /* the newest session a pulled value came from */
    int64_t need_session;       /* pulls are answered from this session on (proto.h) */
    int inits_taken;            /* chief: INIT_OKs saying the ps took the value */
    int64_t *version;           /* per variable: version read at the last pull */
    int64_t gs;                 /* global step read at the last pull */
    int64_t gs_after;           /* global step from the last global_step ack */
    int drops_seen;
    int64_t waited_logged;      /* sync: whole seconds of the last "waiting for" line */
    int timed_out;              /* sync: --barrier-timeout passed (a WAITING said so) */
    char timeout_msg[160];
    int report_progress;        /* $DOWNPOUR_PROGRESS: a "@progress" stdout line a step, from
                                 * which the launcher learns when to inject a --fail */
    int64_t hold_at;            /* $DOWNPOUR_HOLD_AT: the local step a --fail kills us at */
    int releases_due;           /* sync: gradients accumulated, waiting for RELEASE */
    int64_t local;              /* local step in progress */
    int64_t clock0;             /* the SSP clock is clock0 + local: a restarted process
                                 * carries on from the clock its gate kept (HELLO_OK) */
    int64_t *t_begin;           /* per variable: when its pull began (instr clock); then,
                                 * from index cat.n on, when its push of an even step
                                 * began, from 2 * cat.n on, of an odd step */
    int64_t *push_step;         /* per variable: the local step of its latest push */
    int *push_unacked;          /* per variable: its pushes whose ack has not come (acks
                                 * come in order: the oldest is push_step - unacked + 1) */
    /* --prefetch (async): step local + 1's pull, sent before step local computes, lands in
     * pf_params (and pf_version, pf_gs) while it computes and pushes; wk_prefetch_take
     * swaps it in at the next step's start. No other pull is sent while one is awaited,
     * so every PULL_RESP in that time is the prefetch's. */
    int computing;              /* inside this step's nn_train_step (wk_step_progress) */
    int pipeline;               /* 0: $DOWNPOUR_PIPELINE=0, pushes wait for the whole
                                 * backward pass as before pipelining (for comparisons) */
    uint8_t *pushed;            /* per variable: its gradient went during the compute */
    uint64_t progress_cpu_ns;   /* this step: the time wk_step_progress took (sending,
                                 * reading: it never waits), not the compute's work */
    uint64_t polled_ns;         /* when wk_step_progress last looked at what arrived */
    /* --prefetch (async), as DistBelief's workers: a step's pushes are not awaited
     * before the next step (wk_push_all): their acks come in while it computes, the
     * gradients of two steps alternate between grads and grads_alt, and a step's buffer
     * is reused only once every ack of its pushes is in (at most one step
     * unacknowledged). Without --prefetch a step waits for its updates to be applied,
     * as TensorFlow's session.run(train_op) does. Off with --fail at a step
     * (report_progress: the launcher reads the global step from each step's acks) and
     * with DOWNPOUR_PIPELINE=0. */
    int lazy_acks;
    float *grads_alt[8];
    float *pf_params[8];
    int64_t *pf_version;
    int64_t pf_gs;
    int pf_outstanding;         /* its answers still awaited (not counted in outstanding) */
    int pf_sent;                /* a prefetch was sent and not yet taken or dropped */
    int64_t pf_step;            /* the local step it is for */
    rt_instr *in;               /* NULL without a hub */
    uint32_t device;
    uint64_t bytes_pulled, bytes_pushed;
    double losses[LOSS_WINDOW];
    int n_losses;
} worker;

/* worker.c */
/* Where variable d's part lives in a tensor array (the catalogue's slice of it). */
float *wk_var_slot(const var_def *d, float *const *tensors);
/* This worker's clock: the steps the gate counts it for (its pushes' and SSP waits'). */
static inline int64_t wk_clock(const worker *wk) { return wk->clock0 + wk->local; }
/* Marks the worker failed with msg (the first failure is kept) and stops its loop. */
void wk_fail(worker *wk, const char *msg);
/* PULL_* / PUSH_* of variable v, and the step events (compute, barrier, ssp, step end). */
void wk_emit_transfer(worker *wk, evt_kind kind, int v, double value);
/* The same for a transfer of local step `step` (a prefetch's pull: local + 1). */
void wk_emit_transfer_at(worker *wk, evt_kind kind, int v, double value, int64_t step);
void wk_emit_step(worker *wk, evt_kind kind, int64_t t, int64_t dur, double value, double value2);

/* worker_net.c */
/* Runs the loop until every awaited answer is in; DP_OK, or a dp_err when it failed or
 * was stopped. */
int wk_wait_all(worker *wk);
/* wk_wait_all, giving up after seconds: DP_ETIMEDOUT then (the answers stay awaited). */
int wk_wait_for(worker *wk, double seconds);
/* Sends one frame to ps task `ps` and counts the answer it awaits; 1 when sent. */
int wk_send(worker *wk, int ps, net_frame h, const void *payload, size_t len);
/* Connects to every ps (retrying until --connect-timeout) and says HELLO. */
int wk_connect_all(worker *wk, char *err);
/* After a lost ps (WK_PS_LOST): closes every ps connection, reconnects (the lost one
 * retried with backoff, each attempt a PS_RETRY event) and says HELLO again: a new
 * session, which the chief then restores. */
int wk_rejoin(worker *wk, char *err);
/* Pulls every variable (and, with_slots, the optimizer's slots for a checkpoint). */
int wk_pull_all(worker *wk, int with_slots);
/* wk_pull_all in two halves, for work between them while the answers travel: sends the
 * pulls; then waits for them (and every other awaited answer). */
void wk_pull_send(worker *wk);
int wk_pull_wait(worker *wk);
/* nn_train_step's progress hook (nn_hooks.progress) while the worker computes: a
 * gradient the backward pass has finished is pushed at once, as TensorFlow's dataflow
 * sends a tensor when the op producing it is done, and the loop reads what has arrived
 * (a prefetch, acks) without waiting. */
void wk_step_progress(void *ctx, int grad);
/* --prefetch: sends the pull of every variable for step local + 1, into pf_params. */
void wk_prefetch_send(worker *wk);
/* Waits for the prefetch's answers; take = 1 swaps them in as this step's parameters
 * (versions and global step too), take = 0 drops them. */
int wk_prefetch_finish(worker *wk, int take);
/* Pushes every gradient of the step (see worker_net.c for the order by mode); async
 * with lazy_acks returns without awaiting the acks (see there). */
int wk_push_all(worker *wk, int64_t clock);
/* Async with lazy_acks: at the top of a step that took a prefetch, waits for the acks
 * still due when they may take the global step to --steps (the run's end is decided on
 * the exact step, as without lazy acks). */
int wk_acks_settle(worker *wk);
/* SSP: waits until the gate lets this worker start its next step. */
int wk_ssp_wait(worker *wk);

#endif
