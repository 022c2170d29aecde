/* test_viz_machine.c — one machine's devices (`downpour local`: no ps, one task), checked
 * on a hand-made run with the colour key as literal RGB (vizpix.h) and positions from the
 * layout, never from the drawing code:
 *   - no ps column: the task's box is large and centred, named /job:localhost/replica:0/task:0,
 *     with one box per device in a row, each headed by its device's colour and name;
 *   - a device box is lit in the computing colour while a compute run is open on it, and
 *     names the op the run starts with;
 *   - copies between devices travel on arcs between the boxes in the pull (forward) or
 *     push (gradient) colour, the arrowhead at the destination; the traffic panel counts
 *     them as device copies, not ps traffic;
 *   - the phase follows the devices: computing while any computes, copying while only
 *     copies are in flight;
 *   - the same events with engine real keep the cluster layout.
 * VIZ_MACHINE_DUMP=DIR writes the frames as PNGs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "viz/internal.h"
#include "vizpix.h"

extern void FcFini(void) __attribute__((weak));

#define MS 1000000

static void add(viz_source *s, int kind, int64_t t, uint32_t device, uint32_t src, uint32_t var,
                int64_t bytes, uint64_t id)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, kind == EVT_CLUSTER_START ? EVT_JOB_CLIENT : EVT_JOB_WORKER, 0);
    e.t = t;
    e.device = device;
    e.str = src;
    e.var = var;
    e.bytes = bytes;
    e.id = id;
    e.step = 1;
    if (kind == EVT_PULL_END || kind == EVT_PUSH_END) e.dur = 4 * MS;   /* as the runtime's ends carry */
    viz_source_append(s, &e);
}

/* Four CPU devices of /job:localhost; from 10 ms CPU:1 and CPU:3 compute (CPU:1's run
 * names its op), a variable is copied CPU:0 -> CPU:2 and a gradient CPU:1 -> CPU:0, both
 * in flight from 10 to 14 ms; the computes end at 16 ms, and from 20 to 24 ms only a copy
 * CPU:0 -> CPU:3 is in flight. engine: "local" or "real". */
static viz_source *machine_run(evt_strtab *strs, const char *engine, uint32_t *id)
{
    char meta[128], name[128];
    snprintf(meta, sizeof meta, "{\"engine\":\"%s\",\"mode\":\"sync\",\"ps\":0}", engine);
    viz_source *s = viz_source_new_mem(strs, meta);
    add(s, EVT_CLUSTER_START, 0, 0, evt_strtab_intern(strs, meta), 0, 0, 0);
    add(s, EVT_TASK_START, 1000, 0, evt_strtab_intern(strs, "localhost"), 0, 0, 0);
    for (int d = 0; d < 4; d++) {
        snprintf(name, sizeof name, "/job:localhost/replica:0/task:0/device:CPU:%d", d);
        id[d] = evt_strtab_intern(strs, name);
        add(s, EVT_DEVICE, 2000 + d, id[d], 0, 0, 0, 0);
        snprintf(name, sizeof name, "tower_%d/hidden/MatMul", d);
        add(s, EVT_OP_PLACE, 3000 + d, id[d], evt_strtab_intern(strs, "MatMul"), evt_strtab_intern(strs, name), 0, 0);
    }
    uint32_t w = evt_strtab_intern(strs, "tower_2/hidden/weights"), g = evt_strtab_intern(strs, "hidden/weights");
    add(s, EVT_COMPUTE_BEGIN, 10 * MS, id[1], 0, evt_strtab_intern(strs, "tower_1/hidden/MatMul"), 0, 0);
    add(s, EVT_COMPUTE_BEGIN, 10 * MS + 1, id[3], 0, 0, 0, 0);
    add(s, EVT_PULL_BEGIN, 10 * MS + 2, id[2], id[0], w, 401408, 7);
    add(s, EVT_PUSH_BEGIN, 10 * MS + 3, id[0], id[1], g, 401408, 8);
    add(s, EVT_PULL_END, 14 * MS, id[2], id[0], w, 401408, 7);
    add(s, EVT_PUSH_END, 14 * MS + 1, id[0], id[1], g, 401408, 8);
    add(s, EVT_COMPUTE_END, 16 * MS, id[1], 0, 0, 0, 0);
    add(s, EVT_COMPUTE_END, 16 * MS + 1, id[3], 0, 0, 0, 0);
    add(s, EVT_PULL_BEGIN, 20 * MS, id[3], id[0], w, 401408, 9);
    add(s, EVT_PULL_END, 24 * MS, id[3], id[0], w, 401408, 9);
    add(s, EVT_GLOBAL_STEP, 40 * MS, 0, 0, 0, 0, 0);
    return s;
}

