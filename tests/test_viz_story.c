/* test_viz_story.c — a viewer that explains what it shows, checked on hand-made runs with
 * expectations from the fixtures and the layout, never from the drawing code: colours are
 * the literal key (vizpix.h), positions come from the layout's boxes, lanes and endpoints,
 * and a feature is judged against the same frame without it.
 *   - global_step's version label on its ps shows the global step;
 *   - after the run ends no lane draws anything past it, and a phase left open is closed
 *     at the end (a live view runs ahead of the last event);
 *   - compare lines B up on each run's start, and its strip has axes, ticks at nice values
 *     and a cursor at A's time;
 *   - each transfer in flight carries an arrowhead on the side toward its destination (and
 *     none behind), a mark where it lands, a label, and a legend for the two colours;
 *   - a straggler's box says "slow ×F"; a sampled sim trace says "16 sampled of 1,200" in
 *     every panel that counts traffic or applies;
 *   - the chief's evaluation is a phase of its own, in its own colour, in the key. */
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

/* ---- fixtures ---------------------------------------------------------------------- */

/* One event (kind, job, task) at t with peer (a ps for a worker's transfer, a worker for a
 * ps's apply; -1 none), var, bytes, step and value, appended to s (in time order). */
static void ev(viz_source *s, int kind, int job, int task, int64_t t, int peer, uint32_t var,
               int64_t bytes, int64_t step, double value)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, job, task);
    e.t = t;
    e.peer = peer;
    e.peer_job = peer < 0 ? 0 : job == EVT_JOB_PS ? EVT_JOB_WORKER : EVT_JOB_PS;
    e.var = var;
    e.bytes = bytes;
    e.step = step;
    e.value = value;
    e.id = (uint64_t)(t / 1000 + 1);
    viz_source_append(s, &e);
}

/* A transfer [t0, t1) by worker w with ps p: begin and end with matching ids. */
static void transfer(viz_source *s, int push, int w, int p, uint32_t var, int64_t bytes,
                     int64_t t0, int64_t t1, uint64_t id)
{
    evt_record e;
    evt_init(&e, push ? EVT_PUSH_BEGIN : EVT_PULL_BEGIN, EVT_JOB_WORKER, w);
    e.t = t0;
    e.peer = p;
    e.peer_job = EVT_JOB_PS;
    e.var = var;
    e.bytes = bytes;
    e.id = id;
    viz_source_append(s, &e);
    if (t1 < 0) return;   /* never ends */
    e.kind = push ? EVT_PUSH_END : EVT_PULL_END;
    e.t = t1;
    e.dur = t1 - t0;
    viz_source_append(s, &e);
}

/* Tasks: 1 ps and n workers started at t0 + 1 us .., variables named in vars (each of
 * bytes[i]) placed on ps 0. Returns the variables' string ids in ids. */
static void tasks(viz_source *s, evt_strtab *strs, int64_t t0, int n_workers, const char *const *vars,
                  const int64_t *bytes, int n_vars, uint32_t *ids)
{
    uint32_t host = evt_strtab_intern(strs, "localhost");
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.t = t0;
    e.str = evt_strtab_intern(strs, "{\"mode\":\"async\"}");
    viz_source_append(s, &e);
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.t = t0 + 1000;
    e.str = host;
    viz_source_append(s, &e);
    for (int w = 0; w < n_workers; w++) {
        evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, w);
        e.t = t0 + 2000 + w;
        e.str = host;
        viz_source_append(s, &e);
    }
    for (int v = 0; v < n_vars; v++) {
        ids[v] = evt_strtab_intern(strs, vars[v]);
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
        e.t = t0 + 3000 + v;
        e.var = ids[v];
        e.bytes = bytes[v];
        e.str = evt_strtab_intern(strs, "100");
        viz_source_append(s, &e);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
        e.t = t0 + 3500 + v;
        e.var = ids[v];
        e.peer_job = EVT_JOB_PS;
        e.peer = 0;
        e.device = evt_strtab_intern(strs, "/job:ps/replica:0/task:0/device:CPU:0");
        viz_source_append(s, &e);
    }
}

static viz_view view_at(int64_t t)
{
    viz_view v;
    viz_view_init(&v);
    v.t = t;
    return v;
}

/* The middle of lane `lane` at time t. */
static viz_point lane_point(const viz_ctx *c, int lane, int64_t t)
{
    const viz_layout *l = &c->lay;
    return (viz_point){l->lanes.x + l->lanes.w * (double)t / (double)c->t_end,
                       l->lanes.y + (lane + 0.5) * l->lane_h};
}

static const char *hex(viz_rgb p, char buf[8])
{
    snprintf(buf, 8, "%02X%02X%02X", (int)(p.r * 255 + .5), (int)(p.g * 255 + .5), (int)(p.b * 255 + .5));
    return buf;
}

