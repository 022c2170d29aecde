/* trace_read.c — the trace reader (format in docs/trace-format.md). It trusts the
 * footer's index when the footer, the index checksum and every entry check out, and
 * otherwise rebuilds the index by scanning blocks from the header on, resynchronising on
 * block magic + header checksum after a damaged header. Every block's checksum is
 * verified at open, so damage is known (and reported with its offset) before the first
 * event is read. Every length read from the file is bounded before it is used to
 * allocate. trace_reader_state_at (declared in state.h) lives here, next to the block
 * index it needs. Single-threaded. */
#include "events/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zstd.h>

#include "common/dp.h"
#include "events/state.h"
#include "events/trace_internal.h"

/* ---- reader ------------------------------------------------------------------------- */

/* One decoded block's events, ordered by (t, arrival). */
typedef struct decoded {
    evt_record *ev;
    size_t n, cap;
    size_t blk;            /* which block, SIZE_MAX none */
} decoded;

struct trace_reader {
    FILE *f;
    char *path;
    uint64_t size, data_start;
    char *meta, *final_meta;
    evt_strtab *strs;
    blk *blocks;
    size_t nblocks, blocks_cap;
    uint64_t count;
    int64_t t0, t1;
    /* damage: the first problem in full, how many in all */
    char damage_first[DP_ERRLEN];
    char damage_line[DP_ERRLEN + 64];
    int64_t damage_off;
    int damage_n;
    /* scratch for reading and decompressing */
    dp_buf cbuf, rbuf;
    evt_record *tmp;       /* merge-sort scratch */
    size_t tmp_cap;
    ZSTD_DCtx *dctx;
    /* next() cursor */
    decoded cur;
    size_t cur_pos, next_blk;
    /* state_at(): snapshots before every TRACE_STATE_SNAPSHOT_BLOCKS-th block, and the
     * last answer (its position: all events before (cache_blk, cache_pos)) */
    decoded rep;
    evt_state *snaps;
    size_t nsnaps, snap_every, snap_bytes, snap_budget;
    int snaps_built;
    evt_state cache;
    size_t cache_blk, cache_pos;
    int cache_valid;
};

static void damage(trace_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void damage(trace_reader *r, uint64_t off, const char *fmt, ...)
{
    if (r->damage_n++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->damage_first, sizeof r->damage_first, fmt, ap);
        va_end(ap);
        r->damage_off = (int64_t)off;
    }
    if (r->damage_n == 1)
        snprintf(r->damage_line, sizeof r->damage_line, "%s", r->damage_first);
    else
        snprintf(r->damage_line, sizeof r->damage_line, "%s (and %d more problem%s)",
                 r->damage_first, r->damage_n - 1, r->damage_n > 2 ? "s" : "");
}

static int read_at(trace_reader *r, uint64_t off, void *dst, size_t n)
{
    if (off > r->size || n > r->size - off) return -1;
    if (fseeko(r->f, (off_t)off, SEEK_SET) != 0) return -1;
    return fread(dst, 1, n, r->f) == n ? 0 : -1;
}

/* Defines string id in the reader's table. Ids already known are ignored (the index and
 * the blocks both carry them); a gap left by a lost block is filled with "". */
static int define_string(trace_reader *r, uint64_t id, const uint8_t *s, size_t len)
{
    uint32_t have = evt_strtab_count(r->strs);
    if (id == 0 || id > MAX_STRINGS || len > MAX_STRING) return -1;
    if (id <= have) return 0;
    while (evt_strtab_count(r->strs) + 1 < id)
        evt_strtab_define(r->strs, evt_strtab_count(r->strs) + 1, "", 0);
    return evt_strtab_define(r->strs, (uint32_t)id, (const char *)s, len) ? -1 : 0;
}

/* Parses a 48-byte block header; 0 when magic, header checksum and bounds hold. */
static int parse_blk_hdr(const uint8_t *h, uint64_t off, blk *k)
{
    if (memcmp(h, BLK_MAGIC, 4) != 0 || dp_get_u32(h + 44) != crc(h, 44)) return -1;
    k->off = off;
    k->comp = dp_get_u32(h + 8);
    k->raw = dp_get_u32(h + 12);
    k->n = dp_get_u32(h + 16);
    k->nstr = dp_get_u32(h + 20);
    k->tmin = (int64_t)dp_get_u64(h + 24);
    k->tmax = (int64_t)dp_get_u64(h + 32);
    k->bad = 0;
    if (k->comp > MAX_BLOCK_RAW || k->raw > MAX_BLOCK_RAW || k->n > MAX_BLOCK_EVENTS ||
        k->n > k->raw || k->nstr > k->raw || k->tmin > k->tmax)
        return -1;
    return 0;
}

