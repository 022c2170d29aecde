/* trace.c — the trace writer (format in docs/trace-format.md): a header with the run's
 * metadata, then zstd blocks of encoded events, each checksummed and written + fflush'd
 * as soon as it is finished (so a crash loses at most the block being filled), and at
 * close an index (block table, final metadata, the whole string table) and a fixed-size
 * footer pointing at it. String definitions travel in the block where each string is
 * first interned. Single-threaded; the reader is in trace_read.c. */
#include "events/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/dp.h"
#include "events/trace_internal.h"

/* ---- writer ------------------------------------------------------------------------- */

struct trace_writer {
    FILE *f;
    char *path;
    evt_strtab *strs;
    uint32_t defined;      /* strings 1..defined are queued or written */
    dp_buf defs, ev, raw, comp;
    uint32_t blk_n, blk_nstr;
    int64_t blk_first_t, blk_tmin, blk_tmax, blk_prev_t;
    uint64_t off;
    blk *blocks;
    size_t nblocks, blocks_cap;
    uint64_t events;
    char *final_meta;
    ZSTD_CCtx *cctx;
    int failed;            /* a write failed: later calls fail fast */
};

trace_writer *trace_writer_open(const char *path, const char *metadata_json, char *err)
{
    const char *meta = metadata_json ? metadata_json : "{}";
    size_t mlen = strlen(meta);
    if (mlen > MAX_META) {
        dp_fail(err, DP_EINVAL, "%s: metadata too large (%zu bytes)", path, mlen);
        return NULL;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    uint8_t hdr[HDR_FIXED], tail[4];
    memcpy(hdr, HDR_MAGIC, 8);
    dp_put_u32(hdr + 8, TRACE_VERSION);
    dp_put_u32(hdr + 12, (uint32_t)mlen);
    uint32_t c = (uint32_t)crc32(crc(hdr, sizeof hdr), (const Bytef *)meta, (uInt)mlen);
    dp_put_u32(tail, c);
    if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr || fwrite(meta, 1, mlen, f) != mlen ||
        fwrite(tail, 1, 4, f) != 4 || fflush(f) != 0) {
        dp_fail(err, DP_EIO, "%s: writing header: %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    trace_writer *w = xcalloc(1, sizeof *w);
    w->f = f;
    w->path = xstrdup(path);
    w->strs = evt_strtab_new();
    w->off = HDR_FIXED + mlen + 4;
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx) {
        fprintf(stderr, "downpour: out of memory creating a zstd context\n");
        abort();
    }
    return w;
}

uint32_t trace_writer_intern(trace_writer *w, const char *s)
{
    if (!s || !*s) return 0;
    size_t len = strlen(s);
    char *cut = NULL;
    if (len > MAX_STRING) {           /* readers refuse longer strings: cut, don't lose */
        cut = xmalloc(MAX_STRING + 1);
        memcpy(cut, s, MAX_STRING);
        cut[MAX_STRING] = '\0';
        s = cut;
    }
    uint32_t id = evt_strtab_intern(w->strs, s);
    free(cut);
    while (w->defined < evt_strtab_count(w->strs)) {
        uint32_t d = ++w->defined;
        const char *str = evt_strtab_get(w->strs, d);
        size_t n = strlen(str);
        buf_varint(&w->defs, d);
        buf_varint(&w->defs, n);
        dp_buf_append(&w->defs, str, n);
        w->blk_nstr++;
    }
    if (w->defs.len > FLUSH_DEFS_BYTES) trace_writer_flush(w, NULL);
    return id;
}

int trace_writer_flush(trace_writer *w, char *err)
{
    if (w->failed) return dp_fail(err, DP_EIO, "%s: an earlier write failed", w->path);
    if (w->blk_n == 0 && w->blk_nstr == 0) return DP_OK;
    w->raw.len = 0;
    dp_buf_append(&w->raw, w->defs.data, w->defs.len);
    dp_buf_append(&w->raw, w->ev.data, w->ev.len);
    size_t bound = ZSTD_compressBound(w->raw.len);
    w->comp.len = 0;
    dp_buf_reserve(&w->comp, BLK_HDR + bound);
    size_t clen = ZSTD_compressCCtx(w->cctx, w->comp.data + BLK_HDR, bound, w->raw.data,
                                    w->raw.len, ZSTD_LEVEL);
    if (ZSTD_isError(clen)) {
        w->failed = 1;
        return dp_fail(err, DP_EIO, "%s: zstd: %s", w->path, ZSTD_getErrorName(clen));
    }
    int64_t tmin = w->blk_n ? w->blk_tmin : 0, tmax = w->blk_n ? w->blk_tmax : 0;
    uint8_t *h = w->comp.data;
    memcpy(h, BLK_MAGIC, 4);
    dp_put_u32(h + 4, 0);
    dp_put_u32(h + 8, (uint32_t)clen);
    dp_put_u32(h + 12, (uint32_t)w->raw.len);
    dp_put_u32(h + 16, w->blk_n);
    dp_put_u32(h + 20, w->blk_nstr);
    dp_put_u64(h + 24, (uint64_t)tmin);
    dp_put_u64(h + 32, (uint64_t)tmax);
    dp_put_u32(h + 40, crc(h + BLK_HDR, clen));
    dp_put_u32(h + 44, crc(h, 44));
    size_t total = BLK_HDR + clen;
    if (fwrite(h, 1, total, w->f) != total || fflush(w->f) != 0) {
        w->failed = 1;
        return dp_fail(err, DP_EIO, "%s: writing block: %s", w->path, strerror(errno));
    }
    if (w->nblocks == w->blocks_cap) {
        w->blocks_cap = w->blocks_cap ? 2 * w->blocks_cap : 64;
        w->blocks = xrealloc(w->blocks, w->blocks_cap * sizeof *w->blocks);
    }
    w->blocks[w->nblocks++] = (blk){.off = w->off, .comp = (uint32_t)clen,
                                    .raw = (uint32_t)w->raw.len, .n = w->blk_n,
                                    .nstr = w->blk_nstr, .tmin = tmin, .tmax = tmax};
    w->off += total;
    w->defs.len = w->ev.len = 0;
    w->blk_n = w->blk_nstr = 0;
    w->blk_prev_t = 0;
    return DP_OK;
}

int trace_writer_add(trace_writer *w, const evt_record *e)
{
    if (w->failed) return DP_EIO;
    if (w->blk_n > 0 && e->t > w->blk_first_t &&
        (uint64_t)e->t - (uint64_t)w->blk_first_t >= (uint64_t)FLUSH_SPAN_NS) {
        int rc = trace_writer_flush(w, NULL);
        if (rc) return rc;
    }
    if (w->blk_n == 0) {
        w->blk_first_t = w->blk_tmin = w->blk_tmax = e->t;
        w->blk_prev_t = 0;
    }
    dp_buf_reserve(&w->ev, EVT_MAX_ENCODED);
    w->ev.len += evt_encode(e, w->blk_prev_t, w->ev.data + w->ev.len);
    w->blk_prev_t = e->t;
    if (e->t < w->blk_tmin) w->blk_tmin = e->t;
    if (e->t > w->blk_tmax) w->blk_tmax = e->t;
    w->blk_n++;
    w->events++;
    if (w->blk_n >= FLUSH_EVENTS) return trace_writer_flush(w, NULL);
    return DP_OK;
}

void trace_writer_set_final_metadata(trace_writer *w, const char *json)
{
    free(w->final_meta);
    w->final_meta = json && strlen(json) <= MAX_META ? xstrdup(json) : NULL;
}

uint64_t trace_writer_events(const trace_writer *w)
{
    return w ? w->events : 0;
}

/* Index payload: blocks, final metadata, the whole string table. */
static void build_index(const trace_writer *w, dp_buf *b)
{
    buf_varint(b, w->nblocks);
    uint64_t prev = 0;
    for (size_t i = 0; i < w->nblocks; i++) {
        const blk *k = &w->blocks[i];
        buf_varint(b, k->off - prev);
        prev = k->off;
        buf_varint(b, k->comp);
        buf_varint(b, k->raw);
        buf_varint(b, k->n);
        buf_varint(b, k->nstr);
        buf_varint(b, evt_zigzag(k->tmin));
        buf_varint(b, evt_zigzag((int64_t)((uint64_t)k->tmax - (uint64_t)k->tmin)));
    }
    if (w->final_meta) {
        size_t n = strlen(w->final_meta);
        buf_varint(b, 1);
        buf_varint(b, n);
        dp_buf_append(b, w->final_meta, n);
    } else {
        buf_varint(b, 0);
    }
    uint32_t ns = evt_strtab_count(w->strs);
    buf_varint(b, ns);
    for (uint32_t id = 1; id <= ns; id++) {
        const char *s = evt_strtab_get(w->strs, id);
        size_t n = strlen(s);
        buf_varint(b, n);
        dp_buf_append(b, s, n);
    }
}

int trace_writer_close(trace_writer *w, char *err)
{
    if (!w) return DP_OK;
    int rc = trace_writer_flush(w, err);
    dp_buf idx = {0}, comp = {0};
    if (rc == DP_OK) {
        build_index(w, &idx);
        size_t bound = ZSTD_compressBound(idx.len);
        dp_buf_reserve(&comp, 4 + bound + FOOTER);
        memcpy(comp.data, IDX_MAGIC, 4);
        size_t clen = ZSTD_compressCCtx(w->cctx, comp.data + 4, bound, idx.data, idx.len,
                                        ZSTD_LEVEL);
        if (ZSTD_isError(clen) || idx.len > MAX_INDEX_RAW) {
            rc = dp_fail(err, DP_EIO, "%s: index too large to write", w->path);
        } else {
            uint8_t *ft = comp.data + 4 + clen;
            dp_put_u64(ft, w->off);
            dp_put_u32(ft + 8, (uint32_t)clen);
            dp_put_u32(ft + 12, (uint32_t)idx.len);
            dp_put_u32(ft + 16, crc(comp.data + 4, clen));
            dp_put_u32(ft + 20, (uint32_t)w->nblocks);
            dp_put_u64(ft + 24, w->events);
            memcpy(ft + 32, END_MAGIC, 8);
            size_t total = 4 + clen + FOOTER;
            if (fwrite(comp.data, 1, total, w->f) != total || fflush(w->f) != 0)
                rc = dp_fail(err, DP_EIO, "%s: writing index: %s", w->path, strerror(errno));
        }
    }
    if (fclose(w->f) != 0 && rc == DP_OK)
        rc = dp_fail(err, DP_EIO, "%s: close: %s", w->path, strerror(errno));
    free(idx.data);
    free(comp.data);
    free(w->defs.data);
    free(w->ev.data);
    free(w->raw.data);
    free(w->comp.data);
    free(w->blocks);
    free(w->final_meta);
    free(w->path);
    evt_strtab_free(w->strs);
    ZSTD_freeCCtx(w->cctx);
    free(w);
    return rc;
}
