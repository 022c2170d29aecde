/* test_viz_teach.c — the viewer's classroom pieces, checked on hand-made runs with the
 * colour key as literal RGB (vizpix.h) and positions from the layout, never from the
 * drawing code:
 *   - compare mode's diff strip marks where two runs differ (one waits and the other does
 *     not, drops, staleness) in the runs' colours, on rows that are labelled, with a legend;
 *   - the fork chooser offers concrete keys from the run's metadata, and draws them;
 *   - the placement view names the seed's roles: the client, the chief's master duties
 *     (evaluating while it evaluates), each task's master and worker services;
 *   - the help card lists every key (e, E, f, F11 among them);
 *   - the dense grid says which workers are slow, and its caption counts only the phases the run has;
 *   - a task with several devices draws one compute lane per device;
 *   - a lost ps is greyed and crossed out, the workers that lost it say "reconnecting",
 *     and both end when it recovers and the next pull is answered.
 * VIZ_TEACH_DUMP=DIR writes the frames as PNGs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "viz/internal.h"
#include "vizpix.h"

extern void FcFini(void) __attribute__((weak));

#define MS 1000000

/* ---- fixtures ---------------------------------------------------------------------- */

static void ev(viz_source *s, int kind, int job, int task, int64_t t, int peer, int64_t step, double value)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, job, task);
    e.t = t;
    e.peer = peer;
    e.peer_job = peer < 0 ? 0 : job == EVT_JOB_PS ? EVT_JOB_WORKER : EVT_JOB_PS;
    e.step = step;
    e.value = value;
    viz_source_append(s, &e);
}

/* The cluster's start, 1 ps and n workers started at t0 (+ a few us). */
static void start(viz_source *s, evt_strtab *strs, int64_t t0, int n_workers)
{
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.t = t0;
    e.str = evt_strtab_intern(strs, "{}");
    viz_source_append(s, &e);
    uint32_t host = evt_strtab_intern(strs, "localhost");
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
}

static viz_view view_at(int64_t t)
{
    viz_view v;
    viz_view_init(&v);
    v.t = t;
    return v;
}

/* ---- the diff strip ------------------------------------------------------------------ */

#define U (4 * MS)

/* Time in units of U = 4 ms: long enough that the diff strip's columns (at least 8 of the
 * coarser run's buckets) are finer than a step.
 * A: sync, 2 workers; every 10 U step each computes 4 ms then waits 5 ms at the barrier;
 * gradients applied with staleness 0, and at 25 U two gradients dropped. B: async, the
 * same compute, no waits, its gradients applied with staleness 3, none dropped. Both last
 * 40 U from their starts (A at 500 ms, B at 1 ms on their own clocks). */
static viz_source *diff_run(evt_strtab *strs, int64_t t0, int sync)
{
    viz_source *s = viz_source_new_mem(strs, sync ? "{\"engine\":\"real\",\"mode\":\"sync\"}"
                                                  : "{\"engine\":\"real\",\"mode\":\"async\"}");
    start(s, strs, t0, 2);
    for (int k = 0; k < 4; k++) {
        int64_t b = t0 + 10 * U * k;
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, b + 10000 + w, -1, k, 0);
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, w, b + 4 * U + w, -1, k, 0);
        for (int w = 0; w < 2; w++) ev(s, EVT_APPLY, EVT_JOB_PS, 0, b + 4 * U + 100000 + w, w, k, sync ? 0 : 3);
        if (sync) {
            for (int w = 0; w < 2; w++) ev(s, EVT_BARRIER_WAIT, EVT_JOB_WORKER, w, b + 4 * U + 200000 + w, -1, k, 0);
            if (k == 2)
                for (int w = 0; w < 2; w++) ev(s, EVT_DROP, EVT_JOB_PS, 0, b + 5 * U + w, w, k, 5);
            for (int w = 0; w < 2; w++) ev(s, EVT_BARRIER_RELEASE, EVT_JOB_WORKER, w, b + 9 * U + w, -1, k, 0);
        }
        ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, b + 9 * U + 500000, -1, k + 1, 0);
    }
    ev(s, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, t0 + 40 * U, -1, 0, 0);
    return s;
}

