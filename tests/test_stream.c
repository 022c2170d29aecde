/* test_stream.c — the live stream, in one process: a hub on an ephemeral port in a
 * thread, emitters (one with a clock skewed by +250 ms) producing from threads, and
 * subscribers: one from the start, one attaching mid-run (state first, then live), one
 * that never reads. Also bad frames, an emitter with no hub, reconnection with the
 * drop report, and hub restarts (a hub stopped by SIGTERM, one SIGKILLed, a third that
 * gets the rest): every event accounted for, definitions re-sent, bad RESUME / ACK
 * frames refused. Takes a few seconds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/hub.h"
#include "hub/stream.h"
#include "events/trace.h"
#include "hub/wire.h"
#include "net/frame.h"
#include "tests/check.h"

#define NVARS 4
#define BURSTS 100
#define BURST 200

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static double ms_since(uint64_t t) { return (double)(dp_now_ns() - t) / 1e6; }

/* ---- a subscriber drained by its own thread ----------------------------------- */
typedef struct reader {
    evt_sub *s;
    pthread_t th;
    atomic_int stop;
    evt_record *recs;
    size_t n, cap;
    int err;
    uint64_t unresolved;     /* records whose string ids were unknown on arrival */
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    char err[DP_ERRLEN];
    for (;;) {
        evt_record e;
        int rc = evt_sub_read(r->s, &e, 20, err);
        if (rc < 0) {
            r->err = rc;
            break;
        }
        if (rc == 0) {
            if (atomic_load(&r->stop)) break;
            continue;
        }
        if ((e.var && !*evt_sub_string(r->s, e.var)) || (e.str && !*evt_sub_string(r->s, e.str)) ||
            (e.device && !*evt_sub_string(r->s, e.device)))
            r->unresolved++;
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 4096;
            r->recs = xrealloc(r->recs, r->cap * sizeof *r->recs);
        }
        r->recs[r->n++] = e;
    }
    return NULL;
}

static reader *reader_start(const char *addr)
{
    char err[DP_ERRLEN];
    reader *r = xcalloc(1, sizeof *r);
    r->s = evt_sub_connect(addr, 2000, err);
    if (!r->s) {
        fprintf(stderr, "subscribe: %s\n", err);
        free(r);
        return NULL;
    }
    pthread_create(&r->th, NULL, reader_main, r);
    return r;
}

static void reader_stop(reader *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
}

static void reader_free(reader *r)
{
    evt_sub_close(r->s);
    free(r->recs);
    free(r);
}

/* ---- producers ---------------------------------------------------------------- */
typedef struct producer {
    evt_emitter *em;
    int job, task;
    pthread_t th;
} producer;

static void *producer_main(void *arg)
{
    producer *p = arg;
    char name[96];
    const char *jn = p->job == EVT_JOB_PS ? "ps" : "worker";
    evt_record e;
    evt_init(&e, EVT_TASK_START, p->job, p->task);
    snprintf(name, sizeof name, "host-%s%d", jn, p->task);
    e.str = evt_emitter_intern(p->em, name);
    e.bytes = getpid();
    evt_emit(p->em, &e);
    evt_init(&e, EVT_DEVICE, p->job, p->task);
    snprintf(name, sizeof name, "/job:%s/replica:0/task:%d/device:CPU:0", jn, p->task);
    e.device = evt_emitter_intern(p->em, name);
    evt_emit(p->em, &e);
    uint32_t vars[NVARS];
    for (int v = 0; v < NVARS; v++) {
        snprintf(name, sizeof name, "%s%d/var%d", jn, p->task, v);
        vars[v] = evt_emitter_intern(p->em, name);
        evt_init(&e, EVT_VAR_DEFINE, p->job, p->task);
        e.var = vars[v];
        e.bytes = 4096;
        evt_emit(p->em, &e);
    }
    for (int b = 0; b < BURSTS; b++) {
        for (int i = 0; i < BURST; i++) {
            if (p->job == EVT_JOB_PS && i == 0) {
                evt_init(&e, EVT_GLOBAL_STEP, p->job, p->task);
                e.step = b;
            } else {
                evt_init(&e, (i & 1) ? EVT_PUSH_END : EVT_PUSH_BEGIN, p->job, p->task);
                e.var = vars[i % NVARS];
                e.peer = 0;
                e.step = b;
                e.bytes = 4096;
            }
            evt_emit(p->em, &e);
        }
        sleep_ms(10);
    }
    return NULL;
}

