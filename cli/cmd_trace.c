/* cmd_trace.c — `downpour trace info|validate|export`: look inside a recorded trace.
 *   info [--json] FILE          metadata, event counts per kind, duration, dropped events
 *   validate FILE               exit 0 when every block reads, 1 with a one-line message
 *                               naming the file and the offset of the first damage
 *   export --chrome OUT FILE    Chrome / Perfetto JSON (TensorFlow timeline convention)
 * Exit status: 0 ok, 1 failure (unreadable or, for validate, damaged), 2 usage error.
 * Called by cli/main.c as cmd_trace(argc - 1, argv + 1): argv[0] is "trace". */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "common/dp.h"
#include "events/chrome.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"



static const char usage_trace[] =
    "usage: downpour trace <command> [options] TRACE\n"
    "\n"
    "Look inside a trace recorded by `downpour cluster --trace`, `downpour hub` or\n"
    "`downpour sim --trace`.\n"
    "\n"
    "commands:\n"
    "  info [--json] TRACE                  metadata, duration, events per kind, dropped\n"
    "  validate TRACE                       check every block; exit 1 if damaged\n"
    "  export --chrome OUT.json TRACE       write Chrome/Perfetto trace-event JSON\n"
    "\n"
    "Run `downpour trace <command> --help` for a command's options.\n";

static const char usage_info[] =
    "usage: downpour trace info [--json] TRACE\n"
    "\n"
    "Prints the run's metadata, the trace's duration, how many events it holds (in all\n"
    "and per kind), how many events tasks reported dropping, the cluster it recorded and\n"
    "any damage found. A damaged trace is summarised from its readable part.\n"
    "\n"
    "  --json    print one JSON object instead: {\"metadata\", \"duration_s\", \"events\",\n"
    "            \"dropped\", \"counts\": {kind: n, ...}, \"blocks\", \"ps\", \"workers\",\n"
    "            \"global_step\", \"damage\"}; counts are keyed by snake_case kind names\n"
    "            (pull_end, push_end, apply, drop, step_end, eval, ...)\n"
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

static int usage_error(const char *cmd, const char *usage, const char *fmt, const char *arg)
{
    fprintf(stderr, "downpour: trace%s%s: ", *cmd ? " " : "", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage);
    return 2;
}

static trace_reader *open_or_complain(const char *cmd, const char *path)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) fprintf(stderr, "downpour: trace %s: %s\n", cmd, err);
    return r;
}

/* Replays the whole trace into st. */
static void replay(trace_reader *r, evt_state *st)
{
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) evt_state_apply(st, &e);
}

static double duration_s(const trace_reader *r)
{
    return trace_reader_count(r) ? (double)(trace_reader_t1(r) - trace_reader_t0(r)) / 1e9 : 0.0;
}

