/* sim.h — the discrete-event simulator of a ps/worker cluster (`downpour sim`): the
 * configuration, its unit-aware parsers, the run, and --calibrate-from. The simulator
 * drives the very same cluster/ rules as the real runtime (placement, sync accumulators,
 * async staleness, SSP gate, optimizers) in virtual time, over a flow-level max-min fair
 * network model, per-step compute-time distributions, hosts whose cores the busy tasks
 * share and, optionally, the ps's own work per message, and emits the same events into
 * the same trace files. Learning is simulated on a noisy quadratic surrogate (not the
 * real model). Runs are deterministic for a seed: all state hangs off one world struct.
 * Single-threaded; separate runs are independent. */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/optim.h"
#include "cluster/run.h"
#include "cluster/update.h"
#include "cluster/vars.h"

/* ---- flag values: every parser fills err with a one-line message naming the flag ---- */

/* Compute-time distributions. */
typedef enum sim_dist_kind {
    SIM_DIST_CONSTANT = 0, SIM_DIST_NORMAL, SIM_DIST_LOGNORMAL, SIM_DIST_EXPONENTIAL
} sim_dist_kind;

typedef struct sim_dist {
    sim_dist_kind kind;
    double mean;   /* seconds, > 0 */
    double sd;     /* normal: seconds (draws are truncated at 1% of the mean) */
    double sigma;  /* lognormal: sigma of the underlying normal (mean is the real mean) */
} sim_dist;

/* Parses "constant:mean=100ms", "normal:mean=100ms,sd=10ms",
 * "lognormal:mean=100ms,sigma=0.3", "exponential:mean=100ms". */
int sim_parse_dist(const char *s, sim_dist *d, char *err);
/* Writes the canonical spelling of d into buf. */
void sim_dist_format(const sim_dist *d, char *buf, size_t n);

/* --straggler worker:IxF  ("worker:3x4": worker 3 computes 4 times slower), through the
 * run description's key (cluster/run.h); one straggler. */
int sim_parse_straggler(const char *s, run_straggler *out, char *err);

/* --fail (alias --kill) JOB:I@step=N | JOB:I@time=T [,restart=T]: the run description's
 * fault (cluster/run.h): the task dies when it reaches local step N (worker) / global
 * step N (ps), or at simulated time T; with restart it comes back after that long (a
 * worker re-pulls and carries on; a ps resumes with its state). */
typedef run_fault sim_failure;
int sim_parse_failure(const char *s, sim_failure *out, char *err);

/* --hosts N[,JOB:I[-J]=H,...]: the hosts the tasks run on; the cores of a host
 * (--cores-per-host) are shared by its busy tasks. N = 0 (the default): every task on a
 * host of its own. Otherwise tasks are dealt round-robin over the N hosts, ps first
 * (ps i on host i mod N, worker j on host (P + j) mod N), except those a placement
 * names, the last naming a task winning: "2,worker:0-3=1" puts workers 0..3 on host 1. */
typedef struct sim_host_rule { int job, first, last, host; } sim_host_rule;
#define SIM_MAX_HOST_RULES 64
typedef struct sim_hosts {
    int n;
    sim_host_rule rule[SIM_MAX_HOST_RULES];
    int n_rules;
} sim_hosts;
int sim_parse_hosts(const char *s, sim_hosts *out, char *err);
/* Writes h back in the syntax sim_parse_hosts reads ("2,worker:0-3=1"). */
void sim_hosts_format(const sim_hosts *h, char *buf, size_t n);
/* The host of task `task` of `job` (JOB_PS / JOB_WORKER) in a cluster of n_ps ps, or -1
 * when h->n is 0 (a host of its own). */
int sim_host_of(const sim_hosts *h, int n_ps, int job, int task);

/* --ps-pull-cost / --ps-push-cost T[,BW] | fit: the ps's own work for a message, as a
 * single thread that handles one message at a time in arrival order: T per variable (a
 * fixed cost per message) plus its bytes at BW ("20us,2GB/s"); "0" (the default): no
 * work, the ps answers at once; "fit": what --calibrate-from fits (sim_options_calibrate
 * replaces it; a run needs it replaced). msg_s in seconds, rate in bytes/s (0: bytes cost
 * nothing). */
/* What the simulator does not model, one line for `downpour sim`, `run` and `compare` to
 * print and the summary to carry ("not_modelled"); docs/simulator.md says more. */
