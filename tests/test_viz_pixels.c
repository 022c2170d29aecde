/* test_viz_pixels.c — pictures checked against answers known without the drawing code,
 * on a hand-made run: one ps, two workers, worker 0 pulling variable 0 while worker 1
 * pushes variable 1, both half-way at the frame's time. Each packet must be a disc of its
 * variable's colour (literal RGB from the colour key in vizpix.h, never from the palette)
 * centred where the layout puts it, ringed by its direction's outline (pull white, push
 * ink) and by no other, its colour nowhere else in the cluster. Each overlay (help,
 * inspector, toast, compare strip) must change the pixels where it draws against the same
 * frame without it, and the inspector's lines must say the fixture's own numbers. */
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
#define T_BEGIN (10 * MS)
#define T_END (30 * MS)
#define T_SHOWN (20 * MS)         /* both packets half-way */
#define PACKET_BYTES 250000

#define FIXTURE_MAX 40

/* Adds a copy of e as (kind, job, task) at time t to ev[*n]. */
static void put(evt_record *ev, int *n, evt_record e, int kind, int job, int task, int64_t t)
{
    dp_assert("test_viz_pixels: fixture too long", *n < FIXTURE_MAX);
    e.kind = (uint16_t)kind;
    e.job = (uint8_t)job;
    e.task = task;
    e.t = t;
    ev[(*n)++] = e;
}

/* The run: tasks, two variables of PACKET_BYTES on ps 0, one pull and one push, and worker
 * 0's loss (falling from loss0) every 2 ms so that a compare strip has a curve; appended
 * in time order. strs is borrowed by the source; caller frees both. */
static viz_source *fixture(evt_strtab *strs, double loss0)
{
    evt_record ev[FIXTURE_MAX], e;
    int n = 0;
    uint32_t var[2];
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.str = evt_strtab_intern(strs, "localhost");
    put(ev, &n, e, EVT_TASK_START, EVT_JOB_PS, 0, 1000);
    put(ev, &n, e, EVT_TASK_START, EVT_JOB_WORKER, 0, 2000);
    put(ev, &n, e, EVT_TASK_START, EVT_JOB_WORKER, 1, 2001);
    for (int v = 0; v < 2; v++) {
        var[v] = evt_strtab_intern(strs, v ? "b" : "w");
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
        e.var = var[v];
        e.str = evt_strtab_intern(strs, "100");
        e.bytes = PACKET_BYTES;
        put(ev, &n, e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0, 3000 + v);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
        e.var = var[v];
        e.peer_job = EVT_JOB_PS;
        e.peer = 0;
        e.device = evt_strtab_intern(strs, "/job:ps/replica:0/task:0/device:CPU:0");
        put(ev, &n, e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0, 3500 + v);
    }
    for (int w = 0; w < 2; w++) {   /* worker 0 pulls var 0, worker 1 pushes var 1 */
        evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, w);
        e.peer_job = EVT_JOB_PS;
        e.peer = 0;
        e.var = var[w];
        e.id = 1;
        e.bytes = PACKET_BYTES;
        put(ev, &n, e, w ? EVT_PUSH_BEGIN : EVT_PULL_BEGIN, EVT_JOB_WORKER, w, T_BEGIN);
        e.dur = T_END - T_BEGIN;
        put(ev, &n, e, w ? EVT_PUSH_END : EVT_PULL_END, EVT_JOB_WORKER, w, T_END);
    }
    for (int k = 0; k < 14; k++) {
        evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, 0);
        e.step = k;
        e.value = loss0 * (1 - 0.03 * k);
        put(ev, &n, e, EVT_STEP_END, EVT_JOB_WORKER, 0, (2 + 2 * k) * MS);
    }
    for (int i = 1; i < n; i++)   /* stable insertion sort by time */
        for (int k = i; k > 0 && ev[k].t < ev[k - 1].t; k--) {
            evt_record tmp = ev[k];
            ev[k] = ev[k - 1];
            ev[k - 1] = tmp;
        }
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"sim\",\"mode\":\"async\"}");
    for (int i = 0; i < n; i++) viz_source_append(s, &ev[i]);
    return s;
}

