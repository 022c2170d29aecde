/* test_trace_damage.c — damaged and bad trace files: a truncated file opens up to its
 * last complete block; a flipped byte in a block is reported with the block's offset and
 * skipped; bad files are refused with a message; a flipped byte in any field of a block
 * header is reported as a bad header (the header CRC32 is checked against the format,
 * computed here with zlib, not with the reader's helpers); random damage never crashes.
 * The damaged files are copies of the realistic run test_trace.c reads (trace_check.h's
 * write_rt), written here first, so the writer's four checks run in both binaries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"
#include "tests/check.h"
#include "tests/trace_hdr.h"
#include "tests/evgen.h"
#include "tests/trace_check.h"

static char dir[256];
static evgen gen;
static evt_record *written;

static void copy_prefix(const char *src, const char *dst, long n)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    char *buf = xmalloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, a);
    fwrite(buf, 1, got, b);
    fclose(a);
    fclose(b);
    free(buf);
}

static void flip_mask(const char *path, long off, uint8_t mask)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ mask, f);
    fclose(f);
}

static void flip_byte(const char *path, long off)
{
    flip_mask(path, off, 0x5a);
}

/* ---- damage ------------------------------------------------------------------------- */

typedef struct blocks {
    trace_block_info *b;
    size_t n;
} blocks;

static blocks get_blocks(const char *path)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    blocks bl = {0};
    bl.n = trace_reader_block_count(r);
    bl.b = xmalloc(bl.n * sizeof *bl.b);
    for (size_t i = 0; i < bl.n; i++) trace_reader_block_info(r, i, &bl.b[i]);
    trace_reader_close(r);
    return bl;
}

/* Checks that path reads as `written` minus the events of the listed blocks. */
static int reads_without(const char *path, const blocks *bl, size_t skip_from, size_t skip_to,
                         size_t upto_block)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) {
        fprintf(stderr, "open %s: %s\n", path, err);
        return 0;
    }
    evt_record *got = xmalloc((gen.n + 1) * sizeof *got);
    size_t n = read_all(r, got, gen.n + 1), k = 0, idx = 0;
    int ok = 1;
    for (size_t b = 0; b < upto_block && b < bl->n; b++) {
        for (uint32_t j = 0; j < bl->b[b].events; j++, idx++) {
            if (b >= skip_from && b < skip_to) continue;
            if (k >= n || !same_record(&got[k], &written[idx])) ok = 0;
            k++;
        }
    }
    if (k != n || trace_reader_count(r) != n) ok = 0;
    free(got);
    trace_reader_close(r);
    return ok;
}

static void test_truncated(void)
{
    const char *src = check_path(dir, "rt.dptrace"), *dst = check_path(dir, "cut.dptrace");
    blocks bl = get_blocks(src);
    long size = file_size(src);
    char err[DP_ERRLEN];
    size_t mid = bl.n / 2;

    /* cut in the middle of a block: everything before it, damage names the cut */
    long cut = (long)bl.b[mid].offset + (long)bl.b[mid].bytes / 2;
    copy_prefix(src, dst, cut);
    trace_reader *r = trace_reader_open(dst, err);
    CHECK(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), "truncated"));
    char want[128];
    snprintf(want, sizeof want, "last complete block ends at %llu",
             (unsigned long long)bl.b[mid].offset);
    CHECK_MSG(r && strstr(trace_reader_damage(r), want), "%s", r ? trace_reader_damage(r) : err);
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, 0, 0, mid));

    /* cut exactly at a block boundary (writer killed between blocks) */
    copy_prefix(src, dst, (long)bl.b[mid].offset);
    r = trace_reader_open(dst, err);
    CHECK(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), "no index"));
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, 0, 0, mid));

    /* cut inside the index, and inside the footer: all blocks survive */
    long idx_start = (long)(bl.b[bl.n - 1].offset + bl.b[bl.n - 1].bytes);
    copy_prefix(src, dst, idx_start + 6);
    r = trace_reader_open(dst, err);
    CHECK(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), "index incomplete"));
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, 0, 0, bl.n));
    copy_prefix(src, dst, size - 3);
    CHECK(reads_without(dst, &bl, 0, 0, bl.n));

    /* cut right after the header: opens, empty, damaged */
    copy_prefix(src, dst, (long)bl.b[0].offset);
    r = trace_reader_open(dst, err);
    CHECK(r && trace_reader_count(r) == 0 && trace_reader_damage(r));
    trace_reader_close(r);
    /* cut inside the header: refused with a message naming the file */
    copy_prefix(src, dst, 20);
    r = trace_reader_open(dst, err);
    CHECK(r == NULL && strstr(err, "cut.dptrace") && strstr(err, "offset"));
    copy_prefix(src, dst, 5);
    CHECK(trace_reader_open(dst, err) == NULL && strstr(err, "not a Downpour trace"));
    /* every prefix opens or is refused, never crashes (coarse stride) */
    int fine = 1;
    for (long n = 0; n < size; n += size / 50 + 1) {
        copy_prefix(src, dst, n);
        r = trace_reader_open(dst, err);
        if (r) {
            evt_record e;
            while (trace_reader_next(r, &e) == 1) {}
            if (n < size && !trace_reader_damage(r)) fine = 0;
        }
        trace_reader_close(r);
    }
    CHECK(fine);
    free(bl.b);
}

