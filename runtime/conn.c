#define _GNU_SOURCE
/* conn.c — framed non-blocking connections in a libev loop (see conn.h). Invariants:
 * write watcher active iff the out queue is non-empty; a closing connection reads no
 * more frames and is freed only outside its own callbacks. */
#include "runtime/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ev.h>

#include "common/dp.h"
#include "events/wire.h"

typedef struct out_frame {
    struct out_frame *next;
    uint8_t header[PROTO_HEADER_SIZE];
    const uint8_t *payload;
    size_t len;
    size_t off;        /* bytes of header+payload already written */
    int owned;
} out_frame;

struct net_conn {
    ev_io rio, wio;
    ev_timer reap;     /* frees a conn closed from outside its own callbacks */
    struct ev_loop *loop;
    int fd;
    const net_handler *h;
    void *ctx;
    char peer[96];
    /* reading */
    uint8_t hbuf[PROTO_HEADER_SIZE];
    size_t hgot;
    proto_header cur;
    int in_payload;
    uint8_t *dst;
    size_t pgot;
    uint8_t *own;
    size_t own_cap;
    uint64_t last_read_ns;   /* when bytes last came in (or the conn was made) */
    /* writing */
    out_frame *head, *tail;
    size_t pending;
    /* lifecycle */
    int in_cb;
    int closing;
    int close_after_flush;
    char reason[DP_ERRLEN];
    uint64_t bytes_in, bytes_out;
};

static void conn_finish(net_conn *c)
{
    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
    ev_timer_stop(c->loop, &c->reap);
    close(c->fd);
    if (c->h->on_close) c->h->on_close(c, c->reason, c->ctx);
    for (out_frame *f = c->head, *n; f; f = n) {
        n = f->next;
        if (f->owned) free((void *)f->payload);
        free(f);
    }
    free(c->own);
    free(c);
}

void net_conn_close(net_conn *c, const char *reason)
{
    if (!c->closing) {
        c->closing = 1;
        snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "closed");
        ev_io_stop(c->loop, &c->rio);
        ev_io_stop(c->loop, &c->wio);
    }
    if (!c->in_cb) conn_finish(c);
}

/* Writes as much of the queue as the socket takes. Returns 0, or -1 after closing. */
static int flush_out(net_conn *c)
{
    while (c->head) {
        struct iovec iov[16 * 2];
        int n = 0;
        for (out_frame *f = c->head; f && n < 31; f = f->next) {
            if (f->off < PROTO_HEADER_SIZE) {
                iov[n].iov_base = f->header + f->off;
                iov[n++].iov_len = PROTO_HEADER_SIZE - f->off;
                if (f->len) {
                    iov[n].iov_base = (void *)f->payload;
                    iov[n++].iov_len = f->len;
                }
            } else {
                iov[n].iov_base = (void *)(f->payload + (f->off - PROTO_HEADER_SIZE));
                iov[n++].iov_len = f->len - (f->off - PROTO_HEADER_SIZE);
            }
        }
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            char why[128];
            snprintf(why, sizeof why, "write failed: %s", strerror(errno));
            net_conn_close(c, why);
            return -1;
        }
        size_t left = (size_t)w;
        c->pending -= left;
        while (left && c->head) {
            out_frame *f = c->head;
            size_t rest = PROTO_HEADER_SIZE + f->len - f->off;
            if (left < rest) {
                f->off += left;
                left = 0;
                break;
            }
            left -= rest;
            c->bytes_out += f->len;
            c->head = f->next;
            if (!c->head) c->tail = NULL;
            if (f->owned) free((void *)f->payload);
            free(f);
        }
    }
    if (c->head) {
        if (!ev_is_active(&c->wio)) ev_io_start(c->loop, &c->wio);
    } else {
        if (ev_is_active(&c->wio)) ev_io_stop(c->loop, &c->wio);
        if (c->close_after_flush) {
            net_conn_close(c, c->reason[0] ? c->reason : "closed after error");
            return -1;
        }
    }
    return 0;
}

int net_conn_send(net_conn *c, proto_header h, const void *payload, size_t len, int copy)
{
    if (c->closing || c->close_after_flush) return DP_ECLOSED;
    out_frame *f = xcalloc(1, sizeof *f);
    h.version = PROTO_VERSION;
    h.length = (uint32_t)len;
    proto_encode(&h, f->header);
    if (len && copy) {
        void *p = xmalloc(len);
        memcpy(p, payload, len);
        f->payload = p;
        f->owned = 1;
    } else {
        f->payload = payload;
    }
    f->len = len;
    if (c->tail) c->tail->next = f;
    else c->head = f;
    c->tail = f;
    c->pending += PROTO_HEADER_SIZE + len;
    /* Try at once: most frames go out without waiting for the loop. The caller may
     * be inside another connection's callback and still hold this one, so a failure
     * here frees the connection later, from the reap timer. */
    if (c->head == f) {
        int was = c->in_cb;
        c->in_cb = 1;
        flush_out(c);
        c->in_cb = was;
        if (!was && c->closing) ev_timer_start(c->loop, &c->reap);
    }
    return DP_OK;
}

