/* test_viz.c — the viewer's geometry and pictures, on cairo image surfaces: layout
 * invariants (boxes inside their areas, no overlaps, readable fonts, dense grid), then a
 * small synthetic trace rendered at fixed times with region / pixel checks that every
 * task box, variable bar and an in-flight packet sit where the layout says in the colour
 * key's literal RGB (vizpix.h), byte-identical re-renders (PNG, PDF), a golden image
 * (tests/golden/viz_small.png, VIZ_UPDATE_GOLDEN=1 rewrites it: the whole frame with a
 * tolerance for text, packets / bars / phase bands to within a few pixels), placement
 * view, dense mode, in-memory sources, navigation, hit tests and a damaged trace; many ps
 * (100) as compact cells that keep a readable size, do not overlap and are drawn where the
 * layout says. Packet outlines and overlays: test_viz_pixels.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "evgen.h"
#include "viz/internal.h"
#include "viz/synth.h"
#include "vizpix.h"

/* fontconfig's cleanup, when the process has it (through cairo); weak so that the
 * test links without -lfontconfig. */
extern void FcFini(void) __attribute__((weak));

static char dir[256];

static int inside(viz_rect in, viz_rect r)
{
    return r.x >= in.x - 0.5 && r.y >= in.y - 0.5 && r.x + r.w <= in.x + in.w + 0.5 &&
           r.y + r.h <= in.y + in.h + 0.5;
}

