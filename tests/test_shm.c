#define _GNU_SOURCE
/* test_shm.c — the shared-memory transport (net/shm.h and its use in net/conn.c): the
 * rings wrap around and stream frames bigger than themselves; an offer with a wrong
 * token, another boot id, a bad size, an unsealed memfd or a pipe in the memfd's place
 * is declined; two connections switch to the rings and move copied, borrowed, staged and
 * big frames in order, both ways, with and without a secret, a ring fuller than the read
 * budget read on by itself, and stay on TCP when the server has it off; with reading off
 * nothing is read; a peer that writes a bad header, a length over the bound, a counter
 * beyond the ring or a byte on the socket is closed with the reason; a whole frame a peer
 * left in the ring as it went is delivered before the close; a peer process that dies
 * mid-frame (either side) closes the connection at once with a reason, and every
 * descriptor and mapping is released; a server that refuses the offer with an ERROR
 * closes the client with its text. Payloads lent and held where they lie:
 * test_shm_lend.c. The raw peers (tests/shm_check.h) build their frames and the layout's
 * offsets (docs/wire.md) themselves. */
#include <signal.h>
#include <sys/wait.h>

#include "tests/shm_check.h"

/* ---- the channel on its own ------------------------------------------------------ */

static void test_ring_wrap(void)
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
    /* 300 rounds of 3001 bytes through a 4096-byte ring: every round wraps or straddles. */
    uint8_t in[3001], out[3001];
    int same = 1, sizes = 1;
    for (int round = 0; round < 300; round++) {
        fill(in, sizeof in, (unsigned)round);
        struct iovec iov[2] = {{in, 1000}, {in + 1000, sizeof in - 1000}};
        ssize_t w = shm_chan_writev(a, iov, 2, err);
        ssize_t r = shm_chan_read(b, out, sizeof out, err);
        if (w != (ssize_t)sizeof in || r != (ssize_t)sizeof in) sizes = 0;
        if (memcmp(in, out, sizeof in)) same = 0;
    }
    CHECK_MSG(sizes, "every round moved 3001 bytes");
    CHECK_MSG(same, "every round's bytes arrived unchanged across the wrap");
    /* Full: a write takes only the room; the rest goes once read. */
    uint8_t big[6000], got[6000];
    fill(big, sizeof big, 9);
    struct iovec one = {big, sizeof big};
    CHECK(shm_chan_writev(a, &one, 1, err) == SHM_RING_MIN);
    one = (struct iovec){big, 1};
    CHECK(shm_chan_writev(a, &one, 1, err) == 0);
    CHECK(shm_chan_tx_wait(a) == 0);          /* full: wait for the doorbell */
    CHECK(shm_chan_rx_pending(b) == SHM_RING_MIN);
    CHECK(shm_chan_read(b, got, 100, err) == 100);
    /* b made room while a waits for it: a's doorbell rings. */
    CHECK(shm_chan_bell_drain(a) == DP_OK);
    CHECK(shm_chan_read(b, got + 100, sizeof got, err) == SHM_RING_MIN - 100);
    one = (struct iovec){big + SHM_RING_MIN, sizeof big - SHM_RING_MIN};
    CHECK(shm_chan_writev(a, &one, 1, err) == (ssize_t)(sizeof big - SHM_RING_MIN));
    CHECK(shm_chan_read(b, got + SHM_RING_MIN, sizeof got, err) == (ssize_t)(sizeof big - SHM_RING_MIN));
    CHECK(!memcmp(big, got, sizeof big));
    /* Empty: the reader says it waits, then the writer rings. */
    CHECK(shm_chan_read(b, got, 1, err) == 0);
    CHECK(shm_chan_rx_wait(b) == 0);
    uint8_t x = 7, dummy[8];
    one = (struct iovec){&x, 1};
    CHECK(shm_chan_writev(a, &one, 1, err) == 1);
    CHECK(read(shm_chan_bell_fd(b), dummy, sizeof dummy) == 1);   /* rung once */
    CHECK(shm_chan_rx_wait(b) == 1);                                /* the byte is there */
    CHECK(shm_chan_read(b, got, 8, err) == 1 && got[0] == 7);
    /* A side gone: the other's doorbell reads its end. */
    shm_chan_free(b);
    CHECK(shm_chan_bell_drain(a) == DP_ECLOSED);
    shm_chan_free(a);
}

