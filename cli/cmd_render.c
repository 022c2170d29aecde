/* cmd_render.c — `downpour render`: draws frames of a recorded trace without a display,
 * with the viewer's own drawing code. One frame to PNG / PDF / SVG, or a numbered PNG
 * sequence (--frames DIR) for slides and video, with progress on a terminal. The same
 * trace, time and size always give the same image. Flag parsing only; the work is
 * viz/headless.c. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "viz/headless.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: downpour render TRACE --out FILE.png|.pdf|.svg [--at SECONDS] [--size WxH]\n"
            "       downpour render TRACE --frames DIR [--fps N] [--from S] [--to S] [--size WxH]\n\n"
            "Draws what `downpour view` shows, headlessly. Same trace + same time => same image.\n\n"
            "  --out FILE       one frame; the format follows the extension\n"
            "  --at SECONDS     time of that frame, from the start of the trace (default: the end)\n"
            "  --at-step N      the moment the global step first reached N\n"
            "  --size WxH       frame size in pixels (default 1280x720; 1920x1080 with --projector)\n"
            "  --projector      projector mode: no text below 18 px, fewer and larger panels\n"
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

int cmd_render(int argc, char **argv)
{
    viz_headless_opts o;
    viz_headless_opts_init(&o);
    const char *v;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--projector")) {
            o.projector = 1;
        } else if (!strcmp(argv[i], "--placement")) {
            o.placement = 1;
        } else if (!strcmp(argv[i], "--by-step")) {
            o.compare_by_step = 1;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--write-synthetic", &bad))) {
            o.write_synthetic = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--ps", &bad))) {
            if (cli_int("render", "--ps", v, 1, 1024, &o.synth_ps)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--workers", &bad))) {
            if (cli_int("render", "--workers", v, 1, 60000, &o.synth_workers)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--vars", &bad))) {
            if (cli_int("render", "--vars", v, 1, 1000, &o.synth_vars)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--steps", &bad))) {
            if (cli_int("render", "--steps", v, 0, 10000000, &o.synth_steps)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--backup", &bad))) {
            if (cli_int("render", "--backup", v, 0, 60000, &o.synth_backup)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--out", &bad))) {
            o.out = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--sheet", &bad))) {
            o.sheet = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--title", &bad))) {
            o.title = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--frames", &bad))) {
            o.frames = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--compare", &bad))) {
            o.compare = v;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--at", &bad))) {
            if (cli_num("render", "--at", v, 0, 1e9, &o.at_s)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--at-step", &bad))) {
            if (cli_long("render", "--at-step", v, 0, LLONG_MAX, &o.at_step)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--from", &bad))) {
            if (cli_num("render", "--from", v, 0, 1e9, &o.from_s)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--to", &bad))) {
            if (cli_num("render", "--to", v, 0, 1e9, &o.to_s)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--fps", &bad))) {
            if (cli_num("render", "--fps", v, 0.001, 100000, &o.fps)) return 2;
        } else if ((v = cli_flag_value("render", argc, argv, &i, "--size", &bad))) {
            if (cli_size("render", "--size", v, 64, 64, 16384, &o.width, &o.height)) return 2;
        } else if (bad) {
            return 2;
        } else if (argv[i][0] == '-') {
            return cli_unknown_usage("render", argv[i], usage);
        } else if (!o.trace) {
            o.trace = argv[i];
        } else {
            fprintf(stderr, "downpour: render: one trace only (got %s and %s)\n", o.trace, argv[i]);
            return 2;
        }
    }
    if (!o.write_synthetic && (!o.trace || (!!o.out + !!o.frames + !!o.sheet) != 1)) {
        fprintf(stderr, "downpour: render: need TRACE and exactly one of --out FILE, --frames DIR or --sheet FILE (see --help)\n");
        return 2;
    }
    char err[DP_ERRLEN];
    if (viz_headless_run(&o, stdout, stderr, err)) {
        fprintf(stderr, "downpour: render: %s\n", err);
        return 1;
    }
    return 0;
}
