/* buf.c — the growable byte buffer (buf.h). */
#include "net/buf.h"

#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

void net_buf_release(net_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *net_buf_reserve(net_buf *b, size_t n)
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

void net_buf_append(net_buf *b, const void *p, size_t n)
{
    if (!n) return;
    memcpy(net_buf_reserve(b, n), p, n);
    b->len += n;
}

void net_buf_consume(net_buf *b, size_t n)
{
    dp_assert("net_buf: consume beyond pending", n <= b->len - b->off);
    b->off += n;
    if (b->off == b->len) b->off = b->len = 0;
}