/* Reads block k's compressed payload into r->cbuf and checks its CRC. */
static int load_payload(trace_reader *r, const blk *k, const uint8_t *hdr)
{
    r->cbuf.len = 0;
    dp_buf_reserve(&r->cbuf, k->comp);
    if (read_at(r, k->off + BLK_HDR, r->cbuf.data, k->comp)) return -1;
    r->cbuf.len = k->comp;
    return crc(r->cbuf.data, k->comp) == dp_get_u32(hdr + 40) ? 0 : -2;
}

/* Decompresses r->cbuf (block k) into r->rbuf; 0 or -1 with why filled. */
static int inflate_block(trace_reader *r, const blk *k, const char **why)
{
    r->rbuf.len = 0;
    dp_buf_reserve(&r->rbuf, k->raw ? k->raw : 1);
    size_t n = ZSTD_decompressDCtx(r->dctx, r->rbuf.data, k->raw, r->cbuf.data, r->cbuf.len);
    if (ZSTD_isError(n)) {
        *why = ZSTD_getErrorName(n);
        return -1;
    }
    if (n != k->raw) {
        *why = "size differs from its header";
        return -1;
    }
    r->rbuf.len = n;
    return 0;
}

/* Walks the string definitions at the start of r->rbuf; defines them when `define`.
 * Returns the offset of the first event, or -1 when malformed. */
static long walk_strings(trace_reader *r, const blk *k, int define)
{
    size_t pos = 0, len = r->rbuf.len;
    for (uint32_t i = 0; i < k->nstr; i++) {
        uint64_t id, n;
        if (evt_varint_get(r->rbuf.data, len, &pos, &id) || evt_varint_get(r->rbuf.data, len, &pos, &n) ||
            n > len - pos)
            return -1;
        if (define && define_string(r, id, r->rbuf.data + pos, (size_t)n)) return -1;
        pos += (size_t)n;
    }
    return (long)pos;
}

/* Stable sort by time (merge sort), only when the block is not already ordered. */
static void sort_events(trace_reader *r, evt_record *ev, size_t n)
{
    size_t i = 1;
    while (i < n && ev[i - 1].t <= ev[i].t) i++;
    if (i >= n) return;
    if (r->tmp_cap < n) {
        r->tmp = xrealloc(r->tmp, n * sizeof *r->tmp);
        r->tmp_cap = n;
    }
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) r->tmp[o++] = ev[b].t < ev[a].t ? ev[b++] : ev[a++];
            while (a < mid) r->tmp[o++] = ev[a++];
            while (b < hi) r->tmp[o++] = ev[b++];
        }
        memcpy(ev, r->tmp, n * sizeof *ev);
    }
}

/* Decodes block bi into d. A failure marks the block bad, reports it and returns -1. */
static int decode_block(trace_reader *r, size_t bi, decoded *d)
{
    blk *k = &r->blocks[bi];
    uint8_t hdr[BLK_HDR];
    const char *why = "unreadable";
    d->n = 0;
    d->blk = SIZE_MAX;
    if (k->bad) return -1;
    blk chk;
    if (read_at(r, k->off, hdr, BLK_HDR) || parse_blk_hdr(hdr, k->off, &chk) ||
        chk.comp != k->comp) {
        why = "header changed or unreadable";
        goto fail;
    }
    int lp = load_payload(r, k, hdr);
    if (lp) {
        why = lp == -2 ? "checksum mismatch" : "unreadable";
        goto fail;
    }
    if (inflate_block(r, k, &why)) goto fail;
    long pos = walk_strings(r, k, 0);
    if (pos < 0) {
        why = "malformed string definitions";
        goto fail;
    }
    if (d->cap < k->n) {
        d->ev = xrealloc(d->ev, (size_t)k->n * sizeof *d->ev);
        d->cap = k->n;
    }
    size_t p = (size_t)pos;
    int64_t prev = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        int used = evt_decode(r->rbuf.data + p, r->rbuf.len - p, prev, &d->ev[i]);
        if (used < 0) {
            why = "malformed event";
            goto fail;
        }
        /* the writer's block bounds hold every event: readers may subtract the trace's
         * first time from any event's without overflow (the span is checked at open) */
        if (d->ev[i].t < k->tmin || d->ev[i].t > k->tmax) {
            why = "event time outside the block's time range";
            goto fail;
        }
        p += (size_t)used;
        prev = d->ev[i].t;
    }
    if (p != r->rbuf.len) {
        why = "trailing bytes";
        goto fail;
    }
    sort_events(r, d->ev, k->n);
    d->n = k->n;
    d->blk = bi;
    return 0;
