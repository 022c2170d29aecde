/* world.h — the simulator's internal state, shared by sim.c and deliver.c (the protocol:
 * workers and ps driving cluster/ rules), emit.c (events and the trace) and nqm.c (the
 * surrogate).
 * Everything of one run hangs off one sim_world: virtual clock, RNG, event heap,
 * network, tasks. Not part of the public API. Single-threaded. */
#ifndef SIM_WORLD_H
#define SIM_WORLD_H

#include <stdint.h>

#include "cluster/optim.h"
#include "cluster/update.h"
#include "cluster/vars.h"
#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "sim/cpu.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "sim/sim.h"

/* Engine event types (sim_event.type) of the protocol. */
enum {
    SIM_EV_PULL_ARRIVE = 1, SIM_EV_PULL_DELIVER, SIM_EV_COMPUTE_END, SIM_EV_PUSH_DELIVER,
    SIM_EV_ACKS, SIM_EV_SSP_REQ, SIM_EV_SSP_GO, SIM_EV_FAIL, SIM_EV_RESTART,
    SIM_EV_TOKEN_ARRIVE, SIM_EV_DELIVER_BATCH, SIM_EV_CPU, SIM_EV_PS_DONE, SIM_EV_COMPUTE_MID,
    SIM_EV_EARLY_ARRIVE, SIM_EV_EVAL_END
};

enum sim_wphase { SIM_W_IDLE = 0, SIM_W_SSP, SIM_W_PULL, SIM_W_EVAL, SIM_W_COMPUTE, SIM_W_PUSH, SIM_W_DONE };

typedef struct sim_wk {
    int64_t local;        /* steps completed (the worker's clock) */
    int64_t gs_read;      /* global step read at the last pull */
    int64_t eval_iv;      /* the chief: the eval_every interval of its last evaluation, or
                           * of its first pull (eval_init 0: none yet since it started) */
    int eval_init;
    int64_t t_eval;       /* ns: the start of the chief's evaluation in progress */
    int phase;
    int outstanding;      /* pull answers or push acks still awaited */
    int releases_due;     /* sync: accumulated gradients whose RELEASE has not come */
    int token;            /* sync: the step token (second part of the push) is out */
    int64_t t_phase;      /* ns: start of the current pull/push */
    int64_t t_compute;
    double work_s;           /* the compute's work alone (its draw), for compute_end */
    /* --pipeline (async / ssp): the gradients finished early (world early_var) are pushed
     * at that fraction of the compute, as the runtime's progress hook sends them */
    int mid;              /* the early push is still to come in this compute */
    int early_sent;       /* it went: this step's push carries the other variables */
    int early_due;        /* its acks not yet in while computing (later: in outstanding) */
    double work_rest;     /* with cores: the compute's work after the early push, ns */
    int64_t t_early;
    int64_t t_wait;       /* barrier / ssp wait start */
    int dead;
    int copying;          /* its transfer's CPU (copy_rate) is not done yet */
    int net_done;         /* ... while its pull or push is, which ends when the copy does */
    int *late_ps;         /* traced in detail: ps whose pull_end events wait for the copying */
    int n_late;
    int32_t inc;          /* incarnation: events of an earlier life are ignored */
    int32_t inc_epoch;    /* w->inc_epoch when inc last changed */
    int snap;             /* versions read at the last pull (world snapshot), -1 none */
    double speed;         /* compute-time factor */
    double hold;          /* with cores, a straggler (--straggler worker:IxF): F - 1; its
                           * compute, once its work is done on the cores, holds F - 1 times
                           * as long again off them, as the runtime's straggler sleeps */
    double loss_read;     /* surrogate loss at the parameters read */
    dp_rng rng;           /* per worker, so draws do not depend on event order */
} sim_wk;

