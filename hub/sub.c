/* sub.c — the hub's subscriber client (viewers, test clients): a net_conn (net/conn.c:
 * the handshake when a secret is set — the secret or the hub's viewer token from
 * $DOWNPOUR_HUB_SECRET / $DOWNPOUR_SECRET, the hub's proof checked — the frames, the
 * limits) on a private libev loop that evt_sub_pump runs; HELLO_SUB once open, then the
 * hub's frames decoded into a FIFO of records plus the hub's string table. The first
 * records are the state snapshot (until STATE_END), then the live stream. A bad frame
 * ends the stream with DP_EPROTO. One thread per evt_sub. */
#include "hub/stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "common/dp.h"
#include "hub/wire.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/sock.h"

#define SUB_MAX_QUEUED (1u << 20)   /* stop reading while this many records wait */

struct evt_sub {
    struct ev_loop *loop;
    net_conn *conn;                /* NULL once closed */
    int fd, open, closed, synced;
    char addr[128];
    evt_strtab *strings;
    evt_record *q;                 /* records [qhead, qlen) are waiting */
    size_t qhead, qlen, qcap;
    uint64_t state_count, dropped;
    uint64_t received, pump_mark;  /* records queued in all / when this pump began */
    int64_t hub_t0;
    char err[DP_ERRLEN];           /* sticky protocol error */
};

static int sub_frame(evt_sub *s, const net_frame *h, const uint8_t *p, char *err);

static void sub_on_open(net_conn *c, void *ctx)
{
    evt_sub *s = ctx;
    uint8_t flags[4] = {0};
    evt_wire_put(net_conn_stage(c), EVT_F_HELLO_SUB, flags, sizeof flags);
    net_conn_flush(c);
    s->open = 1;
}

static void sub_on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    evt_sub *s = ctx;
    if (sub_frame(s, h, payload, s->err) < 0) {
        if (!s->err[0]) snprintf(s->err, sizeof s->err, "hub %s: protocol error", s->addr);
        net_conn_close(c, s->err);
        return;
    }
    if (s->qlen - s->qhead >= SUB_MAX_QUEUED) net_conn_set_reading(c, 0);
}

static void sub_on_close(net_conn *c, const char *reason, void *ctx)
{
    evt_sub *s = ctx;
    int kind = net_conn_close_kind(c);
    s->conn = NULL;
    s->closed = 1;
    if (s->err[0]) return;
    if (kind == NET_CLOSE_AUTH && !s->open)
        snprintf(s->err, sizeof s->err, "hub %s: %s", s->addr, reason);
    else if (kind == NET_CLOSE_PROTO || kind == NET_CLOSE_AUTH || kind == NET_CLOSE_TIMEOUT)
        snprintf(s->err, sizeof s->err, "hub %s: %s", s->addr, reason);
    else if (!s->open)
        snprintf(s->err, sizeof s->err, "hub %s: %s", s->addr, reason);
}

static const net_handler sub_handler = {sub_on_open, NULL, sub_on_frame, sub_on_close};

static void sub_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(w);
    DP_UNUSED(revents);
    ev_break(loop, EVBREAK_ONE);
}

/* Runs the loop until cond(s) holds, the connection closes, or timeout_ms passes
 * (-1: no limit; 0: one non-blocking turn). */
static void sub_run(evt_sub *s, int (*cond)(const evt_sub *), int timeout_ms)
{
    if (timeout_ms == 0) {
        ev_run(s->loop, EVRUN_NOWAIT);
        return;
    }
    ev_timer t;
    ev_timer_init(&t, sub_timeout_cb, timeout_ms > 0 ? timeout_ms / 1e3 : 1e9, 0.);
    ev_timer_start(s->loop, &t);
    uint64_t end = timeout_ms > 0 ? dp_now_ns() + (uint64_t)timeout_ms * 1000000ull : UINT64_MAX;
    while (!s->closed && !cond(s) && dp_now_ns() < end) ev_run(s->loop, EVRUN_ONCE);
    ev_timer_stop(s->loop, &t);
}

static int sub_is_open(const evt_sub *s) { return s->open; }

evt_sub *evt_sub_connect(const char *hub_addr, int timeout_ms, char *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (net_parse_addr(hub_addr, 0, &ss, &len, err)) return NULL;
    auth_key key;
    if (auth_hub_key_from_env(&key, err)) return NULL;
    evt_sub *s = xcalloc(1, sizeof *s);
    s->strings = evt_strtab_new();
    snprintf(s->addr, sizeof s->addr, "%s", hub_addr);
    s->loop = ev_loop_new(EVFLAG_AUTO);
    net_conn_opts o = {.proto = &evt_wire_proto, .role = NET_CLIENT, .key = &key, .auth_context = AUTH_CTX_HUB,
                       .name = "viewer", .what = "viewer"};
    s->conn = s->loop ? net_conn_connect(s->loop, &ss, len, &o, &sub_handler, s, hub_addr, err) : NULL;
    auth_key_clear(&key);
    if (!s->conn) {
        if (!s->loop) dp_fail(err, DP_EIO, "cannot create an event loop");
        evt_sub_close(s);
        return NULL;
    }
    s->fd = net_conn_fd(s->conn);
    sub_run(s, sub_is_open, timeout_ms < 0 ? -1 : (timeout_ms ? timeout_ms : 1));
    if (!s->open) {
        if (s->err[0]) dp_fail(err, DP_EPROTO, "%s", s->err);
        else dp_fail(err, DP_ETIMEDOUT, "hub %s: no answer within %d ms", hub_addr, timeout_ms);
        evt_sub_close(s);
        return NULL;
    }
    return s;
}

void evt_sub_close(evt_sub *s)
{
    if (!s) return;
    if (s->conn) net_conn_close(s->conn, "subscriber closed");
    if (s->loop) ev_loop_destroy(s->loop);
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

static int sub_frame(evt_sub *s, const net_frame *h, const uint8_t *p, char *err)
{
    switch (h->type) {
    case EVT_F_WELCOME:
        s->hub_t0 = (int64_t)dp_get_u64(p);
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
        s->received += (uint64_t)n;
        if (!s->synced) s->state_count += s->qlen - before;
        return n;
    }
    case EVT_F_STATE_END:
        s->synced = 1;
        return 0;
    case EVT_F_DROPPED:
        s->dropped = dp_get_u64(p);
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

static int sub_has_news(const evt_sub *s) { return s->received > s->pump_mark; }

int evt_sub_pump(evt_sub *s, int timeout_ms, char *err)
{
    if (s->err[0]) return dp_fail(err, DP_EPROTO, "%s", s->err);
    if (s->qlen - s->qhead >= SUB_MAX_QUEUED) return 0;
    if (s->conn) net_conn_set_reading(s->conn, 1);
    size_t before = s->qlen - s->qhead;
    s->pump_mark = s->received;
    if (!s->closed) {
        sub_run(s, sub_has_news, timeout_ms);
        if (timeout_ms != 0 && !s->closed) ev_run(s->loop, EVRUN_NOWAIT);   /* what else is there */
    }
    if (s->err[0]) return dp_fail(err, DP_EPROTO, "%s", s->err);
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
