/* lab.h — scenario files put to work: check them, run one with the engine it names (or
 * another), and compare its variants in a report. The lab sits above the engines: it
 * builds a real runtime configuration (runtime/) or a simulator one (sim/) from a
 * scenario (cluster/scenario.h), runs it, and draws what came out with the viewer's code
 * (viz/). Runs are one after another, never concurrent: they would compete for cores.
 * Single-threaded; progress goes to stderr, summaries to stdout. */
#ifndef LAB_LAB_H
#define LAB_LAB_H

#include <stdio.h>

#include "cluster/scenario.h"

#define LAB_MAX_SETS 32

typedef struct lab_options {
    const char *out_dir;            /* NULL: out/NAME/ */
    const char *sets[LAB_MAX_SETS]; /* "KEY=VALUE" overrides, applied after the file */
    int n_sets;
    int engine;                     /* RUN_REAL or RUN_SIM; 0: the scenario's */
    int no_view;                    /* never open a window */
    int quiz;                       /* print the lesson's questions before the run, the
                                     * answers after it */
    const char *self;               /* the downpour binary (the real runtime execs it) */
} lab_options;

void lab_options_init(lab_options *o);

/* Reads and parses a scenario file. Returns 0 or DP_EINVAL / DP_EIO with "path:line: ..."
 * in err. */
int lab_load(scenario *s, const char *path, char *err);

/* Checks a scenario file without running it: parsing, every key and every variant's
 * configuration with the engine's own checks. Returns 0 or DP_EINVAL with the message. */
int lab_check(const char *path, char *err);

/* `downpour run FILE`: runs the scenario (its first variant when it has [compare]) and
 * writes DIR/trace.dptrace, DIR/summary.json and DIR/sheet.png; prints the summary line
 * on stdout. With a display and without no_view the real runtime opens the live viewer,
 * and a simulated run opens the replay. Returns 0, or a dp_err with err. */
int lab_run(const char *path, const lab_options *o, char *err);

/* `downpour compare FILE`: runs every variant, one after another, into
 * DIR/variants/LABEL/{trace.dptrace,summary.json}, then writes DIR/report.md,
 * DIR/summary.csv and the report's plots (each with a .csv of its points). */
int lab_compare(const char *path, const lab_options *o, char *err);

/* "Fork from here": continues the recorded run `trace` from global step at_step in the
 * simulator, with o's --set keys changed (calibrated from the trace up to that step; the
 * changed keys win), into out_trace: events from global step at_step + 1, on the
 * recorded run's clock, metadata "fork": {"from", "at_step", "set"}. Prints the fork's
 * summary line. Returns 0 or a dp_err with err. */
#include <stdint.h>
int lab_fork(const char *trace, int64_t at_step, const lab_options *o, const char *out_trace, char *err);

/* `downpour lessons`: lists the lessons in dir (scenarios/lessons), in file order, one
 * line each: number, title, duration, the command that runs it. Returns 0, or a dp_err
 * when dir has no lesson or a lesson does not parse (it is listed with its error). */
int lab_lessons(FILE *out, const char *dir, char *err);

#endif