typedef struct sim_var {
    sync_acc *acc;        /* sync: global_step's (the others use their ps's, ps_acc) */
    async_var av;         /* async / ssp */
    int64_t step;         /* sync: sync_acc_step(acc), kept here (read at every push) */
    int dim0, dims;       /* surrogate dimensions carried by this variable */
    uint32_t sid;         /* trace string id of the name */
} sim_var;

/* Sync with twins and no ps failures: the ps of a twin class get every push at the same
 * instant (their flows are one group), so their accumulators would move in lockstep.
 * One sync_acc, a lock, holds the class: offered once per worker and round (a delivery
 * batch's run of one cohort), at the first of its ps reached; the others take the
 * recorded verdict. Its gradient is its ps's dims, ps by ps (ps_lock_off), so each
 * element's mean is the same sum in the same order. */
typedef struct sim_lock {
    sync_acc *acc;
    int64_t step;
    int dims;
    int *dim;             /* gradient element j is the grad row's dim[j] */
    float *mean;          /* the last take's */
    int *rel, n_rel;      /* the last take's workers */
    uint64_t *stamp;      /* per cohort member index: the round of its verdict */
    int8_t *st;           /* the offer's result */
    int64_t *cur;         /* the step at the offer */
} sim_lock;

typedef struct sim_cohort {
    int dir;              /* 0 pull, 1 push */
    int n;
    int *members;         /* worker indices, ascending */
    int32_t *incs;
    int cap;              /* room in members and incs */
    int groups_left;      /* ps deliveries not yet handled */
    int link;             /* stand-in NIC link, -1 when none */
} sim_cohort;

/* The runtime's ack statuses (ACK_APPLIED, ACK_ACCUMULATED, ACK_DROPPED), and the
 * RELEASE that ends a sync worker's barrier wait for one variable. */
enum { SIM_ACK_APPLIED = 0, SIM_ACK_ACCUMULATED = 1, SIM_ACK_DROPPED = 2, SIM_RELEASE = 3,
       SIM_ACK_RUN = 4, SIM_RELEASE_SET = 5 };

/* One acknowledgement, or a run of them: consecutive acks to one worker (one
 * incarnation) whose per-variable statuses are not traced are kept as their count and
 * how many of them say ACCUMULATED. Handling a run at once is handling its acks in turn:
 * until the last of them the worker still awaits acks, so nothing else happens. */
typedef struct sim_ack_ent {
    int32_t w, v, inc;    /* worker, variable (-1 for a run), its incarnation when sent */
    int32_t cnt, nacc;    /* SIM_ACK_RUN: acks, of which ACCUMULATED */
    int32_t mult;         /* SIM_RELEASE_SET: RELEASEs to each worker (one per variable) */
    int8_t st;            /* ACK status (runtime/proto.h numbering), SIM_RELEASE, SIM_ACK_RUN
                           * or SIM_RELEASE_SET */
} sim_ack_ent;
/* SIM_RELEASE_SET: the RELEASEs of mult variables (v the first) that took a step
 * together, to each of the released workers, as that many sets of SIM_RELEASE entries
 * (one set per variable, each in ascending worker order): the workers are the batch's pool
 * [nacc, nacc + cnt), or when cnt < 0 every worker but w; inc is the incarnation epoch
 * at sending (a worker whose incarnation changed since, inc_epoch[k] > inc, is skipped). */

typedef struct sim_ack {  /* acknowledgements arriving together */
    int n, cap;
    sim_ack_ent *e;
    int *pool;            /* SIM_RELEASE_SET worker lists */
    int n_pool, cap_pool;
    int floor;            /* entries before it are closed to new acks (see sim_ack_begin) */
    int fold;             /* the run sim_ack_begin let go on (-1 none), and its counts then */
    int32_t fold_cnt, fold_nacc;
    int next_free;
    int nev;              /* engine events this batch stands for (merged batches) */
} sim_ack;

/* The ps's own work (--ps-pull-cost, --ps-push-cost): a message a ps handles, queued
 * in arrival order. Its effects on the ps's state (versions read, offers, applies) are
 * made when it arrives, in that same order, so they are those of the real ps handling the
 * queue in turn; what it sends back (the answer's flow, acks, RELEASEs) leaves when the
 * ps has done its work. */
