/* emitter.c — the per-task event emitter (hub/stream.h). Producers (any thread) copy records into a
 * bounded ring under a mutex and return at once: when the ring is full the record is
 * dropped and counted, nothing ever waits on I/O. An instrumentation thread runs its own
 * libev loop: it connects to the hub (non-blocking, retrying with backoff; with a secret,
 * the handshake of net/auth.h first, the hub's proof checked before anything it says is
 * believed), answers the
 * hub's clock probes immediately, and after READY drains the ring every ~20 ms (or
 * when a batch fills: evt_emit wakes it with ev_async_send) into STRINGS + EVENTS
 * frames. String definitions go out before first use on each connection (all are resent
 * after a reconnect).
 * Delivery: the ring holds every queued record until the hub acknowledges it (ACK, a
 * cumulative count of this task's records, 1-based in queue order = evt_emit order), so
 * a hub that dies with records unread costs nothing: they are re-sent to the next hub
 * after RESUME. The only loss is a full ring (counted, reported as EVT_EVENTS_DROPPED,
 * cumulative) and what is still unacknowledged when the emitter is freed (logged).
 * Definitions (cluster, task, device, variable, placement records) are also kept apart,
 * bounded, and after a reconnect the ones an earlier hub acknowledged are re-sent first,
 * re-stamped, so the new hub's trace is complete on its own.
 * Threading: ring, definitions, string table and counters under `mu`; everything else
 * belongs to the I/O thread. */
#include "hub/stream.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "common/dp.h"
#include "hub/wire.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/sock.h"

#define EM_BATCH 1024                /* records per drain step; also the wake threshold */
#define EM_FLUSH_S 0.020             /* batch period */
#define EM_OUT_LIMIT (512u << 10)    /* stop draining while this much is unsent */
#define EM_OUT_CAP (64u << 20)       /* the connection's hard bound (the final flush) */
#define EM_BACKOFF_MIN_S 0.05
#define EM_BACKOFF_MAX_S 1.0
#define EM_HANDSHAKE_S 5.0           /* READY must come within this */
#define EM_DROP_REPORT_NS 1000000000ll
#define EM_STOP_FLUSH_S 1.0
#define EM_DEFS_MAX 4096             /* definition records kept for re-sending */

enum em_state { EM_IDLE, EM_CONNECTING, EM_HANDSHAKE, EM_READY };

/* A kept definition and its sequence number (its place in evt_emit order). */
typedef struct em_def { evt_record e; uint64_t seq; } em_def;

struct evt_emitter {
    /* shared with producers, under mu */
    pthread_mutex_t mu;
    evt_record *ring;               /* [head, head + count): queued, not yet acknowledged */
    size_t cap, head, count;
    evt_strtab *strings;
    uint64_t queued, dropped;       /* the record at head has sequence number acked + 1 */
    uint64_t acked;                 /* records the hub acknowledged (== queued - count) */
    uint64_t incarnation;           /* this emitter, among the task's processes: a
                                     * restarted task numbers its records from 1 again */
    em_def *defs;
    size_t ndefs;
    uint64_t defs_lost;             /* definitions beyond EM_DEFS_MAX: not kept */
    _Atomic int64_t skew;
    atomic_int ready;
    atomic_int stop_requested;
    atomic_int resync;              /* skew changed: re-run the clock handshake */

    int job, task;
    auth_key key;                   /* the hub's secret (key.set == 0: no handshake) */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char addr_text[128];

    /* I/O thread only */
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    ev_timer flush_timer, retry_timer, handshake_timer, stop_timer;
    net_conn *conn;                 /* NULL when not connected */
    int state, stopping, warned;
    int refused_warned;             /* a refusal by the hub was logged (once) */
    double backoff;
    size_t nsent;                   /* ring records (from head) sent on this connection */
    uint64_t connections;           /* READYs so far */
    uint32_t defs_sent;
    uint64_t dropped_reported;
    int64_t last_drop_report;
    evt_record batch[EM_BATCH];
};

static int64_t em_clock(const evt_emitter *em)
{
    return (int64_t)dp_now_ns() + atomic_load(&em->skew);
}

/* ---- output ------------------------------------------------------------------ */

