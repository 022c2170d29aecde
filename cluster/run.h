/* run.h — one description of a run, shared by the real runtime and the simulator, and
 * the one key table that drives everything said about a run: the flags of `cluster`,
 * `task` and `sim`, their --help text, the keys of scenario files (and the INI section
 * each belongs to), the checks and their messages, and the common part of the summary
 * JSON. A key's name is spelt with underscores in scenario files and with dashes as a
 * flag (backup_workers, --backup-workers). Engines embed `run_desc` and keep only their
 * own extras (the runtime's data path and checkpoints; the simulator's network and
 * compute model); a key that is an extra is applied by that engine's callback, after the
 * table has checked its type and range. Pure: no I/O, no clock, no global state. */
#ifndef CLUSTER_RUN_H
#define CLUSTER_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster/optim.h"
#include "cluster/update.h"
#include "cluster/vars.h"

/* The engines, as a mask (a key names the engines that use it). */
enum run_engine { RUN_REAL = 1, RUN_SIM = 2, RUN_BOTH = 3 };

/* The commands whose flags a key is (as a mask). */
enum run_cmd { RUN_CMD_CLUSTER = 1, RUN_CMD_TASK = 2, RUN_CMD_SIM = 4, RUN_CMD_LOCAL = 8 };

typedef struct run_straggler { int worker; double factor; } run_straggler;
#define RUN_MAX_STRAGGLERS 64

/* A fault to inject, the same for both engines (`--fail`, alias `--kill`; the key
 * "fail" in [faults]): JOB:I@step=N | JOB:I@time=T (also @t=T) [,restart=T]. A worker
 * dies when it reaches local step N, a ps when the global step reaches N, or either at
 * T after the start; with restart it comes back that long after its death. */
typedef struct run_fault {
    int job;            /* JOB_PS or JOB_WORKER (cluster/spec.h) */
    int task;
    int64_t at_step;    /* -1 when by time */
    double at_s;        /* -1 when by step */
    double restart_s;   /* -1: never */
} run_fault;
#define RUN_MAX_FAULTS 64

/* Parses one fault; `what` names the flag or key in messages ("--kill"). Returns 0, or
 * DP_EINVAL with a one-line message naming `what`, the text and the syntax. */
int run_fault_parse(const char *s, const char *what, run_fault *out, char *err);
/* Writes f back in the syntax run_fault_parse reads ("worker:1@step=200,restart=2s"). */
void run_fault_format(const run_fault *f, char *buf, size_t n);

/* What both engines share. Embedded by the engines' configs through RUN_DESC_FIELDS in an
 * anonymous union with a run_desc (so `cfg->n_ps` and `&cfg->run` both work). */
#define RUN_DESC_FIELDS                                                                     \
    int n_ps, n_workers;                                                                    \
    update_mode mode;                                                                       \
    int backup_workers;     /* sync: replicas_to_aggregate = workers - backup_workers */    \
    int staleness;          /* ssp bound */                                                 \
    int64_t steps;          /* until the global step reaches this */                        \
    int batch;                                                                              \
    double lr;                                                                              \
    opt_kind optimizer;                                                                     \
    model_kind model;                                                                       \
    int hidden;                                                                             \
    placement_kind placement;                                                               \
    int partition;          /* 0: automatic (sim: one part per ps with model_bytes) */      \
    uint64_t seed;                                                                          \
    run_straggler stragglers[RUN_MAX_STRAGGLERS];                                           \
    int n_stragglers;                                                                       \
    double pace_s;          /* every worker step takes at least this (real; 0: off) */

typedef struct run_desc { RUN_DESC_FIELDS } run_desc;

/* Value types of keys. */
typedef enum run_type {
    RUN_T_INT,        /* integer within [min, max] */
    RUN_T_REAL,       /* number within [min, max] (min exclusive when min_open) */
    RUN_T_ENUM,       /* one of `choices` ("sync|async|ssp") */
    RUN_T_TIME,       /* "200ms" (common/units.h), seconds within [min, max] */
    RUN_T_BYTES,      /* "100MB" */
    RUN_T_BANDWIDTH,  /* "10Gbit" */
    RUN_T_STRAGGLER,  /* "worker:IxF", a comma-separated list; repeatable as a flag */
    RUN_T_TEXT,       /* free text (a path, an address, a distribution the engine checks) */
    RUN_T_BOOL        /* a flag without value; true/false in files */
} run_type;

typedef struct run_key {
    const char *name;      /* scenario-file spelling: "backup_workers" */
    const char *section;   /* INI section ("cluster", ...), NULL: a flag only */
    run_type type;
    const char *arg;       /* metavariable in --help: "N", "T", "M" */
    const char *def;       /* default as text (NULL: none / off) */
    const char *def_sim;   /* the simulator's default when it differs (NULL: same) */
    double min, max;
    int min_open;          /* RUN_T_REAL: min itself is refused */
    const char *choices;   /* RUN_T_ENUM */
    int cmds;              /* RUN_CMD_* mask: the commands that take it as a flag */
    int repeatable;        /* as a flag, may be given more than once */
    const char *alias;     /* an older flag spelling still accepted (or NULL) */
    const char *help;      /* one line */
} run_key;

/* The table, in the order --help and `downpour keys` print it. */
const run_key *run_keys(size_t *n);
/* The key named `name` (either spelling: "backup_workers" or "backup-workers"; aliases
 * too), or NULL. */
const run_key *run_key_find(const char *name);
/* Whether key `name` is marked in seen (n bytes, indexed by the key's place in
 * run_keys(), as run_parse_argv marks what it was given). */
