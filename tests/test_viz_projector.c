/* test_viz_projector.c — the viewer for a lecture hall, and replays that start where the
 * story starts, checked on hand-made runs with expectations from the fixtures and the
 * issue's numbers (18 px, 1920x1080, 40 %, 10 %), never from the drawing code:
 *   - projector mode: every text drawn is at least 18 px (each draw's size is recorded
 *     through viz_text's test hook), no phase word is ever cut with an ellipsis (nor in
 *     the normal mode) at 1280x720 and 1920x1080 for 2, 8 and 100 workers, fewer and
 *     taller side panels, and `render --projector` writes a 1920x1080 frame;
 *   - start-up: a replay starts at the first pull; the timeline squeezes the start-up into
 *     a labelled segment under 10 % of its width;
 *   - the test accuracy panel after an evaluation: its accuracy, or for the simulator's,
 *     which has none, "no test set (simulated)". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/dp.h"
#include "viz/headless.h"
#include "viz/internal.h"
#include "viz/synth.h"
#include "vizpix.h"

extern void FcFini(void) __attribute__((weak));

#define MS 1000000

/* ---- fixtures ---------------------------------------------------------------------- */

static void ev(viz_source *s, int kind, int job, int task, int64_t t, int peer, int64_t step)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, job, task);
    e.t = t;
    e.peer = peer;
    e.peer_job = peer < 0 ? 0 : job == EVT_JOB_PS ? EVT_JOB_WORKER : EVT_JOB_PS;
    e.step = step;
    e.id = (uint64_t)(t / 1000 + 1);
    viz_source_append(s, &e);
}

/* A transfer by worker w with ps 0 of variable var, [t0, t1) (t1 < 0: never ends). */
static void transfer(viz_source *s, int push, int w, uint32_t var, int64_t t0, int64_t t1, uint64_t id)
{
    evt_record e;
    evt_init(&e, push ? EVT_PUSH_BEGIN : EVT_PULL_BEGIN, EVT_JOB_WORKER, w);
    e.t = t0;
    e.peer = 0;
    e.peer_job = EVT_JOB_PS;
    e.var = var;
    e.bytes = 401408;
    e.id = id;
    viz_source_append(s, &e);
    if (t1 < 0) return;
    e.kind = push ? EVT_PUSH_END : EVT_PULL_END;
    e.t = t1;
    e.dur = t1 - t0;
    viz_source_append(s, &e);
}

/* The cluster (1 ps, n workers, two variables on the ps) starting at 0 .. 4 ms. */
static void tasks(viz_source *s, evt_strtab *strs, int n, uint32_t *vars)
{
    static const char *const names[] = {"hidden/weights", "softmax/biases"};
    static const int64_t bytes[] = {401408, 40};
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.str = evt_strtab_intern(strs, "{\"mode\":\"sync\"}");
    viz_source_append(s, &e);
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.t = 1000;
    e.str = evt_strtab_intern(strs, "localhost");
    viz_source_append(s, &e);
    for (int w = 0; w < n; w++) {
        e.job = EVT_JOB_WORKER;
        e.task = w;
        e.t = 2000 + w;
        viz_source_append(s, &e);
    }
    for (int v = 0; v < 2; v++) {
        vars[v] = evt_strtab_intern(strs, names[v]);
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
        e.t = 3000 + v;
        e.var = vars[v];
        e.bytes = bytes[v];
        viz_source_append(s, &e);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
        e.t = 3500 + v;
        e.var = vars[v];
        e.peer_job = EVT_JOB_PS;
        e.peer = 0;
        e.device = evt_strtab_intern(strs, "/job:ps/replica:0/task:0/device:CPU:0");
        viz_source_append(s, &e);
    }
}

/* n workers that, at 50 ms, show every phase there is: worker 0 (the chief) evaluates,
 * the others pull, compute, push, wait at the barrier, wait out --pace or the SSP bound
 * in turn (w % 6), each begun at 45 ms and still open. A finished step comes first, so
 * that every box has a loss and a staleness to show. */
static double fixture_acc = 0.5;   /* the chief's evaluation's accuracy (NaN: the simulator's) */