static void em_disconnect(evt_emitter *em, const char *why);

/* The kinds a trace needs to name and draw what follows: kept and re-sent after a
 * reconnect. */
static int em_is_definition(int kind)
{
    switch (kind) {
    case EVT_CLUSTER_START: case EVT_TASK_START: case EVT_DEVICE: case EVT_VAR_DEFINE:
    case EVT_VAR_PLACE: case EVT_OP_PLACE:
        return 1;
    default:
        return 0;
    }
}

static size_t em_ring_count(evt_emitter *em)
{
    pthread_mutex_lock(&em->mu);
    size_t n = em->count;
    pthread_mutex_unlock(&em->mu);
    return n;
}

/* While stopping: done once everything queued has been acknowledged. */
static void em_maybe_finish(evt_emitter *em)
{
    if (em->stopping && em->state == EM_READY && em->conn && !net_conn_pending(em->conn) &&
        !em_ring_count(em))
        ev_break(em->loop, EVBREAK_ALL);
}

static void em_try_write(evt_emitter *em)
{
    if (!em->conn) return;
    if (net_conn_flush(em->conn) == DP_EFULL) em_disconnect(em, "output over its bound (the hub does not read)");
}

static dp_buf *em_out(evt_emitter *em) { return net_conn_stage(em->conn); }

/* A drop report: never sequenced, never kept (the next one supersedes it). resume_at
 * >= 0 marks the report sent first after a reconnect (step, id, value: event.h). */
static void em_put_drop_report(evt_emitter *em, uint64_t dropped, int64_t resume_at,
                               uint32_t copies)
{
    evt_record r;
    evt_init(&r, EVT_EVENTS_DROPPED, em->job, em->task);
    r.t = em_clock(em);
    r.bytes = (int64_t)dropped;
    if (resume_at >= 0) {
        r.step = resume_at;
        r.id = copies;
        r.value = 1;
    }
    evt_wire_put_events(em_out(em), &r, 1);
    em->dropped_reported = dropped;
    em->last_drop_report = (int64_t)dp_now_ns();
}

/* Moves queued records into frames while connected and the hub keeps up; `all`
 * ignores the output limit (final flush). */
static void em_drain(evt_emitter *em, int all)
{
    if (em->state != EM_READY || !em->conn) return;
    for (;;) {
        if (!all && net_conn_pending(em->conn) >= EM_OUT_LIMIT) break;
        size_t n = 0;
        uint64_t dropped;
        pthread_mutex_lock(&em->mu);
        /* Records stay in the ring until acknowledged; nsent says how far this
         * connection has got. */
        while (n < EM_BATCH && em->nsent < em->count) {
            em->batch[n++] = em->ring[(em->head + em->nsent) % em->cap];
            em->nsent++;
        }
        /* Every id in the popped records was interned before it was queued, so
         * defining everything up to the current count covers them. */
        uint32_t nstr = evt_strtab_count(em->strings);
        if (nstr > em->defs_sent) {
            evt_wire_put_strings(em_out(em), em->strings, em->defs_sent + 1, nstr);
            em->defs_sent = nstr;
        }
        dropped = em->dropped;
        pthread_mutex_unlock(&em->mu);
        if (n) evt_wire_put_events(em_out(em), em->batch, n);
        int64_t now = (int64_t)dp_now_ns();
        if (dropped > em->dropped_reported &&
            (all || em->dropped_reported == 0 || now - em->last_drop_report >= EM_DROP_REPORT_NS))
            em_put_drop_report(em, dropped, -1, 0);
        if (n < EM_BATCH) break;
    }
    em_try_write(em);
    if (em->conn) em_maybe_finish(em);
}

/* ---- connection --------------------------------------------------------------- */

static void em_schedule_retry(evt_emitter *em)
{
    if (em->stopping) {
        ev_break(em->loop, EVBREAK_ALL);
        return;
    }
    ev_timer_set(&em->retry_timer, em->backoff, 0.);
    ev_timer_start(em->loop, &em->retry_timer);
    em->backoff = em->backoff * 2 > EM_BACKOFF_MAX_S ? EM_BACKOFF_MAX_S : em->backoff * 2;
}

