/* config.h — the training configuration shared by `downpour cluster` and `downpour task`
 * (every task of a cluster gets the same flags, as in TensorFlow's trainers), with a
 * table-driven flag parser, a usage text, and the argv the launcher passes to its tasks.
 * Pure data; no I/O besides formatting. */
#ifndef RUNTIME_CONFIG_H
#define RUNTIME_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "cluster/optim.h"
#include "cluster/update.h"
#include "cluster/vars.h"

#define RT_PATH_MAX 1024

typedef struct rt_config {
    int n_ps, n_workers;            /* cluster only: --ps, --workers */
    update_mode mode;
    int backup_workers;
    int staleness;
    long long steps;
    int batch;
    double lr;
    opt_kind optimizer;
    model_kind model;
    int hidden;
    char data[RT_PATH_MAX];         /* directory or "synthetic" */
    placement_kind placement;
    long long seed;
    int partition;
    int eval_every;
    char trace[RT_PATH_MAX];
    char hub[RT_PATH_MAX];
    int view;
    int log_placement;
    char checkpoint_dir[RT_PATH_MAX];
    char summary[RT_PATH_MAX];
    int connect_timeout;            /* seconds a worker waits for its ps */
    int log_every;                  /* worker progress line every N local steps */
    int synthetic_n;                /* samples in the synthetic training set */
    char slow_worker[64];           /* "I:F": worker I computes F times slower */
    double pace_s;                  /* every worker step takes at least this long (0: off) */
    int quiet;
} rt_config;

/* Defaults: 1 ps, 2 workers, sync, 1000 steps, batch 64, lr 0.05, sgd, mlp H=128, the
 * Debian Fashion-MNIST directory, round-robin, seed 1, no partitioning, eval every 500. */
void rt_config_init(rt_config *c);

/* Flag scope: which command a flag belongs to. */
enum { RT_FLAG_TRAIN = 1, RT_FLAG_CLUSTER = 2 };

/* Applies one flag (name without leading dashes, value may be NULL for booleans).
 * Returns 1 when handled, 0 when the name is not a flag of `scope`, or DP_EINVAL with
 * "--lr: \"abc\" is not a number" style messages in err. */
int rt_config_flag(rt_config *c, int scope, const char *name, const char *value, char *err);

/* 1 when the flag takes no value (--view, --log-device-placement, --quiet). */
int rt_config_flag_is_bool(const char *name);

/* Cross-checks after parsing (backup workers < workers, staleness with ssp, ...).
 * Returns 0 or DP_EINVAL with a message. */
int rt_config_check(const rt_config *c, char *err);

/* Prints the flag table for `scope` as help text. */
void rt_config_usage(FILE *f, int scope);

/* Appends "--name=value" strings for every training flag to argv (which has room for
 * RT_CONFIG_MAX_ARGS more entries, each malloc'd: the caller frees). Returns the count. */
#define RT_CONFIG_MAX_ARGS 40
int rt_config_to_argv(const rt_config *c, char **argv);

/* A hash of the settings every task of one cluster must agree on. */
uint64_t rt_config_hash(const rt_config *c);

/* Parses --slow-worker into worker index and factor; *index = -1 when unset. */
int rt_config_slow_worker(const rt_config *c, int *index, double *factor);

/* The common loop over argv for a subcommand: splits "--name=value" / "--name value",
 * hands training and cluster flags to rt_config_flag, and other flags to `extra`
 * (which returns 1 handled, 0 unknown, <0 error). Positional arguments are an error.
 * Returns 0, 1 when --help was asked, or DP_EINVAL with a message naming the flag. */
typedef int (*rt_extra_flag_fn)(void *ctx, const char *name, const char *value, char *err);
int rt_parse_args(rt_config *c, int scope, int argc, char **argv, rt_extra_flag_fn extra,
                  void *ctx, const char *const *extra_bool, char *err);

#endif
