/* buf.c — the growable byte buffer (buf.h). */
#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

void dp_buf_release(dp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *dp_buf_reserve(dp_buf *b, size_t n)
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

void dp_buf_append(dp_buf *b, const void *p, size_t n)
{
    if (!n) return;
    memcpy(dp_buf_reserve(b, n), p, n);
    b->len += n;
}

void dp_buf_consume(dp_buf *b, size_t n)
{
    dp_assert("dp_buf: consume beyond pending", n <= b->len - b->off);
    b->off += n;
    if (b->off == b->len) b->off = b->len = 0;
}
