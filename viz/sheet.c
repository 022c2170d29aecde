/* sheet.c — a one-page summary sheet of a run for handouts and headless demos: a
 * header with what ran and how it ended, then four frames of the same drawing code
 * (three moments of the run and the placement view) on one PNG. Deterministic like
 * every frame: same trace, same sheet. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cairo.h>

#include "common/dp.h"
#include "events/state.h"
#include "viz/png.h"
#include "viz/viz.h"

#define SHEET_W 2560
#define SHEET_HEAD 160
#define FRAME_W 1280
#define FRAME_H 720

static void text(cairo_t *cr, double x, double y, double size, int bold, const char *s)
{
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, s);
}

int viz_render_sheet(viz_source *s, const char *path, const char *title, char *err)
{
    int64_t t0 = viz_source_t0(s), t1 = viz_source_t1(s);
    /* Moments are spread over the training, from the first global step on. */
    int64_t ts = viz_source_time_of_step(s, 1);
    if (ts <= t0 || ts >= t1) ts = t0;
    cairo_surface_t *sheet = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, SHEET_W,
                                                        SHEET_HEAD + 2 * FRAME_H);
    cairo_t *cr = cairo_create(sheet);
    cairo_set_source_rgb(cr, 0.11, 0.11, 0.13);
    cairo_paint(cr);

    const evt_state *st = viz_source_state_at(s, t1);
    char line[512];
    cairo_set_source_rgb(cr, 1, 1, 1);
    text(cr, 40, 64, 44, 1, title && *title ? title : "Downpour run");
    int ps = st ? st->n_ps : 0, workers = st ? st->n_workers : 0;
    snprintf(line, sizeof line, "%d ps, %d workers  |  %.2f s  |  global step %lld  |  %llu events",
             ps, workers, (double)(t1 - t0) / 1e9, st ? (long long)st->global_step : 0LL,
             (unsigned long long)viz_source_events(s));
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.88);
    text(cr, 40, 112, 30, 0, line);
    if (st && st->eval_step >= 0 && !isnan(st->eval_accuracy)) {
        snprintf(line, sizeof line, "test accuracy %.4f at step %lld  |  dropped gradients %lld",
                 st->eval_accuracy, (long long)st->eval_step, (long long)st->drops);
        text(cr, 40, 148, 26, 0, line);
    }
    double at[3] = {0.1, 0.5, 1.0};
    for (int k = 0; k < 4; k++) {
        viz_view v;
        viz_view_init(&v);
        v.width = FRAME_W;
        v.height = FRAME_H;
        v.paused = 1;
        v.t = k < 3 ? ts + (int64_t)((double)(t1 - ts) * at[k]) : t1;
        v.placement = k == 3;
        cairo_surface_t *f = viz_render_image(s, &v);
        cairo_set_source_surface(cr, f, (k % 2) * FRAME_W, SHEET_HEAD + (k / 2) * FRAME_H);
        cairo_paint(cr);
        cairo_surface_destroy(f);
    }
    cairo_destroy(cr);
    int rc = viz_png_save(sheet, path, err);
    cairo_surface_destroy(sheet);
    return rc;
}
