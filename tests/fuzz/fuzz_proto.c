/* fuzz_proto.c — libFuzzer target: the ps/worker frame decoder, end to end: the input is
 * what a peer sends on a connection. It is written into one end of a socketpair whose
 * other end is a net_conn (runtime/conn.c) in a libev loop, then that end is shut, so the
 * connection reads headers (proto_decode, runtime/proto.c), places payloads (in a buffer
 * of ours for tensor-carrying types, as the ps and worker do, else the connection's own)
 * and closes on the first bad frame or at the end. Every 32-byte window of the input is
 * also decoded directly; a header that decodes must encode back to the same bytes
 * (abort otherwise: a real finding). */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include <ev.h>

#include "runtime/conn.h"
#include "runtime/proto.h"

typedef struct fz_state {
    int closed;
    void *mine;           /* payload buffer handed out by on_header, until on_frame */
    uint64_t frames;
} fz_state;

static void *fz_on_header(net_conn *c, const proto_header *h, void *ctx, char *err, int *reject)
{
    (void)c; (void)err; (void)reject;
    fz_state *s = ctx;
    if (h->type == MSG_PULL_RESP || h->type == MSG_PUSH || h->type == MSG_INIT) {
        free(s->mine);
        s->mine = malloc(h->length);
        return s->mine;
    }
    return NULL;
}

static void fz_on_frame(net_conn *c, const proto_header *h, void *payload, void *ctx)
{
    (void)c; (void)h; (void)payload;
    fz_state *s = ctx;
    s->frames++;
    free(s->mine);
    s->mine = NULL;
}

static void fz_on_close(net_conn *c, const char *reason, void *ctx)
{
    (void)c; (void)reason;
    fz_state *s = ctx;
    s->closed = 1;
}

static const net_handler handler = { fz_on_header, fz_on_frame, fz_on_close };
static struct ev_loop *loop;

static void headers_roundtrip(const uint8_t *data, size_t size)
{
    char err[DP_ERRLEN];
    for (size_t off = 0; off + PROTO_HEADER_SIZE <= size; off++) {
        proto_header h;
        if (proto_decode(data + off, &h, err) != 0) continue;
        uint8_t again[PROTO_HEADER_SIZE];
        proto_encode(&h, again);
        if (memcmp(again, data + off, PROTO_HEADER_SIZE) != 0) {
            fprintf(stderr, "proto: header at %zu decodes but does not encode back\n", off);
            abort();
        }
        proto_type_name(h.type);
    }
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
    net_conn_new(loop, sv[0], &handler, &s, "fuzz");   /* takes sv[0]; freed at close */
    size_t off = 0;
    int spins = 0;
    while (!s.closed && spins++ < 100000) {
        if (off < size) {
            ssize_t w = write(sv[1], data + off, size - off);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) break;
            if (off == size) shutdown(sv[1], SHUT_WR);
        } else if (size == 0 && spins == 1) {
            shutdown(sv[1], SHUT_WR);
        }
        ev_run(loop, EVRUN_NOWAIT);
    }
    if (!s.closed) {
        fprintf(stderr, "proto: connection still open after the peer shut its end\n");
        abort();
    }
    free(s.mine);
    close(sv[1]);
    return 0;
}
