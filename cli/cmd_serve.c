/* cmd_serve.c — `downpour serve`: the class in a browser. Serves a recorded trace as a web
 * page whose frames are drawn by the viewer's own code on this machine; each browser has
 * its own position, or with --follow every page shows the server's. Runs until SIGINT /
 * SIGTERM; "serving URL" goes to stdout once bound. Flag parsing only; the server is
 * web/. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "net/auth.h"
#include "web/web.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: downpour serve TRACE [--listen ADDR] [--follow] [--at SECONDS] [--paused]\n"
            "                      [--speed X] [--size WxH] [--fps N] [--max-conns N]\n"
            "                      [--idle-timeout S] [--max-behind FRAMES] [--secret-file FILE]\n\n"
            "Serves TRACE as a web page: students open the printed address in a browser and\n"
            "see what `downpour view` shows, drawn here and streamed as PNG frames, with play,\n"
            "pause, step and a scrubber. Each browser has its own position unless --follow.\n\n"
            "  --listen ADDR     host:port (default %s; port 0 picks a free one). Only\n"
            "                    loopback unless asked: 0.0.0.0:PORT serves the whole network\n"
            "                    (with a warning when there is no secret)\n"
            "  --follow          every page shows the server's position; any page's buttons\n"
            "                    move it for everyone\n"
            "  --at SECONDS      start there;  --paused  start paused;  --speed X  (0.01..100)\n"
            "  --size WxH        frame size (default 1280x720)\n"
            "  --fps N           frames per second while playing (default 15)\n"
            "  --max-conns N     connection cap (default 128; more are refused and counted)\n"
            "  --idle-timeout S  close a connection that accepts nothing for S s (default 10)\n"
            "  --max-behind N    drop a page that falls N frames behind while one frame is being\n"
            "                    sent to it (default 4 s of frames: 4 x fps + 1)\n"
            "  --secret-file FILE  (or $DOWNPOUR_SECRET) the page then needs the viewer token\n"
            "                    the printed address carries (?token=...)\n\n"
            "Prints \"serving URL\" on stdout once bound; GET /stats gives the counters\n"
            "(frames drawn, sent, skipped, pages dropped for reading too slowly). A lesson's\n"
            "questions appear on the page at their steps; students answer there, and stderr\n"
            "prints how many answered what (GET /answers: the counts as JSON).\n",
            WEB_DEFAULT_ADDR);
}

int cmd_serve(int argc, char **argv)
{
    web_options o;
    web_options_init(&o);
    const char *v;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--follow")) {
            o.follow = 1;
        } else if (!strcmp(argv[i], "--paused")) {
            o.start_paused = 1;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--secret-file", &bad))) {
            char err[DP_ERRLEN];
            if (auth_secret_file_to_env(v, err)) {
                fprintf(stderr, "downpour: serve: %s\n", err);
                return 2;
            }
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--listen", &bad))) {
            if (cli_addr("serve", "--listen", v, 1)) return 2;
            o.listen = v;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--at", &bad))) {
            if (cli_num("serve", "--at", v, 0, 1e9, &o.at_s)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--speed", &bad))) {
            if (cli_num("serve", "--speed", v, 0.01, 100, &o.speed)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--fps", &bad))) {
            if (cli_num("serve", "--fps", v, 0.1, 120, &o.fps)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--max-conns", &bad))) {
            if (cli_int("serve", "--max-conns", v, 1, 10000, &o.max_conns)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--idle-timeout", &bad))) {
            if (cli_int("serve", "--idle-timeout", v, 1, 3600, &o.idle_timeout_s)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--max-behind", &bad))) {
            if (cli_int("serve", "--max-behind", v, 1, 100000, &o.max_behind)) return 2;
        } else if ((v = cli_flag_value("serve", argc, argv, &i, "--size", &bad))) {
            if (cli_size("serve", "--size", v, 64, 64, WEB_MAX_SIZE, &o.width, &o.height)) return 2;
        } else if (bad) {
            return 2;
        } else if (argv[i][0] == '-') {
            return cli_unknown_usage("serve", argv[i], usage);
        } else if (!o.trace) {
            o.trace = argv[i];
        } else {
            fprintf(stderr, "downpour: serve: one trace only (got %s and %s)\n", o.trace, argv[i]);
            return 2;
        }
    }
    if (!o.trace) {
        fprintf(stderr, "downpour: serve: need a TRACE (for a live run: downpour hub --http ADDR)\n");
        return 2;
    }
    char err[DP_ERRLEN];
    if (auth_env_check(err)) {
        fprintf(stderr, "downpour: serve: %s\n", err);
        return 2;
    }
    if (web_serve(&o, stdout, err)) {
        fprintf(stderr, "downpour: serve: %s\n", err);
        return 1;
    }
    return 0;
}
