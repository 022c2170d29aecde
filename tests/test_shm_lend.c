#define _GNU_SOURCE
/* test_shm_lend.c — payloads used where they lie in the shared-memory ring (net/shm.h's
 * peek and hold, net_conn_lend_payload and _hold_payload): a payload is lent where it
 * lies (peeked whole across the wrap, read-only, then consumed) on shared memory and
 * copied on TCP, beyond the ring or unaligned; half a lent payload and the peer's death
 * close as a truncated frame. Held runs stay untouched and the peer's room comes back
 * only up to the oldest, released in any order; a connection delivers held payloads and
 * the frames after them, copies one that would not fit beside them, and lends again once
 * they are released. */
#include <signal.h>

#include "tests/shm_check.h"

/* ---- payloads lent where they lie (shm_chan_peek, net_conn_lend_payload) ------------- */

static void test_peek(void)
{
    char err[DP_ERRLEN];
    uint8_t offer[SHM_OFFER_BYTES];
    shm_chan *a = shm_chan_offer(SHM_RING_MIN, offer, err), *b = NULL;
    CHECK_MSG(a != NULL, "%s", err);
    if (!a) return;
    int m = dup((int)dp_get_u32(offer + 4));   /* to scribble on, as a peer can */
    CHECK_MSG(shm_chan_accept(offer, &b, err) == DP_OK, "%s", err);
    if (!b) {
        shm_chan_free(a);
        close(m);
        return;
    }
    shm_chan_accepted(a);
    /* 300 rounds of 3001 bytes through a 4096-byte ring, each peeked as one run where it
     * lies (most wrap at the ring's end), then consumed */
    uint8_t in[3001], out[16];
    const void *p = NULL;
    int runs = 1, same = 1, wrapped = 0;
    for (int round = 0; round < 300; round++) {
        fill(in, sizeof in, (unsigned)round);
        struct iovec iov = {in, sizeof in};
        wrapped += shm_chan_rx_offset(b) + sizeof in > SHM_RING_MIN;
        if (shm_chan_writev(a, &iov, 1, err) != (ssize_t)sizeof in || shm_chan_peek(b, sizeof in, &p, err) != 1)
            runs = 0;
        else if (memcmp(p, in, sizeof in))
            same = 0;
        shm_chan_consume(b, sizeof in);
    }
    CHECK_MSG(runs && wrapped > 100, "every round peeked whole (%d of 300 wrapped)", wrapped);
    CHECK_MSG(same, "every peeked run holds the bytes written, across the wrap");
    /* fewer in than asked: 0, and the writer's next bytes ring the reader */
    fill(in, 200, 7);
    struct iovec half = {in, 100};
    CHECK(shm_chan_writev(a, &half, 1, err) == 100);
    CHECK(shm_chan_peek(b, 200, &p, err) == 0);
    half.iov_base = in + 100;
    CHECK(shm_chan_writev(a, &half, 1, err) == 100);
    CHECK_MSG(read(shm_chan_bell_fd(b), out, sizeof out) == 1, "the writer rang the waiting peek");
    CHECK(shm_chan_peek(b, 200, &p, err) == 1 && !memcmp(p, in, 200));
    /* a peek consumes nothing: the same bytes again, then read as usual */
    const void *q = NULL;
    CHECK(shm_chan_peek(b, 200, &q, err) == 1 && q == p);
    CHECK(shm_chan_read(b, out, 10, err) == 10 && !memcmp(out, in, 10));
    shm_chan_consume(b, 190);
    CHECK(shm_chan_rx_pending(b) == 0);
    CHECK_MSG(shm_chan_peek(b, SHM_RING_MIN + 1, &p, err) == DP_EINVAL && strstr(err, "do not fit"), "%s", err);
    /* the peer's counter beyond the ring: refused, as a read is */
    uint8_t *map = m >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0) : MAP_FAILED;
    CHECK(map != MAP_FAILED);
    if (map != MAP_FAILED) {
        atomic_store((_Atomic uint64_t *)(void *)(map + L_TAIL(0)), 1ull << 40);
        munmap(map, 4096);
        CHECK_MSG(shm_chan_peek(b, 8, &p, err) == DP_EPROTO && strstr(err, "bytes ahead of"), "%s", err);
    }
    if (m >= 0) close(m);
    shm_chan_free(b);
    shm_chan_free(a);
}

