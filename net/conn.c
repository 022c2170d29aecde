#define _GNU_SOURCE
/* conn.c — connections and listeners (conn.h). Invariants: write watcher active iff the
 * queue has unwritten bytes (TCP; on shared memory a full ring waits for the doorbell
 * instead); nothing of the owner's is queued before the connection is open (the
 * handshake's and the upgrade's frames are the only ones then; the handshake is
 * conn_auth.c's); a closing connection reads no more frames and is freed only outside
 * its own callbacks. The transport is the socket until both sides switched to the shm
 * rings (net/shm.h); from then on the socket only tells the peer's death (conn_shm.c),
 * and every byte of the rings is parsed as TCP's. */
#include "net/conn_int.h"

#include <errno.h>
#include <fcntl.h>
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
#include "net/sock.h"

_Static_assert(SHM_OFFER_BYTES == NET_SHM_OFFER_BYTES, "net: one offer size");

#define SEG_COALESCE (64u << 10)   /* small frames share one owned segment up to this */
#define SEG_MIN 4096
#define SEG_SPARE_MAX (256u << 10) /* a written segment up to this is kept for the next */
#define STAGE_COPY_MAX (256u << 10) /* staged frames up to this are copied (the stage keeps
                                     * its memory); beyond, the queue takes the buffer */
#define IOV_MAX_USED 64

/* ---- lifecycle -------------------------------------------------------------------- */

static void seg_free(out_seg *s)
{
    free(s->own);
    free(s);
}

void netc_finish(net_conn *c)
{
    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
    ev_timer_stop(c->loop, &c->reap);
    ev_timer_stop(c->loop, &c->defer);
    ev_timer_stop(c->loop, &c->guard);
    ev_io_stop(c->loop, &c->bio);
    ev_timer_stop(c->loop, &c->more);
    close(c->fd);
    /* the rings outlive on_close: a handler copies out what it still holds there */
    if (c->h->on_close) c->h->on_close(c, c->reason, c->ctx);
    shm_chan_free(c->shm);   /* the rings unmapped, the doorbells closed */
    c->shm = NULL;
    for (out_seg *s = c->head, *n; s; s = n) {
        n = s->next;
        seg_free(s);
    }
    if (c->spare) seg_free(c->spare);
    net_listener *l = c->o.listener;
    if (l) {
        l->open--;
        if (l->owner_gone && !l->open) free(l);
    }
    dp_buf_release(&c->stage);
    auth_hs_clear(&c->hs);
    auth_key_clear(&c->key);
    auth_key_clear(&c->alt_key);
    free(c->own);
    free(c);
}

void netc_close_as(net_conn *c, int kind, const char *reason)
{
    if (!c->closing) {
        c->closing = 1;
        if (!c->kind) c->kind = kind;
        snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "closed");
        ev_io_stop(c->loop, &c->rio);
        ev_io_stop(c->loop, &c->wio);
        ev_io_stop(c->loop, &c->bio);
        ev_timer_stop(c->loop, &c->more);
    }
    if (!c->in_cb) netc_finish(c);
}

void net_conn_close(net_conn *c, const char *reason) { netc_close_as(c, NET_CLOSE_LOCAL, reason); }

/* ---- writing ---------------------------------------------------------------------- */

enum { OUT_AGAIN = -1, OUT_RETRY = -2, OUT_PEER = -3, OUT_PROTO = -4 };

void netc_bad_frame(net_conn *c, const char *what);

/* Writes iov to the transport: the bytes taken, or OUT_AGAIN (full: the socket's write
 * watcher or, on shared memory, the doorbell says when to try again), OUT_RETRY, or
 * OUT_PEER / OUT_PROTO with why. */
static ssize_t out_write(net_conn *c, const struct iovec *iov, int n, char *why)
{
    if (c->shm_on) {
        ssize_t w = shm_chan_writev(c->shm, iov, n, why);
        if (w < 0) return OUT_PROTO;
        if (w > 0) return w;
        return shm_chan_tx_wait(c->shm) ? OUT_RETRY : OUT_AGAIN;
    }
    ssize_t w = writev(c->fd, iov, n);
    if (w >= 0) return w;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return OUT_AGAIN;
    if (errno == EINTR) return OUT_RETRY;
    snprintf(why, DP_ERRLEN, "write failed: %s", strerror(errno));
    return OUT_PEER;
}