enum { SIM_JOB_PULL = 0, SIM_JOB_PUSH = 1, SIM_JOB_SEND = 2 };  /* SEND: a pull answer's writing
                                                                 * (--ps-send-bandwidth) */
#define SIM_JOB_ACKS 3
typedef struct sim_ps_job {
    int32_t k, inc;       /* worker, its incarnation when the message came */
    int kind;
    double work_ns;       /* what it takes alone */
    int acks[SIM_JOB_ACKS];  /* push: ack batches to send when done, in order; -1 none */
    evt_record *ev;       /* push: the ps's events about it (APPLY, DROP, GLOBAL_STEP), owned */
    int n_ev;
} sim_ps_job;

typedef struct sim_psq {  /* one ps's queue (a ring); its head is in work while n > 0 */
    sim_ps_job *q;
    int head, n, cap;
} sim_psq;

typedef struct sim_dbatch {  /* deliveries of flows that finished together */
    int n, cap;
    int *c, *p;           /* cohort, ps: in the order their events would have run */
    int next_free;
} sim_dbatch;

typedef struct sim_world {
    const sim_config *cfg;
    int P, W;
    sim_heap heap;
    int64_t now;          /* ns */
    int64_t lat_ns;       /* one way, to a worker (and to a ps unless lat_ps_ns) */
    int64_t lat_ps_ns;    /* one way, to a ps */
    dp_rng rng;
    var_catalog cat;
    int partition;        /* the weights' partition count in effect (--partition, or P
                           * with --model-bytes) */
    int nv, step_var;
    int *ps_first, *ps_vars;  /* CSR: vars on ps p are ps_vars[ps_first[p] .. ps_first[p+1]) */
    int *push_first;      /* per ps: the first of its vars (ps_vars index) a push phase
                           * carries (in sync the step token goes on its own later) */
    /* Sync: the variables a ps receives in a push phase always receive the same pushes
     * together, so their accumulators would move in lockstep; one sync_acc per ps holds
     * them all (gradient = their surrogate dims, concatenated in ps_vars order; the mean
     * of each element is the same sum in the same order). NULL where a ps has none. */
    sim_lock *locks;
    int n_locks;
    int *ps_lock;         /* per ps: its lock, -1 for its own accumulator (ps_acc) */
    int *ps_lock_off;     /* its first gradient element in the lock's */
    uint64_t round;       /* counts delivery runs (see sim_lock) */
    sync_acc **ps_acc;
    int *ps_dims;
    int *ps_dim0, *ps_dim;  /* CSR: ps p's surrogate dims, in order, are ps_dim[ps_dim0[p] ..] */
    float *gbuf;          /* gathering scratch, d floats */
    double *ps_bytes;     /* bytes of the vars on each ps */
    uint8_t *early_var;   /* --pipeline: per variable, 1 when pushed early; NULL: none */
    int n_early;          /* such variables */
    int *ps_early;        /* per ps: how many of its variables are; their bytes */
    double *ps_early_bytes;
    double model_bytes;
    sim_var *vars;
    sim_wk *wk;
    /* Versions read at pulls, shared: a snapshot of every variable's version is taken
     * when a pull arrives after a version changed; workers that read the same state
     * share it (refcounted). Keeps 10,000 workers' reads in cache. */
    int64_t **snap;       /* snapshot i: nv versions, NULL when free */
    int *snap_refs;
    int n_snaps, cap_snaps, cur_snap;
    int *free_snaps;
    int n_free_snaps;
    optim_conf opt;
    /* surrogate */
    int d;
    double *h;
    double *noise_sd;     /* per dim: nqm_noise / sqrt(batch) * sqrt(h) */
    float *theta, *slot, *theta_read, *grad, *mean;  /* theta_read, grad: W x d */
    /* network */
    sim_net *net;
    int *ps_up, *ps_down;
    int twins;            /* ps links of equal shards declared twins (sim_net_twin) */
    /* per direction (0 pull, 1 push), worked out at the first cohort: the ps a phase
     * talks to (co_n), those of them without bytes (delivered after a latency: zero_ps),
     * and with twins the network's plan for the others' flows (-1 none) */
    int plan_ready[2], plan[2], co_n[2], n_zero[2];
    int *zero_ps[2];
    int *co_links;        /* flush scratch, P each: a cohort's ps links, bytes, cookies */
    double *co_bytes;
    int64_t *co_cookies;
    sim_cohort *cohorts;
    int n_cohorts, cap_cohorts;
    int *free_cohorts;
    int n_free_cohorts;
    int *pend[2];         /* workers starting a pull / push at this instant */
    int n_pend[2];
    int *released;        /* scratch for sync takes */
    sim_dbatch *dbs;      /* delivery batches (one engine event, counted as n) */
    int n_dbs, free_db;
    /* acks */
    sim_ack *acks;
    int n_acks, cap_acks, free_ack;
    int32_t inc_epoch;    /* counts incarnation changes (any worker) */
    /* The last ack batch sent (-1 none): a batch sent right after it (no event
     * scheduled in between, same arrival time) joins it, counted as its own event. */
    int open_ack;
    uint64_t open_seq;    /* heap.next_seq just after open_ack was scheduled */
    int64_t open_t;
    /* hosts (--hosts, --cores-per-host): NULL when no host has more workers than cores
     * (compute then ends after its drawn time, as an event of its own). Otherwise a
     * worker's compute is work on its host's shared cores (cpu.h); one SIM_EV_CPU event
     * per host is armed for its next finish (cpu_at, cpu_gen: an event of an older
     * generation is stale and ignored). Only compute is CPU work: the ps's apply and
     * the cost of sending and receiving are not modelled as such. */
    sim_cpu *cpu;
    int *wk_host;         /* per worker: its host (with cpu) */
    int64_t *cpu_at;      /* per host: time of its armed event, INT64_MAX none */
    uint64_t *cpu_gen;
    int *cpu_done;        /* scratch: tasks whose work ended together (ps p is task W + p) */
    int *ps_host;         /* with cpu and psm: per ps, its host */
    /* the ps's own work (psq.c): on when a ps cost is not zero; then no twins (answers
     * from equal shards no longer leave together) and so no locks */
    int psm;
    sim_psq *psq;         /* per ps */
    int holding;          /* ack batches sent now are held for the job (held[0..n_held)), and
                           * the ps's events (hev[0..n_hev)) */
    int held[SIM_JOB_ACKS], n_held;
    evt_record *hev;
    int n_hev, cap_hev;
    int *pp_k, *pp_p, n_pp, cap_pp;  /* pull answers whose flows start at this instant */
    /* ssp */
    ssp_gate *gate;
    int *ssp_wait;        /* workers waiting, their wanted step in ssp_step */
    int64_t *ssp_step;
    int n_ssp_wait;
    /* failures */
    uint8_t *ps_dead;
    sim_event **deferred; /* per ps: deliveries waiting for a restart */
    int *n_deferred, *cap_deferred;
    uint8_t *fail_done;
    /* statistics */
    stale_stats stale;
    int64_t applies, drops, bytes_pulled, bytes_pushed, samples, gs_max;
    int64_t gs_first_ns, gs_last_ns, gs_advances;
    int64_t gs_ahead;     /* sync: advances that found a trainable variable behind */
    uint64_t events;
    /* trace */
    trace_writer *tw;
    int trace_err;
    double loss_scale;    /* a fork: emitted losses times this (1 otherwise) */
    uint64_t trace_events;
    uint8_t *detail;      /* per worker: per-message events */
    int per_msg;          /* a trace with per-message events for some workers */
    int aggregate;        /* sample level: the other workers' phases, one event pair per
                           * phase (pull and push of the whole model: var = none) */
    uint32_t *wk_dev, *ps_dev;
    int n_done;
} sim_world;

