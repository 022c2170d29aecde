/* test_stream_hub.c — the live stream through one hub, in one process: the hub on an
 * ephemeral port in a thread, emitters (one with a clock skewed by +250 ms) producing from
 * threads, and subscribers: one from the start, one attaching mid-run (state first, then
 * live), one that never reads; bad frames mid-run drop only their own connection; the
 * recording holds the merged stream. Every event accounted for, in time order, strings
 * resolved, clocks aligned. The emitter without a hub, restarts and the delivery frames
 * are test_stream.c's. Takes a few seconds. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/hub.h"
#include "hub/stream.h"
#include "events/trace.h"
#include "hub/wire.h"
#include "tests/check.h"
#include "tests/stream_check.h"

#define NVARS 4
#define BURSTS 100
#define BURST 200

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
    /* a second hub on the same address is refused, naming it; one never started joins at once */
    evt_hub_options busy = opt;
    busy.listen = addr;
    busy.trace_path = NULL;
    evt_hub *second = evt_hub_new(&busy, err);
    CHECK_MSG(second == NULL && strstr(err, "cannot listen on") && strstr(err, addr),
              "a second hub on %s: %s", addr, second ? "opened" : err);
    evt_hub_free(second);
    busy.listen = "127.0.0.1:0";
    evt_hub *idle = evt_hub_new(&busy, err);
    CHECK_MSG(idle != NULL && evt_hub_join(idle, err) == 0, "a hub never started: %s", idle ? "joined" : err);
    evt_hub_free(idle);
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
    for (int i = 0; i < 3; i++) CHECK(evt_emitter_wait_connected(prod[i].em, 3000));
    int64_t off = 0, rtt = 0;
    /* The estimate's error is at most half the round trip of the probe it used (NTP's
     * bound): 1 ms on a quiet machine, more when a sanitizer or load slows the loops —
     * the bound, not a fixed slack, is what is checked. */
    CHECK(evt_hub_task_offset(hub, EVT_JOB_WORKER, 1, &off, &rtt) == 0);
    CHECK_MSG(fabs((double)off) <= fmax(1e6, (double)rtt / 2),
              "worker 1's offset before its skew %lld ns is 0 within max(1 ms, rtt/2 = %lld ns)", (long long)off,
              (long long)(rtt / 2));
    /* The skew is set once the hub has synced the emitter: the emitter syncs again (it
     * reconnects); wait (up to 3 s) for the estimate in force to be the new one. */
    evt_emitter_set_skew(prod[2].em, 250000000);   /* worker 1's clock runs 250 ms ahead */
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

typedef struct idle_run {
    evt_hub *hub;
    atomic_int done;
} idle_run;

static void *idle_run_main(void *arg)
{
    idle_run *r = arg;
    char err[DP_ERRLEN];
    evt_hub_run(r->hub, err);
    atomic_store(&r->done, 1);
    return NULL;
}

/* --exit-when-idle: a hub whose task came, sent and left stops by itself once it has
 * been idle that long; one that never had a task keeps running. */
static void test_exit_when_idle(void)
{
    char err[DP_ERRLEN];
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = "127.0.0.1:0";
    opt.exit_when_idle_ms = 200;
    evt_hub *hub = evt_hub_new(&opt, err);
    CHECK_MSG(hub != NULL, "%s", err);
    if (!hub) return;
    idle_run r = {hub, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, idle_run_main, &r) == 0);
    struct timespec tick = {0, 10000000};
    for (int i = 0; i < 50; i++) nanosleep(&tick, NULL);   /* 0.5 s with no task yet */
    CHECK_MSG(!atomic_load(&r.done), "a hub that never had a task does not stop when idle");
    evt_sub *viewer = evt_sub_connect(evt_hub_address(hub), 2000, err);
    CHECK_MSG(viewer != NULL, "%s", err);
    evt_emitter *em = evt_emitter_new(evt_hub_address(hub), EVT_JOB_WORKER, 0, 1024, err);
    CHECK_MSG(em != NULL, "%s", err);
    CHECK(em && evt_emitter_wait_connected(em, 3000));
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, 0);
    evt_emit(em, &e);
    evt_emitter_free(em);
    int waited = 0;
    while (!atomic_load(&r.done) && waited < 1000) {   /* up to 10 s */
        nanosleep(&tick, NULL);
        waited++;
    }
    CHECK_MSG(atomic_load(&r.done), "the hub stopped by itself after its task left (%d ms)", waited * 10);
    if (!atomic_load(&r.done)) evt_hub_stop(hub);
    pthread_join(th, NULL);
    /* a viewer of a hub that ended reads what it sent, then the end: not an error */
    int rc = 0, got = 0;
    evt_record v;
    while (viewer && (rc = evt_sub_read(viewer, &v, 2000, err)) == 1) got++;
    CHECK_MSG(!viewer || (rc == DP_ECLOSED && got >= 1), "the viewer read %d records, then %d (%s; want the end, %d)",
              got, rc, rc == DP_ECLOSED ? "the end" : err, DP_ECLOSED);
    evt_sub_close(viewer);
    evt_hub_free(hub);
}

int main(void)
{
    dp_log_level = getenv("TEST_VERBOSE") ? DP_LOG_DEBUG : DP_LOG_ERROR;
    char dir[] = "/tmp/test_stream_hub.XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/hub.dptrace", dir);
    test_hub(path);
    test_exit_when_idle();
    unlink(path);
    rmdir(dir);
    return CHECK_DONE();
}