/* With nothing queued, a frame goes out at once from the caller's memory (header and
 * tensor in one writev, or straight into the ring): no copy for what is taken. Returns
 * the bytes taken; a failure is left for the queue's flush to meet and report. */
static size_t send_now(net_conn *c, const struct iovec *iov, int n)
{
    if (c->head || c->hs_state != HS_OPEN) return 0;
    char why[DP_ERRLEN];
    ssize_t w;
    do w = out_write(c, iov, n, why);
    while (w == OUT_RETRY);
    if (w <= 0) return 0;
    c->bytes_out += (uint64_t)w;
    return (size_t)w;
}

/* A written segment: kept as the spare when it is an owned one of moderate size (the
 * larger of two), else freed. */
static void seg_retire(net_conn *c, out_seg *s)
{
    if (s->own && s->p == s->own && s->cap <= SEG_SPARE_MAX && (!c->spare || c->spare->cap < s->cap)) {
        if (c->spare) seg_free(c->spare);
        s->next = NULL;
        s->len = s->off = 0;
        c->spare = s;
        return;
    }
    seg_free(s);
}

/* Writes as much of the queue as the socket takes. Returns 0, or -1 after closing. */
int netc_flush_out(net_conn *c)
{
    if (c->hs_state == HS_CONNECTING) return 0;
    while (c->head) {
        struct iovec iov[IOV_MAX_USED];
        int n = 0;
        for (out_seg *s = c->head; s && n < IOV_MAX_USED; s = s->next) {
            iov[n].iov_base = (void *)(s->p + s->off);
            iov[n++].iov_len = s->len - s->off;
        }
        char why[DP_ERRLEN];
        ssize_t w = out_write(c, iov, n, why);
        if (w == OUT_AGAIN) break;
        if (w == OUT_RETRY) continue;
        if (w < 0) {
            if (w == OUT_PROTO) netc_bad_frame(c, why);
            else netc_close_as(c, NET_CLOSE_PEER, why);
            return -1;
        }
        size_t left = (size_t)w;
        c->pending -= left;
        c->bytes_out += left;
        while (left && c->head) {
            out_seg *s = c->head;
            size_t rest = s->len - s->off;
            if (left < rest) {
                s->off += left;
                break;
            }
            left -= rest;
            c->head = s->next;
            if (!c->head) c->tail = NULL;
            seg_retire(c, s);
        }
    }
    if (c->head) {
        if (!c->shm_on && !ev_is_active(&c->wio)) ev_io_start(c->loop, &c->wio);
    } else {
        if (ev_is_active(&c->wio)) ev_io_stop(c->loop, &c->wio);
        if (c->close_after_flush) {
            netc_close_as(c, NET_CLOSE_LOCAL, c->reason[0] ? c->reason : "closed after an error");
            return -1;
        }
    }
    return 0;
}

/* Tries a write now: most frames leave without waiting for the loop. The caller may be
 * inside another connection's callback and still hold this one, so a failure here
 * frees the connection later, from the reap timer. */
void netc_kick(net_conn *c)
{
    int was = c->in_cb;
    c->in_cb = 1;
    netc_flush_out(c);
    c->in_cb = was;
    if (!was && c->closing) ev_timer_start(c->loop, &c->reap);
}

void netc_queue_copy(net_conn *c, const void *p, size_t n)
{
    if (!n) return;
    out_seg *t = c->tail;
    if (!t || !t->own || t->p != t->own || t->cap - t->len < n || t->len + n > SEG_COALESCE) {
        if (c->spare && c->spare->cap >= n) {
            t = c->spare;
            c->spare = NULL;
        } else {
            t = xcalloc(1, sizeof *t);
            t->cap = n > SEG_MIN ? n : SEG_MIN;
            t->own = xmalloc(t->cap);
            t->p = t->own;
        }
        if (c->tail) c->tail->next = t;
        else c->head = t;
        c->tail = t;
    }
    memcpy(t->own + t->len, p, n);
    t->len += n;
    c->pending += n;
}

static void queue_seg(net_conn *c, uint8_t *own, const uint8_t *p, size_t n)
{
    out_seg *s = xcalloc(1, sizeof *s);
    s->own = own;
    s->p = p;
    s->len = n;
    s->cap = n;   /* full: nothing is coalesced into a taken or borrowed segment */
    if (c->tail) c->tail->next = s;
    else c->head = s;
    c->tail = s;
    c->pending += n;
}