#define SIM_NOT_MODELLED "the real model's learning (a noisy quadratic surrogate stands in), TCP " \
    "dynamics, packet latency variance, switch oversubscription, per-variable serialisation in " \
    "a worker-ps flow, the chief's evaluations unless --eval-time, the operating system's " \
    "scheduler (cores are shared equally), the hub's and the kernel's own CPU, the CPU cost " \
    "of sending and receiving unless --copy-bandwidth (a worker's) and --ps-send-bandwidth (a " \
    "ps's pull answers), the ps's own work unless --ps-pull-cost/--ps-push-cost, the early gradients' pushes " \
    "unless --pipeline (async/ssp; in sync they go with the rest, and their bytes always do)"

/* Bytes/s standing for "the transfer costs nothing" (beyond the ps's work, on one host). */
#define SIM_FREE_BW 1e12

typedef struct sim_ps_cost { double msg_s, rate; int fit; } sim_ps_cost;
int sim_parse_ps_cost(const char *s, const char *what, sim_ps_cost *out, char *err);
/* Writes c back in the syntax sim_parse_ps_cost reads ("20us,2000MB/s", "0"). */
void sim_ps_cost_format(const sim_ps_cost *c, char *buf, size_t n);
/* Seconds of the ps's work for msgs messages carrying `bytes` in all. */
double sim_ps_cost_s(const sim_ps_cost *c, int msgs, double bytes);

/* ---- configuration ------------------------------------------------------------------ */

enum sim_trace_level {
    SIM_TRACE_AUTO = 0,   /* full up to 64 workers, else sample */
    SIM_TRACE_FULL,       /* every event of every task */
    SIM_TRACE_SAMPLE,     /* per-message events for trace_sample workers; steps for all */
    SIM_TRACE_STEPS       /* step_end / global_step / failures only */
};
/* Parses "full", "sample", "sample:K", "steps", "auto". */
int sim_parse_trace_level(const char *s, int *level, int *sample, char *err);

#define SIM_MAX_FAILURES 64
#define SIM_PATH_MAX 1024

typedef struct sim_progress {
    int64_t global_step, steps;
    double sim_s;
    uint64_t events;
} sim_progress;

typedef struct sim_config {
    union {
        run_desc run;           /* what the real runtime shares (cluster/run.h) */
        struct { RUN_DESC_FIELDS };
    };
    double model_bytes;     /* > 0: an MLP whose hidden width gives about this many bytes */
    double ps_bw, worker_bw;/* bytes/s of each NIC, both directions */
    double ps_push_bw, worker_push_bw;  /* > 0: the push direction differs (calibration) */
    double latency;         /* seconds, one way, per message */
    double ps_latency;      /* > 0: seconds, one way, of a message to a ps (a worker's wake-up
                             * on a crowded host is in latency, a ps's is not) */
    sim_dist compute;
    double *speed;          /* NULL or n_workers compute-time factors (borrowed) */
    sim_hosts hosts;        /* where the tasks run (--hosts) */
    int cores_per_host;     /* 0: unlimited; else a host's busy tasks share this many cores */
    double copy_rate;       /* bytes/s a worker sends or receives per CPU second on a shared
                             * host (its transfers keep it busy on the cores); 0: free */
    double ps_send_rate;    /* bytes/s a ps writes of a pull answer per CPU second, while the
                             * answer travels (it is busy that long after the pull's work,
                             * before its next message); 0: free */
    double pipeline;        /* async / ssp: the fraction of its compute after which a worker
                             * pushes the gradients finished early (every trainable variable
                             * but the first layer's weights, base_index 0), as the
                             * runtime's pipelined step does; 0: all at the compute's end */
    sim_ps_cost ps_pull_cost, ps_push_cost;  /* the ps's work per pull answer / push (all
                             * zero: none, the ps answers at once, as before the model) */
    int eval_every;         /* the chief evaluates once in each interval of this many global
                             * steps, as the runtime's (0: never) ... */
    double eval_s;          /* ... taking this much work (s) before its step's compute (0:
                             * evaluations not modelled) */
    sim_failure failures[SIM_MAX_FAILURES];
    int n_failures;
    int nqm_dims;           /* surrogate dimension (default 32) */
    double nqm_noise;       /* gradient-noise scale (default 1) */
    char trace[SIM_PATH_MAX];
    int trace_level, trace_sample;
    double max_sim_s;       /* stop after this much simulated time (0: none) */
    int no_shortcuts;       /* tests: no exact shortcuts (twin ps classes, their shared
                             * accumulators, delivery runs); results must not change */
    const char *lesson_json;  /* a lesson's [lesson] as JSON for the trace metadata (borrowed) */
    /* A fork: the run continues another from a global step. Its events are written as
     * that run's continuation: global steps (and sync/ssp local steps, async ones by
     * step_offset / workers) shifted by step_offset, times by time_offset_ns, and the
     * surrogate's losses scaled so the first equals loss_start (> 0). fork_json (borrowed)
     * goes into the metadata's config as "fork". All zero / NULL: not a fork. */
    int64_t step_offset, local_offset, time_offset_ns;
    double loss_start;
    const char *fork_json;
    /* optional progress callback, called about every 2^16 events and at the end */
    void (*progress)(const sim_progress *p, void *ctx);
    void *progress_ctx;
} sim_config;