/* Offers a hostile or broken peer might make: each declined with its reason. */
static void test_bad_offers(void)
{
    char err[DP_ERRLEN];
    uint8_t offer[SHM_OFFER_BYTES], bad[SHM_OFFER_BYTES];
    shm_chan *a = shm_chan_offer(SHM_RING_MIN, offer, err), *b = NULL;
    CHECK_MSG(a != NULL, "%s", err);
    if (!a) return;
    memcpy(bad, offer, sizeof bad);
    bad[24] ^= 1;
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && !b && strstr(err, "token"));
    memcpy(bad, offer, sizeof bad);
    bad[45] ^= 0x10;
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "another host"));
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 16, SHM_RING_MIN + 1);
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "power of two"));
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 16, SHM_RING_MIN * 2);   /* the memfd is smaller than that says */
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "holds"));
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 4, dp_get_u32(offer + 8));   /* a pipe where the memfd goes */
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "not a memfd"));
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 8, dp_get_u32(offer + 4));   /* the memfd where a pipe goes */
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "not a pipe"));
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 4, 100000);
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "No such file"));
    /* An unsealed memfd of the right size and header: it could be shrunk under us. */
    int m = memfd_create("downpour-shm-unsealed", MFD_CLOEXEC);
    size_t len = 4096 + 2 * SHM_RING_MIN;
    CHECK(m >= 0 && ftruncate(m, (off_t)len) == 0);
    uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
    int src = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%u", dp_get_u32(offer + 4));
    src = open(path, O_RDONLY);
    CHECK(src >= 0 && map != MAP_FAILED && pread(src, map, 4096, 0) == 4096);
    memcpy(bad, offer, sizeof bad);
    dp_put_u32(bad + 4, (uint32_t)m);
    CHECK(shm_chan_accept(bad, &b, err) == DP_EINVAL && strstr(err, "not sealed"));
    munmap(map, len);
    close(m);
    close(src);
    CHECK_MSG(shm_chan_accept(offer, &b, err) == DP_OK, "the offer itself is fine: %s", err);
    shm_chan_free(b);
    shm_chan_free(a);
}

/* ---- connections on shared memory ------------------------------------------------ */

static void test_conn(struct ev_loop *loop, const auth_key *key)
{
    int fds0 = count_fds(), maps0 = count_maps();
    peer s = {0}, c = {0};
    pair(loop, &s, &c, 1, key);
    CHECK(c.opened == 1 && s.opened == 1);
    if (!c.c || !s.c) return;
    CHECK(!strcmp(net_conn_transport(c.c), "shm") && !strcmp(net_conn_transport(s.c), "shm"));
    /* each side: the whole memfd, and its incoming ring twice more (back to back) */
    CHECK_MSG(count_maps() == maps0 + 6, "maps %d -> %d", maps0, count_maps());
    /* copied, borrowed (bigger than the ring: it streams), staged, a big tensor */
    static uint8_t small[100], big[3 * SHM_RING_MIN + 17], tensor[(5u << 20) + 4];
    fill(small, sizeof small, 1);
    fill(big, sizeof big, 2);
    fill(tensor, sizeof tensor, 3);
    net_frame f = {.type = T_BLOB, .id = 1};
    CHECK(net_conn_send(c.c, f, small, sizeof small, 1) == DP_OK);
    f.id = 2;
    CHECK(net_conn_send(c.c, f, big, sizeof big, 0) == DP_OK);
    net_frame ping = {.proto = 9, .type = T_PING, .id = 3};
    net_frame_put(net_conn_stage(c.c), &ping, NULL, 0);
    CHECK(net_conn_flush(c.c) == DP_OK);
    f = (net_frame){.type = T_TENSOR, .id = 4};
    CHECK(net_conn_send(c.c, f, tensor, sizeof tensor, 0) == DP_OK);
    int want = 4;
    uint64_t end = dp_now_ns() + 5000000000ull;
    while (s.frames < want && !s.closed && dp_now_ns() < end) ev_run(loop, EVRUN_NOWAIT);
    CHECK_MSG(s.frames == 4, "frames %d, closed %d (%s)", s.frames, s.closed, s.reason);
    CHECK(s.order[0] == T_BLOB && s.order[1] == T_BLOB && s.order[2] == T_PING && s.order[3] == T_TENSOR);
    uint64_t sum = expect_sum(small, sizeof small, 0);
    sum += expect_sum(big, sizeof big, sizeof small);
    sum += expect_sum(tensor, sizeof tensor, sizeof small + sizeof big);
    CHECK_MSG(s.sum == sum && s.bytes == sizeof small + sizeof big + sizeof tensor, "every byte in place");
    /* the other way, copied and big: the server's pull path */
    f = (net_frame){.type = T_TENSOR, .id = 5};
    CHECK(net_conn_send(s.c, f, tensor, 1u << 20, 1) == DP_OK);
    run_until(loop, &c.frames, 3000);
    CHECK(c.frames == 1 && c.bytes == 1u << 20 && c.sum == expect_sum(tensor, 1u << 20, 0));
    /* reading off: nothing is read, however long; on again: it comes */
    net_conn_set_reading(s.c, 0);
    f = (net_frame){.type = T_BLOB, .id = 6};
    CHECK(net_conn_send(c.c, f, small, sizeof small, 1) == DP_OK);
    pump(loop, 50);
    CHECK(s.frames == 4);
    net_conn_set_reading(s.c, 1);
    pump(loop, 50);
    CHECK(s.frames == 5 && s.last.id == 6);
    net_conn_close(c.c, "done");
    run_until(loop, &s.closed, 2000);
    CHECK_MSG(s.closed && s.kind == NET_CLOSE_PEER && !strcmp(s.reason, "peer closed the connection"), "%s",
              s.reason);
    CHECK(c.closed && c.kind == NET_CLOSE_LOCAL);
    CHECK_MSG(count_fds() == fds0 && count_maps() == maps0, "fds %d -> %d, maps %d -> %d", fds0, count_fds(),
              maps0, count_maps());
}