/* ---- 1a: global_step shows the global step ----------------------------------------- */

static void test_global_step_label(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync\"}");
    static const char *const names[] = {"global_step", "hidden/weights"};
    static const int64_t bytes[] = {8, 401408};
    uint32_t ids[2];
    tasks(s, strs, 0, 1, names, bytes, 2, ids);
    for (int k = 1; k <= 7; k++) ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, k * 10 * MS, -1, 0, 0, k, 0);
    viz_view v = view_at(75 * MS);   /* global step 7 */
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    char lab[64];
    viz_var_version_label(&c, 0, lab, sizeof lab);
    CHECK_MSG(!strcmp(lab, "step 7"), "global_step's label at global step 7 reads \"step 7\" (got \"%s\")", lab);
    viz_var_version_label(&c, 1, lab, sizeof lab);
    CHECK_MSG(!strcmp(lab, "v0"), "a variable with no applies keeps \"v0\" (got \"%s\")", lab);
    /* the label's place: right-aligned over the bar's track, one small line above it */
    viz_rect g = c.lay.var_bar[0], w = c.lay.var_bar[1], box = c.lay.ps_box[0];
    double s1 = c.lay.s, right = box.x + box.w - 6 * s1, fh = c.lay.font_small * 1.2;
    viz_rect lab_g = {right - 90 * s1, g.y - 4 * s1 - fh, 90 * s1, fh};
    viz_rect lab_w = {right - 90 * s1, w.y - 4 * s1 - fh, 90 * s1, fh};
    viz_view v3 = view_at(35 * MS);   /* global step 3 */
    cairo_surface_t *img3 = viz_render_image(s, &v3);
    int moved = differing(img, img3, lab_g, 0.1), still = differing(img, img3, lab_w, 0.1);
    CHECK_MSG(moved >= 20, "global_step's label changes from step 3 to step 7 (%d pixels differ)", moved);
    CHECK_MSG(still == 0, "hidden/weights' label (no applies) does not (%d pixels differ)", still);
    cairo_surface_destroy(img3);
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- 1b: the end of the run closes every phase --------------------------------------- */

static void test_end_closes_phases(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    static const char *const names[] = {"w"};
    static const int64_t bytes[] = {4000};
    uint32_t ids[1];
    tasks(s, strs, 0, 2, names, bytes, 1, ids);
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 5 * MS, -1, 0, 0, 1, 0);
    transfer(s, 0, 0, 0, ids[0], 4000, 10 * MS, 20 * MS, 1);
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 20 * MS, -1, 0, 0, 1, 0);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 30 * MS, -1, 0, 0, 1, 0);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 1, 30 * MS, -1, 0, 0, 1, 0);
    transfer(s, 0, 0, 0, ids[0], 4000, 35 * MS, -1, 2);   /* its end never comes */
    for (int w = 0; w < 2; w++) ev(s, EVT_TASK_STOP, EVT_JOB_WORKER, w, 40 * MS, -1, 0, 0, 0, 0);
    ev(s, EVT_TASK_STOP, EVT_JOB_PS, 0, 40 * MS, -1, 0, 0, 0, 0);
    ev(s, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, 41 * MS, -1, 0, 0, 0, 0);
    /* a live view runs up to ~0.5 s ahead of the last event: draw at 80 ms */
    viz_view v = view_at(80 * MS);
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK_MSG(c.lay.n_lanes >= 3 && c.t_end == 80 * MS, "fixture: 3 lanes (%d), time axis to 80 ms", c.lay.n_lanes);
    char h[8];
    int drawn = 0;
    for (int lane = 0; lane < 3; lane++)
        for (int64_t t = 45 * MS; t <= 78 * MS; t += 3 * MS) {
            viz_point q = lane_point(&c, lane, t);
            drawn += !near(pixel(img, q.x, q.y), KEY_WHITE, FLAT_TOL);
        }
    CHECK_MSG(drawn == 0, "after the run ended (41 ms) every lane is empty white to 80 ms (%d of 36 "
              "samples drawn)", drawn);
    viz_point q = lane_point(&c, 1, 60 * MS);
    viz_rgb p = pixel(img, q.x, q.y);
    CHECK_MSG(!near(p, KEY_PULL, 0.1), "worker 0's lane at 60 ms is not pull blue (got %s)", hex(p, h));
    q = lane_point(&c, 1, 37 * MS + MS / 2);
    p = pixel(img, q.x, q.y);
    CHECK_MSG(near(p, KEY_PULL, FLAT_TOL), "the pull left open at 35 ms is drawn to worker 0's stop "
              "at 40 ms: lane at 37.5 ms in pull blue (got %s)", hex(p, h));
    q = lane_point(&c, 0, 37 * MS + MS / 2);
    p = pixel(img, q.x, q.y);
    CHECK_MSG(near(p, KEY_PULL, FLAT_TOL), "... and on ps 0's lane (got %s)", hex(p, h));
    q = lane_point(&c, 1, 25 * MS);
    CHECK_MSG(near(pixel(img, q.x, q.y), KEY_COMPUTE, FLAT_TOL), "worker 0's compute (20..30 ms) still drawn");
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- 1c, 1d: compare lines up on each run's start; the strip's axes ------------------- */

