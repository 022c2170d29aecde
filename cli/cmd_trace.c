/* cmd_trace.c — `downpour trace info|stats|validate|captions|export`: look inside a trace.
 *   info [--json] FILE          metadata, event counts per kind, duration, dropped events
 *   stats [--json] FILE         where each worker's time went, phase by phase
 *   captions [--json] FILE      the caption track: rule captions and the lesson's own
 *   validate FILE               exit 0 when every block reads, 1 with a one-line message
 *                               naming the file and the offset of the first damage
 *   export --chrome OUT FILE    Chrome / Perfetto JSON (TensorFlow timeline convention)
 * Exit status: 0 ok, 1 failure (unreadable or, for validate, damaged), 2 usage error.
 * Called by cli/main.c as cmd_trace(argc - 1, argv + 1): argv[0] is "trace".
 * Argument parsing and usage only; the work is events/trace_tool.c. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "events/trace_tool.h"

static const char usage_trace[] =
    "usage: downpour trace <command> [options] TRACE\n"
    "\n"
    "Look inside a trace recorded by `downpour cluster --trace`, `downpour hub` or\n"
    "`downpour sim --trace`.\n"
    "\n"
    "commands:\n"
    "  info [--json] TRACE                  metadata, duration, events per kind, dropped\n"
    "  validate TRACE                       check every block; exit 1 if damaged\n"
    "  captions [--json] TRACE              the caption track a viewer shows over the run\n"
    "  stats [--json] TRACE                 where each worker's time went: computing, waiting, ...\n"
    "  export --chrome OUT.json TRACE       write Chrome/Perfetto trace-event JSON\n"
    "\n"
    "Run `downpour trace <command> --help` for a command's options.\n";

static const char usage_info[] =
    "usage: downpour trace info [--json] TRACE\n"
    "\n"
    "Prints the run's metadata (one key a line: its configuration, a lesson's title and\n"
    "how many captions and questions it has, when it started), the trace's duration, how\n"
    "many events it holds (in all and per kind), how many events tasks reported dropping,\n"
    "the cluster it recorded and any damage found. A damaged trace is summarised from its\n"
    "readable part.\n"
    "\n"
    "  --json    print one JSON object instead: {\"metadata\", \"duration_s\", \"events\",\n"
    "            \"dropped\", \"counts\": {kind: n, ...}, \"blocks\", \"ps\", \"workers\",\n"
    "            \"global_step\", \"damage\"}; counts are keyed by snake_case kind names\n"
    "            (pull_end, push_end, apply, drop, step_end, eval, ...)\n"
    "  -h, --help  this text\n";

static const char usage_captions[] =
    "usage: downpour trace captions [--json] TRACE\n"
    "\n"
    "Prints the run's caption track: every line the viewer's caption bar shows over the\n"
    "run (the rules of docs/viewer.md, \"A viewer that explains\") and the lesson's own\n"
    "captions (at_step.N in its [lesson] section), in global-step order, one a line:\n"
    "time since the first event, global step, rule (\"lesson\" for the lesson's own) and\n"
    "text. A lesson caption whose step the run never reached shows \"-\" as its time.\n"
    "\n"
    "  --json    one JSON object: {\"file\", \"captions\": [{\"t_s\", \"step\", \"rule\",\n"
    "            \"text\"}], \"lesson_captions\", \"rule_captions\", \"unreached\"}\n"
    "  -h, --help  this text\n";

static const char usage_stats[] =
    "usage: downpour trace stats [--json] TRACE\n"
    "\n"
    "Where each worker's time went, from its first event until it stopped: the share spent\n"
    "computing, pulling, pushing, at the sync barrier, held by the staleness bound, paced,\n"
    "idle or dead, as the viewer shows it (one phase at a time: a push during the compute\n"
    "counts as computing), its steps and its mean step, and an \"all\" row. Then the\n"
    "slowest worker by step and the one computing the largest share of its time, each\n"
    "against the median worker, and in sync the worker whose gradients came last at the\n"
    "most global steps (without backup workers, the one the barrier waited for). More\n"
    "than 32 workers: the 8 slowest are listed.\n"
    "\n"
    "  --json    one JSON object: {\"file\", \"engine\", \"mode\", \"ps\", \"workers\",\n"
    "            \"global_step\", \"duration_s\", \"per_worker\": [{\"task\", \"steps\",\n"
    "            \"time_s\", \"mean_step_s\", \"phase_s\": {phase: s}}], \"slowest\",\n"
    "            \"most_computing\", \"last_to_push\", \"damage\"}\n"
    "  -h, --help  this text\n";

static const char usage_validate[] =
    "usage: downpour trace validate TRACE\n"
    "\n"
    "Reads and checks every block of TRACE (header, checksums, compression, every\n"
    "event record, the index). Exit status 0 when intact; 1 with one line naming the\n"
    "file and the offset of the (first) damage when not.\n"
    "\n"
    "  -h, --help  this text\n";

static const char usage_export[] =
    "usage: downpour trace export --chrome OUT.json TRACE\n"
    "\n"
    "Writes TRACE as Chrome trace-event JSON, for chrome://tracing or ui.perfetto.dev,\n"
    "laid out like TensorFlow's timeline: a process per task and per device, compute as\n"
    "slices, pulls and pushes as async spans, flow arrows from each worker push to the\n"
    "ps apply, counters for global step, loss and staleness. OUT.json may be '-' for\n"
    "standard output.\n"
    "\n"
    "  --chrome OUT.json   output file (required)\n"
    "  -h, --help          this text\n";

static int is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

/* One line, as every command's usage errors: the usage itself is --help's. */
static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "downpour: trace%s%s: ", *cmd ? " " : "", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see downpour trace%s%s --help)\n", *cmd ? " " : "", cmd);
    return 2;
}