static viz_view view_at(int64_t t)
{
    viz_view v;
    viz_view_init(&v);
    v.t = t;
    return v;
}

/* Pixels of colour k in a square of side 2r around p. */
static int around(cairo_surface_t *img, viz_point p, double r, viz_rgb k)
{
    return count_color(img, (viz_rect){p.x - r, p.y - r, 2 * r, 2 * r}, k, 0.02);
}

static void test_machine_layout(void)
{
    evt_strtab *strs = evt_strtab_new();
    uint32_t id[4];
    viz_source *s = machine_run(strs, "local", id);
    viz_view v = view_at(12 * MS);
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    viz_layout l = c.lay;
    viz_rect b = l.worker_box[0], cl = l.cluster;
    CHECK_MSG(l.machine && l.n_ps == 0 && l.n_device_boxes == 4, "one machine: no ps, 4 device boxes "
              "(machine %d, %d ps, %d boxes)", l.machine, l.n_ps, l.n_device_boxes);
    CHECK_MSG(b.w >= 0.8 * cl.w && b.h >= 0.8 * cl.h && fabs(b.x + b.w / 2 - (cl.x + cl.w / 2)) < 2,
              "the task is drawn large and centred (%.0fx%.0f in %.0fx%.0f)", b.w, b.h, cl.w, cl.h);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        viz_rect r = l.device_box[i];
        ok &= viz_rect_contains(b, r.x, r.y) && viz_rect_contains(b, r.x + r.w, r.y + r.h);
        ok &= r.h >= l.font * 4 && r.y == l.device_box[0].y;
        if (i) ok &= r.x >= l.device_box[i - 1].x + l.device_box[i - 1].w;
    }
    CHECK_MSG(ok, "the device boxes sit in one row inside the task's box, apart, each tall enough to read");
    viz_ctx_end(&c);
    /* definitions said again (a task re-sends them when it reconnects to a hub): the same
     * four devices, not eight */
    for (int d = 0; d < 4; d++) add(s, EVT_DEVICE, 50 * MS + d, id[d], 0, 0, 0, 0);
    v = view_at(60 * MS);
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    CHECK_MSG(s->m.n_devs == 4 && c.lay.n_device_boxes == 4, "devices said twice: still 4 (%d devices, %d boxes)",
              s->m.n_devs, c.lay.n_device_boxes);
    viz_ctx_end(&c);
    viz_source_free(s);
    /* the same events from a cluster engine keep the worker box */
    s = machine_run(strs, "real", id);
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    CHECK_MSG(!c.lay.machine, "engine real: the cluster layout, not one machine");
    viz_ctx_end(&c);
    viz_source_free(s);
    evt_strtab_free(strs);
}