void net_conn_send_error(net_conn *c, const char *text)
{
    size_t len = strlen(text);
    if (len > PROTO_MAX_TEXT) len = PROTO_MAX_TEXT;
    proto_header h = {.type = MSG_ERROR};
    snprintf(c->reason, sizeof c->reason, "%s", text);
    net_conn_send(c, h, text, len, 1);
    c->close_after_flush = 1;
    ev_io_stop(c->loop, &c->rio);
    if (!c->head) net_conn_close(c, text);
}

static void on_reap(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    conn_finish(dp_container_of(w, net_conn, reap));
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, wio);
    c->in_cb = 1;
    flush_out(c);
    c->in_cb = 0;
    if (c->closing) conn_finish(c);
}

/* Reads frames until EAGAIN. Returns when the socket is drained or the conn closes. */
static void read_frames(net_conn *c)
{
    char err[DP_ERRLEN];
    while (!c->closing && !c->close_after_flush) {
        ssize_t r;
        if (!c->in_payload) {
            r = read(c->fd, c->hbuf + c->hgot, PROTO_HEADER_SIZE - c->hgot);
        } else {
            r = read(c->fd, c->dst + c->pgot, c->cur.length - c->pgot);
        }
        if (r == 0) {
            net_conn_close(c, (c->hgot || c->in_payload) ? "peer closed mid-frame (truncated frame)"
                                                         : "peer closed the connection");
            return;
        }
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno == EINTR) continue;
            snprintf(err, sizeof err, "read failed: %s", strerror(errno));
            net_conn_close(c, err);
            return;
        }
        c->last_read_ns = dp_now_ns();
        if (!c->in_payload) {
            c->hgot += (size_t)r;
            if (c->hgot < PROTO_HEADER_SIZE) continue;
            c->hgot = 0;
            if (proto_decode(c->hbuf, &c->cur, err) != DP_OK) {
                char why[DP_ERRLEN + 32];
                snprintf(why, sizeof why, "bad frame: %s", err);
                net_conn_close(c, why);
                return;
            }
            if (c->cur.length == 0) {
                c->h->on_frame(c, &c->cur, NULL, c->ctx);
                continue;
            }
            int reject = 0;
            void *dst = NULL;
            err[0] = 0;
            if (c->h->on_header) dst = c->h->on_header(c, &c->cur, c->ctx, err, &reject);
            if (reject) {
                char why[DP_ERRLEN + 32];
                snprintf(why, sizeof why, "bad frame: %s", err);
                net_conn_close(c, why);
                return;
            }
            if (!dst) {
                if (c->own_cap < c->cur.length) {
                    free(c->own);
                    c->own_cap = c->cur.length;
                    c->own = xmalloc(c->own_cap);
                }
                dst = c->own;
            }
            c->dst = dst;
            c->pgot = 0;
            c->in_payload = 1;
        } else {
            c->pgot += (size_t)r;
            c->bytes_in += (uint64_t)r;
            if (c->pgot < c->cur.length) continue;
            c->in_payload = 0;
            c->h->on_frame(c, &c->cur, c->dst, c->ctx);
        }
    }
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, rio);
    c->in_cb = 1;
    read_frames(c);
    c->in_cb = 0;
    if (c->closing) conn_finish(c);
}

net_conn *net_conn_new(struct ev_loop *loop, int fd, const net_handler *handler, void *ctx,
                       const char *peer_name)
{
    net_conn *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->fd = fd;
    c->h = handler;
    c->ctx = ctx;
    snprintf(c->peer, sizeof c->peer, "%s", peer_name ? peer_name : "?");
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ev_io_init(&c->rio, on_read, fd, EV_READ);
    ev_io_init(&c->wio, on_write, fd, EV_WRITE);
    ev_timer_init(&c->reap, on_reap, 0., 0.);
    ev_io_start(loop, &c->rio);
    c->last_read_ns = dp_now_ns();
    return c;
}

uint64_t net_conn_stalled_ns(const net_conn *c, uint64_t now)
{
    if (c->closing || (!c->hgot && !c->in_payload) || now < c->last_read_ns) return 0;
    return now - c->last_read_ns;
}