/* Pixels of colour c in the middle band of diff row r, and the row's area. */
static int row_pixels(cairo_surface_t *img, const viz_compare_layout *cl, int r, viz_rgb c, double *area)
{
    viz_rect row = {cl->diff.x + 1, cl->diff.y + cl->diff_row_h * r + cl->diff_row_h * 0.3, cl->diff.w - 2,
                    cl->diff_row_h * 0.4};
    if (area) *area = floor(row.w) * ceil(row.h);
    return count_color(img, row, c, FLAT_TOL);
}

static void test_diff_strip(void)
{
    evt_strtab *strs = evt_strtab_new();
    int64_t oa = 500 * MS, ob = 1 * MS;
    viz_source *a = diff_run(strs, oa, 1), *b = diff_run(strs, ob, 0);
    viz_view v = view_at(oa + 40 * U);
    v.compare = b;
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(a, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "diff");
    viz_compare_layout cl;
    viz_layout_compare(v.width, v.height, v.dpr, &cl);
    CHECK_MSG(cl.diff.y >= cl.plot.y + cl.plot.h && cl.diff.y + cl.diff.h <= cl.strip.y + cl.strip.h,
              "the diff strip lies under the chart, inside the strip (%.0f..%.0f in %.0f..%.0f)", cl.diff.y,
              cl.diff.y + cl.diff.h, cl.strip.y, cl.strip.y + cl.strip.h);
    CHECK_MSG(cl.diff.x == cl.plot.x && cl.diff.w == cl.plot.w, "... on the chart's time axis (same x and width)");
    double area;
    int wa = row_pixels(img, &cl, 0, KEY_ACCENT, &area), wb = row_pixels(img, &cl, 0, KEY_VERMILLION, NULL);
    /* A waits 5 of every 10 ms and B never: about half the row is A's */
    CHECK_MSG(wa >= 0.35 * area && wa <= 0.7 * area, "waits: A's blue where A waits and B does not "
              "(%d of %.0f px)", wa, area);
    CHECK_MSG(wb == 0, "waits: no vermillion, B never waits (%d px)", wb);
    int da = row_pixels(img, &cl, 1, KEY_ACCENT, &area), db = row_pixels(img, &cl, 1, KEY_VERMILLION, NULL);
    CHECK_MSG(da > 0 && da <= 0.25 * area, "drops: A's blue only around its drops at 25 U (%d of %.0f px)", da, area);
    /* ... at 25 U of the 40 U axis: within a column or two of it */
    viz_rect near25 = {cl.diff.x + cl.diff.w * 0.45, cl.diff.y + cl.diff_row_h * 1.3, cl.diff.w * 0.3,
                       cl.diff_row_h * 0.4};
    CHECK_MSG(count_color(img, near25, KEY_ACCENT, FLAT_TOL) == da, "drops: all of them between 18 and 30 U");
    CHECK_MSG(db == 0, "drops: no vermillion, B drops none (%d px)", db);
    int sa = row_pixels(img, &cl, 2, KEY_ACCENT, &area), sb = row_pixels(img, &cl, 2, KEY_VERMILLION, NULL);
    CHECK_MSG(sb > 0 && sa == 0, "staleness: vermillion where B's gradients are staler (B %d px, A %d px)", sb, sa);
    CHECK_MSG(vizpix_wrote(&log, "waits") && vizpix_wrote(&log, "drops") && vizpix_wrote(&log, "stale"), "each row is labelled");
    CHECK_MSG(vizpix_wrote(&log, "where the runs differ:") && vizpix_wrote(&log, "A more") && vizpix_wrote(&log, "B more"),
              "the strip has a legend");
    int swatch_a = count_color(img, (viz_rect){cl.diff.x, cl.diff_legend_y - cl.diff_row_h, cl.diff.w, cl.diff_row_h},
                               KEY_ACCENT, FLAT_TOL);
    CHECK_MSG(swatch_a >= 30, "the legend has A's swatch in A's blue (%d px)", swatch_a);
    cairo_surface_destroy(img);
    /* the same run on both sides: nothing differs, nothing is marked */
    viz_source *a2 = diff_run(strs, ob, 1);
    v.compare = a2;
    img = viz_render_image(a, &v);
    int same = row_pixels(img, &cl, 0, KEY_ACCENT, NULL) + row_pixels(img, &cl, 1, KEY_ACCENT, NULL) +
               row_pixels(img, &cl, 2, KEY_ACCENT, NULL) + row_pixels(img, &cl, 0, KEY_VERMILLION, NULL) +
               row_pixels(img, &cl, 1, KEY_VERMILLION, NULL) + row_pixels(img, &cl, 2, KEY_VERMILLION, NULL);
    CHECK_MSG(same == 0, "two equal runs on different clocks (so bucketed differently): no difference "
              "marked (%d px)", same);
    cairo_surface_destroy(img);
    /* the strip follows the cursor: at A's 10 U nothing after it is marked */
    v.compare = b;
    v.t = oa + 10 * U;
    img = viz_render_image(a, &v);
    viz_rect later = {cl.diff.x + cl.diff.w * 0.3, cl.diff.y, cl.diff.w * 0.7, cl.diff.h};
    int after = count_color(img, later, KEY_ACCENT, FLAT_TOL) + count_color(img, later, KEY_VERMILLION, FLAT_TOL);
    CHECK_MSG(after == 0, "nothing marked past the cursor (%d px)", after);
    cairo_surface_destroy(img);
    viz_source_free(a2);
    viz_source_free(a);
    viz_source_free(b);
    evt_strtab_free(strs);
}