static void test_machine_devices(void)
{
    evt_strtab *strs = evt_strtab_new();
    uint32_t id[4];
    viz_source *s = machine_run(strs, "local", id);
    viz_view v = view_at(12 * MS);
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_MACHINE_DUMP", "machine-busy");
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    viz_layout l = c.lay;
    c.lay = (viz_layout){0};   /* l owns the rectangles now; released below */
    viz_ctx_end(&c);
    double sc = l.s;
    CHECK_MSG(vizpix_wrote(&log, "/job:localhost/replica:0/task:0") && !strstr(log.all, "/job:worker/task:0"),
              "the task is named /job:localhost/replica:0/task:0, not /job:worker/task:0");
    static const unsigned tol_light[4] = {0x77AADD, 0xEE8866, 0xEEDD88, 0xFFAABB};
    for (int i = 0; i < 4; i++) {
        viz_rect r = l.device_box[i];
        viz_rect body = {r.x + 4 * sc, r.y + l.font_small * 2.2, r.w - 8 * sc, r.h - l.font_small * 2.2 - 4 * sc};
        double area = body.w * body.h;
        int green = count_color(img, body, KEY_COMPUTE, FLAT_TOL);
        int head = count_color(img, (viz_rect){r.x, r.y, r.w, l.font_small * 2}, HEX(tol_light[i]), FLAT_TOL);
        CHECK_MSG(head >= 0.3 * r.w * l.font_small, "device %d's box is headed by its colour (%d px)", i, head);
        if (i % 2) CHECK_MSG(green >= 0.5 * area, "CPU:%d computes: its box is lit green (%d of %.0f px)", i, green, area);
        else CHECK_MSG(green == 0, "CPU:%d is idle: no green in its box (%d px)", i, green);
    }
    CHECK_MSG(vizpix_wrote(&log, "CPU:0") && vizpix_wrote(&log, "CPU:1") && vizpix_wrote(&log, "CPU:2") && vizpix_wrote(&log, "CPU:3"),
              "each device box is named");
    CHECK_MSG(vizpix_wrote(&log, "tower_1/hidden/MatMul"), "CPU:1's box names the op its run starts with");
    CHECK_MSG(vizpix_wrote(&log, "computing") && strstr(log.all, "\n2 of 4 devices computing"),
              "the phase follows the devices: computing, 2 of 4");
    viz_rect b = l.worker_box[0];
    CHECK_MSG(near(pixel(img, b.x + 2.5 * sc, b.y + b.h / 2), KEY_COMPUTE, FLAT_TOL),
              "the task's frame is in the computing colour");
    /* copies: a pull arc CPU:0 -> CPU:2 and a push arc CPU:1 -> CPU:0, each with its disc on
     * the arc and the arrowhead at the destination end (more of its colour there) */
    viz_point mid = viz_layout_copy_pos(&l, 0, 2, 0, 0.5);
    CHECK_MSG(around(img, mid, 3 * sc, KEY_PULL) > 0, "a forward copy CPU:0 -> CPU:2 is drawn on its arc, pull blue");
    viz_point p0 = viz_layout_copy_pos(&l, 0, 2, 0, 0), p1 = viz_layout_copy_pos(&l, 0, 2, 0, 1);
    int at_src = around(img, p0, 10 * sc, KEY_PULL), at_dst = around(img, p1, 10 * sc, KEY_PULL);
    CHECK_MSG(at_dst > at_src + 20, "... its arrowhead lands on CPU:2 (%d px there, %d at CPU:0)", at_dst, at_src);
    viz_point g0 = viz_layout_copy_pos(&l, 1, 0, 1, 0), g1 = viz_layout_copy_pos(&l, 1, 0, 1, 1);
    int gs = around(img, g0, 10 * sc, KEY_PUSH), gd = around(img, g1, 10 * sc, KEY_PUSH);
    CHECK_MSG(gd > gs + 20, "a gradient copy CPU:1 -> CPU:0 in push orange, its arrowhead at CPU:0 (%d, %d px)", gd, gs);
    CHECK_MSG(strstr(log.all, "device copies") && !strstr(log.all, "ps traffic"),
              "the traffic panel counts device copies, not ps traffic");
    cairo_surface_destroy(img);
    /* 22 ms: nothing computes, one copy is in flight: the phase is copying */
    v = view_at(22 * MS);
    img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_MACHINE_DUMP", "machine-copying");
    CHECK_MSG(vizpix_wrote(&log, "copying") && strstr(log.all, "\n0 of 4 devices computing"),
              "only copies in flight: the phase is copying");
    int green = 0;
    for (int i = 0; i < 4; i++) green += count_color(img, l.device_box[i], KEY_COMPUTE, FLAT_TOL);
    CHECK_MSG(green == 0, "no device box is lit (%d px)", green);
    cairo_surface_destroy(img);
    viz_layout_release(&l);
    viz_source_free(s);
    evt_strtab_free(strs);
}

int main(void)
{
    test_machine_layout();
    test_machine_devices();
    cairo_debug_reset_static_data();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
