/* bench_viz.c — the viewer's speed, as markdown table rows on stdout (| measurement |
 * value | ratio | goal |). Every time is also given as a ratio to the baseline: the mean
 * frame at 1280x720 of a 2 ps + 8 worker synthetic run, measured first in the same run
 * (frames: best of 3 passes, each the mean over many frames). Cases: that frame; a 4 ps +
 * 10,000 worker synthetic run (goals 8 and 16 ms); a 100 ps + 10,000 worker simulated run
 * (`downpour sim`, 100 MB, sampled trace); the baseline run's middle frame encoded to PNG
 * by cairo's writer and by viz/png.h (what `render` and the browser pages use), 1280x720
 * and 1920x1080, best of 3 passes of 20 encodings; then a 10M-event trace: generate, open and
 * index, first jump to its middle (builds the state snapshots), later jumps, first frame.
 * Traces go to /tmp and are removed afterwards. `--quick` uses smaller traces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "sim/sim.h"
#include "viz/synth.h"
#include "viz/viz.h"
#include "viz/png.h"

#define FRAME_PASSES 3

static double ms_since(uint64_t t0) { return (double)(dp_now_ns() - t0) / 1e6; }

static int gen(const char *path, int ps, int workers, int steps, int64_t max_events, double *secs,
               int64_t *events)
{
    viz_synth_opts o = {ps, workers, 4, steps, 1, 3, max_events, "bench"};
    char err[DP_ERRLEN];
    uint64_t t0 = dp_now_ns();
    *events = viz_synth_write(path, &o, err);
    *secs = ms_since(t0) / 1e3;
    if (*events < 0) fprintf(stderr, "bench_viz: %s\n", err);
    return *events < 0 ? -1 : 0;
}

/* The simulator's 10,000 workers x 100 ps (100 MB model, 10 Gbit), auto trace level
 * (per-message events for 16 sampled workers, step_end for all). */
static int gen_sim(const char *path, int workers, int steps, int64_t *events)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 100;
    c.n_workers = workers;
    c.steps = steps;
    c.model_bytes = 100e6;
    c.ps_bw = c.worker_bw = 10e9 / 8;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result r;
    char err[DP_ERRLEN];
    if (sim_run(&c, &r, err)) {
        fprintf(stderr, "bench_viz: sim: %s\n", err);
        return -1;
    }
    *events = (int64_t)r.trace_events;
    return 0;
}

/* Mean ms per frame while playing through the middle half of the trace: the best of
 * FRAME_PASSES passes of `frames` frames each, after one warm-up frame; at 1280x720, or in
 * projector mode (1920x1080) when projector. */
static double frame_ms_mode(const char *path, int frames, int projector)
{
    char err[DP_ERRLEN];
    viz_source *s = viz_source_open(path, err);
    if (!s) {
        fprintf(stderr, "bench_viz: %s\n", err);
        return -1;
    }
    viz_view v;
    viz_view_init(&v);
    if (projector) v.projector = 1, v.width = 1920, v.height = 1080;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, v.width, v.height);
    cairo_t *cr = cairo_create(img);
    int64_t t1 = viz_source_t1(s), a = t1 / 4, span = t1 / 2;
    v.t = a;
    viz_draw(cr, s, &v);   /* warm: snapshots, fonts */
    double best = -1;
    for (int p = 0; p < FRAME_PASSES; p++) {
        uint64_t t0 = dp_now_ns();
        for (int i = 0; i < frames; i++) {
            v.t = a + span * i / frames;
            viz_draw(cr, s, &v);
        }
        double ms = ms_since(t0) / frames;
        if (best < 0 || ms < best) best = ms;
    }
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    viz_source_free(s);
    return best;
}

static double frame_ms(const char *path, int frames)
{
    return frame_ms_mode(path, frames, 0);
}