fail:
    k->bad = 1;
    damage(r, k->off, "block at offset %" PRIu64 ": %s; skipped", k->off, why);
    d->n = 0;
    return -1;
}

static void add_block(trace_reader *r, const blk *k)
{
    if (r->nblocks == r->blocks_cap) {
        r->blocks_cap = r->blocks_cap ? 2 * r->blocks_cap : 64;
        r->blocks = xrealloc(r->blocks, r->blocks_cap * sizeof *r->blocks);
    }
    r->blocks[r->nblocks++] = *k;
}

/* Loads the index named by the footer. 1 = no footer at all, 0 = loaded, -1 = footer
 * present but unusable (reported). Blocks are checked afterwards by verify_blocks. */
static int load_index(trace_reader *r)
{
    uint8_t ft[FOOTER];
    if (r->size < r->data_start + FOOTER + 4 || read_at(r, r->size - FOOTER, ft, FOOTER) ||
        memcmp(ft + 32, END_MAGIC, 8) != 0)
        return 1;
    uint64_t ioff = dp_get_u64(ft);
    uint32_t icomp = dp_get_u32(ft + 8), iraw = dp_get_u32(ft + 12), icrc = dp_get_u32(ft + 16);
    uint32_t nblk = dp_get_u32(ft + 20);
    const char *why = NULL;
    dp_buf raw = {0};
    uint8_t mg[4];
    size_t pos = 0;
    if (ioff < r->data_start || ioff > r->size || (uint64_t)icomp + 4 + FOOTER != r->size - ioff ||
        iraw > MAX_INDEX_RAW || nblk > (ioff - r->data_start) / BLK_HDR) {
        why = "footer inconsistent with the file size";
        ioff = r->size - FOOTER;
        goto fail;
    }
    r->cbuf.len = 0;
    dp_buf_reserve(&r->cbuf, icomp);
    if (read_at(r, ioff, mg, 4) || memcmp(mg, IDX_MAGIC, 4) != 0 ||
        read_at(r, ioff + 4, r->cbuf.data, icomp)) {
        why = "index magic missing";
        goto fail;
    }
    if (crc(r->cbuf.data, icomp) != icrc) {
        why = "index checksum mismatch";
        goto fail;
    }
    dp_buf_reserve(&raw, iraw ? iraw : 1);
    size_t n = ZSTD_decompressDCtx(r->dctx, raw.data, iraw, r->cbuf.data, icomp);
    if (ZSTD_isError(n) || n != iraw) {
        why = "index does not decompress";
        goto fail;
    }
    uint64_t cnt, prev = 0, v[7];
    if (evt_varint_get(raw.data, iraw, &pos, &cnt) || cnt != nblk) {
        why = "index block count mismatch";
        goto fail;
    }
    for (uint64_t i = 0; i < cnt; i++) {
        for (int j = 0; j < 7; j++)
            if (evt_varint_get(raw.data, iraw, &pos, &v[j])) {
                why = "index truncated";
                goto fail;
            }
        blk k = {.off = prev + v[0], .comp = (uint32_t)v[1], .raw = (uint32_t)v[2],
                 .n = (uint32_t)v[3], .nstr = (uint32_t)v[4], .tmin = evt_unzigzag(v[5])};
        k.tmax = (int64_t)((uint64_t)k.tmin + (uint64_t)evt_unzigzag(v[6]));
        if (v[0] > ioff || k.off < r->data_start || (i > 0 && v[0] == 0) ||
            v[1] > MAX_BLOCK_RAW || v[2] > MAX_BLOCK_RAW || v[3] > MAX_BLOCK_EVENTS ||
            v[4] > MAX_BLOCK_RAW || k.off + BLK_HDR + k.comp > ioff || k.tmax < k.tmin) {
            why = "index entry out of range";
            goto fail;
        }
        prev = k.off;
        add_block(r, &k);
        if (i > 0 && k.off < r->blocks[i - 1].off + BLK_HDR + r->blocks[i - 1].comp) {
            why = "index entries overlap";
            goto fail;
        }
    }
    uint64_t has_final, mlen, ns;
    if (evt_varint_get(raw.data, iraw, &pos, &has_final)) {
        why = "index truncated";
        goto fail;
    }
    if (has_final) {
        if (evt_varint_get(raw.data, iraw, &pos, &mlen) || mlen > MAX_META || mlen > iraw - pos) {
            why = "bad final metadata";
            goto fail;
        }
        free(r->final_meta);
        r->final_meta = xmalloc((size_t)mlen + 1);
        memcpy(r->final_meta, raw.data + pos, (size_t)mlen);
        r->final_meta[mlen] = '\0';
        pos += (size_t)mlen;
    }
    if (evt_varint_get(raw.data, iraw, &pos, &ns) || ns > MAX_STRINGS) {
        why = "bad string table";
        goto fail;
    }
    for (uint64_t id = 1; id <= ns; id++) {
        uint64_t len;
        if (evt_varint_get(raw.data, iraw, &pos, &len) || len > iraw - pos ||
            define_string(r, id, raw.data + pos, (size_t)len)) {
            why = "bad string table";
            goto fail;
        }
        pos += (size_t)len;
    }
    free(raw.data);
    return 0;
fail:
    free(raw.data);
    r->nblocks = 0;
    free(r->final_meta);
    r->final_meta = NULL;
    evt_strtab_free(r->strs);
    r->strs = evt_strtab_new();
    damage(r, ioff, "index at offset %" PRIu64 ": %s; rebuilt by scanning", ioff, why);
    return -1;
}