/* ---- the seed's roles in the placement view ---------------------------------------- */

/* 1 ps, 2 workers; the chief evaluates from 20 to 30 ms (its EVT_EVAL at 30 ms, 10 ms long)
 * and writes a checkpoint at 35 ms. */
static viz_source *roles_run(evt_strtab *strs)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync\"}");
    start(s, strs, 0, 2);
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 10 * MS, -1, 0, 0);
    ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 12 * MS, -1, 1, 0);
    evt_record e;
    evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
    e.t = 30 * MS;
    e.dur = 10 * MS;
    e.step = 1;
    e.value = 0.8;
    e.value2 = 0.5;
    viz_source_append(s, &e);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 1, 32 * MS, -1, 0, 0);
    ev(s, EVT_CHECKPOINT_WRITE, EVT_JOB_WORKER, 0, 35 * MS, -1, 1, 0);
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 60 * MS, -1, 0, 0);
    return s;
}

static void test_roles(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = roles_run(strs);
    viz_view v = view_at(25 * MS);   /* the chief evaluating */
    v.placement = 1;
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "roles-eval");
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    viz_rect card = c.lay.cluster;
    viz_ctx_end(&c);
    CHECK_MSG(vizpix_wrote(&log, "client"), "placement: the client is named");
    CHECK_MSG(strstr(log.all, "the launcher (downpour cluster) that started the cluster") != NULL,
              "... as the launcher that started the cluster");
    CHECK_MSG(vizpix_wrote(&log, "/job:worker/task:0 \xe2\x98\x85 chief") && vizpix_wrote(&log, "master service:"),
              "the chief and its master service");
    CHECK_MSG(vizpix_wrote(&log, "initialise") && vizpix_wrote(&log, "global step 1") && vizpix_wrote(&log, "checkpoints"),
              "the chief's master duties: initialise, the global step (1), checkpoints");
    CHECK_MSG(vizpix_wrote(&log, "evaluating") && !vizpix_wrote(&log, "evaluation"),
              "while the chief evaluates, its duty says evaluating (not evaluation)");
    int ev_px = count_color(img, card, KEY_EVALUATING, FLAT_TOL);
    CHECK_MSG(ev_px >= 150, "... filled in the evaluating colour (%d px)", ev_px);
    int services = 0;
    for (const char *p = log.all; (p = strstr(p, "worker service")); p++) services++;
    CHECK_MSG(services == 3, "each of the 3 tasks has its worker service (%d)", services);
    CHECK_MSG(strstr(log.all, "/job:ps/task:0\n") && strstr(log.all, "/job:worker/task:1\n"),
              "the ps and the other worker have a line each");
    cairo_surface_destroy(img);
    v.t = 15 * MS;   /* not evaluating: the duty is outlined, not filled */
    img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "roles-idle");
    CHECK_MSG(vizpix_wrote(&log, "evaluation") && !vizpix_wrote(&log, "evaluating"), "not evaluating: evaluation, as a duty");
    ev_px = count_color(img, card, KEY_EVALUATING, FLAT_TOL);
    CHECK_MSG(ev_px == 0, "... and nothing in the evaluating colour (%d px)", ev_px);
    cairo_surface_destroy(img);
    v.t = 36 * MS;
    img = vizpix_draw_logged(s, &v, &log);
    CHECK_MSG(vizpix_wrote(&log, "checkpointing"), "a checkpoint just written: checkpointing");
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- the fork chooser ------------------------------------------------------------------ */
static void test_fork_chooser(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync\",\"backup_workers\":1,"
                                             "\"cluster\":{\"ps\":2,\"workers\":4}}");
    start(s, strs, 0, 4);
    ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 5 * MS, -1, 7, 0);
    viz_fork_choice ch[VIZ_FORK_CHOICES];
    int n = viz_fork_choices(s, ch);
    CHECK_MSG(n == 4, "sync: four choices (%d)", n);
    CHECK_MSG(n == 4 && !strcmp(ch[0].set, "backup_workers=2") && !strcmp(ch[1].set, "mode=async") &&
                  !strcmp(ch[2].set, "straggler=worker:3x4") && !strcmp(ch[3].set, "ps=3"),
              "... a backup worker more (2), async, the last worker slowed, a ps more (%s | %s | %s | %s)",
              ch[0].set, ch[1].set, ch[2].set, ch[3].set);
    viz_view v = view_at(6 * MS);
    v.fork_menu = 2;
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "fork-chooser");
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    viz_rect card, rows[VIZ_FORK_CHOICES];
    viz_fork_menu_layout(&c.lay, n, &card, rows);
    viz_ctx_end(&c);
    double a1 = rows[1].w * rows[1].h;
    int on = count_color(img, rows[1], KEY_ACCENT, FLAT_TOL), off = count_color(img, rows[0], KEY_ACCENT, FLAT_TOL);
    CHECK_MSG(on >= 0.6 * a1, "the highlighted choice (2) is filled in the accent blue (%d of %.0f px)", on, a1);
    CHECK_MSG(off < 0.05 * a1, "... the others are not (%d px)", off);
    CHECK_MSG(vizpix_wrote(&log, "Fork at global step 7: change one key") && vizpix_wrote(&log, "switch to async") &&
                  vizpix_wrote(&log, "mode=async"), "the card names the step, each choice and its key");
    cairo_surface_destroy(img);
    viz_source_free(s);
    s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    start(s, strs, 0, 2);
    n = viz_fork_choices(s, ch);
    CHECK_MSG(n == 3 && !strcmp(ch[0].set, "mode=sync"), "async: no backup worker to add; switch to sync (%d, %s)",
              n, ch[0].set);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- the help card: every key ------------------------------------------------------- */