/* The runtime's message id (rt_instr_msg_id): ((local step << 16) | var) + 1, the same
 * for a variable's pull and push of one step. */
static inline uint64_t sim_msg_id(const sim_world *w, int k, int v)
{
    return ((uint64_t)w->wk[k].local << 16 | (uint64_t)(v & 0xffff)) + 1;
}

/* The versions worker k read at its last pull. */
static inline const int64_t *sim_read_versions(const sim_world *w, int k)
{
    return w->snap[w->wk[k].snap];
}

/* ---- sim.c: the protocol ---- */
void sim_world_start(sim_world *w);          /* every worker starts its first step */
void sim_world_dispatch(sim_world *w, const sim_event *ev);
void sim_world_flush(sim_world *w);          /* starts the flows of this instant */
void sim_world_net_sync(sim_world *w);       /* network to now, deliveries scheduled */
void sim_world_global_step(sim_world *w, int64_t gs);  /* the global step advanced to gs */
void sim_world_ssp_release(sim_world *w);    /* SSP waiters that may go now, go */
void sim_world_versions_changed(sim_world *w);  /* a variable's version changed */

/* ---- sim.c, for deliver.c ---- */
/* Holds ev, a delivery to ps p, while p is dead (until it restarts); returns 1 when held. */
int sim_world_defer_if_dead(sim_world *w, int p, const sim_event *ev);
/* Worker k, traced in detail, has ps p's answer: its pull_end events for p's variables,
 * now or (while its copying is not done) once it is, as a real worker's. */