size_t net_conn_pending(const net_conn *c) { return c->pending; }
const char *net_conn_peer(const net_conn *c) { return c->peer; }
void *net_conn_ctx(const net_conn *c) { return c->ctx; }
void net_conn_set_ctx(net_conn *c, void *ctx) { c->ctx = ctx; }
uint64_t net_conn_bytes_in(const net_conn *c) { return c->bytes_in; }
uint64_t net_conn_bytes_out(const net_conn *c) { return c->bytes_out; }

/* "host:port", or "[v6]:port" for an IPv6 literal, for messages. */
static const char *host_port(char *buf, size_t n, const char *host, int port)
{
    snprintf(buf, n, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    return buf;
}

/* Resolves host (a name, dotted IPv4 or IPv6 literal without brackets) for a TCP socket:
 * *res gets the list (caller frees with freeaddrinfo). Callers try IPv4 results before
 * IPv6 ones, so a name that has both behaves as it did when only IPv4 was used. */
static int resolve(const char *host, int port, int passive, struct addrinfo **res, char *err)
{
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    *res = NULL;
    int rc = getaddrinfo(host, ps, &hints, res);
    if (rc != 0 || !*res) {
        if (*res) freeaddrinfo(*res);
        *res = NULL;
        return dp_fail(err, DP_EINVAL, "cannot resolve host \"%s\": %s", host,
                       rc ? gai_strerror(rc) : "no address");
    }
    return DP_OK;
}

/* The port of a bound socket of either family, or -1. */
static int sock_port(int fd, int *family)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
    if (family) *family = ss.ss_family;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    return -1;
}

/* One listening socket on ai; returns the fd or -1 with errno set. */
static int listen_on(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 256) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int net_listen(const char *host, int port, int *bound_port, char *err)
{
    struct addrinfo *res;
    int rc = resolve(host, port, 1, &res, err);
    if (rc) return rc;
    int fd = -1, e = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++)      /* IPv4 first, then the rest */
        for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET) != (pass == 0)) continue;
            fd = listen_on(ai);
            if (fd < 0) e = errno;
        }
    freeaddrinfo(res);
    if (fd < 0) {
        char hp[300];
        return dp_fail(err, DP_EIO, "cannot listen on %s: %s", host_port(hp, sizeof hp, host, port),
                       strerror(e ? e : EAFNOSUPPORT));
    }
    if (bound_port) *bound_port = sock_port(fd, NULL);
    return fd;
}

int net_listen_inherited(const char *host, int port, char *err)
{
    const char *env = getenv(NET_LISTEN_ENV);
    char want[16];
    snprintf(want, sizeof want, "%d", NET_LISTEN_FD);
    if (env && !strcmp(env, want)) {
        unsetenv(NET_LISTEN_ENV);
        int fd = NET_LISTEN_FD, listening = 0, family = 0;
        socklen_t ol = sizeof listening;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) == 0 && listening &&
            sock_port(fd, &family) == port && (family == AF_INET || family == AF_INET6)) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            fcntl(fd, F_SETFD, FD_CLOEXEC);
            return fd;
        }
    }
    return net_listen(host, port, NULL, err);
}

int net_accept(int lfd, char *peer, size_t peer_len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return -1;
        return DP_EIO;
    }
    if (peer) evt_wire_addr_text((struct sockaddr *)&ss, peer, peer_len);
    return fd;
}

/* connect(), given at most NET_CONNECT_WAIT_MS: a peer whose network vanished mid-way
 * (a namespace torn down, a host gone) drops the SYN and a blocking connect would wait
 * minutes, where the caller retries and checks for a stop request. -1 with errno set
 * (ETIMEDOUT, or the connect's own error); the fd is left blocking as it came. */
static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return connect(fd, sa, len);
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int n = poll(&p, 1, NET_CONNECT_WAIT_MS);
        if (n <= 0) {
            errno = n == 0 ? ETIMEDOUT : errno;
            return -1;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) return -1;
        if (soerr) {
            errno = soerr;
            return -1;
        }
        rc = 0;
    }
    if (rc == 0) fcntl(fd, F_SETFL, fl);
    return rc;
}

int net_connect(const char *host, int port, char *err)
{
    struct addrinfo *res;
    int rc = resolve(host, port, 0, &res, err);
    if (rc) return rc;
    int fd = -1, e = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++)      /* IPv4 first, then the rest */
        for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET) != (pass == 0)) continue;
            fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                e = errno;
                continue;
            }
            if (connect_bounded(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                e = errno;
                close(fd);
                fd = -1;
            }
        }
    freeaddrinfo(res);
    if (fd < 0) return dp_fail(err, DP_EIO, "%s", strerror(e ? e : EAFNOSUPPORT));
    return fd;
}

int net_free_port(char *err)
{
    int port = 0;
    int fd = net_listen("127.0.0.1", 0, &port, err);
    if (fd < 0) return fd;
    close(fd);
    return port;
}
