/* cmd_view.c — `downpour view`: the viewer window. Replays a trace, or watches a live
 * run through the hub (--connect), or plays two traces side by side (--compare). Flag
 * parsing only; the window is viz/app.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "lab/lab.h"
#include "net/auth.h"
#include "viz/viz.h"
#include "web/web.h"

/* ---- fork from here: key f hands the viewer's choice to the lab's fork (lab/fork.c) ---- */
#define VIEW_MAX_FORKS 64
typedef struct view_forks {
    char paths[VIEW_MAX_FORKS][512]; int n;
    const char *dir;   /* --fork-dir: forks written there and kept; NULL: $TMPDIR, removed */
} view_forks;

/* viz_app_options.fork: writes the continuation to a trace in --fork-dir (kept), or a
 * temporary one removed when the viewer closes (view_forks_remove). */
static int view_fork(void *ctx, const char *trace, int64_t step, const char *set, char *out, size_t n,
                     char *err)
{
    view_forks *f = ctx;
    if (f->n >= VIEW_MAX_FORKS) return dp_fail(err, DP_EINVAL, "at most %d forks in one viewer", VIEW_MAX_FORKS);
    const char *dir = f->dir ? f->dir : getenv("TMPDIR");
    snprintf(f->paths[f->n], sizeof f->paths[f->n], "%s/downpour-fork-%ld-%d-step%lld.dptrace",
             dir && *dir ? dir : "/tmp", (long)getpid(), f->n, (long long)step);
    lab_options lo;
    lab_options_init(&lo);
    lo.sets[lo.n_sets++] = set;
    int rc = lab_fork(trace, step, &lo, f->paths[f->n], err);
    snprintf(out, n, "%s", f->paths[f->n]);
    f->n++;
    return rc;
}

static void view_forks_remove(const view_forks *f)
{
    for (int i = 0; i < f->n && !f->dir; i++) remove(f->paths[i]);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: downpour view TRACE [--compare TRACE2] [--at SECONDS] [--speed X] [--paused]\n"
            "       downpour view --connect ADDR [--compare TRACE2]\n"
            "       downpour view TRACE --serve ADDR [--follow]   (the window and the page)\n\n"
            "Opens a window that animates a run: ps and worker tasks, variables, pulls and pushes\n"
            "in flight, barriers, loss / accuracy / throughput / staleness / traffic panels and a\n"
            "timeline with a scrubber.\n\n"
            "  TRACE             replay a recorded trace\n"
            "  --connect ADDR    watch a live run through its hub (host:port); pausing never\n"
            "                    pauses training, `c` catches up with the live run\n"
            "  --secret-file FILE  the hub's secret or viewer token (else $DOWNPOUR_SECRET)\n"
            "  --compare TRACE2  play TRACE2 beside TRACE (or beside the live run) on one clock\n"
            "                    (`t` switches between time and global step), loss curves\n"
            "                    overlaid\n"
            "  --at SECONDS      start at this time;  --speed X  initial speed (0.01..100)\n"
            "  --paused          start paused;  --size WxH  initial window size\n"
            "  --projector       projector mode: 1920x1080 (unless --size), no text below\n"
            "                    18 px, fewer and larger panels\n"
            "  --screenshot-dir DIR  where `s` saves PNGs (default .; made when missing)\n"
            "  --fork-dir DIR    key f writes its forks here and keeps them (default: removed\n"
            "                    from $TMPDIR when the window closes)\n"
            "  --serve ADDR      also serve the run as a web page (as `downpour serve`: loopback\n"
            "                    unless asked, 0.0.0.0:PORT with a warning); \"serving URL\" on\n"
            "                    stdout; the window's corner shows how students answered\n"
            "  --follow          with --serve: every page follows this window\n"
            "  --serve-size WxH  with --serve: the pages' frame size (default 1280x720,\n"
            "                    64..8192 each), whatever the window's\n\n"
            "Needs a display (DISPLAY or WAYLAND_DISPLAY); without one it stops at once with\n"
            "\"no display\": `downpour render` draws the same frames to files.\n\n"
            "keys: space play/pause, left/right previous/next event, , . previous/next step,\n"
            "      [ ] slower/faster, drag the timeline to scrub, click a task or packet to\n"
            "      inspect, p placement, s save PNG, h help, e captions, E caption history,\n"
            "      f fork from here (a replay: choose a key, Enter; the simulator continues\n"
            "      beside it), F11 fullscreen, t compare by time / step, c catch up, q quit\n");
}

