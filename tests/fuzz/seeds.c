/* seeds.c — writes the generated seed inputs of tests/fuzz/corpus/ with the project's own
 * encoders (not a fuzz target; run by hand when a format changes, see tests/fuzz/README.md):
 *   seeds TRACE OUTDIR   reads the first records of TRACE (a tiny `downpour sim --trace`)
 * and writes, every frame in the one format of net/frame.h:
 *   frame/stream.bin        STRINGS + EVENTS frames of those records
 *   handshake/              what a task or viewer sends the hub: task-session.bin (HELLO_TASK,
 *                           two PROBE_REPLYs, RESUME, STRINGS, EVENTS), sub-hello.bin,
 *                           and crash-record-time-overflow (a synced task's record at INT64_MAX ns)
 *                           and the regression input crash-probe-reply-offset-overflow
 *   proto/                  what a worker sends a ps: hello.bin, session.bin (HELLO, INIT,
 *                           PULL, PULL_RESP, PUSH, PUSH_ACK, ERROR)
 *   emitter/                what a hub sends a task: session.bin (2 PROBEs, READY, ACKs),
 *                           reconnect.bin (a session, a frame the task refuses, another
 *                           session), ack-out-of-range.bin, ack-before-ready.bin, error.bin
 *   sub/                    what a hub sends a viewer: stream.bin (WELCOME, STRINGS, state
 *                           EVENTS, STATE_END, live EVENTS, DROPPED), error.bin
 *   auth/                   fuzz_auth inputs: a mode byte (fuzz_auth.c) and the peer's frames
 * The record-carrying seeds use the trace's records, strings re-numbered 1..n. */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#include "events/trace.h"
#include "hub/wire.h"
#include "runtime/proto.h"

static void save(const char *out, const char *sub, const char *name, const dp_buf *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", out, sub, name);
    FILE *f = fopen(path, "wb");
    size_t n = dp_buf_pending(b);
    if (!f || fwrite(b->data + b->off, 1, n, f) != n) { perror(path); exit(1); }
    fclose(f);
}

static void put_proto(dp_buf *b, int type, uint32_t var, int64_t a0, int64_t a1,
                      const void *payload, uint32_t len)
{
    net_frame h = {.proto = NET_PROTO_PS, .type = (uint16_t)type, .id = var, .arg0 = a0, .arg1 = a1};
    net_frame_put(b, &h, payload, len);
}

static void put_u64s(dp_buf *b, int type, uint64_t a, uint64_t c)
{
    uint8_t p[16];
    dp_put_u64(p, a);
    dp_put_u64(p + 8, c);
    evt_wire_put(b, type, p, sizeof p);
}

static void put_u64(dp_buf *b, int type, uint64_t v)
{
    uint8_t p[8];
    dp_put_u64(p, v);
    evt_wire_put(b, type, p, sizeof p);
}

static void put_hello_task(dp_buf *b)
{
    uint8_t p[12];
    dp_put_u32(p, EVT_JOB_WORKER);
    dp_put_u32(p + 4, 0);
    dp_put_u32(p + 8, 4242);
    evt_wire_put(b, EVT_F_HELLO_TASK, p, sizeof p);
}

static void put_probe_reply(dp_buf *b, uint64_t seq, int64_t hub_ns, int64_t task_ns)
{
    uint8_t p[24];
    dp_put_u64(p, seq);
    dp_put_u64(p + 8, (uint64_t)hub_ns);
    dp_put_u64(p + 16, (uint64_t)task_ns);
    evt_wire_put(b, EVT_F_PROBE_REPLY, p, sizeof p);
}

/* The hub's side of a task's clock sync: two PROBEs and READY. */
static void put_hub_sync(dp_buf *b)
{
    put_u64s(b, EVT_F_PROBE, 1, 5000);
    put_u64s(b, EVT_F_PROBE, 2, 6000);
    put_u64s(b, EVT_F_READY, 0, 1000);
}

/* A handshake frame (NET_T_AUTH_*) of protocol proto, its 32 bytes all `fill`. */
static void put_auth(dp_buf *b, int proto, int type, uint8_t fill)
{
    uint8_t p[NET_AUTH_BYTES];
    memset(p, fill, sizeof p);
    net_frame h = {.proto = (uint8_t)proto, .type = (uint16_t)type};
    net_frame_put(b, &h, p, sizeof p);
}

static void put_error(dp_buf *b, int proto, const char *text)
{
    net_frame h = {.proto = (uint8_t)proto, .type = NET_T_ERROR};
    net_frame_put(b, &h, text, strlen(text));
}

static void mode(dp_buf *b, uint8_t m)
{
    dp_buf_clear(b);
    dp_buf_append(b, &m, 1);
}

