/* config.h — the real runtime's configuration: the shared run description (cluster/run.h,
 * whose key table is the flags of `downpour cluster` and `downpour task`) plus the
 * runtime's own extras (data, checkpoints, where events go). Every task of a cluster gets
 * the same flags, as in TensorFlow's trainers; the launcher passes them on through
 * rt_config_to_argv. Pure data; no I/O besides formatting. */
#ifndef RUNTIME_CONFIG_H
#define RUNTIME_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "cluster/run.h"
#include "runtime/netns.h"

#define RT_PATH_MAX 1024

typedef struct rt_config {
    union {
        run_desc run;               /* what the simulator shares (cluster/run.h) */
        struct { RUN_DESC_FIELDS };
    };
    char data[RT_PATH_MAX];         /* directory or "synthetic" */
    int eval_every;
    char trace[RT_PATH_MAX];
    char hub[RT_PATH_MAX];
    int view;
    int log_placement;
    char checkpoint_dir[RT_PATH_MAX];
    int save_ckpt_steps;            /* --save-checkpoint-steps: every N global steps (0: off) */
    int save_ckpt_secs;             /* --save-checkpoint-secs: every S seconds (0: off) */
    char summary[RT_PATH_MAX];
    int connect_timeout;            /* seconds a worker waits for its ps */
    char secret_file[RT_PATH_MAX];  /* --secret-file: the run's secret (net/auth.h); the
                                     * tasks get it through $DOWNPOUR_SECRET, not argv */
    double barrier_timeout_s;       /* sync: a step waiting this long for a replica stops
                                     * the run (0: never) */
    run_fault faults[RUN_MAX_FAULTS]; /* `cluster --fail/--kill`: the launcher injects them */
    int n_faults;
    int netns;                      /* `cluster --netns`: every task in its own network
                                     * namespace (runtime/netns.h); --net implies it */
    netns_shape nets[NETNS_MAX_SHAPES]; /* `cluster --net`: a task's link shaped */
    int n_nets;
    int log_every;                  /* worker progress line every N local steps */
    int synthetic_n;                /* samples in the synthetic training set */
    int quiet;
    int prefetch;                   /* --prefetch: async workers pull step s+1 during step s */
    int transport;                  /* --transport: RT_TRANSPORT_* (net_conn_opts.shm) */
    /* devices (runtime/device.h) */
    int strategy;                   /* local: RT_STRATEGY_* */
    int cpu_devices;                /* local: virtual CPU devices */
    char worker_devices[32];        /* "cpu:N" or "gpu:N" as given */
    int worker_dev_gpu, worker_dev_n;
    char device_for[RT_PATH_MAX];   /* --device-for rules, ';'-separated, each checked */
    int allow_soft;                 /* --allow-soft-placement */
    const char *lesson_json;        /* a lesson's [lesson] as JSON, for the trace metadata
                                     * (borrowed; NULL: none) */
    unsigned char given[128];       /* given[i]: key i of run_keys() was on the command line */
} rt_config;

/* Every key's default for the real runtime (cluster/run_keys.c's table): 1 ps, 2 workers,
 * sync, 1000 steps, batch 64, lr 0.05, sgd, mlp H=128, the Debian Fashion-MNIST
 * directory, round-robin, seed 1, no partitioning, eval every 500. */
void rt_config_init(rt_config *c);

/* Which command's flags: `cluster` (all), `task` (the training flags) or `local`. */
enum { RT_FLAG_TRAIN = 1, RT_FLAG_CLUSTER = 2, RT_FLAG_LOCAL = 4 };

/* `--transport`, in the key's order. */
enum { RT_TRANSPORT_TCP = 0, RT_TRANSPORT_SHM = 1 };

/* `local --strategy`, in the key's order. */
enum { RT_STRATEGY_SINGLE = 0, RT_STRATEGY_TOWERS = 1, RT_STRATEGY_SPLIT = 2 };

/* Sets one key from text (a flag or a scenario key; `what` names it in messages).
 * Returns 0 or DP_EINVAL. */
int rt_config_set(rt_config *c, const char *name, const char *text, const char *what, char *err);

/* Cross-checks after parsing (backup workers < workers, stragglers exist, ...).
 * Returns 0 or DP_EINVAL with a message. */
int rt_config_check(const rt_config *c, char *err);

/* The command line's check that --save-checkpoint-steps and --save-checkpoint-secs have
 * a --checkpoint-dir to save into (run and compare give a scenario's variants one of
 * their own after rt_config_check, so it is not part of that). 0 or DP_EINVAL. */
int rt_config_check_saves(const rt_config *c, char *err);

/* Warns, a line each, of flags given on the command line that this run will not read
 * (--staleness without ssp, --barrier-timeout without sync, --hidden with softmax,
 * --synthetic-samples with real data). Not errors: a scenario sets one value for variants
 * of several modes. cmd names the command in the lines. */
void rt_config_warn_unread(const rt_config *c, const char *cmd);

/* --secret-file: puts the file's secret in $DOWNPOUR_SECRET (net/auth.h), where every
 * connection of this process and of the tasks it starts finds it. Without the flag,
 * checks the secrets the environment gives ($DOWNPOUR_SECRET, $DOWNPOUR_HUB_SECRET).
 * Call once, before any thread starts. Returns 0 or a dp_err naming the file or the
 * variable. */
int rt_config_apply_secret(const rt_config *c, char *err);

/* Prints the flags of `scope` as help text (from the key table). */
void rt_config_usage(FILE *f, int scope);

/* Appends "--name=value" strings for every training flag to argv (which has room for
 * RT_CONFIG_MAX_ARGS more entries, each malloc'd: the caller frees). Returns the count. */
#define RT_CONFIG_MAX_ARGS 48
int rt_config_to_argv(const rt_config *c, char **argv);

/* A hash of the settings every task of one cluster must agree on. */
uint64_t rt_config_hash(const rt_config *c);

/* The compute-time factor of worker `index` (1 unless it is a straggler). */
double rt_config_straggler_factor(const rt_config *c, int index);

/* The common loop over argv for a subcommand: the key table's flags for `scope`, and
 * the command's own flags (not in the table) handed to `extra` (which returns 1 handled,
 * 0 unknown, <0 error; every such flag takes a value). Positional arguments are an
 * error. Returns 0, 1 when --help was asked, or DP_EINVAL with a message naming the flag. */
typedef int (*rt_extra_flag_fn)(void *ctx, const char *name, const char *value, char *err);
int rt_parse_args(rt_config *c, int scope, int argc, char **argv, rt_extra_flag_fn extra,
                  void *ctx, char *err);

#endif