int run_key_seen(const unsigned char *seen, size_t n, const char *name);
/* The engines that use a key (RUN_REAL | RUN_SIM), from its commands. */
int run_key_engines(const run_key *k);
/* The key's default for `engine` (RUN_REAL or RUN_SIM) as text, or NULL. */
const char *run_key_default(const run_key *k, int engine);
/* Writes the flag spelling of k ("--backup-workers") into buf. */
void run_key_flag(const run_key *k, char *buf, size_t n);
/* The valid key whose name is nearest to `name` (within dp_suggest_edits), restricted to
 * keys of `section` when it is not NULL; NULL when none is near. */
const run_key *run_key_suggest(const char *name, const char *section);
/* The INI sections, NULL-terminated, in order. */
extern const char *const run_sections[];

/* A value parsed and checked against its key. */
typedef struct run_value {
    long long i;                /* INT, ENUM (index into choices), BOOL */
    double d;                   /* REAL, TIME (s), BYTES, BANDWIDTH (bytes/s) */
    const char *text;           /* the text as given (borrowed) */
    run_straggler st[RUN_MAX_STRAGGLERS];
    int n_st;                   /* STRAGGLER; "none" gives 0 and clears the list */
} run_value;

/* Parses `text` as a value of k; `what` names the input in messages ("--lr" or
 * "workers"). Returns 0, or DP_EINVAL with a one-line message in err. */
int run_value_parse(const run_key *k, const char *text, const char *what, run_value *out, char *err);

/* An engine's extras: applies a parsed value of a key that is not part of run_desc.
 * Returns 0, 1 when the key is not one of this engine's (a caller error), or DP_EINVAL
 * with a message naming `what`. run_parse_argv also calls it with k == NULL for a flag
 * that is not in the table (a command's own, such as `task`'s --job_name: v->text is its
 * value, `what` its name without dashes); it returns 1 when that flag is unknown too. */
typedef int (*run_extra_fn)(void *ctx, const run_key *k, const run_value *v, const char *what,
                            char *err);

/* Sets one key on d (shared keys) or through extra (the engine's keys) from text.
 * `engine` is RUN_REAL or RUN_SIM: a key the engine does not use is an error
 * ("--compute: not used by the real runtime"). Returns 0 or DP_EINVAL. */
int run_set(run_desc *d, int engine, run_extra_fn extra, void *ctx, const char *name,
            const char *text, const char *what, char *err);

/* Fills d (and the extras) with every key's default for `engine`. */
void run_defaults(run_desc *d, int engine, run_extra_fn extra, void *ctx);

/* Checks across keys (backup workers < workers, backups only with sync, stragglers name
 * existing workers, ...). Messages name the flag. Returns 0 or DP_EINVAL. */
int run_check(const run_desc *d, char *err);

/* Parses a command's argv (argv[0] is the command's name): "--name=value", "--name
 * value", booleans without value. Keys that are not the command's are refused with
 * "unknown flag". Returns 0, 1 when --help was asked, or DP_EINVAL with a message.
 * `seen`, when not NULL, gets the names (table order index) of the keys given: seen[i]
 * is set to 1 for key i (the caller sizes it with run_keys). */
int run_parse_argv(run_desc *d, int cmd, run_extra_fn extra, void *ctx, int argc, char **argv,
                   unsigned char *seen, char *err);

/* Prints the flags of `cmd` as --help lines, with defaults for that command's engine and
 * aliases noted. */
void run_usage(FILE *f, int cmd);

/* Prints the key table: key, INI section, defaults, range, engines, help (`downpour keys`). */
void run_print_keys(FILE *f);
/* The same table as a JSON array of objects (name, flag, section, type, default,
 * default_sim, min, max, choices, engines, commands, alias, help), for tools and tests. */
void run_print_keys_json(FILE *f);

/* Formats the value of a shared key of d as text a parser reads back ("200ms" as
 * "0.2s"); returns 0, or 1 when k is not a shared key. */
int run_format(const run_desc *d, const run_key *k, char *buf, size_t n);

/* Every shared key of d under its table name ("backup_workers": 1, "mode": "sync",
 * "pace": 0.2 seconds, "straggler": "worker:3x4"), and "engine": the common part of a
 * trace's metadata ("config") for every engine. jansson's json_t as void *; caller frees
 * with json_decref. */
void *run_desc_json(const run_desc *d, const char *engine);

/* What every engine reports at the end of a run (the common part of the summary). */
typedef struct run_result {
    const char *engine;              /* "real", "local", "sim" */
    int64_t global_step;
    double wall_s, mean_step_s, samples_per_s;
    double final_loss;               /* NaN: none */
    double test_accuracy;            /* NaN: none (the simulator) */
    double mean_staleness;
    int64_t max_staleness, dropped_gradients, min_variable_step;
    int64_t bytes_pulled, bytes_pushed;
    uint64_t events, events_dropped;
    const char *trace;               /* NULL: none */
} run_result;

/* The summary JSON object (jansson's json_t, returned as void * so this header needs no
 * jansson): DESIGN.md's keys from d and r, in one order for every engine. The engine adds
 * its extras to it. Caller frees with json_decref. */
void *run_summary_json(const run_desc *d, const run_result *r);
/* Prints the summary as one JSON line on stdout and, when path is not empty, writes the
 * same line to path (a failure is logged as `who`: "--summary PATH: why"); frees it. */
void run_summary_emit(void *summary, const char *path, const char *who);

#endif
