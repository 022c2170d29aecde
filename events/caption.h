/* caption.h — captions: one short line of plain words for what a run is doing, derived
 * from its events by rules ("step 149: 2 of 4 workers wait at the barrier — sync needs 3
 * gradients (replicas_to_aggregate = 3)"), for the viewer's caption bar and its history.
 * Pure: no I/O, no clock. A captioner is fed a run's events in time order and keeps the
 * last `capacity` captions; older ones are dropped and counted, never silently lost.
 * Invariants: at most one caption per rule per global step; captions are kept in the
 * order they were made, with non-decreasing time and global step; a rule's importance is
 * its place in evt_caption_rule (lower = more interesting), and evt_captioner_at() shows,
 * of the latest step's captions at time t, the most interesting one.
 * Seeking: a replay either feeds the whole trace once into a captioner large enough for
 * it (at most EVT_CAPTION_RULE_COUNT captions a global step) and asks evt_captioner_at()
 * for any t, or, with a bounded history, calls evt_captioner_reset() and feeds the events
 * up to t again (one pass, O(1) per event) when t is older than the oldest kept caption.
 * Threading: one captioner belongs to one thread; separate captioners are independent. */
#ifndef EVENTS_CAPTION_H
#define EVENTS_CAPTION_H

#include <stddef.h>
#include <stdint.h>

#include "events/event.h"

/* The rules, most interesting first (the order is the importance). */
typedef enum evt_caption_rule {
    EVT_CAPTION_FAILURE = 0,   /* "worker 2 fails: simulated failure (--fail)" */
    EVT_CAPTION_RECOVERY,      /* "worker 2 recovers after 3.0 s down" */
    EVT_CAPTION_TIMEOUT,       /* "worker 0 gives up waiting 3.0 s for worker 1 at step 20: ..." */
    EVT_CAPTION_DROP,          /* "worker 3's gradient for step 105 arrived at step 149: dropped as stale" */
    EVT_CAPTION_STALENESS,     /* "worker 1 read hidden/weights at v57 and pushed at v60: staleness 3" */
    EVT_CAPTION_EVAL,          /* "the chief evaluates at global step 300: accuracy 0.84" */
    EVT_CAPTION_CHECKPOINT,    /* "the chief saves a checkpoint at global step 300: model.ckpt-300" */
    EVT_CAPTION_STRAGGLER,     /* "worker 3 is the slowest: its steps take 4x the others'" */
    EVT_CAPTION_SSP_WAIT,      /* "worker 0 waits: it is 4 steps ahead of the slowest (staleness bound 3)" */
    EVT_CAPTION_BARRIER,       /* "step 149: 2 of 4 workers wait at the barrier — ..." */
    EVT_CAPTION_FIRST_STEP,    /* "global step 1: every variable has taken its first update" */
    EVT_CAPTION_CLUSTER,       /* "1 ps and 4 workers start in sync mode: ..." / "training stops ..." */
    EVT_CAPTION_PACE,          /* "worker 1 waits out the pace: 200 ms a step" */
    EVT_CAPTION_RECONNECT,     /* "worker 0 lost ps 1 at global step 35: it reconnects, ..." */
    EVT_CAPTION_OVERLAP,       /* "worker 0 pushes softmax/biases while it still computes: ..." */
    EVT_CAPTION_RULE_COUNT
} evt_caption_rule;

/* "failure", "recovery", "drop", "staleness", "eval", "checkpoint", "straggler",
 * "ssp_wait", "barrier", "first_step", "cluster", "pace"; "unknown" out of range. */
const char *evt_caption_rule_name(int rule);

#define EVT_CAPTION_TEXT 192        /* bytes of a caption's text, NUL included */
#define EVT_CAPTION_HISTORY 256     /* captions kept when new() is given capacity 0 */
/* Straggler rule: a window closes after this many COMPUTE_ENDs per worker seen in it (on
 * average); the slowest worker is named when its mean compute time is at least
 * EVT_CAPTION_STRAGGLER_RATIO times the mean of the others' means. */
#define EVT_CAPTION_STRAGGLER_STEPS 8
#define EVT_CAPTION_STRAGGLER_RATIO 2.0

/* One caption. */
typedef struct evt_caption {
    int64_t t;                     /* time of the event that made it, ns (raised to the
                                    * previous caption's when an event comes slightly late) */
    int64_t step;                  /* the global step it belongs to (the rate-limit key) */
    int rule;                      /* evt_caption_rule */
    char text[EVT_CAPTION_TEXT];   /* UTF-8, NUL-terminated, cut to fit */
} evt_caption;

/* Resolves a string id of the run's string table ("" for unknown ids). */
typedef const char *(*evt_caption_str_fn)(const void *ctx, uint32_t id);
/* Ready-made resolvers: ctx is a const evt_strtab * / a const trace_reader *. */
const char *evt_caption_strtab_str(const void *strtab, uint32_t id);
const char *evt_caption_trace_str(const void *reader, uint32_t id);

typedef struct evt_captioner evt_captioner;

/* A captioner for one run. metadata_json is the trace's metadata (trace_reader_metadata,
 * or the viewer source's): mode, workers, backup_workers, staleness, ps and pace are read
 * from its top level or its "config" object (the simulator's); it is parsed here and not
 * kept; NULL or unparsable JSON leaves them unknown, and CLUSTER_START's config JSON fills
 * what the metadata lacks. str/ctx resolve variable names, paths and failure reasons;
 * both are borrowed until evt_captioner_free() (str may be NULL: names read ""). capacity
 * is the number of captions kept (0: EVT_CAPTION_HISTORY). Free with evt_captioner_free(). */
evt_captioner *evt_captioner_new(const char *metadata_json, evt_caption_str_fn str,
                                 const void *ctx, size_t capacity);
/* NULL is a no-op. */
void evt_captioner_free(evt_captioner *c);
/* Back to the state of new(): no captions, nothing seen, counters zero, the metadata's
 * settings kept. For rebuilding from the start of a trace. */
void evt_captioner_reset(evt_captioner *c);

/* Feeds one event (read, not kept), in time order; one a little late is captioned at the
 * previous caption's time. Returns 1 when it made a caption, else 0. */
int evt_captioner_add(evt_captioner *c, const evt_record *e);

/* Captions kept, at most the capacity. */
size_t evt_captioner_count(const evt_captioner *c);
/* The i-th kept caption, 0 = the oldest kept; NULL when i >= count. Borrowed until the
 * next add/reset/free. */
const evt_caption *evt_captioner_get(const evt_captioner *c, size_t i);
/* Captions dropped from the front of the history to keep it within the capacity. */
uint64_t evt_captioner_dropped(const evt_captioner *c);
/* Captions made by a rule since new()/reset(), kept or dropped (0 out of range). */
uint64_t evt_captioner_emitted(const evt_captioner *c, int rule);

/* The caption to show at time t: of the kept captions made at or before t, those of the
 * latest global step among them, and of those the most interesting (lowest rule; the
 * later of equals). NULL when no kept caption is that old — none yet, or t precedes the
 * history (evt_captioner_dropped() > 0: rebuild, see the top of this file). O(log n).
 * Borrowed until the next add/reset/free. */
const evt_caption *evt_captioner_at(const evt_captioner *c, int64_t t);

#endif