/* A ring bigger than the read budget, filled at once: the reader stops at the budget and
 * reads on at the next loop turn by itself (the writer, done, rings no more). */
static void test_budget(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s = {0}, c = {0};
    net_conn_opts so = opts(NET_SERVER, 1, NULL), co = opts(NET_CLIENT, 1, NULL);
    co.shm_ring = 8u << 20;
    s.c = net_conn_new(loop, sv[0], &so, &handler, &s, "client-peer");
    net_conn_new(loop, sv[1], &co, &handler, &c, "server-peer");
    run_until(loop, &c.opened, 2000);
    if (!c.c || !s.c) return;
    CHECK(!strcmp(net_conn_transport(c.c), "shm"));
    static uint8_t t[6u << 20];
    fill(t, sizeof t, 5);
    net_frame f = {.type = T_TENSOR};
    CHECK(net_conn_send(c.c, f, t, sizeof t, 0) == DP_OK);
    CHECK(net_conn_pending(c.c) == 0);   /* all of it in the ring, from our memory */
    run_until(loop, &s.frames, 3000);
    CHECK_MSG(s.frames == 1 && s.bytes == sizeof t && s.sum == expect_sum(t, sizeof t, 0), "frames %d", s.frames);
    net_conn_close(c.c, "done");
    run_until(loop, &s.closed, 2000);
}

/* A server with shared memory off: TCP, and the frames still flow. */
static void test_declined(struct ev_loop *loop)
{
    peer s = {0}, c = {0};
    pair(loop, &s, &c, 0, NULL);
    CHECK(c.opened == 1 && c.c && s.c);
    if (!c.c || !s.c) return;
    CHECK(!strcmp(net_conn_transport(c.c), "tcp") && !strcmp(net_conn_transport(s.c), "tcp"));
    CHECK(count_maps() == 0);
    net_frame f = {.type = T_PING, .id = 9};
    CHECK(net_conn_send(c.c, f, NULL, 0, 0) == DP_OK);
    run_until(loop, &s.frames, 2000);
    CHECK(s.frames == 1 && s.last.id == 9);
    net_conn_close(c.c, "done");
    run_until(loop, &s.closed, 2000);
}
/* ---- raw peers writing what they like into the ring ---------------------------- */