/* The connection is gone (closed by us or lost): unacknowledged records stay in the
 * ring and the next connection sends them again. */
static void em_lost(evt_emitter *em, const char *why)
{
    if (em->state == EM_READY || !em->warned) {
        dp_log(em->state == EM_READY ? DP_LOG_WARN : DP_LOG_DEBUG, "emitter",
               "hub %s: %s; retrying", em->addr_text, why);
        em->warned = 1;
    }
    ev_timer_stop(em->loop, &em->handshake_timer);
    em->state = EM_IDLE;
    atomic_store(&em->ready, 0);
    em->nsent = 0;
    em_schedule_retry(em);
}

static void em_disconnect(evt_emitter *em, const char *why)
{
    net_conn *c = em->conn;
    if (!c) return;
    em->conn = NULL;   /* its on_close, now or after the current callback, is not ours */
    em_lost(em, why);
    net_conn_close(c, why);
}

/* Right after READY: RESUME (where this task's sequence stands and how many copies
 * follow), then, after a reconnect, a drop report and re-stamped copies of the
 * definitions an earlier hub acknowledged (the unacknowledged ones are still in the
 * ring and go out again in order with the rest). */
static void em_resume(evt_emitter *em)
{
    em->connections++;
    em->nsent = 0;
    em->defs_sent = 0;   /* new connection: every string definition again */
    pthread_mutex_lock(&em->mu);
    uint64_t acked = em->acked, dropped = em->dropped;
    size_t copies = 0;
    while (copies < em->ndefs && em->defs[copies].seq <= acked) copies++;
    uint8_t r[20];
    dp_put_u64(r, acked);
    dp_put_u32(r + 8, (uint32_t)copies);
    dp_put_u64(r + 12, em->incarnation);
    evt_wire_put(em_out(em), EVT_F_RESUME, r, sizeof r);
    uint32_t nstr = evt_strtab_count(em->strings);
    if (nstr) evt_wire_put_strings(em_out(em), em->strings, 1, nstr);
    em->defs_sent = nstr;
    if (em->connections > 1) {
        em_put_drop_report(em, dropped, (int64_t)acked, (uint32_t)copies);
        int64_t now = em_clock(em);
        for (size_t i = 0; i < copies; i += EM_BATCH) {
            size_t n = copies - i < EM_BATCH ? copies - i : EM_BATCH;
            for (size_t j = 0; j < n; j++) {
                em->batch[j] = em->defs[i + j].e;
                em->batch[j].t = now;   /* in the new trace's time, not before its start */
            }
            evt_wire_put_events(em_out(em), em->batch, n);
        }
    }
    pthread_mutex_unlock(&em->mu);
}

static void em_handle_frame(evt_emitter *em, const net_frame *h, const uint8_t *p)
{
    char why[DP_ERRLEN];
    switch (h->type) {
    case EVT_F_PROBE: {
        /* Answer at once: the reply's task time must be taken as close as possible
         * to the probe's arrival for the hub's offset estimate. */
        uint8_t r[24];
        memcpy(r, p, 16);
        dp_put_u64(r + 16, (uint64_t)em_clock(em));
        evt_wire_put(em_out(em), EVT_F_PROBE_REPLY, r, sizeof r);
        em_try_write(em);
        return;
    }
    case EVT_F_READY:
        if (em->state != EM_HANDSHAKE) {
            em_disconnect(em, "unexpected ready frame");
            return;
        }
        ev_timer_stop(em->loop, &em->handshake_timer);
        em->state = EM_READY;
        em->backoff = EM_BACKOFF_MIN_S;
        em->warned = 0;
        em->last_drop_report = 0;   /* report drops at once after a reconnect */
        atomic_store(&em->ready, 1);
        dp_log(DP_LOG_DEBUG, "emitter", "hub %s: synchronised, offset %.3f ms",
               em->addr_text, (double)(int64_t)dp_get_u64(p) / 1e6);
        em_resume(em);
        em_drain(em, em->stopping);
        return;
    case EVT_F_ACK: {
        uint64_t seq = dp_get_u64(p);
        pthread_mutex_lock(&em->mu);
        uint64_t lo = em->acked, hi = em->acked + em->nsent;
        int ok = em->state == EM_READY && seq >= lo && seq <= hi;
        if (ok) {
            size_t k = (size_t)(seq - lo);
            em->head = (em->head + k) % em->cap;
            em->count -= k;
            em->nsent -= k;
            em->acked = seq;
        }
        pthread_mutex_unlock(&em->mu);
        if (!ok) {
            snprintf(why, sizeof why, "ack %llu outside the unacknowledged range [%llu, %llu]",
                     (unsigned long long)seq, (unsigned long long)lo, (unsigned long long)hi);
            dp_log(DP_LOG_WARN, "emitter", "hub %s: bad frame: %s", em->addr_text, why);
            em_disconnect(em, why);
            return;
        }
        em_maybe_finish(em);
        return;
    }
    case EVT_F_ERROR: {
        int n = h->length > 200 ? 200 : (int)h->length;
        snprintf(why, sizeof why, "hub refused: %.*s", n, (const char *)p);
        /* Said once, loudly: a refusal (a missing or different secret) does not heal
         * by retrying. */
        if (!em->refused_warned) dp_log(DP_LOG_WARN, "emitter", "hub %s: %s", em->addr_text, why);
        em->refused_warned = 1;
        em_disconnect(em, why);
        return;
    }
    default:
        snprintf(why, sizeof why, "unexpected %s frame from hub", evt_wire_type_name(h->type));
        em_disconnect(em, why);
        return;
    }
}

