/* frame.h — the one frame format of every Downpour connection (ps <-> worker, task ->
 * hub, viewer <- hub; docs/wire.md). A frame is a 32-byte little-endian header and
 * `length` payload bytes:
 *
 *   u32 magic "DPNF" | u8 version | u8 protocol | u16 type | u32 length | u32 id | i64 arg0 | i64 arg1
 *
 * `protocol` names the vocabulary (NET_PROTO_PS, NET_PROTO_STREAM); each protocol is a
 * table of its types with the payload each allows, so a header is validated in one
 * place (net_frame_decode) before any payload byte is read or any buffer sized: magic,
 * version, protocol, known type, and a length within the type's rule (never above
 * NET_MAX_PAYLOAD). Types 1..7 (an error, the handshake of net/auth.h and the
 * shared-memory upgrade of net/conn.h) are the same in every protocol; a protocol's own start at NET_T_FIRST. id / arg0 / arg1 are the
 * protocol's small fields (a variable, a step, a version), so a tensor payload is only
 * tensor and can be read straight into its destination. Pure encoding, no I/O. */
#ifndef NET_FRAME_H
#define NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define NET_MAGIC 0x464e5044u          /* bytes "DPNF" on the wire */
#define NET_VERSION 1
#define NET_HEADER 32
#define NET_MAX_PAYLOAD (64u << 20)    /* no frame of any protocol is longer */
#define NET_MAX_TEXT 4096              /* an ERROR's text */
#define NET_AUTH_BYTES 32              /* every handshake payload: a nonce or a proof */
#define NET_SHM_OFFER_BYTES 56         /* SHM_OFFER's payload (SHM_OFFER_BYTES, net/shm.h) */
#define NET_SHM_ANSWER_MAX 256         /* a declining SHM_ANSWER's reason */

enum net_protocol { NET_PROTO_PS = 1, NET_PROTO_STREAM = 2 };

/* The types every protocol shares. */
enum net_common_type {
    NET_T_ERROR = 1,          /* either way: UTF-8 reason; the sender closes after it */
    NET_T_AUTH_HELLO = 2,     /* client -> server: the client's 32-byte nonce */
    NET_T_AUTH_CHALLENGE = 3, /* server -> client: the server's 32-byte nonce */
    NET_T_AUTH_PROOF = 4,     /* client -> server: the client's 32-byte proof */
    NET_T_AUTH_OK = 5,        /* server -> client: the server's 32-byte proof */
    NET_T_SHM_OFFER = 6,      /* client -> server: a shared-memory channel (net/shm.h) */
    NET_T_SHM_ANSWER = 7,     /* server -> client: arg0 1 taken, 0 declined (payload: why) */
    NET_T_FIRST = 16          /* a protocol's own types start here */
};

/* A decoded header. proto is filled by the codec (and by net_conn for what it sends). */
typedef struct net_frame {
    uint8_t proto;
    uint16_t type;
    uint32_t length;
    uint32_t id;
    int64_t arg0, arg1;
} net_frame;

/* What a type's payload may be. */
enum net_len_rule {
    NET_LEN_NONE = 0,   /* no payload */
    NET_LEN_EXACT,      /* exactly len bytes */
    NET_LEN_UPTO,       /* 0..len bytes */
    NET_LEN_NONE_OR,    /* 0 or exactly len bytes */
    NET_LEN_FLOATS      /* whole float32s, 0..len bytes */
};
typedef struct net_type {
    const char *name;   /* NULL: not a type of this protocol */
    uint8_t rule;       /* NET_LEN_* */
    uint32_t len;
} net_type;

/* A protocol: its id and its types, indexed by type number (0 and gaps: name NULL). */
typedef struct net_proto {
    uint8_t id;
    const char *name;   /* "ps/worker", "event stream" */
    uint16_t ntypes;
    const net_type *types;
} net_proto;

/* The common types' rows, for a protocol table's initializer. */
#define NET_COMMON_TYPES                                                        \
    [NET_T_ERROR] = {"ERROR", NET_LEN_UPTO, NET_MAX_TEXT},                     \
    [NET_T_AUTH_HELLO] = {"AUTH_HELLO", NET_LEN_EXACT, NET_AUTH_BYTES},        \
    [NET_T_AUTH_CHALLENGE] = {"AUTH_CHALLENGE", NET_LEN_EXACT, NET_AUTH_BYTES},\
    [NET_T_AUTH_PROOF] = {"AUTH_PROOF", NET_LEN_EXACT, NET_AUTH_BYTES},        \
    [NET_T_AUTH_OK] = {"AUTH_OK", NET_LEN_EXACT, NET_AUTH_BYTES},              \
    [NET_T_SHM_OFFER] = {"SHM_OFFER", NET_LEN_EXACT, NET_SHM_OFFER_BYTES},     \
    [NET_T_SHM_ANSWER] = {"SHM_ANSWER", NET_LEN_UPTO, NET_SHM_ANSWER_MAX}

/* "PULL", "events", ...; "?" for a type the protocol does not have. */
const char *net_type_name(const net_proto *p, int type);

/* Writes f's header (magic, version, f->proto, ...) into out. */
void net_frame_encode(const net_frame *f, uint8_t out[NET_HEADER]);

/* Decodes and validates a header against protocol p. Returns 0, or DP_EPROTO with a
 * reason for our own log in err ("bad magic 0x...", "version 2", "a event stream frame
 * on a ps/worker connection", "unknown type 99", "PUSH payload of 70000000 bytes over
 * its bound", "HELLO carries 12 payload bytes"). */
int net_frame_decode(const uint8_t in[NET_HEADER], const net_proto *p, net_frame *f, char *err);

/* ---- building frames in a buffer (several small frames, one write) --------------- */
/* Starts a frame with f's fields (proto included) at the end of b; returns its place
 * for net_frame_end, which patches the length once the payload is appended. The
 * payload must stay within NET_MAX_PAYLOAD (assert). */
size_t net_frame_begin(dp_buf *b, const net_frame *f);
void net_frame_end(dp_buf *b, size_t pos);
/* A whole frame: f's header and (payload, n). */
void net_frame_put(dp_buf *b, const net_frame *f, const void *payload, size_t n);

/* Parses the next whole frame from b's pending bytes: 1 with *f and *payload (borrowed
 * from b until it changes; consume NET_HEADER + f->length when done), 0 when more
 * bytes are needed, or DP_EPROTO as net_frame_decode (checked as soon as the header is
 * in). For readers without a loop (tests, fuzzers); connections use net_conn. */
int net_frame_next(dp_buf *b, const net_proto *p, net_frame *f, const uint8_t **payload, char *err);

#endif
