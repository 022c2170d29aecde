#define _GNU_SOURCE
/* conn_shm.c — a connection's shared-memory transport (conn.h, docs/wire.md): the
 * upgrade (the client's SHM_OFFER once open, the server's SHM_ANSWER), the doorbell and
 * the socket as the peer's liveness once switched. The rings themselves are net/shm.c;
 * reading and writing through them are conn.c's in_read / out_write, so a ring's bytes
 * meet exactly the checks a socket's do. One loop thread, as conn.c. */
#include "net/conn_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/dp.h"

/* ---- the shared-memory upgrade (docs/wire.md) ---------------------------------------
 * Client, once open (authenticated): SHM_OFFER with a fresh channel, and on_open only
 * after SHM_ANSWER (taken: both sides move frames through the rings; declined: TCP, one
 * line in the log). Server: an offer is taken only as the connection's first frame. The
 * server answers on TCP and writes to the ring from then on; the client reads TCP up to
 * the answer and the ring after it, so no frame overtakes another. */

/* Whether the socket's two ends are one host's addresses (loopback, or the same one):
 * a ps reached through another address (--netns, another machine) gets TCP. */
static int same_host_addr(int fd)
{
    struct sockaddr_storage a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    if (getsockname(fd, (struct sockaddr *)&a, &la) || getpeername(fd, (struct sockaddr *)&b, &lb) ||
        a.ss_family != b.ss_family)
        return 0;
    if (a.ss_family == AF_UNIX) return 1;
    if (a.ss_family == AF_INET) {
        uint32_t x = ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr);
        uint32_t y = ntohl(((struct sockaddr_in *)&b)->sin_addr.s_addr);
        return x == y || (x >> 24 == 127 && y >> 24 == 127);
    }
    if (a.ss_family == AF_INET6)
        return !memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr, &((struct sockaddr_in6 *)&b)->sin6_addr,
                       sizeof(struct in6_addr));
    return 0;
}

void netc_shm_on_bell(struct ev_loop *loop, ev_io *w, int revents);

/* Both sides: frames go through the rings from now on. */
static void shm_start(net_conn *c)
{
    c->shm_on = 1;
    ev_io_stop(c->loop, &c->wio);
    ev_io_init(&c->bio, netc_shm_on_bell, shm_chan_bell_fd(c->shm), EV_READ);
    ev_io_start(c->loop, &c->bio);
    /* One line per connection, the client's: where a run says which transport it got. */
    dp_log(c->o.role == NET_CLIENT ? DP_LOG_INFO : DP_LOG_DEBUG, c->o.name, "%s: shared memory (two %u-byte rings)",
           c->peer, shm_chan_ring_bytes(c->shm));
}

/* Client: offers shared memory when asked to and the peer is on this host. Returns 1
 * when offered (on_open waits for the answer), 0 to open on TCP now. */
int netc_shm_offer(net_conn *c)
{
    if (c->o.role != NET_CLIENT || !c->o.shm || c->shm_asked) return 0;
    c->shm_asked = 1;
    char err[DP_ERRLEN];
    uint8_t offer[SHM_OFFER_BYTES];
    if (!same_host_addr(c->fd)) {
        dp_log(DP_LOG_INFO, c->o.name, "%s is reached through another address: TCP, not shared memory", c->peer);
        return 0;
    }
    c->shm = shm_chan_offer(c->o.shm_ring ? c->o.shm_ring : SHM_RING_DEFAULT, offer, err);
    if (!c->shm) {
        dp_log(DP_LOG_WARN, c->o.name, "shared memory unavailable (%s): TCP to %s", err, c->peer);
        return 0;
    }
    c->hs_state = HS_C_SHM;
    netc_send_internal(c, NET_T_SHM_OFFER, offer, sizeof offer);
    return 1;
}

static void shm_answer(net_conn *c, int taken, const char *why)
{
    net_frame f = {.proto = c->o.proto->id, .type = NET_T_SHM_ANSWER, .arg0 = taken};
    size_t n = why ? strlen(why) : 0;
    if (n > NET_SHM_ANSWER_MAX) n = NET_SHM_ANSWER_MAX;
    uint8_t hb[NET_HEADER];
    f.length = (uint32_t)n;
    net_frame_encode(&f, hb);
    netc_queue_copy(c, hb, sizeof hb);
    netc_queue_copy(c, why, n);
    netc_kick(c);
}

