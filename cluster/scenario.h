/* scenario.h — scenario files: a run described in INI (parsed with inih) whose keys are
 * exactly the run description's key table (cluster/run.h), each in its own section:
 *
 *   [scenario]  title, description, engine = real | local | sim, seed
 *   [cluster] [training] [placement] [network] [faults] [pace]   (see `downpour keys`)
 *   [compare]   vary = KEY: V1, V2, ...   (one or two lines; their product is the
 *               variant set)   label = TEXT (optional: the report's heading)
 *   [lesson]    number = N, duration = 2min (what a class should plan for),
 *               at_step.N = caption shown when the global step reaches N,
 *               pause_at_step = N[, N...] (the lesson runner pauses; space goes on),
 *               ask_at_step.N = question | choice | choice ... | answer (pauses, asks,
 *               reveals the answer, which must be one of the choices, on a key press)
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

#define SCN_MAX_LESSON 32      /* captions, pauses and questions, each */
#define SCN_MAX_CHOICES 6

typedef struct scn_caption { long long step; char text[256]; int line; } scn_caption;
typedef struct scn_question {
    long long step;
    char question[256];
    char choices[SCN_MAX_CHOICES][96];
    int n_choices;
    int answer;                     /* index into choices */
    int line;
} scn_question;

/* The [lesson] section: authored captions, pauses and questions (scenario_lesson_json
 * hands them to the viewer). */
typedef struct scn_lesson {
    int present;
    int number;                     /* 0: none */
    double duration_s;              /* 0: not said */
    scn_caption captions[SCN_MAX_LESSON];
    int n_captions;
    long long pauses[SCN_MAX_LESSON];
    int n_pauses;
    scn_question questions[SCN_MAX_LESSON];
    int n_questions;
} scn_lesson;

typedef struct scenario {
    char path[512];                 /* as given, for messages */
    char name[128];                 /* file name without folder and .ini: out/NAME/ */
    char title[256];
    char description[SCN_VALUE_MAX];
    char label[256];                /* [compare] label, or "" */
    int engine;                     /* RUN_REAL or RUN_SIM */
    int local;                      /* engine = local: the real runtime's `downpour local` */
    scn_entry entries[SCN_MAX_ENTRIES];
    int n_entries;
    scn_vary vary[SCN_MAX_VARY];
    int n_vary;
    scn_lesson lesson;
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

/* The [lesson] section as JSON for the viewer: {"number":5,"captions":[{"step":150,
 * "text":"..."}],"pauses":[150],"questions":[{"step":200,"question":"...","choices":[...],
 * "answer":1}]}, or NULL without one. Caller frees with free(). */
char *scenario_lesson_json(const scenario *s);

/* How many variants [compare] describes (the product of the vary lines; 1 without). */
int scenario_variants(const scenario *s);
/* The label of variant i: "mode=sync" or "mode=async,backup_workers=1" (a folder name). */
void scenario_variant_label(const scenario *s, int variant, char *buf, size_t n);

#endif