static viz_source *all_phases(evt_strtab *strs, int n)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"sync with backup workers\"}");
    uint32_t var[2];
    tasks(s, strs, n, var);
    for (int w = 0; w < n; w++) transfer(s, 0, w, var[0], 10 * MS, 15 * MS, (uint64_t)w * 10 + 1);
    for (int w = 0; w < n; w++) {
        ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, 15 * MS, -1, 1);
        ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, w, 25 * MS, -1, 1);
        evt_record e;
        evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, w);
        e.t = 25 * MS;
        e.step = 1;
        e.value = 2.25;
        viz_source_append(s, &e);
    }
    ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 30 * MS, -1, 1);
    for (int w = 1; w < n; w++) {
        int64_t t = 45 * MS + w;
        switch (w % 6) {
        case 0: transfer(s, 0, w, var[1], t, -1, (uint64_t)w * 10 + 2); break;
        case 1: ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, t, -1, 2); break;
        case 2: transfer(s, 1, w, var[0], t, -1, (uint64_t)w * 10 + 3); break;
        case 3: ev(s, EVT_BARRIER_WAIT, EVT_JOB_WORKER, w, t, -1, 2); break;
        case 4: ev(s, EVT_PACED_BEGIN, EVT_JOB_WORKER, w, t, -1, 2); break;
        default: ev(s, EVT_SSP_WAIT, EVT_JOB_WORKER, w, t, -1, 2); break;
        }
    }
    evt_record e;   /* the chief's evaluation: 40 .. 60 ms */
    evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
    e.t = 60 * MS;
    e.dur = 20 * MS;
    e.value = fixture_acc;
    e.step = 1;
    viz_source_append(s, &e);
    return s;
}

/* ---- what the frame drew: viz_text's test hook ------------------------------------- */

typedef struct text_log {
    const char *want;   /* counted in seen when a text contains it */
    int seen;
    int n, cut, cut_phase;
    double min_px;
    char smallest[128], cut_text[128], cut_phase_text[128];
} text_log;

/* The words a worker's phase is shown by (docs/viewer.md), as the viewer writes them. */
static const char *const phase_words[] = {"idle", "pulling", "computing", "pushing", "at barrier",
                                          "blocked (ssp)", "paced", "evaluating", "dead",
                                          "stopped", "not started"};

/* 1 when a text cut to shown (ending in "…") from full was, or began, a phase word. */
static int is_phase_cut(const char *full, const char *shown)
{
    size_t n = strlen(shown);
    if (n >= 3 && !strcmp(shown + n - 3, "\xe2\x80\xa6")) n -= 3;
    for (size_t i = 0; i < DP_ARRAY_LEN(phase_words); i++) {
        const char *pw = phase_words[i];
        if (strstr(full, pw)) return 1;
        if (n > 0 && n < strlen(pw) && !strncmp(shown, pw, n)) return 1;   /* "computi…", "s…" */
    }
    return 0;
}

static void log_text(void *ctx, const char *full, const char *shown, double px, int cut, viz_rect box)
{
    (void)box;
    text_log *t = ctx;
    if (!full[0]) return;
    t->n++;
    if (t->want && strstr(full, t->want)) t->seen++;
    if (px < t->min_px) {
        t->min_px = px;
        snprintf(t->smallest, sizeof t->smallest, "%s", full);
    }
    if (!cut) return;
    t->cut++;
    snprintf(t->cut_text, sizeof t->cut_text, "%s -> %s", full, shown);
    if (is_phase_cut(full, shown)) {
        t->cut_phase++;
        snprintf(t->cut_phase_text, sizeof t->cut_phase_text, "%s -> %s", full, shown);
    }
}

/* Draws v of s with every text logged; returns the image (caller destroys). */
static cairo_surface_t *draw_logged(viz_source *s, const viz_view *v, text_log *log)
{
    const char *want = log->want;
    memset(log, 0, sizeof *log);
    log->want = want;
    log->min_px = 1e9;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, v->width, v->height);
    cairo_t *cr = cairo_create(img);
    viz_text_hook_set(cr, log_text, log);
    viz_draw(cr, s, v);
    cairo_destroy(cr);
    cairo_surface_flush(img);
    return img;
}

/* ---- projector mode ---------------------------------------------------------------- */

