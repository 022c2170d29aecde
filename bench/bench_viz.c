/* bench_viz.c — the viewer's speed, as markdown table rows on stdout: ms per frame at
 * 1280x720 while playing a 2 ps + 8 worker run and a 10,000-worker run (goals 8 and 16
 * ms), and the time to open a 10M-event trace and jump to its middle (open, index pass,
 * first scrub with snapshot build, later scrubs). Traces are generated into /tmp
 * (viz/synth.h) and removed afterwards. `--quick` uses smaller traces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "viz/synth.h"
#include "viz/viz.h"

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

/* Average ms per frame while playing through the middle half of the trace. */
static double frame_ms(const char *path, int frames)
{
    char err[DP_ERRLEN];
    viz_source *s = viz_source_open(path, err);
    if (!s) {
        fprintf(stderr, "bench_viz: %s\n", err);
        return -1;
    }
    viz_view v;
    viz_view_init(&v);
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1280, 720);
    cairo_t *cr = cairo_create(img);
    int64_t t1 = viz_source_t1(s), a = t1 / 4, span = t1 / 2;
    v.t = a;
    viz_draw(cr, s, &v);   /* warm: snapshots, fonts */
    uint64_t t0 = dp_now_ns();
    for (int i = 0; i < frames; i++) {
        v.t = a + span * i / frames;
        viz_draw(cr, s, &v);
    }
    double ms = ms_since(t0) / frames;
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    viz_source_free(s);
    return ms;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char small[] = "/tmp/bench_viz_small.XXXXXX", big[] = "/tmp/bench_viz_10k.XXXXXX",
         huge[] = "/tmp/bench_viz_10m.XXXXXX";
    int fd;
    if ((fd = mkstemp(small)) >= 0) close(fd);
    if ((fd = mkstemp(big)) >= 0) close(fd);
    if ((fd = mkstemp(huge)) >= 0) close(fd);
    double gs;
    int64_t n;
    int rc = 0;
    if (!gen(small, 2, 8, 300, 0, &gs, &n)) {
        double ms = frame_ms(small, 200);
        printf("| viz | frame 1280x720, 2 ps + 8 workers (%lld events) | %.2f ms | goal <= 8 ms |\n",
               (long long)n, ms);
    } else rc = 1;
    if (!gen(big, 4, 10000, quick ? 2 : 6, 0, &gs, &n)) {
        double ms = frame_ms(big, quick ? 10 : 40);
        printf("| viz | frame 1280x720, 4 ps + 10,000 workers (%lld events) | %.2f ms | goal <= 16 ms |\n",
               (long long)n, ms);
    } else rc = 1;
    int64_t target = quick ? 1000000 : 10000000;
    if (!gen(huge, 4, 1000, 1000000, target, &gs, &n)) {
        char err[DP_ERRLEN];
        printf("| viz | generate %lld-event trace (synthetic) | %.1f s | |\n", (long long)n, gs);
        uint64_t t0 = dp_now_ns();
        viz_source *s = viz_source_open(huge, err);
        double open_ms = ms_since(t0);
        if (s) {
            int64_t mid = viz_source_t1(s) / 2;
            t0 = dp_now_ns();
            const evt_state *st = viz_source_state_at(s, mid);
            double first = ms_since(t0);
            t0 = dp_now_ns();
            for (int i = 1; i <= 20; i++) st = viz_source_state_at(s, viz_source_t1(s) * i / 21);
            double later = ms_since(t0) / 20;
            viz_view v;
            viz_view_init(&v);
            v.t = mid;
            t0 = dp_now_ns();
            cairo_surface_t *img = viz_render_image(s, &v);
            double draw = ms_since(t0);
            cairo_surface_destroy(img);
            printf("| viz | open %lld-event trace and index it (one pass) | %.0f ms | |\n", (long long)n, open_ms);
            printf("| viz | first jump to the middle (builds state snapshots) | %.0f ms | step %lld |\n",
                   first, (long long)st->global_step);
            printf("| viz | later jumps (random scrub) | %.2f ms | |\n", later);
            printf("| viz | first frame at the middle, 1000 workers | %.1f ms | |\n", draw);
            viz_source_free(s);
        } else {
            fprintf(stderr, "bench_viz: %s\n", err);
            rc = 1;
        }
    } else rc = 1;
    unlink(small);
    unlink(big);
    unlink(huge);
    return rc;
}