/* Every key's default for the simulator (cluster/run_keys.c's table): 1 ps, 2 workers, sync,
 * 100 steps, mlp H=128, round-robin, 10 Gbit NICs, 50 us latency, constant:mean=100ms,
 * seed 1, batch 64, sgd lr 0.2, 32 surrogate dims. */
void sim_config_init(sim_config *c);

/* Sets one key from text (a flag or a scenario key; `what` names it in messages): the
 * shared keys through cluster/run.h, the simulator's own here. Returns 0 or DP_EINVAL. */
int sim_config_set(sim_config *c, const char *name, const char *text, const char *what, char *err);

/* Cross-checks (backups < workers, stragglers and failures name existing tasks ...). */
int sim_config_check(const sim_config *c, char *err);

typedef struct sim_result {
    int64_t global_step;
    double sim_s;            /* simulated time at the end */
    double mean_step_s;      /* mean simulated time between global-step advances */
    double first_step_s;     /* simulated time of the first global-step advance */
    double samples_per_s;
    int64_t samples;
    double final_loss;       /* surrogate loss at the final parameters */
    double initial_loss;
    double mean_staleness;
    int64_t max_staleness;
    int64_t dropped;
    int64_t applies;
    int64_t bytes_pulled, bytes_pushed;
    uint64_t sim_events;     /* engine events processed */
    uint64_t trace_events;   /* events written to the trace */
    uint64_t net_solves;     /* max-min recomputations */
    int stalled;             /* the run could not reach --steps (a failure without restart) */
    int timed_out;           /* stopped by --max-sim-time before --steps */
    int64_t min_variable_step, max_variable_step;  /* trainable variables at the end (sync
                             * step or async version); in sync both are the global step */
    int64_t gs_ahead;        /* sync: global-step advances that found a variable behind (0) */
    int n_vars;
    double model_bytes;      /* bytes of all variables */
    int locks;               /* sync: accumulators shared by a twin class of ps (world.h) */
} sim_result;

/* Runs the simulation described by cfg (borrowed for the call). Writes cfg->trace when
 * set. Returns 0 or a dp_err with err filled (bad config, trace write failure). */
int sim_run(const sim_config *cfg, sim_result *res, char *err);

/* ---- calibration ---------------------------------------------------------------------- */

