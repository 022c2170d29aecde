/* view.c — one frame, top to bottom: builds the context (state at t, layout from the
 * model's catalogue so boxes never jump as tasks appear, what is in flight), then draws
 * background, cluster or placement table, panels, timeline, top bar and overlays. Compare
 * mode draws two traces side by side on one clock (B follows A's time, or A's global
 * step) over a shared strip with both loss curves. Also the hit tests the window uses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

void viz_view_init(viz_view *v)
{
    memset(v, 0, sizeof *v);
    v->width = 1280;
    v->height = 720;
    v->dpr = 1;
    v->speed = 1;
}

void viz_ctx_begin(viz_ctx *c, cairo_t *cr, viz_source *s, const viz_view *v, int64_t t,
                   int w, int h, int side_panels)
{
    memset(c, 0, sizeof *c);
    c->cr = cr;
    c->src = s;
    c->view = v;
    c->t = t;
    c->st = viz_source_state_at(s, t);
    const viz_model *m = &s->m;
    int n_ps = m->n_ps > c->st->ps_len ? m->n_ps : c->st->ps_len;
    int n_w = m->n_workers > c->st->workers_len ? m->n_workers : c->st->workers_len;
    int *vps = xmalloc(((size_t)m->n_vars + 1) * sizeof *vps);
    int64_t *vb = xmalloc(((size_t)m->n_vars + 1) * sizeof *vb);
    for (int i = 0; i < m->n_vars; i++) {
        vps[i] = m->vars[i].ps;
        vb[i] = m->vars[i].bytes;
    }
    int lanes = n_ps + n_w;
    if (lanes > m->n_lanes) lanes = m->n_lanes + 1;
    viz_layout_input in = {w, h, v->dpr, n_ps, n_w, m->n_vars, vps, vb, side_panels, lanes};
    viz_layout_compute(&in, &c->lay);
    free(vps);
    free(vb);
    viz_frame_build(s, c->st, t, &c->fr);
    int64_t t1 = viz_source_t1(s);
    c->t_end = t1 > t ? t1 : t;
    if (c->t_end <= 0) c->t_end = 1;
}

void viz_ctx_end(viz_ctx *c)
{
    viz_layout_release(&c->lay);
    viz_frame_release(&c->fr);
}

static void draw_one(cairo_t *cr, viz_source *s, const viz_view *v, int64_t t, int w, int h,
                     int side_panels, const char *tag)
{
    viz_ctx c;
    viz_ctx_begin(&c, cr, s, v, t, w, h, side_panels);
    viz_set(cr, VIZ_BG);
    cairo_rectangle(cr, 0, 0, w, h);
    cairo_fill(cr);
    if (v->placement) viz_draw_placement(&c);
    else viz_draw_cluster(&c);
    viz_draw_panels(&c);
    viz_draw_timeline(&c);
    viz_draw_topbar(&c, c.lay.top, tag);
    if (v->sel.kind != VIZ_SEL_NONE && !v->placement) viz_draw_inspector(&c);
    if (v->help) viz_draw_help(&c);
    if (v->toast) viz_draw_toast(&c, v->toast);
    viz_ctx_end(&c);
}

static int64_t compare_time(viz_source *a, viz_source *b, const viz_view *v)
{
    if (!v->compare_by_step) return v->t;
    int64_t step = viz_source_state_at(a, v->t)->global_step;
    return step > 0 ? viz_source_time_of_step(b, step) : 0;
}

static void draw_compare(cairo_t *cr, viz_source *a, const viz_view *v)
{
    viz_source *b = v->compare;
    int w = v->width, h = v->height, half = w / 2, top_h = (int)(h * 0.74);
    int64_t tb = compare_time(a, b, v);
    viz_view vb = *v;
    vb.live = viz_source_is_live(b);  /* B follows A's clock, but only A may be live */
    vb.behind_live = 0;
    vb.sel.kind = VIZ_SEL_NONE;
    vb.help = 0;
    vb.toast = NULL;
    cairo_save(cr);
    cairo_rectangle(cr, 0, 0, half, top_h);
    cairo_clip(cr);
    draw_one(cr, a, v->help || v->toast ? &vb : v, v->t, half, top_h, 0, "A");
    cairo_restore(cr);
    cairo_save(cr);
    cairo_translate(cr, half, 0);
    cairo_rectangle(cr, 0, 0, w - half, top_h);
    cairo_clip(cr);
    draw_one(cr, b, &vb, tb, w - half, top_h, 0, "B");
    cairo_restore(cr);
    /* shared strip: both loss curves on one time axis */
    viz_ctx c;
    viz_ctx_begin(&c, cr, a, v, v->t, w, h, 1);
    double s = c.lay.s;
    viz_rect strip = {10 * s, top_h + 6 * s, w - 20 * s, h - top_h - 12 * s};
    viz_set(cr, VIZ_BG);
    cairo_rectangle(cr, 0, top_h, w, h - top_h);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, strip, 6 * s);
    cairo_fill(cr);
    int64_t span = viz_source_t1(a) > viz_source_t1(b) ? viz_source_t1(a) : viz_source_t1(b);
    double ymax = fmax(viz_model_loss_max(&a->m), viz_model_loss_max(&b->m)) * 1.05;
    viz_rect plot = {strip.x + 10 * s, strip.y + c.lay.font * 1.6, strip.w - 20 * s,
                     strip.h - c.lay.font * 2.0};
    viz_rgb ca = VIZ_ACCENT, cb = viz_phase_color(EVT_PHASE_DEAD);
    viz_plot_loss(&c, plot, &a->m, v->t, span, ca, 0, ymax);
    viz_plot_loss(&c, plot, &b->m, tb, span, cb, 0, ymax);
    char buf[320];
    viz_font(cr, c.lay.font_small, 1);
    viz_set(cr, ca);
    double x = strip.x + 10 * s, y = strip.y + c.lay.font * 1.1;
    snprintf(buf, sizeof buf, "loss  A: %s (%s)", a->m.title[0] ? a->m.title : "A", a->m.mode);
    x += viz_text(cr, x, y, buf, 0, strip.w * 0.45) + 24 * s;
    viz_set(cr, cb);
    snprintf(buf, sizeof buf, "B: %s (%s)", b->m.title[0] ? b->m.title : "B", b->m.mode);
    x += viz_text(cr, x, y, buf, 0, strip.w * 0.3) + 24 * s;
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, strip.x + strip.w - 10 * s, y, v->compare_by_step ? "clock: global step" : "clock: time",
             2, 0);
    if (v->help) viz_draw_help(&c);
    if (v->toast) viz_draw_toast(&c, v->toast);
    viz_ctx_end(&c);
}