/* Checks one packet: its variable's colour fills a disc centred at q (and appears nowhere
 * else in the cluster outside the ps box, whose bar has it too), and the ring just outside
 * that disc holds outline pixels of `ring` and none of `not_ring`. */
static void check_one(cairo_surface_t *img, const viz_layout *l, const char *what, viz_point q,
                      viz_rgb fill, viz_rgb ring, viz_rgb not_ring)
{
    viz_rect cl = l->cluster, ps = l->ps_box[0];
    long n = 0;
    double sx = 0, sy = 0;
    for (int y = (int)cl.y; y < cl.y + cl.h; y++)
        for (int x = (int)cl.x; x < cl.x + cl.w; x++) {
            if (viz_rect_contains(ps, x + 0.5, y + 0.5) || !near(pixel(img, x, y), fill, 0.01)) continue;
            n++;
            sx += x + 0.5;
            sy += y + 0.5;
        }
    double cx = n ? sx / (double)n : -1, cy = n ? sy / (double)n : -1, r = sqrt((double)n / M_PI);
    CHECK_MSG(n >= 100 && hypot(cx - q.x, cy - q.y) < 1.5,
              "%s: a disc of its variable's colour where the layout puts it: %ld pixels around "
              "%.1f,%.1f, expected at %.1f,%.1f", what, n, cx, cy, q.x, q.y);
    long stray = 0;   /* the colour outside the disc */
    int on = 0, off = 0;
    for (int y = (int)cl.y; y < cl.y + cl.h; y++)
        for (int x = (int)cl.x; x < cl.x + cl.w; x++) {
            double d = hypot(x + 0.5 - q.x, y + 0.5 - q.y);
            viz_rgb p = pixel(img, x, y);
            if (d > r + 4 && !viz_rect_contains(ps, x + 0.5, y + 0.5)) stray += near(p, fill, 0.03);
            if (d >= r + 0.3 && d <= r + 1.7) {
                on += near(p, ring, 0.03);
                off += near(p, not_ring, 0.03);
            }
        }
    CHECK_MSG(stray == 0, "%s: its colour nowhere else in the cluster (%ld pixels)", what, stray);
    CHECK_MSG(on >= 2 * r, "%s: ringed by its outline colour (%d pixels, radius %.1f)", what, on, r);
    CHECK_MSG(off == 0, "%s: no pixel of the other direction's outline on its ring (%d)", what, off);
}

static void test_pull_and_push(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 2.0);
    viz_view v;
    viz_view_init(&v);
    v.t = T_SHOWN;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK_MSG(c.lay.n_ps == 1 && c.lay.n_workers == 2 && !c.lay.dense && !c.lay.compact_ps,
              "fixture: 1 ps box and 2 worker boxes (%d, %d)", c.lay.n_ps, c.lay.n_workers);
    viz_point pull = viz_layout_packet_pos(&c.lay, 0, 0, 0, 0.5), push = viz_layout_packet_pos(&c.lay, 0, 1, 1, 0.5);
    check_one(img, &c.lay, "pull of var 0 by worker 0", pull, KEY_VAR(0), KEY_WHITE, KEY_INK);
    check_one(img, &c.lay, "push of var 1 by worker 1", push, KEY_VAR(1), KEY_INK, KEY_WHITE);
    frame_close(&c, img);
    /* at their end time both have arrived: neither colour is left on the edges */
    v.t = T_END;
    img = frame_open(s, &v, &c);
    long left = 0;
    viz_rect cl = c.lay.cluster, ps = c.lay.ps_box[0];
    for (int y = (int)cl.y; y < cl.y + cl.h; y++)
        for (int x = (int)cl.x; x < cl.x + cl.w; x++)
            if (!viz_rect_contains(ps, x + 0.5, y + 0.5))
                left += near(pixel(img, x, y), KEY_VAR(0), 0.03) || near(pixel(img, x, y), KEY_VAR(1), 0.03);
    CHECK_MSG(left == 0, "at the end time, both arrived: no packet colour outside the ps box (%ld pixels)", left);
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* Whether one of the n lines is exactly want. */
static int has_line(char lines[][VIZ_INSPECT_WIDTH], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(lines[i], want)) return 1;
    return 0;
}