/* ---- raw connections sending bad frames --------------------------------------- */
static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* Sends bytes, then returns 1 when the hub closes the connection within 2 s. */
static int hub_drops(int port, const uint8_t *bytes, size_t n)
{
    int fd = raw_connect(port);
    if (fd < 0) return 0;
    if (send(fd, bytes, n, MSG_NOSIGNAL) != (ssize_t)n) {
        close(fd);
        return 0;
    }
    char buf[512];
    ssize_t r;
    while ((r = recv(fd, buf, sizeof buf, 0)) > 0) {}
    close(fd);
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* A frame header as bytes (net/frame.h's layout written out: magic, version 1, the
 * stream protocol, type, length, id / arg0 / arg1 zero). */
#define HDR 32
#define MAGIC 0x464e5044u
static void header(uint8_t *p, uint32_t magic, uint16_t type, uint32_t len)
{
    memset(p, 0, HDR);
    dp_put_u32(p, magic);
    p[4] = 1;
    p[5] = NET_PROTO_STREAM;
    dp_put_u16(p + 6, type);
    dp_put_u32(p + 8, len);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- the main scenario ---------------------------------------------------------- */
static void test_hub(const char *trace_path)
{
    char err[DP_ERRLEN];
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = "127.0.0.1:0";
    opt.trace_path = trace_path;
    opt.reorder_ms = 100;
    opt.sub_queue_bytes = 64 << 10;
    opt.sub_sndbuf = 16 << 10;
    evt_hub *hub = evt_hub_new(&opt, err);
    CHECK_MSG(hub != NULL, "%s", err);
    if (!hub) return;
    const char *addr = evt_hub_address(hub);
    CHECK(evt_hub_port(hub) > 0);
    CHECK(evt_hub_start_thread(hub, err) == 0);

    reader *a = reader_start(addr);
    CHECK(a != NULL);
    if (!a) return;

    producer prod[3] = { { NULL, EVT_JOB_PS, 0, 0 }, { NULL, EVT_JOB_WORKER, 0, 0 },
                         { NULL, EVT_JOB_WORKER, 1, 0 } };
    for (int i = 0; i < 3; i++) {
        prod[i].em = evt_emitter_new(addr, prod[i].job, prod[i].task, 65536, err);
        CHECK_MSG(prod[i].em != NULL, "%s", err);
    }
    evt_emitter_set_skew(prod[2].em, 250000000);   /* worker 1's clock runs 250 ms ahead */
    for (int i = 0; i < 3; i++) CHECK(evt_emitter_wait_connected(prod[i].em, 3000));
    int64_t off = 0, rtt = 0;
    /* The estimate's error is at most half the round trip of the probe it used (NTP's
     * bound): 1 ms on a quiet machine, more when a sanitizer or load slows the loops —
     * the bound, not a fixed slack, is what is checked. */
    /* The skew is set after the emitter started: had the hub synced it already, the
     * emitter syncs again; wait (up to 3 s) for the estimate in force to be the new one. */
    for (int tries = 0; tries < 300; tries++) {
        if (evt_hub_task_offset(hub, EVT_JOB_WORKER, 1, &off, &rtt) == 0 && fabs((double)off - 250e6) <= 50e6) break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    CHECK(evt_hub_task_offset(hub, EVT_JOB_WORKER, 1, &off, &rtt) == 0);
    CHECK_MSG(fabs((double)off - 250e6) <= fmax(1e6, (double)rtt / 2),
              "worker 1's offset %lld ns is 250 ms within max(1 ms, rtt/2 = %lld ns)", (long long)off,
              (long long)(rtt / 2));
    CHECK(evt_hub_task_offset(hub, EVT_JOB_WORKER, 0, &off, &rtt) == 0);
    CHECK_MSG(fabs((double)off) <= fmax(1e6, (double)rtt / 2),
              "worker 0's offset %lld ns is 0 within max(1 ms, rtt/2 = %lld ns)", (long long)off, (long long)(rtt / 2));
    CHECK(evt_hub_task_offset(hub, EVT_JOB_WORKER, 7, &off, &rtt) == DP_ENOTFOUND);

    for (int i = 0; i < 3; i++) pthread_create(&prod[i].th, NULL, producer_main, &prod[i]);

    /* Markers emitted at the same real moment on both workers must line up (to within
     * the time the two calls took, should this thread be preempted between them). */
    int64_t spread[5];
    for (int k = 0; k < 5; k++) {
        evt_record e;
        uint64_t t0 = dp_now_ns();
        for (int w = 1; w <= 2; w++) {
            evt_init(&e, EVT_LOG, EVT_JOB_WORKER, w - 1);
            e.id = 1000 + (uint64_t)k;
            evt_emit(prod[w].em, &e);
        }
        spread[k] = (int64_t)(dp_now_ns() - t0);
        sleep_ms(20);
    }

    /* Bad frames, mid-run: each drops only its own connection. */
    uint8_t bad[128];
    header(bad, 0x12345678, EVT_F_HELLO_TASK, 12);
    CHECK(hub_drops(evt_hub_port(hub), bad, HDR + 12));
    header(bad, MAGIC, EVT_F_EVENTS, 64u << 20);
    CHECK(hub_drops(evt_hub_port(hub), bad, HDR));
    header(bad, MAGIC, 99, 0);
    CHECK(hub_drops(evt_hub_port(hub), bad, HDR));
    header(bad, MAGIC, EVT_F_HELLO_SUB, 4);
    memset(bad + HDR, 0, 4);
    header(bad + HDR + 4, MAGIC, EVT_F_EVENTS, 5);   /* subscribers may not send events */
    memset(bad + 2 * HDR + 4, 0xff, 5);
    CHECK(hub_drops(evt_hub_port(hub), bad, 2 * HDR + 9));

    /* A subscriber attaching mid-run, and one that never reads. */
    sleep_ms(200);
    reader *b = reader_start(addr);
    evt_sub *stalled = evt_sub_connect(addr, 2000, err);
    CHECK_MSG(stalled != NULL, "%s", err);
    if (stalled) {
        int small = 4096;
        setsockopt(evt_sub_fd(stalled), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }

    for (int i = 0; i < 3; i++) pthread_join(prod[i].th, NULL);
    sleep_ms(400);   /* reorder window + a flush period */
    evt_hub_stats st;
    evt_hub_get_stats(hub, &st);
    reader_stop(a);
    if (b) reader_stop(b);

    /* Subscriber A: everything, in time order, strings resolved. */
    uint64_t sent = 0;
    for (int i = 0; i < 3; i++) {
        sent += evt_emitter_sent(prod[i].em);
        CHECK(evt_emitter_dropped(prod[i].em) == 0);
    }
    CHECK(sent == 3 * (2 + NVARS + BURSTS * BURST) + 10);
    size_t got = 0, disorder = 0, syncs = 0, markers = 0, bad_names = 0, bad_sync = 0;
    int64_t mark[5][2] = { { 0 } };
    for (size_t i = 0; i < a->n; i++) {
        evt_record *e = &a->recs[i];
        if (i && e->t < a->recs[i - 1].t) disorder++;
        if (e->kind == EVT_CLOCK_SYNC) {
            syncs++;
            /* value = the offset, value2 = the round trip it was estimated from: its
             * error is at most half of that (1 ms on a quiet machine). Worker 1's skew
             * is set just after its emitter starts: when the hub had synced it before,
             * the emitter syncs again (a reconnect), so its last estimate is the one
             * that must hold the skew. */
            if (e->job == EVT_JOB_WORKER && e->task == 1)
                bad_sync = fabs(e->value - 250e6) > fmax(1e6, e->value2 / 2);
            continue;
        }
        /* that reconnect's drop report (0 dropped) is the emitter's, not a producer's */
        if (e->kind == EVT_EVENTS_DROPPED) continue;
        got++;
        if (e->kind == EVT_LOG && e->id >= 1000 && e->id < 1005) {
            mark[e->id - 1000][e->task] = e->t;
            markers++;
        }
        if (e->kind == EVT_PUSH_END) {
            char want[64];
            snprintf(want, sizeof want, "%s%d/var", e->job == EVT_JOB_PS ? "ps" : "worker", e->task);
            bad_names += strncmp(evt_sub_string(a->s, e->var), want, strlen(want)) != 0;
        }
    }
    CHECK_MSG(bad_names == 0, "%zu records with the wrong variable name", bad_names);
    CHECK_MSG(bad_sync == 0, "%zu clock_sync events off the injected skew", bad_sync);
    CHECK_MSG(got == sent, "subscriber A got %zu of %llu", got, (unsigned long long)sent);
    CHECK(syncs >= 3);
    CHECK_MSG(disorder == 0, "%zu out of order", disorder);
    CHECK(a->unresolved == 0);
    CHECK(a->err == 0);
    CHECK(evt_sub_dropped(a->s) == 0);
    CHECK(evt_sub_synced(a->s));
    CHECK(markers == 10);
    for (int k = 0; k < 5; k++) CHECK_NEAR(mark[k][1] - mark[k][0], 0, 1e6 + spread[k]);

    /* Subscriber B: state first (tasks, devices, variables, the global step), then live. */
    if (b) {
        uint64_t ns = evt_sub_state_count(b->s);
        size_t starts = 0, devs = 0, defs = 0, gsteps = 0, live = 0, live_disorder = 0;
        size_t bad_devs = 0;
        CHECK(ns > 0 && ns <= b->n);
        for (size_t i = 0; i < b->n; i++) {
            evt_record *e = &b->recs[i];
            if (i < ns) {
                starts += e->kind == EVT_TASK_START;
                devs += e->kind == EVT_DEVICE;
                defs += e->kind == EVT_VAR_DEFINE;
                gsteps += e->kind == EVT_GLOBAL_STEP;
                if (e->kind == EVT_DEVICE)
                    bad_devs += strncmp(evt_sub_string(b->s, e->device), "/job:", 5) != 0;
            } else {
                live++;
                if (i > ns && e->t < b->recs[i - 1].t) live_disorder++;
            }
        }
        CHECK(bad_devs == 0);
        CHECK(starts == 3);
        CHECK(devs == 3);
        CHECK(defs == 3 * NVARS);
        CHECK(gsteps == 1);
        CHECK_MSG(live > 1000, "live %zu", live);
        CHECK(live_disorder == 0);
        CHECK(b->unresolved == 0);
        CHECK(evt_sub_dropped(b->s) == 0);
    }

    fprintf(stderr, "hub: in %llu, out %llu, late %llu, dropped for subscribers %llu; "
            "A got %zu, B got %zu (%llu state)\n", (unsigned long long)st.events_in,
            (unsigned long long)st.events_out, (unsigned long long)st.events_late,
            (unsigned long long)st.sub_dropped, a->n, b ? b->n : 0,
            b ? (unsigned long long)evt_sub_state_count(b->s) : 0ull);
    /* The stalled subscriber cost drops for itself only. */
    CHECK_MSG(st.sub_dropped > 0, "sub_dropped %llu", (unsigned long long)st.sub_dropped);
    CHECK(st.bad_conns == 4);
    CHECK(st.events_late == 0);
    CHECK(st.tasks_now == 3);
    CHECK(st.subs_now == 3);

    uint64_t t = dp_now_ns();
    for (int i = 0; i < 3; i++) evt_emitter_free(prod[i].em);
    CHECK(ms_since(t) < 1500);
    CHECK(evt_hub_join(hub, err) == 0);
    evt_hub_get_stats(hub, &st);
    evt_sub_close(stalled);
    if (b) reader_free(b);
    reader_free(a);
    evt_hub_free(hub);

    /* The recording holds the merged stream with its strings. */
    trace_reader *tr = trace_reader_open(trace_path, err);
    CHECK_MSG(tr != NULL, "%s", err);
    if (tr) {
        CHECK_MSG(trace_reader_count(tr) == st.events_out, "%llu vs %llu",
                  (unsigned long long)trace_reader_count(tr), (unsigned long long)st.events_out);
        CHECK(trace_reader_damage(tr) == NULL);
        evt_record e;
        size_t vars = 0, n = 0;
        while (trace_reader_next(tr, &e) == 1) {
            n++;
            if (e.kind == EVT_VAR_DEFINE && strstr(trace_reader_string(tr, e.var), "/var")) vars++;
        }
        CHECK(n == st.events_out);
        CHECK(vars == 3 * NVARS);
        trace_reader_close(tr);
    }
}

/* ---- no hub, then a hub: never blocks, drops counted and reported ------------- */
static void test_no_hub(void)
{
    char err[DP_ERRLEN], addr[64];
    int port = free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    evt_emitter *em = evt_emitter_new(addr, EVT_JOB_WORKER, 3, 1000, err);
    CHECK_MSG(em != NULL, "%s", err);
    if (!em) return;
    CHECK(evt_emitter_new("nonsense", 1, 0, 10, err) == NULL);
    CHECK(evt_emitter_new("127.0.0.1:99999", 1, 0, 10, err) == NULL);
    uint64_t t = dp_now_ns();
    int ok = 0;
    for (int i = 0; i < 5000; i++) {
        evt_record e;
        evt_init(&e, EVT_LOG, EVT_JOB_WORKER, 3);
        e.id = (uint64_t)i;
        ok += evt_emit(em, &e);
    }
    CHECK_MSG(ms_since(t) < 200, "%.1f ms", ms_since(t));
    CHECK(ok == 1000);
    CHECK(evt_emitter_dropped(em) == 4000);
    CHECK(evt_emitter_sent(em) == 1000);
    CHECK(!evt_emitter_connected(em));
    sleep_ms(150);   /* a few failed connection attempts */

    /* The hub appears: the emitter reconnects, delivers what it held and reports. */
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = addr;
    opt.reorder_ms = 20;
    evt_hub *hub = evt_hub_new(&opt, err);
    CHECK_MSG(hub != NULL, "%s", err);
    if (!hub) {
        evt_emitter_free(em);
        return;
    }
    evt_sub *s = evt_sub_connect(addr, 2000, err);
    CHECK(s != NULL);
    CHECK(evt_hub_start_thread(hub, err) == 0);
    CHECK(evt_emitter_wait_connected(em, 3000));
    size_t logs = 0;
    int64_t reported = -1;
    t = dp_now_ns();
    while (s && ms_since(t) < 2000 && (logs < 1000 || reported < 0)) {
        evt_record e;
        int rc = evt_sub_read(s, &e, 50, err);
        if (rc < 0) break;
        if (rc == 0) continue;
        if (e.kind == EVT_LOG) logs++;
        if (e.kind == EVT_EVENTS_DROPPED) reported = e.bytes;
    }
    CHECK(logs == 1000);
    CHECK(reported == 4000);
    evt_hub_stats st;
    sleep_ms(30);
    evt_hub_get_stats(hub, &st);
    CHECK(st.task_dropped == 4000);

    /* The hub goes away: emitting still never blocks, and free is prompt. */
    CHECK(evt_hub_join(hub, err) == 0);
    evt_hub_free(hub);
    evt_sub_close(s);
    t = dp_now_ns();
    for (int i = 0; i < 2000; i++) {
        evt_record e;
        evt_init(&e, EVT_LOG, EVT_JOB_WORKER, 3);
        evt_emit(em, &e);
    }
    CHECK(ms_since(t) < 200);
    sleep_ms(50);
    t = dp_now_ns();
    evt_emitter_free(em);
    CHECK_MSG(ms_since(t) < 1500, "free took %.0f ms", ms_since(t));
    evt_emitter_free(NULL);
    CHECK(evt_emit(NULL, NULL) == 0);
}

/* ---- hub restarts: nothing lost silently, definitions re-sent --------------------- */

/* A hub in a child process (so it can be SIGKILLed), recording to path. */
static pid_t hub_child(const char *addr, const char *path)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    char err[DP_ERRLEN];
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = addr;
    opt.trace_path = path;
    opt.reorder_ms = 20;
    opt.handle_signals = 1;
    opt.quiet = 1;
    evt_hub *h = evt_hub_new(&opt, err);
    if (!h) _exit(2);
    int rc = evt_hub_run(h, err);
    evt_hub_free(h);
    _exit(rc ? 3 : 0);
}

static int wait_acked(evt_emitter *em, int ms)
{
    uint64_t t = dp_now_ns();
    while (evt_emitter_unacked(em) && ms_since(t) < ms) sleep_ms(5);
    return evt_emitter_unacked(em) == 0;
}

static void emit_logs(evt_emitter *em, int n)
{
    for (int i = 0; i < n; i++) {
        evt_record e;
        evt_init(&e, EVT_LOG, EVT_JOB_WORKER, 5);
        e.id = (uint64_t)i + 1;
        evt_emit(em, &e);
    }
}

/* What a trace holds of worker 5: its records (not drop reports or the hub's clock
 * syncs), the first resume
 * report (step, id) and the hub's delivery note (step), -1 when absent. */
typedef struct trace_tally {
    int64_t records, logs, defs, resume_at, copies, hub_recorded, var_named;
    int damaged;
} trace_tally;

static trace_tally tally(const char *path)
{
    trace_tally t = { 0, 0, 0, -1, -1, -1, 0, 0 };
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return t;
    t.damaged = trace_reader_damage(r) != NULL;
    evt_record e;
    while (trace_reader_next(r, &e) == 1) {
        /* clock_sync records are the hub's, one per connection */
        if (e.job != EVT_JOB_WORKER || e.task != 5 || e.kind == EVT_CLOCK_SYNC) continue;
        if (e.kind == EVT_EVENTS_DROPPED) {
            if (e.value == 1 && t.resume_at < 0) {
                t.resume_at = e.step;
                t.copies = (int64_t)e.id;
            }
            if (e.value == 2 && e.peer_job == EVT_JOB_HUB) t.hub_recorded = e.step;
            continue;
        }
        t.records++;
        if (e.kind == EVT_LOG) t.logs++;
        if (e.kind == EVT_TASK_START || e.kind == EVT_DEVICE || e.kind == EVT_VAR_DEFINE) t.defs++;
        if (e.kind == EVT_VAR_DEFINE && !strcmp(trace_reader_string(r, e.var), "w5/var1")) t.var_named++;
    }
    trace_reader_close(r);
    return t;
}

static void test_restart(const char *dir)
{
    char err[DP_ERRLEN], addr[64], pa[512], pb[512], pc[512];
    int port = free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    snprintf(pa, sizeof pa, "%s.a", dir);
    snprintf(pb, sizeof pb, "%s.b", dir);
    snprintf(pc, sizeof pc, "%s.c", dir);

    /* Hub A: definitions and 100 events, all acknowledged; then SIGTERM. */
    pid_t a = hub_child(addr, pa);
    sleep_ms(100);
    evt_emitter *em = evt_emitter_new(addr, EVT_JOB_WORKER, 5, 10000, err);
    CHECK_MSG(em != NULL, "%s", err);
    if (!em) return;
    CHECK(evt_emitter_wait_connected(em, 3000));
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, 5);
    e.str = evt_emitter_intern(em, "host-w5");
    evt_emit(em, &e);
    evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, 5);
    e.device = evt_emitter_intern(em, "/job:worker/replica:0/task:5/device:CPU:0");
    evt_emit(em, &e);
    for (int v = 0; v < 2; v++) {
        char name[32];
        snprintf(name, sizeof name, "w5/var%d", v);
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 5);
        e.var = evt_emitter_intern(em, name);
        e.bytes = 64;
        evt_emit(em, &e);
    }
    emit_logs(em, 100);
    CHECK_MSG(wait_acked(em, 3000), "%llu unacknowledged", (unsigned long long)evt_emitter_unacked(em));
    kill(a, SIGTERM);
    int status = -1;
    waitpid(a, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hub A status %d", status);

    /* Hub B: 50 acknowledged, 30 more, then SIGKILL at once. */
    pid_t b = hub_child(addr, pb);
    CHECK(evt_emitter_wait_connected(em, 3000));
    emit_logs(em, 50);
    CHECK(wait_acked(em, 3000));
    emit_logs(em, 30);
    sleep_ms(30);
    kill(b, SIGKILL);
    waitpid(b, &status, 0);
    emit_logs(em, 5);   /* while no hub is up */

    /* Hub C (in this process): the rest. */
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = addr;
    opt.trace_path = pc;
    opt.reorder_ms = 20;
    opt.quiet = 1;
    evt_hub *hc = evt_hub_new(&opt, err);
    CHECK_MSG(hc != NULL, "%s", err);
    if (!hc) {
        evt_emitter_free(em);
        return;
    }
    CHECK(evt_hub_start_thread(hc, err) == 0);
    CHECK(evt_emitter_wait_connected(em, 3000));
    emit_logs(em, 15);
    CHECK(wait_acked(em, 3000));
    uint64_t emitted = evt_emitter_sent(em) + evt_emitter_dropped(em);
    CHECK(evt_emitter_dropped(em) == 0);
    evt_emitter_free(em);
    CHECK(evt_hub_join(hc, err) == 0);
    evt_hub_free(hc);

    trace_tally ta = tally(pa), tb = tally(pb), tc = tally(pc);
    fprintf(stderr, "restart: A %lld records (hub says %lld); B %lld (resume %lld, copies %lld, "
            "damaged %d); C %lld (resume %lld, copies %lld); emitted %llu\n",
            (long long)ta.records, (long long)ta.hub_recorded, (long long)tb.records,
            (long long)tb.resume_at, (long long)tb.copies, tb.damaged, (long long)tc.records,
            (long long)tc.resume_at, (long long)tc.copies, (unsigned long long)emitted);
    CHECK(emitted == 4 + 100 + 50 + 30 + 5 + 15);
    /* A stopped gracefully: it says what it recorded, and it recorded just that. */
    CHECK(ta.records == 104 && ta.hub_recorded == 104);
    /* B resumed where A stopped, with the 4 definitions re-sent first. */
    CHECK(tb.resume_at == 104 && tb.copies == 4 && tb.defs == 4 && tb.var_named == 1);
    /* B was killed: its trace still opens (no index), and holds at least what it acknowledged. */
    CHECK(tb.records > 0 && tb.resume_at >= 0);
    CHECK(tb.records - tb.copies >= tc.resume_at - tb.resume_at);
    /* C alone names the task and its variables, and accounts for every event: the ones
     * earlier hubs acknowledged (resume point) plus the ones C holds. */
    CHECK(tc.resume_at >= 104 + 50 && tc.copies == 4 && tc.defs == 4 && tc.var_named == 1);
    CHECK_MSG(tc.resume_at + (tc.records - tc.copies) == (int64_t)emitted, "%lld + %lld != %llu",
              (long long)tc.resume_at, (long long)(tc.records - tc.copies), (unsigned long long)emitted);
    remove(pa);
    remove(pb);
    remove(pc);
}

/* ---- bad delivery frames: RESUME at the hub, ACK at the emitter ------------------- */
static void test_bad_delivery(void)
{
    char err[DP_ERRLEN], addr[64];
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = "127.0.0.1:0";
    opt.quiet = 1;
    evt_hub *h = evt_hub_new(&opt, err);
    CHECK_MSG(h != NULL, "%s", err);
    if (!h) return;
    CHECK(evt_hub_start_thread(h, err) == 0);
    int port = evt_hub_port(h);
    uint8_t b[128];
    header(b, MAGIC, EVT_F_HELLO_TASK, 12);
    dp_put_u32(b + HDR, EVT_JOB_WORKER);
    dp_put_u32(b + HDR + 4, 0);
    dp_put_u32(b + HDR + 8, 1);
    header(b + HDR + 12, MAGIC, EVT_F_RESUME, 20);
    memset(b + 2 * HDR + 12, 0, 20);
    CHECK(hub_drops(port, b, 2 * HDR + 32));            /* resume before clock sync */
    header(b + HDR + 12, MAGIC, EVT_F_RESUME, 3);
    CHECK(hub_drops(port, b, 2 * HDR + 15));            /* resume of the wrong length */
    CHECK(evt_hub_join(h, err) == 0);
    evt_hub_free(h);

    /* A fake hub that syncs the emitter, then acknowledges more than it was sent. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { 0 };
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    bind(lfd, (struct sockaddr *)&sa, sizeof sa);
    listen(lfd, 4);
    getsockname(lfd, (struct sockaddr *)&sa, &len);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
    evt_emitter *em = evt_emitter_new(addr, EVT_JOB_WORKER, 1, 100, err);
    emit_logs(em, 3);
    int fd = accept(lfd, NULL, NULL);
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    dp_buf in = { 0 };
    int state = 0, closed = 0;
    uint64_t t = dp_now_ns();
    while (ms_since(t) < 3000 && !closed) {
        uint8_t *dst = dp_buf_reserve(&in, 4096);
        ssize_t n = recv(fd, dst, 4096, 0);
        if (n <= 0) {
            closed = n == 0 || errno == ECONNRESET;
            break;
        }
        in.len += (size_t)n;
        net_frame fh;
        const uint8_t *p;
        while (net_frame_next(&in, &evt_wire_proto, &fh, &p, err) == 1) {
            uint8_t out[HDR + 16];
            if (fh.type == EVT_F_HELLO_TASK && state == 0) {
                header(out, MAGIC, EVT_F_PROBE, 16);
                dp_put_u64(out + HDR, 1);
                dp_put_u64(out + HDR + 8, dp_now_ns());
                send(fd, out, HDR + 16, MSG_NOSIGNAL);
                state = 1;
            } else if (fh.type == EVT_F_PROBE_REPLY && state == 1) {
                header(out, MAGIC, EVT_F_READY, 16);
                memset(out + HDR, 0, 16);
                send(fd, out, HDR + 16, MSG_NOSIGNAL);
                uint8_t ack[HDR + 8];
                header(ack, MAGIC, EVT_F_ACK, 8);
                dp_put_u64(ack + HDR, 1000000);   /* only 3 were sent */
                send(fd, ack, HDR + 8, MSG_NOSIGNAL);
                state = 2;
            }
            dp_buf_consume(&in, NET_HEADER + fh.length);
        }
    }
    CHECK_MSG(state == 2 && closed, "state %d closed %d", state, closed);
    CHECK(evt_emitter_unacked(em) == 3);   /* nothing forgotten on a bogus ack */
    dp_buf_release(&in);
    close(fd);
    close(lfd);
    evt_emitter_free(em);
}