void viz_draw(cairo_t *cr, viz_source *s, const viz_view *v)
{
    dp_assert("viz: view needs a positive size", v->width > 0 && v->height > 0);
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    if (v->compare) draw_compare(cr, s, v);
    else draw_one(cr, s, v, v->t, v->width, v->height, 1, NULL);
    cairo_restore(cr);
}

void viz_hit(viz_source *s, const viz_view *v, double x, double y, viz_selection *out)
{
    viz_ctx c;
    int w = v->compare ? v->width / 2 : v->width, h = v->compare ? (int)(v->height * 0.74) : v->height;
    memset(out, 0, sizeof *out);
    if (x >= w || y >= h || v->placement) return;
    viz_ctx_begin(&c, NULL, s, v, v->t, w, h, !v->compare);
    if (viz_rect_contains(c.lay.cluster, x, y)) viz_cluster_hit(&c, x, y, out);
    viz_ctx_end(&c);
}

int64_t viz_scrub_time(viz_source *s, const viz_view *v, double x, double y)
{
    viz_ctx c;
    int w = v->compare ? v->width / 2 : v->width, h = v->compare ? (int)(v->height * 0.74) : v->height;
    if (x >= w || y >= h) return -1;
    viz_ctx_begin(&c, NULL, s, v, v->t, w, h, !v->compare);
    viz_rect r = c.lay.timeline;
    int64_t t = -1;
    if (viz_rect_contains(r, x, y) && x >= c.lay.lanes.x - 4) {
        double f = (x - c.lay.lanes.x) / c.lay.lanes.w;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        t = (int64_t)(f * (double)c.t_end);
    }
    viz_ctx_end(&c);
    return t;
}
