/* fuzz_emitter.c — libFuzzer target: the task's side of the stream (hub/emitter.c):
 * a real evt_emitter's connection handling fed hostile hub frames (PROBE, READY, ACK,
 * ERROR and anything else). The input is what the hub sends. Each input gets an emitter
 * holding 12 queued records (definitions among them, 16 slots) and a connection on a
 * socketpair, made as em_connect makes one (net_conn client, stream protocol, the
 * emitter's handler and output bound); the input is written frame by frame (a piece is
 * 32 bytes plus the length its header claims) and the emitter's loop runs after each.
 * When the emitter drops the connection (a bad frame, an ACK out of range, an ERROR) and
 * input is left, 2 more records are queued and the rest goes to a new connection (at
 * most 3), as after a reconnect; at the end the hub's end is shut.
 * What the emitter sends is checked (abort: a real finding): every frame decodes and is
 * a task's (HELLO_TASK first, PROBE_REPLY, RESUME, STRINGS, EVENTS), EVENTS only after
 * RESUME, string ids defined on the connection in order before any record uses them.
 *
 * Driven on the fuzzer's thread, not the emitter's own: evt_emitter_new starts a thread
 * that connects by TCP with backoff and flushes on a 20 ms timer, so a run would cost
 * milliseconds and depend on timing. This file includes hub/emitter.c to reach its
 * static connection handler and builds the emitter as evt_emitter_new does, minus the
 * thread and the timers (the archive's stream.o is then never pulled in: Makefile). */
#include "tests/fuzz/fuzz_util.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "hub/emitter.c"

#define FZ_CAP 16
#define FZ_CONNS 3

static evt_emitter *fz_emitter_new(void)
{
    evt_emitter *em = xcalloc(1, sizeof *em);
    pthread_mutex_init(&em->mu, NULL);
    em->cap = FZ_CAP;
    em->ring = xmalloc(em->cap * sizeof *em->ring);
    em->incarnation = 7;
    em->strings = evt_strtab_new();
    em->defs = xmalloc(EM_DEFS_MAX * sizeof *em->defs);
    em->job = EVT_JOB_WORKER;
    em->task = 0;
    snprintf(em->addr_text, sizeof em->addr_text, "fuzz-hub");
    em->backoff = EM_BACKOFF_MIN_S;
    em->loop = ev_loop_new(EVFLAG_AUTO);
    if (!em->loop) abort();
    ev_timer_init(&em->flush_timer, em_flush_cb, EM_FLUSH_S, EM_FLUSH_S);
    ev_timer_init(&em->retry_timer, em_retry_cb, 0., 0.);
    ev_timer_init(&em->handshake_timer, em_handshake_cb, 0., 0.);
    ev_timer_init(&em->stop_timer, em_stop_cb, 0., 0.);
    return em;
}

static void fz_emitter_free(evt_emitter *em)
{
    if (em->conn) {
        net_conn *c = em->conn;
        em->conn = NULL;
        net_conn_close(c, "fuzz input done");
    }
    ev_timer_stop(em->loop, &em->retry_timer);
    ev_timer_stop(em->loop, &em->handshake_timer);
    ev_loop_destroy(em->loop);
    free(em->defs);
    evt_strtab_free(em->strings);
    free(em->ring);
    pthread_mutex_destroy(&em->mu);
    free(em);
}

/* em_connect over a socketpair: takes fd. The retry a lost connection scheduled is
 * this connection. */
static net_conn *fz_connect(evt_emitter *em, int fd)
{
    ev_timer_stop(em->loop, &em->retry_timer);
    net_conn_opts o = {.proto = &evt_wire_proto, .role = NET_CLIENT, .key = &em->key,
                       .auth_context = AUTH_CTX_HUB, .name = "emitter", .what = "task",
                       .out_cap = EM_OUT_CAP};
    em->conn = net_conn_new(em->loop, fd, &o, &em_handler, em, em->addr_text);
    em->state = EM_CONNECTING;
    ev_timer_set(&em->handshake_timer, EM_HANDSHAKE_S, 0.);
    ev_timer_start(em->loop, &em->handshake_timer);
    return em->conn;
}

/* Records as a worker queues them: definitions first, then step events. */
static void fz_emit(evt_emitter *em, int n, int from)
{
    static const int kinds[] = {EVT_TASK_START, EVT_DEVICE, EVT_VAR_DEFINE, EVT_VAR_PLACE,
                                EVT_PULL_BEGIN, EVT_PULL_END, EVT_COMPUTE_BEGIN, EVT_COMPUTE_END,
                                EVT_PUSH_BEGIN, EVT_PUSH_END, EVT_STEP_END, EVT_LOG};
    uint32_t dev = evt_emitter_intern(em, "/job:worker/replica:0/task:0/cpu:0");
    uint32_t var = evt_emitter_intern(em, "softmax/w");
    for (int i = from; i < from + n; i++) {
        evt_record e;
        evt_init(&e, kinds[i % 12], EVT_JOB_WORKER, 0);
        e.t = 1000 + i;
        e.device = dev;
        e.var = i % 12 >= 2 && i % 12 <= 9 ? var : 0;
        e.str = i % 12 == 11 ? evt_emitter_intern(em, i % 2 ? "step done" : "log line") : 0;
        e.step = i / 12;
        evt_emit(em, &e);
    }
}

