/* fuzz_auth.c — libFuzzer target: the authentication handshake of every connection
 * (net/auth.c run by net/conn.c) with a secret set, on either side. The first input byte
 * is a mode; the rest is what the peer sends, written into one end of a socketpair whose
 * other end is a net_conn in a libev loop (shut at the end so the connection closes):
 *   bit 0  0: the bytes come raw, from the first byte on (a hostile peer that knows no
 *          secret); 1: the harness first runs a correct handshake as the peer (nonces,
 *          proofs with net/auth.h), checks the connection's proof, and the bytes follow on
 *          the open connection
 *   bit 1  0: the net_conn is a server (NET_SERVER, as a ps or the hub accepts); 1: a client
 *   bit 2  0: the ps/worker protocol (proto_ps, AUTH_CTX_PS); 1: the event stream
 *          (evt_wire_proto, AUTH_CTX_HUB; a server also takes the viewer token, alt_key)
 *   bit 3  with bits 0 and 2 on a server: the harness proves the viewer token, not the key
 * Checked (abort: a real finding): a raw peer never gets the connection open and the
 * owner never sees a frame before it is open or any handshake frame; after a correct
 * handshake the connection's own proof verifies, it is open, and net_conn_alt_auth says
 * which key was proved. */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include <ev.h>

#include "hub/wire.h"
#include "net/auth.h"
#include "net/conn.h"
#include "runtime/proto.h"

#define FZ_SECRET "fuzz-secret-0123456789abcdef"

typedef struct fz_state {
    int open, closed, server, stream, hello;
    uint64_t frames;
} fz_state;

static struct ev_loop *loop;
static auth_key key, viewer_key;

static void fz_on_open(net_conn *c, void *ctx)
{
    fz_state *s = ctx;
    s->open = 1;
    if (s->server) return;
    /* A client's first frame, as a worker or a task sends it. */
    if (s->stream) {
        uint8_t hello[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0x92, 0x10, 0, 0};
        evt_wire_put(net_conn_stage(c), EVT_F_HELLO_TASK, hello, sizeof hello);
        net_conn_flush(c);
    } else {
        net_frame h = {.type = MSG_HELLO, .arg0 = 12345};
        net_conn_send(c, h, NULL, 0, 0);
    }
}

static void fz_on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    DP_UNUSED(payload);
    fz_state *s = ctx;
    if (!s->open) {
        fprintf(stderr, "auth: a %u frame reached the owner before the connection opened\n", h->type);
        abort();
    }
    if (h->type >= NET_T_AUTH_HELLO && h->type <= NET_T_AUTH_OK) {
        fprintf(stderr, "auth: handshake frame %u reached the owner\n", h->type);
        abort();
    }
    s->frames++;
    if (s->server && !s->hello) {
        /* As the hub does: the viewer token may only subscribe. */
        if (s->stream && net_conn_alt_auth(c) && h->type != EVT_F_HELLO_SUB) {
            net_conn_send_error(c, "the viewer token may only subscribe");
            return;
        }
        s->hello = 1;
        net_conn_hello_done(c);
    }
}

static void fz_on_close(net_conn *c, const char *reason, void *ctx)
{
    DP_UNUSED(c);
    DP_UNUSED(reason);
    fz_state *s = ctx;
    s->closed = 1;
}

static const net_handler handler = {fz_on_open, NULL, fz_on_frame, fz_on_close};

static void drain(int fd)
{
    uint8_t buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {}
}

/* Reads exactly n bytes of what the connection sends, running its loop meanwhile.
 * Returns 0, or -1 when they do not come (the connection closed or said nothing). */
static int fz_read(int fd, const fz_state *s, uint8_t *buf, size_t n)
{
    size_t got = 0;
    for (int spins = 0; got < n && spins < 1000; spins++) {
        ev_run(loop, EVRUN_NOWAIT);
        ssize_t r = read(fd, buf + got, n - got);
        if (r > 0) got += (size_t)r;
        else if (r == 0 || (errno != EAGAIN && errno != EINTR)) break;
        if (s->closed && r <= 0) break;
    }
    return got == n ? 0 : -1;
}

static void fz_write(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (int spins = 0; n && spins < 100000; spins++) {
        ssize_t w = write(fd, b, n);
        if (w > 0) { b += w; n -= (size_t)w; }
        else if (w < 0 && errno != EAGAIN && errno != EINTR) return;
        ev_run(loop, EVRUN_NOWAIT);
    }
}

static void fz_put(int fd, const net_proto *p, int type, const uint8_t payload[NET_AUTH_BYTES])
{
    uint8_t f[NET_HEADER + NET_AUTH_BYTES];
    net_frame h = {.proto = p->id, .type = (uint16_t)type, .length = NET_AUTH_BYTES};
    net_frame_encode(&h, f);
    memcpy(f + NET_HEADER, payload, NET_AUTH_BYTES);
    fz_write(fd, f, sizeof f);
}

/* Reads one handshake frame of the connection's, which must be `type` (abort otherwise:
 * a correct peer got a wrong answer). */