void sim_wk_pull_end(sim_world *w, int k, int p);
void sim_wk_pull_done(sim_world *w, int k);      /* every answer is in: compute (or stop) */
void sim_wk_push_progress(sim_world *w, int k);  /* an ack or RELEASE came: push on or end */

/* ---- deliver.c: what arrives ---- */
/* A flow's delivery (SIM_EV_PULL_DELIVER, SIM_EV_PUSH_DELIVER; ev->a the cohort, ev->b
 * the ps): the ps's answers reach the cohort's workers, or their push reaches the ps. */
void sim_deliver(sim_world *w, const sim_event *ev);
void sim_deliver_batch(sim_world *w, const sim_event *ev);  /* SIM_EV_DELIVER_BATCH */
void sim_deliver_early(sim_world *w, const sim_event *ev);  /* SIM_EV_EARLY_ARRIVE */
void sim_deliver_token(sim_world *w, const sim_event *ev);  /* SIM_EV_TOKEN_ARRIVE */
void sim_deliver_acks(sim_world *w, int id);     /* SIM_EV_ACKS: ack batch id at its workers */

/* ---- ack.c: acknowledgement batches ---- */
int sim_ack_new(sim_world *w);               /* an empty batch */
/* cnt acks to worker k, nacc of them ACCUMULATED, joining its run when it is last */
void sim_ack_add_run(sim_world *w, int id, int k, int cnt, int nacc);
/* worker k's ack (status st, not a RELEASE: those go in sets) for variable v (a run unless traced) */
void sim_ack_add(sim_world *w, int id, int k, int v, int st);
/* worker k's acks, all of status st, for ps_vars[j0 .. j1) */
void sim_ack_add_vars(sim_world *w, int id, int k, int j0, int j1, int st);
/* the RELEASEs of mult variables (v the first) to ws[0..n) but skip, or (ws NULL) to
 * every worker but skip */
void sim_ack_add_release_set(sim_world *w, int id, int v, int mult, const int *ws, int n, int skip);
void sim_ack_send(sim_world *w, int id);     /* arrives one latency later; empty: freed */
void sim_ack_send_held(sim_world *w, int id);  /* a batch held for a ps's work (psq.c), now */
/* acks about to be sent together: into the open batch when they may join it (*start:
 * its length then) or a new one (*start = -1); sim_ack_end sends them */