/* Held runs: read past, unwritable for the peer until released, in any order. */
static void test_hold(void)
{
    char err[DP_ERRLEN];
    uint8_t offer[SHM_OFFER_BYTES];
    shm_chan *a = shm_chan_offer(SHM_RING_MIN, offer, err), *b = NULL;
    CHECK_MSG(a != NULL, "%s", err);
    if (!a) return;
    CHECK_MSG(shm_chan_accept(offer, &b, err) == DP_OK, "%s", err);
    if (!b) {
        shm_chan_free(a);
        return;
    }
    shm_chan_accepted(a);
    static uint8_t run[3][1000], more[4096], out[1000];
    const void *p = NULL, *held[2];
    for (int i = 0; i < 3; i++) {
        fill(run[i], sizeof run[i], 40u + (unsigned)i);
        struct iovec iov = {run[i], sizeof run[i]};
        CHECK(shm_chan_writev(a, &iov, 1, err) == 1000);
    }
    CHECK(shm_chan_peek(b, 1000, &p, err) == 1);
    held[0] = shm_chan_hold(b, 1000);
    CHECK(shm_chan_peek(b, 1000, &p, err) == 1);
    held[1] = shm_chan_hold(b, 1000);
    CHECK(held[1] == p && shm_chan_holds(b) == 2);
    CHECK(shm_chan_read(b, out, sizeof out, err) == 1000 && !memcmp(out, run[2], 1000));   /* read past */
    CHECK(shm_chan_unreleased(b) == 3000);
    /* the writer gets only the room before the oldest held run */
    fill(more, sizeof more, 44);
    struct iovec iov = {more, sizeof more};
    CHECK_MSG(shm_chan_writev(a, &iov, 1, err) == SHM_RING_MIN - 3000, "room beside 3000 held bytes");
    CHECK(!memcmp(held[0], run[0], 1000) && !memcmp(held[1], run[1], 1000));   /* untouched */
    shm_chan_unhold(b, held[1]);   /* the newer first: no room yet */
    iov = (struct iovec){more, 1};
    CHECK(shm_chan_writev(a, &iov, 1, err) == 0);
    CHECK(!memcmp(held[0], run[0], 1000));
    shm_chan_unhold(b, held[0]);   /* now both: the room up to the read position */
    CHECK(shm_chan_holds(b) == 0 && shm_chan_unreleased(b) == 0);
    CHECK_MSG(shm_chan_writev(a, &iov, 1, err) == 1, "room once the oldest is released");
    shm_chan_free(b);
    shm_chan_free(a);
}

/* Whether p lies in a mapping of one of our memfds. */
static int in_shm_map(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int in = 0;
    if (!f) return 0;
    while (!in && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "downpour-shm") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    }
    fclose(f);
    return in;
}

/* A handler that asks for every TENSOR's payload in place. */
typedef struct lender {
    peer p;
    int asked, lent, lent_in_map, now;
    int hold;              /* hold instead of lend, keeping the pointers */
    const void *kept[8];
    int n_kept;
} lender;

static void *lend_header(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(err);
    DP_UNUSED(reject);
    lender *l = ctx;
    l->now = 0;
    if (h->type != T_TENSOR) return NULL;
    l->asked++;
    l->now = l->hold ? net_conn_hold_payload(c) : net_conn_lend_payload(c);
    l->lent += l->now;
    return NULL;
}

static void lend_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    lender *l = ctx;
    if (l->now) l->lent_in_map += in_shm_map(payload);
    if (l->now && l->hold && l->n_kept < 8) l->kept[l->n_kept++] = payload;
    p_frame(c, h, payload, &l->p);
}

