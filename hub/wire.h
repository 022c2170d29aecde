/* wire.h — the live stream's vocabulary: the NET_PROTO_STREAM frame types (net/frame.h
 * is the frame format, net/conn.c the connection; docs/wire.md is the prose twin) and
 * the codecs of their payloads: string definitions and event batches. No state, no
 * threads: every function works on what it is given. */
#ifndef HUB_WIRE_H
#define HUB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "events/event.h"
#include "net/frame.h"

#define EVT_WIRE_MAX_PAYLOAD (4u << 20)       /* 4 MiB: strings and events frames */
#define EVT_WIRE_MAX_BATCH 4096               /* records per EVENTS frame we send */

/* Frame types (ERROR and the handshake are net/'s: NET_T_*). Direction: T = task
 * emitter, H = hub, S = subscriber. The header's id / arg0 / arg1 are unused (0). */
enum evt_wire_type {
    EVT_F_ERROR = NET_T_ERROR, /* H->any  UTF-8 reason; the hub closes after it */
    EVT_F_HELLO_TASK = NET_T_FIRST, /* T->H {u32 job, i32 task, u32 pid}: a task's first frame */
    EVT_F_HELLO_SUB,       /* S->H  {u32 flags (0)}: first frame of a subscriber */
    EVT_F_PROBE,           /* H->T  {u64 seq, i64 hub_ns}: clock probe */
    EVT_F_PROBE_REPLY,     /* T->H  {u64 seq, i64 hub_ns (echoed), i64 task_ns} */
    EVT_F_READY,           /* H->T  {i64 offset_ns, i64 rtt_ns}: sync done, send events */
    EVT_F_STRINGS,         /* T->H, H->S  repeated {u32 id, u32 len, len bytes} */
    EVT_F_EVENTS,          /* T->H, H->S  {u32 count} + count evt_encode records */
    EVT_F_WELCOME,         /* H->S  {i64 hub_t0_ns}: subscription accepted, state follows */
    EVT_F_STATE_END,       /* H->S  {}: initial state complete, live stream follows */
    EVT_F_DROPPED,         /* H->S  {u64 n}: events the hub dropped for this subscriber */
    EVT_F_RESUME,          /* T->H  {u64 acked, u32 copies, u64 incarnation}: right after
                            * READY, before any event: the task's events 1..acked were
                            * acknowledged by an earlier connection, the next sequenced
                            * event is acked+1, and the first `copies` records that follow
                            * are re-sent definition copies (not sequenced; nor is any
                            * events_dropped record) */
    EVT_F_ACK,             /* H->T  {u64 seq}: cumulative: the task's events 1..seq are
                            * recorded (trace written and flushed) or, with no trace, merged
                            * and fanned out; the task may forget them */
    EVT_F_TYPE_COUNT
};

/* The protocol's table (net_frame_decode checks every header against it). */
extern const net_proto evt_wire_proto;

/* "probe", "events", ...; "?" otherwise. */
const char *evt_wire_type_name(int type);

/* Appends a whole frame of `type` with (payload, n) to b. */
void evt_wire_put(dp_buf *b, int type, const void *payload, size_t n);

/* Appends STRINGS frames defining ids first..last of t (split to stay under the
 * payload bound). */
void evt_wire_put_strings(dp_buf *b, const evt_strtab *t, uint32_t first, uint32_t last);

/* Calls fn(ctx, id, s, len) for each definition in a STRINGS payload; s is
 * NUL-terminated scratch (borrowed during the call). Returns 0, DP_EPROTO on a
 * malformed payload or embedded NUL (err filled), or the first non-zero fn result. */
int evt_wire_each_string(const uint8_t *p, size_t n,
                         int (*fn)(void *ctx, uint32_t id, const char *s, size_t len),
                         void *ctx, char *err);

/* Appends one EVENTS frame carrying recs[0..n) (n <= EVT_WIRE_MAX_BATCH); times are
 * delta-coded from 0 within the frame. */
void evt_wire_put_events(dp_buf *b, const evt_record *recs, size_t n);

/* Decodes an EVENTS payload, appending to the growable array (*out, *count, *cap;
 * caller frees *out with free()). The count is bounded by the payload size before any
 * allocation. Returns the number decoded, or DP_EPROTO (err filled) when the payload
 * is malformed, a record has an unknown kind, or bytes are left over. */
int evt_wire_get_events(const uint8_t *p, size_t n, evt_record **out, size_t *count,
                        size_t *cap, char *err);

#endif