/* ---- wire helpers ------------------------------------------------------------- */
static int count_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    DP_UNUSED(id);
    DP_UNUSED(s);
    *(size_t *)ctx += len;
    return 0;
}

static void test_wire(void)
{
    char err[DP_ERRLEN];
    dp_buf b = { 0 };
    uint8_t junk[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    evt_wire_put(&b, EVT_F_DROPPED, junk, 8);
    net_frame h;
    const uint8_t *p;
    CHECK(net_frame_next(&b, &evt_wire_proto, &h, &p, err) == 1);
    CHECK(h.type == EVT_F_DROPPED && h.length == 8 && !memcmp(p, junk, 8));
    b.len -= 1;
    CHECK(net_frame_next(&b, &evt_wire_proto, &h, &p, err) == 0);   /* incomplete: wait */
    dp_buf_release(&b);

    /* Events payload: bounded count, leftovers, unknown kinds. */
    evt_record recs[3], *out = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 3; i++) {
        evt_init(&recs[i], EVT_APPLY, EVT_JOB_PS, i);
        recs[i].t = 1000 * i + 5;
        recs[i].value = i * 0.5;
    }
    evt_wire_put_events(&b, recs, 3);
    CHECK(net_frame_next(&b, &evt_wire_proto, &h, &p, err) == 1);
    CHECK(evt_wire_get_events(p, h.length, &out, &n, &cap, err) == 3);
    CHECK(n == 3 && out[2].t == 2005 && out[2].task == 2 && out[1].value == 0.5);
    uint8_t big[8];
    dp_put_u32(big, 0xffffffffu);
    CHECK(evt_wire_get_events(big, 8, &out, &n, &cap, err) == DP_EPROTO);
    CHECK(evt_wire_get_events(p, h.length - 1, &out, &n, &cap, err) == DP_EPROTO);
    free(out);
    dp_buf_release(&b);

    uint8_t s[20];
    dp_put_u32(s, 1);
    dp_put_u32(s + 4, 100);   /* past the end */
    size_t total = 0;
    CHECK(evt_wire_each_string(s, 20, count_string, &total, err) == DP_EPROTO);
    dp_put_u32(s + 4, 3);
    memcpy(s + 8, "a\0b", 3);
    CHECK(evt_wire_each_string(s, 11, count_string, &total, err) == DP_EPROTO);
    memcpy(s + 8, "abc", 3);
    CHECK(evt_wire_each_string(s, 11, count_string, &total, err) == 0 && total == 3);
}

int main(void)
{
    dp_log_level = getenv("TEST_VERBOSE") ? DP_LOG_DEBUG : DP_LOG_ERROR;
    char dir[] = "/tmp/test_stream.XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/hub.dptrace", dir);
    test_wire();
    test_hub(path);
    test_no_hub();
    snprintf(path, sizeof path, "%s/restart.dptrace", dir);
    test_restart(path);
    test_bad_delivery();
    unlink(path);
    rmdir(dir);
    return CHECK_DONE();
}
