/* test_net.c — the one connection layer (net/), exercised directly with a protocol of
 * its own: frames reassemble from 1-byte writes; bad, truncated and refused frames
 * close with the reason; the output queue keeps order across copied, borrowed and
 * staged frames and refuses what passes its byte cap (queuing nothing); the handshake
 * opens both sides with one secret and fails with another, without one, against a
 * server without one, and for a replayed transcript; the hello and stalled-frame
 * timeouts, the pre-hello bound and a listener's cap each close or refuse; a
 * connection outlives its freed listener; a failed connect reaches on_close. Expected
 * bytes are built here, not read back from net/. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "common/dp.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/frame.h"
#include "net/sock.h"
#include "tests/check.h"

enum { T_BLOB = NET_T_FIRST, T_TENSOR, T_PING, T_COUNT };
static const net_type test_types[T_COUNT] = {
    NET_COMMON_TYPES,
    [T_BLOB] = {"BLOB", NET_LEN_UPTO, 1u << 20},
    [T_TENSOR] = {"TENSOR", NET_LEN_FLOATS, 1u << 20},
    [T_PING] = {"PING", NET_LEN_NONE, 0},
};
static const net_proto test_proto = {9, "test", T_COUNT, test_types};

typedef struct peer {
    int opened, frames, closed, kind;
    net_frame last;
    uint8_t payload[1 << 16];
    size_t got;             /* payload bytes of all frames, appended */
    uint16_t order[64];     /* types in arrival order */
    char reason[DP_ERRLEN];
    size_t refuse_over;     /* on_header refuses payloads over this (0: never) */
    net_conn *c;
} peer;

static void p_open(net_conn *c, void *ctx)
{
    peer *p = ctx;
    p->opened++;
    p->c = c;
}

static void *p_header(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(c);
    peer *p = ctx;
    if (p->refuse_over && h->length > p->refuse_over) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "too big for the test peer");
        return NULL;
    }
    if (p->got + h->length > sizeof p->payload) return NULL;
    return p->payload + p->got;   /* straight into place */
}

static void p_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    DP_UNUSED(c);
    peer *p = ctx;
    if (payload == p->payload + p->got) p->got += h->length;
    if (p->frames < 64) p->order[p->frames] = h->type;
    p->frames++;
    p->last = *h;
}

static void p_close(net_conn *c, const char *reason, void *ctx)
{
    peer *p = ctx;
    p->closed = 1;
    p->kind = net_conn_close_kind(c);
    p->c = NULL;
    snprintf(p->reason, sizeof p->reason, "%s", reason);
}

static const net_handler handler = {p_open, p_header, p_frame, p_close};

static peer listener_peers[4];
static int listener_n;
static void accept_fn(net_listener *l, int fd, const char *peer_name, void *ctx);

static void pump(struct ev_loop *loop, int rounds)
{
    for (int i = 0; i < rounds; i++) ev_run(loop, EVRUN_NOWAIT);
}

/* Runs the loop until *flag or ms pass. */
static void run_until(struct ev_loop *loop, const int *flag, int ms)
{
    uint64_t end = dp_now_ns() + (uint64_t)ms * 1000000ull;
    while (!*flag && dp_now_ns() < end) {
        ev_run(loop, EVRUN_NOWAIT);
        usleep(1000);
    }
}

static void header_bytes(uint8_t *b, uint8_t proto, uint16_t type, uint32_t len, uint32_t id, int64_t a0)
{
    memset(b, 0, NET_HEADER);
    memcpy(b, "DPNF", 4);   /* the magic, as bytes on the wire */
    b[4] = 1;
    b[5] = proto;
    b[6] = (uint8_t)type;
    b[7] = (uint8_t)(type >> 8);
    for (int i = 0; i < 4; i++) b[8 + i] = (uint8_t)(len >> (8 * i));
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(id >> (8 * i));
    for (int i = 0; i < 8; i++) b[16 + i] = (uint8_t)((uint64_t)a0 >> (8 * i));
}

static net_conn_opts server_opts(const auth_key *key)
{
    return (net_conn_opts){.proto = &test_proto, .role = NET_SERVER, .key = key, .auth_context = "test v1",
                           .name = "test-server", .what = "test"};
}

static net_conn_opts client_opts(const auth_key *key)
{
    return (net_conn_opts){.proto = &test_proto, .role = NET_CLIENT, .key = key, .auth_context = "test v1",
                           .name = "test-client", .what = "client"};
}