static void lend_open(net_conn *c, void *ctx) { p_open(c, &((lender *)ctx)->p); }
static void lend_close(net_conn *c, const char *reason, void *ctx) { p_close(c, reason, &((lender *)ctx)->p); }
static const net_handler lend_handler = {lend_open, lend_header, lend_frame, lend_close};

/* Tensors through a 4096-byte ring, lent where they lie (wrapped or not) on shared
 * memory, copied on TCP, one bigger than the ring or after an odd-sized frame copied
 * too; every byte as sent. */
static void test_lend(struct ev_loop *loop, int shm)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    lender s = {0};
    peer c = {0};
    net_conn_opts so = opts(NET_SERVER, shm, NULL), co = opts(NET_CLIENT, 1, NULL);
    s.p.c = net_conn_new(loop, sv[0], &so, &lend_handler, &s, "client-peer");
    net_conn_new(loop, sv[1], &co, &handler, &c, "server-peer");
    run_until(loop, &c.opened, 2000);
    if (!c.c || !s.p.c) return;
    CHECK(!strcmp(net_conn_transport(c.c), shm ? "shm" : "tcp"));
    static uint8_t t[10][2000], big[8192], odd[3];
    uint64_t sum = 0, at = 0;
    net_frame f = {.type = T_TENSOR};
    for (int i = 0; i < 10; i++) {
        fill(t[i], sizeof t[i], 20u + (unsigned)i);
        CHECK(net_conn_send(c.c, f, t[i], sizeof t[i], 0) == DP_OK);
        sum += expect_sum(t[i], sizeof t[i], at);
        at += sizeof t[i];
    }
    uint64_t end = dp_now_ns() + 5000000000ull;
    while (s.p.frames < 10 && !s.p.closed && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
    CHECK_MSG(s.p.frames == 10 && s.p.sum == sum && s.p.bytes == at, "%s: 10 tensors, every byte in place (%d)",
              shm ? "shm" : "tcp", s.p.frames);
    CHECK_MSG(s.asked == 10 && s.lent == (shm ? 10 : 0) && s.lent_in_map == s.lent,
              "%s: %d of %d lent, %d of them in the ring's mapping", shm ? "shm" : "tcp", s.lent, s.asked,
              s.lent_in_map);
    /* bigger than the ring: streamed and copied; then an odd-sized frame, after which a
     * tensor's payload is no longer 8-aligned in the ring: copied */
    fill(big, sizeof big, 30);
    fill(odd, sizeof odd, 31);
    CHECK(net_conn_send(c.c, f, big, sizeof big, 0) == DP_OK);
    sum += expect_sum(big, sizeof big, at);
    at += sizeof big;
    net_frame fb = {.type = T_BLOB};
    CHECK(net_conn_send(c.c, fb, odd, sizeof odd, 0) == DP_OK);
    sum += expect_sum(odd, sizeof odd, at);
    at += sizeof odd;
    CHECK(net_conn_send(c.c, f, t[0], sizeof t[0], 0) == DP_OK);
    sum += expect_sum(t[0], sizeof t[0], at);
    at += sizeof t[0];
    end = dp_now_ns() + 5000000000ull;
    while (s.p.frames < 13 && !s.p.closed && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
    CHECK_MSG(s.p.frames == 13 && s.p.sum == sum && s.p.bytes == at, "%s: then 3 more, every byte in place (%d)",
              shm ? "shm" : "tcp", s.p.frames);
    CHECK_MSG(s.asked == 12 && s.lent == (shm ? 10 : 0), "%s: the big and the unaligned tensors copied (%d lent)",
              shm ? "shm" : "tcp", s.lent);
    net_conn_close(c.c, "done");
    run_until(loop, &s.p.closed, 2000);
}

/* Held payloads: delivered, the frames after them too; one that would not fit beside
 * them is copied; once released (newest first), lent again, and the held bytes were
 * never overwritten meanwhile. */
static void test_conn_hold(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    lender s = {.hold = 1};
    peer c = {0};
    net_conn_opts so = opts(NET_SERVER, 1, NULL), co = opts(NET_CLIENT, 1, NULL);
    s.p.c = net_conn_new(loop, sv[0], &so, &lend_handler, &s, "client-peer");
    net_conn_new(loop, sv[1], &co, &handler, &c, "server-peer");
    run_until(loop, &c.opened, 2000);
    if (!c.c || !s.p.c) return;
    static uint8_t t[3][1000], blob[96], big[2000];
    net_frame f = {.type = T_TENSOR}, fb = {.type = T_BLOB};
    for (int i = 0; i < 3; i++) {
        fill(t[i], sizeof t[i], 50u + (unsigned)i);
        CHECK(net_conn_send(c.c, f, t[i], sizeof t[i], 0) == DP_OK);
    }
    fill(blob, sizeof blob, 53);
    CHECK(net_conn_send(c.c, fb, blob, sizeof blob, 0) == DP_OK);
    fill(big, sizeof big, 54);
    CHECK(net_conn_send(c.c, f, big, sizeof big, 0) == DP_OK);   /* 3 x 1032 held + 128: no room */
    uint64_t end = dp_now_ns() + 2000000000ull;
    while (s.p.frames < 4 && !s.p.closed && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
    pump(loop, 20);
    CHECK_MSG(s.p.frames == 4 && s.n_kept == 3 && s.asked == 4 && s.lent == 3,
              "3 held, the blob after them, the big one waiting for room (%d frames, %d held, %d asked)", s.p.frames,
              s.n_kept, s.asked);
    int intact = s.n_kept == 3;
    for (int i = 0; intact && i < 3; i++) intact = !memcmp(s.kept[i], t[i], sizeof t[i]);
    CHECK_MSG(intact, "the held payloads are as sent while the peer writes on");
    for (int i = s.n_kept; i-- > 0;) net_conn_release(s.p.c, s.kept[i]);
    end = dp_now_ns() + 2000000000ull;
    while (s.p.frames < 5 && !s.p.closed && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
    CHECK_MSG(s.p.frames == 5 && s.p.last.length == sizeof big && s.lent == 3, "the big one copied once room came (%d)",
              s.p.frames);
    s.n_kept = 0;
    CHECK(net_conn_send(c.c, f, t[0], sizeof t[0], 0) == DP_OK);
    run_until(loop, &s.n_kept, 2000);
    CHECK_MSG(s.n_kept == 1 && s.lent == 4, "held again after the release (%d)", s.lent);
    if (s.n_kept) net_conn_release(s.p.c, s.kept[0]);
    net_conn_close(c.c, "done");
    run_until(loop, &s.p.closed, 2000);
}

/* A peer gone with half of a lent payload in the ring: closed as truncated, nothing
 * delivered. */
static void test_lend_truncated(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    lender s = {0};
    net_conn_opts so = opts(NET_SERVER, 1, NULL);
    net_conn_new(loop, sv[0], &so, &lend_handler, &s, "raw");
    uint8_t offer[SHM_OFFER_BYTES], b[NET_HEADER + 1000];
    shm_chan *ch = raw_offer(loop, sv[1], offer, NULL);
    CHECK(ch != NULL);
    if (!ch) return;
    raw_frame(b, T_TENSOR, 2000, 0);
    memset(b + NET_HEADER, 1, 1000);
    raw_write(ch, b, sizeof b);
    pump(loop, 20);
    CHECK_MSG(s.lent == 1 && s.p.frames == 0 && !s.p.closed, "lent, waiting for the rest (%d, %d)", s.lent, s.p.frames);
    close(sv[1]);
    shm_chan_free(ch);
    run_until(loop, &s.p.closed, 2000);
    CHECK_MSG(s.p.closed && s.p.frames == 0 && !strcmp(s.p.reason, "peer closed mid-frame (truncated frame)"), "%s",
              s.p.reason);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    dp_log_level = DP_LOG_ERROR;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    test_peek();
    test_hold();
    test_lend(loop, 1);
    test_lend(loop, 0);
    test_lend_truncated(loop);
    test_conn_hold(loop);
    ev_loop_destroy(loop);
    return CHECK_DONE();
}
