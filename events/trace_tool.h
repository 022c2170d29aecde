/* trace_tool.h — looking inside a recorded trace, as `downpour trace info|validate|export`
 * does: replay it into a state and summarise it (text, or one JSON object), check every
 * block, write it as Chrome trace-event JSON. Each call opens the trace, does its work,
 * closes it, and describes what it read in a trace_tool_report (events, blocks,
 * duration, the reader's damage line), so the caller decides how to warn about damage.
 * Results go to the caller's stream; failures return a dp_err with err filled.
 * No state between calls; calls on different traces may run on different threads. */
#ifndef EVENTS_TRACE_TOOL_H
#define EVENTS_TRACE_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/dp.h"
#include "events/state.h"

/* Room for any trace_reader_damage() line (the first problem in DP_ERRLEN bytes plus
 * " (and N more problems)"). */
#define TRACE_TOOL_DAMAGE_LEN (DP_ERRLEN + 64)

/* What a trace_tool_* call read. Embedded by the caller; every call zeroes it first, and
 * leaves it zeroed when the trace could not be opened. */
typedef struct trace_tool_report {
    uint64_t events;        /* events in the readable part (trace_reader_count) */
    size_t blocks;          /* readable blocks */
    double duration_s;      /* last event time minus first, 0 for an empty trace */
    char damage[TRACE_TOOL_DAMAGE_LEN];  /* "" when intact, else trace_reader_damage() */
} trace_tool_report;

struct trace_reader;
struct json_t;

/* Writes o on out as one line of compact ASCII JSON and releases it (the --json output
 * of every trace tool): 0, or DP_ERR with err filled when it cannot be formatted. */
int trace_tool_json_line(FILE *out, struct json_t *o, char *err);

/* Fills rep (when not NULL) from an open reader: what it read, its duration, damage. */
void trace_tool_report_fill(const struct trace_reader *r, trace_tool_report *rep);

/* Summarises the trace at path on out: with json, one line holding one JSON object
 * {"file", "metadata", "duration_s", "events", "dropped", "counts": {kind: n, ...},
 * "blocks", "ps", "workers", "global_step", "damage"} (counts keyed by evt_kind_name,
 * plus "unknown" when there are such events); without, the text summary (trace, metadata,
 * duration, events, dropped, cluster, damage when damaged, non-zero counts per kind). A
 * damaged trace is summarised from its readable part and still returns 0 (rep->damage
 * says what is wrong). Returns 0, or a dp_err with err filled: the trace is unreadable
 * ("PATH: reason") or the JSON could not be formatted. path and out are borrowed for
 * the call; rep may be NULL. */
int trace_tool_info(FILE *out, const char *path, int json, trace_tool_report *rep, char *err);

/* Reads and decodes every block of the trace at path (header, checksums, compression,
 * every record, the index). Intact: prints "PATH: ok, N events in B blocks, D.DDD s" on
 * out and returns 0. Damaged: prints nothing and returns DP_ECORRUPT with "PATH: DAMAGE"
 * in err (the reader's damage line, or "read error"); unreadable: a dp_err with the
 * reader's "PATH: reason". path and out are borrowed for the call; rep may be NULL. */
int trace_tool_validate(FILE *out, const char *path, trace_tool_report *rep, char *err);

/* Writes the trace at path as Chrome / Perfetto trace-event JSON (events/chrome.h) to
 * out_path, "-" for standard output. Damaged blocks are skipped; rep->damage says so.
 * Returns 0, or a dp_err with err filled: the trace is unreadable (rep stays zeroed) or
 * the output could not be written (rep describes the trace), or out_path is the input
 * file itself, by any path (same device and inode): DP_EINVAL, "output OUT is the input
 * trace PATH: refusing to overwrite it", and the trace is left untouched. Borrows its
 * strings for the call; rep may be NULL. */
int trace_tool_export_chrome(const char *path, const char *out_path, trace_tool_report *rep,
                             char *err);

/* Writes the trace's caption track on out: the lines a viewer's caption bar shows over
 * the run (events/caption.h rules, fed the whole trace) and the lesson's authored
 * captions (the metadata's "lesson": {"captions": [{"step", "text"}]}), merged in
 * global-step order, an authored caption before the rule captions of its step. Text: one
 * line each, "  12.345 s  step 149  barrier     TEXT" (time since the first event; an
 * authored caption shows the time its step was reached, "-" when the run never got
 * there, and the rule "lesson"). JSON: one line, {"file", "captions": [{"t_s", "step",
 * "rule", "text"}], "lesson_captions", "rule_captions", "unreached"} (t_s null when
 * unreached). Damaged traces are captioned from their readable part (rep->damage says
 * so). Returns 0 or a dp_err with err filled. */
int trace_tool_captions(FILE *out, const char *path, int json, trace_tool_report *rep, char *err);

/* Where each worker's time went (`downpour trace stats`): from its first event until it
 * stopped (or the trace ends), the time in each phase as evt_state derives it (one phase
 * at a time, by its precedence: a push during a compute counts as computing), its steps
 * and its time per step; the slowest worker by step, and the one computing the largest
 * share of its time, against the median; in sync, the worker whose gradients came last
 * at the most global steps (the one the barrier waited for, with no backup workers). Text: a table, one
 * row per worker (the 8 slowest when there are more than 32) and an "all" row, phases
 * no worker spent time in left out. JSON: one line, {"file", "engine", "mode", "ps",
 * "workers", "global_step", "duration_s", "per_worker": [{"task", "steps", "time_s",
 * "mean_step_s", "phase_s": {phase: s}}], "slowest": {"task", "mean_step_s",
 * "median_step_s"} and "most_computing": {"task", "computing_share",
 * "median_computing_share"} (null with fewer than 2 workers that stepped),
 * "last_to_push": {"task", "steps", "of"} (sync: the worker whose gradients came last, in
 * how many of the global steps any came; null otherwise), "damage"}.
 * Returns 0 or a dp_err with err filled. */
int trace_tool_stats(FILE *out, const char *path, int json, trace_tool_report *rep, char *err);

/* The phases a worker's time is split into (trace stats, compare's report), in their
 * tables' order: computing, pulling, pushing, barrier, ssp_blocked, paced, idle, dead.
 * STOPPED is not one: a worker's time ends when it stops. */
enum { TRACE_TOOL_PHASES = 8 };
extern const int trace_tool_phase_order[TRACE_TOOL_PHASES];

/* A phase's column heading: evt_phase_name's, "ssp wait" for EVT_PHASE_SSP. */
const char *trace_tool_phase_label(int phase);

/* Replaces each control character of s (a string from a file, for a terminal) by '?'. */
void trace_tool_printable(char *s);

/* trace_tool_stats' figures for all of a run's workers together, for a report. */
typedef struct trace_tool_phases {
    int workers;                        /* workers with events */
    double time_s;                      /* their time until they stopped, summed */
    double phase_s[EVT_PHASE_COUNT];    /* of it, in each phase (STOPPED: 0) */
    int most_computing;                 /* the worker computing the largest share of its
                                         * time; -1 with fewer than 2 that stepped */
    double most_computing_share, median_computing_share;
    int last_to_push;                   /* sync: the worker whose gradients came last at
                                         * the most global steps; -1 otherwise */
    int64_t last_to_push_steps, push_steps;   /* at how many of how many steps */
} trace_tool_phases;

/* Reads the trace at path into *p. Returns 0 or a dp_err with err filled. */
int trace_tool_phases_read(const char *path, trace_tool_phases *p, char *err);

#endif
