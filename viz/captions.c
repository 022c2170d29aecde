/* captions.c — the caption bar and the caption history (see captions.h). Text is ink on a
 * white panel, as the rest of the viewer, so that it survives a projector; a rule's dot
 * takes the colour the viewer already gives that thing (a drop the dead vermillion, a
 * stale gradient the push orange, the barrier its yellow), so no new colour is learnt. */
#include "viz/captions.h"

#include <math.h>
#include <stdio.h>

#include "viz/internal.h"

static viz_rgb rule_color(int rule)
{
    switch (rule) {
    case EVT_CAPTION_FAILURE:
    case EVT_CAPTION_TIMEOUT:
    case EVT_CAPTION_RECONNECT:
    case EVT_CAPTION_DROP: return viz_phase_color(EVT_PHASE_DEAD);
    case EVT_CAPTION_RECOVERY: return viz_phase_color(EVT_PHASE_COMPUTING);
    case EVT_CAPTION_STALENESS: return viz_phase_color(EVT_PHASE_PUSHING);
    case EVT_CAPTION_SSP_WAIT:
    case EVT_CAPTION_STRAGGLER: return viz_phase_color(EVT_PHASE_SSP);
    case EVT_CAPTION_BARRIER: return viz_phase_color(EVT_PHASE_BARRIER);
    case EVT_CAPTION_PACE: return viz_phase_color(EVT_PHASE_PACED);
    case EVT_CAPTION_EVAL:
    case EVT_CAPTION_CHECKPOINT: return VIZ_ACCENT;
    default: return VIZ_LINE;
    }
}

/* A white panel with a one-pixel border, the clip set to r (caller restores). */
static void panel(cairo_t *cr, viz_rect r, double radius)
{
    cairo_rectangle(cr, r.x, r.y, r.w, r.h);
    cairo_clip(cr);
    viz_round_rect(cr, (viz_rect){r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1}, radius);
    viz_set(cr, VIZ_PANEL);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_LINE);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

void viz_draw_caption_bar(cairo_t *cr, viz_rect r, const char *text, int projector)
{
    if (r.w < 4 || r.h < 4) return;
    cairo_save(cr);
    double font = r.h * (projector ? 0.56 : 0.46);
    panel(cr, r, r.h * 0.18);
    /* the accent mark: where the eye finds the caption */
    double mark = projector ? 6 : 4;
    viz_set(cr, VIZ_ACCENT);
    cairo_rectangle(cr, r.x + font * 0.4, r.y + r.h * 0.2, mark, r.h * 0.6);
    cairo_fill(cr);
    if (text && *text) {
        double x = r.x + font * 0.4 + mark + font * 0.5;
        viz_set(cr, VIZ_INK);
        viz_font(cr, font, projector);
        viz_text(cr, x, r.y + r.h * 0.5 + font * 0.36, text, 0, r.x + r.w - x - font * 0.5);
    }
    cairo_restore(cr);
}

int viz_draw_caption_history(cairo_t *cr, viz_rect r, const evt_captioner *c, int scroll)
{
    if (r.w < 4 || r.h < 4) return 0;
    cairo_save(cr);
    panel(cr, r, 6);
    double font = 13, lh = font * 1.5, pad = font * 0.5;
    if (r.h < 2 * pad + 3 * lh) {   /* a short panel still shows three lines */
        lh = (r.h - 2 * pad) / 3;
        font = lh / 1.5;
    }
    /* the list: a note on dropped captions (when any), then the kept ones, oldest first */
    int note = evt_captioner_dropped(c) > 0, n = (int)evt_captioner_count(c) + note;
    int rows = (int)((r.h - 2 * pad) / lh);
    int max_scroll = n > rows ? n - rows : 0;
    if (scroll > max_scroll) scroll = max_scroll;
    if (scroll < 0) scroll = 0;
    int first = n - rows - scroll;
    if (first < 0) first = 0;
    double y = r.y + pad + lh * 0.72, x_step = r.x + pad + font;
    viz_font(cr, font, 0);
    char buf[64];
    snprintf(buf, sizeof buf, "step %lld", 999999LL);
    double step_w = viz_text_width(cr, buf), x_text = x_step + step_w + font * 0.8;
    double text_w = r.x + r.w - pad - x_text;
    for (int j = first, row = 0; j < n && row < rows; j++, row++) {
        double yl = y + row * lh;
        if (note && j == 0) {
            snprintf(buf, sizeof buf, "\xe2\x80\xa6 %llu older captions dropped",
                     (unsigned long long)evt_captioner_dropped(c));
            viz_set(cr, VIZ_MUTED);
            viz_text(cr, x_text, yl, buf, 0, text_w);
            continue;
        }
        const evt_caption *k = evt_captioner_get(c, (size_t)(j - note));
        viz_set(cr, rule_color(k->rule));
        cairo_arc(cr, r.x + pad + font * 0.35, yl - font * 0.35, font * 0.3, 0, 2 * M_PI);
        cairo_fill(cr);
        snprintf(buf, sizeof buf, "step %lld", (long long)k->step);
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, x_step, yl, buf, 0, step_w);
        viz_set(cr, VIZ_INK);
        viz_text(cr, x_text, yl, k->text, 0, text_w);
    }
    cairo_restore(cr);
    return scroll;
}
