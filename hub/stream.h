/* stream.h — the hub's two clients: the per-task emitter (a bounded buffer drained by an
 * instrumentation thread running its own libev loop, batching events to the hub; it never
 * blocks the caller: when full, events are dropped and counted) and the subscriber
 * (viewers and test clients). Both are net_conn connections (net/conn.h) speaking the
 * stream protocol of hub/wire.h (docs/stream-protocol.md): encoded records and string
 * definitions, every length from a peer bounded before allocation. The emitter is in
 * emitter.c, the subscriber in sub.c, the hub itself in hub.h. */
#ifndef HUB_STREAM_H
#define HUB_STREAM_H

#include <stdint.h>

#include "events/event.h"

typedef struct evt_emitter evt_emitter;

/* Connects (in the background, retrying with backoff) to the hub at "host:port" as
 * task (job, task), authenticating with the secret of $DOWNPOUR_HUB_SECRET /
 * $DOWNPOUR_SECRET when one is set (net/auth.h; NULL with err when it is too short). capacity = events buffered before dropping (e.g. 65536).
 * Returns NULL with err filled on a bad address. Free with evt_emitter_free(), which
 * flushes for at most ~1 s and stops the thread. */
evt_emitter *evt_emitter_new(const char *hub_addr, int job, int task, int capacity, char *err);
void evt_emitter_free(evt_emitter *em);

/* Interns s for this emitter (thread-safe); 0 when em is NULL. */
uint32_t evt_emitter_intern(evt_emitter *em, const char *s);

/* Queues e (copied), stamping e->t with this task's clock when e->t == 0. Never blocks
 * on I/O; thread-safe; a no-op when em is NULL. Returns 1 queued, 0 dropped. */
int evt_emit(evt_emitter *em, const evt_record *e);

/* Events queued so far / dropped so far (0 for NULL). Queued events are numbered 1, 2,
 * ... in queue order; a queued event is kept until a hub acknowledges it (recorded to
 * its trace), and re-sent to the next hub if the connection breaks first, so the only
 * events lost are the dropped ones (buffer full: counted, reported to the hub as
 * events_dropped) and those still unacknowledged when the emitter is freed (logged). */
uint64_t evt_emitter_sent(const evt_emitter *em);
uint64_t evt_emitter_dropped(const evt_emitter *em);
/* Queued events not yet acknowledged by a hub (0 for NULL). Thread-safe. */
uint64_t evt_emitter_unacked(const evt_emitter *em);

/* The emitter's clock, ns (monotonic + an injected skew for tests). */
int64_t evt_emitter_now(const evt_emitter *em);
/* Test hook: adds skew_ns to this emitter's clock (so the hub's offset estimate can be
 * checked). Thread-safe; when already connected, the emitter reconnects so that the
 * hub estimates the offset again. */
void evt_emitter_set_skew(evt_emitter *em, int64_t skew_ns);

/* 1 while the emitter holds a synchronised connection to the hub (handshake and clock
 * probes done, events flowing), else 0 (also for NULL). Thread-safe. */
int evt_emitter_connected(const evt_emitter *em);
/* Waits up to timeout_ms for evt_emitter_connected(); returns 1 connected, 0 not.
 * For tests and launchers; training code never needs it. */
int evt_emitter_wait_connected(const evt_emitter *em, int timeout_ms);

/* ---- subscriber client (viewers, tests) -----------------------------------------
 * One connection to the hub's subscription side. After connecting, the hub first
 * sends the state needed to draw (all string definitions, the cluster / task / device
 * / variable / placement events so far and the latest global step), then the live,
 * time-ordered stream. Records carry string ids of the hub's table, resolved with
 * evt_sub_string(). Not thread-safe: use one evt_sub from one thread. The socket is
 * non-blocking: either poll evt_sub_fd() in your own loop and call evt_sub_pump(s, 0,
 * ...) when readable, or use the blocking-with-timeout evt_sub_read(). */
typedef struct evt_sub evt_sub;

/* Connects to the hub at "host:port" within timeout_ms and subscribes; with a secret
 * ($DOWNPOUR_HUB_SECRET / $DOWNPOUR_SECRET: the run's secret or the hub's viewer token)
 * it authenticates first, blocking up to timeout_ms for the hub's answers. Returns NULL
 * with err filled on failure (a refusal says why). Close with evt_sub_close(). */
evt_sub *evt_sub_connect(const char *hub_addr, int timeout_ms, char *err);
void evt_sub_close(evt_sub *s);

/* The socket, for readiness polling in another loop (read interest only). */
int evt_sub_fd(const evt_sub *s);

/* Waits up to timeout_ms (0 = do not wait, -1 = forever) for data, then reads all that
 * is available and decodes it. Returns the number of records newly queued (>= 0),
 * DP_ECLOSED when the hub closed the stream, or DP_EPROTO / DP_EIO with err filled. */
int evt_sub_pump(evt_sub *s, int timeout_ms, char *err);

/* Pops the next queued record into *e: 1, or 0 when none is queued. */
int evt_sub_next(evt_sub *s, evt_record *e);

/* Next record, waiting up to timeout_ms: 1 got one, 0 timed out, or a negative dp_err
 * (DP_ECLOSED at the end of the stream, once every queued record has been read). */
int evt_sub_read(evt_sub *s, evt_record *e, int timeout_ms, char *err);

/* String for a hub id ("" unknown); borrowed until evt_sub_close(). */
const char *evt_sub_string(const evt_sub *s, uint32_t id);
/* The hub's string table as received so far; borrowed until evt_sub_close(). */
const evt_strtab *evt_sub_strings(const evt_sub *s);

/* 1 once the initial state has been received (the first evt_sub_state_count() records
 * popped are that state; everything after is live). */
int evt_sub_synced(const evt_sub *s);
uint64_t evt_sub_state_count(const evt_sub *s);
/* The hub's clock origin (its monotonic ns at trace start), from the welcome frame. */
int64_t evt_sub_hub_t0(const evt_sub *s);
/* Events the hub has dropped for this subscriber because it read too slowly, as last
 * reported by the hub (cumulative). */
uint64_t evt_sub_dropped(const evt_sub *s);

#endif
