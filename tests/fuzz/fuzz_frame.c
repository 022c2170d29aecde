/* fuzz_frame.c — libFuzzer target: the frame decoder (net/frame.c) with the live
 * stream's protocol table and payload codecs (hub/wire.c), and the event record codec
 * (events/event.c). The input is a byte stream as a hub or a subscriber receives it:
 * frames are taken with net_frame_next against evt_wire_proto, in pieces of growing
 * size as the network would hand them; a header that decodes must encode back to the
 * same 32 bytes; STRINGS payloads are parsed into a string table
 * and EVENTS payloads decoded. Every decoded batch is encoded again and must decode to
 * the same records (abort otherwise: a real finding). The raw input is also decoded as
 * a run of bare records with evt_decode. */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#include "events/event.h"
#include "hub/wire.h"

static int same_record(const evt_record *a, const evt_record *b)
{
    return a->t == b->t && a->kind == b->kind && a->job == b->job &&
           a->peer_job == b->peer_job && a->task == b->task && a->peer == b->peer &&
           a->device == b->device && a->var == b->var && a->str == b->str &&
           a->step == b->step && a->bytes == b->bytes && a->dur == b->dur && a->id == b->id &&
           memcmp(&a->value, &b->value, sizeof a->value) == 0 &&
           memcmp(&a->value2, &b->value2, sizeof a->value2) == 0;
}

static int define(void *ctx, uint32_t id, const char *s, size_t len)
{
    evt_strtab *t = ctx;
    /* Ids out of order are refused by the table, as the subscriber does. */
    return evt_strtab_define(t, id, s, len) == 0 ? 0 : DP_EPROTO;
}

static void roundtrip(const evt_record *recs, size_t n)
{
    for (size_t at = 0; at < n; at += EVT_WIRE_MAX_BATCH) {
        size_t k = n - at < EVT_WIRE_MAX_BATCH ? n - at : EVT_WIRE_MAX_BATCH;
        dp_buf b = {0};
        evt_wire_put_events(&b, recs + at, k);
        net_frame h;
        const uint8_t *p;
        char err[DP_ERRLEN];
        evt_record *out = NULL;
        size_t cnt = 0, cap = 0;
        if (net_frame_next(&b, &evt_wire_proto, &h, &p, err) != 1 || h.type != EVT_F_EVENTS ||
            h.length != dp_buf_pending(&b) - NET_HEADER ||
            evt_wire_get_events(p, h.length, &out, &cnt, &cap, err) != (int)k || cnt != k) {
            fprintf(stderr, "frame: %zu decoded records do not encode again\n", k);
            abort();
        }
        for (size_t i = 0; i < k; i++)
            if (!same_record(&recs[at + i], &out[i])) {
                fprintf(stderr, "frame: record %zu (%s) changes in an encode/decode round trip\n",
                        at + i, evt_kind_name(recs[at + i].kind));
                abort();
            }
        free(out);
        dp_buf_release(&b);
    }
}

/* A header that decodes is the one it encodes to. */
static void header_roundtrip(const uint8_t *raw, const net_frame *h)
{
    uint8_t again[NET_HEADER];
    net_frame_encode(h, again);
    if (memcmp(again, raw, NET_HEADER) != 0) {
        fprintf(stderr, "frame: a %s header decodes but does not encode back\n",
                evt_wire_type_name(h->type));
        abort();
    }
}

static void bare_records(const uint8_t *data, size_t size)
{
    int64_t prev = 0;
    size_t off = 0;
    evt_record e;
    while (off < size) {
        int n = evt_decode(data + off, size - off, prev, &e);
        if (n <= 0) break;
        if ((size_t)n > size - off) abort();   /* read past what it was given */
        off += (size_t)n;
        prev = e.t;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    bare_records(data, size);
    evt_strtab *strs = evt_strtab_new();
    dp_buf in = {0};
    evt_record *recs = NULL;
    size_t count = 0, cap = 0, fed = 0, piece = 1;
    char err[DP_ERRLEN];
    int bad = 0;
    while (!bad && fed < size) {
        size_t k = size - fed < piece ? size - fed : piece;
        dp_buf_append(&in, data + fed, k);
        fed += k;
        piece = piece * 2 + 1;
        for (;;) {
            net_frame h;
            const uint8_t *p;
            int rc = net_frame_next(&in, &evt_wire_proto, &h, &p, err);
            if (rc < 0) { bad = 1; break; }
            if (rc == 0) break;
            if (h.length > EVT_WIRE_MAX_PAYLOAD || h.type < 1 || h.type >= EVT_F_TYPE_COUNT ||
                h.proto != NET_PROTO_STREAM)
                abort();
            header_roundtrip(in.data + in.off, &h);
            evt_wire_type_name(h.type);
            if (h.type == EVT_F_STRINGS) {
                if (evt_wire_each_string(p, h.length, define, strs, err) != 0) bad = 1;
            } else if (h.type == EVT_F_EVENTS) {
                size_t before = count;
                int n = evt_wire_get_events(p, h.length, &recs, &count, &cap, err);
                if (n < 0) bad = 1;
                else if (count > before) roundtrip(recs + before, count - before);  /* recs NULL: none yet */
            }
            dp_buf_consume(&in, NET_HEADER + h.length);
            if (bad) break;
        }
    }
    for (size_t i = 0; i < count; i++) evt_strtab_get(strs, recs[i].str);
    free(recs);
    dp_buf_release(&in);
    evt_strtab_free(strs);
    return 0;
}