/* Server: an offer. */
static void shm_offered(net_conn *c, const uint8_t *p)
{
    char err[DP_ERRLEN];
    if (c->shm_asked || c->owner_frames) {
        netc_bad_frame(c, "SHM_OFFER after the connection's first frame");
        return;
    }
    c->shm_asked = 1;
    if (!c->o.shm) {
        snprintf(err, sizeof err, "this %s has shared memory off (--transport tcp)", c->o.what);
        shm_answer(c, 0, err);
        return;
    }
    if (c->head || dp_buf_pending(&c->stage)) {
        shm_answer(c, 0, "output pending on TCP");
        return;
    }
    if (shm_chan_accept(p, &c->shm, err)) {
        dp_log(DP_LOG_WARN, c->o.name, "%s: shared memory declined (%s): TCP", c->peer, err);
        shm_answer(c, 0, err);
        return;
    }
    shm_answer(c, 1, NULL);
    /* The answer must have left on TCP before anything goes to the ring (it is 32 bytes
     * into an empty socket buffer). */
    if (c->closing) return;
    if (c->head) {
        netc_close_as(c, NET_CLOSE_PEER, "could not send the shared-memory answer");
        return;
    }
    shm_start(c);
}

/* Client: the answer. */
static void shm_answered(net_conn *c, const net_frame *f, const uint8_t *p)
{
    if (f->arg0 == 1) {
        shm_chan_accepted(c->shm);
        shm_start(c);
    } else {
        dp_log(DP_LOG_WARN, c->o.name, "%s declined shared memory (%.*s): TCP", c->peer, (int)f->length,
               p ? (const char *)p : "");
        shm_chan_free(c->shm);
        c->shm = NULL;
    }
    netc_become_open(c);
}

/* An upgrade frame, or any frame while the client waits for the answer. Returns 1 when
 * handled here, 0 to leave it to the authentication handshake (which refuses it). */
int netc_shm_frame(net_conn *c, const net_frame *f, const uint8_t *p)
{
    if (c->hs_state == HS_OPEN && f->type == NET_T_SHM_OFFER && c->o.role == NET_SERVER) {
        shm_offered(c, p);
        return 1;
    }
    if (c->hs_state == HS_C_SHM && f->type == NET_T_SHM_ANSWER) {
        shm_answered(c, f, p);
        return 1;
    }
    if (c->hs_state == HS_C_SHM && f->type == NET_T_ERROR) {
        char msg[DP_ERRLEN];
        int n = f->length > 300 ? 300 : (int)f->length;
        snprintf(msg, sizeof msg, "refused: %.*s", n, p ? (const char *)p : "");
        netc_close_as(c, NET_CLOSE_PEER, msg);
        return 1;
    }
    if (c->hs_state != HS_OPEN && c->hs_state != HS_C_SHM) return 0;
    char what[96];
    snprintf(what, sizeof what, "unexpected %s", net_type_name(c->o.proto, f->type));
    netc_bad_frame(c, what);
    return 1;
}

/* ---- liveness and wake-ups ----------------------------------------------------------- */

/* On shared memory: the peer is gone (its socket or its doorbell ended). Its ring is
 * read to the end, then the connection closes as the peer's doing; with reading off,
 * that waits until reading is on again. */
static void peer_gone(net_conn *c)
{
    c->peer_gone = 1;
    ev_io_stop(c->loop, &c->rio);   /* both stay readable at their end */
    ev_io_stop(c->loop, &c->bio);
    netc_read_frames(c);
    if (!c->closing && c->close_after_flush) netc_close_as(c, NET_CLOSE_PEER, "peer closed the connection");
}

/* On shared memory the socket carries nothing: a byte on it is a broken peer, its end
 * the peer's death. */
void netc_shm_liveness(net_conn *c)
{
    uint8_t b;
    ssize_t r = read(c->fd, &b, 1);
    if (r > 0) netc_bad_frame(c, "bytes on the TCP socket after the switch to shared memory");
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) peer_gone(c);
}

/* The peer rang: bytes in, room out, or it died. */
void netc_shm_on_bell(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, bio);
    ENTER(c);
    if (shm_chan_bell_drain(c->shm) != DP_OK) {
        peer_gone(c);
    } else {
        netc_read_frames(c);
        if (!c->closing && c->head) netc_flush_out(c);
    }
    LEAVE(c);
}

/* The read budget ran out with bytes left in the ring: read on (the peer rings only for
 * bytes we wait for). */
void netc_shm_on_more(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    net_conn *c = dp_container_of(w, net_conn, more);
    ENTER(c);
    netc_read_frames(c);
    LEAVE(c);
}