/* Checks every indexed block's header and checksum; drops (and reports) bad ones. */
static void verify_blocks(trace_reader *r)
{
    size_t out = 0;
    for (size_t i = 0; i < r->nblocks; i++) {
        blk k = r->blocks[i], chk;
        uint8_t hdr[BLK_HDR];
        if (read_at(r, k.off, hdr, BLK_HDR) || parse_blk_hdr(hdr, k.off, &chk) ||
            chk.comp != k.comp || chk.raw != k.raw || chk.n != k.n) {
            damage(r, k.off, "block at offset %" PRIu64 ": bad block header; skipped", k.off);
            continue;
        }
        if (load_payload(r, &k, hdr)) {
            damage(r, k.off, "block at offset %" PRIu64 ": checksum mismatch; skipped", k.off);
            continue;
        }
        r->blocks[out++] = k;
    }
    r->nblocks = out;
}

/* Finds the next offset >= from holding a valid block header (magic and header CRC);
 * 0 and *found, or -1. Index magic is not looked for: inside damaged bytes it could be
 * a false match that would end the scan early. */
static int resync(trace_reader *r, uint64_t from, uint64_t *found)
{
    enum { CHUNK = 1 << 16 };
    uint8_t *chunk = xmalloc(CHUNK + BLK_HDR);
    int rc = -1;
    for (uint64_t base = from; base + BLK_HDR <= r->size; base += CHUNK) {
        size_t n = (size_t)(r->size - base < CHUNK + BLK_HDR ? r->size - base : CHUNK + BLK_HDR);
        if (read_at(r, base, chunk, n)) break;
        for (size_t i = 0; i + BLK_HDR <= n && i < CHUNK; i++) {
            blk k;
            if (chunk[i] == 'D' && memcmp(chunk + i, BLK_MAGIC, 4) == 0 &&
                parse_blk_hdr(chunk + i, base + i, &k) == 0) {
                *found = base + i;
                rc = 0;
                goto done;
            }
        }
    }
done:
    free(chunk);
    return rc;
}

