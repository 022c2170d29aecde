/* conn.h — the one connection layer: a framed, non-blocking TCP connection in a libev
 * loop, used by every connection of a run (worker -> ps, task -> hub, viewer -> hub),
 * and listeners with a connection cap. docs/wire.md describes the frames.
 *
 * - Frames (net/frame.h) are validated against the connection's protocol as soon as a
 *   header is in, before any payload is read or any buffer sized by it.
 * - The handshake (net/auth.h) runs here, before anything else, when a key is given:
 *   a server answers AUTH_HELLO with its challenge and checks the proof; a client
 *   checks the server's proof. A failure is logged with the peer's address, the peer
 *   told only that authentication failed, and dropped. The handler hears nothing of a
 *   connection until it is open (on_open) and never sees a handshake frame.
 * - Reading: the handler says where a payload goes (its own buffer: tensors land in
 *   place), lets the connection read it into an internal buffer, or, on shared memory,
 *   borrows it where it lies in the ring (net_conn_lend_payload, _hold_payload). At most
 *   NET_READ_BUDGET bytes per wake-up, so one busy peer cannot starve the others.
 * - Writing: one output queue per connection (small frames coalesced, large payloads
 *   borrowed or owned), written with writev, write interest on only while non-empty,
 *   bounded by out_cap (a send beyond it fails with DP_EFULL and queues nothing).
 * - Limits: a server's peer must be accepted (net_conn_hello_done) within hello_s and
 *   may send nothing longer than pre_hello_max before; a partly received frame that
 *   waits frame_s for its next byte closes the connection, and so does idle_s of silence.
 * - Shared memory (opts.shm, net/shm.h): after the handshake a client on the server's
 *   host offers a memfd of two rings; when the server takes it the same frames flow
 *   through the rings, read and validated as TCP's (the same budget, timeouts and
 *   limits), doorbells waking the loops; the socket stays open only to tell a peer's
 *   death (its ring is read to the end first, then unmapped). Anything failing: TCP.
 * - A bad frame closes the connection with a logged reason; a connection is freed after
 *   the callback that closed it returns, never inside it. One loop thread only. */
#ifndef NET_CONN_H
#define NET_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net/auth.h"
#include "net/frame.h"

struct ev_loop;
typedef struct net_conn net_conn;
typedef struct net_listener net_listener;

#define NET_READ_BUDGET (4u << 20)

typedef struct net_handler {
    /* Open: connected and, with a key, authenticated both ways. Sends are allowed from
     * here on. Called from the loop, never inside net_conn_new. May be NULL. */
    void (*on_open)(net_conn *c, void *ctx);
    /* After a valid header with length > 0: return where to put the h->length payload
     * bytes (borrowed until on_frame), or NULL to use the connection's own buffer.
     * Set *reject to 1 and a reason in err (DP_ERRLEN) to close instead. May be NULL. */
    void *(*on_header)(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject);
    /* A whole frame; payload is where on_header said (or the own buffer, valid until
     * return). */
    void (*on_frame)(net_conn *c, const net_frame *h, void *payload, void *ctx);
    /* Closing (peer closed, error, bad frame, failed handshake, timeout or
     * net_conn_close); reason is one line. The conn is freed right after this returns. */
    void (*on_close)(net_conn *c, const char *reason, void *ctx);
} net_handler;

enum net_role { NET_CLIENT = 1, NET_SERVER = 2 };

/* Why a connection closed (net_conn_close_kind). */
enum net_close_kind {
    NET_CLOSE_NONE = 0,
    NET_CLOSE_PEER,      /* the peer closed, or the socket failed */
    NET_CLOSE_LOCAL,     /* net_conn_close / net_conn_send_error by the owner */
    NET_CLOSE_PROTO,     /* a bad frame, or the handler rejected one */
    NET_CLOSE_AUTH,      /* the handshake failed or was refused (either side) */
    NET_CLOSE_TIMEOUT    /* hello_s or frame_s passed */
};

typedef struct net_conn_opts {
    const net_proto *proto;      /* the vocabulary (required) */
    int role;                    /* NET_CLIENT or NET_SERVER: the handshake's side */
    const auth_key *key;         /* NULL or key->set == 0: no handshake (copied) */
    const auth_key *alt_key;     /* server: another key a client may prove (the hub's
                                  * viewer token); net_conn_alt_auth() says it did */
    const char *auth_context;    /* AUTH_CTX_*: names the connection kind in proofs */
    const char *name;            /* this side in our log lines ("/job:ps/replica:0/task:0") */
    const char *what;            /* ... and in what a peer is told ("ps", "hub") */
    double hello_s;              /* server: closed unless accepted within this; client:
                                  * unless open within this (0: no limit) */
    double frame_s;              /* closed when a frame stalls this long (0: no limit) */
    double idle_s;               /* closed when nothing at all comes for this long (0: no
                                  * limit; the ps and hub leave it off: an authenticated
                                  * worker may compute for minutes, a viewer only reads) */
    uint32_t pre_hello_max;      /* server: until accepted, longer payloads are refused
                                  * unread (0: no bound beyond the protocol's) */
    size_t out_cap;              /* output queue bound in bytes (0: none) */
    net_listener *listener;      /* counts this connection against its cap, or NULL */
    int shm;                     /* client: offer shared memory (net/shm.h) once open, when
                                  * the peer is on this host; server: take such offers.
                                  * Otherwise, or when it fails, TCP (logged). For protocols
                                  * whose client speaks first (ps/worker): the server must
                                  * send nothing before the client's first frame */
    uint32_t shm_ring;           /* client: each direction's ring in bytes, a power of two
                                  * (0: SHM_RING_DEFAULT) */
} net_conn_opts;

