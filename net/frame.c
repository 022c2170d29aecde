/* frame.c — the frame codec (frame.h): one header layout, validated against the
 * protocol's type table. */
#include "net/frame.h"

#include <string.h>

#include "common/dp.h"

const char *net_type_name(const net_proto *p, int type)
{
    if (type <= 0 || type >= p->ntypes || !p->types[type].name) return "?";
    return p->types[type].name;
}

void net_frame_encode(const net_frame *f, uint8_t out[NET_HEADER])
{
    dp_put_u32(out, NET_MAGIC);
    out[4] = NET_VERSION;
    out[5] = f->proto;
    dp_put_u16(out + 6, f->type);
    dp_put_u32(out + 8, f->length);
    dp_put_u32(out + 12, f->id);
    dp_put_u64(out + 16, (uint64_t)f->arg0);
    dp_put_u64(out + 24, (uint64_t)f->arg1);
}

int net_frame_decode(const uint8_t in[NET_HEADER], const net_proto *p, net_frame *f, char *err)
{
    uint32_t magic = dp_get_u32(in);
    if (magic != NET_MAGIC) return dp_fail(err, DP_EPROTO, "bad magic 0x%08x (not a Downpour peer)", magic);
    if (in[4] != NET_VERSION) return dp_fail(err, DP_EPROTO, "frame format version %u", in[4]);
    f->proto = in[5];
    f->type = dp_get_u16(in + 6);
    f->length = dp_get_u32(in + 8);
    f->id = dp_get_u32(in + 12);
    f->arg0 = (int64_t)dp_get_u64(in + 16);
    f->arg1 = (int64_t)dp_get_u64(in + 24);
    if (f->proto != p->id)
        return dp_fail(err, DP_EPROTO, "a frame of protocol %u on a connection of the %s protocol", f->proto, p->name);
    if (f->type == 0 || f->type >= p->ntypes || !p->types[f->type].name)
        return dp_fail(err, DP_EPROTO, "unknown %s frame type %u", p->name, f->type);
    const net_type *t = &p->types[f->type];
    int ok;
    switch (t->rule) {
    case NET_LEN_NONE: ok = f->length == 0; break;
    case NET_LEN_EXACT: ok = f->length == t->len; break;
    case NET_LEN_UPTO: ok = f->length <= t->len; break;
    case NET_LEN_NONE_OR: ok = f->length == 0 || f->length == t->len; break;
    case NET_LEN_FLOATS: ok = f->length <= t->len && f->length % 4 == 0; break;
    default: ok = 0;
    }
    if (!ok || f->length > NET_MAX_PAYLOAD)
        return dp_fail(err, DP_EPROTO, "%s carries %u payload bytes (%s)", t->name, f->length,
                       t->rule == NET_LEN_FLOATS && f->length <= t->len ? "not whole floats" : "outside its bound");
    return DP_OK;
}

size_t net_frame_begin(dp_buf *b, const net_frame *f)
{
    net_frame h = *f;
    h.length = 0;
    net_frame_encode(&h, dp_buf_reserve(b, NET_HEADER));
    size_t pos = b->len;
    b->len += NET_HEADER;
    /* Relative to off, so that a compaction between begin and end cannot move it. */
    return pos - b->off;
}

void net_frame_end(dp_buf *b, size_t pos)
{
    size_t at = b->off + pos;
    size_t n = b->len - at - NET_HEADER;
    dp_assert("net: frame payload over the bound", n <= NET_MAX_PAYLOAD);
    dp_put_u32(b->data + at + 8, (uint32_t)n);
}

void net_frame_put(dp_buf *b, const net_frame *f, const void *payload, size_t n)
{
    size_t pos = net_frame_begin(b, f);
    dp_buf_append(b, payload, n);
    net_frame_end(b, pos);
}

int net_frame_next(dp_buf *b, const net_proto *p, net_frame *f, const uint8_t **payload, char *err)
{
    size_t avail = dp_buf_pending(b);
    if (avail < NET_HEADER) return 0;
    const uint8_t *h = b->data + b->off;
    int rc = net_frame_decode(h, p, f, err);
    if (rc) return rc;
    if (avail - NET_HEADER < f->length) return 0;
    *payload = h + NET_HEADER;
    return 1;
}
