/* launcher_internal.h — the launcher's state, shared by launcher.c (children, pipes,
 * signals, the summary) and launcher_faults.c (--fail / --kill: injection, restarts, the
 * run going on without a task). Not for other modules: runtime/launcher.h is the API. */
#ifndef RUNTIME_LAUNCHER_INTERNAL_H
#define RUNTIME_LAUNCHER_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include <ev.h>
#include <jansson.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "hub/hub.h"
#include "runtime/config.h"
#include "runtime/instr.h"

typedef struct child {
    struct launcher *l;
    pid_t pid;
    dp_job job;
    int index;
    int viewer;              /* the --view window: its exit never fails the run */
    char name[64];
    ev_child cw;
    ev_io out_w;
    int out_fd;
    int listen_fd;           /* a ps: its listening socket, bound here and handed down */
    char line[4096];
    size_t line_len;
    json_t *stats;           /* last JSON line it printed */
    int exited, status;
    char **argv;             /* what it was started with (owned), for a restart */
    int fault;               /* 1 + the --fail that killed it, 0: none */
    int restarts;
    int restart_pending;
    int64_t local_step;      /* from its "@progress" lines */
    int joined;              /* said "@joined" (every ps answered) since its last start */
    int moot;                /* restarted as training ended, stopped by us: no failure */
    ev_timer restart_w;
} child;

/* A --fail at a time: its timer. */
typedef struct fault_timer {
    struct launcher *l;
    int index;
    ev_timer w;
} fault_timer;

typedef struct launcher {
    struct ev_loop *loop;
    const rt_config *cfg;
    child *kids;
    int n_kids;
    int alive, open_pipes;   /* tasks (not the viewer) still running / pipes still open */
    child *viewer;           /* the --view window, or NULL */
    int told_viewer;
    int summary_done;
    int finished;            /* every task has exited */
    uint64_t t0;
    uint64_t irq0;           /* the host's irq and softirq ns at t0 (dp_host_irq_ns) */
    int irq_known;
    double irq_s;            /* the host's irq and softirq CPU seconds in the run, -1 unknown */
    double wall_s;
    int workers_left;
    int stopping;            /* we are killing the rest */
    int interrupted;
    char failure[DP_ERRLEN];
    ev_signal sigint_w, sigterm_w;
    ev_timer grace_w;
    struct netns_net *nn;    /* --netns: the tasks' namespaces (runtime/netns.h), or NULL */
    evt_hub *hub;            /* our own hub, with --trace */
    rt_instr *in;            /* the launcher's own events (cluster start/stop, failures) */
    uint64_t events, events_dropped;
    /* --fail / --kill */
    fault_timer *fault_w;    /* one per fault (used by the ones at a time) */
    uint8_t *fault_fired;
    int64_t gs_seen;         /* the highest global step a worker reported */
    int restarts_pending;
    int faults_injected, tasks_restarted, workers_lost;
    int training_over;          /* the chief or a ps exited cleanly: no more restarts */
    int chief_lost;             /* worker 0 lost without restart: no evaluation, no checkpoint */
} launcher;

/* launcher.c */
/* Signals every task and the viewer. */
void launcher_kill_all(launcher *l, int sig);
/* Ends the loop (or waits for the viewer) once no task runs and no pipe is open. */
void launcher_maybe_done(launcher *l);
/* One worker fewer to wait for; the last one starts the ps tasks' grace. */
void launcher_worker_gone(launcher *l);
/* Forks and execs argv as child c, its stdout a pipe the loop reads. */
int launcher_spawn(launcher *l, child *c, char **argv, char *err);

/* launcher_faults.c */
/* A --fail at a time: the timer's callback. */
void launcher_on_fault_time(struct ev_loop *loop, ev_timer *w, int revents);
/* A worker's "@progress LOCAL GLOBAL" line (text after "@progress "). */
void launcher_fault_progress(launcher *l, child *c, const char *text);
/* Restarts still pending are dropped once every other worker is done. */
void launcher_cancel_restarts(launcher *l);
/* A ps is done: a restarted worker that has not joined yet would wait for it in vain. */
void launcher_stop_unjoined(launcher *l);
/* The chief or a ps has finished: no restart is made from now on (launcher.c). */
void launcher_training_over(launcher *l);
/* c died of a --fail: an event, then a restart, the run going on without it, or (a ps
 * that is not restarted) the run's end. Returns 1 when the run goes on. */
int launcher_fault_death(launcher *l, child *c);

#endif