/* A run starting at t0 (a hub that started t0 earlier): worker 0 pulls var 0 from t0 + 10
 * to t0 + 30 ms, and reports losses (2.0 falling) every 2 ms from t0 + 2 to t0 + 40 ms, its
 * last event. */
static viz_source *compare_run(evt_strtab *strs, int64_t t0)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    static const char *const names[] = {"w"};
    static const int64_t bytes[] = {250000};
    uint32_t ids[1];
    tasks(s, strs, t0, 1, names, bytes, 1, ids);
    for (int k = 1; k <= 20; k++) {
        if (k == 5) transfer(s, 0, 0, 0, ids[0], 250000, t0 + 10 * MS, t0 + 30 * MS, 1);
        ev(s, EVT_STEP_END, EVT_JOB_WORKER, 0, t0 + 2 * k * MS, -1, 0, 0, k, 2.0 * (1 - 0.02 * (k - 1)));
    }
    return s;
}

static void test_compare(void)
{
    evt_strtab *strs = evt_strtab_new();
    int64_t oa = 500 * MS, ob = 1 * MS;
    viz_source *a = compare_run(strs, oa), *b = compare_run(strs, ob);
    viz_view v = view_at(oa + 20 * MS);   /* A's pull half-way */
    v.compare = b;
    int64_t tb = viz_compare_time(a, b, &v);
    CHECK_MSG(tb == ob + 20 * MS, "compare by time: B at its start + 20 ms = 21 ms when A is at its start + "
              "20 ms (got %.3f ms)", (double)tb / MS);
    cairo_surface_t *img = viz_render_image(a, &v);
    vizpix_dump(img, "VIZ_STORY_DUMP", "compare");
    viz_compare_layout cl;
    viz_layout_compare(v.width, v.height, v.dpr, &cl);
    /* B's half is a frame of its own: its pull, half-way too, where that frame's layout puts it */
    viz_view vb = v;
    vb.compare = NULL;
    viz_ctx c;
    viz_ctx_begin(&c, NULL, b, &vb, ob + 20 * MS, v.width - cl.half_w, cl.top_h, 0);
    viz_point q = viz_layout_packet_pos(&c.lay, 0, 0, 0, 0.5);
    viz_ctx_end(&c);
    q.x += cl.half_w;
    long n = 0;
    double sx = 0, sy = 0;
    for (int y = (int)(q.y - 16); y <= q.y + 16; y++)
        for (int x = (int)(q.x - 16); x <= q.x + 16; x++)
            if (near(pixel(img, x, y), KEY_VAR(0), 0.01)) n++, sx += x + 0.5, sy += y + 0.5;
    double d = n ? hypot(sx / n - q.x, sy / n - q.y) : 99;
    CHECK_MSG(n >= 40 && d < 1.5, "B's pull is drawn half-way in B's half (%ld pixels, %.1f px off): B "
              "follows A's time since its start", n, d);
    /* the strip: a 40 ms span (both runs last 40 ms from their starts), losses up to 2.0 */
    viz_rect p = cl.plot;
    double s1 = fmin(v.width / 1280.0, v.height / 720.0), bottom = p.y + p.h;
    int axis_x = 0, axis_y = 0;
    for (int x = (int)p.x + 2; x < p.x + p.w - 2; x++) {
        int hit = 0;
        for (int dy = -2; dy <= 1; dy++) hit |= near(pixel(img, x, bottom + dy), KEY_INK, 0.1);
        axis_x += hit;
    }
    for (int y = (int)p.y + 2; y < bottom - 2; y++) {
        int hit = 0;
        for (int dx = -2; dx <= 1; dx++) hit |= near(pixel(img, p.x + dx, y), KEY_INK, 0.1);
        axis_y += hit;
    }
    CHECK_MSG(axis_x >= 0.95 * (p.w - 4), "strip: an ink time axis along the plot's bottom (%d of %.0f px)",
              axis_x, p.w - 4);
    CHECK_MSG(axis_y >= 0.95 * (p.h - 4), "strip: an ink loss axis along the plot's left (%d of %.0f px)",
              axis_y, p.h - 4);
    /* ticks every 5 ms (the nice step for 40 ms / 8), under the axis; none half-way between */
    int ticks = 0, between = 0;
    for (int k = 0; k <= 8; k++) {
        double x = p.x + p.w * k / 8.0, xm = p.x + p.w * (k + 0.5) / 8.0;
        int t = 0, m = 0;
        for (int y = (int)(bottom + 2 * s1 + 1); y < bottom + 4 * s1; y++)
            for (int dx = -1; dx <= 1; dx++) {
                t |= near(pixel(img, x + dx, y), KEY_INK, 0.15);
                if (k < 8) m |= near(pixel(img, xm + dx, y), KEY_INK, 0.15);
            }
        ticks += t;
        between += m;
    }
    CHECK_MSG(ticks == 9, "strip: time ticks at 0, 5, ..., 40 ms (%d of 9)", ticks);
    CHECK_MSG(between == 0, "strip: no tick half-way between them (%d)", between);
    /* loss ticks at 0, 0.5, ..., 2 (ymax 2.1 = 2.0 x 1.05: step 0.5), left of the axis */
    int yt = 0;
    for (int k = 0; k <= 4; k++) {
        double y = bottom - p.h * (0.5 * k) / 2.1;
        int t = 0;
        for (int x = (int)(p.x - 4 * s1 + 1); x < p.x - 1; x++)
            for (int dy = -1; dy <= 1; dy++) t |= near(pixel(img, x, y + dy), KEY_INK, 0.15);
        yt += t;
    }
    CHECK_MSG(yt == 5, "strip: loss ticks at 0, 0.5, 1, 1.5, 2 (%d of 5)", yt);
    /* the cursor: A at 20 ms of 40, an ink line down the middle of the plot */
    double xc = p.x + p.w * 0.5;
    int cur = 0;
    for (int y = (int)p.y + 2; y < bottom - 2; y++) {
        int hit = 0;
        for (int dx = -1; dx <= 1; dx++) hit |= near(pixel(img, xc + dx, y), KEY_INK, 0.1);
        cur += hit;
    }
    CHECK_MSG(cur >= 0.9 * (p.h - 4), "strip: a cursor at A's time (20 of 40 ms) over the plot's height "
              "(%d of %.0f px)", cur, p.h - 4);
    cairo_surface_destroy(img);
    viz_source_free(a);
    viz_source_free(b);
    evt_strtab_free(strs);
}