/* Each way of breaking the ring closes the server's connection with its reason. */
static void test_bad_peer(struct ev_loop *loop)
{
    const char *want[] = {"bad magic", "outside its bound", "bytes ahead of", "bytes on the TCP socket",
                          "SHM_OFFER after", "bytes behind"};
    for (int k = 0; k < 6; k++) {
        int sv[2], fds0 = count_fds();
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        peer s = {0};
        net_conn_opts so = opts(NET_SERVER, 1, NULL);
        net_conn_new(loop, sv[0], &so, &handler, &s, "raw");
        uint8_t offer[SHM_OFFER_BYTES], b[NET_HEADER + SHM_OFFER_BYTES];
        int m = -1;
        shm_chan *ch = raw_offer(loop, sv[1], offer, &m);
        CHECK_MSG(ch != NULL, "case %d: the offer is taken", k);
        if (!ch) {
            close(sv[1]);
            continue;
        }
        if (k == 0) {
            memset(b, 0x5a, NET_HEADER);
            raw_write(ch, b, NET_HEADER);
        } else if (k == 1) {
            raw_frame(b, T_BLOB, (8u << 20) + 1, 0);
            raw_write(ch, b, NET_HEADER);
        } else if (k == 2) {
            /* our own memfd, mapped as the peer sees it: the tail far beyond the ring */
            raw_frame(b, T_PING, 0, 0);
            raw_write(ch, b, NET_HEADER);   /* rings the server */
            uint8_t *map = m >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0) : MAP_FAILED;
            if (map != MAP_FAILED) {
                atomic_store((_Atomic uint64_t *)(void *)(map + L_TAIL(0)), 1ull << 40);
                munmap(map, 4096);
            }
        } else if (k == 3) {
            CHECK(write(sv[1], "x", 1) == 1);
        } else if (k == 4) {
            raw_frame(b, NET_T_SHM_OFFER, SHM_OFFER_BYTES, 0);
            memcpy(b + NET_HEADER, offer, SHM_OFFER_BYTES);
            raw_write(ch, b, sizeof b);
        } else {
            /* the server's outgoing ring: its head (ours to publish) far beyond its tail */
            uint8_t *map = m >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0) : MAP_FAILED;
            if (map != MAP_FAILED) {
                atomic_store((_Atomic uint64_t *)(void *)(map + L_HEAD(1)), 1ull << 40);
                munmap(map, 4096);
            }
            net_frame f = {.type = T_PING};
            if (s.c) net_conn_send(s.c, f, NULL, 0, 0);
        }
        run_until(loop, &s.closed, 2000);
        CHECK_MSG(s.closed && s.kind == NET_CLOSE_PROTO && strstr(s.reason, "bad frame: ") &&
                  strstr(s.reason, want[k]), "case %d: %s", k, s.reason);
        shm_chan_free(ch);
        close(sv[1]);
        if (m >= 0) close(m);
        CHECK_MSG(count_fds() == fds0 && count_maps() == 0, "case %d: fds %d -> %d, maps %d", k, fds0, count_fds(),
                  count_maps());
    }
}

/* A peer that writes a whole frame and goes away without ringing: the frame is read from
 * the ring before the connection closes, as TCP delivers what came before a FIN. */
static void test_drain_on_death(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    peer s = {0};
    net_conn_opts so = opts(NET_SERVER, 1, NULL);
    net_conn_new(loop, sv[0], &so, &handler, &s, "raw");
    uint8_t offer[SHM_OFFER_BYTES], b[NET_HEADER + 10];
    int m = -1;
    shm_chan *ch = raw_offer(loop, sv[1], offer, &m);
    uint8_t *map = m >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0) : MAP_FAILED;
    CHECK(ch && map != MAP_FAILED);
    if (!ch || map == MAP_FAILED) return;
    atomic_store((_Atomic uint32_t *)(void *)(map + L_TAIL(0) + 128), 0);   /* no ring for this one */
    raw_frame(b, T_BLOB, 10, 0);
    memset(b + NET_HEADER, 3, 10);
    raw_write(ch, b, sizeof b);
    munmap(map, 4096);
    close(m);
    close(sv[1]);
    shm_chan_free(ch);
    run_until(loop, &s.closed, 2000);
    CHECK_MSG(s.frames == 1 && s.last.type == T_BLOB && s.bytes == 10, "the last frame delivered (%d)", s.frames);
    CHECK_MSG(s.closed && !strcmp(s.reason, "peer closed the connection"), "%s", s.reason);
}

/* A peer process that dies mid-frame: the connection closes at once with the reason, its
 * descriptors and mapping released. server_dies: the child is the server. */