static void test_flipped(void)
{
    const char *src = check_path(dir, "rt.dptrace"), *dst = check_path(dir, "flip.dptrace");
    blocks bl = get_blocks(src);
    long size = file_size(src);
    char err[DP_ERRLEN], want[128];
    size_t mid = bl.n / 2;

    /* a byte in the middle block's payload */
    copy_prefix(src, dst, size);
    flip_byte(dst, (long)bl.b[mid].offset + (long)bl.b[mid].bytes / 2);
    trace_reader *r = trace_reader_open(dst, err);
    snprintf(want, sizeof want, "block at offset %llu: checksum mismatch; skipped",
             (unsigned long long)bl.b[mid].offset);
    CHECK_MSG(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), want), "%s",
              r && trace_reader_damage(r) ? trace_reader_damage(r) : "no damage");
    CHECK(r && trace_reader_damage_offset(r) == (int64_t)bl.b[mid].offset);
    CHECK(r && trace_reader_count(r) == gen.n - bl.b[mid].events);
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, mid, mid + 1, bl.n));

    /* a byte in the middle block's header */
    copy_prefix(src, dst, size);
    flip_byte(dst, (long)bl.b[mid].offset + 9);
    r = trace_reader_open(dst, err);
    snprintf(want, sizeof want, "block at offset %llu", (unsigned long long)bl.b[mid].offset);
    CHECK(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), want));
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, mid, mid + 1, bl.n));

    /* the index damaged: rebuilt by scanning, nothing lost */
    copy_prefix(src, dst, size);
    long idx_start = (long)(bl.b[bl.n - 1].offset + bl.b[bl.n - 1].bytes);
    flip_byte(dst, idx_start + 8);
    r = trace_reader_open(dst, err);
    CHECK(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), "rebuilt by scanning"));
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, 0, 0, bl.n));

    /* no footer and a damaged header: the scanner resynchronises on the next block */
    copy_prefix(src, dst, idx_start);
    flip_byte(dst, (long)bl.b[mid].offset + 2);
    r = trace_reader_open(dst, err);
    snprintf(want, sizeof want, "block at offset %llu: bad block header; skipped to offset %llu",
             (unsigned long long)bl.b[mid].offset, (unsigned long long)bl.b[mid + 1].offset);
    CHECK_MSG(r && trace_reader_damage(r) && strstr(trace_reader_damage(r), want), "%s",
              r && trace_reader_damage(r) ? trace_reader_damage(r) : "none");
    trace_reader_close(r);
    CHECK(reads_without(dst, &bl, mid, mid + 1, bl.n));

    /* two damaged blocks: the first is described, the other counted */
    copy_prefix(src, dst, size);
    flip_byte(dst, (long)bl.b[2].offset + 60);
    flip_byte(dst, (long)bl.b[mid].offset + 60);
    r = trace_reader_open(dst, err);
    snprintf(want, sizeof want, "block at offset %llu", (unsigned long long)bl.b[2].offset);
    CHECK(r && strstr(trace_reader_damage(r), want) &&
          strstr(trace_reader_damage(r), "1 more"));
    trace_reader_close(r);

    /* header damage: refused */
    copy_prefix(src, dst, size);
    flip_byte(dst, 20);
    CHECK(trace_reader_open(dst, err) == NULL && strstr(err, "header checksum"));
    free(bl.b);
}

