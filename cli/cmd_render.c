/* cmd_render.c — `downpour render`: draws frames of a recorded trace without a display,
 * with the viewer's own drawing code. One frame to PNG / PDF / SVG, or a numbered PNG
 * sequence (--frames DIR) for slides and video, with progress on a terminal. The same
 * trace, time and size always give the same image. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "viz/synth.h"
#include "viz/viz.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: downpour render TRACE --out FILE.png|.pdf|.svg [--at SECONDS] [--size WxH]\n"
            "       downpour render TRACE --frames DIR [--fps N] [--from S] [--to S] [--size WxH]\n\n"
            "Draws what `downpour view` shows, headlessly. Same trace + same time => same image.\n\n"
            "  --out FILE       one frame; the format follows the extension\n"
            "  --at SECONDS     time of that frame, from the start of the trace (default: the end)\n"
            "  --at-step N      the moment the global step first reached N\n"
            "  --size WxH       frame size in pixels (default 1280x720)\n"
            "  --frames DIR     write DIR/frame-00001.png ... at --fps frames per trace second\n"
            "  --fps N          frames per second of trace time (default 30)\n"
            "  --from S --to S  time range for --frames (default: the whole trace)\n"
            "  --sheet FILE     a one-page PNG summary: header, three moments, placement\n"
            "                   (--title TEXT for its heading)\n"
            "  --placement      draw the placement view instead of the cluster\n"
            "  --compare TRACE2 draw TRACE2 beside TRACE on one clock (--by-step: by global step)\n"
            "  --write-synthetic FILE [--ps N] [--workers N] [--vars N] [--steps N] [--backup N]\n"
            "                   write a synthetic sync run to FILE (for tests, demos, benches)\n");
}

static int parse_seconds(const char *flag, const char *s, double *out)
{
    if (dp_parse_double(s, out) || !isfinite(*out) || *out < 0 || *out > 1e9) {
        fprintf(stderr, "downpour: render: %s '%s' is not a number of seconds\n", flag, s);
        return -1;
    }
    return 0;
}

static int parse_size(const char *s, int *w, int *h)
{
    char tail;
    if (sscanf(s, "%dx%d%c", w, h, &tail) != 2 || *w < 64 || *h < 64 || *w > 16384 || *h > 16384) {
        fprintf(stderr, "downpour: render: --size '%s' is not WxH (64..16384 each)\n", s);
        return -1;
    }
    return 0;
}

static int render_frames(viz_source *src, viz_view *v, const char *dir, double fps, double from,
                         double to)
{
    char err[DP_ERRLEN], path[4096];
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "downpour: render: --frames %s: %s\n", dir, strerror(errno));
        return 1;
    }
    long n = (long)floor((to - from) * fps) + 1;
    if (n < 1) n = 1;
    if (n > 1000000) {
        fprintf(stderr, "downpour: render: %ld frames is too many; lower --fps or narrow --from/--to\n", n);
        return 1;
    }
    int tty = isatty(2);
    uint64_t start = dp_now_ns();
    for (long i = 0; i < n; i++) {
        v->t = (int64_t)((from + (double)i / fps) * 1e9);
        snprintf(path, sizeof path, "%s/frame-%05ld.png", dir, i + 1);
        if (viz_render_file(src, v, path, err)) {
            fprintf(stderr, "%sdownpour: render: %s\n", tty ? "\n" : "", err);
            return 1;
        }
        if (tty && (i % 4 == 0 || i + 1 == n)) {
            double el = (double)(dp_now_ns() - start) / 1e9;
            fprintf(stderr, "\rrendering frames: %ld/%ld (%.0f%%), %.1f frames/s   ", i + 1, n,
                    100.0 * (double)(i + 1) / (double)n, (double)(i + 1) / fmax(el, 1e-9));
        }
    }
    if (tty) fputc('\n', stderr);
    printf("wrote %ld frames to %s/frame-%%05d.png\n", n, dir);
    return 0;
}

static int parse_count(const char *flag, const char *s, int lo, int hi, int *out)
{
    long long x;
    if (dp_parse_int(s, &x) || x < lo || x > hi) {
        fprintf(stderr, "downpour: render: %s '%s' must be an integer in %d..%d\n", flag, s, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int write_synthetic(const char *path, const viz_synth_opts *o)
{
    char err[DP_ERRLEN];
    int64_t n = viz_synth_write(path, o, err);
    if (n < 0) {
        fprintf(stderr, "downpour: render: %s\n", err);
        return 1;
    }
    printf("wrote %lld events to %s\n", (long long)n, path);
    return 0;
}

int cmd_render(int argc, char **argv)
{
    const char *trace = NULL, *out = NULL, *frames = NULL, *compare = NULL, *synth = NULL, *v;
    const char *sheet = NULL, *title = NULL;
    viz_synth_opts so = {2, 8, 4, 100, 1, 1, 0, NULL};
    double at = -1, fps = 30, from = 0, to = -1;
    long long at_step = -1;
    int width = 1280, height = 720, placement = 0, by_step = 0;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--placement")) {
            placement = 1;
        } else if (!strcmp(argv[i], "--by-step")) {
            by_step = 1;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--write-synthetic", &bad))) {
            synth = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--ps", &bad))) {
            if (parse_count("--ps", v, 1, 1024, &so.n_ps)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--workers", &bad))) {
            if (parse_count("--workers", v, 1, 60000, &so.n_workers)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--vars", &bad))) {
            if (parse_count("--vars", v, 1, 1000, &so.n_vars)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--steps", &bad))) {
            if (parse_count("--steps", v, 0, 10000000, &so.steps)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--backup", &bad))) {
            if (parse_count("--backup", v, 0, 60000, &so.backup)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--out", &bad))) {
            out = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--sheet", &bad))) {
            sheet = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--title", &bad))) {
            title = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--frames", &bad))) {
            frames = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--compare", &bad))) {
            compare = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--at", &bad))) {
            if (parse_seconds("--at", v, &at)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--at-step", &bad))) {
            if (dp_parse_int(v, &at_step) || at_step < 0) {
                fprintf(stderr, "downpour: render: --at-step '%s' must be a global step >= 0\n", v);
                return 2;
            }
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--from", &bad))) {
            if (parse_seconds("--from", v, &from)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--to", &bad))) {
            if (parse_seconds("--to", v, &to)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--fps", &bad))) {
            if (dp_parse_double(v, &fps) || !(fps > 0 && fps <= 100000)) {
                fprintf(stderr, "downpour: render: --fps '%s' must be a number in (0, 100000]\n", v);
                return 2;
            }
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--size", &bad))) {
            if (parse_size(v, &width, &height)) return 2;
        } else if (bad) {
            return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "downpour: render: unknown flag %s (see --help)\n", argv[i]);
            return 2;
        } else if (!trace) {
            trace = argv[i];
        } else {
            fprintf(stderr, "downpour: render: one trace only (got %s and %s)\n", trace, argv[i]);
            return 2;
        }
    }
    if (synth) return write_synthetic(synth, &so);
    if (!trace || (!!out + !!frames + !!sheet) != 1) {
        fprintf(stderr, "downpour: render: need TRACE and exactly one of --out FILE, --frames DIR or --sheet FILE\n");
        usage(stderr);
        return 2;
    }
    char err[DP_ERRLEN];
    viz_source *src = viz_source_open(trace, err), *cmp = NULL;
    if (!src) {
        fprintf(stderr, "downpour: render: %s\n", err);
        return 1;
    }
    if (viz_source_damage(src)) fprintf(stderr, "downpour: render: %s: %s\n", trace, viz_source_damage(src));
    if (compare && !(cmp = viz_source_open(compare, err))) {
        fprintf(stderr, "downpour: render: %s\n", err);
        viz_source_free(src);
        return 1;
    }
    viz_view view;
    viz_view_init(&view);
    view.width = width;
    view.height = height;
    view.placement = placement;
    view.paused = 1;
    view.compare = cmp;
    view.compare_by_step = by_step;
    double end_s = (double)viz_source_t1(src) / 1e9;
    int rc = 0;
    if (sheet) {
        if (viz_render_sheet(src, sheet, title, err)) {
            fprintf(stderr, "downpour: render: %s\n", err);
            rc = 1;
        }
    } else if (frames) {
        rc = render_frames(src, &view, frames, fps, from, to >= 0 ? fmin(to, end_s) : end_s);
    } else {
        view.t = at >= 0 ? (int64_t)(at * 1e9) : viz_source_t1(src);
        if (view.t > viz_source_t1(src)) {
            fprintf(stderr, "downpour: render: --at %g s is past the end of %s (%.3f s): drawing the end\n",
                    at, trace, end_s);
            view.t = viz_source_t1(src);
        }
        if (at_step >= 0) view.t = viz_source_time_of_step(src, at_step);
        if (viz_render_file(src, &view, out, err)) {
            fprintf(stderr, "downpour: render: %s\n", err);
            rc = 1;
        }
    }
    viz_source_free(cmp);
    viz_source_free(src);
    return rc;
}