static int info_json(trace_reader *r, const evt_state *st, const char *path)
{
    json_t *o = json_object();
    json_error_t jerr;
    const char *meta = trace_reader_metadata(r);
    json_t *m = json_loads(meta, JSON_DECODE_ANY, &jerr);
    json_t *file = json_string(path);      /* NULL when the name is not UTF-8 */
    json_object_set_new(o, "file", file ? file : json_null());
    if (!m) m = json_string(meta);
    json_object_set_new(o, "metadata", m ? m : json_null());
    json_object_set_new(o, "duration_s", json_real(duration_s(r)));
    json_object_set_new(o, "events", json_integer((json_int_t)st->events));
    json_object_set_new(o, "dropped", json_integer((json_int_t)st->events_dropped));
    json_t *counts = json_object();
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        json_object_set_new(counts, evt_kind_name(k), json_integer((json_int_t)st->counts[k]));
    if (st->counts[0]) json_object_set_new(counts, "unknown", json_integer((json_int_t)st->counts[0]));
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "blocks", json_integer((json_int_t)trace_reader_block_count(r)));
    json_object_set_new(o, "ps", json_integer(st->n_ps));
    json_object_set_new(o, "workers", json_integer(st->n_workers));
    json_object_set_new(o, "global_step", json_integer((json_int_t)st->global_step));
    const char *dmg = trace_reader_damage(r);
    json_object_set_new(o, "damage", dmg ? json_string(dmg) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!s) {
        fprintf(stderr, "downpour: trace info: cannot format JSON\n");
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

static void info_text(trace_reader *r, const evt_state *st, const char *path)
{
    printf("trace:     %s (%zu blocks)\n", path, trace_reader_block_count(r));
    printf("metadata:  %s\n", trace_reader_metadata(r));
    printf("duration:  %.3f s\n", duration_s(r));
    printf("events:    %llu\n", (unsigned long long)st->events);
    printf("dropped:   %lld (reported by tasks)\n", (long long)st->events_dropped);
    printf("cluster:   %d ps, %d workers; global step %lld\n", st->n_ps, st->n_workers,
           (long long)st->global_step);
    if (trace_reader_damage(r)) printf("damage:    %s\n", trace_reader_damage(r));
    printf("counts:\n");
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        if (st->counts[k])
            printf("  %-20s %llu\n", evt_kind_name(k), (unsigned long long)st->counts[k]);
    if (st->counts[0]) printf("  %-20s %llu\n", "unknown", (unsigned long long)st->counts[0]);
}

static int cmd_info(int argc, char **argv)
{
    int json = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage_info, stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("info", usage_info, "unknown option '%s'", argv[i]);
        } else if (path) {
            return usage_error("info", usage_info, "unexpected argument '%s'", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error("info", usage_info, "%s", "missing TRACE");
    trace_reader *r = open_or_complain("info", path);
    if (!r) return 1;
    evt_state st;
    evt_state_init(&st);
    replay(r, &st);
    int rc = 0;
    if (json) rc = info_json(r, &st, path);
    else info_text(r, &st, path);
    if (trace_reader_damage(r) && !json)
        fprintf(stderr, "downpour: trace info: %s: damaged: %s\n", path, trace_reader_damage(r));
    evt_state_release(&st);
    trace_reader_close(r);
    return rc;
}

static int cmd_validate(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage_validate, stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("validate", usage_validate, "unknown option '%s'", argv[i]);
        } else if (path) {
            return usage_error("validate", usage_validate, "unexpected argument '%s'", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage_error("validate", usage_validate, "%s", "missing TRACE");
    trace_reader *r = open_or_complain("validate", path);
    if (!r) return 1;
    /* decode every block: checksums were verified at open, this catches the rest */
    evt_record e;
    uint64_t n = 0;
    int rc;
    while ((rc = trace_reader_next(r, &e)) == 1) n++;
    const char *dmg = trace_reader_damage(r);
    if (dmg || rc < 0) {
        fprintf(stderr, "downpour: trace validate: %s: %s\n", path,
                dmg ? dmg : "read error");
        trace_reader_close(r);
        return 1;
    }
    printf("%s: ok, %llu events in %zu blocks, %.3f s\n", path, (unsigned long long)n,
           trace_reader_block_count(r), duration_s(r));
    trace_reader_close(r);
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
                return usage_error("export", usage_export, "%s", "--chrome needs a file");
            out = argv[++i];
        } else if (strncmp(argv[i], "--chrome=", 9) == 0) {
            out = argv[i] + 9;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("export", usage_export, "unknown option '%s'", argv[i]);
        } else if (path) {
            return usage_error("export", usage_export, "unexpected argument '%s'", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!out || !*out)
        return usage_error("export", usage_export, "%s", "missing --chrome OUT.json");
    if (!path) return usage_error("export", usage_export, "%s", "missing TRACE");
    trace_reader *r = open_or_complain("export", path);
    if (!r) return 1;
    char err[DP_ERRLEN];
    int rc = chrome_export_file(r, out, err);
    if (rc) fprintf(stderr, "downpour: trace export: %s\n", err);
    else if (strcmp(out, "-") != 0)
        fprintf(stderr, "downpour: trace export: wrote %s (%llu events)\n", out,
                (unsigned long long)trace_reader_count(r));
    if (trace_reader_damage(r))
        fprintf(stderr, "downpour: trace export: %s: damaged: %s\n", path, trace_reader_damage(r));
    trace_reader_close(r);
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
    if (strcmp(sub, "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(sub, "validate") == 0) return cmd_validate(argc - 1, argv + 1);
    if (strcmp(sub, "export") == 0) return cmd_export(argc - 1, argv + 1);
    return usage_error("", usage_trace, "unknown command '%s'", sub);
}
