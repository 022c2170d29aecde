/* test_hub_limits.c — what a hub's viewers can cost it (issue 15), with the limits set
 * small so that a test reaches them (they are options; the defaults are in hub.h):
 *   - at most max_subscribers viewers at once: the rest are refused, counted;
 *   - stalled viewers (subscribed, never reading) cost at most subs_total_bytes of
 *     queued output together, however many: the hub's RSS grows by less than that
 *     (+ slack) while a producer streams far more than it;
 *   - a viewer dropping events for sub_stall_s is disconnected, counted;
 *   - over max_conns connections, the rest are closed at accept, counted;
 *   - a viewer that reads keeps getting events meanwhile.
 * The hub runs in this process (its thread); the viewers are raw sockets that say
 * HELLO_SUB and then read nothing (SO_RCVBUF 4 KiB). */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/stream.h"
#include "hub/wire.h"
#include "net/frame.h"
#include "hub/hub.h"
#include "tests/check.h"

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A viewer that subscribes and never reads; -1 when the connection failed. */
static int stalled_viewer(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    uint8_t hello[NET_HEADER + 4] = {0};
    net_frame f = {.proto = NET_PROTO_STREAM, .type = EVT_F_HELLO_SUB, .length = 4};
    net_frame_encode(&f, hello);
    if (send(fd, hello, sizeof hello, MSG_NOSIGNAL) != (ssize_t)sizeof hello) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads whatever the viewer has been sent; returns the records. */
static size_t drain(evt_sub *s)
{
    char e2[DP_ERRLEN];
    evt_record r;
    size_t n = 0;
    if (evt_sub_pump(s, 0, e2) < 0) return 0;
    while (evt_sub_next(s, &r) == 1) n++;
    return n;
}

/* 1 when the peer has closed fd (EOF or reset after whatever it sent). */
static int closed_by_peer(int fd)
{
    char buf[65536];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) return 1;
        if (r < 0) return 0;
    }
}

/* Emits events [from, to) in batches, each waiting for the hub to take the last (so the
 * emitter's ring never overflows), the reading viewer reading along. */
static void stream(evt_emitter *em, int from, int to, evt_sub *reader, size_t *got)
{
    for (int i = from; i < to; i++) {
        evt_record e;
        evt_init(&e, EVT_COMPUTE_END, EVT_JOB_WORKER, 0);
        e.step = i;
        e.dur = 1000 + i;
        evt_emit(em, &e);
        if ((i + 1) % 10000 == 0)
            for (int k = 0; k < 200 && evt_emitter_unacked(em) > 5000; k++) {
                sleep_ms(2);
                *got += drain(reader);
            }
    }
}

#define N_VIEWERS 20
#define MAX_SUBS 8
#define TOTAL_BYTES (2u << 20)
#define EVENTS 400000

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    char err[DP_ERRLEN];
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    CHECK_MSG(opt.max_subscribers == 64 && opt.subs_total_bytes == (64u << 20) && opt.max_conns == 4096 &&
                  opt.sub_stall_s == 30,
              "the documented defaults: 64 viewers, 64 MiB of their queues, 4096 connections, 30 s");
    opt.listen = "127.0.0.1:0";
    opt.quiet = 1;
    opt.max_subscribers = MAX_SUBS;
    opt.subs_total_bytes = TOTAL_BYTES;
    opt.sub_stall_s = 1;
    opt.max_conns = N_VIEWERS + 4;   /* the emitter, the reader and the viewers fit */
    opt.sub_sndbuf = 4096;   /* the queue, not the kernel's socket buffers, holds the backlog */
    evt_hub *h = evt_hub_new(&opt, err);
    CHECK_MSG(h != NULL, "%s", err);
    if (!h) return CHECK_DONE();
    CHECK(evt_hub_start_thread(h, err) == 0);
    int port = evt_hub_port(h);
    evt_emitter *em = evt_emitter_new(evt_hub_address(h), EVT_JOB_WORKER, 0, 1 << 16, err);
    CHECK_MSG(em != NULL, "%s", err);
    CHECK(evt_emitter_wait_connected(em, 3000));
    /* a viewer that reads: it must keep receiving */
    evt_sub *reader = evt_sub_connect(evt_hub_address(h), 3000, err);
    CHECK_MSG(reader != NULL, "%s", err);

    /* warm up: the emitter's ring and the hub's own structures at their working size */
    size_t got = 0;
    stream(em, 0, EVENTS / 4, reader, &got);
    int fds[N_VIEWERS];
    for (int i = 0; i < N_VIEWERS; i++) fds[i] = stalled_viewer(port);
    sleep_ms(300);
    evt_hub_stats st;
    drain(reader);
    evt_hub_get_stats(h, &st);
    CHECK_MSG(st.subs_now == MAX_SUBS && st.subs_refused == N_VIEWERS + 1 - MAX_SUBS,
              "%d viewers asked, at most %d at once: %llu serve, %llu refused", N_VIEWERS + 1, MAX_SUBS,
              (unsigned long long)st.subs_now, (unsigned long long)st.subs_refused);

    long rss0 = rss_kb();
    got = 0;
    stream(em, EVENTS / 4, EVENTS, reader, &got);
    for (int k = 0; k < 150; k++) {   /* 1.5 s: past sub_stall_s of dropping */
        sleep_ms(10);
        got += drain(reader);
    }
    long rss1 = rss_kb();
    evt_hub_get_stats(h, &st);
    CHECK_MSG(st.sub_dropped > 0, "the stalled viewers' queues filled: %llu events dropped for them",
              (unsigned long long)st.sub_dropped);
    CHECK_MSG(rss1 - rss0 < (long)(TOTAL_BYTES / 1024) + 8192,
              "RSS grew by %ld kB while %d events streamed to %d stalled viewers (their queues: %u kB in all)",
              rss1 - rss0, EVENTS, MAX_SUBS - 1, TOTAL_BYTES / 1024);
    CHECK_MSG(st.subs_cut >= MAX_SUBS - 1, "stalled for over %d s: %llu viewers disconnected", opt.sub_stall_s,
              (unsigned long long)st.subs_cut);
    int closed = 0;
    for (int i = 0; i < N_VIEWERS; i++) closed += fds[i] >= 0 && closed_by_peer(fds[i]);
    CHECK_MSG(closed == N_VIEWERS, "every stalled viewer's connection is closed (refused or cut): %d of %d", closed,
              N_VIEWERS);
    CHECK_MSG(got > (size_t)(EVENTS - EVENTS / 4) / 2, "the viewer that reads got its events meanwhile (%zu of %d)",
              got, EVENTS - EVENTS / 4);

    /* connections over max_conns: closed at accept, counted */
    int extra[40], n_extra = 0;
    for (int i = 0; i < 40; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) extra[n_extra++] = fd;
        else close(fd);
    }
    sleep_ms(300);
    evt_hub_get_stats(h, &st);
    /* open now: the emitter and the reader (the hub closed every stalled viewer) */
    CHECK_MSG(st.conns_refused == (uint64_t)(n_extra - (opt.max_conns - 2)),
              "%d connections more with 2 open and a cap of %d: %llu refused at accept", n_extra, opt.max_conns,
              (unsigned long long)st.conns_refused);
    for (int i = 0; i < n_extra; i++) close(extra[i]);
    for (int i = 0; i < N_VIEWERS; i++)
        if (fds[i] >= 0) close(fds[i]);
    evt_sub_close(reader);
    evt_emitter_free(em);
    evt_hub_stop(h);
    CHECK(evt_hub_join(h, err) == 0);
    evt_hub_free(h);
    return CHECK_DONE();
}