static void test_help_keys(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = roles_run(strs);
    viz_view v = view_at(25 * MS);
    v.help = 1;
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    static const char *const keys[] = {"space", "p", "s", "e", "E", "f", "t", "h", "F11", "q / Esc"};
    for (size_t i = 0; i < DP_ARRAY_LEN(keys); i++)
        CHECK_MSG(vizpix_wrote(&log, keys[i]), "the help card lists key %s", keys[i]);
    CHECK_MSG(strstr(log.all, "fork from here") != NULL, "... f is fork from here");
    CHECK_MSG(strstr(log.all, "caption history") != NULL && strstr(log.all, "captions on / off") != NULL,
              "... e and E are the captions and their history");
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- stragglers on the dense grid ---------------------------------------------------- */
static void test_dense_slow(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"sim\",\"mode\":\"sync\",\"straggler\":\"worker:7x4\"}");
    start(s, strs, 0, 100);
    for (int w = 0; w < 100; w++) ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, 5 * MS + w, -1, 0, 0);
    viz_view v = view_at(10 * MS);
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "dense-slow");
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    CHECK_MSG(c.lay.dense && c.lay.cell >= 4, "100 workers: the dense grid, cells of %.1f px", c.lay.cell);
    viz_rect c7 = viz_layout_cell(&c.lay, 7), c8 = viz_layout_cell(&c.lay, 8);
    viz_ctx_end(&c);
    CHECK_MSG(strstr(log.all, "slow: 7 \xc3\x97" "4\n") != NULL, "the grid's caption says worker 7 is slow x4");
    int ink7 = count_color(img, c7, KEY_INK, 0.05), ink8 = count_color(img, c8, KEY_INK, 0.05);
    CHECK_MSG(ink7 >= c7.w * 2 && ink8 == 0, "worker 7's cell is ringed in ink (%d px), worker 8's is not (%d)",
              ink7, ink8);
    CHECK_MSG(strstr(log.all, "computing 100\n") && !strstr(log.all, "evaluating") && !strstr(log.all, "paced"),
              "the grid's caption counts 100 computing, and has no evaluating or paced entry in a run without");
    cairo_surface_destroy(img);
    evt_record e;   /* the chief's evaluation later in the run: the caption keeps an entry for it */
    evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
    e.t = 50 * MS;
    e.dur = 10 * MS;
    e.value = 0.8;
    viz_source_append(s, &e);
    img = vizpix_draw_logged(s, &v, &log);
    CHECK_MSG(strstr(log.all, "evaluating 0\n") != NULL, "a run with evaluations: the caption has \"evaluating 0\" before any");
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* ---- device lanes: a task with several devices ---------------------------------------- */