static void test_reading(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s = {0};
    net_conn_opts o = server_opts(NULL);
    net_conn_new(loop, sv[0], &o, &handler, &s, "t1");
    pump(loop, 2);
    CHECK(s.opened == 1);
    uint8_t buf[NET_HEADER + 8];
    header_bytes(buf, 9, T_TENSOR, 8, 3, 9);
    float f[2] = {1.5f, -2.0f};
    memcpy(buf + NET_HEADER, f, 8);
    for (size_t i = 0; i < sizeof buf; i++) {
        CHECK(write(sv[1], buf + i, 1) == 1);
        pump(loop, 2);
    }
    CHECK(s.frames == 1 && s.last.type == T_TENSOR && s.last.id == 3 && s.last.arg0 == 9);
    float g[2];
    memcpy(g, s.payload, 8);
    CHECK(s.got == 8 && g[0] == 1.5f && g[1] == -2.0f);
    /* A bad magic closes with the reason. */
    memset(buf, 0xab, NET_HEADER);
    CHECK(write(sv[1], buf, NET_HEADER) == NET_HEADER);
    pump(loop, 4);
    CHECK(s.closed && s.kind == NET_CLOSE_PROTO);
    CHECK_MSG(strstr(s.reason, "bad frame: bad magic") != NULL, "%s", s.reason);
    close(sv[1]);

    /* A frame of another protocol, a length over the type's rule, an unknown type. */
    struct { uint8_t proto; uint16_t type; uint32_t len; const char *why; } bad[] = {
        {2, T_BLOB, 4, "of protocol 2"}, {9, T_TENSOR, 6, "not whole floats"},
        {9, T_PING, 1, "PING carries 1"}, {9, 40, 0, "unknown test frame type 40"},
        {9, T_BLOB, 0xffffffffu, "outside its bound"},
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(bad); i++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        peer b = {0};
        net_conn_new(loop, sv[0], &o, &handler, &b, "tb");
        header_bytes(buf, bad[i].proto, bad[i].type, bad[i].len, 0, 0);
        CHECK(write(sv[1], buf, NET_HEADER) == NET_HEADER);
        pump(loop, 4);
        CHECK_MSG(b.closed && b.kind == NET_CLOSE_PROTO && strstr(b.reason, bad[i].why), "%zu: %s", i, b.reason);
        close(sv[1]);
    }

    /* A frame cut short by the peer. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer t = {0};
    net_conn_new(loop, sv[0], &o, &handler, &t, "t2");
    header_bytes(buf, 9, T_TENSOR, 8, 0, 0);
    CHECK(write(sv[1], buf, NET_HEADER + 3) == NET_HEADER + 3);
    close(sv[1]);
    pump(loop, 4);
    CHECK(t.closed && t.frames == 0 && t.kind == NET_CLOSE_PEER);
    CHECK_MSG(strstr(t.reason, "truncated frame") != NULL, "%s", t.reason);

    /* A payload the handler refuses. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer u = {.refuse_over = 16};
    net_conn_new(loop, sv[0], &o, &handler, &u, "t3");
    header_bytes(buf, 9, T_BLOB, 64, 0, 0);
    CHECK(write(sv[1], buf, NET_HEADER) == NET_HEADER);
    pump(loop, 4);
    CHECK(u.closed && u.kind == NET_CLOSE_PROTO);
    CHECK_MSG(strstr(u.reason, "too big for the test peer") != NULL, "%s", u.reason);
    close(sv[1]);
}

/* Reads everything the other end has written (non-blocking after the first wait). */
static size_t drain(int fd, dp_buf *into, struct ev_loop *loop)
{
    size_t total = 0;
    for (int idle = 0; idle < 20;) {
        pump(loop, 1);
        uint8_t *w = dp_buf_reserve(into, 65536);
        ssize_t n = recv(fd, w, 65536, MSG_DONTWAIT);
        if (n > 0) {
            into->len += (size_t)n;
            total += (size_t)n;
            idle = 0;
        } else {
            idle++;
            usleep(500);
        }
    }
    return total;
}

static void test_writing(struct ev_loop *loop)
{
    int sv[2];
    char err[DP_ERRLEN];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s = {0};
    net_conn_opts o = client_opts(NULL);
    net_conn *c = net_conn_new(loop, sv[0], &o, &handler, &s, "w1");
    pump(loop, 2);
    CHECK(s.opened == 1 && net_conn_is_open(c));
    static float big[50000];   /* borrowed: 200 kB, over the coalescing size */
    for (int i = 0; i < 50000; i++) big[i] = (float)i;
    uint8_t small[5] = {1, 2, 3, 4, 5};
    CHECK(net_conn_send(c, (net_frame){.type = T_BLOB, .id = 1}, small, sizeof small, 1) == DP_OK);
    CHECK(net_conn_send(c, (net_frame){.type = T_TENSOR, .id = 2}, big, sizeof big, 0) == DP_OK);
    net_frame f3 = {.proto = 9, .type = T_BLOB, .id = 3};
    net_frame_put(net_conn_stage(c), &f3, "staged", 6);
    net_frame f4 = {.proto = 9, .type = T_PING, .id = 4};
    net_frame_put(net_conn_stage(c), &f4, NULL, 0);
    CHECK(net_conn_pending(c) >= 2 * NET_HEADER + 6);   /* staged bytes count */
    /* A send after staged frames goes after them. */
    CHECK(net_conn_send(c, (net_frame){.type = T_PING, .id = 5, .arg1 = -7}, NULL, 0, 0) == DP_OK);
    net_frame f6 = {.proto = 9, .type = T_PING, .id = 6};
    net_frame_put(net_conn_stage(c), &f6, NULL, 0);
    CHECK(net_conn_flush(c) == DP_OK);
    dp_buf in = {0};
    size_t n = drain(sv[1], &in, loop);
    CHECK_MSG(n == 6 * NET_HEADER + 5 + sizeof big + 6, "%zu bytes", n);
    CHECK(net_conn_pending(c) == 0);
    net_frame g;
    const uint8_t *p;
    uint32_t want_id = 1;
    int rc;
    while ((rc = net_frame_next(&in, &test_proto, &g, &p, err)) == 1) {
        CHECK_MSG(g.id == want_id, "frame %u where %u was due", g.id, want_id);
        if (g.id == 1) CHECK(g.length == 5 && !memcmp(p, small, 5));
        if (g.id == 2) CHECK(g.length == sizeof big && !memcmp(p, big, sizeof big));
        if (g.id == 3) CHECK(g.length == 6 && !memcmp(p, "staged", 6));
        if (g.id == 5) CHECK(g.arg1 == -7 && g.length == 0);
        dp_buf_consume(&in, NET_HEADER + g.length);
        want_id++;
    }
    CHECK(rc == 0 && want_id == 7 && dp_buf_pending(&in) == 0);

    /* The byte cap: a peer that reads nothing fills the socket, then the queue; a send
     * past the cap fails and queues nothing; a staged batch past it is discarded. */
    net_conn_set_out_cap(c, 256 << 10);
    int full = 0;
    size_t before = 0;
    for (int i = 0; i < 10000 && !full; i++) {
        before = net_conn_pending(c);
        full = net_conn_send(c, (net_frame){.type = T_TENSOR}, big, 4096, 1) == DP_EFULL;
    }
    CHECK(full);
    CHECK_MSG(net_conn_pending(c) == before && before <= (256u << 10), "pending %zu", net_conn_pending(c));
    CHECK(before + NET_HEADER + 4096 > (256u << 10));
    net_frame_put(net_conn_stage(c), &f3, big, 8192);
    CHECK(net_conn_flush(c) == DP_EFULL && net_conn_pending(c) == before);
    /* Reading frees the queue and sends work again. */
    drain(sv[1], &in, loop);
    CHECK(net_conn_pending(c) == 0);
    CHECK(net_conn_send(c, (net_frame){.type = T_PING}, NULL, 0, 0) == DP_OK);
    net_conn_close(c, "done");
    CHECK(s.closed && s.kind == NET_CLOSE_LOCAL && !strcmp(s.reason, "done"));
    close(sv[1]);

    /* Staged frames taken whole into the queue (512 KiB: over what is copied) while
     * the socket is full, then small frames after them: each arrives intact and in order
     * (small frames were once coalesced into the taken buffer, past its end). */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s2 = {0};
    c = net_conn_new(loop, sv[0], &o, &handler, &s2, "w2");
    pump(loop, 2);
    int k = 0;
    while (net_conn_pending(c) == 0 && k++ < 10000)
        net_conn_send(c, (net_frame){.type = T_TENSOR, .id = 0}, big, 16384, 1);
    CHECK(net_conn_pending(c) > 0);
    static uint8_t blob[(512u << 10) - NET_HEADER];
    for (size_t i = 0; i < sizeof blob; i++) blob[i] = (uint8_t)(i * 7);
    net_frame fb = {.proto = 9, .type = T_BLOB, .id = 100};
    net_frame_put(net_conn_stage(c), &fb, blob, sizeof blob);
    CHECK(net_conn_flush(c) == DP_OK);
    for (uint32_t i = 0; i < 10; i++)
        CHECK(net_conn_send(c, (net_frame){.type = T_BLOB, .id = 101 + i}, small, sizeof small, 1) == DP_OK);
    dp_buf_clear(&in);
    drain(sv[1], &in, loop);
    uint32_t next = 100;
    while (net_frame_next(&in, &test_proto, &g, &p, err) == 1) {
        if (g.id >= 100) {
            CHECK_MSG(g.id == next, "frame %u where %u was due", g.id, next);
            if (g.id == 100) CHECK(g.length == sizeof blob && !memcmp(p, blob, sizeof blob));
            else CHECK(g.length == sizeof small && !memcmp(p, small, sizeof small));
            next++;
        }
        dp_buf_consume(&in, NET_HEADER + g.length);
    }
    CHECK(next == 111);
    net_conn_close(c, "done");
    close(sv[1]);
    dp_buf_release(&in);
}

/* A client and a server over a socketpair, keys as given; runs until both settle. */
static void handshake(struct ev_loop *loop, const auth_key *ck, const auth_key *sk, peer *cl, peer *sv_)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    net_conn_opts so = server_opts(sk), co = client_opts(ck);
    net_conn_new(loop, sv[0], &so, &handler, sv_, "server-side");
    net_conn *c = net_conn_new(loop, sv[1], &co, &handler, cl, "client-side");
    /* Nothing of the owner's goes before the handshake is done. */
    if (ck) CHECK(net_conn_send(c, (net_frame){.type = T_PING}, NULL, 0, 0) == DP_ECLOSED);
    for (int i = 0; i < 50 && !((cl->opened || cl->closed) && (sv_->opened || sv_->closed)); i++) pump(loop, 1);
    pump(loop, 5);
}

