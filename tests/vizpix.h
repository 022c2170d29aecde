/* vizpix.h — what the viewer tests (test_viz.c, test_viz_pixels.c, test_viz_pace.c,
 * test_viz_story.c) read pictures with: the colour key as literal RGB, never read from the
 * palette under test (that is the point: a changed colour in viz/ must fail here), and
 * small readers of a cairo image surface — one pixel, a colour match, a count of a colour in
 * a rectangle, a count of differing pixels between two frames — plus a frame with the
 * layout and state that drew it. Header-only, static; no global state. */
#ifndef TESTS_VIZPIX_H
#define TESTS_VIZPIX_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/internal.h"
#include "viz/png.h"

/* ---- the colour key ---------------------------------------------------------------- */

/* docs/viewer.md names the sets (phases Okabe-Ito, paced a muted lavender #7E76B6,
 * evaluating Okabe-Ito blue #0072B2, pull and push arrows in the pulling and pushing colours,
 * variables Paul Tol's muted set in the viewer's order, devices Tol's light set; ink on
 * white panels and an off-white page) and these are their published values. The greys for
 * idle (named only) and stopped (not in the docs) are the viewer's; a phase not listed is
 * 0 (black), so a frame showing one fails until it is. Outlines of packets, pulls white and
 * pushes ink, are the viewer's convention (the docs do not name them). */
#define HEX(h) ((viz_rgb){((h) >> 16 & 255) / 255.0, ((h) >> 8 & 255) / 255.0, ((h) & 255) / 255.0})
static const unsigned key_phase[VIZ_N_PHASES] = {
    0xD9D9D9, 0x56B4E9, 0x009E73, 0xE69F00,   /* idle grey, pulling sky blue, computing green, pushing orange */
    0xF0E442, 0xCC79A7, 0xD55E00, 0x8C8C8C,   /* barrier yellow, ssp purple, dead vermillion, stopped */
    0x7E76B6,                                 /* paced muted lavender */
    0x0072B2,                                 /* evaluating (the chief; the viewer's own): Okabe-Ito blue */
};
static const unsigned key_var[9] = {0x332288, 0x44AA99, 0xCC6677, 0x117733, 0x882255,
                                    0x88CCEE, 0x999933, 0xAA4499, 0xDDCC77};
#define KEY_PHASE(ph) HEX(key_phase[ph])
#define KEY_COMPUTE KEY_PHASE(EVT_PHASE_COMPUTING)
#define KEY_PACED KEY_PHASE(EVT_PHASE_PACED)
#define KEY_EVALUATING KEY_PHASE(VIZ_PHASE_EVALUATING)
#define KEY_PULL KEY_PHASE(EVT_PHASE_PULLING)   /* a pull's arrow, the legend's pull */
#define KEY_PUSH KEY_PHASE(EVT_PHASE_PUSHING)   /* a push's arrow, the legend's push */
#define KEY_VAR(i) HEX(key_var[(i) % 9])
#define KEY_DEVICE0 HEX(0x77AADD)   /* Tol light: light blue */
#define KEY_INK HEX(0x1E1E24)       /* text, borders, push outlines */
#define KEY_WHITE HEX(0xFFFFFF)     /* panels, the help card, pull outlines */
#define KEY_ACCENT HEX(0x0072B2)    /* Okabe-Ito blue: selection, REPLAY, key names, compare A */
#define KEY_VERMILLION KEY_PHASE(EVT_PHASE_DEAD)   /* Okabe-Ito vermillion: compare B */
/* Flat fills are drawn exactly; 2.5/255 per channel absorbs rounding, never a changed colour. */
#define FLAT_TOL 0.01

/* ---- readers ----------------------------------------------------------------------- */

/* The pixel of img at (x, y), truncated to whole pixels; {-1, -1, -1} outside the image,
 * which no colour is near. img is borrowed. */
static inline viz_rgb pixel(cairo_surface_t *img, double x, double y)
{
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    int ix = (int)x, iy = (int)y;
    if (ix < 0 || iy < 0 || ix >= w || iy >= h) return (viz_rgb){-1, -1, -1};
    const unsigned char *d = cairo_image_surface_get_data(img);
    uint32_t p = ((const uint32_t *)(const void *)(d + (size_t)iy * (size_t)cairo_image_surface_get_stride(img)))[ix];
    return (viz_rgb){(p >> 16 & 255) / 255.0, (p >> 8 & 255) / 255.0, (p & 255) / 255.0};
}

/* 1 when every channel of a is within tol of b's. */
static inline int near(viz_rgb a, viz_rgb b, double tol)
{
    return fabs(a.r - b.r) <= tol && fabs(a.g - b.g) <= tol && fabs(a.b - b.b) <= tol;
}

