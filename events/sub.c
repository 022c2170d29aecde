/* sub.c — the hub's subscriber client (viewers, test clients): connects, runs the
 * handshake when a secret is set (net/auth.h: the secret or the hub's viewer token from
 * $DOWNPOUR_HUB_SECRET / $DOWNPOUR_SECRET; the hub's proof is checked), sends HELLO_SUB,
 * then decodes the hub's frames into a FIFO of records plus the hub's string
 * table. The first records are the state snapshot (until STATE_END), then the live
 * stream. Frames are validated like everywhere else: a bad one ends the stream with
 * DP_EPROTO. One thread per evt_sub; the socket is non-blocking throughout. */
#include "events/stream.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/wire.h"
#include "net/auth.h"

#define SUB_MAX_QUEUED (1u << 20)   /* stop reading while this many records wait */

struct evt_sub {
    int fd, closed, synced;
    char addr[128];
    evt_buf in;
    evt_strtab *strings;
    evt_record *q;                 /* records [qhead, qlen) are waiting */
    size_t qhead, qlen, qcap;
    uint64_t state_count, dropped;
    int64_t hub_t0;
    char err[DP_ERRLEN];           /* sticky protocol error */
};

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = { fd, events, 0 };
    int rc;
    do rc = poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    return rc;
}

/* One small frame, whole (a fresh socket's send buffer takes it). */
static int sub_send_frame(evt_sub *s, int type, const void *p, size_t n, char *err)
{
    evt_buf b = {0};
    evt_frame_put(&b, type, p, n);
    ssize_t w = send(s->fd, b.data, b.len, MSG_NOSIGNAL);
    int ok = w == (ssize_t)b.len;
    evt_buf_release(&b);
    if (!ok) return dp_fail(err, DP_EIO, "hub %s: send: %s", s->addr, w < 0 ? strerror(errno) : "short write");
    return DP_OK;
}

/* Waits (until deadline) for the hub's next frame, which must be `type` with
 * EVT_AUTH_BYTES of payload, copied to out. An ERROR frame fails with its text. The
 * bytes after it stay in s->in for evt_sub_pump. */
static int sub_expect(evt_sub *s, int type, uint8_t out[EVT_AUTH_BYTES], uint64_t deadline, char *err)
{
    for (;;) {
        evt_wire_header h;
        const uint8_t *p;
        int rc = evt_frame_next(&s->in, &h, &p, err);
        if (rc < 0) return rc;
        if (rc == 1) {
            if (h.type == EVT_F_ERROR) {
                int n = h.length > 300 ? 300 : (int)h.length;
                return dp_fail(err, DP_EPROTO, "hub %s: %.*s", s->addr, n, (const char *)p);
            }
            if (h.type != type || h.length != EVT_AUTH_BYTES)
                return dp_fail(err, DP_EPROTO, "hub %s: %s frame (length %u) during the handshake, "
                               "expected %s", s->addr, evt_wire_type_name(h.type), h.length,
                               evt_wire_type_name(type));
            memcpy(out, p, EVT_AUTH_BYTES);
            evt_buf_consume(&s->in, EVT_WIRE_HEADER + h.length);
            return DP_OK;
        }
        uint64_t now = dp_now_ns();
        if (now >= deadline || wait_fd(s->fd, POLLIN, (int)((deadline - now) / 1000000 + 1)) <= 0)
            return dp_fail(err, DP_ETIMEDOUT, "hub %s: no answer to the handshake", s->addr);
        uint8_t *dst = evt_buf_reserve(&s->in, 4096);
        ssize_t n = recv(s->fd, dst, 4096, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n <= 0)
            return dp_fail(err, DP_ECLOSED, "hub %s: closed the connection during the handshake "
                           "(it has no secret, or another one?)", s->addr);
        s->in.len += (size_t)n;
    }
}