/* ---- block headers, walked by the format (docs/trace-format.md), not by the reader ---- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The whole file; caller frees. */
static uint8_t *slurp_file(const char *path, size_t *size)
{
    long n = file_size(path);
    FILE *f = fopen(path, "rb");
    uint8_t *p = xmalloc(n > 0 ? (size_t)n : 1);
    *size = f && n > 0 ? fread(p, 1, (size_t)n, f) : 0;
    if (f) fclose(f);
    return p;
}

/* Walks a trace image as the format lays it out: the header is 16 + M + 4 bytes, then
 * 48-byte "DPBK" headers each followed by C payload bytes, until "DPIX". Fills bl (caller
 * frees bl->b) and *index_at (offset of "DPIX"); returns 1 when every block header's
 * CRC32 at +44 is zlib's crc32 of its bytes 0..43 and every payload CRC32 at +40 is that
 * of its C bytes, 0 when not (or the walk went off the rails). */
static int walk_format(const uint8_t *f, size_t size, blocks *bl, uint64_t *index_at)
{
    size_t cap = 64;
    int ok = size >= 20;
    uint64_t pos = ok ? 16 + (uint64_t)le32(f + 12) + 4 : 0;
    bl->n = 0;
    bl->b = xmalloc(cap * sizeof *bl->b);
    while (ok && pos + 4 <= size && memcmp(f + pos, "DPIX", 4) != 0) {
        const uint8_t *h = f + pos;
        if (pos + 48 > size || memcmp(h, "DPBK", 4) != 0 ||
            pos + 48 + le32(h + 8) > size) {
            ok = 0;
            break;
        }
        uint32_t c = le32(h + 8);
        if ((uint32_t)crc32(0L, h, 44) != le32(h + 44) ||
            (uint32_t)crc32(0L, h + 48, c) != le32(h + 40))
            ok = 0;
        if (bl->n == cap) bl->b = xrealloc(bl->b, (cap *= 2) * sizeof *bl->b);
        bl->b[bl->n++] = (trace_block_info){.offset = pos, .bytes = 48 + (uint64_t)c,
                                             .events = le32(h + 16),
                                             .t_min = (int64_t)le64(h + 24),
                                             .t_max = (int64_t)le64(h + 32)};
        pos += 48 + (uint64_t)c;
    }
    *index_at = pos;
    return ok && pos + 4 <= size;
}


/* The writer's block headers follow the format; then, for each header field, a flipped
 * byte in the middle block's header is reported as exactly that block's bad header (with
 * the index, and without it while scanning) and only that block's events are lost. */
