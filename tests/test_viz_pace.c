/* test_viz_pace.c — the paced phase (--pace) in pictures, on a hand-made run: worker 0
 * computes 2..10 ms then waits for the pace 10..60 ms (PACED_BEGIN/END) while every
 * other worker computes 2..50 ms. At 40 ms worker 0 must be drawn in the paced colour
 * and the others in the compute colour — worker boxes, the dense grid of 80 workers, and
 * the timeline lanes — with the colours as literal RGB from the documented key
 * (docs/viewer.md, written out in vizpix.h), never read from the palette. The timeline
 * legend and the dense caption carry a paced entry only when the trace has paced events,
 * and a run without them shows the paced colour nowhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "viz/internal.h"
#include "vizpix.h"

/* fontconfig's cleanup, when the process has it (through cairo); weak so that the
 * test links without -lfontconfig. */
extern void FcFini(void) __attribute__((weak));

#define MS 1000000
#define T_SHOWN (40 * MS)           /* worker 0 paced, the others computing */
#define T_AFTER (80 * MS)           /* nobody paced or computing */

static void add(viz_source *s, int kind, int w, int64_t t, double value)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, EVT_JOB_WORKER, w);
    e.t = t;
    e.step = 1;
    e.value = value;
    viz_source_append(s, &e);
}

/* The run, appended in time order; paced = 0 leaves out worker 0's PACED_BEGIN/END (it is
 * then idle from 10 to 60 ms). strs is borrowed by the source; caller frees both. */
static viz_source *fixture(evt_strtab *strs, int n_workers, int paced)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.str = evt_strtab_intern(strs, "localhost");
    e.t = 1000;
    viz_source_append(s, &e);
    for (int w = 0; w < n_workers; w++) {
        e.job = EVT_JOB_WORKER;
        e.task = w;
        e.t = 2000 + w;
        viz_source_append(s, &e);
    }
    for (int w = 0; w < n_workers; w++) add(s, EVT_COMPUTE_BEGIN, w, 2 * MS, 0);
    add(s, EVT_COMPUTE_END, 0, 10 * MS, 0);
    if (paced) add(s, EVT_PACED_BEGIN, 0, 10 * MS, 0.05);
    for (int w = 1; w < n_workers; w++) add(s, EVT_COMPUTE_END, w, 50 * MS, 0);
    if (paced) add(s, EVT_PACED_END, 0, 60 * MS, 0);
    for (int w = 0; w < n_workers; w++) add(s, EVT_STEP_END, w, 100 * MS, 2.0);
    return s;
}

/* The middle of lane `lane` at time t. */
static void lane_point(const viz_ctx *c, int lane, int64_t t, double *x, double *y)
{
    const viz_layout *l = &c->lay;
    *x = l->lanes.x + l->lanes.w * (double)t / (double)c->t_end;
    *y = l->lanes.y + (lane + 0.5) * l->lane_h;
}

/* The timeline's legend: the label column under the lanes. */
static viz_rect legend_area(const viz_layout *l)
{
    double y = l->lanes.y + l->lanes.h;
    return (viz_rect){l->timeline.x, y, l->lanes.x - l->timeline.x, l->timeline.y + l->timeline.h - y};
}