/* Rebuilds the index by walking blocks from the header on. footer: 1 = none found. */
static void scan_blocks(trace_reader *r, int no_footer)
{
    uint64_t pos = r->data_start;
    uint8_t hdr[BLK_HDR];
    for (;;) {
        if (pos == r->size) {
            if (no_footer)
                damage(r, pos, "truncated at offset %" PRIu64 ": no index; last complete "
                       "block ends at %" PRIu64, r->size, pos);
            return;
        }
        if (r->size - pos >= 4 && read_at(r, pos, hdr, 4) == 0 &&
            memcmp(hdr, IDX_MAGIC, 4) == 0) {
            if (no_footer)
                damage(r, pos, "truncated at offset %" PRIu64 ": index incomplete; last "
                       "complete block ends at %" PRIu64, r->size, pos);
            return;
        }
        if (r->size - pos < BLK_HDR) {
            damage(r, pos, "truncated at offset %" PRIu64 ": last complete block ends at %"
                   PRIu64, r->size, pos);
            return;
        }
        blk k;
        if (read_at(r, pos, hdr, BLK_HDR) || parse_blk_hdr(hdr, pos, &k)) {
            uint64_t next;
            if (resync(r, pos + 1, &next)) {
                damage(r, pos, "block at offset %" PRIu64 ": bad block header; nothing "
                       "readable after it", pos);
                return;
            }
            damage(r, pos, "block at offset %" PRIu64 ": bad block header; skipped to "
                   "offset %" PRIu64, pos, next);
            pos = next;
            continue;
        }
        if (k.comp > r->size - pos - BLK_HDR) {
            damage(r, pos, "truncated at offset %" PRIu64 ": last complete block ends at %"
                   PRIu64, r->size, pos);
            return;
        }
        int lp = load_payload(r, &k, hdr);
        const char *why = NULL;
        if (lp) why = lp == -2 ? "checksum mismatch" : "unreadable";
        else if (inflate_block(r, &k, &why) == 0 && walk_strings(r, &k, 1) < 0)
            why = "malformed string definitions";
        if (why) damage(r, pos, "block at offset %" PRIu64 ": %s; skipped", pos, why);
        else add_block(r, &k);
        pos += BLK_HDR + k.comp;
    }
}

trace_reader *trace_reader_open(const char *path, char *err)
{
    trace_reader *r = xcalloc(1, sizeof *r);
    uint8_t h[HDR_FIXED], tail[4];
    r->path = xstrdup(path);
    r->damage_off = -1;
    r->snap_budget = TRACE_STATE_SNAPSHOT_BUDGET;
    r->strs = evt_strtab_new();
    r->cur.blk = r->rep.blk = SIZE_MAX;
    evt_state_init(&r->cache);
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        fprintf(stderr, "downpour: out of memory creating a zstd context\n");
        abort();
    }
    r->f = fopen(path, "rb");
    if (!r->f) {
        dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (fseeko(r->f, 0, SEEK_END) != 0 || ftello(r->f) < 0) {
        dp_fail(err, DP_EIO, "%s: cannot size: %s", path, strerror(errno));
        goto fail;
    }
    r->size = (uint64_t)ftello(r->f);
    if (r->size < 8 || read_at(r, 0, h, 8) || memcmp(h, HDR_MAGIC, 8) != 0) {
        dp_fail(err, DP_EINVAL, "%s: offset 0: not a Downpour trace (bad magic)", path);
        goto fail;
    }
    if (read_at(r, 0, h, HDR_FIXED)) {
        dp_fail(err, DP_ECORRUPT, "%s: offset 8: header truncated", path);
        goto fail;
    }
    if (dp_get_u32(h + 8) != TRACE_VERSION) {
        dp_fail(err, DP_EINVAL, "%s: offset 8: unsupported trace format version %" PRIu32
                " (this build reads %d)", path, dp_get_u32(h + 8), TRACE_VERSION);
        goto fail;
    }
    uint32_t mlen = dp_get_u32(h + 12);
    if (mlen > MAX_META || (uint64_t)HDR_FIXED + mlen + 4 > r->size) {
        dp_fail(err, DP_ECORRUPT, "%s: offset 12: metadata length %" PRIu32 " exceeds %s",
                path, mlen, mlen > MAX_META ? "the 16 MiB limit" : "the file");
        goto fail;
    }
    r->meta = xmalloc((size_t)mlen + 1);
    if (read_at(r, HDR_FIXED, r->meta, mlen) || read_at(r, HDR_FIXED + mlen, tail, 4)) {
        dp_fail(err, DP_EIO, "%s: offset %d: cannot read metadata", path, HDR_FIXED);
        goto fail;
    }
    r->meta[mlen] = '\0';
    if ((uint32_t)crc32(crc(h, HDR_FIXED), (const Bytef *)r->meta, mlen) != dp_get_u32(tail)) {
        dp_fail(err, DP_ECORRUPT, "%s: offset %u: header checksum mismatch", path,
                HDR_FIXED + mlen);
        goto fail;
    }
    r->data_start = HDR_FIXED + (uint64_t)mlen + 4;

    int li = load_index(r);
    if (li == 0) verify_blocks(r);
    else scan_blocks(r, li == 1);

    int64_t mx = INT64_MIN;
    r->t0 = INT64_MAX;
    r->t1 = INT64_MIN;
    for (size_t i = 0; i < r->nblocks; i++) {
        blk *k = &r->blocks[i];
        r->count += k->n;
        if (k->n) {
            if (k->tmax > mx) mx = k->tmax;
            if (k->tmin < r->t0) r->t0 = k->tmin;
            if (k->tmax > r->t1) r->t1 = k->tmax;
        }
        k->tmax_prefix = mx;
    }
    if (r->count == 0) r->t0 = r->t1 = 0;
    int64_t span;
    if (__builtin_sub_overflow(r->t1, r->t0, &span)) {
        dp_fail(err, DP_ECORRUPT, "%s: its events' times span more than 2^63 ns (292 years): not a recording",
                path);
        goto fail;
    }
    return r;
fail:
    trace_reader_close(r);
    return NULL;
}