/* The inspector's text, against the fixture's own numbers: at T_END worker 0 has pulled
 * one 250 kB packet and pushed nothing, worker 1 the reverse, and worker 0's last loss is
 * its 14th step's, 2.0 x (1 - 0.03 x 13); at T_SHOWN each has its packet in flight, half-way. */
static void test_inspector_text(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 2.0);
    char title[VIZ_INSPECT_WIDTH], lines[VIZ_INSPECT_LINES][VIZ_INSPECT_WIDTH], want[VIZ_INSPECT_WIDTH];
    viz_view v;
    viz_view_init(&v);
    v.t = T_END;
    viz_ctx c;
    for (int w = 0; w < 2; w++) {
        v.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_WORKER, w, 0, 0};
        cairo_surface_t *img = frame_open(s, &v, &c);
        int n = viz_inspector_text(&c, title, lines);
        CHECK_MSG(n >= 5 && !strcmp(title, w ? "/job:worker/task:1" : "/job:worker/task:0"),
                  "inspector of worker %d: titled by the task (%d lines, '%s')", w, n, title);
        CHECK_MSG(has_line(lines, n, w ? "pulled 0 B \xc2\xb7 pushed 250.0 kB" : "pulled 250.0 kB \xc2\xb7 pushed 0 B"),
                  "inspector of worker %d: its bytes pulled and pushed", w);
        CHECK_MSG(has_line(lines, n, "in flight: 0 pulls, 0 pushes"), "inspector of worker %d: nothing in flight", w);
        snprintf(want, sizeof want, "last loss %.4f", 2.0 * (1 - 0.03 * 13));
        CHECK_MSG(has_line(lines, n, want) == !w, "inspector of worker %d: %s", w, w ? "no loss" : want);
        frame_close(&c, img);
    }
    v.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_PS, 0, 0, 0};
    cairo_surface_t *img = frame_open(s, &v, &c);
    int n = viz_inspector_text(&c, title, lines);
    CHECK_MSG(n >= 3 && !strcmp(title, "/job:ps/task:0") && has_line(lines, n, "holds 2 variables"),
              "inspector of ps 0: both variables (%d lines, '%s')", n, title);
    frame_close(&c, img);
    v.t = T_SHOWN;
    v.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_WORKER, 1, 0, 0};
    img = frame_open(s, &v, &c);
    n = viz_inspector_text(&c, title, lines);
    CHECK_MSG(has_line(lines, n, "in flight: 0 pulls, 1 pushes") && has_line(lines, n, "pulled 0 B \xc2\xb7 pushed 0 B"),
              "inspector of worker 1 mid-push: one push in flight, no bytes counted yet");
    frame_close(&c, img);
    v.sel = (viz_selection){VIZ_SEL_PACKET, EVT_JOB_WORKER, 0, 1, EVT_PULL_BEGIN};
    img = frame_open(s, &v, &c);
    n = viz_inspector_text(&c, title, lines);
    CHECK_MSG(!strcmp(title, "pull #1 from worker 0") && has_line(lines, n, "variable w") &&
              has_line(lines, n, "250.0 kB") && has_line(lines, n, "50% of the way"),
              "inspector of worker 0's pull: its variable, size and progress (%d lines, '%s')", n, title);
    frame_close(&c, img);
    v.sel.kind = VIZ_SEL_NONE;
    img = frame_open(s, &v, &c);
    CHECK_MSG(viz_inspector_text(&c, title, lines) == -1, "no selection: no inspector");
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* Each overlay against the same frame without it. Where it draws: the help card centred in
 * the window (its white over the middle 40 %, the key names in accent blue in its left
 * column), the inspector card at the cluster's top right, the toast dark at the cluster's
 * bottom left above the timeline, the compare strip under the two halves with A's loss in
 * blue and B's in vermillion. */