/* 1 ps and 2 workers; worker 0 lists 4 devices (towers over CPU:0, CPU:1, GPU:0, GPU:1) and
 * computes on CPU:1 and GPU:1 (tower_1, tower_3) at 10 ms; worker 1 has one device. */
static viz_source *devices_run(evt_strtab *strs)
{
    static const char *const devs[] = {"CPU:0", "CPU:1", "GPU:0", "GPU:1"};
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync\"}");
    start(s, strs, 0, 2);
    uint32_t id[4];
    char name[128];
    evt_record e;
    for (int d = 0; d < 4; d++) {
        snprintf(name, sizeof name, "/job:worker/replica:0/task:0/device:%s", devs[d]);
        id[d] = evt_strtab_intern(strs, name);
        evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, 0);
        e.t = 3000 + d;
        e.device = id[d];
        viz_source_append(s, &e);
    }
    evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, 1);
    e.t = 3100;
    e.device = evt_strtab_intern(strs, "/job:worker/replica:0/task:1/device:CPU:0");
    viz_source_append(s, &e);
    for (int d = 1; d < 4; d += 2) {
        snprintf(name, sizeof name, "tower_%d/MatMul", d);
        evt_init(&e, EVT_OP_PLACE, EVT_JOB_WORKER, 0);
        e.t = 4000 + d;
        e.var = evt_strtab_intern(strs, name);
        e.str = evt_strtab_intern(strs, "MatMul");
        e.device = id[d];
        viz_source_append(s, &e);
        evt_init(&e, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0);
        e.t = 10 * MS + d;
        e.device = id[d];
        e.step = 1;
        viz_source_append(s, &e);
    }
    ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 10 * MS, -1, 1, 0);
    ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, 1, 30 * MS, -1, 1, 0);
    return s;
}