/* ---- 2: transfers read as what they are ---------------------------------------------- */

#define T_BEGIN (10 * MS)
#define T_END (30 * MS)
#define PACKET_BYTES 250000

/* One ps, two workers: worker 0 pulls "w" while worker 1 pushes "b", both half-way at 20 ms. */
static viz_source *transfer_run(evt_strtab *strs)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"sim\",\"mode\":\"async\"}");
    static const char *const names[] = {"w", "b"};
    static const int64_t bytes[] = {PACKET_BYTES, PACKET_BYTES};
    uint32_t ids[2];
    tasks(s, strs, 0, 2, names, bytes, 2, ids);
    transfer(s, 0, 0, 0, ids[0], PACKET_BYTES, T_BEGIN, T_END, 1);
    transfer(s, 1, 1, 0, ids[1], PACKET_BYTES, T_BEGIN, T_END, 1);
    return s;
}

/* Pixels of colour col near the packet at q travelling along u (unit), radius r: ahead of
 * it ((p - q).u in (r, 3r], within 2r of its line) and behind it ([-3r, -r)). */
static void ahead_behind(cairo_surface_t *img, viz_point q, viz_point u, double r, viz_rgb col,
                         int *ahead, int *behind)
{
    *ahead = *behind = 0;
    for (int y = (int)(q.y - 4 * r); y <= q.y + 4 * r; y++)
        for (int x = (int)(q.x - 4 * r); x <= q.x + 4 * r; x++) {
            double dx = x + 0.5 - q.x, dy = y + 0.5 - q.y, along = dx * u.x + dy * u.y;
            double across = fabs(-dx * u.y + dy * u.x);
            if (across > 2 * r || !near(pixel(img, x, y), col, 0.03)) continue;
            if (along > r && along <= 3 * r) (*ahead)++;
            if (along < -r && along >= -3 * r) (*behind)++;
        }
}

/* The disc's radius: the area of its variable's colour within 20 px of q. */
static double disc_radius(cairo_surface_t *img, viz_point q, viz_rgb fill)
{
    long n = 0;
    for (int y = (int)(q.y - 20); y <= q.y + 20; y++)
        for (int x = (int)(q.x - 20); x <= q.x + 20; x++) n += near(pixel(img, x, y), fill, 0.01);
    return sqrt((double)n / M_PI);
}

