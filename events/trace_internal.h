/* trace_internal.h — private to events/trace.c (writer) and events/trace_read.c
 * (reader): the file format's constants and limits (docs/trace-format.md), the block
 * index entry, and little-endian / varint helpers. Not for use outside events/. */
#ifndef EVENTS_TRACE_INTERNAL_H
#define EVENTS_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/buf.h"
#include "common/dp.h"
#include "events/event.h"

#define TRACE_VERSION 1
#define HDR_FIXED 16                        /* magic + version + metadata length */
#define BLK_HDR 48
#define FOOTER 40
#define MAX_META (16u << 20)                /* metadata JSON */
#define MAX_BLOCK_RAW (64u << 20)           /* a block, compressed or not */
#define MAX_BLOCK_EVENTS (1u << 20)
#define MAX_INDEX_RAW (256u << 20)
#define MAX_STRING (1u << 20)               /* longer strings are cut by the writer */
#define MAX_STRINGS (1u << 24)
#define FLUSH_EVENTS 4096
#define FLUSH_SPAN_NS 250000000LL
#define FLUSH_DEFS_BYTES (16u << 20)
#define ZSTD_LEVEL 3

#define HDR_MAGIC ((const uint8_t *)"DPTRACE\0")
#define BLK_MAGIC ((const uint8_t *)"DPBK")
#define IDX_MAGIC ((const uint8_t *)"DPIX")
#define END_MAGIC ((const uint8_t *)"DPTREND\0")

/* ---- helpers (little-endian integers: common/dp.h; varints: events/event.h) ---------- */

static inline uint32_t crc(const void *p, size_t n)
{
    return (uint32_t)crc32(0L, (const Bytef *)p, (uInt)n);
}

static inline void buf_varint(dp_buf *b, uint64_t v)
{
    uint8_t *w = dp_buf_reserve(b, 10);
    b->len += (size_t)(evt_varint_put(w, v) - w);
}

typedef struct blk {
    uint64_t off;          /* file offset of the block header */
    uint32_t comp, raw;    /* payload sizes */
    uint32_t n, nstr;      /* events, string definitions */
    int64_t tmin, tmax;
    int64_t tmax_prefix;   /* reader: max tmax over this and all earlier blocks */
    int bad;               /* reader: failed to decode after open; skipped */
} blk;

#endif
