/* test_viz_png.c — the PNG writer (viz/png.h) against an answer it does not compute:
 * what cairo's own writer makes of the same image, both decoded by cairo's reader,
 * must be the same pixels, for an opaque image (written as RGB), one with transparent
 * and half-transparent pixels (RGBA, the colour divided back out as cairo does) and an
 * RGB24 one. Then: the same image gives the same bytes; a refused pixel format, a
 * failing sink, a path that cannot be written and a full disk each fail with a message
 * that names the cause (and the file). */
#include <cairo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/dp.h"
#include "viz/png.h"

typedef struct mem {
    unsigned char *p;
    size_t len, cap, fail_after;   /* fail_after: the sink refuses beyond it (0: never) */
} mem;

static int to_mem(void *closure, const unsigned char *data, size_t len)
{
    mem *m = closure;
    if (m->fail_after && m->len + len > m->fail_after) return -1;
    if (m->len + len > m->cap) {
        while (m->len + len > m->cap) m->cap = m->cap ? 2 * m->cap : 4096;
        m->p = xrealloc(m->p, m->cap);
    }
    memcpy(m->p + m->len, data, len);
    m->len += len;
    return 0;
}

static cairo_status_t cairo_to_mem(void *closure, const unsigned char *data, unsigned int len)
{
    return to_mem(closure, data, len) ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

typedef struct reader {
    const mem *m;
    size_t at;
} reader;

static cairo_status_t from_mem(void *closure, unsigned char *data, unsigned int len)
{
    reader *r = closure;
    if (r->at + len > r->m->len) return CAIRO_STATUS_READ_ERROR;
    memcpy(data, r->m->p + r->at, len);
    r->at += len;
    return CAIRO_STATUS_SUCCESS;
}

static cairo_surface_t *decode(const mem *m)
{
    reader r = {m, 0};
    return cairo_image_surface_create_from_png_stream(from_mem, &r);
}

/* A 301x97 image (odd sizes: rows of any length) of gradients, noise and a drawn
 * shape; alpha: its left third transparent, its middle third half-transparent. */
static cairo_surface_t *pattern(cairo_format_t f, int alpha)
{
    int w = 301, h = 97;
    cairo_surface_t *img = cairo_image_surface_create(f, w, h);
    cairo_surface_flush(img);
    unsigned char *px = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    uint32_t seed = 12345;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t a = 255;
            if (alpha) a = x < w / 3 ? 0 : x < 2 * w / 3 ? 100 + (seed >> 28) : 255;
            uint32_t r = (uint32_t)(x * 255 / w), g = (uint32_t)(y * 255 / h), b = (seed >> 24);
            r = r * a / 255, g = g * a / 255, b = b * a / 255;   /* premultiplied */
            if (f == CAIRO_FORMAT_RGB24) a = seed >> 25;   /* RGB24's top byte means nothing */
            ((uint32_t *)(void *)(px + (size_t)y * stride))[x] = a << 24 | r << 16 | g << 8 | b;
        }
    cairo_surface_mark_dirty(img);
    cairo_t *cr = cairo_create(img);
    cairo_set_source_rgba(cr, 0.9, 0.2, 0.1, alpha ? 0.6 : 1.0);
    cairo_arc(cr, 150, 48, 30, 0, 6.283);
    cairo_fill(cr);
    cairo_destroy(cr);
    cairo_surface_flush(img);
    return img;
}

/* Pixels of a and b differ nowhere (both decoded: cairo's reader premultiplies). */
static long pixels_differ(cairo_surface_t *a, cairo_surface_t *b)
{
    if (cairo_surface_status(a) || cairo_surface_status(b)) return -1;
    int w = cairo_image_surface_get_width(a), h = cairo_image_surface_get_height(a);
    if (w != cairo_image_surface_get_width(b) || h != cairo_image_surface_get_height(b)) return -1;
    cairo_surface_flush(a);
    cairo_surface_flush(b);
    long bad = 0;
    for (int y = 0; y < h; y++) {
        const uint32_t *ra = (const uint32_t *)(const void *)(cairo_image_surface_get_data(a) +
                                                             (size_t)y * cairo_image_surface_get_stride(a));
        const uint32_t *rb = (const uint32_t *)(const void *)(cairo_image_surface_get_data(b) +
                                                             (size_t)y * cairo_image_surface_get_stride(b));
        for (int x = 0; x < w; x++) bad += ra[x] != rb[x];
    }
    return bad;
}