int cmd_view(int argc, char **argv)
{
    viz_app_options o;
    viz_app_options_init(&o);
    web_options wo;   /* --serve: the page beside the window */
    web_options_init(&wo);
    const char *serve = NULL;
    const char *v;
    int sized = 0, serve_sized = 0;
    const char *fork_dir = NULL;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--projector")) {
            o.projector = 1;
        } else if (!strcmp(argv[i], "--paused")) {
            o.start_paused = 1;
        } else if (!strcmp(argv[i], "--follow")) {
            wo.follow = 1;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--serve", &bad))) {
            if (cli_addr("view", "--serve", v, 1)) return 2;
            serve = wo.listen = v;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--serve-size", &bad))) {
            if (cli_size("view", "--serve-size", v, 64, 64, WEB_MAX_SIZE, &wo.width, &wo.height)) return 2;
            serve_sized = 1;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--connect", &bad))) {
            if (cli_addr("view", "--connect", v, 0)) return 2;
            o.connect = v;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--secret-file", &bad))) {
            char err[DP_ERRLEN];
            if (auth_secret_file_to_env(v, err)) {
                fprintf(stderr, "downpour: view: %s\n", err);
                return 2;
            }
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--compare", &bad))) {
            o.compare = v;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--script", &bad))) {
            o.script = v;   /* test hook: scripted key presses */
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--fork-dir", &bad))) {
            fork_dir = v;   /* key f: keep the forks here */
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--screenshot-dir", &bad))) {
            o.screenshot_dir = v;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--at", &bad))) {
            if (cli_num("view", "--at", v, 0, 1e9, &o.at_s)) return 2;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--speed", &bad))) {
            if (cli_num("view", "--speed", v, 0.01, 100, &o.speed)) return 2;
        } else if ((v = cli_flag_value("view", argc, argv, &i, "--size", &bad))) {
            if (cli_size("view", "--size", v, 200, 150, 16384, &o.width, &o.height)) return 2;
            sized = 1;
        } else if (bad) {
            return 2;
        } else if (argv[i][0] == '-') {
            return cli_unknown_usage("view", argv[i], usage);
        } else if (!o.trace) {
            o.trace = argv[i];
        } else {
            fprintf(stderr, "downpour: view: one trace only (got %s and %s)\n", o.trace, argv[i]);
            return 2;
        }
    }
    if (o.projector && !sized) {
        o.width = 1920;
        o.height = 1080;
    }
    if (!o.trace == !o.connect) {
        fprintf(stderr, "downpour: view: give either TRACE or --connect ADDR\n");
        return 2;
    }
    if ((wo.follow || serve_sized) && !serve) {
        fprintf(stderr, "downpour: view: %s needs --serve ADDR\n", wo.follow ? "--follow" : "--serve-size");
        return 2;
    }
    char err[DP_ERRLEN];
    if ((o.connect || serve) && auth_env_check(err)) {   /* a replay on screen needs no secret */
        fprintf(stderr, "downpour: view: %s\n", err);
        return 2;
    }
    view_forks *forks = xcalloc(1, sizeof *forks);   /* 32 KiB of paths: off the stack */
    forks->dir = fork_dir;
    o.fork = view_fork;
    o.fork_ctx = forks;
    int rc = serve ? web_view(&o, &wo, stdout) : viz_app_run(&o);
    view_forks_remove(forks);
    free(forks);
    return rc;
}
