/* fuzz_proto.c — libFuzzer target: the ps/worker protocol end to end on the one
 * connection layer: the input is what a worker sends a ps. It is written into one end of
 * a socketpair whose other end is a net_conn (net/conn.c) in a libev loop, set up as the
 * ps sets up an accepted connection (NET_SERVER, proto_ps, no secret, pre_hello_max =
 * the HELLO token), then that end is shut, so the connection reads headers
 * (net_frame_decode against proto_ps), places payloads (in a buffer of ours for the
 * tensor-carrying types, as the ps and worker do, refusing an unknown variable as the ps
 * does, else the connection's own), answers HELLO and PULL through its output queue, and
 * closes on the first bad frame or at the end. Every 32-byte window of the input is also
 * decoded directly; a header that decodes must encode back to the same bytes (abort
 * otherwise: a real finding). */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include <ev.h>

#include "net/conn.h"
#include "runtime/proto.h"

#define FZ_VARS 4                 /* variable ids 0..3 exist, as on a small ps */
#define FZ_VAR_BYTES (4096 * 4)   /* ... and hold at most 4096 floats */

typedef struct fz_state {
    int closed;
    void *mine;           /* payload buffer handed out by on_header, until on_frame */
    uint64_t frames;
} fz_state;

static const float fz_values[16];

static int fz_tensor_in(int type)
{
    return type == MSG_PULL_RESP || type == MSG_PUSH || type == MSG_INIT || type == MSG_INIT_SLOT ||
           type == MSG_SLOT_RESP;
}

static void *fz_on_header(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(c);
    fz_state *s = ctx;
    if (!fz_tensor_in(h->type)) return NULL;
    if (h->id >= FZ_VARS || h->length > FZ_VAR_BYTES) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s for variable id %u (%u bytes): not on this ps",
                 proto_type_name(h->type), h->id, h->length);
        return NULL;
    }
    free(s->mine);
    s->mine = malloc(h->length);
    return s->mine;
}

static void fz_on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    DP_UNUSED(payload);
    fz_state *s = ctx;
    s->frames++;
    free(s->mine);
    s->mine = NULL;
    proto_type_name(h->type);
    switch (h->type) {
    case MSG_HELLO: {
        net_conn_hello_done(c);
        net_frame ok = {.type = MSG_HELLO_OK, .arg0 = h->arg0};
        net_conn_send(c, ok, NULL, 0, 0);
        break;
    }
    case MSG_PULL: {
        /* Borrowed (copy = 0): a static buffer outlives every connection. */
        net_frame r = {.type = MSG_PULL_RESP, .id = h->id, .arg0 = 1};
        net_conn_send(c, r, fz_values, sizeof fz_values, 0);
        break;
    }
    case MSG_DONE:
        net_conn_send_error(c, "done");
        break;
    default:
        break;
    }
}

static void fz_on_close(net_conn *c, const char *reason, void *ctx)
{
    DP_UNUSED(c);
    DP_UNUSED(reason);
    fz_state *s = ctx;
    s->closed = 1;
}

static const net_handler handler = {NULL, fz_on_header, fz_on_frame, fz_on_close};
static struct ev_loop *loop;

static void headers_roundtrip(const uint8_t *data, size_t size)
{
    char err[DP_ERRLEN];
    for (size_t off = 0; off + NET_HEADER <= size; off++) {
        net_frame h;
        if (net_frame_decode(data + off, &proto_ps, &h, err) != 0) continue;
        uint8_t again[NET_HEADER];
        net_frame_encode(&h, again);
        if (memcmp(again, data + off, NET_HEADER) != 0) {
            fprintf(stderr, "proto: header at %zu decodes but does not encode back\n", off);
            abort();
        }
        proto_type_name(h.type);
    }
}

static void drain(int fd)
{
    uint8_t buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    headers_roundtrip(data, size);
    if (!loop) loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); abort(); }
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    fz_state s = {0};
    net_conn_opts o = {.proto = &proto_ps, .role = NET_SERVER, .auth_context = AUTH_CTX_PS,
                       .name = "fuzz-ps", .what = "ps", .pre_hello_max = PROTO_TOKEN_BYTES,
                       .out_cap = 1u << 16};
    net_conn_new(loop, sv[0], &o, &handler, &s, "fuzz");   /* takes sv[0]; freed at close */
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
        drain(sv[1]);
    }
    if (!s.closed) {
        fprintf(stderr, "proto: connection still open after the peer shut its end\n");
        abort();
    }
    free(s.mine);
    close(sv[1]);
    return 0;
}