static void test_boxes_and_timeline(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 2, 1);
    viz_view v;
    viz_view_init(&v);
    v.t = T_SHOWN;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK_MSG(c.lay.n_ps == 1 && c.lay.n_workers == 2 && !c.lay.dense && c.lay.n_lanes >= 3,
              "fixture: 1 ps, 2 worker boxes, a lane each (%d, %d, %d lanes)", c.lay.n_ps,
              c.lay.n_workers, c.lay.n_lanes);
    const evt_task_state *tk = evt_state_task(c.st, EVT_JOB_WORKER, 0);
    CHECK_MSG(tk && tk->phase == EVT_PHASE_PACED, "state at 40 ms: worker 0 paced (phase %s)",
              tk ? evt_phase_name(tk->phase) : "none");
    /* the box's colour band, where test_viz.c reads every phase */
    viz_rect b0 = c.lay.worker_box[0], b1 = c.lay.worker_box[1];
    viz_rgb p0 = pixel(img, b0.x + 2.5 * c.lay.s, b0.y + b0.h / 2);
    viz_rgb p1 = pixel(img, b1.x + 2.5 * c.lay.s, b1.y + b1.h / 2);
    CHECK_MSG(near(p0, KEY_PACED, FLAT_TOL), "worker 0 box at 40 ms in the paced colour 7E76B6 (got %02X%02X%02X)",
              (int)(p0.r * 255 + .5), (int)(p0.g * 255 + .5), (int)(p0.b * 255 + .5));
    CHECK_MSG(!near(p0, KEY_COMPUTE, 0.1), "worker 0 box at 40 ms not in the compute colour 009E73");
    CHECK_MSG(near(p1, KEY_COMPUTE, FLAT_TOL), "worker 1 box at 40 ms in the compute colour 009E73");
    /* lanes: ps 0, worker 0, worker 1; 25 ms is in the past, so drawn at full colour */
    double x, y;
    lane_point(&c, 1, 25 * MS, &x, &y);
    viz_rgb l0 = pixel(img, x, y);
    CHECK_MSG(near(l0, KEY_PACED, FLAT_TOL) && !near(l0, KEY_COMPUTE, 0.1),
              "worker 0's lane at 25 ms (paced 10..60 ms) in the paced colour");
    lane_point(&c, 1, 6 * MS, &x, &y);
    CHECK_MSG(near(pixel(img, x, y), KEY_COMPUTE, FLAT_TOL), "worker 0's lane at 6 ms (compute 2..10 ms) in the compute colour");
    lane_point(&c, 2, 25 * MS, &x, &y);
    CHECK_MSG(near(pixel(img, x, y), KEY_COMPUTE, FLAT_TOL), "worker 1's lane at 25 ms (compute 2..50 ms) in the compute colour");
    /* the legend's paced swatch: fs * 0.8 square, fs = 0.8 small fonts */
    double sw = c.lay.font_small * 0.64;
    int leg = count_color(img, legend_area(&c.lay), KEY_PACED, FLAT_TOL);
    CHECK_MSG(leg >= (int)(0.6 * sw * sw), "paced run: a paced swatch in the timeline legend (%d pixels, swatch %.0f)",
              leg, sw * sw);
    frame_close(&c, img);
    viz_source_free(s);

    /* the same run without its paced events: no legend entry, the colour nowhere */
    s = fixture(strs, 2, 0);
    img = frame_open(s, &v, &c);
    viz_rect all = {0, 0, v.width, v.height};
    int none = count_color(img, all, KEY_PACED, FLAT_TOL);
    CHECK_MSG(none == 0, "unpaced run: the paced colour nowhere in the frame, legend included (%d pixels)", none);
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

static void test_dense(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 80, 1);
    viz_view v;
    viz_view_init(&v);
    v.t = T_SHOWN;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK_MSG(c.lay.dense, "80 workers: the dense grid");
    viz_rect c0 = viz_layout_cell(&c.lay, 0), c1 = viz_layout_cell(&c.lay, 1);
    viz_rgb p0 = pixel(img, c0.x + c0.w / 2, c0.y + c0.h / 2);
    CHECK_MSG(near(p0, KEY_PACED, FLAT_TOL) && !near(p0, KEY_COMPUTE, 0.1),
              "dense: worker 0's cell at 40 ms in the paced colour");
    CHECK_MSG(near(pixel(img, c1.x + c1.w / 2, c1.y + c1.h / 2), KEY_COMPUTE, FLAT_TOL),
              "dense: worker 1's cell at 40 ms in the compute colour");
    /* the caption over the grid: swatches of font_small * 0.9 */
    viz_rect cap = {c.lay.grid.x, c.lay.grid.y - c.lay.font * 1.5, c.lay.grid.w, c.lay.font * 1.5 - 1};
    double sw = c.lay.font_small * 0.9;
    int n = count_color(img, cap, KEY_PACED, FLAT_TOL);
    CHECK_MSG(n >= (int)(0.6 * sw * sw), "dense caption at 40 ms: a paced swatch (%d pixels)", n);
    frame_close(&c, img);
    /* later, nobody paced: a paced run keeps its legend entry */
    v.t = T_AFTER;
    img = frame_open(s, &v, &c);
    n = count_color(img, cap, KEY_PACED, FLAT_TOL);
    CHECK_MSG(n >= (int)(0.6 * sw * sw), "dense caption at 80 ms, none paced now: the paced entry stays (%d pixels)", n);
    frame_close(&c, img);
    viz_source_free(s);

    s = fixture(strs, 80, 0);
    v.t = T_SHOWN;
    img = viz_render_image(s, &v);
    viz_rect all = {0, 0, v.width, v.height};
    n = count_color(img, all, KEY_PACED, FLAT_TOL);
    CHECK_MSG(n == 0, "dense, unpaced run: the paced colour nowhere (%d pixels)", n);
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

int main(void)
{
    test_boxes_and_timeline();
    test_dense();
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