static void test_handshake(struct ev_loop *loop)
{
    char err[DP_ERRLEN];
    auth_key k1, k2;
    CHECK(auth_key_from_secret(&k1, "the first secret, long enough", 29, "k1", err) == 0);
    CHECK(auth_key_from_secret(&k2, "the second secret, long enough", 30, "k2", err) == 0);
    peer c = {0}, s = {0};
    handshake(loop, &k1, &k1, &c, &s);
    CHECK(c.opened == 1 && s.opened == 1 && !c.closed && !s.closed);
    CHECK(c.frames == 0 && s.frames == 0);   /* the handshake's frames are not the owner's */
    CHECK(net_conn_send(c.c, (net_frame){.type = T_PING, .id = 42}, NULL, 0, 0) == DP_OK);
    pump(loop, 4);
    CHECK(s.frames == 1 && s.last.id == 42);
    net_conn_close(c.c, "bye");
    pump(loop, 4);
    CHECK(s.closed && s.kind == NET_CLOSE_PEER);

    /* Another secret: neither side opens; the server tells only that it failed. */
    peer c2 = {0}, s2 = {0};
    handshake(loop, &k2, &k1, &c2, &s2);
    CHECK(!c2.opened && !s2.opened && c2.closed && s2.closed);
    CHECK(s2.kind == NET_CLOSE_AUTH && c2.kind == NET_CLOSE_AUTH);
    CHECK_MSG(strstr(c2.reason, "refused during the handshake: authentication failed") != NULL, "%s", c2.reason);

    /* No secret at the client: the server refuses; the client hears why. */
    peer c3 = {0}, s3 = {0};
    handshake(loop, NULL, &k1, &c3, &s3);
    CHECK(c3.opened && c3.c && net_conn_send(c3.c, (net_frame){.type = T_PING}, NULL, 0, 0) == DP_OK);
    pump(loop, 6);
    CHECK(!s3.opened && s3.closed && s3.kind == NET_CLOSE_AUTH);
    CHECK(c3.frames == 1 && c3.last.type == NET_T_ERROR);   /* open without a handshake, then told */

    /* A server without a secret refuses a handshake, and says so. */
    peer c4 = {0}, s4 = {0};
    handshake(loop, &k1, NULL, &c4, &s4);
    CHECK(!c4.opened && c4.closed && c4.kind == NET_CLOSE_AUTH);
    CHECK_MSG(strstr(c4.reason, "this test has no secret") != NULL, "%s", c4.reason);
    CHECK(s4.opened == 1 && s4.closed && s4.kind == NET_CLOSE_AUTH && s4.frames == 0);

    /* A replayed transcript: the client's frames of a good handshake, sent again to a
     * fresh server, do not verify (the server's nonce is new). */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s5 = {0};
    net_conn_opts so = server_opts(&k1);
    net_conn_new(loop, sv[0], &so, &handler, &s5, "replay-1");
    auth_hs hs;
    uint8_t nonce[32], frame[NET_HEADER + 32], record[2][NET_HEADER + 32];
    auth_hs_start(&hs, AUTH_CLIENT, "test v1", nonce);
    header_bytes(record[0], 9, NET_T_AUTH_HELLO, 32, 0, 0);
    memcpy(record[0] + NET_HEADER, nonce, 32);
    CHECK(write(sv[1], record[0], sizeof record[0]) == (ssize_t)sizeof record[0]);
    pump(loop, 4);
    CHECK(recv(sv[1], frame, sizeof frame, MSG_DONTWAIT) == (ssize_t)sizeof frame && frame[6] == NET_T_AUTH_CHALLENGE);
    auth_hs_peer_nonce(&hs, frame + NET_HEADER);
    header_bytes(record[1], 9, NET_T_AUTH_PROOF, 32, 0, 0);
    auth_hs_prove(&hs, &k1, record[1] + NET_HEADER);
    CHECK(write(sv[1], record[1], sizeof record[1]) == (ssize_t)sizeof record[1]);
    pump(loop, 4);
    CHECK(s5.opened == 1 && !s5.closed);   /* the genuine run of it opens */
    close(sv[1]);
    pump(loop, 2);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s6 = {0};
    net_conn_new(loop, sv[0], &so, &handler, &s6, "replay-2");
    CHECK(write(sv[1], record[0], sizeof record[0]) == (ssize_t)sizeof record[0]);
    CHECK(write(sv[1], record[1], sizeof record[1]) == (ssize_t)sizeof record[1]);
    pump(loop, 6);
    CHECK(!s6.opened && s6.closed && s6.kind == NET_CLOSE_AUTH);
    close(sv[1]);

    /* A server that answers with a wrong proof: the client does not open. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer c7 = {0};
    net_conn_opts co = client_opts(&k1);
    net_conn_new(loop, sv[0], &co, &handler, &c7, "fake-server");
    pump(loop, 4);
    CHECK(recv(sv[1], frame, sizeof frame, MSG_DONTWAIT) == (ssize_t)sizeof frame && frame[6] == NET_T_AUTH_HELLO);
    header_bytes(frame, 9, NET_T_AUTH_CHALLENGE, 32, 0, 0);
    memset(frame + NET_HEADER, 7, 32);
    CHECK(write(sv[1], frame, sizeof frame) == (ssize_t)sizeof frame);
    pump(loop, 4);
    CHECK(recv(sv[1], frame, sizeof frame, MSG_DONTWAIT) == (ssize_t)sizeof frame && frame[6] == NET_T_AUTH_PROOF);
    header_bytes(frame, 9, NET_T_AUTH_OK, 32, 0, 0);
    memset(frame + NET_HEADER, 9, 32);   /* not the proof of k1 */
    CHECK(write(sv[1], frame, sizeof frame) == (ssize_t)sizeof frame);
    pump(loop, 4);
    CHECK(!c7.opened && c7.closed && c7.kind == NET_CLOSE_AUTH);
    CHECK_MSG(strstr(c7.reason, "failed to prove it knows the secret") != NULL, "%s", c7.reason);
    close(sv[1]);

    /* Before the handshake, a tensor header is refused at once: its payload is never
     * waited for nor read. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s8 = {0};
    net_conn_new(loop, sv[0], &so, &handler, &s8, "pre-handshake push");
    header_bytes(frame, 9, T_TENSOR, 1u << 20, 0, 0);
    CHECK(write(sv[1], frame, NET_HEADER) == NET_HEADER);
    pump(loop, 4);
    CHECK(s8.closed && s8.kind == NET_CLOSE_AUTH && s8.got == 0);
    CHECK_MSG(strstr(s8.reason, "authentication required") != NULL, "%s", s8.reason);
    close(sv[1]);
    auth_hs_clear(&hs);
    auth_key_clear(&k1);
    auth_key_clear(&k2);
}

/* Which listen hosts a ps or hub without a secret warns about: any but loopback's. */
static void test_loopback_hosts(void)
{
    static const char *const local[] = {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"};
    static const char *const open[] = {"0.0.0.0", "", "10.0.0.1", "::", "[fe80::1]", "1127.0.0.1",
                                       "[10.0.0.1]", "localhost.example.org"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        CHECK_MSG(auth_host_is_loopback(local[i]) == 1, "\"%s\" is loopback", local[i]);
    for (size_t i = 0; i < sizeof open / sizeof open[0]; i++)
        CHECK_MSG(auth_host_is_loopback(open[i]) == 0, "\"%s\" is not loopback", open[i]);
    CHECK_MSG(auth_host_is_loopback(NULL) == 0, "no host is not loopback");
}

static void test_limits(struct ev_loop *loop)
{
    char err[DP_ERRLEN];
    int sv[2];
    /* hello_s: a peer that says nothing is dropped; hello_done stops the clock. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s = {0};
    net_conn_opts o = server_opts(NULL);
    o.hello_s = 0.1;
    net_conn_new(loop, sv[0], &o, &handler, &s, "silent");
    run_until(loop, &s.closed, 2000);
    CHECK(s.closed && s.kind == NET_CLOSE_TIMEOUT);
    CHECK_MSG(strstr(s.reason, "no HELLO within 0.1 s") != NULL, "%s", s.reason);
    close(sv[1]);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s1 = {0};
    net_conn_new(loop, sv[0], &o, &handler, &s1, "greeted");
    pump(loop, 2);
    net_conn_hello_done(s1.c);
    usleep(250000);
    pump(loop, 4);
    CHECK(!s1.closed);
    net_conn_close(s1.c, "done");
    close(sv[1]);

    /* frame_s: half a header, then silence. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s2 = {0};
    o = server_opts(NULL);
    o.frame_s = 0.1;
    net_conn_new(loop, sv[0], &o, &handler, &s2, "dribbler");
    uint8_t buf[NET_HEADER + 64];
    header_bytes(buf, 9, T_BLOB, 64, 0, 0);
    CHECK(write(sv[1], buf, 10) == 10);
    run_until(loop, &s2.closed, 2000);
    CHECK(s2.closed && s2.kind == NET_CLOSE_TIMEOUT);
    CHECK_MSG(strstr(s2.reason, "a frame stalled: no byte for 0.1 s") != NULL, "%s", s2.reason);
    close(sv[1]);

    /* idle_s: a peer that keeps talking stays; one that goes quiet is dropped. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s4 = {0};
    o = server_opts(NULL);
    o.idle_s = 0.15;
    net_conn_new(loop, sv[0], &o, &handler, &s4, "quiet");
    header_bytes(buf, 9, T_PING, 0, 0, 0);
    for (int i = 0; i < 6; i++) {   /* 0.3 s of a PING every 50 ms */
        CHECK(write(sv[1], buf, NET_HEADER) == NET_HEADER);
        usleep(50000);
        pump(loop, 2);
    }
    CHECK(!s4.closed && s4.frames == 6);
    run_until(loop, &s4.closed, 2000);
    CHECK(s4.closed && s4.kind == NET_CLOSE_TIMEOUT);
    CHECK_MSG(strstr(s4.reason, "idle: nothing received for 0.15 s") != NULL, "%s", s4.reason);
    close(sv[1]);

    /* pre_hello_max: before hello_done, a longer payload is refused unread. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s3 = {0};
    o = server_opts(NULL);
    o.pre_hello_max = 8;
    net_conn_new(loop, sv[0], &o, &handler, &s3, "eager");
    header_bytes(buf, 9, T_BLOB, 64, 0, 0);
    CHECK(write(sv[1], buf, NET_HEADER) == NET_HEADER);
    pump(loop, 4);
    CHECK(s3.closed && s3.kind == NET_CLOSE_PROTO && s3.got == 0);
    CHECK_MSG(strstr(s3.reason, "BLOB of 64 bytes before HELLO") != NULL, "%s", s3.reason);
    close(sv[1]);

    /* A listener's cap: the third of three connections is refused and counted. */
    int port = 0;
    int lfd = net_listen("127.0.0.1", 0, &port, err);
    CHECK_MSG(lfd >= 0, "%s", err);
    struct ev_loop *lp = loop;
    net_listener *l = net_listener_new(loop, lfd, 2, "test-listener", accept_fn, &lp);
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = net_connect("127.0.0.1", port, err);
        CHECK_MSG(fds[i] >= 0, "%s", err);
        pump(loop, 4);
    }
    CHECK(net_listener_open_conns(l) == 2 && net_listener_refused(l) == 1);
    char b;
    usleep(20000);
    CHECK_MSG(recv(fds[2], &b, 1, MSG_DONTWAIT) == 0, "the refused connection is closed");
    for (int i = 0; i < 3; i++) close(fds[i]);
    pump(loop, 6);
    CHECK(net_listener_open_conns(l) == 0);
    net_listener_free(l);

    /* A listener freed while a connection it accepted is open: the connection stays,
     * and its close frees what was left of the listener (make asan-unit sees a leak). */
    lfd = net_listen("127.0.0.1", 0, &port, err);
    CHECK_MSG(lfd >= 0, "%s", err);
    l = net_listener_new(loop, lfd, 2, "test-listener", accept_fn, &lp);
    int n0 = listener_n;
    listener_peers[n0 % 4] = (peer){0};
    int cfd = net_connect("127.0.0.1", port, err);
    CHECK_MSG(cfd >= 0, "%s", err);
    for (int i = 0; i < 200 && listener_n == n0; i++, usleep(1000)) pump(loop, 1);
    CHECK(listener_n == n0 + 1 && net_listener_open_conns(l) == 1);
    peer *kept = &listener_peers[n0 % 4];
    net_listener_free(l);
    pump(loop, 2);
    CHECK_MSG(!kept->closed, "the accepted connection outlives its listener (%s)", kept->reason);
    close(cfd);
    run_until(loop, &kept->closed, 2000);
    CHECK(kept->closed && kept->kind == NET_CLOSE_PEER);

    /* A failed connect reaches on_close. */
    int free_port = net_free_port(err);
    struct sockaddr_storage ss;
    socklen_t len;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port);
    CHECK(net_parse_addr(addr, 0, &ss, &len, err) == 0);
    peer f = {0};
    net_conn_opts co = client_opts(NULL);
    CHECK(net_conn_connect(loop, &ss, len, &co, &handler, &f, addr, err) != NULL);
    run_until(loop, &f.closed, 2000);
    CHECK(f.closed && !f.opened && f.kind == NET_CLOSE_PEER);
    CHECK_MSG(strstr(f.reason, "connect: Connection refused") != NULL, "%s", f.reason);
}