/* Queues the staged frames (in order). */
static void take_stage(net_conn *c)
{
    size_t n = dp_buf_pending(&c->stage);
    if (!n) return;
    if (n <= STAGE_COPY_MAX) {
        netc_queue_copy(c, c->stage.data + c->stage.off, n);
        dp_buf_clear(&c->stage);
        return;
    }
    queue_seg(c, c->stage.data, c->stage.data + c->stage.off, n);
    memset(&c->stage, 0, sizeof c->stage);
}

/* A frame of the connection's own (handshake, error): queued and written regardless of
 * the open state and the cap. */
void netc_send_internal(net_conn *c, int type, const void *p, size_t n)
{
    uint8_t hb[NET_HEADER];
    net_frame f = {.proto = c->o.proto->id, .type = (uint16_t)type, .length = (uint32_t)n};
    net_frame_encode(&f, hb);
    take_stage(c);
    netc_queue_copy(c, hb, sizeof hb);
    netc_queue_copy(c, p, n);
    netc_kick(c);
}

int net_conn_send(net_conn *c, net_frame h, const void *payload, size_t len, int copy)
{
    if (c->closing || c->close_after_flush || c->hs_state != HS_OPEN) return DP_ECLOSED;
    if (c->o.out_cap && net_conn_pending(c) + NET_HEADER + len > c->o.out_cap) return DP_EFULL;
    dp_assert("net: payload over the frame bound", len <= NET_MAX_PAYLOAD);
    uint8_t hb[NET_HEADER];
    h.proto = c->o.proto->id;
    h.length = (uint32_t)len;
    net_frame_encode(&h, hb);
    take_stage(c);
    struct iovec iov[2] = {{hb, sizeof hb}, {(void *)payload, len}};
    size_t done = send_now(c, iov, len ? 2 : 1);
    /* What was not taken is queued: copied (copy=1, or small) or borrowed. */
    if (done < sizeof hb) netc_queue_copy(c, hb + done, sizeof hb - done);
    size_t off = done > sizeof hb ? done - sizeof hb : 0;
    const uint8_t *rest = len ? (const uint8_t *)payload + off : NULL;
    if (len > off && (copy || len - off <= SEG_MIN)) netc_queue_copy(c, rest, len - off);
    else if (len > off) queue_seg(c, NULL, rest, len - off);
    netc_kick(c);
    return DP_OK;
}

dp_buf *net_conn_stage(net_conn *c) { return &c->stage; }

int net_conn_flush(net_conn *c)
{
    if (c->closing || c->close_after_flush || c->hs_state != HS_OPEN) {
        dp_buf_clear(&c->stage);
        return DP_ECLOSED;
    }
    if (c->o.out_cap && net_conn_pending(c) > c->o.out_cap) {
        dp_buf_clear(&c->stage);
        return DP_EFULL;
    }
    take_stage(c);
    netc_kick(c);
    return DP_OK;
}

void net_conn_send_error(net_conn *c, const char *text)
{
    if (c->closing || c->close_after_flush) return;
    size_t len = strlen(text);
    if (len > NET_MAX_TEXT) len = NET_MAX_TEXT;
    snprintf(c->reason, sizeof c->reason, "%s", text);
    if (!c->kind) c->kind = NET_CLOSE_LOCAL;
    dp_buf_clear(&c->stage);
    netc_send_internal(c, NET_T_ERROR, text, len);
    if (c->closing) return;
    c->close_after_flush = 1;
    ev_io_stop(c->loop, &c->rio);
    ev_timer_stop(c->loop, &c->guard);
    if (!c->head) netc_close_as(c, c->kind, text);
}

/* ---- reading ------------------------------------------------------------------------ */

void netc_bad_frame(net_conn *c, const char *what)
{
    char why[DP_ERRLEN + 32];
    snprintf(why, sizeof why, "bad frame: %s", what);
    netc_close_as(c, NET_CLOSE_PROTO, why);
}

static void deliver(net_conn *c, void *payload)
{
    if (c->open_pending) {
        netc_become_open(c);
        if (c->closing) return;
    }
    if (c->internal) {
        c->internal = 0;
        netc_handshake_frame(c, &c->cur, payload);
        return;
    }
    c->owner_frames++;
    c->h->on_frame(c, &c->cur, payload, c->ctx);
}