static void em_on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    evt_emitter *em = ctx;
    if (c != em->conn) return;
    em_handle_frame(em, h, payload);
}

/* Connected and, with a secret, both sides proved it (net/conn_auth.c): HELLO_TASK; the hub
 * answers with clock probes. */
static void em_on_open(net_conn *c, void *ctx)
{
    evt_emitter *em = ctx;
    if (c != em->conn) return;
    uint8_t hello[12];
    dp_put_u32(hello, (uint32_t)em->job);
    dp_put_u32(hello + 4, (uint32_t)em->task);
    dp_put_u32(hello + 8, (uint32_t)getpid());
    evt_wire_put(em_out(em), EVT_F_HELLO_TASK, hello, sizeof hello);
    em->state = EM_HANDSHAKE;
    em_try_write(em);
}

static void em_on_close(net_conn *c, const char *reason, void *ctx)
{
    evt_emitter *em = ctx;
    if (c != em->conn) return;   /* one we closed ourselves */
    em->conn = NULL;
    if (net_conn_close_kind(c) == NET_CLOSE_AUTH) {
        /* Said once, loudly: a refusal (a missing or different secret) does not heal
         * by retrying. */
        if (!em->refused_warned) dp_log(DP_LOG_WARN, "emitter", "hub %s: %s", em->addr_text, reason);
        em->refused_warned = 1;
    }
    em_lost(em, !strcmp(reason, "peer closed the connection") ? "hub closed the connection" : reason);
}

static const net_handler em_handler = {em_on_open, NULL, em_on_frame, em_on_close};

static void em_connect(evt_emitter *em)
{
    char err[DP_ERRLEN];
    net_conn_opts o = {.proto = &evt_wire_proto, .role = NET_CLIENT, .key = &em->key,
                       .auth_context = AUTH_CTX_HUB, .name = "emitter", .what = "task",
                       .out_cap = EM_OUT_CAP};
    em->conn = net_conn_connect(em->loop, &em->addr, em->addrlen, &o, &em_handler, em, em->addr_text, err);
    if (!em->conn) {
        dp_log(DP_LOG_WARN, "emitter", "%s", err);
        em_schedule_retry(em);
        return;
    }
    em->state = EM_CONNECTING;
    ev_timer_set(&em->handshake_timer, EM_HANDSHAKE_S, 0.);
    ev_timer_start(em->loop, &em->handshake_timer);
}

static void em_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    em_connect(dp_container_of(w, evt_emitter, retry_timer));
}

static void em_handshake_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    em_disconnect(dp_container_of(w, evt_emitter, handshake_timer), "no clock sync from hub");
}

static void em_flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    em_drain(dp_container_of(w, evt_emitter, flush_timer), 0);
}

static void em_stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(w);
    DP_UNUSED(revents);
    ev_break(loop, EVBREAK_ALL);
}