static void test_device_lanes(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = devices_run(strs);
    viz_view v = view_at(20 * MS);
    vizpix_text log;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "device-lanes");
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    double sc = c.lay.s;
    viz_rect b = c.lay.worker_box[0], b1 = c.lay.worker_box[1];
    viz_ctx_end(&c);
    viz_rect inner = {b.x + 4 * sc, b.y + 4 * sc, b.w - 8 * sc, b.h - 8 * sc};
    viz_rect lane[4];
    viz_device_lanes(inner, inner.h / 3.2, sc, 4, lane);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(viz_rect_contains(b, lane[i].x, lane[i].y) &&
                      viz_rect_contains(b, lane[i].x + lane[i].w, lane[i].y + lane[i].h),
                  "lane %d lies inside worker 0's box", i);
        double area = lane[i].w * lane[i].h;
        int green = count_color(img, lane[i], KEY_COMPUTE, FLAT_TOL);
        if (i % 2)
            CHECK_MSG(green >= 0.4 * area, "lane %d (%s) is busy: computing green (%d of %.0f px)", i,
                      i == 1 ? "CPU:1" : "GPU:1", green, area);
        else
            CHECK_MSG(green == 0, "lane %d is idle: no computing green (%d px)", i, green);
    }
    /* 4 lanes, told apart: across the lanes' middle, the 4 devices' colours (Tol light, in the
     * order the devices were listed) each start a run, left to right */
    static const unsigned tol_light[4] = {0x77AADD, 0xEE8866, 0xEEDD88, 0xFFAABB};
    int next = 0, runs = 0, prev = -1;
    double y = lane[0].y + lane[0].h * 0.5;
    for (int x = (int)inner.x; x < inner.x + inner.w; x++) {
        int k = -1;
        for (int i = 0; i < 4; i++) k = near(pixel(img, x, y), HEX(tol_light[i]), FLAT_TOL) ? i : k;
        if (k >= 0 && k != prev) {
            runs++;
            next += k == next;
        }
        prev = k;
    }
    CHECK_MSG(runs == 4 && next == 4, "4 lanes side by side in the box, each with its device's colour, in order "
              "(%d runs, %d in order)", runs, next);
    static const char *const names[4] = {"CPU:0", "CPU:1", "GPU:0", "GPU:1"};
    for (int i = 0; i < 4; i++) {
        viz_rect at = {0, 0, 0, 0};
        int seen = vizpix_where(&log, names[i], &at);
        CHECK_MSG(seen && vizpix_inside(at, lane[i]), "lane %d is labelled %s, in the lane (text at %.0f,%.0f %.0fx%.0f; "
                  "lane %.0f,%.0f %.0fx%.0f)", i, names[i], at.x, at.y, at.w, at.h, lane[i].x, lane[i].y, lane[i].w,
                  lane[i].h);
    }
    /* worker 1, one device: its box keeps the step line, and nothing is green at the lanes' place */
    viz_rect inner1 = {b1.x + 4 * sc, b1.y + 4 * sc, b1.w - 8 * sc, b1.h - 8 * sc}, lane1[4];
    viz_device_lanes(inner1, inner1.h / 3.2, sc, 4, lane1);
    int g1 = 0;
    for (int i = 0; i < 4; i++) g1 += count_color(img, lane1[i], KEY_COMPUTE, FLAT_TOL);
    CHECK_MSG(g1 == 0 && strstr(log.all, "step 1\n") != NULL, "one device: no lanes, the step line (%d px)", g1);
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}


/* ---- a lost ps ---------------------------------------------------------------------- */

