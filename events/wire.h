/* wire.h — the live stream's wire format, in one place (docs/stream-protocol.md is its
 * prose twin). Every message is a frame: a 12-byte header {magic u32, version u16,
 * type u16, length u32}, all little-endian, then `length` payload bytes, length at most
 * EVT_WIRE_MAX_PAYLOAD (checked before anything is allocated). Also the small shared
 * plumbing of the emitter, hub and subscriber: a growable byte buffer with a read
 * offset, frame building and parsing, string-definition and event-batch payloads, and
 * "host:port" parsing. No state, no threads: every function works on what it is given. */
#ifndef EVENTS_WIRE_H
#define EVENTS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "events/event.h"

#define EVT_WIRE_MAGIC 0x56455044u            /* bytes "DPEV" on the wire */
#define EVT_WIRE_VERSION 1
#define EVT_WIRE_HEADER 12
#define EVT_WIRE_MAX_PAYLOAD (4u << 20)       /* 4 MiB */
#define EVT_WIRE_MAX_BATCH 4096               /* records per EVENTS frame we send */

/* Frame types. Direction: T = task emitter, H = hub, S = subscriber. */
enum evt_wire_type {
    EVT_F_HELLO_TASK = 1,  /* T->H  {u32 job, i32 task, u32 pid}: first frame of a task */
    EVT_F_HELLO_SUB = 2,   /* S->H  {u32 flags (0)}: first frame of a subscriber */
    EVT_F_PROBE = 3,       /* H->T  {u64 seq, i64 hub_ns}: clock probe */
    EVT_F_PROBE_REPLY = 4, /* T->H  {u64 seq, i64 hub_ns (echoed), i64 task_ns} */
    EVT_F_READY = 5,       /* H->T  {i64 offset_ns, i64 rtt_ns}: sync done, send events */
    EVT_F_STRINGS = 6,     /* T->H, H->S  repeated {u32 id, u32 len, len bytes} */
    EVT_F_EVENTS = 7,      /* T->H, H->S  {u32 count} + count evt_encode records */
    EVT_F_WELCOME = 8,     /* H->S  {i64 hub_t0_ns}: subscription accepted, state follows */
    EVT_F_STATE_END = 9,   /* H->S  {}: initial state complete, live stream follows */
    EVT_F_DROPPED = 10,    /* H->S  {u64 n}: events the hub dropped for this subscriber */
    EVT_F_ERROR = 11,      /* H->any  UTF-8 reason; the hub closes after it */
    EVT_F_RESUME = 12,     /* T->H  {u64 acked, u32 copies}: right after READY, before any
                            * event: the task's events 1..acked were acknowledged by an
                            * earlier connection, the next sequenced event is acked+1, and
                            * the first `copies` records that follow are re-sent definition
                            * copies (not sequenced; nor is any events_dropped record) */
    EVT_F_ACK = 13,        /* H->T  {u64 seq}: cumulative: the task's events 1..seq are
                            * recorded (trace written and flushed) or, with no trace, merged
                            * and fanned out; the task may forget them */
    /* The handshake (net/auth.h), first when the hub has a secret: before HELLO_TASK
     * or HELLO_SUB. Every payload is exactly EVT_AUTH_BYTES. */
    EVT_F_AUTH_HELLO = 14,     /* T,S->H {32-byte nonce of the client} */
    EVT_F_AUTH_CHALLENGE = 15, /* H->T,S {32-byte nonce of the hub} */
    EVT_F_AUTH_PROOF = 16,     /* T,S->H {32-byte proof of the client}; HELLO_* follows */
    EVT_F_AUTH_OK = 17,        /* H->T,S {32-byte proof of the hub}: checked by the client */
    EVT_F_TYPE_MAX = 17
};
#define EVT_AUTH_BYTES 32

/* A parsed frame header. */
typedef struct evt_wire_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
} evt_wire_header;

/* "probe", "events", ...; "unknown" otherwise. */
const char *evt_wire_type_name(int type);