static void test_direction(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = transfer_run(strs);
    viz_view v = view_at(20 * MS);
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    vizpix_dump(img, "VIZ_STORY_DUMP", "direction");
    const viz_layout *l = &c.lay;
    double s1 = l->s;
    static const char *const what[2] = {"pull of w by worker 0 (ps -> worker)", "push of b by worker 1 (worker -> ps)"};
    cairo_surface_t *done = viz_render_image(s, &(viz_view){.t = T_END, .width = v.width, .height = v.height,
                                                            .dpr = 1, .speed = 1});
    for (int d = 0; d < 2; d++) {
        int w = d;   /* worker 0 pulls, worker 1 pushes */
        viz_point from = viz_layout_packet_pos(l, 0, w, d, 0), to = viz_layout_packet_pos(l, 0, w, d, 1);
        double len = hypot(to.x - from.x, to.y - from.y);
        viz_point u = {(to.x - from.x) / len, (to.y - from.y) / len};
        viz_point q = viz_layout_packet_pos(l, 0, w, d, 0.5);
        double r = disc_radius(img, q, KEY_VAR(d));
        viz_rgb col = d ? KEY_PUSH : KEY_PULL;
        int ahead, behind;
        ahead_behind(img, q, u, r, col, &ahead, &behind);
        CHECK_MSG(r >= 5 && ahead >= 20, "%s: an arrowhead in its direction's colour toward its destination "
                  "(%d pixels ahead, disc radius %.1f)", what[d], ahead, r);
        CHECK_MSG(behind == 0, "%s: none of it on the side it came from (%d pixels)", what[d], behind);
        /* where it lands: a mark across the edge just short of the receiver's end */
        viz_point m = {to.x - u.x * 4 * s1, to.y - u.y * 4 * s1};
        int land = count_color(img, (viz_rect){m.x - 6 * s1, m.y - 2 * s1, 12 * s1, 4 * s1}, col, 0.03);
        int land0 = count_color(done, (viz_rect){m.x - 6 * s1, m.y - 2 * s1, 12 * s1, 4 * s1}, col, 0.03);
        CHECK_MSG(land >= 12 && land0 == 0, "%s: its landing end marked (%d pixels; %d once it arrived)",
                  what[d], land, land0);
        /* its label beside it, to its right: ink text that is gone once it arrived */
        viz_rect lab = {q.x + r + 8 * s1, q.y - l->font_small * 0.5, 90 * s1, l->font_small};
        int ink = count_color(img, lab, KEY_INK, 0.2), ink0 = count_color(done, lab, KEY_INK, 0.2);
        CHECK_MSG(ink >= 30 && ink0 <= 2, "%s: a label beside it (%d ink pixels; %d once it arrived)",
                  what[d], ink, ink0);
    }
    /* the legend under the ps row, still there when nothing is in flight */
    viz_rect leg = {l->cluster.x, l->ps_area.y + l->ps_area.h + 2 * s1, l->cluster.w, l->font_small * 2};
    int pull = count_color(done, leg, KEY_PULL, 0.03), push = count_color(done, leg, KEY_PUSH, 0.03);
    int ink = count_color(done, leg, KEY_INK, 0.2);
    CHECK_MSG(pull >= 20 && push >= 20 && ink >= 100, "legend under the ps: a pull swatch (%d), a push swatch "
              "(%d) and their names (%d ink pixels)", pull, push, ink);
    cairo_surface_destroy(done);
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- 3: stragglers and sampling say so ------------------------------------------------ */

static void test_straggler(void)
{
    static const struct { const char *meta; int w; double f; } cases[] = {
        {"{\"straggler\":\"worker:3x4\"}", 3, 4},
        {"{\"config\":{\"straggler\":\"worker:0x1.5,worker:2x3\"}}", 2, 3},
        {"{\"config\":{\"straggler\":\"worker:0x1.5,worker:2x3\"}}", 0, 1.5},
        {"{\"slow_worker\":\"1:2\"}", 1, 2},
        {"{\"straggler\":\"\"}", 0, 0},
        {"{\"mode\":\"sync\"}", 1, 0},
    };
    evt_strtab *strs = evt_strtab_new();
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        viz_source *s = viz_source_new_mem(strs, cases[i].meta);
        double f = viz_model_slow(&s->m, cases[i].w);
        CHECK_MSG(f == cases[i].f, "%s: worker %d slowed %g times (got %g)", cases[i].meta, cases[i].w,
                  cases[i].f, f);
        viz_source_free(s);
    }
    /* the box: worker 1 of 2 marked, worker 0 not, against the same run without the key */
    cairo_surface_t *img[2];
    viz_rect box[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    static vizpix_text log;   /* what the straggler's frame wrote, and where */
    for (int k = 0; k < 2; k++) {
        viz_source *s = viz_source_new_mem(strs, k ? "{\"engine\":\"real\",\"straggler\":\"worker:1x4\"}"
                                                   : "{\"engine\":\"real\"}");
        static const char *const names[] = {"w"};
        static const int64_t bytes[] = {4000};
        uint32_t ids[1];
        tasks(s, strs, 0, 2, names, bytes, 1, ids);
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, 5 * MS, -1, 0, 0, 1, 0);
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, w, 30 * MS, -1, 0, 0, 1, 0);
        viz_view v = view_at(20 * MS);
        img[k] = k ? vizpix_draw_logged(s, &v, &log) : viz_render_image(s, &v);
        viz_ctx c;
        viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
        box[0] = c.lay.worker_box[0];
        box[1] = c.lay.worker_box[1];
        viz_ctx_end(&c);
        viz_source_free(s);
    }
    vizpix_dump(img[1], "VIZ_STORY_DUMP", "straggler");
    /* the mark goes on the name line, the box's top third, right half */
    for (int w = 0; w < 2; w++) {
        viz_rect r = {box[w].x + box[w].w / 2, box[w].y, box[w].w / 2, box[w].h / 3};
        int diff = differing(img[0], img[1], r, 0.1), ink = count_color(img[1], r, KEY_INK, 0.1);
        int ink0 = count_color(img[0], r, KEY_INK, 0.1);
        if (w == 1)
            CHECK_MSG(diff >= 100 && ink >= ink0 + 100, "straggler worker:1x4: worker 1's box carries its "
                      "mark (%d pixels differ; ink %d vs %d without)", diff, ink, ink0);
        else
            CHECK_MSG(diff == 0, "straggler worker:1x4: worker 0's box unchanged (%d pixels differ)", diff);
    }
    /* its words, within the box's top right quarter (the descent may pass the top third) */
    viz_rect at = {0, 0, 0, 0}, mark = {box[1].x + box[1].w / 2, box[1].y, box[1].w / 2, box[1].h / 2};
    CHECK_MSG(vizpix_where(&log, "slow \xc3\x97" "4", &at) && vizpix_inside(at, mark),
              "... the mark's words \"slow \xc3\x97" "4\" lie there (at %.0f,%.0f %.0fx%.0f; box %.0f,%.0f %.0fx%.0f)", at.x, at.y, at.w,
              at.h, box[1].x, box[1].y, box[1].w, box[1].h);
    cairo_surface_destroy(img[0]);
    cairo_surface_destroy(img[1]);
    evt_strtab_free(strs);
}