static void accept_fn(net_listener *l, int fd, const char *peer_name, void *ctx)
{
    struct ev_loop **loop = ctx;
    net_conn_opts o = server_opts(NULL);
    o.listener = l;
    net_conn_new(*loop, fd, &o, &handler, &listener_peers[listener_n++ % 4], peer_name);
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

static void test_addr(void)
{
    char err[DP_ERRLEN];
    struct sockaddr_storage ss;
    socklen_t len;
    CHECK(net_parse_addr("127.0.0.1:7411", 0, &ss, &len, err) == 0 && net_addr_port(&ss) == 7411);
    CHECK(net_parse_addr(":0", 1, &ss, &len, err) == 0);
    CHECK(net_parse_addr("127.0.0.1:0", 0, &ss, &len, err) == DP_EINVAL);
    CHECK(net_parse_addr("127.0.0.1", 0, &ss, &len, err) == DP_EINVAL);
    CHECK(net_parse_addr("[::1]:80", 0, &ss, &len, err) == 0);
    char text[64];
    CHECK(net_parse_addr("127.0.0.1:9", 0, &ss, &len, err) == 0);
    net_addr_text((struct sockaddr *)&ss, text, sizeof text);
    CHECK(!strcmp(text, "127.0.0.1:9"));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    test_reading(loop);
    test_writing(loop);
    test_handshake(loop);
    test_loopback_hosts();
    test_limits(loop);
    ev_loop_destroy(loop);
    test_listen_inherited();
    test_addr();
    return CHECK_DONE();
}
