/* seeds.c — writes the generated seed inputs of tests/fuzz/corpus/ with the project's own
 * encoders (not a fuzz target; run by hand when a format changes, see tests/fuzz/README.md):
 *   seeds TRACE OUTDIR   reads the first records of TRACE (a tiny `downpour sim --trace`)
 * and writes OUTDIR/frame/stream.bin (STRINGS + EVENTS frames), OUTDIR/handshake/
 * task-session.bin (HELLO_TASK, two PROBE_REPLYs, RESUME, STRINGS, EVENTS) and
 * sub-hello.bin, and OUTDIR/proto/session.bin (HELLO, INIT, PULL, PUSH, PUSH_ACK, ERROR)
 * and hello.bin. */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#include "events/trace.h"
#include "events/wire.h"
#include "runtime/proto.h"

static void save(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) { perror(path); exit(1); }
    fclose(f);
}

static void put_proto(evt_buf *b, int type, uint32_t var, int64_t a0, int64_t a1,
                      const void *payload, uint32_t len)
{
    proto_header h = { PROTO_VERSION, (uint16_t)type, len, var, a0, a1 };
    proto_encode(&h, evt_buf_reserve(b, PROTO_HEADER_SIZE));
    b->len += PROTO_HEADER_SIZE;
    if (len) evt_buf_append(b, payload, len);
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: seeds TRACE OUTDIR\n"); return 2; }
    char err[DP_ERRLEN], dir[1024];
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
    evt_buf b = {0};
    evt_wire_put_strings(&b, t, 1, evt_strtab_count(t));
    evt_wire_put_events(&b, recs, n);
    snprintf(dir, sizeof dir, "%s/frame", argv[2]);
    save(dir, "stream.bin", b.data, b.len);

    evt_buf hs = {0};
    uint8_t p[24];
    evt_put_u32(p, 1); evt_put_u32(p + 4, 0); evt_put_u32(p + 8, 4242);
    evt_frame_put(&hs, EVT_F_HELLO_TASK, p, 12);
    for (uint64_t seq = 1; seq <= 2; seq++) {
        evt_put_u64(p, seq); evt_put_u64(p + 8, 0); evt_put_u64(p + 16, 1000);
        evt_frame_put(&hs, EVT_F_PROBE_REPLY, p, 24);
    }
    uint8_t rs[20];
    evt_put_u64(rs, 0); evt_put_u32(rs + 8, 0); evt_put_u64(rs + 12, 7);
    evt_frame_put(&hs, EVT_F_RESUME, rs, 20);
    evt_buf_append(&hs, b.data, b.len);
    snprintf(dir, sizeof dir, "%s/handshake", argv[2]);
    save(dir, "task-session.bin", hs.data, hs.len);
    evt_buf sub = {0};
    memset(p, 0, 4);
    evt_frame_put(&sub, EVT_F_HELLO_SUB, p, 4);
    save(dir, "sub-hello.bin", sub.data, sub.len);

    evt_buf pr = {0};
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)i / 16.0f;
    put_proto(&pr, MSG_HELLO, 0, 12345, 0, NULL, 0);
    snprintf(dir, sizeof dir, "%s/proto", argv[2]);
    save(dir, "hello.bin", pr.data, pr.len);
    put_proto(&pr, MSG_INIT, 0, 0, 0, v, sizeof v);
    put_proto(&pr, MSG_PULL, 0, 0, 0, NULL, 0);
    put_proto(&pr, MSG_PULL_RESP, 0, 1, 0, v, sizeof v);
    put_proto(&pr, MSG_PUSH, 0, 1, 1, v, sizeof v);
    put_proto(&pr, MSG_PUSH_ACK, 0, 2, ACK_APPLIED, NULL, 0);
    put_proto(&pr, MSG_ERROR, 0, 0, 0, "stopping", 8);
    save(dir, "session.bin", pr.data, pr.len);

    evt_buf_release(&b); evt_buf_release(&hs); evt_buf_release(&sub); evt_buf_release(&pr);
    evt_strtab_free(t);
    trace_reader_close(r);
    return 0;
}