static void test_projector_text(void)
{
    static const int workers[] = {2, 8, 40, 100};   /* 40: compact boxes */
    static const int sizes[][2] = {{1280, 720}, {1920, 1080}};
    int tiny = 0, phase_cut = 0, normal_phase_cut = 0, texts = 0, proj_cut = 0;
    double smallest = 1e9;
    char what[256] = "", cut_what[256] = "", normal_what[256] = "";
    for (size_t i = 0; i < DP_ARRAY_LEN(workers); i++) {
        evt_strtab *strs = evt_strtab_new();
        viz_source *s = all_phases(strs, workers[i]);
        for (size_t k = 0; k < DP_ARRAY_LEN(sizes); k++)
            for (int proj = 0; proj < 2; proj++) {
                viz_view v;
                viz_view_init(&v);
                v.t = 50 * MS;
                v.width = sizes[k][0];
                v.height = sizes[k][1];
                v.projector = proj;
                text_log log = {0};   /* draw_logged keeps its want */
                cairo_surface_t *img = draw_logged(s, &v, &log);
                char name[64];
                snprintf(name, sizeof name, "projector-%d-%dx%d-%s", workers[i], v.width, v.height,
                         proj ? "proj" : "normal");
                vizpix_dump(img, "VIZ_STORY_DUMP", name);
                cairo_surface_destroy(img);
                if (!proj) {
                    if (log.cut_phase && !normal_phase_cut)
                        snprintf(normal_what, sizeof normal_what, "%s: %s", name, log.cut_phase_text);
                    normal_phase_cut += log.cut_phase;
                    continue;
                }
                texts += log.n;
                if (log.min_px < smallest) smallest = log.min_px;
                if (log.min_px < 18 - 1e-9 && !tiny++)
                    snprintf(what, sizeof what, "%s: \"%s\" at %.2f px", name, log.smallest, log.min_px);
                if (log.cut_phase && !phase_cut)
                    snprintf(cut_what, sizeof cut_what, "%s: %s", name, log.cut_phase_text);
                phase_cut += log.cut_phase;
                proj_cut += log.cut;
            }
        viz_source_free(s);
        evt_strtab_free(strs);
    }
    CHECK_MSG(texts >= 8 * 20, "fixture: the 8 projector frames draw texts (%d)", texts);
    CHECK_MSG(tiny == 0, "projector: every text is >= 18 px at 1280x720 and 1920x1080, 2/8/40/100 "
              "workers (%d frames with smaller; first %s; smallest %.2f px)", tiny, what, smallest);
    CHECK_MSG(phase_cut == 0, "projector: no phase word is cut with an ellipsis (%d; first %s)",
              phase_cut, cut_what);
    CHECK_MSG(normal_phase_cut == 0, "normal mode: no phase word is cut either (%d; first %s)",
              normal_phase_cut, normal_what);
    printf("projector: %d texts in 8 frames, smallest %.2f px, %d cut (none a phase word)\n",
           texts, smallest, proj_cut);
}

/* The layout's floor: 18 px in projector mode whatever the size, and its own sizes obey it. */
static void test_projector_layout(void)
{
    static const int sizes[][2] = {{1280, 720}, {1920, 1080}, {960, 540}};
    int64_t bytes[1] = {1000};
    int ps[1] = {0};
    for (size_t k = 0; k < DP_ARRAY_LEN(sizes); k++) {
        viz_layout_input in = {sizes[k][0], sizes[k][1], 1, 1, 8, 1, ps, bytes, 1, 9, 0};
        viz_layout n, p;
        viz_layout_compute(&in, &n);
        viz_layout_compute_mode(&in, VIZ_LAYOUT_PROJECTOR, &p);
        CHECK_MSG(viz_layout_min_font(&p) == 18, "%dx%d projector: smallest font 18 px (%.2f)",
                  sizes[k][0], sizes[k][1], viz_layout_min_font(&p));
        /* the smallest share of font_small a label is drawn at is 0.8 (the timeline key) */
        CHECK_MSG(p.font_small * 0.8 >= 18 - 1e-9 && p.font >= p.font_small,
                  "%dx%d projector: 0.8 x font_small %.2f >= 18 px", sizes[k][0], sizes[k][1],
                  p.font_small * 0.8);
        int shown_n = 0, shown_p = 0;
        double h_n = 0, h_p = 1e9;
        for (int i = 0; i < VIZ_N_PANELS; i++) {
            if (n.panels[i].w > 0) shown_n++, h_n = fmax(h_n, n.panels[i].h);
            if (p.panels[i].w > 0) shown_p++, h_p = fmin(h_p, p.panels[i].h);
        }
        CHECK_MSG(shown_n == 5 && shown_p == 3 && p.panels[0].w > 0 && p.panels[1].w == 0 &&
                  p.panels[2].w == 0, "%dx%d: 5 panels, projector 3 (loss, staleness, traffic; got %d)",
                  sizes[k][0], sizes[k][1], shown_p);
        CHECK_MSG(h_p > h_n * 1.4, "%dx%d projector panels are taller (%.0f vs %.0f px)",
                  sizes[k][0], sizes[k][1], h_p, h_n);
        if (sizes[k][0] >= 1280)   /* 960x540 is below what projector mode is for */
        CHECK_MSG(p.worker_box[0].w > n.worker_box[0].w && !p.compact_workers &&
                  p.worker_box[0].h >= p.font * 3.4,
                  "%dx%d projector worker boxes are wider, with room for 3 lines at its font "
                  "(%.0fx%.0f vs %.0fx%.0f)", sizes[k][0],
                  sizes[k][1], p.worker_box[0].w, p.worker_box[0].h, n.worker_box[0].w, n.worker_box[0].h);
        viz_layout_release(&n);
        viz_layout_release(&p);
    }
}