static void fz_expect(int fd, const fz_state *s, const net_proto *p, int type, uint8_t payload[NET_AUTH_BYTES])
{
    uint8_t f[NET_HEADER + NET_AUTH_BYTES];
    net_frame h;
    char err[DP_ERRLEN];
    if (fz_read(fd, s, f, NET_HEADER) || net_frame_decode(f, p, &h, err) || h.type != type ||
        h.length != NET_AUTH_BYTES || fz_read(fd, s, f + NET_HEADER, NET_AUTH_BYTES)) {
        fprintf(stderr, "auth: a correct peer did not get %s\n", net_type_name(p, type));
        abort();
    }
    memcpy(payload, f + NET_HEADER, NET_AUTH_BYTES);
}

/* The correct peer's half of the handshake, against connection c (its role s->server). */
static void fz_handshake(net_conn *c, int fd, fz_state *s, const net_proto *p, const char *ctx, int alt)
{
    const auth_key *k = alt ? &viewer_key : &key;
    uint8_t mine[AUTH_NONCE_BYTES], theirs[AUTH_NONCE_BYTES];
    auth_hs hs;
    if (s->server) {
        auth_hs_start(&hs, AUTH_CLIENT, ctx, mine);
        fz_put(fd, p, NET_T_AUTH_HELLO, mine);
        fz_expect(fd, s, p, NET_T_AUTH_CHALLENGE, theirs);
        auth_hs_peer_nonce(&hs, theirs);
        auth_hs_prove(&hs, k, mine);
        fz_put(fd, p, NET_T_AUTH_PROOF, mine);
        fz_expect(fd, s, p, NET_T_AUTH_OK, theirs);
    } else {
        fz_expect(fd, s, p, NET_T_AUTH_HELLO, theirs);
        auth_hs_start(&hs, AUTH_SERVER, ctx, mine);
        auth_hs_peer_nonce(&hs, theirs);
        fz_put(fd, p, NET_T_AUTH_CHALLENGE, mine);
        fz_expect(fd, s, p, NET_T_AUTH_PROOF, theirs);
        if (auth_hs_verify(&hs, k, theirs) != 0) {
            fprintf(stderr, "auth: the client's proof does not verify\n");
            abort();
        }
        auth_hs_prove(&hs, k, mine);
        fz_put(fd, p, NET_T_AUTH_OK, mine);
    }
    if (s->server && auth_hs_verify(&hs, k, theirs) != 0) {
        fprintf(stderr, "auth: the server's proof does not verify\n");
        abort();
    }
    auth_hs_clear(&hs);
    for (int spins = 0; !s->open && !s->closed && spins < 100; spins++) ev_run(loop, EVRUN_NOWAIT);
    if (!s->open || s->closed || !net_conn_is_open(c) || net_conn_alt_auth(c) != (s->server && alt)) {
        fprintf(stderr, "auth: not open (or the wrong key noted) after a correct handshake\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (!loop) {
        char err[DP_ERRLEN], token[AUTH_TOKEN_CHARS + 1];
        loop = ev_loop_new(EVFLAG_AUTO);
        if (auth_key_from_secret(&key, FZ_SECRET, strlen(FZ_SECRET), "fuzz", err)) { fprintf(stderr, "%s\n", err); abort(); }
        auth_viewer_token(&key, token, sizeof token);
        auth_key_from_secret(&viewer_key, token, strlen(token), "viewer token", NULL);
    }
    if (size < 1) return 0;
    int m = data[0];
    data++;
    size--;
    int shake = m & 1;
    fz_state s = {.server = !(m & 2), .stream = !!(m & 4)};
    int alt = shake && s.server && s.stream && (m & 8);
    const net_proto *p = s.stream ? &evt_wire_proto : &proto_ps;
    const char *ctx = s.stream ? AUTH_CTX_HUB : AUTH_CTX_PS;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); abort(); }
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    net_conn_opts o = {.proto = p, .role = s.server ? NET_SERVER : NET_CLIENT, .key = &key,
                       .alt_key = s.server && s.stream ? &viewer_key : NULL, .auth_context = ctx,
                       .name = "fuzz", .what = s.stream ? "hub" : "ps", .hello_s = s.server ? 10 : 0,
                       .pre_hello_max = s.server ? (s.stream ? 256 : PROTO_TOKEN_BYTES) : 0,
                       .out_cap = 1u << 16};
    net_conn *c = net_conn_new(loop, sv[0], &o, &handler, &s, "fuzz");   /* takes sv[0] */
    if (shake) fz_handshake(c, sv[1], &s, p, ctx, alt);
    size_t off = 0;
    int spins = 0;
    if (size == 0) shutdown(sv[1], SHUT_WR);
    while (!s.closed && spins++ < 100000) {
        if (off < size) {
            ssize_t w = write(sv[1], data + off, size - off);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) break;
            if (off == size) shutdown(sv[1], SHUT_WR);
        }
        ev_run(loop, EVRUN_NOWAIT);
        if (!shake && s.open) {
            fprintf(stderr, "auth: a peer that knows no secret got the connection open\n");
            abort();
        }
        drain(sv[1]);
    }
    if (!s.closed) {
        fprintf(stderr, "auth: connection still open after the peer shut its end\n");
        abort();
    }
    close(sv[1]);
    return 0;
}