void trace_reader_close(trace_reader *r)
{
    if (!r) return;
    if (r->f) fclose(r->f);
    for (size_t i = 0; i < r->nsnaps; i++) evt_state_release(&r->snaps[i]);
    free(r->snaps);
    evt_state_release(&r->cache);
    free(r->cur.ev);
    free(r->rep.ev);
    free(r->tmp);
    free(r->cbuf.data);
    free(r->rbuf.data);
    free(r->blocks);
    free(r->meta);
    free(r->final_meta);
    free(r->path);
    evt_strtab_free(r->strs);
    ZSTD_freeDCtx(r->dctx);
    free(r);
}

const char *trace_reader_metadata(const trace_reader *r)
{
    return r->final_meta ? r->final_meta : r->meta;
}

const char *trace_reader_damage(const trace_reader *r)
{
    return r->damage_n ? r->damage_line : NULL;
}

int64_t trace_reader_damage_offset(const trace_reader *r)
{
    return r->damage_off;
}

uint64_t trace_reader_count(const trace_reader *r) { return r->count; }
int64_t trace_reader_t0(const trace_reader *r) { return r->t0; }
int64_t trace_reader_t1(const trace_reader *r) { return r->t1; }

const char *trace_reader_string(const trace_reader *r, uint32_t id)
{
    return evt_strtab_get(r->strs, id);
}

size_t trace_reader_block_count(const trace_reader *r)
{
    return r->nblocks;
}

int trace_reader_block_info(const trace_reader *r, size_t i, trace_block_info *out)
{
    if (i >= r->nblocks) return DP_EINVAL;
    const blk *k = &r->blocks[i];
    out->offset = k->off;
    out->bytes = BLK_HDR + k->comp;
    out->events = k->n;
    out->t_min = k->tmin;
    out->t_max = k->tmax;
    return DP_OK;
}