static void test_block_header_crc(void)
{
    const char *src = check_path(dir, "rt.dptrace"), *dst = check_path(dir, "flip.dptrace");
    size_t size;
    uint8_t *img = slurp_file(src, &size);
    blocks fmt;
    uint64_t index_at;
    CHECK_MSG(walk_format(img, size, &fmt, &index_at),
              "block headers' CRC32s (+40 payload, +44 header bytes 0..43) are zlib's");
    blocks bl = get_blocks(src);
    int same = fmt.n == bl.n && fmt.n > 2;
    for (size_t i = 0; same && i < fmt.n; i++)
        same = fmt.b[i].offset == bl.b[i].offset && fmt.b[i].bytes == bl.b[i].bytes &&
               fmt.b[i].events == bl.b[i].events && fmt.b[i].t_min == bl.b[i].t_min &&
               fmt.b[i].t_max == bl.b[i].t_max;
    CHECK_MSG(same, "the reader's block table equals the format walk (%zu vs %zu blocks)",
              bl.n, fmt.n);
    free(bl.b);
    int walked = fmt.n >= 3;      /* a middle block with one after it */
    size_t mid = fmt.n / 2;
    unsigned long long off = walked ? fmt.b[mid].offset : 0;
    unsigned long long next = walked ? fmt.b[mid + 1].offset : 0;
    char want[160];
    for (size_t i = 0; i < DP_ARRAY_LEN(hdr_fields); i++) {
        const struct hdr_field *fl = &hdr_fields[i];
        char err[DP_ERRLEN];
        for (int scan = 0; scan < 2; scan++) {
            if (!walked) {        /* same number of checks, all failed */
                for (int k = 0; k < 3; k++)
                    CHECK_MSG(0, "%s flipped: no middle block to damage", fl->name);
                continue;
            }
            /* scan = 1: cut at the index, so the reader walks the blocks itself (and
             * counts the missing index as a second problem) */
            copy_prefix(src, dst, scan ? (long)index_at : (long)size);
            flip_mask(dst, (long)off + fl->at, fl->mask);
            if (scan)
                snprintf(want, sizeof want, "block at offset %llu: bad block header; skipped "
                         "to offset %llu (and 1 more problem)", off, next);
            else
                snprintf(want, sizeof want, "block at offset %llu: bad block header; skipped",
                         off);
            trace_reader *r = trace_reader_open(dst, err);
            const char *dmg = r ? trace_reader_damage(r) : NULL;
            CHECK_MSG(dmg && strcmp(dmg, want) == 0, "%s flipped (+%d, %s): damage at open is \"%s\", want \"%s\"",
                      fl->name, fl->at, scan ? "scanning" : "with index",
                      dmg ? dmg : r ? "none" : err, want);
            CHECK_MSG(r && trace_reader_damage_offset(r) == (int64_t)off,
                      "%s flipped (+%d, %s): damage offset %lld, want %llu", fl->name,
                      fl->at, scan ? "scanning" : "with index",
                      r ? (long long)trace_reader_damage_offset(r) : -2LL, off);
            trace_reader_close(r);
            CHECK_MSG(reads_without(dst, &fmt, mid, mid + 1, fmt.n),
                      "%s flipped (+%d, %s): reads every event but the block's", fl->name,
                      fl->at, scan ? "scanning" : "with index");
        }
    }
    free(fmt.b);
    free(img);
}

static void write_raw(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* A block whose events fall outside its header's time range (the header CRC made right,
 * no index to contradict it: a writer that lied) is skipped as damaged, so that every
 * event a reader returns lies within the trace's [t0, t1]; and a trace whose times span
 * more than int64 holds is refused at open (readers subtract t0 from event times). */
static void test_time_bounds(void)
{
    const char *src = check_path(dir, "rt.dptrace"), *dst = check_path(dir, "bounds.dptrace");
    size_t size;
    uint8_t *img = slurp_file(src, &size);
    blocks fmt;
    uint64_t index_at;
    int walked = walk_format(img, size, &fmt, &index_at) && fmt.n >= 3;
    CHECK_MSG(walked, "a trace of 3 or more blocks to damage");
    if (walked) {
        size_t mid = fmt.n / 2;
        uint8_t *h = img + fmt.b[mid].offset;
        int64_t tmax = fmt.b[mid].t_min + (fmt.b[mid].t_max - fmt.b[mid].t_min) / 2;
        for (int i = 0; i < 8; i++) h[32 + i] = (uint8_t)((uint64_t)tmax >> (8 * i));
        uint32_t c = (uint32_t)crc32(0L, h, 44);
        for (int i = 0; i < 4; i++) h[44 + i] = (uint8_t)(c >> (8 * i));
        write_raw(dst, img, (size_t)index_at);   /* no index: the reader scans the blocks */
        char err[DP_ERRLEN], want[160];
        trace_reader *r = trace_reader_open(dst, err);
        size_t n = 0;
        evt_record e;
        int inside = 1;
        while (r && trace_reader_next(r, &e) == 1) {
            n++;
            inside &= e.t >= trace_reader_t0(r) && e.t <= trace_reader_t1(r);
        }
        /* the first problem is the missing index; the block's is the second */
        snprintf(want, sizeof want, "no index; last complete block ends at %llu (and 1 more problem)",
                 (unsigned long long)index_at);
        const char *dmg = r ? trace_reader_damage(r) : NULL;
        CHECK_MSG(dmg && strstr(dmg, want), "narrowed block: damage \"%s\", want \"...%s\"",
                  dmg ? dmg : r ? "none" : err, want);
        CHECK_MSG(r && inside && n == gen.n - fmt.b[mid].events,
                  "the other blocks' %zu events read, all within [t0, t1] (%zu read)",
                  gen.n - (size_t)fmt.b[mid].events, n);
        trace_reader_close(r);
    }
    free(fmt.b);
    free(img);

    /* times at both ends of int64 */
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(dst, "{}", err);
    evt_record e;
    evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, 0);
    e.t = INT64_MIN + 1;
    trace_writer_add(w, &e);
    e.t = INT64_MAX;
    trace_writer_add(w, &e);
    CHECK(w && trace_writer_close(w, err) == 0);
    trace_reader *r = trace_reader_open(dst, err);
    CHECK_MSG(!r && strstr(err, "bounds.dptrace: its events' times span more than 2^63 ns"),
              "a span past int64: refused at open (%s)", r ? "opened" : err);
    trace_reader_close(r);
    unlink(dst);
}