/* ---- little-endian helpers ------------------------------------------------------ */
static inline void evt_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void evt_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void evt_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t evt_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t evt_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t evt_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* ---- byte buffer: data[off, len) is unread/unsent. Embedded by value. ----------- */
typedef struct evt_buf {
    uint8_t *data;
    size_t len, cap, off;
} evt_buf;

void evt_buf_release(evt_buf *b);                     /* frees data; b reusable */
static inline size_t evt_buf_pending(const evt_buf *b) { return b->len - b->off; }
/* Makes room for n more bytes at data + len (compacting consumed bytes first);
 * returns the write pointer. */
uint8_t *evt_buf_reserve(evt_buf *b, size_t n);
void evt_buf_append(evt_buf *b, const void *p, size_t n);
/* Marks n pending bytes consumed; resets to empty when all are. */
void evt_buf_consume(evt_buf *b, size_t n);

/* Starts a frame of `type` at the end of b; returns its position for _end. */
size_t evt_frame_begin(evt_buf *b, int type);
/* Patches the length of the frame started at pos. The payload must not exceed
 * EVT_WIRE_MAX_PAYLOAD (assert). */
void evt_frame_end(evt_buf *b, size_t pos);
/* A whole frame with (payload, n). */
void evt_frame_put(evt_buf *b, int type, const void *payload, size_t n);

/* Looks at b's pending bytes for one complete frame. Returns 1 and fills *h and
 * *payload (borrowed from b until the next change to b; call evt_buf_consume(b,
 * EVT_WIRE_HEADER + h->length) when done), 0 when more bytes are needed, or DP_EPROTO
 * with err filled for a bad magic, version, type or length (checked as soon as the
 * header is in, before the payload is waited for). */
int evt_frame_next(evt_buf *b, evt_wire_header *h, const uint8_t **payload, char *err);

/* ---- payloads ----------------------------------------------------------------- */
/* Appends STRINGS frames defining ids first..last of t (split to stay under the
 * payload bound). */
void evt_wire_put_strings(evt_buf *b, const evt_strtab *t, uint32_t first, uint32_t last);

/* Calls fn(ctx, id, s, len) for each definition in a STRINGS payload; s is
 * NUL-terminated scratch (borrowed during the call). Returns 0, DP_EPROTO on a
 * malformed payload or embedded NUL (err filled), or the first non-zero fn result. */
int evt_wire_each_string(const uint8_t *p, size_t n,
                         int (*fn)(void *ctx, uint32_t id, const char *s, size_t len),
                         void *ctx, char *err);

/* Appends one EVENTS frame carrying recs[0..n) (n <= EVT_WIRE_MAX_BATCH); times are
 * delta-coded from 0 within the frame. */
void evt_wire_put_events(evt_buf *b, const evt_record *recs, size_t n);

/* Decodes an EVENTS payload, appending to the growable array (*out, *count, *cap;
 * caller frees *out with free()). The count is bounded by the payload size before any
 * allocation. Returns the number decoded, or DP_EPROTO (err filled) when the payload
 * is malformed, a record has an unknown kind, or bytes are left over. */
int evt_wire_get_events(const uint8_t *p, size_t n, evt_record **out, size_t *count,
                        size_t *cap, char *err);

/* ---- sockets ------------------------------------------------------------------ */
/* Parses "host:port", "[v6]:port" or ":port" (loopback) and resolves host (numeric
 * or a name). port 0 is allowed when passive (listening). Returns 0 or DP_EINVAL. */
int evt_wire_parse_addr(const char *addr, int passive, struct sockaddr_storage *ss,
                        socklen_t *len, char *err);
/* "host:port" text of an address (into buf of n bytes). */
void evt_wire_addr_text(const struct sockaddr *sa, char *buf, size_t n);
/* Non-blocking, close-on-exec TCP socket for ss's family; TCP_NODELAY. -1 + err. */
int evt_wire_socket(int family, char *err);

#endif
