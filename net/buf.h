/* buf.h — the growable byte buffer every connection and frame builder uses: data[off,
 * len) is unread / unsent. Embedded by value; zero-initialised is empty. */
#ifndef NET_BUF_H
#define NET_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct net_buf {
    uint8_t *data;
    size_t len, cap, off;
} net_buf;

void net_buf_release(net_buf *b);                    /* frees data; b reusable */
static inline size_t net_buf_pending(const net_buf *b) { return b->len - b->off; }
/* Makes room for n more bytes at data + len (compacting consumed bytes first);
 * returns the write pointer. */
uint8_t *net_buf_reserve(net_buf *b, size_t n);
void net_buf_append(net_buf *b, const void *p, size_t n);
/* Marks n pending bytes consumed; resets to empty when all are. */
void net_buf_consume(net_buf *b, size_t n);
/* Empties b, keeping its memory. */
static inline void net_buf_clear(net_buf *b) { b->off = b->len = 0; }

#endif