/* The handshake (net/auth.h) before HELLO_SUB; the hub's proof is checked too. */
static int sub_authenticate(evt_sub *s, const auth_key *key, uint64_t deadline, char *err)
{
    auth_hs hs;
    uint8_t buf[AUTH_NONCE_BYTES];
    auth_hs_start(&hs, AUTH_CLIENT, AUTH_CTX_HUB, buf);
    int rc = sub_send_frame(s, EVT_F_AUTH_HELLO, buf, sizeof buf, err);
    if (!rc) rc = sub_expect(s, EVT_F_AUTH_CHALLENGE, buf, deadline, err);
    if (!rc) {
        auth_hs_peer_nonce(&hs, buf);
        auth_hs_prove(&hs, key, buf);
        rc = sub_send_frame(s, EVT_F_AUTH_PROOF, buf, sizeof buf, err);
    }
    if (!rc) rc = sub_expect(s, EVT_F_AUTH_OK, buf, deadline, err);
    if (!rc && auth_hs_verify(&hs, key, buf) != 0)
        rc = dp_fail(err, DP_EPROTO, "hub %s failed to prove it knows the secret (a different secret?)", s->addr);
    auth_hs_clear(&hs);
    return rc;
}

evt_sub *evt_sub_connect(const char *hub_addr, int timeout_ms, char *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (evt_wire_parse_addr(hub_addr, 0, &ss, &len, err)) return NULL;
    int fd = evt_wire_socket(ss.ss_family, err);
    if (fd < 0) return NULL;
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
        dp_fail(err, DP_EIO, "hub %s: connect: %s", hub_addr, strerror(errno));
        goto fail;
    }
    int rc = wait_fd(fd, POLLOUT, timeout_ms);
    if (rc == 0) {
        dp_fail(err, DP_ETIMEDOUT, "hub %s: connect timed out after %d ms", hub_addr, timeout_ms);
        goto fail;
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (rc < 0 || soerr) {
        dp_fail(err, DP_EIO, "hub %s: connect: %s", hub_addr, strerror(rc < 0 ? errno : soerr));
        goto fail;
    }
    evt_sub *s = xcalloc(1, sizeof *s);
    s->fd = fd;
    s->strings = evt_strtab_new();
    snprintf(s->addr, sizeof s->addr, "%s", hub_addr);
    uint64_t deadline = dp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    auth_key key;
    if (auth_hub_key_from_env(&key, err) || (key.set && sub_authenticate(s, &key, deadline, err))) {
        auth_key_clear(&key);
        evt_sub_close(s);
        return NULL;
    }
    auth_key_clear(&key);
    uint8_t flags[4] = {0};
    if (sub_send_frame(s, EVT_F_HELLO_SUB, flags, sizeof flags, err)) {
        evt_sub_close(s);
        return NULL;
    }
    return s;
fail:
    close(fd);
    return NULL;
}

void evt_sub_close(evt_sub *s)
{
    if (!s) return;
    close(s->fd);
    evt_buf_release(&s->in);
    evt_strtab_free(s->strings);
    free(s->q);
    free(s);
}

int evt_sub_fd(const evt_sub *s) { return s->fd; }

static int sub_define(void *ctx, uint32_t id, const char *str, size_t len)
{
    evt_sub *s = ctx;
    return evt_strtab_define(s->strings, id, str, len) ? DP_EPROTO : 0;
}

