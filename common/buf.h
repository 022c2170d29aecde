/* buf.h — the one growable byte buffer (connections' queues and frame building, trace
 * blocks and indexes): data[off, len) is unread / unsent. Embedded by value;
 * zero-initialised is empty. */
#ifndef DP_BUF_H
#define DP_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_buf {
    uint8_t *data;
    size_t len, cap, off;
} dp_buf;

void dp_buf_release(dp_buf *b);                    /* frees data; b reusable */
static inline size_t dp_buf_pending(const dp_buf *b) { return b->len - b->off; }
/* Makes room for n more bytes at data + len (compacting consumed bytes first);
 * returns the write pointer. */
uint8_t *dp_buf_reserve(dp_buf *b, size_t n);
void dp_buf_append(dp_buf *b, const void *p, size_t n);
/* Marks n pending bytes consumed; resets to empty when all are. */
void dp_buf_consume(dp_buf *b, size_t n);
/* Empties b, keeping its memory. */
static inline void dp_buf_clear(dp_buf *b) { b->off = b->len = 0; }

#endif