static void auth_seeds(const char *out)
{
    dp_buf b = {0};
    float v[4] = {1, 2, 3, 4};
    /* 0: a ps with a secret; the client's raw frames. */
    mode(&b, 0);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_HELLO, 1);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_PROOF, 2);
    save(out, "auth", "server-wrong-proof.bin", &b);
    mode(&b, 0);
    put_proto(&b, MSG_HELLO, 0, 12345, 0, NULL, 0);
    save(out, "auth", "server-hello-without-auth.bin", &b);
    mode(&b, 0);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_HELLO, 1);
    put_proto(&b, MSG_PUSH, 0, 1, 1, v, sizeof v);
    save(out, "auth", "server-push-after-hello.bin", &b);
    /* 1: the harness authenticates, then these frames follow on the open connection. */
    mode(&b, 1);
    put_proto(&b, MSG_HELLO, 0, 12345, 0, NULL, 0);
    put_proto(&b, MSG_PULL, 0, 0, 0, NULL, 0);
    put_proto(&b, MSG_PUSH, 0, 1, 1, v, sizeof v);
    save(out, "auth", "server-open-session.bin", &b);
    mode(&b, 1);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_HELLO, 3);
    save(out, "auth", "server-hello-after-open.bin", &b);
    /* 2: a worker with a secret; the ps's raw frames. */
    mode(&b, 2);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_CHALLENGE, 4);
    put_auth(&b, NET_PROTO_PS, NET_T_AUTH_OK, 5);
    save(out, "auth", "client-wrong-proof.bin", &b);
    mode(&b, 2);
    put_error(&b, NET_PROTO_PS, "authentication failed");
    save(out, "auth", "client-refused.bin", &b);
    mode(&b, 2);
    put_proto(&b, MSG_HELLO_OK, 0, 12345, 0, NULL, 0);
    save(out, "auth", "client-frame-before-auth.bin", &b);
    /* 3: the harness answers the handshake, then these frames follow. */
    mode(&b, 3);
    put_proto(&b, MSG_HELLO_OK, 0, 12345, 0, NULL, 0);
    put_proto(&b, MSG_PULL_RESP, 0, 1, 0, v, sizeof v);
    put_error(&b, NET_PROTO_PS, "stopping");
    save(out, "auth", "client-open-session.bin", &b);
    /* 4 | m: the hub's side (stream protocol, the viewer token as second key). */
    mode(&b, 4);
    put_auth(&b, NET_PROTO_STREAM, NET_T_AUTH_HELLO, 6);
    put_auth(&b, NET_PROTO_STREAM, NET_T_AUTH_PROOF, 7);
    save(out, "auth", "hub-wrong-proof.bin", &b);
    mode(&b, 4 | 8 | 1);   /* proved with the viewer token */
    uint8_t flags[4] = {0};
    evt_wire_put(&b, EVT_F_HELLO_SUB, flags, sizeof flags);
    save(out, "auth", "hub-viewer-token.bin", &b);
    mode(&b, 4 | 1);
    put_hello_task(&b);
    put_probe_reply(&b, 1, 0, 1000);
    save(out, "auth", "hub-task.bin", &b);
    mode(&b, 4 | 3);
    put_hub_sync(&b);
    put_u64(&b, EVT_F_ACK, 0);
    save(out, "auth", "task-open-session.bin", &b);
    dp_buf_release(&b);
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: seeds TRACE OUTDIR\n"); return 2; }
    const char *out = argv[2];
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(argv[1], err);
    if (!r) { fprintf(stderr, "%s\n", err); return 1; }
    /* The records, with their strings re-numbered 1..n in order of first use. */
    evt_record recs[40];
    size_t n = 0;
    evt_strtab *t = evt_strtab_new();
    while (n < 40 && trace_reader_next(r, &recs[n]) == 1) {
        evt_record *e = &recs[n++];
        uint32_t *ids[3] = { &e->device, &e->var, &e->str };
        for (int i = 0; i < 3; i++)
            if (*ids[i]) *ids[i] = evt_strtab_intern(t, trace_reader_string(r, *ids[i]));
    }
    dp_buf b = {0};
    evt_wire_put_strings(&b, t, 1, evt_strtab_count(t));
    evt_wire_put_events(&b, recs, n);
    save(out, "frame", "stream.bin", &b);

    /* ---- to the hub ---- */
    dp_buf hs = {0};
    put_hello_task(&hs);
    put_probe_reply(&hs, 1, 0, 1000);
    put_probe_reply(&hs, 2, 0, 1000);
    uint8_t rs[20];
    dp_put_u64(rs, 0); dp_put_u32(rs + 8, 0); dp_put_u64(rs + 12, 7);
    evt_wire_put(&hs, EVT_F_RESUME, rs, sizeof rs);
    dp_buf_append(&hs, b.data, b.len);
    save(out, "handshake", "task-session.bin", &hs);
    dp_buf_clear(&hs);
    uint8_t flags[4] = {0};
    evt_wire_put(&hs, EVT_F_HELLO_SUB, flags, sizeof flags);
    save(out, "handshake", "sub-hello.bin", &hs);
    /* The fixed finding: a PROBE_REPLY whose task clock leaves no room for the offset
     * (t2 - (t1 + rtt/2) with t2 near INT64_MIN overflows); refused (HUB_CLOCK_MAX). */
    dp_buf_clear(&hs);
    put_hello_task(&hs);
    put_probe_reply(&hs, 1, 0, INT64_MIN + 1);
    put_probe_reply(&hs, 2, 0, INT64_MAX);
    save(out, "handshake", "crash-probe-reply-offset-overflow", &hs);
    /* Its twin: a synced task's record at the int64 limit (aligning it overflowed). */
    dp_buf_clear(&hs);
    put_hello_task(&hs);
    put_probe_reply(&hs, 1, 0, 0);
    put_probe_reply(&hs, 2, 0, 0);
    evt_record far;
    evt_init(&far, EVT_STEP_END, EVT_JOB_WORKER, 0);
    far.t = INT64_MAX;
    evt_wire_put_events(&hs, &far, 1);
    save(out, "handshake", "crash-record-time-overflow", &hs);

    /* ---- to a ps ---- */
    dp_buf pr = {0};
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)i / 16.0f;
    put_proto(&pr, MSG_HELLO, 0, 12345, 0, NULL, 0);
    save(out, "proto", "hello.bin", &pr);
    put_proto(&pr, MSG_INIT, 0, 0, 0, v, sizeof v);
    put_proto(&pr, MSG_PULL, 0, 0, 0, NULL, 0);
    put_proto(&pr, MSG_PULL_RESP, 0, 1, 0, v, sizeof v);
    put_proto(&pr, MSG_PUSH, 0, 1, 1, v, sizeof v);
    put_proto(&pr, MSG_PUSH_ACK, 0, 2, ACK_APPLIED, NULL, 0);
    put_error(&pr, NET_PROTO_PS, "stopping");
    save(out, "proto", "session.bin", &pr);

    /* ---- to a task (fuzz_emitter queues 12 records before the first connection) ---- */
    dp_buf em = {0};
    put_hub_sync(&em);
    put_u64(&em, EVT_F_ACK, 2);
    put_u64(&em, EVT_F_ACK, 12);
    save(out, "emitter", "session.bin", &em);
    put_u64(&em, EVT_F_WELCOME, 0);   /* a viewer's frame: the task drops the connection */
    put_hub_sync(&em);
    put_u64(&em, EVT_F_ACK, 14);
    save(out, "emitter", "reconnect.bin", &em);
    dp_buf_clear(&em);
    put_hub_sync(&em);
    put_u64(&em, EVT_F_ACK, 1000);
    save(out, "emitter", "ack-out-of-range.bin", &em);
    dp_buf_clear(&em);
    put_u64s(&em, EVT_F_PROBE, 1, 5000);
    put_u64(&em, EVT_F_ACK, 1);
    save(out, "emitter", "ack-before-ready.bin", &em);
    dp_buf_clear(&em);
    put_error(&em, NET_PROTO_STREAM, "authentication required: this hub has a secret");
    save(out, "emitter", "error.bin", &em);

    /* ---- to a viewer ---- */
    dp_buf sub = {0};
    put_u64(&sub, EVT_F_WELCOME, 123456789);
    evt_wire_put_strings(&sub, t, 1, evt_strtab_count(t));
    evt_wire_put_events(&sub, recs, n / 2);
    evt_wire_put(&sub, EVT_F_STATE_END, NULL, 0);
    evt_wire_put_events(&sub, recs + n / 2, n - n / 2);
    put_u64(&sub, EVT_F_DROPPED, 3);
    save(out, "sub", "stream.bin", &sub);
    dp_buf_clear(&sub);
    put_error(&sub, NET_PROTO_STREAM, "this hub serves at most 64 viewers at once");
    save(out, "sub", "error.bin", &sub);

    auth_seeds(out);

    dp_buf_release(&b); dp_buf_release(&hs); dp_buf_release(&pr);
    dp_buf_release(&em); dp_buf_release(&sub);
    evt_strtab_free(t);
    trace_reader_close(r);
    return 0;
}