/* First block whose prefix max time is >= t (or > t when strict); nblocks if none. */
static size_t find_block(const trace_reader *r, int64_t t, int strict)
{
    size_t lo = 0, hi = r->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t m = r->blocks[mid].tmax_prefix;
        if (strict ? m > t : m >= t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* First index in d with time >= t (> t when strict). */
static size_t find_event(const decoded *d, int64_t t, int strict)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t m = d->ev[mid].t;
        if (strict ? m > t : m >= t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

int trace_reader_rewind(trace_reader *r)
{
    r->cur.n = 0;
    r->cur.blk = SIZE_MAX;
    r->cur_pos = 0;
    r->next_blk = 0;
    return DP_OK;
}

int trace_reader_seek(trace_reader *r, int64_t t)
{
    trace_reader_rewind(r);
    for (size_t b = find_block(r, t, 0); b < r->nblocks; b++) {
        if (decode_block(r, b, &r->cur)) continue;
        size_t i = find_event(&r->cur, t, 0);
        r->next_blk = b + 1;
        r->cur_pos = i;
        /* nothing >= t here (only possible next to a skipped block): keep going */
        if (i < r->cur.n) return DP_OK;
    }
    r->next_blk = r->nblocks;
    return DP_OK;
}

int trace_reader_next(trace_reader *r, evt_record *e)
{
    for (;;) {
        if (r->cur_pos < r->cur.n) {
            *e = r->cur.ev[r->cur_pos++];
            return 1;
        }
        if (r->next_blk >= r->nblocks) return 0;
        size_t b = r->next_blk++;
        r->cur_pos = 0;
        decode_block(r, b, &r->cur);      /* a bad block is reported and skipped */
    }
}

/* ---- state_at ------------------------------------------------------------------------ */

/* Bytes a state holds (for the snapshot budget). */
static size_t state_bytes(const evt_state *st)
{
    return sizeof *st + (size_t)(st->ps_len + st->workers_len) * sizeof(evt_task_state) +
           (size_t)st->n_vars * sizeof(evt_var_state) +
           (size_t)st->n_devices * sizeof(evt_device_state) +
           (size_t)st->var_nslots_ * sizeof(int32_t);
}

static void push_snapshot(trace_reader *r, const evt_state *st, size_t *cap)
{
    if (r->nsnaps == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        r->snaps = xrealloc(r->snaps, *cap * sizeof *r->snaps);
    }
    evt_state_init(&r->snaps[r->nsnaps]);
    evt_state_copy(&r->snaps[r->nsnaps++], st);
}

/* One pass over the trace keeping snaps[k] = state before block k * snap_every. When the
 * snapshots outgrow their budget (huge simulated clusters) every other one is dropped
 * and the spacing doubles, so memory stays bounded and replay stays short. */
static void build_snapshots(trace_reader *r)
{
    size_t cap = 0, mem = 0;
    evt_state st;
    evt_state_init(&st);
    r->snap_every = TRACE_STATE_SNAPSHOT_BLOCKS;
    for (size_t b = 0; b < r->nblocks; b++) {
        if (b % r->snap_every == 0) {
            push_snapshot(r, &st, &cap);
            mem += state_bytes(&st);
            while (mem > r->snap_budget && r->nsnaps > 2) {
                size_t k = 0;
                mem = 0;
                for (size_t i = 0; i < r->nsnaps; i++) {
                    if (i % 2) {
                        evt_state_release(&r->snaps[i]);
                        continue;
                    }
                    r->snaps[k] = r->snaps[i];
                    mem += state_bytes(&r->snaps[k++]);
                }
                r->nsnaps = k;
                r->snap_every *= 2;
            }
        }
        if (decode_block(r, b, &r->rep)) continue;
        for (size_t i = 0; i < r->rep.n; i++) evt_state_apply(&st, &r->rep.ev[i]);
    }
    /* snaps[nblocks / snap_every] must exist: it is the state after the last block when
     * nblocks is a multiple of the spacing */
    if (r->nblocks % r->snap_every == 0) {
        push_snapshot(r, &st, &cap);
        mem += state_bytes(&st);
    }
    evt_state_release(&st);
    r->snap_bytes = mem;
    r->snaps_built = 1;
}

void trace_reader_set_snapshot_budget(trace_reader *r, size_t bytes)
{
    r->snap_budget = bytes;
}

trace_snapshot_info trace_reader_snapshot_info(const trace_reader *r)
{
    trace_snapshot_info i = {0};
    if (!r->snaps_built) return i;
    i.count = r->nsnaps;
    i.spacing = r->snap_every;
    i.bytes = r->snap_bytes;
    return i;
}

int trace_reader_state_at(trace_reader *r, int64_t t, evt_state *state)
{
    if (!r->snaps_built) build_snapshots(r);
    /* target: all events before (tb, ti) */
    size_t tb = find_block(r, t, 1), ti = 0;
    if (tb < r->nblocks) {
        if (decode_block(r, tb, &r->rep) == 0) ti = find_event(&r->rep, t, 1);
    }
    size_t every = r->snap_every;
    size_t sb = tb / every * every, b, i;
    if (r->cache_valid && r->cache_blk >= sb &&
        (r->cache_blk < tb || (r->cache_blk == tb && r->cache_pos <= ti))) {
        evt_state_copy(state, &r->cache);
        b = r->cache_blk;
        i = r->cache_pos;
    } else {
        evt_state_copy(state, &r->snaps[tb / every]);
        b = sb;
        i = 0;
    }
    for (; b <= tb && b < r->nblocks; b++, i = 0) {
        if (r->rep.blk != b && decode_block(r, b, &r->rep)) continue;
        size_t end = b == tb ? ti : r->rep.n;
        for (; i < end; i++) evt_state_apply(state, &r->rep.ev[i]);
    }
    evt_state_copy(&r->cache, state);
    r->cache_blk = tb;
    r->cache_pos = ti;
    r->cache_valid = 1;
    return DP_OK;
}