/* Wraps a connected (or accepted) socket and starts: the handshake when a key is given,
 * else on_open at the next loop turn. Takes ownership of fd. opts is copied (its
 * pointers are borrowed for the connection's life); handler borrowed. */
net_conn *net_conn_new(struct ev_loop *loop, int fd, const net_conn_opts *opts,
                       const net_handler *handler, void *ctx, const char *peer_name);

/* Starts a non-blocking connect to ss and then as net_conn_new; a failed connect
 * reaches on_close ("connect: connection refused"). NULL with err only when no socket
 * could be made. */
net_conn *net_conn_connect(struct ev_loop *loop, const struct sockaddr_storage *ss, socklen_t len,
                           const net_conn_opts *opts, const net_handler *handler, void *ctx,
                           const char *peer_name, char *err);

/* Queues a frame: h (its proto and length are set here) plus len payload bytes.
 * copy=1 copies the payload now; copy=0 borrows it until the frame is written (the
 * caller keeps it unchanged until then). Returns 0, DP_ECLOSED (closing or not yet
 * open), or DP_EFULL (over out_cap: nothing queued). */
int net_conn_send(net_conn *c, net_frame h, const void *payload, size_t len, int copy);

/* Only from on_header: asks for this frame's payload where it lies in the shared-memory
 * ring instead of a copy. Returns 1 when granted: on shared memory, a payload that fits
 * the ring beside what is held (below) and starts NET_LEND_ALIGN-aligned, as every
 * payload does while those before it are whole floats or tokens. on_header then returns
 * NULL, and on_frame gets a pointer into the ring, valid until it returns, read-only,
 * and the peer's memory (a same-user process on this host: it could change the bytes
 * while we read them, as it could our own memory). 0 otherwise, and always on TCP:
 * on_header returns its buffer as usual. */
int net_conn_lend_payload(net_conn *c);
#define NET_LEND_ALIGN 8

/* The same, but the payload stays where it lies after on_frame returns, until
 * net_conn_release(c, payload): meanwhile the peer cannot reuse those bytes (nor the
 * ring beyond them, past what it has room for), so a holder must not wait on this
 * peer's later frames to release. On close the ring is unmapped right after on_close:
 * what is still held must be copied out there. Returns 0 as lend does (then copied). */
int net_conn_hold_payload(net_conn *c);
void net_conn_release(net_conn *c, const void *payload);

/* Frames built by the caller: net_conn_stage(c) is a buffer to build whole frames in
 * (net_frame_put / _begin / _end, protocol set by the caller); net_conn_flush queues
 * what was staged, in order after everything sent before, and writes. Returns 0,
 * DP_ECLOSED, or DP_EFULL (over out_cap: the staged frames are discarded). Staged
 * bytes count in net_conn_pending. */
dp_buf *net_conn_stage(net_conn *c);
int net_conn_flush(net_conn *c);

/* Sends an ERROR frame with text and closes once it is written (or at once when
 * nothing can be written). */
void net_conn_send_error(net_conn *c, const char *text);

/* Closes: calls on_close(reason) and frees, deferred to after the current callback
 * when called from inside one. */
void net_conn_close(net_conn *c, const char *reason);

/* A server's handler accepted the peer's hello: hello_s and pre_hello_max stop
 * applying. */
void net_conn_hello_done(net_conn *c);

/* Sets the output bound (0: none); it applies to what is queued from now on. */
void net_conn_set_out_cap(net_conn *c, size_t cap);

/* Stops (0) or resumes (1) reading, e.g. while the owner's own queue is full. */
void net_conn_set_reading(net_conn *c, int on);

int net_conn_is_open(const net_conn *c);
int net_conn_close_kind(const net_conn *c);         /* NET_CLOSE_*, once closing */
int net_conn_alt_auth(const net_conn *c);           /* 1: the peer proved alt_key */
int net_conn_fd(const net_conn *c);
/* "shm" once both sides moved to the shared-memory rings, else "tcp". */
const char *net_conn_transport(const net_conn *c);
/* Bytes queued (or staged) but not yet written. */
size_t net_conn_pending(const net_conn *c);
const char *net_conn_peer(const net_conn *c);
void *net_conn_ctx(const net_conn *c);
void net_conn_set_ctx(net_conn *c, void *ctx);
/* Payload bytes read / written so far (headers not counted). */
uint64_t net_conn_bytes_in(const net_conn *c);
uint64_t net_conn_bytes_out(const net_conn *c);

/* ---- listeners ------------------------------------------------------------------
 * Accepts on a listening socket while fewer than max_conns of its connections are
 * open; one over the cap is closed at once, counted, and logged at most once a second.
 * on_accept gets each accepted socket (non-blocking) to wrap with net_conn_new, giving
 * the listener in opts so that it counts. */
typedef void (*net_accept_fn)(net_listener *l, int fd, const char *peer, void *ctx);
net_listener *net_listener_new(struct ev_loop *loop, int lfd, int max_conns, const char *name,
                               net_accept_fn on_accept, void *ctx);
/* Stops accepting and closes the listening socket (connections stay). */
void net_listener_free(net_listener *l);
int net_listener_open_conns(const net_listener *l);
int net_listener_max_conns(const net_listener *l);
uint64_t net_listener_refused(const net_listener *l);
uint64_t net_listener_auth_failures(const net_listener *l);

#endif