/* `render --projector` (viz_headless_run with projector and no size) writes 1920x1080. */
static void test_projector_frame_size(void)
{
    char dir[] = "/tmp/dp-projector-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    char err[DP_ERRLEN];
    const char *trace = check_path(dir, "synth.dpt"), *png = check_path(dir, "p.png");
    viz_synth_opts so = {2, 8, 4, 10, 1, 1, 0, NULL};
    CHECK_MSG(viz_synth_write(trace, &so, err) > 0, "synthetic trace: %s", err);
    viz_headless_opts o;
    viz_headless_opts_init(&o);
    o.trace = trace;
    o.out = png;
    o.projector = 1;
    FILE *null = fopen("/dev/null", "w");
    int rc = viz_headless_run(&o, null, null, err);
    CHECK_MSG(rc == 0, "render --projector: %s", rc ? err : "");
    cairo_surface_t *img = cairo_image_surface_create_from_png(png);
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    CHECK_MSG(w == 1920 && h == 1080, "a projector frame is 1920x1080 (got %dx%d)", w, h);
    cairo_surface_destroy(img);
    o.projector = 0;
    rc = viz_headless_run(&o, null, null, err);
    img = cairo_image_surface_create_from_png(png);
    w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    CHECK_MSG(rc == 0 && w == 1280 && h == 720, "without it, 1280x720 (got %dx%d)", w, h);
    cairo_surface_destroy(img);
    fclose(null);
    unlink(trace);
    unlink(png);
    rmdir(dir);
}

/* ---- the story starts at the first pull -------------------------------------------- */

/* 100 ms: tasks start at 0 .. 4 ms, data loads until the first pull at 40 ms (40 %), then
 * both workers pull 4 ms, compute 6 ms and push 2 ms, again and again. */
static viz_source *late_start(evt_strtab *strs)
{
    viz_source *s = viz_source_new_mem(strs, "{\"engine\":\"real\",\"mode\":\"async\"}");
    uint32_t var[2];
    tasks(s, strs, 2, var);
    uint64_t id = 1;
    for (int64_t t = 40 * MS; t + 12 * MS <= 100 * MS; t += 12 * MS)
        for (int w = 0; w < 2; w++) {
            transfer(s, 0, w, var[0], t + w, t + 4 * MS, id++);
            ev(s, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, t + 4 * MS, -1, 1);
            ev(s, EVT_COMPUTE_END, EVT_JOB_WORKER, w, t + 10 * MS, -1, 1);
            transfer(s, 1, w, var[0], t + 10 * MS, t + 12 * MS, id++);
        }
    ev(s, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, 100 * MS, -1, 0);
    return s;
}