int sim_ack_begin(sim_world *w, int *start);
void sim_ack_end(sim_world *w, int id, int start);

/* ---- ps.c: a ps handling pushes ---- */
/* sync: member i of cohort c pushes ps p's gradients (every variable its push carries) */
void sim_ps_push_sync(sim_world *w, int p, int c, int i, int acks);
/* async / ssp: worker k's push of variable v to ps p; sync: the step token (v = 0) */
void sim_ps_push(sim_world *w, int p, int k, int v, int acks);
void sim_ps_push_step(sim_world *w, int p, int k, int j0, int j1, int skip_early, int acks);
/* member i (worker k) of this round's cohort offered to lock L: the offer's result */
int sim_ps_lock_offer(sim_world *w, sim_lock *L, int i, int k);

/* ---- psq.c: the ps's own work ---- */
void sim_psq_init(sim_world *w);
void sim_psq_release(sim_world *w);
/* worker k's pull requests reach every ps (its versions were read now) */
void sim_psq_pull(sim_world *w, int k);
/* member i of cohort c pushes to ps p (sync: the gradients; async / ssp: every variable) */
void sim_psq_push(sim_world *w, int p, int c, int i);
/* worker k's sync step token reaches ps p */
void sim_psq_token(sim_world *w, int p, int k);
void sim_psq_early(sim_world *w, int p, int k);   /* --pipeline: worker k's early push */
/* starts the flows of the pull answers the ps finished at this instant (sim_world_flush) */
void sim_psq_flush(sim_world *w);
/* ps p finished the job at its queue's head: what it sends leaves now, the next starts */
void sim_psq_done(sim_world *w, int p);

/* ---- sim.c, for psq.c ---- */
void sim_world_cpu_arm(sim_world *w, int h);  /* host h's work changed */

/* flows.c: the network glue */
void sim_flows_sync(sim_world *w);              /* network to now, finished flows delivered */
void sim_flows_start(sim_world *w, int dir);    /* the flows of the cohort that began now */
void sim_flows_cohort_done(sim_world *w, int c);/* one of cohort c's groups is delivered */
/* The first of ps p's variables (an index into ps_vars) that a push phase carries: in
 * sync the step token (variable 0, first on its ps) goes on its own after the gradients. */
static inline int sim_push_first(const sim_world *w, int p) { return w->push_first[p]; }
int sim_world_cohort_new(sim_world *w);       /* an empty cohort's id */

/* ---- emit.c ---- */
int sim_emit_open(sim_world *w, char *err);
int sim_emit_close(sim_world *w, const sim_result *res, char *err);
void sim_emit(sim_world *w, const evt_record *e);
/* A worker event: kind, worker, peer ps (-1), var (-1), step, bytes, dur, value, value2, id */
void sim_emit_wk(sim_world *w, int kind, int wk, int ps, int var, int64_t step, int64_t bytes,
                 int64_t dur, double value, double value2, uint64_t id);
void sim_emit_ps(sim_world *w, int kind, int ps, int wk, int var, int64_t step, double value,
                 uint64_t id);
/* Sample level, for a worker without per-message events: the begin or end of its whole
 * pull or push phase (PULL_/PUSH_BEGIN/END with no variable, bytes = the model's). */
void sim_emit_wk_phase(sim_world *w, int kind, int wk, int64_t step, int64_t dur);

/* Worker k sends or receives bytes: with copy_rate on shared cores, that CPU work on its
 * host (sim.c); its pull or push ends only once it is done. */
void sim_world_copy(sim_world *w, int k, double bytes);

/* ---- nqm.c ---- */
void sim_nqm_init(sim_world *w);
void sim_nqm_release(sim_world *w);
double sim_nqm_loss(const sim_world *w, const float *theta);
/* Gradient of worker wk at the parameters it read, into its grad row. */
void sim_nqm_grad(sim_world *w, int wk);
double sim_draw_compute(sim_world *w, int wk);

#endif