static void em_wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    DP_UNUSED(revents);
    evt_emitter *em = dp_container_of(w, evt_emitter, wake);
    if (atomic_exchange(&em->resync, 0) && !em->stopping &&
        (em->state == EM_HANDSHAKE || em->state == EM_READY)) {
        em->backoff = 0;   /* reconnect at once */
        em_disconnect(em, "clock skew changed; resynchronising");
        em->backoff = EM_BACKOFF_MIN_S;
    }
    if (atomic_load(&em->stop_requested) && !em->stopping) {
        em->stopping = 1;
        /* Unconnected: nothing can be flushed; connecting: READY may still come. */
        if (em->state == EM_IDLE) {
            ev_break(loop, EVBREAK_ALL);
            return;
        }
        ev_timer_set(&em->stop_timer, EM_STOP_FLUSH_S, 0.);
        ev_timer_start(loop, &em->stop_timer);
        em_drain(em, 1);   /* finishes the loop itself once all has left */
        return;
    }
    em_drain(em, em->stopping);
}

static void *em_thread(void *arg)
{
    evt_emitter *em = arg;
    em_connect(em);
    ev_run(em->loop, 0);
    em->stopping = 1;
    if (em->conn) {
        net_conn *c = em->conn;
        em->conn = NULL;
        net_conn_close(c, "emitter stopping");
    }
    atomic_store(&em->ready, 0);
    /* The only account of what no hub will ever report: records still unacknowledged. */
    static const char *jobs[] = { "ps", "worker", "client", "hub" };
    pthread_mutex_lock(&em->mu);
    uint64_t queued = em->queued, dropped = em->dropped, left = em->count, lost = em->defs_lost;
    pthread_mutex_unlock(&em->mu);
    int told = em->connections > 1 || dropped || left || lost;
    dp_log(told ? DP_LOG_INFO : DP_LOG_DEBUG, "emitter",
           "%s:%d: %llu events emitted, %llu acknowledged by the hub, %llu dropped (buffer "
           "full), %llu undelivered at exit, %llu connections, %llu definitions not kept",
           em->job >= 0 && em->job <= EVT_JOB_HUB ? jobs[em->job] : "?", em->task,
           (unsigned long long)(queued + dropped), (unsigned long long)(queued - left),
           (unsigned long long)dropped, (unsigned long long)left,
           (unsigned long long)em->connections, (unsigned long long)lost);
    return NULL;
}

/* ---- public API ---------------------------------------------------------------- */

evt_emitter *evt_emitter_new(const char *hub_addr, int job, int task, int capacity, char *err)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (net_parse_addr(hub_addr, 0, &ss, &sslen, err)) return NULL;
    if (capacity <= 0) capacity = 65536;
    auth_key key;
    if (auth_hub_key_from_env(&key, err)) return NULL;
    evt_emitter *em = xcalloc(1, sizeof *em);
    em->key = key;
    auth_key_clear(&key);
    pthread_mutex_init(&em->mu, NULL);
    em->cap = (size_t)capacity;
    em->ring = xmalloc(em->cap * sizeof *em->ring);
    /* Unique enough across a task's restarts: its pid and the clock. */
    em->incarnation = ((uint64_t)getpid() << 40) ^ dp_now_ns() ^ (uint64_t)(uintptr_t)em;
    em->strings = evt_strtab_new();
    em->defs = xmalloc(EM_DEFS_MAX * sizeof *em->defs);
    em->job = job;
    em->task = task;
    em->addr = ss;
    em->addrlen = sslen;
    snprintf(em->addr_text, sizeof em->addr_text, "%s", hub_addr);
    em->backoff = EM_BACKOFF_MIN_S;
    em->loop = ev_loop_new(EVFLAG_AUTO);
    if (!em->loop) {
        dp_fail(err, DP_EIO, "emitter: cannot create an event loop");
        goto fail;
    }
    ev_async_init(&em->wake, em_wake_cb);
    ev_async_start(em->loop, &em->wake);
    ev_timer_init(&em->flush_timer, em_flush_cb, EM_FLUSH_S, EM_FLUSH_S);
    ev_timer_start(em->loop, &em->flush_timer);
    ev_timer_init(&em->retry_timer, em_retry_cb, 0., 0.);
    ev_timer_init(&em->handshake_timer, em_handshake_cb, 0., 0.);
    ev_timer_init(&em->stop_timer, em_stop_cb, 0., 0.);
    int rc = pthread_create(&em->thread, NULL, em_thread, em);
    if (rc) {
        dp_fail(err, DP_EIO, "emitter: pthread_create: %s", strerror(rc));
        goto fail;
    }
    return em;