static void test_lost_ps(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync\"}");
    int64_t t0 = 1 * MS;
    start(s, strs, t0, 2);
    for (int k = 0; k < 3; k++) {
        int64_t b = t0 + 10 * MS * k;
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, b + 1000 + w, -1, k, 0);
        for (int w = 0; w < 2; w++) ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, w, b + 4 * MS + w, -1, k, 0);
        ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, b + 9 * MS, -1, k + 1, 0);
    }
    int64_t tl = t0 + 31 * MS, tr = t0 + 60 * MS;
    for (int w = 0; w < 2; w++) ev(s, EVT_PULL_BEGIN, EVT_JOB_WORKER, w, tl - 500000 + w, 0, 3, 0);
    ev(s, EVT_FAILURE, EVT_JOB_PS, 0, tl, -1, 3, 0);
    for (int w = 0; w < 2; w++) ev(s, EVT_PS_RETRY, EVT_JOB_WORKER, w, tl + 1000 + w, 0, 3, 1);
    ev(s, EVT_RECOVERY, EVT_JOB_PS, 0, tr, -1, 3, 0);
    for (int w = 0; w < 2; w++) ev(s, EVT_PULL_BEGIN, EVT_JOB_WORKER, w, tr + 2 * MS + w, 0, 3, 0);
    for (int w = 0; w < 2; w++) ev(s, EVT_PULL_END, EVT_JOB_WORKER, w, tr + 3 * MS + w, 0, 3, 0);
    ev(s, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, tr + 10 * MS, -1, 0, 0);

    viz_view v = view_at(tl + 10 * MS);
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    viz_rect b = c.lay.ps_box[0];
    double sc = c.lay.s;
    frame_close(&c, img);
    vizpix_text log;
    img = vizpix_draw_logged(s, &v, &log);
    vizpix_dump(img, "VIZ_TEACH_DUMP", "lost-ps");
    viz_rect mid = {b.x + b.w * 0.3, b.y + b.h * 0.3, b.w * 0.4, b.h * 0.4};
    double area = floor(mid.w) * floor(mid.h);
    /* its middle, away from the border (drawn in the dead colour too) */
    int dead = count_color(img, mid, KEY_PHASE(EVT_PHASE_DEAD), 0.06), white = count_color(img, mid, KEY_WHITE, FLAT_TOL);
    CHECK_MSG(dead >= mid.w, "the lost ps is crossed out in the dead colour (%d px across its middle)", dead);
    CHECK_MSG(white < 0.05 * area, "... and greyed: hardly any white panel left in its middle (%d of %.0f px)", white, area);
    /* both strokes of the cross: the dead colour a quarter of the way along each diagonal,
     * where the two are apart */
    for (int d = 0; d < 2; d++) {
        double r = 4 * sc;
        viz_point q = {b.x + b.w * (d ? 0.75 : 0.25), b.y + b.h * 0.25};
        int n = count_color(img, (viz_rect){q.x - r, q.y - r, 2 * r, 2 * r}, KEY_PHASE(EVT_PHASE_DEAD), 0.06);
        CHECK_MSG(n >= r, "... its %s diagonal drawn (%d dead px around (%.0f, %.0f))", d ? "rising" : "falling", n,
                  q.x, q.y);
    }
    CHECK_MSG(vizpix_wrote(&log, "reconnecting"), "the workers that lost it say \"reconnecting\"");
    cairo_surface_destroy(img);

    v = view_at(tr + 5 * MS);
    img = vizpix_draw_logged(s, &v, &log);
    dead = count_color(img, mid, KEY_PHASE(EVT_PHASE_DEAD), 0.06);
    white = count_color(img, mid, KEY_WHITE, FLAT_TOL);
    CHECK_MSG(dead == 0 && white > 0.5 * area, "recovered: no cross, the panel white again (%d dead px, %d of %.0f white)",
              dead, white, area);
    CHECK_MSG(!vizpix_wrote(&log, "reconnecting"), "answered pulls: the workers no longer say \"reconnecting\"");
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);

    /* the state under it: a restore sets the global step and every variable's version back */
    evt_state st;
    evt_state_init(&st);
    evt_record e;
    evt_init(&e, EVT_APPLY, EVT_JOB_PS, 0);
    e.var = 7;
    e.step = 5;
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, 0);
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_PS_RETRY, EVT_JOB_WORKER, 0);
    e.value = 1;
    evt_state_apply(&st, &e);
    const evt_task_state *tk = evt_state_task(&st, EVT_JOB_WORKER, 0);
    CHECK_MSG(tk && tk->reconnecting && tk->pulls_in_flight == 0, "PS_RETRY: reconnecting, the abandoned pull ended");
    evt_init(&e, EVT_CHECKPOINT_RESTORE, EVT_JOB_WORKER, 0);
    e.step = 3;
    evt_state_apply(&st, &e);
    const evt_var_state *vs = evt_state_var(&st, 7);
    CHECK_MSG(st.global_step == 3 && vs && vs->version == 3, "a restore to step 3: global step %lld, version %lld",
              (long long)st.global_step, vs ? (long long)vs->version : -1LL);
    evt_state_release(&st);
}

int main(void)
{
    test_diff_strip();
    test_roles();
    test_fork_chooser();
    test_help_keys();
    test_dense_slow();
    test_device_lanes();
    test_lost_ps();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
