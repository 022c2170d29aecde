/* png.c — PNG encoding of drawn frames with libpng (png.h says why not cairo's writer). */
#include "viz/png.h"

#include <errno.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

/* zlib level 2, no row filter: on the baseline run's frames, 0.26 to 0.30 of the time
 * of cairo's writer (level 6, adaptive filters) for 0.94 to 1.07 of its bytes
 * (build/bench/bench_viz, its PNG rows); the filters cost more time than they saved. */
enum { PNG_LEVEL = 2 };

typedef struct png_job {
    viz_png_sink sink;
    void *closure;
    char msg[160];
} png_job;

static void on_error(png_structp p, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(p);
    snprintf(j->msg, sizeof j->msg, "%s", msg);
    png_longjmp(p, 1);
}

static void on_warning(png_structp p, png_const_charp msg)
{
    DP_UNUSED(p);
    DP_UNUSED(msg);
}

static void on_write(png_structp p, png_bytep data, size_t len)
{
    png_job *j = png_get_io_ptr(p);
    if (j->sink(j->closure, data, len)) png_error(p, "write failed");
}

static void on_flush(png_structp p) { DP_UNUSED(p); }

static int all_opaque(const unsigned char *px, int w, int h, int stride)
{
    for (int y = 0; y < h; y++) {
        const uint32_t *r = (const uint32_t *)(const void *)(px + (size_t)y * stride);
        for (int x = 0; x < w; x++)
            if (r[x] >> 24 != 0xff) return 0;
    }
    return 1;
}

/* One row of cairo's native-endian pixels (A R G B in a uint32, colour premultiplied)
 * as PNG's bytes: R G B, or R G B A with the colour divided back out (rounded, as
 * cairo's writer does). */
static void convert_row(const uint32_t *in, unsigned char *out, int w, int alpha)
{
    for (int x = 0; x < w; x++) {
        uint32_t v = in[x], a = v >> 24, r = (v >> 16) & 0xff, g = (v >> 8) & 0xff, b = v & 0xff;
        if (!alpha) {
            out[0] = (unsigned char)r, out[1] = (unsigned char)g, out[2] = (unsigned char)b;
            out += 3;
            continue;
        }
        if (a == 0) {
            r = g = b = 0;
        } else if (a != 0xff) {
            r = (r * 255 + a / 2) / a, g = (g * 255 + a / 2) / a, b = (b * 255 + a / 2) / a;
        }
        out[0] = (unsigned char)r, out[1] = (unsigned char)g, out[2] = (unsigned char)b;
        out[3] = (unsigned char)a;
        out += 4;
    }
}

int viz_png_write(cairo_surface_t *img, viz_png_sink sink, void *closure, char *err)
{
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS)
        return dp_fail(err, DP_EINVAL, "PNG: the image: %s", cairo_status_to_string(cairo_surface_status(img)));
    cairo_format_t f = cairo_image_surface_get_format(img);
    if (f != CAIRO_FORMAT_ARGB32 && f != CAIRO_FORMAT_RGB24)
        return dp_fail(err, DP_EINVAL, "PNG: pixel format %d is neither ARGB32 nor RGB24", (int)f);
    cairo_surface_flush(img);
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char *px = cairo_image_surface_get_data(img);
    if (!px || w <= 0 || h <= 0) return dp_fail(err, DP_EINVAL, "PNG: an empty image (%dx%d)", w, h);
    int alpha = f == CAIRO_FORMAT_ARGB32 && !all_opaque(px, w, h, stride);
    png_job job = {.sink = sink, .closure = closure, .msg = ""};
    unsigned char *row = xmalloc((size_t)w * 4);
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    if (!info) {
        png_destroy_write_struct(&p, NULL);
        free(row);
        return dp_fail(err, DP_EIO, "PNG: libpng could not start (out of memory)");
    }
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_write_struct(&p, &info);
        free(row);
        return dp_fail(err, DP_EIO, "PNG: %s", job.msg);
    }
    png_set_write_fn(p, &job, on_write, on_flush);
    png_set_compression_level(p, PNG_LEVEL);
    png_set_filter(p, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, alpha ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    for (int y = 0; y < h; y++) {
        convert_row((const uint32_t *)(const void *)(px + (size_t)y * stride), row, w, alpha);
        png_write_row(p, row);
    }
    png_write_end(p, info);
    png_destroy_write_struct(&p, &info);
    free(row);
    return DP_OK;
}

typedef struct file_sink {
    FILE *f;
    int err;   /* errno of the failed write */
} file_sink;

static int to_file(void *closure, const unsigned char *data, size_t len)
{
    file_sink *s = closure;
    errno = 0;
    if (fwrite(data, 1, len, s->f) == len) return 0;
    s->err = errno ? errno : EIO;
    return -1;
}

int viz_png_save(cairo_surface_t *img, const char *path, char *err)
{
    errno = 0;
    FILE *f = fopen(path, "wb");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno ? errno : EIO));
    file_sink s = {f, 0};
    char why[DP_ERRLEN];
    int rc = viz_png_write(img, to_file, &s, why);
    errno = 0;
    if (fclose(f) != 0 && rc == DP_OK) rc = DP_EIO, s.err = errno ? errno : EIO;
    if (rc != DP_OK) return dp_fail(err, DP_EIO, "%s: %s", path, s.err ? strerror(s.err) : why);
    return DP_OK;
}
