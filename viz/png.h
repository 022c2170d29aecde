/* png.h — PNG encoding of a drawn frame (cairo image surface) for every writer: `render`,
 * the window's screenshots, `--frames`, sheets, plots and the browser's frame stream.
 * libpng at zlib level 2 with no row filter: 3 to 4 times faster than cairo's own
 * writer (level 6, adaptive filters) for 0.94 to 1.07 of its bytes on our flat drawings
 * (bench/bench_viz.c measures both in one run). An opaque frame is written as RGB, any
 * other as RGBA (un-premultiplied, as cairo does). Deterministic: no time chunk, so
 * the same pixels give the same bytes, which the tests compare across writers. */
#ifndef VIZ_PNG_H
#define VIZ_PNG_H

#include <cairo.h>
#include <stddef.h>

/* Receives the encoded bytes in order; returns 0, or nonzero to stop (the write fails
 * with "write failed"). */
typedef int (*viz_png_sink)(void *closure, const unsigned char *data, size_t len);

/* Encodes img (CAIRO_FORMAT_ARGB32 or RGB24, flushed) into sink. Returns 0, or DP_EIO /
 * DP_EINVAL with err (another pixel format, libpng's message, the sink's refusal). */
int viz_png_write(cairo_surface_t *img, viz_png_sink sink, void *closure, char *err);

/* viz_png_write into the file at path (created or truncated). Returns 0 or DP_EIO with
 * err naming path and the cause. */
int viz_png_save(cairo_surface_t *img, const char *path, char *err);

#endif
