/* shm_check.h — what the shared-memory transport's tests share (test_shm.c, test_shm_lend.c):
 * a test protocol, a peer that counts and sums what it receives, loop pumping, the
 * options of either side, descriptor and mapping counts, a connected pair of
 * connections, and a raw peer that offers its own rings and writes what it likes into
 * them. The layout's offsets (docs/wire.md) are built here, not taken from net/shm.c. */
#ifndef TESTS_SHM_CHECK_H
#define TESTS_SHM_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ev.h>
#include "common/dp.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/frame.h"
#include "net/shm.h"
#include "tests/check.h"

enum { T_BLOB = NET_T_FIRST, T_TENSOR, T_PING, T_COUNT };
static const net_type test_types[T_COUNT] = {
    NET_COMMON_TYPES,
    [T_BLOB] = {"BLOB", NET_LEN_UPTO, 8u << 20},
    [T_TENSOR] = {"TENSOR", NET_LEN_FLOATS, 8u << 20},
    [T_PING] = {"PING", NET_LEN_NONE, 0},
};
static const net_proto test_proto = {9, "test", T_COUNT, test_types};

/* The layout's offsets (docs/wire.md): ring r's control block at 64 + 256 r. */
#define L_TAIL(r) (64 + 256 * (r))
#define L_HEAD(r) (64 + 256 * (r) + 64)

typedef struct peer {
    int opened, frames, closed, kind;
    net_frame last;
    uint64_t sum;           /* of every payload byte times its place, frames in order */
    uint64_t bytes;
    uint16_t order[64];
    char reason[DP_ERRLEN];
    net_conn *c;
} peer;

static inline void p_open(net_conn *c, void *ctx)
{
    peer *p = ctx;
    p->opened++;
    p->c = c;
}

static inline void p_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    DP_UNUSED(c);
    peer *p = ctx;
    const uint8_t *b = payload;
    for (uint32_t i = 0; i < h->length; i++) p->sum += (uint64_t)b[i] * (p->bytes + i + 1);
    p->bytes += h->length;
    if (p->frames < 64) p->order[p->frames] = h->type;
    p->frames++;
    p->last = *h;
}

static inline void p_close(net_conn *c, const char *reason, void *ctx)
{
    peer *p = ctx;
    p->closed = 1;
    p->kind = net_conn_close_kind(c);
    p->c = NULL;
    snprintf(p->reason, sizeof p->reason, "%s", reason);
}

static const net_handler handler = {p_open, NULL, p_frame, p_close};

static inline void run_until(struct ev_loop *loop, const int *flag, int ms)
{
    uint64_t end = dp_now_ns() + (uint64_t)ms * 1000000ull;
    while (!*flag && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
}

static inline void pump(struct ev_loop *loop, int ms)
{
    int never = 0;
    run_until(loop, &never, ms);
}

static inline net_conn_opts opts(int role, int shm, const auth_key *key)
{
    return (net_conn_opts){.proto = &test_proto, .role = role, .key = key, .auth_context = "test v1",
                           .name = role == NET_SERVER ? "shm-server" : "shm-client", .what = "test",
                           .shm = shm, .shm_ring = SHM_RING_MIN};
}

static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* Mappings of our memfds ("/memfd:downpour-shm (deleted)"). */
static inline int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "downpour-shm")) n++;
    fclose(f);
    return n;
}

static inline uint64_t expect_sum(const uint8_t *b, size_t n, uint64_t from)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += (uint64_t)b[i] * (from + i + 1);
    return s;
}

static inline void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((i * 131u + seed * 7u) ^ (i >> 9));
}

static inline void pair(struct ev_loop *loop, peer *s, peer *c, int shm_server, const auth_key *key)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    net_conn_opts so = opts(NET_SERVER, shm_server, key), co = opts(NET_CLIENT, 1, key);
    s->c = net_conn_new(loop, sv[0], &so, &handler, s, "client-peer");
    net_conn_new(loop, sv[1], &co, &handler, c, "server-peer");
    run_until(loop, &c->opened, 2000);
}


/* ---- raw peers: a client that writes what it likes into the ring --------------------- */

static inline void raw_frame(uint8_t *b, uint16_t type, uint32_t len, int64_t a0)
{
    net_frame f = {.proto = 9, .type = type, .length = len, .arg0 = a0};
    net_frame_encode(&f, b);
}

/* Offers over a blocking socket fd, reads the answer (the server runs in `loop`, or in
 * another process when loop is NULL). Returns the channel, accepted, or NULL; *memfd
 * (when not NULL) a copy of the memfd's descriptor. */
static inline shm_chan *raw_offer(struct ev_loop *loop, int fd, uint8_t offer[SHM_OFFER_BYTES], int *memfd)
{
    char err[DP_ERRLEN];
    shm_chan *ch = shm_chan_offer(SHM_RING_MIN, offer, err);
    if (!ch) return NULL;
    if (memfd) *memfd = dup((int)dp_get_u32(offer + 4));   /* to scribble on, as a peer can */
    uint8_t b[NET_HEADER + SHM_OFFER_BYTES];
    raw_frame(b, NET_T_SHM_OFFER, SHM_OFFER_BYTES, 0);
    memcpy(b + NET_HEADER, offer, SHM_OFFER_BYTES);
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b) goto fail;
    if (loop) pump(loop, 20);
    net_frame f;
    if (read(fd, b, NET_HEADER) != NET_HEADER || net_frame_decode(b, &test_proto, &f, err) ||
        f.type != NET_T_SHM_ANSWER || f.arg0 != 1)
        goto fail;
    shm_chan_accepted(ch);
    return ch;
fail:
    shm_chan_free(ch);
    return NULL;
}

static inline void raw_write(shm_chan *ch, const void *p, size_t n)
{
    char err[DP_ERRLEN];
    struct iovec iov = {(void *)p, n};
    shm_chan_writev(ch, &iov, 1, err);
}

#endif