typedef struct sim_calibration {
    int n_ps, n_workers;     /* as seen in the trace (0 if unknown) */
    int mode;                /* update_mode, -1 if unknown */
    sim_dist compute;        /* fitted over every worker's compute spans */
    double *speed;           /* per-worker factor (worker mean / overall mean), owned */
    int n_speed;
    double bandwidth;        /* bytes/s, fitted on pulls */
    double push_bandwidth;   /* bytes/s, fitted on pushes (includes the ps's apply) */
    double latency;          /* seconds, one way */
    /* The ps's own work, fitted from the spacing of its answers while it had a queue
     * (ps_pull_cost, ps_push_cost; zero when the trace shows none), and the network fitted
     * with that work taken out of the phases (ps_bandwidth, ps_push_bandwidth, ps_latency:
     * what goes with the costs; bandwidth, push_bandwidth and latency above fold it in). */
    sim_ps_cost ps_pull_cost, ps_push_cost;
    double ps_bandwidth, ps_push_bandwidth, ps_latency;
    double ps_msg_latency;   /* seconds, one way, a message to a ps (the acks' 10th
                              * percentile), 0 when no acks were matched */
    int64_t ps_samples[2];   /* gaps between answers (pulls, pushes) the costs were fitted on */
    int cpu_measured;        /* every worker said its CPU (task_stop) and its spans' work */
    double copy_rate;        /* bytes a worker sends or receives per CPU second (0: not said,
                              * or nothing beyond the work to measure) */
    double ps_send_rate;     /* bytes of pull answers a ps writes per CPU second: the answers'
                              * bytes over the ps's CPU (task_stop) beyond its fitted work (0:
                              * not said by every ps, or none beyond) */
    sim_dist ps_compute;     /* compute, with cores de-rated counting the ps's busy spans too */
    run_straggler stragglers[RUN_MAX_STRAGGLERS];  /* the metadata's (--straggler): their
                              * sleep is taken out of the compute's work, and the simulation
                              * sleeps them again */
    int n_stragglers;
    double pipeline;         /* the mean fraction of its compute span at which a push began
                             * inside it (a pipelined runtime's early gradients), 0 none */
    double *ps_speed;        /* its per-worker factors (n_speed), owned */
    double eval_s;           /* the chief's evaluations' mean duration (the final one's too),
                              * 0 when the trace has none */
    int eval_every;          /* the metadata's --eval-every; when it does not say, the step of
                              * the first evaluation before the last step; -1: neither */
    double model_bytes;      /* bytes pulled per worker step */
    double mean_step_s;      /* measured on the trace (global-step advances) */
    int64_t compute_spans, transfers;
    char model[16];          /* "mlp"/"softmax" from the metadata, "" if unknown */
    sim_hosts hosts;         /* the metadata's hosts and task placement (n 0: not said) */
    int cores;               /* the metadata's cores per host (the least of its hosts), 0 if
                              * unknown; compute is fitted as the work it would take alone */
    int hidden, partition, batch, steps;
    /* sim_calibrate_until: where the fit stopped */
    int64_t until_step;      /* the global step reached (<= the limit) */
    int64_t until_ns;        /* trace time when it was first reached */
    double until_loss;       /* mean step_end loss of the last step of each worker, or NaN */
} sim_calibration;

/* Reads a trace (real or simulated) and fits the compute distribution, per-worker speed
 * factors, effective bandwidth and latency; the metadata's hosts and cores, when it says
 * them, are kept and the compute fitted as the work a step takes alone on them.
 * Release with sim_calibration_release(). */
int sim_calibrate(const char *trace_path, sim_calibration *cal, char *err);
/* The same fit from the part of the trace up to the moment the global step first reached
 * max_step (what happened afterwards is not read), for a fork from that moment. */
int sim_calibrate_until(const char *trace_path, int64_t max_step, sim_calibration *cal, char *err);
void sim_calibration_release(sim_calibration *cal);

/* ---- `downpour sim`'s options: the configuration plus where the results go ----------- */

typedef struct sim_options {
    sim_config c;
    char summary[SIM_PATH_MAX];     /* also write the summary line here */
    char calibrate[SIM_PATH_MAX];   /* --calibrate-from */
    int quiet;
    unsigned char seen[128];        /* seen[i]: key i of run_keys() was given */
} sim_options;

/* Defaults for every key. */
void sim_options_init(sim_options *o);
/* Parses `downpour sim`'s argv (argv[0] the command). Returns 0, 1 for --help, or
 * DP_EINVAL with a message naming the flag. */
int sim_options_parse(sim_options *o, int argc, char **argv, char *err);
/* Sets one key from text, remembering that it was given (scenario files). */
int sim_options_set(sim_options *o, const char *name, const char *text, const char *what, char *err);
/* Fills what the user did not give from a calibration (explicit keys win). The options
 * borrow cal's speeds until cal is released. */
void sim_options_calibrate(sim_options *o, const sim_calibration *cal);
/* The summary JSON line (no newline): DESIGN.md's keys plus the simulator's. Caller frees. */
char *sim_summary_line(const sim_config *c, const sim_result *r, double wall_s);

/* A progress bar on stderr for sim_config.progress (only when tty is set): "sim [####....]
 * 40%  step 40/100 ...". `prefix` (default "sim") starts the line. */
typedef struct sim_bar { int tty; double last; uint64_t t0; const char *prefix; } sim_bar;
void sim_bar_init(sim_bar *b, int tty);
void sim_bar_progress(const sim_progress *p, void *ctx);

#endif
