/* test_stream.c — the live stream's delivery, in one process: the wire helpers; an
 * emitter with no hub (never blocks, drops counted), then a hub (reconnection with the
 * drop report); hub restarts (a hub stopped by SIGTERM, one SIGKILLed, a third that gets
 * the rest): every event accounted for, definitions re-sent; bad RESUME / ACK frames
 * refused. The main scenario (one hub, emitters and subscribers) is test_stream_hub.c.
 * Takes a few seconds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/hub.h"
#include "hub/stream.h"
#include "events/trace.h"
#include "hub/wire.h"
#include "net/frame.h"
#include "tests/check.h"
#include "tests/stream_check.h"

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

typedef struct seen_strings {
    uint32_t first, next_id; /* the first string's id; the id the next one must have */
    int big;                 /* 600,000 bytes of one letter each, else the decimal of id - first */
    int in_order;            /* every string came in id order, with its own text */
} seen_strings;

static int check_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    seen_strings *k = ctx;
    char want[16];
    snprintf(want, sizeof want, "%u", id - k->first);
    k->in_order &= id == k->next_id && (k->big ? len == 600000 && s[0] == (char)('A' + id % 26) && s[len - 1] == s[0]
                                               : len == strlen(want) && !memcmp(s, want, len));
    k->next_id = id + 1;
    return 0;
}

/* A string table larger than a frame goes out in several STRINGS frames, each within
 * EVT_WIRE_MAX_PAYLOAD (a peer refuses more), every string once, in order: 20 strings
 * of 600,000 bytes (12 MB), and 600,000 of a few bytes (8.3 MB, mostly the 8-byte entry
 * headers). */
static void test_wire_strings_split(int big)
{
    char err[DP_ERRLEN];
    evt_strtab *t = evt_strtab_new();
    int n = big ? 20 : 600000, min_frames = big ? 3 : 2;
    char *text = xmalloc(600001);
    uint32_t first = 0, last = 0;
    for (int i = 0; i < n; i++) {
        if (big) {
            uint32_t id = evt_strtab_count(t) + 1;
            memset(text, 'A' + (int)(id % 26), 600000);
            snprintf(text + 300000, 16, "%d", i);   /* each one distinct */
            text[300000 + strlen(text + 300000)] = 'x';
            text[600000] = 0;
        } else {
            snprintf(text, 16, "%d", i);
        }
        last = evt_strtab_intern(t, text);
        if (!first) first = last;
    }
    free(text);
    dp_buf b = { 0 };
    evt_wire_put_strings(&b, t, first, last);
    seen_strings k = {first, first, big, 1};
    int frames = 0, within = 1;
    net_frame h;
    const uint8_t *p;
    int rc;
    while ((rc = net_frame_next(&b, &evt_wire_proto, &h, &p, err)) == 1) {
        frames++;
        within &= h.type == EVT_F_STRINGS && h.length <= EVT_WIRE_MAX_PAYLOAD;
        CHECK(evt_wire_each_string(p, h.length, check_string, &k, err) == 0);
        dp_buf_consume(&b, NET_HEADER + h.length);
    }
    CHECK_MSG(rc == 0 && b.len == 0, "the frames parse to the end (%s)", rc ? err : "ok");
    CHECK_MSG(frames >= min_frames && within, "%d strings: %d frames (want %d or more, each at most 4 MiB: %s)", n,
              frames, min_frames, within ? "yes" : "no");
    CHECK_MSG(k.in_order && k.next_id == last + 1, "strings %u..%u each once, in order (%s, next %u)", first, last,
              k.in_order ? "in order" : "out of order", k.next_id);
    dp_buf_release(&b);
    evt_strtab_free(t);
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
    /* a second entry cut inside its 8-byte header */
    memset(s + 11, 0, 9);
    CHECK(evt_wire_each_string(s, 11 + 7, count_string, &total, err) == DP_EPROTO && strstr(err, "truncated entry at byte 11"));
}

int main(void)
{
    dp_log_level = getenv("TEST_VERBOSE") ? DP_LOG_DEBUG : DP_LOG_ERROR;
    char dir[] = "/tmp/test_stream.XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_wire();
    test_wire_strings_split(1);
    test_wire_strings_split(0);
    test_no_hub();
    snprintf(path, sizeof path, "%s/restart.dptrace", dir);
    test_restart(path);
    test_bad_delivery();
    unlink(path);
    rmdir(dir);
    return CHECK_DONE();
}