/* 80 workers (the dense grid), of which 0, 5, 10, ..., 75 (16) have per-message events: a
 * pull of "w" from ps 0 (10..20 ms) for 0 .. 70, an applied gradient at 22 ms for 0, 10, ..,
 * 70 and 75 (so each kind of evidence alone finds fewer than 16); the others one whole-model
 * pull with no ps, as the simulator's sample level writes them. level: the metadata's
 * trace_level. */
static viz_source *sampled_run(evt_strtab *strs, const char *level)
{
    char meta[256];
    snprintf(meta, sizeof meta, "{\"engine\":\"sim\",\"mode\":\"async\",\"trace_level\":\"%s\","
             "\"cluster\":{\"ps\":1,\"workers\":1200}}", level);
    viz_source *s = viz_source_new_mem(strs, meta);
    static const char *const names[] = {"w"};
    static const int64_t bytes[] = {40000};
    uint32_t ids[1];
    tasks(s, strs, 0, 80, names, bytes, 1, ids);
    evt_record e;
    for (int w = 0; w < 80; w++) {
        evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, w);
        e.t = 10 * MS;
        e.id = 1;
        if (w % 5 == 0 && w < 75) e.peer = 0, e.peer_job = EVT_JOB_PS, e.var = ids[0];
        viz_source_append(s, &e);
    }
    for (int w = 0; w < 80; w++) {
        evt_init(&e, EVT_PULL_END, EVT_JOB_WORKER, w);
        e.t = 20 * MS;
        e.id = 1;
        e.dur = 10 * MS;
        e.bytes = 40000;
        if (w % 5 == 0 && w < 75) e.peer = 0, e.peer_job = EVT_JOB_PS, e.var = ids[0];
        viz_source_append(s, &e);
    }
    for (int w = 0; w < 80; w += 5) {
        if (w % 10 && w != 75) continue;
        evt_init(&e, EVT_APPLY, EVT_JOB_PS, 0);
        e.t = 22 * MS;
        e.peer = w;
        e.peer_job = EVT_JOB_WORKER;
        e.var = ids[0];
        e.step = 1;
        viz_source_append(s, &e);
    }
    return s;
}

