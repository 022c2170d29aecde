/* conn.h — a framed, non-blocking TCP connection in a libev loop, plus listen/connect
 * helpers. Reading: the header is validated (proto_decode) before the payload is read;
 * the handler then says where the payload goes (its own buffer: no staging copy), or
 * lets the connection read it into an internal buffer. Writing: frames are queued and
 * written with writev; write interest is on only while the queue is non-empty. A bad
 * frame closes the connection with a logged reason; the connection is freed after the
 * callback that closed it returns, never inside it. One loop thread only. */
#ifndef RUNTIME_CONN_H
#define RUNTIME_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/proto.h"

struct ev_loop;
typedef struct net_conn net_conn;

typedef struct net_handler {
    /* After a valid header with length > 0: return where to put the h->length payload
     * bytes (borrowed until on_frame), or NULL to use the connection's own buffer.
     * Set *reject to a message (DP_ERRLEN buffer err) and return NULL to close the
     * connection instead. May be NULL (always the own buffer). */
    void *(*on_header)(net_conn *c, const proto_header *h, void *ctx, char *err, int *reject);
    /* A whole frame; payload is where on_header said (or the own buffer, valid until
     * return). */
    void (*on_frame)(net_conn *c, const proto_header *h, void *payload, void *ctx);
    /* The connection is closing (peer closed, error, bad frame or net_conn_close);
     * reason is a one-line text. The conn is freed right after this returns. */
    void (*on_close)(net_conn *c, const char *reason, void *ctx);
} net_handler;

/* Wraps a connected socket (made non-blocking, TCP_NODELAY) and starts reading.
 * Takes ownership of fd. handler borrowed for the connection's life. */
net_conn *net_conn_new(struct ev_loop *loop, int fd, const net_handler *handler, void *ctx,
                       const char *peer_name);

/* Queues a frame: h plus len payload bytes. copy=1 copies the payload now; copy=0
 * borrows it until the frame is written (the caller keeps it unchanged until then,
 * e.g. until the peer answers). h->length is set to len. Returns 0 or DP_ECLOSED. */
int net_conn_send(net_conn *c, proto_header h, const void *payload, size_t len, int copy);

/* Sends an ERROR frame with text and closes once it is written (or after a short
 * grace). */
void net_conn_send_error(net_conn *c, const char *text);

/* Closes: calls on_close(reason) and frees, deferred to after the current callback
 * when called from inside one. */
void net_conn_close(net_conn *c, const char *reason);

/* How long (ns, at dp_now_ns() time now) a partly received frame has waited for its
 * next byte; 0 when no frame is partly in. Owners use it for a read timeout. */
uint64_t net_conn_stalled_ns(const net_conn *c, uint64_t now);

/* Bytes queued but not yet written. */
size_t net_conn_pending(const net_conn *c);
const char *net_conn_peer(const net_conn *c);
void *net_conn_ctx(const net_conn *c);
void net_conn_set_ctx(net_conn *c, void *ctx);
/* Payload bytes read/written so far on this connection. */
uint64_t net_conn_bytes_in(const net_conn *c);
uint64_t net_conn_bytes_out(const net_conn *c);

/* Creates a listening socket on host:port (port 0 picks a free one; *bound_port gets the
 * port). Non-blocking, SO_REUSEADDR. Returns the fd or a negative dp_err. */
int net_listen(const char *host, int port, int *bound_port, char *err);

/* The launcher's handover: it binds each local ps's port itself and passes the listening
 * socket down as fd NET_LISTEN_FD (named by $DOWNPOUR_LISTEN_FD), so that no other socket
 * can take the port between choosing and binding it. Returns that fd when it is a
 * listening socket on `port`, else a fresh net_listen(host, port). */
#define NET_LISTEN_FD 3
#define NET_LISTEN_ENV "DOWNPOUR_LISTEN_FD"
int net_listen_inherited(const char *host, int port, char *err);

/* Accepts one pending connection: fd >= 0, or -1 when none (EAGAIN), or a negative
 * dp_err less than -1 on failure. peer gets "host:port". */
int net_accept(int lfd, char *peer, size_t peer_len);

/* Blocking connect to host:port with a single attempt; returns fd or a negative dp_err
 * (err says why, e.g. "connection refused"). */
#define NET_CONNECT_WAIT_MS 2000   /* one connect attempt at most this long (then ETIMEDOUT) */
int net_connect(const char *host, int port, char *err);

/* Finds a free loopback TCP port (bind to port 0, read it, close). */
int net_free_port(char *err);

#endif