/* After a whole header: validates it and says where its payload goes. Returns 0 to go
 * on, -1 after closing. */
static int got_header(net_conn *c)
{
    char err[DP_ERRLEN];
    if (net_frame_decode(c->hbuf, c->o.proto, &c->cur, err) != DP_OK) {
        netc_bad_frame(c, err);
        return -1;
    }
    const net_frame *f = &c->cur;
    c->internal = c->hs_state != HS_OPEN || netc_is_auth_type(f->type) || netc_is_shm_type(f->type);
    /* The handshake reads only its own small frames (and a refusal's text), the upgrade
     * its two: anything else is decided on the header, its payload never read. */
    int wanted = netc_is_shm_type(f->type) ||
                 (c->hs_state != HS_OPEN && (netc_is_auth_type(f->type) || (f->type == NET_T_ERROR && c->o.role == NET_CLIENT)));
    if (c->internal && !wanted) {
        netc_handshake_frame(c, f, NULL);
        c->internal = 0;
        return c->closing || c->close_after_flush ? -1 : 0;
    }
    if (!c->internal && c->o.role == NET_SERVER && !c->hello_done && c->o.pre_hello_max &&
        f->length > c->o.pre_hello_max) {
        snprintf(err, sizeof err, "%s of %u bytes before HELLO", net_type_name(c->o.proto, f->type), f->length);
        netc_bad_frame(c, err);
        return -1;
    }
    void *dst = NULL;
    if (f->length && !c->internal && c->h->on_header) {
        int reject = 0;
        err[0] = 0;
        c->in_header = 1;
        c->lending = c->keeping = 0;
        dst = c->h->on_header(c, f, c->ctx, err, &reject);
        c->in_header = 0;
        if (reject) {
            netc_bad_frame(c, err[0] ? err : "refused by the handler");
            return -1;
        }
    }
    if (!f->length) {
        c->lending = 0;
        deliver(c, NULL);
        return 0;
    }
    if (c->lending) {
        c->pgot = 0;
        c->in_payload = 1;
        return 0;
    }
    if (!dst) {
        if (c->own_cap < f->length) {
            free(c->own);
            c->own_cap = f->length;
            c->own = xmalloc(c->own_cap);
        }
        dst = c->own;
    }
    c->dst = dst;
    c->pgot = 0;
    c->in_payload = 1;
    return 0;
}

enum { IN_AGAIN = -1, IN_RETRY = -2, IN_PEER = -3, IN_PROTO = -4 };

/* Reads up to n bytes from the transport: the count, 0 at the peer's end (on shared
 * memory: it died or closed, and the ring is empty), IN_AGAIN (nothing now: on shared
 * memory the peer was asked to ring), IN_RETRY, or IN_PEER / IN_PROTO with why. */
static ssize_t in_read(net_conn *c, void *p, size_t n, char *why)
{
    if (c->shm_on) {
        ssize_t r = shm_chan_read(c->shm, p, n, why);
        if (r < 0) return IN_PROTO;
        if (r > 0 || c->peer_gone) return r;
        return shm_chan_rx_wait(c->shm) ? IN_RETRY : IN_AGAIN;
    }
    ssize_t r = read(c->fd, p, n);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IN_AGAIN;
    if (errno == EINTR) return IN_RETRY;
    snprintf(why, DP_ERRLEN, "read failed: %s", strerror(errno));
    return IN_PEER;
}

/* A payload lent from the ring (net_conn_lend_payload): delivered once it is all in,
 * where it lies, then released. Returns 1 when delivered, 0 to wait for the peer's
 * doorbell, -1 after closing. */
static int lend_payload(net_conn *c, char *why)
{
    const void *p = NULL;
    int r = shm_chan_peek(c->shm, c->cur.length, &p, why);
    if (r < 0) {
        netc_bad_frame(c, why);
        return -1;
    }
    if (!r) {
        if (!c->peer_gone) return 0;
        netc_close_as(c, NET_CLOSE_PEER, "peer closed mid-frame (truncated frame)");
        return -1;
    }
    c->last_read_ns = dp_now_ns();
    c->bytes_in += c->cur.length;
    int keep = c->keeping;
    c->in_payload = c->lending = c->keeping = 0;
    shm_chan_hold(c->shm, c->cur.length);   /* the handler may release it in on_frame */
    deliver(c, (void *)(uintptr_t)p);
    if (!keep) shm_chan_unhold(c->shm, p);
    return 1;
}

