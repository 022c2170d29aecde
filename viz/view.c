/* view.c — one frame, top to bottom: builds the context (state at t, layout from the
 * model's catalogue so boxes never jump as tasks appear, what is in flight), then draws
 * background, cluster or placement table, panels, timeline, top bar and overlays (compare
 * mode, two of these side by side, is compare.c). Also the hit tests the window uses. */
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
    uint32_t devs[VIZ_MACHINE_DEVICES];
    int machine = viz_model_one_machine(m) && n_ps == 0 && n_w == 1
                      ? viz_model_task_devices(m, EVT_JOB_WORKER, 0, devs, VIZ_MACHINE_DEVICES) : 0;
    viz_layout_input in = {w, h, v->dpr, n_ps, n_w, m->n_vars, vps, vb, side_panels, lanes, machine};
    viz_layout_compute_mode(&in, v->projector ? VIZ_LAYOUT_PROJECTOR : VIZ_LAYOUT_NORMAL, &c->lay);
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

void viz_draw_frame(cairo_t *cr, viz_source *s, const viz_view *v, int64_t t, int w, int h,
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
    if (side_panels) viz_draw_lesson(&c);   /* not in compare halves */
    if (side_panels && v->fork_menu) viz_draw_fork_menu(&c);
    if (v->help) viz_draw_help(&c);
    if (v->toast) viz_draw_toast(&c, v->toast);
    viz_ctx_end(&c);
}

void viz_draw(cairo_t *cr, viz_source *s, const viz_view *v)
{
    dp_assert("viz: view needs a positive size", v->width > 0 && v->height > 0);
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    if (v->compare) viz_draw_compare(cr, s, v);
    else viz_draw_frame(cr, s, v, v->t, v->width, v->height, 1, NULL);
    cairo_restore(cr);
}

void viz_hit(viz_source *s, const viz_view *v, double x, double y, viz_selection *out)
{
    viz_ctx c;
    viz_compare_layout cl;
    viz_layout_compare(v->width, v->height, v->dpr, &cl);
    int w = v->compare ? cl.half_w : v->width, h = v->compare ? cl.top_h : v->height;
    memset(out, 0, sizeof *out);
    if (x >= w || y >= h || v->placement) return;
    viz_ctx_begin(&c, NULL, s, v, v->t, w, h, !v->compare);
    if (viz_rect_contains(c.lay.cluster, x, y)) viz_cluster_hit(&c, x, y, out);
    viz_ctx_end(&c);
}

int64_t viz_scrub_time(viz_source *s, const viz_view *v, double x, double y)
{
    viz_ctx c;
    viz_compare_layout cl;
    viz_layout_compare(v->width, v->height, v->dpr, &cl);
    int w = v->compare ? cl.half_w : v->width, h = v->compare ? cl.top_h : v->height;
    if (x >= w || y >= h) return -1;
    viz_ctx_begin(&c, NULL, s, v, v->t, w, h, !v->compare);
    viz_rect r = c.lay.timeline;
    int64_t t = -1;
    if (viz_rect_contains(r, x, y) && x >= c.lay.lanes.x - 4) {
        t = viz_timeline_time_at(&c, c.lay.lanes, x);
    }
    viz_ctx_end(&c);
    return t;
}
