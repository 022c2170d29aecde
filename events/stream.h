/* stream.h — the live event stream: the per-task emitter (a bounded buffer drained by an
 * instrumentation thread running its own libev loop, batching events to the hub; it never
 * blocks the caller: when full, events are dropped and counted) and the hub's subscriber
 * client (viewers and test clients). Wire format: framed messages (magic, version, type,
 * length) carrying encoded records and string definitions; every length from a peer is
 * bounded before allocation. */
#ifndef EVENTS_STREAM_H
#define EVENTS_STREAM_H

#include <stdint.h>

#include "events/event.h"

typedef struct evt_emitter evt_emitter;

/* Connects (in the background, retrying with backoff) to the hub at "host:port" as
 * task (job, task). capacity = events buffered before dropping (e.g. 65536).
 * Returns NULL with err filled on a bad address. Free with evt_emitter_free(), which
 * flushes for at most ~1 s and stops the thread. */
evt_emitter *evt_emitter_new(const char *hub_addr, int job, int task, int capacity, char *err);
void evt_emitter_free(evt_emitter *em);

/* Interns s for this emitter (thread-safe); 0 when em is NULL. */
uint32_t evt_emitter_intern(evt_emitter *em, const char *s);

/* Queues e (copied), stamping e->t with this task's clock when e->t == 0. Never blocks
 * on I/O; thread-safe; a no-op when em is NULL. Returns 1 queued, 0 dropped. */
int evt_emit(evt_emitter *em, const evt_record *e);

/* Events queued so far / dropped so far (0 for NULL). */
uint64_t evt_emitter_sent(const evt_emitter *em);
uint64_t evt_emitter_dropped(const evt_emitter *em);

/* The emitter's clock, ns (monotonic + an injected skew for tests). */
int64_t evt_emitter_now(const evt_emitter *em);
/* Test hook: adds skew_ns to this emitter's clock (so the hub's offset estimate can be
 * checked). */
void evt_emitter_set_skew(evt_emitter *em, int64_t skew_ns);

#endif