/* Whether this frame's payload can be lent from the ring: shared memory, aligned, and
 * able to arrive whole beside what is held (else it would wait for itself). */
static int can_lend(net_conn *c)
{
    dp_assert("net_conn_lend_payload / hold_payload are called from on_header", c->in_header);
    return c->shm_on && shm_chan_rx_offset(c->shm) % NET_LEND_ALIGN == 0 &&
           shm_chan_unreleased(c->shm) + c->cur.length <= shm_chan_ring_bytes(c->shm) &&
           shm_chan_holds(c->shm) < SHM_HOLDS;
}

int net_conn_lend_payload(net_conn *c)
{
    c->lending = can_lend(c);
    return c->lending;
}

int net_conn_hold_payload(net_conn *c)
{
    c->lending = c->keeping = can_lend(c);
    return c->keeping;
}

void net_conn_release(net_conn *c, const void *payload)
{
    shm_chan_unhold(c->shm, payload);
}

/* Reads frames until EAGAIN or the budget (a ring with bytes left is read again at the
 * next loop turn: its peer does not ring for bytes already there). A dead peer's ring
 * is read to its end regardless, as TCP delivers what came before a FIN. */
void netc_read_frames(net_conn *c)
{
    size_t budget = 0;
    while (!c->closing && !c->close_after_flush && c->reading) {
        if (budget >= NET_READ_BUDGET && !c->peer_gone) {
            if (c->shm_on) ev_timer_start(c->loop, &c->more);
            return;
        }
        char why[DP_ERRLEN];
        ssize_t r;
        size_t left = c->peer_gone ? SIZE_MAX : NET_READ_BUDGET - budget;   /* one read within it too */
        if (c->in_payload && c->lending) {
            int got = lend_payload(c, why);
            if (got <= 0) return;
            budget += c->cur.length;
            continue;
        }
        if (!c->in_payload) r = in_read(c, c->hbuf + c->hgot, NET_HEADER - c->hgot, why);
        else r = in_read(c, c->dst + c->pgot, c->cur.length - c->pgot < left ? c->cur.length - c->pgot : left, why);
        if (r == 0) {
            netc_close_as(c, NET_CLOSE_PEER, (c->hgot || c->in_payload) ? "peer closed mid-frame (truncated frame)"
                                                                  : "peer closed the connection");
            return;
        }
        if (r == IN_AGAIN) return;
        if (r == IN_RETRY) continue;
        if (r == IN_PROTO) {
            netc_bad_frame(c, why);
            return;
        }
        if (r < 0) {
            netc_close_as(c, NET_CLOSE_PEER, why);
            return;
        }
        budget += (size_t)r;
        c->last_read_ns = dp_now_ns();
        if (!c->in_payload) {
            c->hgot += (size_t)r;
            if (c->hgot < NET_HEADER) continue;
            c->hgot = 0;
            if (got_header(c)) return;
        } else {
            c->pgot += (size_t)r;
            c->bytes_in += (uint64_t)r;
            if (c->pgot < c->cur.length) continue;
            c->in_payload = 0;
            deliver(c, c->dst);
        }
    }
}

/* ---- watchers --------------------------------------------------------------------- */

static void on_reap(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    netc_finish(dp_container_of(w, net_conn, reap));
}


static void on_defer(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, defer);
    ENTER(c);
    if (c->open_pending && !c->closing) netc_become_open(c);
    LEAVE(c);
}