/* One table row: the value in ms (or s when `secs`), its ratio to the baseline frame. */
static void row(const char *what, double ms, double base_ms, int secs, const char *goal)
{
    char value[64], ratio[64];
    if (secs) snprintf(value, sizeof value, "%.1f s", ms / 1e3);
    else snprintf(value, sizeof value, ms < 10 ? "%.2f ms" : ms < 100 ? "%.1f ms" : "%.0f ms", ms);
    if (base_ms > 0) snprintf(ratio, sizeof ratio, "%.*f x baseline frame", ms / base_ms < 10 ? 2 : 0, ms / base_ms);
    else snprintf(ratio, sizeof ratio, "-");
    printf("| %s | %s | %s | %s |\n", what, value, ratio, goal);
    fflush(stdout);
}

/* ---- PNG encoding: viz/png.h against cairo's own writer, on the same frame ---- */
static size_t sink_bytes;
static int count_sink(void *closure, const unsigned char *data, size_t len)
{
    DP_UNUSED(closure);
    DP_UNUSED(data);
    sink_bytes += len;
    return 0;
}

static cairo_status_t cairo_count_sink(void *closure, const unsigned char *data, unsigned int len)
{
    return count_sink(closure, data, len) ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

/* Best of FRAME_PASSES passes of `n` encodings of img, ms each; *bytes: one's size. */
static double encode_ms(cairo_surface_t *img, int ours, int n, size_t *bytes)
{
    char err[DP_ERRLEN];
    double best = -1;
    for (int p = 0; p < FRAME_PASSES; p++) {
        uint64_t t0 = dp_now_ns();
        for (int i = 0; i < n; i++) {
            sink_bytes = 0;
            if (ours ? viz_png_write(img, count_sink, NULL, err) != 0
                     : cairo_surface_write_to_png_stream(img, cairo_count_sink, NULL) != CAIRO_STATUS_SUCCESS)
                return -1;
        }
        double ms = ms_since(t0) / n;
        if (best < 0 || ms < best) best = ms;
    }
    *bytes = sink_bytes;
    return best;
}

/* The frame the browser pages get (web/player.c) and `render --out` writes: the
 * baseline run's middle, at 1280x720 and in projector mode. */
static void png_rows(const char *path, int n, double base)
{
    char err[DP_ERRLEN], what[200], goal[160];
    viz_source *s = viz_source_open(path, err);
    if (!s) {
        fprintf(stderr, "bench_viz: %s\n", err);
        return;
    }
    for (int projector = 0; projector < 2; projector++) {
        viz_view v;
        viz_view_init(&v);
        if (projector) v.projector = 1, v.width = 1920, v.height = 1080;
        v.t = viz_source_t1(s) / 2;
        cairo_surface_t *img = viz_render_image(s, &v);
        size_t cb = 0, ob = 0;
        double cms = encode_ms(img, 0, n, &cb), oms = encode_ms(img, 1, n, &ob);
        snprintf(what, sizeof what, "PNG of the baseline run's middle frame, %dx%d, cairo's writer (zlib 6, adaptive filters)",
                 v.width, v.height);
        snprintf(goal, sizeof goal, "reference: %zu bytes", cb);
        row(what, cms, base, 0, goal);
        snprintf(what, sizeof what, "the same frame, viz/png.h (libpng, zlib 2, no filter), what every writer uses");
        snprintf(goal, sizeof goal, "%.2f of cairo's time, %zu bytes (%.2f of cairo's)", cms > 0 ? oms / cms : 0, ob,
                 cb ? (double)ob / (double)cb : 0);
        row(what, oms, base, 0, goal);
        cairo_surface_destroy(img);
    }
    viz_source_free(s);
}

/* The 10M-event trace: open, first jump to the middle, 20 later jumps, first frame. */
static int big_trace_rows(const char *huge, int64_t n, double gen_s, double base)
{
    char err[DP_ERRLEN], what[160];
    snprintf(what, sizeof what, "generate a %lld-event synthetic trace (4 ps + 1,000 workers)", (long long)n);
    row(what, gen_s * 1e3, base, 1, "");
    uint64_t t0 = dp_now_ns();
    viz_source *s = viz_source_open(huge, err);
    double open_ms = ms_since(t0);
    if (!s) {
        fprintf(stderr, "bench_viz: %s\n", err);
        return -1;
    }
    int64_t t1 = viz_source_t1(s), mid = t1 / 2;
    t0 = dp_now_ns();
    const evt_state *st = viz_source_state_at(s, mid);
    double first = ms_since(t0);
    /* read now: the next state_at reuses what st points to */
    long long mid_step = st ? (long long)st->global_step : -1;
    t0 = dp_now_ns();
    for (int i = 1; i <= 20; i++) viz_source_state_at(s, t1 * i / 21);
    double later = ms_since(t0) / 20;
    viz_view v;
    viz_view_init(&v);
    v.t = mid;
    t0 = dp_now_ns();
    cairo_surface_t *img = viz_render_image(s, &v);
    double draw = ms_since(t0);
    cairo_surface_destroy(img);
    snprintf(what, sizeof what, "open that trace and index it (one pass)");
    row(what, open_ms, base, 0, "");
    snprintf(what, sizeof what, "first jump to its middle, global step %lld (builds the state snapshots)", mid_step);
    row(what, first, base, 0, "");
    row("later jumps: 20, evenly spaced over the trace (mean)", later, base, 0, "");
    row("first frame at the middle (1,000 workers), cold", draw, base, 0, "");
    viz_source_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char small[] = "/tmp/bench_viz_small.XXXXXX", big[] = "/tmp/bench_viz_10k.XXXXXX",
         sim[] = "/tmp/bench_viz_sim.XXXXXX", huge[] = "/tmp/bench_viz_10m.XXXXXX";
    char *paths[] = {small, big, sim, huge};
    for (size_t i = 0; i < DP_ARRAY_LEN(paths); i++) {
        int fd = mkstemp(paths[i]);
        if (fd >= 0) close(fd);
    }
    double gs, base = -1;
    int64_t n;
    int rc = 0;
    char what[160];
    if (!gen(small, 2, 8, 300, 0, &gs, &n) && (base = frame_ms(small, 200)) > 0) {
        snprintf(what, sizeof what, "frame 1280x720, 2 ps + 8 workers, synthetic (%lld events): **baseline**",
                 (long long)n);
        row(what, base, base, 0, "goal <= 8 ms (absolute)");
        row("the same run in projector mode (`--projector`: 1920x1080, 3 panels, text >= 18 px)",
            frame_ms_mode(small, 200, 1), base, 0, "goal <= 16 ms (absolute); ~2.25x the pixels");
        png_rows(small, quick ? 5 : 20, base);
    } else rc = 1;
    if (!gen(big, 4, 10000, quick ? 2 : 6, 0, &gs, &n)) {
        snprintf(what, sizeof what, "frame 1280x720, 4 ps + 10,000 workers, synthetic (%lld events)", (long long)n);
        row(what, frame_ms(big, quick ? 10 : 40), base, 0, "goal <= 16 ms (absolute)");
    } else rc = 1;
    if (!gen_sim(sim, quick ? 1000 : 10000, quick ? 3 : 6, &n)) {
        snprintf(what, sizeof what,
                 "frame 1280x720, 100 ps + %s workers, `downpour sim` 100 MB, sampled trace (%lld events)",
                 quick ? "1,000" : "10,000", (long long)n);
        row(what, frame_ms(sim, quick ? 10 : 40), base, 0, "goal <= 16 ms (absolute)");
    } else rc = 1;
    if (!gen(huge, 4, 1000, 1000000, quick ? 1000000 : 10000000, &gs, &n)) {
        if (big_trace_rows(huge, n, gs, base)) rc = 1;
    } else rc = 1;
    for (size_t i = 0; i < DP_ARRAY_LEN(paths); i++) unlink(paths[i]);
    return rc;
}