static void test_story_start(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = late_start(strs);
    CHECK_MSG(viz_source_story_start(s) == 40 * MS,
              "a replay starts at the first pull, 40 ms of 100 (got %.3f ms)",
              (double)viz_source_story_start(s) / MS);
    viz_view v;
    viz_view_init(&v);
    v.t = 100 * MS;
    viz_ctx c;
    cairo_surface_t *img = frame_open(s, &v, &c);
    vizpix_dump(img, "VIZ_STORY_DUMP", "story-start");
    const viz_layout *l = &c.lay;
    /* worker 0's lane (ps 0 is lane 0): the first column in the pull or compute colour */
    double y = l->lanes.y + 1.5 * l->lane_h;
    int first = -1;
    for (int x = (int)l->lanes.x; x < l->lanes.x + l->lanes.w && first < 0; x++)
        if (near(pixel(img, x, y), KEY_PULL, FLAT_TOL) || near(pixel(img, x, y), KEY_COMPUTE, FLAT_TOL))
            first = x;
    double frac = first < 0 ? 1 : (first - l->lanes.x) / l->lanes.w;
    CHECK_MSG(first >= 0 && frac < 0.10, "the start-up (40 %% of the run) takes under 10 %% of the "
              "timeline (the first pull at %.1f %%)", frac * 100);
    /* its label: text-like (dark) pixels between the lanes' left edge and the first pull */
    int dark = 0;
    for (int yy = (int)l->lanes.y; yy < l->lanes.y + l->lanes.h; yy++)
        for (int x = (int)l->lanes.x + 1; x < first - 1; x++) {
            viz_rgb p = pixel(img, x, yy);
            dark += p.r + p.g + p.b < 1.5;
        }
    CHECK_MSG(dark >= 40, "the start-up segment carries its label (%d dark pixels)", dark);
    /* the scrubber: the first pull's column is ~40 ms, the right end 100 ms */
    int64_t t_first = viz_timeline_time_at(&c, l->lanes, first + 0.5);
    double px_ms = 60.0 / (l->lanes.w * 0.9);
    CHECK_MSG(fabs((double)t_first / MS - 40) <= 2 * px_ms * 1.2 + 0.01,
              "scrubbing to the first pull's column gives ~40 ms (%.3f ms)", (double)t_first / MS);
    CHECK_MSG(viz_timeline_time_at(&c, l->lanes, l->lanes.x + l->lanes.w) == 100 * MS,
              "the timeline's right end is the run's end");
    frame_close(&c, img);
    viz_source_free(s);
    evt_strtab_free(strs);
    /* a global step before any pull ends the start-up too; a run with neither starts at 0 */
    strs = evt_strtab_new();
    s = viz_source_new_mem(strs, "{\"mode\":\"async\"}");
    uint32_t var[2];
    tasks(s, strs, 1, var);
    CHECK_MSG(viz_source_story_start(s) == 0, "no pull nor step yet: the story starts at the first event");
    ev(s, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 30 * MS, -1, 1);
    transfer(s, 0, 0, var[0], 50 * MS, 55 * MS, 1);
    CHECK_MSG(viz_source_story_start(s) == 30 * MS, "the first global step (30 ms) ends the start-up (%.3f)",
              (double)viz_source_story_start(s) / MS);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* The test accuracy panel after the chief's evaluation: its accuracy, or for the
 * simulator's (no test set: NaN) a word saying so, never a number. */
static void test_accuracy_label(void)
{
    static const struct { double acc; const char *want, *not; } cases[] = {
        {0.5, "50.0%", "no test set"}, {NAN, "no test set (simulated)", "no eval yet"}};
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        fixture_acc = cases[i].acc;
        evt_strtab *strs = evt_strtab_new();
        viz_source *s = all_phases(strs, 2);
        viz_view v;
        viz_view_init(&v);
        v.t = 70 * MS;   /* after the evaluation (40 .. 60 ms) */
        v.width = 1280;
        v.height = 720;
        text_log log = {.want = cases[i].want};
        cairo_surface_t *img = draw_logged(s, &v, &log);
        cairo_surface_destroy(img);
        CHECK_MSG(log.seen == 1, "accuracy %g: \"%s\" drawn %d times", cases[i].acc, cases[i].want, log.seen);
        log.want = cases[i].not;
        img = draw_logged(s, &v, &log);
        cairo_surface_destroy(img);
        CHECK_MSG(log.seen == 0, "accuracy %g: \"%s\" drawn %d times", cases[i].acc, cases[i].not, log.seen);
        viz_source_free(s);
        evt_strtab_free(strs);
    }
    fixture_acc = 0.5;
}

int main(void)
{
    test_projector_layout();
    test_projector_text();
    test_projector_frame_size();
    test_story_start();
    test_accuracy_label();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