/* Pixels of r in img within tol of c. */
static inline int count_color(cairo_surface_t *img, viz_rect r, viz_rgb c, double tol)
{
    int n = 0;
    for (int y = (int)floor(r.y); y < r.y + r.h; y++)
        for (int x = (int)floor(r.x); x < r.x + r.w; x++) n += near(pixel(img, x, y), c, tol);
    return n;
}

/* Pixels of r (clipped to both images) where a and b differ by more than tol. */
static inline int differing(cairo_surface_t *a, cairo_surface_t *b, viz_rect r, double tol)
{
    int n = 0;
    for (int y = (int)floor(r.y); y < r.y + r.h; y++)
        for (int x = (int)floor(r.x); x < r.x + r.w; x++) n += !near(pixel(a, x, y), pixel(b, x, y), tol);
    return n;
}

/* ---- a frame to read --------------------------------------------------------------- */

/* Renders s in view v (at v->t, v->width x v->height) and opens c on the same frame, so a
 * test reads the pixels and the layout and state that drew them. s and v are borrowed
 * until frame_close; the caller closes with frame_close(c, img). */
static inline cairo_surface_t *frame_open(viz_source *s, const viz_view *v, viz_ctx *c)
{
    cairo_surface_t *img = viz_render_image(s, v);
    viz_ctx_begin(c, NULL, s, v, v->t, v->width, v->height, 1);
    return img;
}

/* Ends c and frees img (both from frame_open). */
static inline void frame_close(viz_ctx *c, cairo_surface_t *img)
{
    viz_ctx_end(c);
    cairo_surface_destroy(img);
}

/* ---- what a frame wrote: viz_text's test hook (test_viz_teach.c, test_viz_machine.c) --- */
#define VIZPIX_PLACED 256
typedef struct vizpix_placed { char text[64]; viz_rect box; } vizpix_placed;
typedef struct vizpix_text {
    char all[16384];
    size_t len;
    vizpix_placed at[VIZPIX_PLACED];   /* the first VIZPIX_PLACED lines and where each lies */
    int n_at;
} vizpix_text;

static inline void vizpix_log_text(void *ctx, const char *full, const char *shown, double px, int cut, viz_rect box)
{
    vizpix_text *t = ctx;
    (void)full;
    (void)px;
    (void)cut;
    int n = snprintf(t->all + t->len, sizeof t->all - t->len, "%s\n", shown);
    if (n > 0 && t->len + (size_t)n < sizeof t->all) t->len += (size_t)n;
    if (t->n_at < VIZPIX_PLACED) {
        snprintf(t->at[t->n_at].text, sizeof t->at[t->n_at].text, "%s", shown);
        t->at[t->n_at++].box = box;
    }
}

/* Where the frame wrote the text line want (its first time): 1 and *box, else 0. */
static inline int vizpix_where(const vizpix_text *t, const char *want, viz_rect *box)
{
    for (int i = 0; i < t->n_at; i++)
        if (!strcmp(t->at[i].text, want)) {
            *box = t->at[i].box;
            return 1;
        }
    return 0;
}

/* 1 when box a (a text's, from vizpix_where) lies inside box b, to within half a pixel. */
static inline int vizpix_inside(viz_rect a, viz_rect b)
{
    return a.x >= b.x - 0.5 && a.y >= b.y - 0.5 && a.x + a.w <= b.x + b.w + 0.5 && a.y + a.h <= b.y + b.h + 0.5;
}

/* Draws v of s on a new image surface, logging every text line it shows into log. */
static inline cairo_surface_t *vizpix_draw_logged(viz_source *s, const viz_view *v, vizpix_text *log)
{
    memset(log, 0, sizeof *log);
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, v->width, v->height);
    cairo_t *cr = cairo_create(img);
    viz_text_hook_set(cr, vizpix_log_text, log);
    viz_draw(cr, s, v);
    cairo_destroy(cr);
    cairo_surface_flush(img);
    return img;
}

/* 1 when the frame wrote a text line equal to want. */
static inline int vizpix_wrote(const vizpix_text *t, const char *want)
{
    size_t n = strlen(want);
    for (const char *p = t->all; (p = strstr(p, want)); p += n)
        if ((p == t->all || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

/* Writes img to $ENV/NAME.png when the environment variable env names a folder (to look
 * at what a test drew); nothing otherwise. */
static inline void vizpix_dump(cairo_surface_t *img, const char *env, const char *name)
{
    const char *dir = getenv(env);
    char path[512];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    char err[DP_ERRLEN];
    if (viz_png_save(img, path, err)) fprintf(stderr, "cannot write %s\n", err);
}

#endif