static void test_peer_death(struct ev_loop *loop, int server_dies)
{
    int sv[2], fds0 = count_fds(), maps0 = count_maps();
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char err[DP_ERRLEN];
        uint8_t offer[SHM_OFFER_BYTES], b[NET_HEADER + SHM_OFFER_BYTES + 1000];
        shm_chan *ch = NULL;
        if (server_dies) {
            net_frame f;
            if (read(sv[1], b, NET_HEADER + SHM_OFFER_BYTES) != NET_HEADER + SHM_OFFER_BYTES ||
                net_frame_decode(b, &test_proto, &f, err) || f.type != NET_T_SHM_OFFER ||
                shm_chan_accept(b + NET_HEADER, &ch, err))
                _exit(3);
            raw_frame(b, NET_T_SHM_ANSWER, 0, 1);
            if (write(sv[1], b, NET_HEADER) != NET_HEADER) _exit(4);
        } else if (!(ch = raw_offer(NULL, sv[1], offer, NULL))) {
            _exit(5);
        }
        /* half a frame, then death */
        raw_frame(b, T_BLOB, 64000, 0);
        memset(b + NET_HEADER, 1, 1000);
        raw_write(ch, b, NET_HEADER + 1000);
        usleep(100000);
        raise(SIGKILL);
        _exit(6);
    }
    close(sv[1]);
    peer p = {0};
    net_conn_opts o = opts(server_dies ? NET_CLIENT : NET_SERVER, 1, NULL);
    net_conn_new(loop, sv[0], &o, &handler, &p, "child");
    uint64_t t0 = dp_now_ns();
    run_until(loop, &p.closed, 5000);
    double secs = (double)(dp_now_ns() - t0) / 1e9;
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the %s child died by SIGKILL (status %d)",
              server_dies ? "server" : "client", st);
    CHECK_MSG(p.closed && p.kind == NET_CLOSE_PEER && !strcmp(p.reason, "peer closed mid-frame (truncated frame)"),
              "%s died: closed %d after %.2f s: %s", server_dies ? "server" : "client", p.closed, secs, p.reason);
    CHECK_MSG(secs < 2, "closed %.2f s after the start (the child lived 0.1 s)", secs);
    CHECK_MSG(p.frames == 0, "no frame delivered from half a frame");
    CHECK_MSG(count_fds() == fds0 && count_maps() == maps0, "fds %d -> %d, maps %d -> %d", fds0, count_fds(), maps0,
              count_maps());
}

/* A server that answers the client's offer with an ERROR (it cannot map the memory, or
 * will not): the client closes, as the peer's doing, with the server's text. */
static void test_offer_refused(struct ev_loop *loop)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char err[DP_ERRLEN];
        static const char text[] = "no shared memory here";
        uint8_t b[NET_HEADER + SHM_OFFER_BYTES];
        net_frame f;
        if (read(sv[1], b, sizeof b) != (ssize_t)sizeof b || net_frame_decode(b, &test_proto, &f, err) ||
            f.type != NET_T_SHM_OFFER)
            _exit(3);
        raw_frame(b, NET_T_ERROR, sizeof text - 1, 0);
        memcpy(b + NET_HEADER, text, sizeof text - 1);
        if (write(sv[1], b, NET_HEADER + sizeof text - 1) != (ssize_t)(NET_HEADER + sizeof text - 1)) _exit(4);
        while (read(sv[1], b, sizeof b) > 0) {}
        _exit(0);
    }
    close(sv[1]);
    peer p = {0};
    net_conn_opts o = opts(NET_CLIENT, 1, NULL);
    net_conn_new(loop, sv[0], &o, &handler, &p, "refusing");
    run_until(loop, &p.closed, 5000);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the refusing server read the offer (status %d)", st);
    CHECK_MSG(p.closed && p.kind == NET_CLOSE_PEER && !strcmp(p.reason, "refused: no shared memory here"),
              "an offer refused with an ERROR: closed %d, kind %d: %s", p.closed, p.kind, p.reason);
    CHECK_MSG(p.opened == 0 && p.frames == 0, "never opened (%d), no frame delivered (%d)", p.opened, p.frames);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    dp_log_level = DP_LOG_ERROR;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);   /* not the default: it reaps children */
    test_ring_wrap();
    test_bad_offers();
    test_conn(loop, NULL);
    auth_key key = {0};
    memset(key.k, 0x42, sizeof key.k);
    key.set = 1;
    test_conn(loop, &key);
    test_budget(loop);
    test_declined(loop);
    test_bad_peer(loop);
    test_drain_on_death(loop);
    test_peer_death(loop, 0);
    test_peer_death(loop, 1);
    test_offer_refused(loop);
    ev_loop_destroy(loop);
    return CHECK_DONE();
}
