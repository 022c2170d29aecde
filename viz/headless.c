/* headless.c — `downpour render` as a library call (see headless.h): open the trace (and
 * the one to compare), set up a paused view, then one frame, a frame sequence with
 * progress, or the summary sheet; or write a synthetic trace. Sources are opened and
 * freed here on every path. */
#include "viz/headless.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dp.h"
#include "viz/synth.h"
#include "viz/viz.h"

void viz_headless_opts_init(viz_headless_opts *o)
{
    memset(o, 0, sizeof *o);
    o->synth_ps = 2;
    o->synth_workers = 8;
    o->synth_vars = 4;
    o->synth_steps = 100;
    o->synth_backup = 1;
    o->at_s = -1;
    o->at_step = -1;
    o->fps = 30;
    o->from_s = 0;
    o->to_s = -1;
    const char *d = getenv("DOWNPOUR_RENDER_LAYOUT");
    o->describe = d && !strcmp(d, "1");
}

static int write_synthetic(const viz_headless_opts *o, FILE *out, char *err)
{
    viz_synth_opts so = {o->synth_ps, o->synth_workers, o->synth_vars, o->synth_steps,
                         o->synth_backup, 1, 0, NULL};
    int64_t n = viz_synth_write(o->write_synthetic, &so, err);
    if (n < 0) return DP_EIO;
    fprintf(out, "wrote %lld events to %s\n", (long long)n, o->write_synthetic);
    return 0;
}

/* Frames at fps over [from, to] seconds into dir/frame-%05d.png; progress on diag
 * while it is a terminal. */
static int render_frames(viz_source *src, viz_view *v, const char *dir, double fps, double from,
                         double to, FILE *out, FILE *diag, char *err)
{
    char path[4096];
    if (mkdir(dir, 0777) && errno != EEXIST)
        return dp_fail(err, DP_EIO, "--frames %s: %s", dir, strerror(errno));
    long n = (long)floor((to - from) * fps) + 1;
    if (n < 1) n = 1;
    if (n > 1000000)
        return dp_fail(err, DP_EINVAL,
                       "%ld frames is too many; lower --fps or narrow --from/--to", n);
    int tty = isatty(fileno(diag));
    uint64_t start = dp_now_ns();
    for (long i = 0; i < n; i++) {
        v->t = (int64_t)((from + (double)i / fps) * 1e9);
        snprintf(path, sizeof path, "%s/frame-%05ld.png", dir, i + 1);
        if (viz_render_file(src, v, path, err)) {
            if (tty) fputc('\n', diag);   /* end the progress line before the caller's message */
            return DP_EIO;
        }
        if (tty && (i % 4 == 0 || i + 1 == n)) {
            double el = (double)(dp_now_ns() - start) / 1e9;
            fprintf(diag, "\rrendering frames: %ld/%ld (%.0f%%), %.1f frames/s   ", i + 1, n,
                    100.0 * (double)(i + 1) / (double)n, (double)(i + 1) / fmax(el, 1e-9));
        }
    }
    if (tty) fputc('\n', diag);
    fprintf(out, "wrote %ld frames to %s/frame-%%05d.png\n", n, dir);
    return 0;
}

/* One frame at --at (or --at-step, or the end) into o->out. */
static int render_one(viz_source *src, viz_view *view, const viz_headless_opts *o, FILE *out,
                      FILE *diag, char *err)
{
    double end_s = (double)viz_source_t1(src) / 1e9;
    view->t = o->at_s >= 0 ? (int64_t)(o->at_s * 1e9) : viz_source_t1(src);
    if (view->t > viz_source_t1(src)) {
        fprintf(diag, "downpour: render: --at %g s is past the end of %s (%.3f s): drawing the end\n",
                o->at_s, o->trace, end_s);
        view->t = viz_source_t1(src);
    }
    if (o->at_step >= 0) view->t = viz_source_time_of_step(src, o->at_step);
    if (o->describe) {   /* the test hook: where each device's box went */
        char buf[2048];
        viz_machine_describe(src, view, buf, sizeof buf);
        fputs(buf, out);
    }
    return viz_render_file(src, view, o->out, err) ? DP_EIO : 0;
}

int viz_headless_run(const viz_headless_opts *o, FILE *out, FILE *diag, char *err)
{
    if (o->write_synthetic) return write_synthetic(o, out, err);
    dp_assert("viz_headless_run: one of out, frames, sheet",
              o->trace && (!!o->out + !!o->frames + !!o->sheet) == 1);
    viz_view view;
    viz_view_init(&view);
    view.width = o->width > 0 ? o->width : o->projector ? 1920 : 1280;
    view.height = o->height > 0 ? o->height : o->projector ? 1080 : 720;
    view.placement = o->placement;
    view.projector = o->projector;
    view.paused = 1;
    view.compare_by_step = o->compare_by_step;
    viz_source *src = viz_source_open(o->trace, err), *cmp = NULL;
    int rc = 0;
    if (!src) return DP_EINVAL;
    if (viz_source_damage(src))
        fprintf(diag, "downpour: render: %s: %s\n", o->trace, viz_source_damage(src));
    if (o->compare && !(cmp = viz_source_open(o->compare, err))) {
        rc = DP_EINVAL;
        goto done;
    }
    view.compare = cmp;
    if (o->sheet) {
        if (viz_render_sheet(src, o->sheet, o->title, err)) rc = DP_EIO;
    } else if (o->frames) {
        double end_s = (double)viz_source_t1(src) / 1e9;
        rc = render_frames(src, &view, o->frames, o->fps, o->from_s,
                           o->to_s >= 0 ? fmin(o->to_s, end_s) : end_s, out, diag, err);
    } else {
        rc = render_one(src, &view, o, out, diag, err);
    }
done:
    viz_source_free(cmp);
    viz_source_free(src);
    return rc;
}
