/* test_proto.c — the ps/worker frame header: round trip of every type, and rejection of
 * bad magic, wrong version, unknown type, oversized and ill-sized payloads. Also the
 * framed connection over a socketpair: a frame split into 1-byte writes reassembles, a
 * bad frame and a truncated frame close the connection with the reason. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "common/dp.h"
#include "runtime/conn.h"
#include "runtime/proto.h"
#include "tests/check.h"

typedef struct sink {
    int frames;
    proto_header last;
    float payload[8];
    char reason[DP_ERRLEN];
    int closed;
} sink;

static void *sink_header(net_conn *c, const proto_header *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(c);
    sink *s = ctx;
    if (h->length > sizeof s->payload) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "too big for the test sink");
        return NULL;
    }
    return s->payload;
}

static void sink_frame(net_conn *c, const proto_header *h, void *payload, void *ctx)
{
    DP_UNUSED(c);
    DP_UNUSED(payload);
    sink *s = ctx;
    s->frames++;
    s->last = *h;
}

static void sink_close(net_conn *c, const char *reason, void *ctx)
{
    DP_UNUSED(c);
    sink *s = ctx;
    s->closed = 1;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
}

static const net_handler sink_handler = {sink_header, sink_frame, sink_close};

static void pump(struct ev_loop *loop, int rounds)
{
    for (int i = 0; i < rounds; i++) ev_run(loop, EVRUN_NOWAIT);
}

static void test_conn(void)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    sink s = {0};
    net_conn_new(loop, sv[0], &sink_handler, &s, "test");
    /* A PUSH with 2 floats, written one byte at a time. */
    uint8_t buf[PROTO_HEADER_SIZE + 8];
    proto_header h = {.version = PROTO_VERSION, .type = MSG_PUSH, .length = 8, .var = 3, .arg0 = 9, .arg1 = 10};
    proto_encode(&h, buf);
    float f[2] = {1.5f, -2.0f};
    memcpy(buf + PROTO_HEADER_SIZE, f, 8);
    for (size_t i = 0; i < sizeof buf; i++) {
        CHECK(write(sv[1], buf + i, 1) == 1);
        pump(loop, 2);
    }
    CHECK(s.frames == 1);
    CHECK(s.last.var == 3 && s.last.arg0 == 9 && s.last.arg1 == 10);
    CHECK(s.payload[0] == 1.5f && s.payload[1] == -2.0f);
    /* A bad magic closes with the reason. */
    memset(buf, 0xab, PROTO_HEADER_SIZE);
    CHECK(write(sv[1], buf, PROTO_HEADER_SIZE) == PROTO_HEADER_SIZE);
    pump(loop, 4);
    CHECK(s.closed);
    CHECK_MSG(strstr(s.reason, "bad frame: bad magic") != NULL, "%s", s.reason);
    close(sv[1]);

    /* A frame cut short by the peer. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    sink t = {0};
    net_conn_new(loop, sv[0], &sink_handler, &t, "test2");
    proto_encode(&h, buf);
    CHECK(write(sv[1], buf, PROTO_HEADER_SIZE + 3) == PROTO_HEADER_SIZE + 3);
    close(sv[1]);
    pump(loop, 4);
    CHECK(t.closed && t.frames == 0);
    CHECK_MSG(strstr(t.reason, "truncated frame") != NULL, "%s", t.reason);

    /* A payload the handler refuses. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    sink u = {0};
    net_conn_new(loop, sv[0], &sink_handler, &u, "test3");
    h.length = 64;
    proto_encode(&h, buf);
    CHECK(write(sv[1], buf, PROTO_HEADER_SIZE) == PROTO_HEADER_SIZE);
    pump(loop, 4);
    CHECK(u.closed);
    CHECK_MSG(strstr(u.reason, "too big for the test sink") != NULL, "%s", u.reason);
    close(sv[1]);
    ev_loop_destroy(loop);
}

/* The launcher's handover: a listening socket on fd NET_LISTEN_FD is taken over only
 * when the environment names it and its port is the one asked for. */