static void test_bad_files(void)
{
    char err[DP_ERRLEN];
    CHECK(trace_reader_open(check_path(dir, "missing"), err) == NULL && strstr(err, "missing"));
    const char *p = check_path(dir, "bad.dptrace");
    write_raw(p, "", 0);
    CHECK(trace_reader_open(p, err) == NULL && strstr(err, "not a Downpour trace"));
    write_raw(p, "hello world, this is not a trace at all", 39);
    CHECK(trace_reader_open(p, err) == NULL && strstr(err, "bad.dptrace"));
    uint8_t h[24] = {'D', 'P', 'T', 'R', 'A', 'C', 'E', 0, 9, 0, 0, 0, 2, 0, 0, 0, '{', '}'};
    write_raw(p, h, sizeof h);
    CHECK(trace_reader_open(p, err) == NULL && strstr(err, "unsupported trace format version 9"));
    uint8_t h2[24] = {'D', 'P', 'T', 'R', 'A', 'C', 'E', 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
    write_raw(p, h2, sizeof h2);
    CHECK(trace_reader_open(p, err) == NULL && strstr(err, "metadata length"));
}

/* Random byte damage anywhere: open and full read terminate cleanly. */
static void test_fuzz(void)
{
    char err[DP_ERRLEN];
    evgen small;
    evgen_run(&small, 1, 2, 2, 200, 0, 3);
    evt_record *ev;
    const char *src = check_path(dir, "small.dptrace"), *dst = check_path(dir, "fuzz.dptrace");
    write_gen(src, &small, &ev, NULL);
    free(ev);
    long size = file_size(src);
    FILE *f = fopen(src, "rb");
    uint8_t *orig = xmalloc((size_t)size);
    CHECK(fread(orig, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    dp_rng rng;
    dp_rng_seed(&rng, 5);
    int opened = 0, fine = 1;
    for (int it = 0; it < 300; it++) {
        uint8_t *b = xmalloc((size_t)size);
        memcpy(b, orig, (size_t)size);
        int flips = 1 + (int)dp_rng_below(&rng, 4);
        for (int k = 0; k < flips; k++)
            b[dp_rng_below(&rng, (uint64_t)size)] ^= (uint8_t)(1 + dp_rng_below(&rng, 255));
        write_raw(dst, b, (size_t)(it % 3 ? size : (long)dp_rng_below(&rng, (uint64_t)size)));
        trace_reader *r = trace_reader_open(dst, err);
        if (r) {
            opened++;
            evt_record e;
            uint64_t n = 0;
            while (trace_reader_next(r, &e) == 1) n++;
            if (n > small.n) fine = 0;
            trace_reader_seek(r, 50000);
            evt_state st;
            evt_state_init(&st);
            trace_reader_state_at(r, 1000000, &st);
            evt_state_release(&st);
        }
        trace_reader_close(r);
        free(b);
    }
    CHECK(fine);
    CHECK(opened > 100);
    free(orig);
    evgen_free(&small);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/dp_test_trace_damage.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    write_rt(check_path(dir, "rt.dptrace"), &gen, &written);
    test_truncated();
    test_flipped();
    test_block_header_crc();
    test_time_bounds();
    test_bad_files();
    test_fuzz();
    free(written);
    evgen_free(&gen);
    const char *names[] = {"rt.dptrace", "cut.dptrace", "flip.dptrace", "bad.dptrace",
                           "small.dptrace", "fuzz.dptrace"};
    for (size_t i = 0; i < DP_ARRAY_LEN(names); i++) unlink(check_path(dir, names[i]));
    rmdir(dir);
    return CHECK_DONE();
}