/* An argument `trace CMD` does not take (a flag, or a second TRACE). */
static int unknown(const char *cmd, const char *arg, const char *help)
{
    char name[32];
    snprintf(name, sizeof name, "trace %s", cmd);
    return cli_unknown(name, arg, help);
}

typedef int (*json_tool_fn)(FILE *out, const char *path, int json, trace_tool_report *rep, char *err);

/* `info` and `captions`: [--json] TRACE, the tool's output on stdout, damage on stderr. */
static int json_tool(const char *cmd, const char *usage, json_tool_fn fn, int argc, char **argv)
{
    int json = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage, stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if ((argv[i][0] == '-' && argv[i][1]) || path) {
            return unknown(cmd, argv[i], usage);
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error(cmd, "%s", "missing TRACE");
    char err[DP_ERRLEN];
    trace_tool_report rep;
    if (fn(stdout, path, json, &rep, err)) {
        fprintf(stderr, "downpour: trace %s: %s\n", cmd, err);
        return 1;
    }
    /* --json carries the damage in its object (info); text output also warns on stderr */
    if (rep.damage[0] && !json)
        fprintf(stderr, "downpour: trace %s: %s: damaged: %s\n", cmd, path, rep.damage);
    return 0;
}

static int cmd_validate(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage_validate, stdout);
            return 0;
        } else if ((argv[i][0] == '-' && argv[i][1]) || path) {
            return unknown("validate", argv[i], usage_validate);
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error("validate", "%s", "missing TRACE");
    char err[DP_ERRLEN];
    if (trace_tool_validate(stdout, path, NULL, err)) {
        fprintf(stderr, "downpour: trace validate: %s\n", err);
        return 1;
    }
    return 0;
}

static int cmd_export(int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage_export, stdout);
            return 0;
        } else if (strcmp(argv[i], "--chrome") == 0) {
            if (i + 1 >= argc)
                return usage_error("export", "%s", "--chrome needs a file");
            out = argv[++i];
        } else if (strncmp(argv[i], "--chrome=", 9) == 0) {
            out = argv[i] + 9;
        } else if ((argv[i][0] == '-' && argv[i][1]) || path) {
            return unknown("export", argv[i], usage_export);
        } else {
            path = argv[i];
        }
    }
    if (!out || !*out)
        return usage_error("export", "%s", "missing --chrome OUT.json");
    if (!path) return usage_error("export", "%s", "missing TRACE");
    char err[DP_ERRLEN];
    trace_tool_report rep;
    int rc = trace_tool_export_chrome(path, out, &rep, err);
    if (rc) fprintf(stderr, "downpour: trace export: %s\n", err);
    else if (strcmp(out, "-") != 0)
        fprintf(stderr, "downpour: trace export: wrote %s (%llu events)\n", out,
                (unsigned long long)rep.events);
    if (rep.damage[0])
        fprintf(stderr, "downpour: trace export: %s: damaged: %s\n", path, rep.damage);
    return rc ? 1 : 0;
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_trace, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (is_help(sub) || strcmp(sub, "help") == 0) {
        fputs(usage_trace, stdout);
        return 0;
    }
    if (strcmp(sub, "info") == 0) return json_tool("info", usage_info, trace_tool_info, argc - 1, argv + 1);
    if (strcmp(sub, "captions") == 0)
        return json_tool("captions", usage_captions, trace_tool_captions, argc - 1, argv + 1);
    if (strcmp(sub, "stats") == 0) return json_tool("stats", usage_stats, trace_tool_stats, argc - 1, argv + 1);
    if (strcmp(sub, "validate") == 0) return cmd_validate(argc - 1, argv + 1);
    if (strcmp(sub, "export") == 0) return cmd_export(argc - 1, argv + 1);
    return usage_error("", "unknown command '%s'", sub);
}