static void test_listen_inherited(void)
{
    char err[DP_ERRLEN];
    int port = 0, other = 0;
    int lfd = net_listen("127.0.0.1", 0, &port, err);
    CHECK_MSG(lfd >= 0, "%s", err);
    CHECK(dup2(lfd, NET_LISTEN_FD) == NET_LISTEN_FD);
    if (lfd != NET_LISTEN_FD) close(lfd);
    setenv(NET_LISTEN_ENV, "3", 1);
    int fd = net_listen_inherited("127.0.0.1", port, err);
    CHECK_MSG(fd == NET_LISTEN_FD, "took over fd %d (want %d)", fd, NET_LISTEN_FD);
    CHECK_MSG(getenv(NET_LISTEN_ENV) == NULL, "the variable is not passed on");
    /* Without the variable, or for another port, a socket of its own. */
    int fd2 = net_listen_inherited("127.0.0.1", 0, err);
    CHECK(fd2 >= 0 && fd2 != NET_LISTEN_FD);
    if (fd2 >= 0) close(fd2);
    fd2 = net_listen("127.0.0.1", 0, &other, err);
    close(fd2);
    setenv(NET_LISTEN_ENV, "3", 1);
    fd2 = net_listen_inherited("127.0.0.1", other, err);
    CHECK_MSG(fd2 >= 0 && fd2 != NET_LISTEN_FD, "a socket on port %d is not port %d's (fd %d)", port, other, fd2);
    if (fd2 >= 0) close(fd2);
    close(NET_LISTEN_FD);
    unsetenv(NET_LISTEN_ENV);
}

int main(void)
{
    char err[DP_ERRLEN];
    uint8_t buf[PROTO_HEADER_SIZE];
    for (int t = 1; t < MSG_TYPE_COUNT; t++) {
        uint32_t len = (t == MSG_INIT || t == MSG_PULL_RESP || t == MSG_PUSH || t == MSG_INIT_SLOT ||
                        t == MSG_SLOT_RESP) ? 4000 : t == MSG_ERROR ? 12
                     : t >= MSG_AUTH_HELLO && t <= MSG_AUTH_OK ? PROTO_AUTH_BYTES
                     : t == MSG_HELLO ? PROTO_TOKEN_BYTES : 0;
        proto_header h = {.version = PROTO_VERSION, .type = (uint16_t)t, .length = len, .var = 77,
                          .arg0 = -5, .arg1 = INT64_MAX};
        proto_encode(&h, buf);
        proto_header g;
        CHECK_MSG(proto_decode(buf, &g, err) == DP_OK, "%s: %s", proto_type_name(t), err);
        CHECK(g.type == t && g.length == len && g.var == 77 && g.arg0 == -5 && g.arg1 == INT64_MAX);
        CHECK(strcmp(proto_type_name(t), "?") != 0);
    }
    /* The handshake's frames carry exactly PROTO_AUTH_BYTES (checked before any payload
     * is read: docs/security.md). */
    proto_header ha = {.version = PROTO_VERSION, .type = MSG_AUTH_PROOF, .length = 64};
    proto_encode(&ha, buf);
    CHECK(proto_decode(buf, &ha, err) == DP_EPROTO && strstr(err, "AUTH_PROOF carries 64 payload bytes, expected 32"));
    /* The checkpoint's messages: slots are whole floats, FINAL_STEP carries nothing. */
    proto_header hs = {.version = PROTO_VERSION, .type = MSG_SLOT_RESP, .length = 6};
    proto_header gs;
    proto_encode(&hs, buf);
    CHECK(proto_decode(buf, &gs, err) == DP_EPROTO && strstr(err, "not whole floats"));
    hs = (proto_header){.version = PROTO_VERSION, .type = MSG_FINAL_STEP, .length = 8};
    proto_encode(&hs, buf);
    CHECK(proto_decode(buf, &gs, err) == DP_EPROTO && strstr(err, "expected 0"));
    proto_header h = {.version = PROTO_VERSION, .type = MSG_PUSH, .length = 8};
    proto_header g;
    proto_encode(&h, buf);
    buf[0] ^= 1;
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "bad magic"));
    h.version = 2;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "protocol version 2, expected 1"));
    h.version = PROTO_VERSION;
    h.type = 99;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "unknown message type 99"));
    h.type = 0;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "unknown message type 0"));
    h.type = MSG_PUSH;
    h.length = PROTO_MAX_PAYLOAD + 4;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "exceeds limit"));
    h.length = 0xffffffffu;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "exceeds limit"));
    h.length = 7;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "not whole floats"));
    h.type = MSG_HELLO;
    h.length = 12;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "HELLO carries 12 payload bytes, expected 0"));
    h.type = MSG_ERROR;
    h.length = PROTO_MAX_TEXT + 1;
    proto_encode(&h, buf);
    CHECK(proto_decode(buf, &g, err) == DP_EPROTO && strstr(err, "ERROR text"));
    test_conn();
    test_listen_inherited();
    return CHECK_DONE();
}
