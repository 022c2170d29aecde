/* ps_internal.h — a ps task's state, shared by ps.c (connections: accept, the
 * authentication handshake, HELLO, the limits, the frames' dispatch, ps_run) and
 * ps_update.c (the variables: pulls, pushes under the update rule, check_numerics, INIT
 * and restores). Not for other modules: runtime/task.h is the API. */
#ifndef RUNTIME_PS_INTERNAL_H
#define RUNTIME_PS_INTERNAL_H

#include <stdint.h>

#include <ev.h>

#include "cluster/optim.h"
#include "cluster/update.h"
#include "cluster/vars.h"
#include "net/auth.h"
#include "runtime/config.h"
#include "net/conn.h"
#include "net/sock.h"
#include "runtime/instr.h"
#include "runtime/proto.h"
#include "runtime/task.h"

/* The limits on connections that have not yet said an authenticated HELLO
 * (docs/security.md): dropped after PS_HANDSHAKE_S; any connection whose partly received
 * frame waits PS_FRAME_IDLE_S for its next byte is dropped; at most
 * PS_MAX_CONNS(workers) connections at once, the rest closed at accept. */
#define PS_HANDSHAKE_S 5.0
#define PS_FRAME_IDLE_S 30.0
#define PS_MAX_CONNS(workers) (4 * (workers) + 16)

typedef struct ps_server ps_server;

typedef struct ps_var {
    const var_def *def;
    int id;              /* catalogue index */
    float *data;
    float *slot;
    float *mean;         /* sync: the mean gradient being applied */
    int initialised;
    int64_t session;     /* the restore its value comes from (0: the first INIT) */
    sync_acc *acc;       /* sync mode */
    float **lent;        /* sync: per worker, the buffer its push of this variable is
                          * received into and lent to acc (allocated at its first push) */
    async_var av;        /* async / ssp mode */
    int64_t *clock;      /* sync: per worker, the clock its pending gradient carried */
    int *waiting_pulls;  /* worker indices whose pull waits for INIT */
    int n_waiting;
    uint64_t wait_t0;    /* sync: when the current step's first gradient came in */
    int wait_reported;   /* sync: WAITING reports sent for this step (every 2 s) */
    int timeout_sent;    /* sync: the --barrier-timeout WAITING went out for this step */
} ps_var;

typedef struct ps_client {
    ps_server *ps;
    net_conn *conn;
    struct ps_client *prev, *next;   /* every connection */
    uint64_t token;      /* the worker process's session token (HELLO; 0: none given) */
    int worker;          /* -1 until HELLO */
    float *grad;         /* receive buffer for pushes, sized for the largest local var;
                          * allocated at HELLO, never for a peer that has not said it */
    int done;
    const float **held;  /* sync, per variable: the gradient the accumulator borrows where
                          * it lies in this connection's shm ring (released at the take,
                          * copied out if the connection closes first) */
    const float *hold_now;  /* the push being handled, held in the ring (NULL: not, or
                             * the accumulator took it over) */
    int holding;         /* on_header asked for this push to be held */
    uint8_t *owed;       /* sync, per variable: a gradient acknowledged ACCUMULATED on this
                          * connection and not yet RELEASEd (one pushed on an earlier
                          * connection of the same worker is released silently: this
                          * connection never heard of it) */
} ps_client;

typedef struct ssp_waiter { int worker; int64_t step; } ssp_waiter;

struct ps_server {
    struct ev_loop *loop;
    const rt_config *cfg;
    const cluster_spec *spec;
    int index;
    char name[64];
    var_catalog cat;
    ps_var *vars;        /* indexed by catalogue index; only local ones are used */
    size_t max_count;
    net_listener *listener;  /* the connection cap; counts refusals and failed handshakes */
    ev_signal sigint_w, sigterm_w;
    ev_timer stop_check;
    ev_timer wait_check; /* sync: tells workers held at the barrier whom they wait for */
    ps_client **clients; /* by worker index */
    int n_done;
    optim_conf opt;
    ssp_gate *gate;
    ssp_waiter *ssp_waiting;
    int n_ssp_waiting;
    int *released;       /* scratch: workers released by a sync take */
    int holds_step;      /* global_step lives here */
    int restores;        /* sessions the chief restored here after a ps was lost (INIT_RESTORE) */
    uint64_t lost_session_drops; /* pushes from before a restore (ahead of the variable), dropped */
    int final_waiter;    /* worker waiting for FINAL_STEP_RESP, or -1 */
    uint8_t *finished;   /* per worker: DONE, or lost after HELLO (for FINAL_STEP) */
    rt_instr *in;        /* NULL without a hub */
    uint32_t device;     /* this task's CPU device (string id) */
    auth_key key;        /* the run's secret; key.set == 0: no handshake */
    ps_client *conns;    /* every open connection */
    /* statistics */
    uint64_t applies, drops, pulls;
    uint64_t lent_pushes;           /* pushes used where they lay in a shm ring (async:
                                     * applied; sync: held by the accumulator) */
    uint64_t rejected;   /* gradients holding NaN or Inf, never applied */
    uint64_t rejected_logged_ns;
    stale_stats stale;
    uint64_t gs_first_ns, gs_last_ns, gs_advances;
};

/* ps_update.c */
/* Variable id when it lives on this ps, else NULL. */
ps_var *ps_local_var(ps_server *ps, uint32_t id);
/* Its version: the sync step, or the async count of applied gradients. */
int64_t ps_var_version(const ps_server *ps, const ps_var *v);
/* PULL_RESP: a snapshot of the variable. */
void ps_send_pull(ps_server *ps, ps_client *cl, ps_var *v);
/* A checkpoint's pull: the value, then its optimizer slot, of one version. */
void ps_send_pull_with_slot(ps_server *ps, ps_client *cl, ps_var *v);
/* The global step held here, or -1 when global_step lives on another ps. */
long long ps_global_step(const ps_server *ps);
/* FINAL_STEP: answered once every worker but the asker is done or lost. */
void ps_answer_final_step(ps_server *ps);
/* SSP: lets every waiting worker the gate now allows start its step. */
void ps_ssp_release_waiters(ps_server *ps);
/* PUSH: check_numerics, then the update rule (sync accumulators, async apply). */
void ps_handle_push(ps_server *ps, ps_client *cl, const net_frame *h, const float *g);
/* INIT: the chief's value, or (INIT_RESTORE) its restore of the session. */
void ps_handle_init(ps_server *ps, ps_client *cl, const net_frame *h, const void *payload);

#endif