fail:
    if (em->loop) ev_loop_destroy(em->loop);
    evt_strtab_free(em->strings);
    free(em->defs);
    free(em->ring);
    pthread_mutex_destroy(&em->mu);
    free(em);
    return NULL;
}

void evt_emitter_free(evt_emitter *em)
{
    if (!em) return;
    atomic_store(&em->stop_requested, 1);
    ev_async_send(em->loop, &em->wake);
    pthread_join(em->thread, NULL);
    ev_loop_destroy(em->loop);
    free(em->defs);
    evt_strtab_free(em->strings);
    free(em->ring);
    auth_key_clear(&em->key);
    pthread_mutex_destroy(&em->mu);
    free(em);
}

uint32_t evt_emitter_intern(evt_emitter *em, const char *s)
{
    if (!em || !s) return 0;
    pthread_mutex_lock(&em->mu);
    uint32_t id = evt_strtab_intern(em->strings, s);
    pthread_mutex_unlock(&em->mu);
    return id;
}

int evt_emit(evt_emitter *em, const evt_record *e)
{
    if (!em) return 0;
    dp_assert("evt_emit: events_dropped reports are the emitter's own",
              e->kind != EVT_EVENTS_DROPPED);
    int64_t t = e->t ? e->t : em_clock(em);
    size_t n;
    pthread_mutex_lock(&em->mu);
    if (em->count == em->cap) {
        em->dropped++;
        pthread_mutex_unlock(&em->mu);
        return 0;
    }
    evt_record *slot = &em->ring[(em->head + em->count) % em->cap];
    *slot = *e;
    slot->t = t;
    n = ++em->count;
    em->queued++;
    if (em_is_definition(e->kind)) {
        if (em->ndefs < EM_DEFS_MAX) em->defs[em->ndefs++] = (em_def){ *slot, em->queued };
        else em->defs_lost++;
    }
    pthread_mutex_unlock(&em->mu);
    /* One wake per batch; ev_async_send is cheap when already pending. */
    if (n == EM_BATCH && atomic_load(&em->ready)) ev_async_send(em->loop, &em->wake);
    return 1;
}

uint64_t evt_emitter_sent(const evt_emitter *em)
{
    if (!em) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&em->mu);
    uint64_t v = em->queued;
    pthread_mutex_unlock((pthread_mutex_t *)&em->mu);
    return v;
}

uint64_t evt_emitter_dropped(const evt_emitter *em)
{
    if (!em) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&em->mu);
    uint64_t v = em->dropped;
    pthread_mutex_unlock((pthread_mutex_t *)&em->mu);
    return v;
}

uint64_t evt_emitter_unacked(const evt_emitter *em)
{
    if (!em) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&em->mu);
    uint64_t v = em->count;
    pthread_mutex_unlock((pthread_mutex_t *)&em->mu);
    return v;
}

int64_t evt_emitter_now(const evt_emitter *em)
{
    return em ? em_clock(em) : (int64_t)dp_now_ns();
}

void evt_emitter_set_skew(evt_emitter *em, int64_t skew_ns)
{
    if (!em) return;
    atomic_store(&em->skew, skew_ns);
    /* Probes already answered used the old clock: have the hub estimate again. */
    atomic_store(&em->resync, 1);
    ev_async_send(em->loop, &em->wake);
}

int evt_emitter_connected(const evt_emitter *em)
{
    return em ? atomic_load(&((evt_emitter *)em)->ready) : 0;
}

int evt_emitter_wait_connected(const evt_emitter *em, int timeout_ms)
{
    uint64_t end = dp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    for (;;) {
        if (evt_emitter_connected(em)) return 1;
        if (!em || dp_now_ns() >= end) return 0;
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
}