static int sub_frame(evt_sub *s, const evt_wire_header *h, const uint8_t *p, char *err)
{
    switch (h->type) {
    case EVT_F_WELCOME:
        if (h->length != 8) break;
        s->hub_t0 = (int64_t)evt_get_u64(p);
        return 0;
    case EVT_F_STRINGS: {
        err[0] = 0;
        int rc = evt_wire_each_string(p, h->length, sub_define, s, err);
        if (rc && !err[0]) dp_fail(err, DP_EPROTO, "string definition out of order");
        return rc;
    }
    case EVT_F_EVENTS: {
        if (s->qhead && s->qhead == s->qlen) s->qhead = s->qlen = 0;
        if (s->qhead > s->qcap / 2) {
            memmove(s->q, s->q + s->qhead, (s->qlen - s->qhead) * sizeof *s->q);
            s->qlen -= s->qhead;
            s->qhead = 0;
        }
        size_t before = s->qlen;
        int n = evt_wire_get_events(p, h->length, &s->q, &s->qlen, &s->qcap, err);
        if (n < 0) return n;
        if (!s->synced) s->state_count += s->qlen - before;
        return n;
    }
    case EVT_F_STATE_END:
        if (h->length) break;
        s->synced = 1;
        return 0;
    case EVT_F_DROPPED:
        if (h->length != 8) break;
        s->dropped = evt_get_u64(p);
        return 0;
    case EVT_F_ERROR: {
        int n = h->length > 300 ? 300 : (int)h->length;
        return dp_fail(err, DP_EPROTO, "hub %s: %.*s", s->addr, n, (const char *)p);
    }
    default:
        return dp_fail(err, DP_EPROTO, "hub %s: unexpected %s frame", s->addr,
                       evt_wire_type_name(h->type));
    }
    return dp_fail(err, DP_EPROTO, "hub %s: %s frame with length %u", s->addr,
                   evt_wire_type_name(h->type), h->length);
}

int evt_sub_pump(evt_sub *s, int timeout_ms, char *err)
{
    if (s->err[0]) return dp_fail(err, DP_EPROTO, "%s", s->err);
    if (s->closed) return DP_ECLOSED;
    if (s->qlen - s->qhead >= SUB_MAX_QUEUED) return 0;
    if (timeout_ms != 0) {
        int rc = wait_fd(s->fd, POLLIN, timeout_ms);
        if (rc < 0) return dp_fail(err, DP_EIO, "poll: %s", strerror(errno));
        if (rc == 0) return 0;
    }
    size_t before = s->qlen - s->qhead;
    while (s->qlen - s->qhead < SUB_MAX_QUEUED) {
        uint8_t *dst = evt_buf_reserve(&s->in, 65536);
        ssize_t n = recv(s->fd, dst, 65536, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {
            s->closed = 1;
            break;
        }
        s->in.len += (size_t)n;
        evt_wire_header h;
        const uint8_t *p;
        int rc;
        while ((rc = evt_frame_next(&s->in, &h, &p, s->err)) == 1) {
            rc = sub_frame(s, &h, p, s->err);
            if (rc < 0) break;
            evt_buf_consume(&s->in, EVT_WIRE_HEADER + h.length);
        }
        if (rc < 0) {
            if (!s->err[0]) snprintf(s->err, sizeof s->err, "hub %s: protocol error", s->addr);
            return dp_fail(err, DP_EPROTO, "%s", s->err);
        }
    }
    size_t got = s->qlen - s->qhead - before;
    if (!got && s->closed) return DP_ECLOSED;
    return (int)got;
}

int evt_sub_next(evt_sub *s, evt_record *e)
{
    if (s->qhead == s->qlen) return 0;
    *e = s->q[s->qhead++];
    return 1;
}

int evt_sub_read(evt_sub *s, evt_record *e, int timeout_ms, char *err)
{
    uint64_t end = dp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    for (;;) {
        if (evt_sub_next(s, e)) return 1;
        int left = 0;
        if (timeout_ms < 0) left = -1;
        else {
            uint64_t now = dp_now_ns();
            left = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
        }
        int rc = evt_sub_pump(s, left, err);
        if (rc < 0) return rc;
        if (rc == 0 && left == 0) return evt_sub_next(s, e);
    }
}

const char *evt_sub_string(const evt_sub *s, uint32_t id) { return evt_strtab_get(s->strings, id); }
const evt_strtab *evt_sub_strings(const evt_sub *s) { return s->strings; }
int evt_sub_synced(const evt_sub *s) { return s->synced; }
uint64_t evt_sub_state_count(const evt_sub *s) { return s->state_count; }
int64_t evt_sub_hub_t0(const evt_sub *s) { return s->hub_t0; }
uint64_t evt_sub_dropped(const evt_sub *s) { return s->dropped; }