/* Ours and cairo's writer, each decoded: the same pixels. colour_type: PNG's IHDR byte. */
static void same_as_cairo(const char *what, cairo_format_t f, int alpha, int colour_type)
{
    cairo_surface_t *img = pattern(f, alpha);
    mem ours = {0}, theirs = {0};
    char err[DP_ERRLEN] = "";
    CHECK_MSG(viz_png_write(img, to_mem, &ours, err) == 0, "%s: %s", what, err);
    CHECK(cairo_surface_write_to_png_stream(img, cairo_to_mem, &theirs) == CAIRO_STATUS_SUCCESS);
    CHECK_MSG(ours.len > 33 && !memcmp(ours.p, "\x89PNG\r\n\x1a\n", 8) && ours.p[25] == colour_type,
              "%s: a PNG of colour type %d (got %d)", what, colour_type, ours.len > 25 ? ours.p[25] : -1);
    cairo_surface_t *a = decode(&ours), *b = decode(&theirs);
    long bad = pixels_differ(a, b);
    CHECK_MSG(bad == 0, "%s: %ld pixels differ from cairo's writer's", what, bad);
    /* the same image, the same bytes */
    mem again = {0};
    CHECK(viz_png_write(img, to_mem, &again, err) == 0 && again.len == ours.len &&
          !memcmp(again.p, ours.p, ours.len));
    cairo_surface_destroy(a);
    cairo_surface_destroy(b);
    cairo_surface_destroy(img);
    free(ours.p);
    free(theirs.p);
    free(again.p);
}

static void test_failures(void)
{
    char err[DP_ERRLEN] = "";
    cairo_surface_t *a8 = cairo_image_surface_create(CAIRO_FORMAT_A8, 10, 10);
    mem m = {0};
    CHECK(viz_png_write(a8, to_mem, &m, err) == DP_EINVAL && strstr(err, "pixel format"));
    cairo_surface_destroy(a8);

    cairo_surface_t *img = pattern(CAIRO_FORMAT_ARGB32, 0);
    mem small = {.fail_after = 1000};
    err[0] = 0;
    CHECK_MSG(viz_png_write(img, to_mem, &small, err) == DP_EIO && strstr(err, "write failed"), "%s", err);
    free(small.p);

    err[0] = 0;
    CHECK(viz_png_save(img, "/nonexistent-dir/x.png", err) == DP_EIO &&
          strstr(err, "/nonexistent-dir/x.png: No such file or directory"));
    err[0] = 0;
    CHECK_MSG(viz_png_save(img, "/dev/full", err) == DP_EIO && strstr(err, "/dev/full: No space left on device"),
              "%s", err);

    /* a saved file holds exactly the bytes written to a sink */
    char path[] = "/tmp/test_viz_png_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(viz_png_save(img, path, err) == 0);
    CHECK(viz_png_write(img, to_mem, &m, err) == 0);
    FILE *f = fopen(path, "rb");
    unsigned char *buf = xmalloc(m.len + 1);
    size_t n = f ? fread(buf, 1, m.len + 1, f) : 0;
    if (f) fclose(f);
    CHECK(n == m.len && !memcmp(buf, m.p, n));
    unlink(path);
    free(buf);
    free(m.p);
    cairo_surface_destroy(img);
}

int main(void)
{
    same_as_cairo("opaque ARGB32", CAIRO_FORMAT_ARGB32, 0, 2);
    same_as_cairo("ARGB32 with transparency", CAIRO_FORMAT_ARGB32, 1, 6);
    same_as_cairo("RGB24", CAIRO_FORMAT_RGB24, 0, 2);
    test_failures();
    cairo_debug_reset_static_data();
    return CHECK_DONE();
}
