/* scenario.h — scenario files: a run described in INI (parsed with inih) whose keys are
 * exactly the run description's key table (cluster/run.h), each in its own section:
 *
 *   [scenario]  title, description, engine = real | sim, seed
 *   [cluster] [training] [placement] [network] [faults] [pace]   (see `downpour keys`)
 *   [compare]   vary = KEY: V1, V2, ...   (one or two lines; their product is the
 *               variant set)   label = TEXT (optional: the report's heading)
 *
 * Every key is checked with the same checks as the flags; every error names the file
 * and line: `x.ini:7: unknown key "wokers" in [cluster] (did you mean "workers"?); valid
 * keys: ps, workers, compute`. Parsing takes the file's text (the caller reads it), so
 * this module does no I/O. Lines continue on the next line when it starts with blanks. */
#ifndef CLUSTER_SCENARIO_H
#define CLUSTER_SCENARIO_H

#include <stddef.h>

#include "cluster/run.h"

#define SCN_MAX_ENTRIES 96
#define SCN_MAX_VARY 2
#define SCN_MAX_VALUES 16
#define SCN_VALUE_MAX 1024

typedef struct scn_entry {
    const run_key *key;
    char value[SCN_VALUE_MAX];
    int line;
} scn_entry;

typedef struct scn_vary {
    const run_key *key;
    char values[SCN_MAX_VALUES][128];
    int n_values;
    int line;
} scn_vary;

typedef struct scenario {
    char path[512];                 /* as given, for messages */
    char name[128];                 /* file name without folder and .ini: out/NAME/ */
    char title[256];
    char description[SCN_VALUE_MAX];
    char label[256];                /* [compare] label, or "" */
    int engine;                     /* RUN_REAL or RUN_SIM */
    scn_entry entries[SCN_MAX_ENTRIES];
    int n_entries;
    scn_vary vary[SCN_MAX_VARY];
    int n_vary;
} scenario;

/* Parses `text` (the contents of `path`) into s. Returns 0, or DP_EINVAL with one line
 * "path:line: ..." in err (the first error in the file). */
int scenario_parse(scenario *s, const char *path, const char *text, char *err);

/* Applies the scenario's keys for `engine` through `set` (rt_config_set, or a wrapper of
 * sim_options_set), in file order, each named "path:line: key" in messages; keys the
 * engine does not use (a real scenario scaled in the simulator) are skipped, and their
 * names are written, comma-separated, to `skipped` (n bytes; may be NULL). Then the
 * variant `variant` (0 .. scenario_variants - 1) of [compare], when there is one.
 * Returns 0 or DP_EINVAL. */
typedef int (*scn_set_fn)(void *ctx, const char *key, const char *value, const char *what, char *err);
int scenario_apply(const scenario *s, int engine, int variant, scn_set_fn set, void *ctx,
                   char *skipped, size_t n, char *err);

/* The line of key `name` (either spelling) in the file or its vary lines; 0 when absent. */
int scenario_key_line(const scenario *s, const char *name);

/* How many variants [compare] describes (the product of the vary lines; 1 without). */
int scenario_variants(const scenario *s);
/* The label of variant i: "mode=sync" or "mode=async,backup_workers=1" (a folder name). */
void scenario_variant_label(const scenario *s, int variant, char *buf, size_t n);

#endif