static void test_sampling(void)
{
    static const struct { long long v; const char *s; } counts[] = {
        {0, "0"}, {16, "16"}, {999, "999"}, {1000, "1,000"}, {1200, "1,200"}, {1234567, "1,234,567"},
        {-1000, "-1,000"},
    };
    char buf[64];
    for (size_t i = 0; i < DP_ARRAY_LEN(counts); i++) {
        viz_fmt_count(buf, sizeof buf, counts[i].v);
        CHECK_MSG(!strcmp(buf, counts[i].s), "count %lld reads %s (got %s)", counts[i].v, counts[i].s, buf);
    }
    evt_strtab *strs = evt_strtab_new();
    viz_source *smp = sampled_run(strs, "sample"), *full = sampled_run(strs, "full");
    int has = viz_model_sample_note(&smp->m, buf, sizeof buf);
    CHECK_MSG(has && !strcmp(buf, "16 sampled of 1,200"), "sampled trace: workers 0, 5, ..., 75 of a "
              "1,200-worker cluster read \"16 sampled of 1,200\" (got \"%s\")", buf);
    has = viz_model_sample_note(&full->m, buf, sizeof buf);
    CHECK_MSG(!has && !buf[0], "a full trace carries no note (got \"%s\")", buf);
    viz_view v = view_at(25 * MS);
    viz_ctx c;
    cairo_surface_t *a = frame_open(smp, &v, &c), *b = viz_render_image(full, &v);
    vizpix_dump(a, "VIZ_STORY_DUMP", "sampled");
    CHECK_MSG(c.lay.dense && c.lay.n_ps == 1 && !c.lay.compact_ps, "fixture: dense grid, one ps box");
    /* every panel that counts traffic or applies: its last line says so, in ink */
    static const char *const what[] = {"staleness histogram (applies)", "ps traffic"};
    for (int k = 0; k < 2; k++) {
        viz_rect p = c.lay.panels[3 + k];
        viz_rect last = {p.x + 4, p.y + p.h - c.lay.font_small * 1.6, p.w * 0.7, c.lay.font_small * 1.3};
        int diff = differing(a, b, last, 0.1);
        int ink = count_color(a, last, KEY_INK, 0.15), ink0 = count_color(b, last, KEY_INK, 0.15);
        CHECK_MSG(diff >= 100 && ink >= 60 && ink0 == 0, "%s: a sample note on its last line (%d pixels "
                  "differ from the full trace, ink %d vs %d)", what[k], diff, ink, ink0);
    }
    viz_rect box = c.lay.ps_box[0];
    viz_rect applied = {box.x + 4, box.y + box.h - c.lay.font_small * 1.6, box.w * 0.62, c.lay.font_small * 1.4};
    int diff = differing(a, b, applied, 0.1);
    CHECK_MSG(diff >= 100, "ps box: its applied count carries the note (%d pixels differ)", diff);
    frame_close(&c, a);
    cairo_surface_destroy(b);
    viz_source_free(smp);
    viz_source_free(full);
    evt_strtab_free(strs);
}

/* ---- 4: the chief evaluating --------------------------------------------------------- */

/* The chief (worker 0) pulls 10..20 ms, reports an evaluation at 30 ms (eval_dur > 0: one
 * that says how long it took; eval < 0: none) and computes 30..40 ms; worker 1 computes
 * 10..40 ms. */
static viz_source *eval_run(evt_strtab *strs, int eval, int64_t eval_dur)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    static const char *const names[] = {"w"};
    static const int64_t bytes[] = {4000};
    uint32_t ids[1];
    tasks(s, strs, 0, 2, names, bytes, 1, ids);
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 10 * MS, -1, 0, 0, 1, 0);
    transfer(s, 0, 0, 0, ids[0], 4000, 10 * MS, 20 * MS, 1);
    if (eval) {
        evt_record e;
        evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
        e.t = 30 * MS;
        e.dur = eval_dur;
        e.step = 5;
        e.value = 0.8;
        e.value2 = 0.5;
        viz_source_append(s, &e);
    }
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 30 * MS, -1, 0, 0, 1, 0);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 40 * MS, -1, 0, 0, 1, 0);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 1, 40 * MS, -1, 0, 0, 1, 0);
    return s;
}

/* The colour band of worker w's box at time t (where test_viz.c reads every phase). */
static viz_rgb band_at(viz_source *s, int w, int64_t t)
{
    viz_view v = view_at(t);
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    viz_rect b = c.lay.worker_box[w];
    viz_rgb p = pixel(img, b.x + 2.5 * c.lay.s, b.y + b.h / 2);
    static int dumped;
    if (w == 0 && t == 25 * MS && !dumped++) vizpix_dump(img, "VIZ_STORY_DUMP", "chief-25ms");
    frame_close(&c, img);
    return p;
}