/* The hub's view of one connection: what the emitter sent, parsed and checked. */
typedef struct fz_hub {
    dp_buf in;
    evt_strtab *defs;
    int frames, resumed;
    evt_record *recs;
    size_t nrecs, cap;
} fz_hub;

static int fz_define(void *ctx, uint32_t id, const char *s, size_t len)
{
    return evt_strtab_define(ctx, id, s, len) == 0 ? 0 : DP_EPROTO;
}

static void fz_fail(const char *what, int type)
{
    fprintf(stderr, "emitter: %s (%s frame)\n", what, evt_wire_type_name(type));
    abort();
}

static void fz_check(fz_hub *hb, int fd)
{
    uint8_t buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) dp_buf_append(&hb->in, buf, (size_t)r);
    for (;;) {
        net_frame h;
        const uint8_t *p;
        char err[DP_ERRLEN];
        int rc = net_frame_next(&hb->in, &evt_wire_proto, &h, &p, err);
        if (rc < 0) {
            fprintf(stderr, "emitter: sent a bad frame: %s\n", err);
            abort();
        }
        if (rc == 0) break;
        if ((hb->frames == 0) != (h.type == EVT_F_HELLO_TASK)) fz_fail("HELLO_TASK not first, or twice", h.type);
        switch (h.type) {
        case EVT_F_HELLO_TASK:
        case EVT_F_PROBE_REPLY:
            break;
        case EVT_F_RESUME:
            if (hb->resumed) fz_fail("RESUME twice", h.type);
            hb->resumed = 1;
            break;
        case EVT_F_STRINGS:
            if (evt_wire_each_string(p, h.length, fz_define, hb->defs, err))
                fz_fail("string ids out of order or malformed", h.type);
            break;
        case EVT_F_EVENTS: {
            if (!hb->resumed) fz_fail("records before RESUME", h.type);
            hb->nrecs = 0;
            if (evt_wire_get_events(p, h.length, &hb->recs, &hb->nrecs, &hb->cap, err) < 0)
                fz_fail("records do not decode", h.type);
            uint32_t known = evt_strtab_count(hb->defs);
            for (size_t i = 0; i < hb->nrecs; i++) {
                const evt_record *e = &hb->recs[i];
                if (e->device > known || e->var > known || e->str > known)
                    fz_fail("a record uses a string not defined on this connection", h.type);
            }
            break;
        }
        default:
            fz_fail("not a task's frame", h.type);
        }
        hb->frames++;
        dp_buf_consume(&hb->in, NET_HEADER + h.length);
    }
}

/* One piece: a header and the payload it claims (as far as the input goes). */
static size_t fz_piece(const uint8_t *p, size_t left)
{
    if (left < NET_HEADER) return left;
    uint32_t len = dp_get_u32(p + 8);
    return len > left - NET_HEADER ? left : NET_HEADER + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    evt_emitter *em = fz_emitter_new();
    fz_emit(em, 12, 0);
    size_t off = 0;
    fz_hub hb = {0};
    for (int k = 0; k < FZ_CONNS; k++) {
        if (k) fz_emit(em, 2, 10 + 2 * k);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); abort(); }
        fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
        dp_buf_clear(&hb.in);
        hb.defs = evt_strtab_new();
        hb.frames = hb.resumed = 0;
        net_conn *c = fz_connect(em, sv[0]);
        while (em->conn == c && off < size) {
            size_t n = fz_piece(data + off, size - off), done = 0;
            for (int spins = 0; done < n && em->conn == c && spins < 10000; spins++) {
                ssize_t w = write(sv[1], data + off + done, n - done);
                if (w > 0) done += (size_t)w;
                ev_run(em->loop, EVRUN_NOWAIT);
                fz_check(&hb, sv[1]);
            }
            off += n;
            ev_run(em->loop, EVRUN_NOWAIT);
            fz_check(&hb, sv[1]);
        }
        if (em->conn == c) shutdown(sv[1], SHUT_WR);
        for (int spins = 0; em->conn == c && spins < 1000; spins++) {
            ev_run(em->loop, EVRUN_NOWAIT);
            fz_check(&hb, sv[1]);
        }
        if (em->conn == c) {
            fprintf(stderr, "emitter: connection still open after the hub shut its end\n");
            abort();
        }
        fz_check(&hb, sv[1]);
        close(sv[1]);
        evt_strtab_free(hb.defs);
        if (off >= size) break;
    }
    /* What a caller reads after the fact. */
    evt_emitter_sent(em);
    evt_emitter_dropped(em);
    evt_emitter_unacked(em);
    evt_emitter_connected(em);
    dp_buf_release(&hb.in);
    free(hb.recs);
    fz_emitter_free(em);
    return 0;
}