static void test_overlays(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 2.0), *other = fixture(strs, 1.0);
    viz_view v;
    viz_view_init(&v);
    v.t = T_SHOWN;
    double W = v.width, H = v.height;
    cairo_surface_t *base = viz_render_image(s, &v);
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    const viz_layout *l = &c.lay;
    viz_rect centre = {W * 0.3, H * 0.3, W * 0.4, H * 0.4}, keys = {W * 0.3, H * 0.3, W * 0.1, H * 0.4};
    viz_rect card = {l->cluster.x + l->cluster.w - 380 * l->s, l->cluster.y + 14 * l->s, 360 * l->s, 90 * l->s};
    viz_rect toast = {l->cluster.x + 10 * l->s, l->timeline.y - 8 * l->s - l->font_small * 1.6, 60 * l->s,
                      l->font_small * 1.2};
    viz_ctx_end(&c);
    viz_compare_layout cmp;   /* the strip's chart, below its title line */
    viz_layout_compare(W, H, v.dpr, &cmp);
    viz_rect plot = cmp.plot;
    double a_centre = centre.w * centre.h, a_card = card.w * card.h, a_toast = toast.w * toast.h;

    viz_view o = v;
    o.help = 1;
    cairo_surface_t *img = viz_render_image(s, &o);
    int white = count_color(img, centre, KEY_WHITE, 0.01), changed = differing(img, base, centre, 0.02);
    CHECK_MSG(white > a_centre * 0.7, "help: white card over the window's middle (%d of %.0f)", white, a_centre);
    CHECK_MSG(changed > a_centre * 0.5, "help: the window's middle differs from the frame without help "
              "(%d of %.0f)", changed, a_centre);
    int acc = count_color(img, keys, KEY_ACCENT, 0.1), acc0 = count_color(base, keys, KEY_ACCENT, 0.1);
    CHECK_MSG(acc > acc0 + 150, "help: key names in accent blue in the card's left column (%d vs %d)", acc, acc0);
    cairo_surface_destroy(img);

    o = v;
    o.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_WORKER, 1, 0, 0};
    img = viz_render_image(s, &o);
    changed = differing(img, base, card, 0.02);
    CHECK_MSG(changed > a_card * 0.15, "inspector: card at the cluster's top right (%d of %.0f changed)",
              changed, a_card);
    cairo_surface_destroy(img);

    o = v;
    o.toast = "saved frame";
    img = viz_render_image(s, &o);
    int dark = 0;
    for (int y = (int)toast.y; y < toast.y + toast.h; y++)
        for (int x = (int)toast.x; x < toast.x + toast.w; x++) {
            viz_rgb p = pixel(img, x, y);
            dark += p.r + p.g + p.b < 0.9;
        }
    changed = differing(img, base, toast, 0.02);
    CHECK_MSG(dark > a_toast * 0.6 && changed > a_toast * 0.5,
              "toast: dark box at the cluster's bottom left (%d dark, %d changed of %.0f)", dark, changed, a_toast);
    cairo_surface_destroy(img);

    o = v;
    o.compare = other;
    img = viz_render_image(s, &o);
    int ca = count_color(img, plot, KEY_ACCENT, 0.1), cb = count_color(img, plot, KEY_VERMILLION, 0.1);
    int cb0 = count_color(base, plot, KEY_VERMILLION, 0.1);
    CHECK_MSG(ca > 150, "compare: A's loss curve (blue) in the strip: %d pixels", ca);
    CHECK_MSG(cb > 150 && cb0 == 0, "compare: B's loss curve (vermillion) in the strip: %d pixels (%d without "
              "compare)", cb, cb0);
    cairo_surface_destroy(img);

    /* all at once, B following A by step: the help card still covers the middle */
    o.compare_by_step = 1;
    o.help = 1;
    o.toast = "saved frame";
    o.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_WORKER, 1, 0, 0};
    img = viz_render_image(s, &o);
    white = count_color(img, centre, KEY_WHITE, 0.01);
    CHECK_MSG(white > a_centre * 0.7, "compare + help: white card over the middle (%d of %.0f)", white, a_centre);
    cairo_surface_destroy(img);
    cairo_surface_destroy(base);
    viz_source_free(other);
    viz_source_free(s);
    evt_strtab_free(strs);
}

int main(void)
{
    test_pull_and_push();
    test_overlays();
    test_inspector_text();
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