static void test_evaluating(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = eval_run(strs, 1, 0);
    char h[8];
    CHECK_MSG(s->m.n_evals == 1 && s->m.evals[0].t0 == 20 * MS, "an evaluation without a duration runs "
              "from the chief's last pull's end (20 ms) to its report (t0 %.3f ms)",
              s->m.n_evals ? (double)s->m.evals[0].t0 / MS : -1.0);
    viz_rgb p = band_at(s, 0, 25 * MS);
    CHECK_MSG(near(p, KEY_EVALUATING, FLAT_TOL), "chief at 25 ms (evaluating 20..30 ms) in the evaluating "
              "colour 0072B2 (got %s)", hex(p, h));
    p = band_at(s, 0, 25 * MS);
    CHECK_MSG(!near(p, KEY_PHASE(EVT_PHASE_IDLE), 0.1), "... not idle grey");
    p = band_at(s, 0, 15 * MS);
    CHECK_MSG(near(p, KEY_PULL, FLAT_TOL), "chief at 15 ms pulling (got %s)", hex(p, h));
    p = band_at(s, 0, 35 * MS);
    CHECK_MSG(near(p, KEY_COMPUTE, FLAT_TOL), "chief at 35 ms computing (got %s)", hex(p, h));
    p = band_at(s, 1, 25 * MS);
    CHECK_MSG(near(p, KEY_COMPUTE, FLAT_TOL), "worker 1 at 25 ms computing (got %s)", hex(p, h));
    /* the timeline: the chief's lane (lanes: ps 0, worker 0, worker 1) and the legend */
    viz_view v = view_at(45 * MS);
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    vizpix_dump(img, "VIZ_STORY_DUMP", "evaluating");
    viz_point q = lane_point(&c, 1, 25 * MS);
    p = pixel(img, q.x, q.y);
    CHECK_MSG(near(p, KEY_EVALUATING, FLAT_TOL), "chief's lane at 25 ms in the evaluating colour (got %s)",
              hex(p, h));
    const viz_layout *l = &c.lay;
    double top = l->lanes.y + l->lanes.h;
    viz_rect legend = {l->timeline.x, top, l->lanes.x - l->timeline.x - 12 * l->s, l->timeline.y + l->timeline.h - top};
    double sw = l->font_small * 0.64;
    int n = count_color(img, legend, KEY_EVALUATING, FLAT_TOL);
    CHECK_MSG(n >= (int)(0.6 * sw * sw), "a run with evaluations: an evaluating swatch in the timeline "
              "legend (%d pixels, swatch %.0f)", n, sw * sw);
    frame_close(&c, img);
    viz_source_free(s);
    /* the same run without the evaluation: idle, and the colour in neither lanes nor legend */
    s = eval_run(strs, 0, 0);
    p = band_at(s, 0, 25 * MS);
    CHECK_MSG(near(p, KEY_PHASE(EVT_PHASE_IDLE), FLAT_TOL), "no evaluation: the chief at 25 ms idle (got %s)",
              hex(p, h));
    img = frame_open(s, &v, &c);
    viz_rect lanes = c.lay.lanes;   /* up to 40 of 45 ms: the time cursor (accent blue) is at 45 */
    lanes.w *= 40.0 / 45;
    n = count_color(img, legend, KEY_EVALUATING, FLAT_TOL) + count_color(img, lanes, KEY_EVALUATING, FLAT_TOL);
    CHECK_MSG(n == 0, "no evaluation: its colour in neither the lanes nor the legend (%d pixels)", n);
    frame_close(&c, img);
    viz_source_free(s);
    /* an evaluation that says it took 4 ms: 26..30 ms, so the chief is idle at 25 ms */
    s = eval_run(strs, 1, 4 * MS);
    CHECK_MSG(s->m.n_evals == 1 && s->m.evals[0].t0 == 26 * MS, "an evaluation of 4 ms reported at 30 ms "
              "began at 26 ms");
    p = band_at(s, 0, 25 * MS);
    CHECK_MSG(near(p, KEY_PHASE(EVT_PHASE_IDLE), FLAT_TOL), "... so at 25 ms the chief is idle (got %s)", hex(p, h));
    p = band_at(s, 0, 28 * MS);
    CHECK_MSG(near(p, KEY_EVALUATING, FLAT_TOL), "... and at 28 ms evaluating (got %s)", hex(p, h));
    viz_source_free(s);
    evt_strtab_free(strs);
}

int main(void)
{
    test_global_step_label();
    test_end_closes_phases();
    test_compare();
    test_direction();
    test_straggler();
    test_sampling();
    test_evaluating();
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
