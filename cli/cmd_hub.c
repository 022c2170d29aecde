/* cmd_hub.c — `downpour hub`: the instrumentation collector. Listens for task streams
 * and viewer subscriptions on one port, records a trace, runs until SIGINT/SIGTERM (or,
 * with --exit-when-idle, until its tasks have come and gone). The bound address goes to
 * stdout as "hub listening on HOST:PORT" so launchers can pass port 0; progress and
 * statistics go to stderr. Flag parsing only; the hub is hub/hub.c. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "hub/hub.h"
#include "net/auth.h"
#include "web/web.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: downpour hub [--listen ADDR] [--trace FILE] [--exit-when-idle MS]\n"
            "                    [--reorder-ms MS] [--quiet] [--http ADDR] [--secret-file FILE]\n\n"
            "Collects the events of every task (`--hub ADDR` on task/cluster), aligns their\n"
            "clocks, merges them in time order, records them to FILE and serves them live to\n"
            "viewers (`downpour view --connect ADDR`), which may attach at any time.\n\n"
            "  --listen ADDR         host:port to listen on (default %s; port 0 picks a\n"
            "                        free one); only loopback unless an address is given\n"
            "  --trace FILE          record the merged stream to FILE\n"
            "  --exit-when-idle MS   stop once tasks have connected and all have been gone\n"
            "                        for MS milliseconds (for launchers; 0, the default: never)\n"
            "  --reorder-ms MS       how long events are held to merge in order (default 50)\n"
            "  --quiet               no periodic statistics on stderr\n"
            "  --secret-file FILE    every task and viewer must prove it knows this secret\n"
            "                        (else $DOWNPOUR_SECRET; none: no check, and a warning\n"
            "                        when listening beyond loopback); prints a read-only\n"
            "                        \"viewer token\" that viewers may use instead\n"
            "  --http ADDR           also serve the live run as a web page at ADDR (host:port;\n"
            "                        loopback unless asked, as `downpour serve`), subscribed to\n"
            "                        the hub like a viewer; \"serving URL\" goes to stdout\n\n"
            "Prints \"hub listening on HOST:PORT\" on stdout once bound. SIGINT/SIGTERM stop it\n"
            "cleanly (the trace is closed properly).\n",
            EVT_HUB_DEFAULT_ADDR);
}

int cmd_hub(int argc, char **argv)
{
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    web_options web;
    web_options_init(&web);
    const char *http = NULL;
    opt.handle_signals = 1;
    opt.progress_ms = 5000;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int bad = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            opt.progress_ms = 0;
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--listen", &bad))) {
            if (cli_addr("hub", "--listen", v, 1)) return 2;
            opt.listen = v;
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--http", &bad))) {
            if (cli_addr("hub", "--http", v, 1)) return 2;
            http = v;
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--trace", &bad))) {
            opt.trace_path = v;
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--secret-file", &bad))) {
            char err[DP_ERRLEN];
            if (auth_secret_file_to_env(v, err)) {
                fprintf(stderr, "downpour: hub: %s\n", err);
                return 2;
            }
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--exit-when-idle", &bad))) {
            if (cli_int("hub", "--exit-when-idle", v, 0, 86400000, &opt.exit_when_idle_ms)) return 2;
        } else if ((v = cli_flag_value("hub", argc, argv, &i, "--reorder-ms", &bad))) {
            if (cli_int("hub", "--reorder-ms", v, 0, 86400000, &opt.reorder_ms)) return 2;
        } else if (bad) {   /* a flag at the end without its value: said already */
            return 2;
        } else {
            return cli_unknown_usage("hub", argv[i], usage);
        }
    }

    char err[DP_ERRLEN];
    if (auth_env_check(err)) {
        fprintf(stderr, "downpour: hub: %s\n", err);
        return 2;
    }
    web.listen = http;
    if (http ? web_serve_hub(&opt, &web, stdout, err) : evt_hub_serve(&opt, stdout, err)) {
        fprintf(stderr, "downpour: hub: %s\n", err);
        return 1;
    }
    return 0;
}
