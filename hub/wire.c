/* wire.c — the live stream's vocabulary (see wire.h and docs/wire.md): its frame types
 * and payload codecs. Pure functions over caller buffers; every length read from a peer
 * is checked against what is actually there before use. */
#include "hub/wire.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

static const net_type types[EVT_F_TYPE_COUNT] = {
    NET_COMMON_TYPES,
    [EVT_F_HELLO_TASK] = {"hello_task", NET_LEN_EXACT, 12},
    [EVT_F_HELLO_SUB] = {"hello_sub", NET_LEN_EXACT, 4},
    [EVT_F_PROBE] = {"probe", NET_LEN_EXACT, 16},
    [EVT_F_PROBE_REPLY] = {"probe_reply", NET_LEN_EXACT, 24},
    [EVT_F_READY] = {"ready", NET_LEN_EXACT, 16},
    [EVT_F_STRINGS] = {"strings", NET_LEN_UPTO, EVT_WIRE_MAX_PAYLOAD},
    [EVT_F_EVENTS] = {"events", NET_LEN_UPTO, EVT_WIRE_MAX_PAYLOAD},
    [EVT_F_WELCOME] = {"welcome", NET_LEN_EXACT, 8},
    [EVT_F_STATE_END] = {"state_end", NET_LEN_NONE, 0},
    [EVT_F_DROPPED] = {"dropped", NET_LEN_EXACT, 8},
    [EVT_F_RESUME] = {"resume", NET_LEN_EXACT, 20},
    [EVT_F_ACK] = {"ack", NET_LEN_EXACT, 8},
};

const net_proto evt_wire_proto = {NET_PROTO_STREAM, "event stream", EVT_F_TYPE_COUNT, types};

static const net_frame strings_frame = {.proto = NET_PROTO_STREAM, .type = EVT_F_STRINGS};
static const net_frame events_frame = {.proto = NET_PROTO_STREAM, .type = EVT_F_EVENTS};

const char *evt_wire_type_name(int type) { return net_type_name(&evt_wire_proto, type); }

void evt_wire_put(dp_buf *b, int type, const void *payload, size_t n)
{
    net_frame f = {.proto = NET_PROTO_STREAM, .type = (uint16_t)type};
    net_frame_put(b, &f, payload, n);
}

void evt_wire_put_strings(dp_buf *b, const evt_strtab *t, uint32_t first, uint32_t last)
{
    uint32_t id = first;
    while (id <= last) {
        size_t pos = net_frame_begin(b, &strings_frame), payload = 0;
        for (; id <= last; id++) {
            const char *s = evt_strtab_get(t, id);
            size_t n = strlen(s);
            if (n > EVT_WIRE_MAX_PAYLOAD - 8) n = EVT_WIRE_MAX_PAYLOAD - 8; /* absurd; cut */
            if (payload && payload + 8 + n > EVT_WIRE_MAX_PAYLOAD) break;
            uint8_t *w = dp_buf_reserve(b, 8 + n);
            dp_put_u32(w, id);
            dp_put_u32(w + 4, (uint32_t)n);
            memcpy(w + 8, s, n);
            b->len += 8 + n;
            payload += 8 + n;
        }
        net_frame_end(b, pos);
    }
}

int evt_wire_each_string(const uint8_t *p, size_t n,
                         int (*fn)(void *ctx, uint32_t id, const char *s, size_t len),
                         void *ctx, char *err)
{
    char small[256];
    size_t at = 0;
    while (at < n) {
        if (n - at < 8) return dp_fail(err, DP_EPROTO, "strings frame: truncated entry at byte %zu", at);
        uint32_t id = dp_get_u32(p + at), len = dp_get_u32(p + at + 4);
        at += 8;
        if (len > n - at)
            return dp_fail(err, DP_EPROTO, "strings frame: string %u length %u past the frame end",
                           id, len);
        if (memchr(p + at, 0, len))
            return dp_fail(err, DP_EPROTO, "strings frame: string %u contains a NUL byte", id);
        char *s = len < sizeof small ? small : xmalloc((size_t)len + 1);
        memcpy(s, p + at, len);
        s[len] = 0;
        int rc = fn(ctx, id, s, len);
        if (s != small) free(s);
        if (rc) return rc;
        at += len;
    }
    return 0;
}

void evt_wire_put_events(dp_buf *b, const evt_record *recs, size_t n)
{
    dp_assert("wire: too many records for one frame", n <= EVT_WIRE_MAX_BATCH);
    size_t pos = net_frame_begin(b, &events_frame);
    uint8_t *w = dp_buf_reserve(b, 4 + n * EVT_MAX_ENCODED);
    dp_put_u32(w, (uint32_t)n);
    size_t used = 4;
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        used += evt_encode(&recs[i], prev, w + used);
        prev = recs[i].t;
    }
    b->len += used;
    net_frame_end(b, pos);
}

int evt_wire_get_events(const uint8_t *p, size_t n, evt_record **out, size_t *count,
                        size_t *cap, char *err)
{
    if (n < 4) return dp_fail(err, DP_EPROTO, "events frame: %zu bytes, no count", n);
    uint32_t k = dp_get_u32(p);
    /* Each record takes at least one byte: bound k before allocating for it. */
    if (k > n - 4)
        return dp_fail(err, DP_EPROTO, "events frame: count %u exceeds the %zu payload bytes",
                       k, n - 4);
    if (*count + k > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *count + k) c *= 2;
        *out = xrealloc(*out, c * sizeof **out);
        *cap = c;
    }
    size_t at = 4;
    int64_t prev = 0;
    for (uint32_t i = 0; i < k; i++) {
        evt_record *e = &(*out)[*count + i];
        int used = evt_decode(p + at, n - at, prev, e);
        if (used <= 0)
            return dp_fail(err, DP_EPROTO, "events frame: record %u of %u undecodable at byte %zu",
                           i, k, at);
        if (e->kind == 0 || e->kind >= EVT_KIND_COUNT)
            return dp_fail(err, DP_EPROTO, "events frame: record %u has unknown kind %u", i,
                           e->kind);
        at += (size_t)used;
        prev = e->t;
    }
    if (at != n)
        return dp_fail(err, DP_EPROTO, "events frame: %zu bytes left over after %u records",
                       n - at, k);
    *count += k;
    return (int)k;
}