static void on_guard(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, guard);
    uint64_t now = dp_now_ns();
    char why[128];
    ENTER(c);
    if (c->o.hello_s > 0 && !c->hello_done && now - c->born_ns > (uint64_t)(c->o.hello_s * 1e9)) {
        if (c->o.role == NET_SERVER)
            snprintf(why, sizeof why, "no %sHELLO within %g s", c->key.set ? "authenticated " : "", c->o.hello_s);
        else
            snprintf(why, sizeof why, "%s within %g s", c->hs_state == HS_CONNECTING ? "no connection" : "no handshake",
                     c->o.hello_s);
        netc_close_as(c, NET_CLOSE_TIMEOUT, why);
    } else if (c->hello_done && c->o.frame_s <= 0 && c->o.idle_s <= 0) {
        ev_timer_stop(c->loop, &c->guard);
    } else if (c->o.frame_s > 0 && (c->hgot || c->in_payload) && now > c->last_read_ns &&
               now - c->last_read_ns > (uint64_t)(c->o.frame_s * 1e9)) {
        snprintf(why, sizeof why, "a frame stalled: no byte for %g s", c->o.frame_s);
        netc_close_as(c, NET_CLOSE_TIMEOUT, why);
    } else if (c->o.idle_s > 0 && now > c->last_read_ns && now - c->last_read_ns > (uint64_t)(c->o.idle_s * 1e9)) {
        snprintf(why, sizeof why, "idle: nothing received for %g s", c->o.idle_s);
        netc_close_as(c, NET_CLOSE_TIMEOUT, why);
    }
    LEAVE(c);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, wio);
    ENTER(c);
    if (c->hs_state == HS_CONNECTING) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr) {
            char why[128];
            snprintf(why, sizeof why, "connect: %s", strerror(soerr));
            netc_close_as(c, NET_CLOSE_PEER, why);
        } else {
            ev_io_stop(c->loop, &c->wio);
            if (c->reading) ev_io_start(c->loop, &c->rio);
            c->hs_state = HS_OPEN;   /* so that netc_flush_out writes what the handshake queues */
            netc_start_handshake(c, 1);
        }
    }
    if (!c->closing) netc_flush_out(c);
    LEAVE(c);
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, rio);
    ENTER(c);
    if (c->shm_on) netc_shm_liveness(c);
    else netc_read_frames(c);
    LEAVE(c);
}

static net_conn *conn_alloc(struct ev_loop *loop, int fd, const net_conn_opts *opts,
                            const net_handler *handler, void *ctx, const char *peer_name)
{
    net_conn *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->fd = fd;
    c->o = *opts;
    if (!c->o.name) c->o.name = "net";
    if (!c->o.what) c->o.what = "peer";
    if (!c->o.auth_context) c->o.auth_context = "downpour";
    if (opts->key && opts->key->set) c->key = *opts->key;
    if (opts->alt_key && opts->alt_key->set) c->alt_key = *opts->alt_key;
    c->o.key = c->o.alt_key = NULL;
    c->h = handler;
    c->ctx = ctx;
    c->reading = 1;
    snprintf(c->peer, sizeof c->peer, "%s", peer_name ? peer_name : "?");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ev_io_init(&c->rio, on_read, fd, EV_READ);
    ev_io_init(&c->wio, on_write, fd, EV_WRITE);
    ev_timer_init(&c->reap, on_reap, 0., 0.);
    ev_timer_init(&c->defer, on_defer, 0., 0.);
    ev_timer_init(&c->more, netc_shm_on_more, 0., 0.);
    ev_io_init(&c->bio, netc_shm_on_bell, -1, EV_READ);
    double g = 1.0;
    if (c->o.hello_s > 0 && c->o.hello_s / 4 < g) g = c->o.hello_s / 4;
    if (c->o.frame_s > 0 && c->o.frame_s / 4 < g) g = c->o.frame_s / 4;
    if (c->o.idle_s > 0 && c->o.idle_s / 4 < g) g = c->o.idle_s / 4;
    if (g < 0.01) g = 0.01;
    ev_timer_init(&c->guard, on_guard, g, g);
    if (c->o.hello_s > 0 || c->o.frame_s > 0 || c->o.idle_s > 0) ev_timer_start(loop, &c->guard);
    c->born_ns = c->last_read_ns = dp_now_ns();
    if (c->o.listener) c->o.listener->open++;
    return c;
}

net_conn *net_conn_new(struct ev_loop *loop, int fd, const net_conn_opts *opts,
                       const net_handler *handler, void *ctx, const char *peer_name)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    net_conn *c = conn_alloc(loop, fd, opts, handler, ctx, peer_name);
    ev_io_start(loop, &c->rio);
    netc_start_handshake(c, 0);
    return c;
}

