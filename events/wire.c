/* wire.c — frame building and parsing, payload codecs and address helpers for the live
 * stream (see wire.h and docs/stream-protocol.md). Pure functions over caller buffers;
 * every length read from a peer is checked against what is actually there before use. */
#include "events/wire.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"

const char *evt_wire_type_name(int type)
{
    static const char *names[] = {
        "?", "hello_task", "hello_sub", "probe", "probe_reply", "ready", "strings",
        "events", "welcome", "state_end", "dropped", "error", "resume", "ack",
        "auth_hello", "auth_challenge", "auth_proof", "auth_ok",
    };
    if (type <= 0 || type > EVT_F_TYPE_MAX) return "unknown";
    return names[type];
}

void evt_buf_release(evt_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *evt_buf_reserve(evt_buf *b, size_t n)
{
    if (b->off && b->off == b->len) b->off = b->len = 0;
    if (b->len + n > b->cap && b->off) {
        /* Compact before growing: the consumed prefix is dead. */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    return b->data + b->len;
}

void evt_buf_append(evt_buf *b, const void *p, size_t n)
{
    if (!n) return;
    memcpy(evt_buf_reserve(b, n), p, n);
    b->len += n;
}

void evt_buf_consume(evt_buf *b, size_t n)
{
    dp_assert("evt_buf: consume beyond pending", n <= b->len - b->off);
    b->off += n;
    if (b->off == b->len) b->off = b->len = 0;
}

size_t evt_frame_begin(evt_buf *b, int type)
{
    uint8_t *h = evt_buf_reserve(b, EVT_WIRE_HEADER);
    evt_put_u32(h, EVT_WIRE_MAGIC);
    evt_put_u16(h + 4, EVT_WIRE_VERSION);
    evt_put_u16(h + 6, (uint16_t)type);
    evt_put_u32(h + 8, 0);
    size_t pos = b->len;
    b->len += EVT_WIRE_HEADER;
    /* Positions are relative to off so that a compaction between begin and end
     * (from evt_buf_reserve) cannot invalidate them. */
    return pos - b->off;
}

void evt_frame_end(evt_buf *b, size_t pos)
{
    size_t at = b->off + pos;
    size_t n = b->len - at - EVT_WIRE_HEADER;
    dp_assert("wire: frame payload over the bound", n <= EVT_WIRE_MAX_PAYLOAD);
    evt_put_u32(b->data + at + 8, (uint32_t)n);
}

void evt_frame_put(evt_buf *b, int type, const void *payload, size_t n)
{
    size_t pos = evt_frame_begin(b, type);
    evt_buf_append(b, payload, n);
    evt_frame_end(b, pos);
}

int evt_frame_next(evt_buf *b, evt_wire_header *h, const uint8_t **payload, char *err)
{
    size_t avail = evt_buf_pending(b);
    if (avail < EVT_WIRE_HEADER) return 0;
    const uint8_t *p = b->data + b->off;
    h->magic = evt_get_u32(p);
    h->version = evt_get_u16(p + 4);
    h->type = evt_get_u16(p + 6);
    h->length = evt_get_u32(p + 8);
    if (h->magic != EVT_WIRE_MAGIC)
        return dp_fail(err, DP_EPROTO, "bad frame magic 0x%08x (want 0x%08x)", h->magic,
                       EVT_WIRE_MAGIC);
    if (h->version != EVT_WIRE_VERSION)
        return dp_fail(err, DP_EPROTO, "unsupported stream version %u (want %u)",
                       h->version, EVT_WIRE_VERSION);
    if (h->type == 0 || h->type > EVT_F_TYPE_MAX)
        return dp_fail(err, DP_EPROTO, "unknown frame type %u", h->type);
    if (h->length > EVT_WIRE_MAX_PAYLOAD)
        return dp_fail(err, DP_EPROTO, "%s frame length %u over the %u-byte bound",
                       evt_wire_type_name(h->type), h->length, EVT_WIRE_MAX_PAYLOAD);
    if (avail < EVT_WIRE_HEADER + (size_t)h->length) return 0;
    *payload = p + EVT_WIRE_HEADER;
    return 1;
}

void evt_wire_put_strings(evt_buf *b, const evt_strtab *t, uint32_t first, uint32_t last)
{
    uint32_t id = first;
    while (id <= last) {
        size_t pos = evt_frame_begin(b, EVT_F_STRINGS), payload = 0;
        for (; id <= last; id++) {
            const char *s = evt_strtab_get(t, id);
            size_t n = strlen(s);
            if (n > EVT_WIRE_MAX_PAYLOAD - 8) n = EVT_WIRE_MAX_PAYLOAD - 8; /* absurd; cut */
            if (payload && payload + 8 + n > EVT_WIRE_MAX_PAYLOAD) break;
            uint8_t *w = evt_buf_reserve(b, 8 + n);
            evt_put_u32(w, id);
            evt_put_u32(w + 4, (uint32_t)n);
            memcpy(w + 8, s, n);
            b->len += 8 + n;
            payload += 8 + n;
        }
        evt_frame_end(b, pos);
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
        uint32_t id = evt_get_u32(p + at), len = evt_get_u32(p + at + 4);
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

void evt_wire_put_events(evt_buf *b, const evt_record *recs, size_t n)
{
    dp_assert("wire: too many records for one frame", n <= EVT_WIRE_MAX_BATCH);
    size_t pos = evt_frame_begin(b, EVT_F_EVENTS);
    uint8_t *w = evt_buf_reserve(b, 4 + n * EVT_MAX_ENCODED);
    evt_put_u32(w, (uint32_t)n);
    size_t used = 4;
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        used += evt_encode(&recs[i], prev, w + used);
        prev = recs[i].t;
    }
    b->len += used;
    evt_frame_end(b, pos);
}

int evt_wire_get_events(const uint8_t *p, size_t n, evt_record **out, size_t *count,
                        size_t *cap, char *err)
{
    if (n < 4) return dp_fail(err, DP_EPROTO, "events frame: %zu bytes, no count", n);
    uint32_t k = evt_get_u32(p);
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

int evt_wire_parse_addr(const char *addr, int passive, struct sockaddr_storage *ss,
                        socklen_t *len, char *err)
{
    char host[256];
    const char *colon, *hs, *he;
    if (!addr || !*addr) return dp_fail(err, DP_EINVAL, "empty address (want host:port)");
    if (addr[0] == '[') {
        he = strchr(addr, ']');
        if (!he || he[1] != ':')
            return dp_fail(err, DP_EINVAL, "bad address '%s' (want [v6addr]:port)", addr);
        hs = addr + 1;
        colon = he + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return dp_fail(err, DP_EINVAL, "bad address '%s' (want host:port)", addr);
        hs = addr;
        he = colon;
    }
    if ((size_t)(he - hs) >= sizeof host)
        return dp_fail(err, DP_EINVAL, "bad address '%s': host name too long", addr);
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = 0;
    if (!*host) snprintf(host, sizeof host, "127.0.0.1");
    long long port;
    if (dp_parse_int(colon + 1, &port) || port < 0 || port > 65535 || (!passive && port == 0))
        return dp_fail(err, DP_EINVAL, "bad address '%s': port '%s' is not 1..65535", addr,
                       colon + 1);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%lld", port);
    int rc = getaddrinfo(host, portbuf, &hints, &res);
    if (rc || !res)
        return dp_fail(err, DP_EINVAL, "bad address '%s': %s", addr,
                       rc ? gai_strerror(rc) : "no result");
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void evt_wire_addr_text(const struct sockaddr *sa, char *buf, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(buf, n, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(buf, n, "[%s]:%d", host, port);
    } else {
        snprintf(buf, n, "?");
    }
}

int evt_wire_socket(int family, char *err)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        dp_fail(err, DP_EIO, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}