static int overlap(viz_rect a, viz_rect b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static void test_layout(void)
{
    int vps[4] = {0, 1, 0, 1};
    int64_t vb[4] = {401408, 512, 5120, 512};
    viz_layout_input in = {1280, 720, 1, 2, 8, 4, vps, vb, 1, 10, 0};
    viz_layout l;
    viz_layout_compute(&in, &l);
    CHECK(!l.dense);
    CHECK(l.font >= 15 && l.font_small >= 12);
    CHECK(inside((viz_rect){0, 0, 1280, 720}, l.cluster));
    CHECK(inside((viz_rect){0, 0, 1280, 720}, l.timeline));
    CHECK(l.cluster.y + l.cluster.h <= l.timeline.y);
    for (int i = 0; i < VIZ_N_PANELS; i++) {
        CHECK(inside((viz_rect){0, 0, 1280, 720}, l.panels[i]));
        CHECK(!overlap(l.panels[i], l.cluster));
    }
    for (int p = 0; p < 2; p++) CHECK(inside(l.cluster, l.ps_box[p]));
    CHECK(!overlap(l.ps_box[0], l.ps_box[1]));
    for (int v = 0; v < 4; v++) {
        CHECK(l.var_bar[v].w > 0);
        CHECK_MSG(inside(l.ps_box[vps[v]], l.var_bar[v]), "var %d", v);
    }
    CHECK(l.var_bar[0].w > l.var_bar[2].w && l.var_bar[2].w > l.var_bar[1].w);  /* sized by bytes */
    for (int w = 0; w < 8; w++) {
        CHECK_MSG(inside(l.cluster, l.worker_box[w]), "worker %d", w);
        CHECK(l.worker_box[w].y > l.ps_box[0].y + l.ps_box[0].h);
        for (int k = 0; k < w; k++) CHECK(!overlap(l.worker_box[w], l.worker_box[k]));
    }
    CHECK(l.barrier_y > l.ps_box[0].y + l.ps_box[0].h && l.barrier_y < l.worker_box[0].y);
    viz_point a = viz_layout_packet_pos(&l, 0, 3, 0, 0), b = viz_layout_packet_pos(&l, 0, 3, 0, 1);
    CHECK(a.y < b.y);   /* pulls travel down, ps -> worker */
    viz_point c = viz_layout_packet_pos(&l, 0, 3, 1, 0);
    CHECK(c.y > a.y);   /* pushes start at the worker */
    viz_layout_release(&l);
    /* HiDPI: fonts follow the pixel ratio */
    in.dpr = 2;
    in.width = 1280; in.height = 720;
    viz_layout_compute(&in, &l);
    CHECK(l.font >= 30);
    viz_layout_release(&l);
    /* dense: 10,000 workers as a grid inside the cluster area */
    in = (viz_layout_input){1280, 720, 1, 4, 10000, 4, vps, vb, 1, 10, 0};
    viz_layout_compute(&in, &l);
    CHECK(l.dense && l.worker_box == NULL);
    CHECK(l.grid_cols * l.grid_rows >= 10000);
    CHECK(inside(l.cluster, l.grid));
    CHECK(l.cell >= 2);
    CHECK(inside(l.grid, viz_layout_cell(&l, 9999)));
    viz_layout_release(&l);
    /* many variables on one ps fold into "+N more" */
    int vps2[20];
    int64_t vb2[20];
    for (int i = 0; i < 20; i++) vps2[i] = 0, vb2[i] = 1000 + i;
    in = (viz_layout_input){1280, 720, 1, 1, 2, 20, vps2, vb2, 1, 3, 0};
    viz_layout_compute(&in, &l);
    CHECK(l.var_bar[VIZ_MAX_BARS - 1].w > 0 && l.var_bar[VIZ_MAX_BARS].w == 0);
    CHECK(l.more_bar[0].w > 0 && inside(l.ps_box[0], l.more_bar[0]));
    viz_layout_release(&l);
}

/* Compact ps cells for n_ps ps at w x h: readable size, inside the cluster and the ps
 * area, no two overlapping, the load strips inside their cells, workers below. */
static void check_ps_cells(int w, int h, double dpr, int n_ps, int n_workers, double min_side)
{
    int n_vars = n_ps + n_ps / 2;
    int *vps = xmalloc((size_t)n_vars * sizeof *vps);
    int64_t *vb = xmalloc((size_t)n_vars * sizeof *vb);
    for (int v = 0; v < n_vars; v++) vps[v] = v % n_ps, vb[v] = v < n_ps ? 4000 + v * 10 : 512;
    viz_layout_input in = {w, h, dpr, n_ps, n_workers, n_vars, vps, vb, 1, 10, 0};
    viz_layout l;
    viz_layout_compute(&in, &l);
    CHECK_MSG(l.compact_ps, "%d ps at %dx%d: compact", n_ps, w, h);
    CHECK(l.ps_cols * l.ps_rows >= n_ps && l.ps_label_every >= 1);
    CHECK(inside(l.cluster, l.ps_area));
    double min_w = 1e9, min_h = 1e9;
    int outside = 0, overlaps = 0, strips_out = 0;
    for (int p = 0; p < n_ps; p++) {
        viz_rect b = l.ps_box[p];
        min_w = fmin(min_w, b.w);
        min_h = fmin(min_h, b.h);
        outside += !inside(l.cluster, b) || !inside(l.ps_area, b);
        for (int k = 0; k < p; k++) overlaps += overlap(b, l.ps_box[k]);
    }
    for (int v = 0; v < n_vars; v++) strips_out += !inside(l.ps_box[vps[v]], l.var_bar[v]);
    CHECK_MSG(min_w >= min_side && min_h >= min_side, "%d ps at %dx%d: smallest cell %.1f x %.1f",
              n_ps, w, h, min_w, min_h);
    CHECK_MSG(outside == 0, "%d ps cells outside the cluster / ps area", outside);
    CHECK_MSG(overlaps == 0, "%d overlapping ps cells", overlaps);
    CHECK_MSG(strips_out == 0, "%d load strips outside their cells", strips_out);
    CHECK(l.var_bar[0].w > 0 && l.var_bar[n_ps].w > 0);   /* every variable has a segment */
    /* labels every Nth cell: N cells wide always hold the widest index */
    double pitch = l.ps_cols > 1 ? l.ps_box[1].x - l.ps_box[0].x : l.ps_box[0].w;
    int digits = n_ps > 1000 ? 4 : n_ps > 100 ? 3 : n_ps > 10 ? 2 : 1;
    CHECK(l.ps_label_every * pitch >= digits * 0.6 * l.font_small);
    double ps_bottom = l.ps_area.y + l.ps_area.h;
    if (l.dense) CHECK(l.grid.y > ps_bottom && inside(l.cluster, l.grid));
    else {
        int bad = 0;
        for (int k = 0; k < n_workers; k++)
            bad += !(l.worker_box[k].y > ps_bottom && inside(l.cluster, l.worker_box[k]));
        CHECK_MSG(bad == 0, "%d worker boxes not below the ps", bad);
    }
    viz_layout_release(&l);
    free(vps);
    free(vb);
}

static void test_layout_many_ps(void)
{
    check_ps_cells(1280, 720, 1, 100, 10000, 24);   /* the 10,000 x 100 simulation */
    check_ps_cells(1280, 720, 1, 100, 64, 24);
    check_ps_cells(1920, 1080, 1, 100, 10000, 36);
    check_ps_cells(2560, 1440, 2, 100, 10000, 48);  /* HiDPI scales the cells */
    check_ps_cells(960, 540, 1, 100, 300, 16);
    check_ps_cells(1280, 720, 1, 16, 256, 40);
    check_ps_cells(1280, 720, 1, 9, 8, 40);
    check_ps_cells(1280, 720, 1, 1000, 10000, 6);   /* beyond the simulator's usual */
    viz_layout l;
    int vps[2] = {0, 1};
    int64_t vb[2] = {100, 100};
    /* at 1280x720, 100 ps: four rows of 25, every cell labelled */
    viz_layout_input in = {1280, 720, 1, 100, 10000, 2, vps, vb, 1, 10, 0};
    viz_layout_compute(&in, &l);
    CHECK(l.ps_rows <= 5 && l.ps_label_every == 1);
    CHECK(l.ps_area.h <= l.cluster.h * 0.36);   /* the grid keeps most of the room */
    viz_layout_release(&l);
    /* 16 ps: one row */
    in.n_ps = 16;
    viz_layout_compute(&in, &l);
    CHECK(l.compact_ps && l.ps_rows == 1 && l.ps_cols == 16);
    viz_layout_release(&l);
    /* a few ps keep their boxes */
    for (int n = 1; n <= 6; n++) {
        in.n_ps = n;
        in.n_workers = 8;
        viz_layout_compute(&in, &l);
        CHECK_MSG(!l.compact_ps && l.ps_box[0].w >= VIZ_PS_MIN_BOX_W, "%d ps", n);
        viz_layout_release(&l);
    }
    /* compare halves: narrow clusters go compact sooner, never with slivers */
    in = (viz_layout_input){640, 720, 1, 8, 8, 2, vps, vb, 0, 10, 0};
    viz_layout_compute(&in, &l);
    CHECK(l.compact_ps && l.ps_box[0].w >= 40);
    viz_layout_release(&l);
    in.n_ps = 4;
    viz_layout_compute(&in, &l);
    CHECK(!l.compact_ps && l.ps_box[0].w >= l.font_small * 8);
    viz_layout_release(&l);
}

static int64_t write_synth(const char *path, int ps, int workers, int vars, int steps, int backup)
{
    viz_synth_opts o = {ps, workers, vars, steps, backup, 11, 0, "test run"};
    char err[DP_ERRLEN];
    int64_t n = viz_synth_write(path, &o, err);
    if (n < 0) fprintf(stderr, "synth: %s\n", err);
    return n;
}

/* A time when worker `w` is in `phase`, scanning [a, b); -1 if none. */
static int64_t find_phase(viz_source *s, int w, int phase, int64_t a, int64_t b, int64_t dt)
{
    for (int64_t t = a; t < b; t += dt) {
        const evt_task_state *tk = evt_state_task(viz_source_state_at(s, t), EVT_JOB_WORKER, w);
        if (tk && tk->phase == phase) return t;
    }
    return -1;
}

static void check_frame(viz_source *s, int64_t t)
{
    viz_view v;
    viz_view_init(&v);
    v.t = t;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    /* every ps box: white inside, ink border, title text */
    for (int p = 0; p < c.lay.n_ps; p++) {
        viz_rect b = c.lay.ps_box[p];
        CHECK_MSG(near(pixel(img, b.x + 3.5 * c.lay.s, b.y + b.h * 0.5), KEY_WHITE, FLAT_TOL),
                  "ps %d white inside", p);
        int border = 0;
        for (double dy = -1; dy <= 1; dy += 0.5) border |= near(pixel(img, b.x + b.w / 2, b.y + dy), KEY_INK, 0.25);
        CHECK_MSG(border, "ps %d ink border", p);
        int ink = 0;
        for (double x = b.x + 8; x < b.x + b.w * 0.5; x += 1)
            for (double y = b.y + 4; y < b.y + c.lay.font * 1.4; y += 1)
                ink += near(pixel(img, x, y), KEY_INK, 0.2);
        CHECK_MSG(ink > 40, "ps %d title ink %d", p, ink);
    }
    /* every variable bar in its colour from the key */
    for (int i = 0; i < s->m.n_vars; i++) {
        viz_rect r = c.lay.var_bar[i];
        CHECK_MSG(near(pixel(img, r.x + r.w / 2, r.y + r.h / 2), KEY_VAR(i), FLAT_TOL),
                  "var %d bar in its key colour at %.0f,%.0f", i, r.x + r.w / 2, r.y + r.h / 2);
    }
    /* every worker box: its phase colour from the key on the border band */
    for (int w = 0; w < c.lay.n_workers; w++) {
        viz_rect b = c.lay.worker_box[w];
        const evt_task_state *tk = evt_state_task(c.st, EVT_JOB_WORKER, w);
        int ph = tk && tk->started ? tk->phase : EVT_PHASE_IDLE;
        double lift = ph == EVT_PHASE_BARRIER ? b.y - c.lay.barrier_y : 0;
        CHECK_MSG(near(pixel(img, b.x + 2.5 * c.lay.s, b.y - lift + b.h / 2), KEY_PHASE(ph), FLAT_TOL),
                  "worker %d band in the key colour of phase %s", w, evt_phase_name(ph));
    }
    frame_close(&c, img);
}

/* Finds a pull in flight away from everything else and checks its pixel. */
static void check_packet(viz_source *s)
{
    int found = 0;
    for (int64_t t = viz_source_t1(s) / 4; t < viz_source_t1(s) && !found; t += 1000000) {
        viz_view v;
        viz_view_init(&v);
        v.t = t;
        viz_ctx c;
        viz_ctx_begin(&c, NULL, s, &v, t, v.width, v.height, 1);
        for (int i = 0; i < c.fr.n_pk && !found; i++) {
            viz_packet *p = &c.fr.pk[i];
            if (p->dropped || p->var < 0) continue;
            double f = (double)(t - p->t0) / (double)(p->t1 - p->t0);
            viz_point q = viz_layout_packet_pos(&c.lay, p->ps, p->worker, p->is_push, f);
            int clear = q.y > c.lay.ps_box[0].y + c.lay.ps_box[0].h + 20 && q.y < c.lay.barrier_y - 20;
            for (int k = 0; k < c.fr.n_pk && clear; k++) {
                if (k == i) continue;
                viz_packet *o = &c.fr.pk[k];
                double g = (double)(t - o->t0) / (double)(o->t1 - o->t0);
                viz_point r = viz_layout_packet_pos(&c.lay, o->ps, o->worker, o->is_push, g);
                if (fabs(r.x - q.x) < 30 && fabs(r.y - q.y) < 30) clear = 0;
            }
            if (!clear) continue;
            found = 1;
            cairo_surface_t *img = viz_render_image(s, &v);
            CHECK_MSG(near(pixel(img, q.x, q.y), KEY_VAR(p->var), FLAT_TOL), "packet at %.0f,%.0f", q.x, q.y);
            /* and nothing of that colour where it is not */
            viz_point far = viz_layout_packet_pos(&c.lay, p->ps, p->worker, p->is_push, f > 0.5 ? 0.1 : 0.9);
            CHECK_MSG(!near(pixel(img, far.x, far.y), KEY_VAR(p->var), 0.03), "packet colour not at %.0f,%.0f on "
                      "its edge", far.x, far.y);
            /* clicking it selects it: an accent ring around it and the inspector card */
            viz_selection sel;
            viz_hit(s, &v, q.x + 2, q.y - 2, &sel);
            CHECK_MSG(sel.kind == VIZ_SEL_PACKET && sel.task == p->worker && sel.id == p->id &&
                      sel.packet_kind == (p->is_push ? EVT_PUSH_BEGIN : EVT_PULL_BEGIN),
                      "click on the packet: kind %d task %d id %llu", sel.kind, sel.task,
                      (unsigned long long)sel.id);
            viz_view vs = v;
            vs.sel = sel;
            cairo_surface_t *img2 = viz_render_image(s, &vs);
            int ring0 = 0, ring1 = 0, changed_far = 0;
            for (double y = q.y - 16; y <= q.y + 16; y++)
                for (double x = q.x - 16; x <= q.x + 16; x++) {
                    ring0 += near(pixel(img, x, y), KEY_ACCENT, 0.03);
                    ring1 += near(pixel(img2, x, y), KEY_ACCENT, 0.03);
                }
            for (double y = 0; y < v.height; y += 2)
                for (double x = 0; x < v.width; x += 2)
                    if ((fabs(x - q.x) > 40 || fabs(y - q.y) > 40) &&
                        !near(pixel(img, x, y), pixel(img2, x, y), 0.01))
                        changed_far++;
            CHECK_MSG(ring1 > ring0 + 20, "accent ring around the selected packet: %d vs %d pixels", ring1, ring0);
            CHECK_MSG(changed_far > 500, "inspector card drawn (%d pixels changed away from the packet)", changed_far);
            cairo_surface_destroy(img2);
            cairo_surface_destroy(img);
        }
        viz_ctx_end(&c);
    }
    CHECK_MSG(found, "no isolated packet in flight found");
}

static int file_bytes(const char *path, unsigned char **out, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = xmalloc(*n + 1);
    size_t got = fread(*out, 1, *n, f);
    fclose(f);
    return got == *n ? 0 : -1;
}

static int same_files(const char *a, const char *b)
{
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same = !file_bytes(a, &x, &nx) && !file_bytes(b, &y, &ny) && nx == ny && nx > 0 &&
               !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

static void test_determinism_and_golden(viz_source *s)
{
    viz_view v;
    viz_view_init(&v);
    v.t = viz_source_t1(s) / 2;
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    char err[DP_ERRLEN];
    CHECK(viz_render_file(s, &v, a, err) == 0);
    viz_view other = v;
    other.t = 0;
    cairo_surface_destroy(viz_render_image(s, &other));   /* a different frame in between */
    CHECK(viz_render_file(s, &v, b, err) == 0);
    CHECK(same_files(a, b));
    snprintf(a, sizeof a, "%s/a.pdf", dir);
    snprintf(b, sizeof b, "%s/b.pdf", dir);
    CHECK(viz_render_file(s, &v, a, err) == 0 && viz_render_file(s, &v, b, err) == 0);
    CHECK(same_files(a, b));
    snprintf(a, sizeof a, "%s/a.svg", dir);
    CHECK(viz_render_file(s, &v, a, err) == 0);
    unsigned char *d = NULL;
    size_t n = 0;
    CHECK(!file_bytes(a, &d, &n) && n > 1000 && strstr((char *)d, "<svg") != NULL);
    free(d);
    CHECK(viz_render_file(s, &v, "x.gif", err) == DP_EINVAL && strstr(err, "gif"));
    /* golden image, 960x540. Text may rasterise a little differently on another machine,
     * so the whole frame keeps a loose tolerance; but the parts without text (each packet
     * in flight with its outline, each variable bar, each worker's phase band) must match
     * to within a few pixels: one swapped outline or one changed colour is 50 or more. */
    v.width = 960;
    v.height = 540;
    cairo_surface_t *img = viz_render_image(s, &v);
    const char *golden = "tests/golden/viz_small.png";
    if (getenv("VIZ_UPDATE_GOLDEN")) {
        CHECK(viz_png_save(img, golden, err) == 0);
        printf("wrote %s\n", golden);
    }
    cairo_surface_t *g = cairo_image_surface_create_from_png(golden);
    int g_ok = cairo_surface_status(g) == CAIRO_STATUS_SUCCESS && cairo_image_surface_get_width(g) == 960 &&
               cairo_image_surface_get_height(g) == 540;
    CHECK_MSG(g_ok, "%s missing or not 960x540 (VIZ_UPDATE_GOLDEN=1)", golden);
    long bad = g_ok ? 0 : 960 * 540;
    for (int y = 0; g_ok && y < 540; y++)
        for (int x = 0; x < 960; x++) bad += !near(pixel(img, x, y), pixel(g, x, y), 0.2);
    CHECK_MSG(bad < 960 * 540 / 50, "golden: %ld pixels differ by more than 0.2 (2 %% allowed for text)", bad);
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    double s1 = c.lay.s;
    int n_pk = 0, pk_bad = 0, bars_bad = 0, bands_bad = 0, worst = 0;
    for (int i = 0; i < c.fr.n_pk; i++) {
        const viz_packet *p = &c.fr.pk[i];
        if (p->dropped) continue;
        viz_point q = viz_layout_packet_pos(&c.lay, p->ps, p->worker, p->is_push,
                                            (double)(v.t - p->t0) / (double)(p->t1 - p->t0));
        int dif = g_ok ? differing(img, g, (viz_rect){q.x - 16 * s1, q.y - 16 * s1, 32 * s1, 32 * s1}, 0.02) : 9999;
        n_pk++;
        pk_bad += dif > 4;
        worst = dif > worst ? dif : worst;
    }
    for (int i = 0; i < c.lay.n_vars; i++)
        bars_bad += !g_ok || differing(img, g, c.lay.var_bar[i], 0.02) > 4;
    for (int w = 0; w < c.lay.n_workers; w++) {
        viz_rect wb = c.lay.worker_box[w];
        bands_bad += !g_ok || differing(img, g, (viz_rect){wb.x, wb.y + 8 * s1, 4 * s1, wb.h - 16 * s1}, 0.02) > 4;
    }
    CHECK_MSG(n_pk >= 3, "golden frame has %d packets in flight", n_pk);
    CHECK_MSG(pk_bad == 0, "golden: %d of %d packet regions differ (worst %d pixels)", pk_bad, n_pk, worst);
    CHECK_MSG(bars_bad == 0, "golden: %d variable bars differ", bars_bad);
    CHECK_MSG(bands_bad == 0, "golden: %d worker phase bands differ", bands_bad);
    viz_ctx_end(&c);
    cairo_surface_destroy(g);
    cairo_surface_destroy(img);
}

static void test_views(viz_source *s)
{
    viz_view v;
    viz_view_init(&v);
    v.t = viz_source_t1(s);
    v.placement = 1;
    cairo_surface_t *img = viz_render_image(s, &v);
    viz_ctx c;
    viz_ctx_begin(&c, NULL, s, &v, v.t, v.width, v.height, 1);
    int dev = 0;
    for (double y = c.lay.cluster.y; y < c.lay.cluster.y + c.lay.cluster.h; y += 2)
        for (double x = c.lay.cluster.x; x < c.lay.cluster.x + c.lay.cluster.w; x += 2)
            dev += near(pixel(img, x, y), KEY_DEVICE0, FLAT_TOL);
    CHECK_MSG(dev > 200, "placement rows in the first device's light blue: %d pixels", dev);
    cairo_surface_destroy(img);
    /* hit tests and the scrubber */
    viz_selection sel;
    viz_rect wb = c.lay.worker_box[2];
    viz_view plain = v;
    plain.placement = 0;
    viz_hit(s, &plain, wb.x + wb.w / 2, wb.y + wb.h / 2, &sel);
    CHECK(sel.kind == VIZ_SEL_TASK && sel.job == EVT_JOB_WORKER && sel.task == 2);
    viz_hit(s, &plain, c.lay.ps_box[1].x + 5, c.lay.ps_box[1].y + 5, &sel);
    CHECK(sel.kind == VIZ_SEL_TASK && sel.job == EVT_JOB_PS && sel.task == 1);
    int64_t ts = viz_scrub_time(s, &plain, c.lay.scrub.x + c.lay.scrub.w / 2, c.lay.scrub.y + 2);
    CHECK_NEAR((double)ts, (double)c.t_end / 2, (double)c.t_end / 100);
    CHECK(viz_scrub_time(s, &plain, 5, 5) == -1);
    viz_ctx_end(&c);
    /* navigation */
    int64_t t = viz_source_t1(s) / 2;
    int64_t n1 = viz_source_seek_event(s, t, 1, 0), p1 = viz_source_seek_event(s, t, -1, 0);
    CHECK(n1 > t && p1 < t);
    int64_t gs = viz_source_state_at(s, t)->global_step;
    int64_t ns = viz_source_seek_event(s, t, 1, 1);
    CHECK(viz_source_state_at(s, ns)->global_step == gs + 1);
    int64_t ps = viz_source_seek_event(s, t, -1, 1);
    CHECK(ps < t && viz_source_state_at(s, ps)->global_step == gs);
    int64_t ps2 = viz_source_seek_event(s, ps, -1, 1);
    CHECK(ps2 < ps && viz_source_state_at(s, ps2)->global_step == gs - 1);
}

/* HiDPI: the same view at twice the pixels and dpr 2 (a Retina window's drawable) is
 * the 1x frame drawn twice as large (layout, fonts, lines), not a bigger canvas with
 * small content: sampled pixels of the 1x frame match the 2x frame at twice the
 * coordinates, except along edges. */
static void test_hidpi(viz_source *s)
{
    viz_view v1, v2;
    viz_view_init(&v1);
    v1.t = viz_source_t1(s) / 2;
    v2 = v1;
    v2.width = 2 * v1.width;
    v2.height = 2 * v1.height;
    v2.dpr = 2;
    cairo_surface_t *a = viz_render_image(s, &v1), *b = viz_render_image(s, &v2);
    int n = 0, same = 0;
    for (int y = 4; y < v1.height; y += 8)
        for (int x = 4; x < v1.width; x += 8) {
            n++;
            same += near(pixel(a, x + 0.5, y + 0.5), pixel(b, 2 * x + 1, 2 * y + 1), 0.1);
        }
    CHECK_MSG(same >= n * 9 / 10, "2x frame matches the 1x frame at twice the coordinates: %d of %d", same, n);
    cairo_surface_destroy(a);
    cairo_surface_destroy(b);
}

/* Writes a synthetic trace named name in the test directory and opens it (NULL, with a
 * failed check, when that fails). */
static viz_source *open_synth(const char *name, int ps, int workers, int vars, int steps, int backup)
{
    char path[400], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(write_synth(path, ps, workers, vars, steps, backup) > 0);
    viz_source *s = viz_source_open(path, err);
    CHECK_MSG(s != NULL, "%s: %s", name, err);
    return s;
}

static void test_dense(void)
{
    viz_source *s = open_synth("dense.trace", 3, 300, 4, 3, 10);
    if (!s) return;
    viz_view v;
    viz_view_init(&v);
    v.t = viz_source_t1(s) / 2;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK(c.lay.dense && c.lay.n_workers == 300);
    int ok = 0;
    for (int w = 0; w < 300; w += 7) {
        viz_rect r = viz_layout_cell(&c.lay, w);
        int ph = c.st->workers[w].phase;
        ok += near(pixel(img, r.x + r.w / 2, r.y + r.h / 2), KEY_PHASE(ph), FLAT_TOL);
    }
    CHECK_MSG(ok == (300 + 6) / 7, "%d of 43 sampled cells in their phase's key colour", ok);
    CHECK(c.fr.n_pk == 0);   /* no per-worker packets in dense mode */
    frame_close(&c, img);
    viz_source_free(s);
}

/* 100 ps above a dense grid: every cell drawn where the layout says (its border, its
 * index in ink, its variable's colour on the load strip), and clicks find the ps. */
static void test_many_ps(void)
{
    viz_source *s = open_synth("many_ps.trace", 100, 100, 100, 2, 5);
    if (!s) return;
    viz_view v;
    viz_view_init(&v);
    v.t = viz_source_t1(s) / 2;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    CHECK(c.lay.dense && c.lay.compact_ps && c.lay.n_ps == 100 && c.lay.ps_label_every == 1);
    int no_border = 0, no_label = 0, strip_wrong = 0;
    for (int p = 0; p < 100; p++) {
        viz_rect b = c.lay.ps_box[p];
        int border = 0, ink = 0;
        for (double dy = -1; dy <= 1; dy += 0.5)
            border |= pixel(img, b.x + b.w / 2, b.y + dy).r < 0.9;   /* ink, vermillion or blue */
        for (double x = b.x + 3; x < b.x + b.w - 3; x += 1)
            for (double y = b.y + 2; y < b.y + c.lay.font_small * 1.1; y += 1)
                ink += near(pixel(img, x, y), KEY_INK, 0.25);
        no_border += !border;
        no_label += ink < 8;
    }
    for (int i = 0; i < s->m.n_vars; i++) {
        viz_rect r = c.lay.var_bar[i];
        if (r.w < 3) continue;
        strip_wrong += !near(pixel(img, r.x + r.w / 2, r.y + r.h / 2), KEY_VAR(i), FLAT_TOL);
    }
    CHECK_MSG(no_border == 0, "%d ps cells without a border", no_border);
    CHECK_MSG(no_label == 0, "%d ps cells without their index", no_label);
    CHECK_MSG(strip_wrong == 0, "%d load-strip segments not in their variable's colour", strip_wrong);
    viz_selection sel;
    viz_rect b = c.lay.ps_box[57];
    viz_hit(s, &v, b.x + b.w / 2, b.y + b.h / 2, &sel);
    CHECK(sel.kind == VIZ_SEL_TASK && sel.job == EVT_JOB_PS && sel.task == 57);
    frame_close(&c, img);
    viz_source_free(s);
    /* 100 ps over a few worker boxes: cells, edges, packets, a selected cell's card */
    s = open_synth("many_ps_few_workers.trace", 100, 8, 100, 2, 1);
    if (!s) return;
    v.t = viz_source_t1(s) / 3;
    v.sel = (viz_selection){VIZ_SEL_TASK, EVT_JOB_PS, 3, 0, 0};
    img = frame_open(s, &v, &c);
    CHECK(!c.lay.dense && c.lay.compact_ps);
    b = c.lay.ps_box[3];
    CHECK_MSG(near(pixel(img, b.x + 0.5, b.y + b.h / 2), KEY_ACCENT, 0.1),
              "selected ps cell 3 outlined in accent blue");
    frame_close(&c, img);
    viz_source_free(s);
}

static void test_mem_source(void)
{
    evgen g;
    evgen_run(&g, 2, 8, 4, 420, 1, 5);   /* > 65536 events: exercises the snapshots */
    viz_source *s = viz_source_new_mem(g.strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    for (size_t i = 0; i < g.n; i++) viz_source_append(s, &g.ev[i]);
    CHECK(viz_source_events(s) == g.n && !viz_source_is_live(s));
    CHECK(!strcmp(s->m.engine, "real") && !strcmp(s->m.mode, "async"));
    int64_t times[] = {g.ev[g.n - 1].t, g.ev[g.n / 3].t, g.ev[g.n - 10].t, 0, g.ev[70000].t};
    for (size_t k = 0; k < DP_ARRAY_LEN(times); k++) {
        evt_state ref;
        evt_state_init(&ref);
        for (size_t i = 0; i < g.n && g.ev[i].t <= times[k]; i++) evt_state_apply(&ref, &g.ev[i]);
        CHECK_MSG(evt_state_equal(viz_source_state_at(s, times[k]), &ref), "state at %lld",
                  (long long)times[k]);
        evt_state_release(&ref);
    }
    check_frame(s, g.ev[g.n / 2].t);   /* boxes, bars and phases drawn from memory too */
    viz_source_free(s);
    evgen_free(&g);
}

static void test_damaged(const char *good)
{
    char path[400], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/cut.trace", dir);
    unsigned char *d = NULL;
    size_t n = 0;
    CHECK(!file_bytes(good, &d, &n));
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n * 2 / 3, f);
    fclose(f);
    free(d);
    viz_source *s = viz_source_open(path, err);
    CHECK(s != NULL && viz_source_damage(s) != NULL);
    if (s) check_frame(s, viz_source_t1(s));   /* what was read is drawn */
    viz_source_free(s);
    CHECK(viz_source_open("/nonexistent/x.trace", err) == NULL && err[0]);
}

/* The staleness histogram: exact bins for small values, widening bins for huge runs. */
static void test_stale_bins(void)
{
    CHECK(viz_stale_bin(-1) == 0 && viz_stale_bin(0) == 0 && viz_stale_bin(3) == 3);
    CHECK(viz_stale_bin(7) == 7 && viz_stale_bin(7.9) == 7 && viz_stale_bin(8) == 8);
    CHECK(viz_stale_bin(31) == 8 && viz_stale_bin(32) == 9 && viz_stale_bin(255) == 9);
    CHECK(viz_stale_bin(256) == 10 && viz_stale_bin(2047) == 10 && viz_stale_bin(2048) == 11);
    CHECK(viz_stale_bin(1e9) == VIZ_STALE_BINS - 1);
}

int main(void)
{
    test_stale_bins();
    snprintf(dir, sizeof dir, "/tmp/test_viz.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_layout();
    test_layout_many_ps();
    char path[400], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/small.trace", dir);
    CHECK(write_synth(path, 2, 4, 4, 12, 1) > 0);
    viz_source *s = viz_source_open(path, err);
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        CHECK(!strcmp(s->m.engine, "sim") && strstr(s->m.mode, "sync"));
        CHECK(s->m.n_ps == 2 && s->m.n_workers == 4 && s->m.n_vars == 4);
        int64_t t1 = viz_source_t1(s);
        int64_t tb = find_phase(s, 0, EVT_PHASE_BARRIER, t1 / 3, t1, 500000);
        int64_t tc = find_phase(s, 2, EVT_PHASE_COMPUTING, t1 / 3, t1, 500000);
        CHECK(tb > 0 && tc > 0);
        if (tb > 0) check_frame(s, tb);
        if (tc > 0) check_frame(s, tc);
        check_frame(s, 0);
        check_frame(s, t1);
        check_packet(s);
        test_determinism_and_golden(s);
        test_views(s);
        test_hidpi(s);
    }
    viz_source_free(s);
    test_dense();
    test_many_ps();
    test_mem_source();
    test_damaged(path);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