net_conn *net_conn_connect(struct ev_loop *loop, const struct sockaddr_storage *ss, socklen_t len,
                           const net_conn_opts *opts, const net_handler *handler, void *ctx,
                           const char *peer_name, char *err)
{
    int fd = net_socket(ss->ss_family, err);
    if (fd < 0) return NULL;
    net_conn *c = conn_alloc(loop, fd, opts, handler, ctx, peer_name);
    c->hs_state = HS_CONNECTING;
    if (connect(fd, (const struct sockaddr *)ss, len) < 0 && errno != EINPROGRESS) {
        char why[128];
        snprintf(why, sizeof why, "connect: %s", strerror(errno));
        c->closing = 1;
        c->kind = NET_CLOSE_PEER;
        snprintf(c->reason, sizeof c->reason, "%s", why);
        ev_timer_start(loop, &c->reap);   /* on_close from the loop, as for any failure */
        return c;
    }
    ev_io_start(loop, &c->wio);   /* completion (or failure) shows as writable */
    return c;
}

void net_conn_hello_done(net_conn *c) { c->hello_done = 1; }
void net_conn_set_out_cap(net_conn *c, size_t cap) { c->o.out_cap = cap; }

void net_conn_set_reading(net_conn *c, int on)
{
    c->reading = on;
    if (c->closing || c->close_after_flush || c->hs_state == HS_CONNECTING) return;
    if (c->shm_on) {
        /* The doorbell and the socket stay watched (room, death); bytes already in the
         * ring are read at the next loop turn. */
        if (on) ev_timer_start(c->loop, &c->more);
        return;
    }
    if (on) ev_io_start(c->loop, &c->rio);
    else ev_io_stop(c->loop, &c->rio);
}

int net_conn_is_open(const net_conn *c) { return c->hs_state == HS_OPEN && !c->closing && !c->close_after_flush; }
int net_conn_close_kind(const net_conn *c) { return c->kind; }
int net_conn_alt_auth(const net_conn *c) { return c->alt_auth; }
int net_conn_fd(const net_conn *c) { return c->fd; }
const char *net_conn_transport(const net_conn *c) { return c->shm_on ? "shm" : "tcp"; }
size_t net_conn_pending(const net_conn *c) { return c->pending + dp_buf_pending(&c->stage); }
const char *net_conn_peer(const net_conn *c) { return c->peer; }
void *net_conn_ctx(const net_conn *c) { return c->ctx; }
void net_conn_set_ctx(net_conn *c, void *ctx) { c->ctx = ctx; }
uint64_t net_conn_bytes_in(const net_conn *c) { return c->bytes_in; }
uint64_t net_conn_bytes_out(const net_conn *c) { return c->bytes_out; }

/* ---- listeners ---------------------------------------------------------------------- */

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_listener *l = dp_container_of(w, net_listener, w);
    for (;;) {
        char peer[96];
        int fd = net_accept(l->fd, peer, sizeof peer);
        if (fd == -1) return;
        if (fd < 0) {
            dp_log(DP_LOG_WARN, l->name, "accept: %s", strerror(errno));
            return;
        }
        if (l->max_conns > 0 && l->open >= l->max_conns) {
            close(fd);
            l->refused++;
            uint64_t now = dp_now_ns();
            if (now - l->refused_log_ns < 1000000000ull) continue;
            uint64_t n = l->refused - l->refused_logged;
            dp_log(DP_LOG_WARN, l->name, "refused %llu connection%s over the cap of %d (latest from %s)",
                   (unsigned long long)n, n == 1 ? "" : "s", l->max_conns, peer);
            l->refused_logged = l->refused;
            l->refused_log_ns = now;
            continue;
        }
        l->on_accept(l, fd, peer, l->ctx);
    }
}

net_listener *net_listener_new(struct ev_loop *loop, int lfd, int max_conns, const char *name,
                               net_accept_fn fn, void *ctx)
{
    net_listener *l = xcalloc(1, sizeof *l);
    l->loop = loop;
    l->fd = lfd;
    l->max_conns = max_conns;
    snprintf(l->name, sizeof l->name, "%s", name ? name : "net");
    l->on_accept = fn;
    l->ctx = ctx;
    fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
    ev_io_init(&l->w, on_accept, lfd, EV_READ);
    ev_io_start(loop, &l->w);
    return l;
}

void net_listener_free(net_listener *l)
{
    if (!l) return;
    ev_io_stop(l->loop, &l->w);
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
    l->owner_gone = 1;
    if (!l->open) free(l);
}

int net_listener_open_conns(const net_listener *l) { return l->open; }
int net_listener_max_conns(const net_listener *l) { return l->max_conns; }
uint64_t net_listener_refused(const net_listener *l) { return l->refused; }
uint64_t net_listener_auth_failures(const net_listener *l) { return l->auth_failures; }
