/* test_cmd_trace.c — `downpour trace info|validate|export`, twice over: the library calls
 * behind it (events/trace_tool.h: the report, the --json object of info, validate's
 * DP_ECORRUPT and "PATH: DAMAGE" message, the export file) and the built command run as
 * a subprocess (exit codes, the --json object of info (keys and counts), validate's
 * one-line message naming file and offset — also for a flipped byte in each field of a
 * block header, which only the header CRC32 can tell — the export file, usage errors and
 * --help). The binary is $DOWNPOUR (tests/run.sh sets it), else build/downpour. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "events/trace_tool.h"
#include "tests/check.h"
#include "tests/trace_hdr.h"
#include "tests/evgen.h"

extern char **environ;

static char dir[] = "/tmp/dp_test_cmd_trace.XXXXXX";
static char out_path[512], err_path[512];
static const char *bin;

/* Runs `downpour ARGV...` (argv[0] is the subcommand, "trace") with stdout and stderr
 * redirected to out_path and err_path; returns its exit status, or -1 when it could not
 * be started or died of a signal (reported on stderr). */
static int run(int argc, const char **argv)
{
    char **args = xcalloc((size_t)argc + 2, sizeof *args);
    args[0] = (char *)bin;
    for (int i = 0; i < argc; i++) args[i + 1] = (char *)argv[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, bin, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(args);
    if (rc) {
        fprintf(stderr, "cannot start %s: %s\n", bin, strerror(rc));
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    fprintf(stderr, "%s %s %s died of signal %d\n", bin, argv[0], argc > 1 ? argv[1] : "",
            WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return xstrdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = xmalloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static int out_has(const char *needle)
{
    char *s = slurp(out_path);
    int ok = strstr(s, needle) != NULL;
    free(s);
    return ok;
}

/* 1 when stderr is exactly want; prints it when not. */
static int err_is(const char *want)
{
    char *s = slurp(err_path);
    int ok = strcmp(s, want) == 0;
    if (!ok) fprintf(stderr, "stderr was: \"%s\"\n", s);
    free(s);
    return ok;
}


static int err_has(const char *needle)
{
    char *s = slurp(err_path);
    int ok = strstr(s, needle) != NULL;
    if (!ok) fprintf(stderr, "stderr was: %s\n", s);
    free(s);
    return ok;
}

/* What a library call printed on f since the last drain: read back, and f rewound for
 * the next call (caller frees the text). */
static char *drain(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *s = xmalloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    rewind(f);
    return s;
}

/* The whole file at path (binary; *n gets its length); caller frees. */
static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = xmalloc(len > 0 ? (size_t)len : 1);
    *n = fread(s, 1, (size_t)(len > 0 ? len : 0), f);
    fclose(f);
    return s;
}

/* 1 when the file at path still holds exactly the n bytes of want. */
static int file_is(const char *path, const char *want, size_t n)
{
    size_t got;
    char *s = read_all(path, &got);
    int ok = s && got == n && memcmp(s, want, n) == 0;
    free(s);
    return ok;
}

/* `trace export --chrome OUT T` where OUT is T itself, by its own name, through a symbolic
 * link, a hard link and another spelling of the path: refused with one line naming both,
 * the trace untouched (fopen "w" would have truncated it before reading). */
static void test_export_onto_input(const char *tpath)
{
    size_t n;
    char *orig = read_all(tpath, &n);
    CHECK(orig && n > 0);
    char sym[700], hard[700], other[700];
    snprintf(sym, sizeof sym, "%s/sym.dptrace", dir);
    snprintf(hard, sizeof hard, "%s/hard.dptrace", dir);
    snprintf(other, sizeof other, "%s/../%s/run.dptrace", dir, strrchr(dir, '/') + 1);
    CHECK(symlink(tpath, sym) == 0 && link(tpath, hard) == 0);
    const char *outs[] = {tpath, sym, hard, other};
    for (int i = 0; i < 4; i++) {
        trace_tool_report rep;
        char err[DP_ERRLEN] = "", want[2 * 700 + 80];
        int rc = trace_tool_export_chrome(tpath, outs[i], &rep, err);
        snprintf(want, sizeof want, "output %s is the input trace %s: refusing to overwrite it",
                 outs[i], tpath);
        CHECK_MSG(rc == DP_EINVAL && !strcmp(err, want), "export onto %s: rc %d \"%s\"",
                  outs[i], rc, err);
        CHECK_MSG(file_is(tpath, orig, n), "export onto %s changed the trace", outs[i]);
        const char *cmd[] = {"trace", "export", "--chrome", outs[i], tpath};
        char line[sizeof want + 40];
        snprintf(line, sizeof line, "downpour: trace export: %s\n", want);
        CHECK_MSG(run(5, cmd) == 1 && err_is(line), "downpour trace export --chrome %s %s",
                  outs[i], tpath);
        CHECK_MSG(file_is(tpath, orig, n), "the command onto %s changed the trace", outs[i]);
    }
    /* the input given through the link, the output by its own name: the same file too */
    const char *rev[] = {"trace", "export", "--chrome", tpath, sym};
    CHECK(run(5, rev) == 1 && err_has("refusing to overwrite") && file_is(tpath, orig, n));
    unlink(sym);
    unlink(hard);
    free(orig);
}

/* info's text prints the metadata one key a line: nested objects under their key, a
 * lesson summed up, the start as a date, a string with a control character escaped, and
 * metadata that is not a JSON object as the file holds it. */
static void test_info_metadata(void)
{
    static const struct {
        const char *meta, *want;
    } cases[] = {
        {"{\"engine\":\"sim\",\"lr\":0.10000000000000001,\"config\":{\"ps\":8,\"inner\":{\"x\":true}},"
         "\"straggler\":\"\",\"hosts\":[1,2]}",
         "metadata:\n"
         "  engine               sim\n"
         "  lr                   0.1\n"
         "  config\n"
         "    ps                 8\n"
         "    inner\n"
         "      x                true\n"
         "  straggler            \"\"\n"
         "  hosts                [1,2]\n"},
        {"{\"lesson\":{\"title\":\"Sync vs async\",\"number\":5,\"captions\":[{},{},{}],"
         "\"pauses\":[50],\"questions\":[{},{}]},\"start_unix_ns\":1796122283748987773}",
         "metadata:\n"
         "  lesson               Sync vs async (lesson 5: 3 captions, 1 pauses, 2 questions)\n"
         "  start_unix_ns        1796122283748987773 (2026-12-01 10:51:23 UTC)\n"},
        {"{\"title\":\"a\\u001b[2Jb\"}", "metadata:\n  title                \"a\\u001B[2Jb\"\n"},
        {"{\"a\\u0007b\":1}", "metadata:\n  a?b                  1\n"},
        {"[1,2]", "metadata:  [1,2]\n"},
        {"", "metadata:  \n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[700], err[DP_ERRLEN];
        snprintf(path, sizeof path, "%s/meta%zu.dptrace", dir, i);
        trace_writer *w = trace_writer_open(path, cases[i].meta, err);
        CHECK_MSG(w && trace_writer_close(w, err) == 0, "writing %s: %s", path, err);
        trace_tool_report rep;
        FILE *f = tmpfile();
        int rc = trace_tool_info(f, path, 0, &rep, err);
        char *text = drain(f);
        const char *at = strstr(text, "metadata:");
        const char *end = at ? strstr(at, "duration:") : NULL;
        size_t n = end ? (size_t)(end - at) : 0;
        CHECK_MSG(rc == 0 && end && n == strlen(cases[i].want) && !strncmp(at, cases[i].want, n),
                  "info of metadata %s printed:\n%.*s\nwant:\n%s", cases[i].meta, (int)n,
                  at ? at : "", cases[i].want);
        free(text);
        unlink(path);
    }
}

/* info --json's "tasks": one entry per source task in the order first seen, its records
 * less its drop reports and the hub's clock syncs, and its last reported drop count. */
static void test_info_tasks(void)
{
    char path[700], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/tasks.dptrace", dir);
    trace_writer *w = trace_writer_open(path, "{}", err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) return;
    static const struct {
        evt_kind kind;
        int job, task;
    } recs[] = {
        {EVT_TASK_START, EVT_JOB_PS, 0},      {EVT_TASK_START, EVT_JOB_WORKER, 0},
        {EVT_CLOCK_SYNC, EVT_JOB_HUB, 0},     {EVT_STEP_END, EVT_JOB_WORKER, 0},
        {EVT_EVENTS_DROPPED, EVT_JOB_WORKER, 0}, {EVT_STEP_END, EVT_JOB_WORKER, 0},
        {EVT_TASK_STOP, EVT_JOB_PS, 0},
    };
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        evt_record e;
        evt_init(&e, recs[i].kind, recs[i].job, recs[i].task);
        e.t = (int64_t)(i + 1) * 1000;
        if (recs[i].kind == EVT_EVENTS_DROPPED) e.bytes = 5;
        trace_writer_add(w, &e);
    }
    CHECK(trace_writer_close(w, err) == 0);
    FILE *f = tmpfile();
    trace_tool_report rep;
    CHECK(trace_tool_info(f, path, 1, &rep, err) == 0);
    char *js = drain(f);
    json_t *o = json_loads(js, 0, NULL);
    json_t *t = json_object_get(o, "tasks");
    static const struct {
        const char *task;
        int events, dropped;
    } want[] = {{"ps:0", 2, 0}, {"worker:0", 3, 5}, {"hub:0", 0, 0}};
    int ok = json_array_size(t) == 3;
    for (size_t i = 0; ok && i < 3; i++) {
        json_t *x = json_array_get(t, i);
        ok = !strcmp(json_string_value(json_object_get(x, "task")), want[i].task) &&
             json_integer_value(json_object_get(x, "events")) == want[i].events &&
             json_integer_value(json_object_get(x, "dropped")) == want[i].dropped;
    }
    CHECK_MSG(ok, "tasks: ps:0 2 events, worker:0 3 (5 dropped), hub:0 none: %s", js);
    json_decref(o);
    free(js);
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    const char *env_bin = getenv("DOWNPOUR");
    bin = env_bin && *env_bin ? env_bin : "build/downpour";
    CHECK_MSG(access(bin, X_OK) == 0, "no downpour binary at %s: build it (make all) or set "
              "DOWNPOUR", bin);
    char tpath[600], jpath[600], ljpath[600], bad[600];
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    snprintf(tpath, sizeof tpath, "%s/run.dptrace", dir);
    snprintf(jpath, sizeof jpath, "%s/run.json", dir);
    snprintf(ljpath, sizeof ljpath, "%s/lib.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.dptrace", dir);

    /* a 1 ps + 2 worker run, 2 variables, 40 steps */
    evgen g;
    evgen_run(&g, 1, 2, 2, 40, 1, 8);
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(tpath, "{\"engine\":\"real\",\"mode\":\"sync\"}", err);
    size_t dropped_kind = 0;
    for (size_t i = 0; i < g.n; i++) {
        evt_record e = g.ev[i];
        e.device = trace_writer_intern(w, evt_strtab_get(g.strs, e.device));
        e.var = trace_writer_intern(w, evt_strtab_get(g.strs, e.var));
        e.str = trace_writer_intern(w, evt_strtab_get(g.strs, e.str));
        dropped_kind += e.kind == EVT_DROP;
        trace_writer_add(w, &e);
    }
    evt_record e;
    evt_init(&e, EVT_EVENTS_DROPPED, EVT_JOB_WORKER, 1);
    e.t = g.ev[g.n - 1].t;
    e.bytes = 17;
    trace_writer_add(w, &e);
    CHECK(trace_writer_close(w, err) == 0);
    const size_t n_events = g.n + 1;          /* evgen's run and the EVENTS_DROPPED */

    /* ---- the library: events/trace_tool.h -------------------------------------------- */
    trace_tool_report rep;
    FILE *lo = tmpfile();
    int lrc = trace_tool_info(lo, tpath, 1, &rep, err);
    char *lib_json = drain(lo);
    CHECK_MSG(lrc == 0, "trace_tool_info --json: %d %s", lrc, err);
    CHECK_MSG(rep.events == n_events && rep.blocks >= 1 && rep.damage[0] == '\0',
              "report of an intact trace: %llu events (want %zu), %zu blocks, damage \"%s\"",
              (unsigned long long)rep.events, n_events, rep.blocks, rep.damage);
    CHECK_NEAR(rep.duration_s, (double)(g.ev[g.n - 1].t - g.ev[0].t) / 1e9, 1e-9);
    json_error_t jerr;
    json_t *lj = json_loads(lib_json, 0, &jerr);
    CHECK_MSG(lj && json_integer_value(json_object_get(lj, "events")) == (json_int_t)n_events &&
                  json_integer_value(json_object_get(lj, "dropped")) == 17 &&
                  !strcmp(json_string_value(json_object_get(lj, "file")), tpath),
              "trace_tool_info's JSON lacks events %zu, dropped 17 or file %s: %s", n_events,
              tpath, lib_json);
    json_decref(lj);
    lrc = trace_tool_info(lo, tpath, 0, &rep, err);
    char *lib_text = drain(lo);
    char want_ev[64];
    snprintf(want_ev, sizeof want_ev, "\nevents:    %zu\n", n_events);
    CHECK_MSG(lrc == 0 && strstr(lib_text, want_ev) &&
                  strstr(lib_text, "\ndropped:   17 (reported by tasks)\n") &&
                  strstr(lib_text, "\ncluster:   1 ps, 2 workers; global step "),
              "trace_tool_info's text lacks events %zu, dropped 17, 1 ps, 2 workers:\n%s",
              n_events, lib_text);
    lrc = trace_tool_validate(lo, tpath, &rep, err);
    char *lib_ok = drain(lo);
    char want_ok[700];
    snprintf(want_ok, sizeof want_ok, "%s: ok, %zu events in ", tpath, n_events);
    CHECK_MSG(lrc == 0 && !strncmp(lib_ok, want_ok, strlen(want_ok)),
              "trace_tool_validate: %d, printed \"%s\", want \"%s...\"", lrc, lib_ok, want_ok);
    free(lib_ok);
    lrc = trace_tool_export_chrome(tpath, ljpath, &rep, err);
    json_t *lexp = json_load_file(ljpath, 0, &jerr);
    CHECK_MSG(lrc == 0 && rep.events == n_events && lexp &&
                  json_is_array(json_object_get(lexp, "traceEvents")),
              "trace_tool_export_chrome: %d %s", lrc, err);
    json_decref(lexp);
    /* captions: a trace without a lesson has only rule captions; the JSON's list and
     * counts agree, and the text has one line per caption */
    lrc = trace_tool_captions(lo, tpath, 1, &rep, err);
    char *cap_json = drain(lo);
    json_t *cj = json_loads(cap_json, 0, &jerr);
    size_t n_caps = cj ? json_array_size(json_object_get(cj, "captions")) : 0;
    CHECK_MSG(lrc == 0 && cj && n_caps > 0 &&
                  json_integer_value(json_object_get(cj, "lesson_captions")) == 0 &&
                  json_integer_value(json_object_get(cj, "rule_captions")) == (json_int_t)n_caps,
              "trace_tool_captions --json: %d %s: %s", lrc, err, cap_json);
    {   /* every caption has its global step, time, rule and text */
        size_t whole = 0;
        for (size_t i = 0; i < n_caps; i++) {
            json_t *c = json_array_get(json_object_get(cj, "captions"), i);
            whole += json_is_integer(json_object_get(c, "step")) && json_is_number(json_object_get(c, "t_s")) &&
                     json_is_string(json_object_get(c, "rule")) && json_is_string(json_object_get(c, "text"));
        }
        CHECK_MSG(whole == n_caps, "%zu of %zu captions have step, t_s, rule and text: %s", whole, n_caps,
                  cap_json);
    }
    json_decref(cj);
    free(cap_json);
    lrc = trace_tool_captions(lo, tpath, 0, &rep, err);
    char *cap_text = drain(lo);
    size_t lines = 0;
    for (const char *q = cap_text; *q; q++) lines += *q == '\n';
    CHECK_MSG(lrc == 0 && lines == n_caps, "trace_tool_captions: %d, %zu lines for %zu captions:\n%s",
              lrc, lines, n_caps, cap_text);
    free(cap_text);
    lrc = trace_tool_export_chrome(tpath, "/nonexistent/dir/x.json", &rep, err);
    CHECK_MSG(lrc < 0 && strstr(err, "/nonexistent/dir/x.json") && rep.events == n_events,
              "export to a missing folder: %d \"%s\", %llu events", lrc, err,
              (unsigned long long)rep.events);
    char want_exp_err[DP_ERRLEN + 64];
    snprintf(want_exp_err, sizeof want_exp_err, "downpour: trace export: %s\n", err);
    lrc = trace_tool_info(lo, "/nonexistent/x.dptrace", 0, &rep, err);
    CHECK_MSG(lrc < 0 && strstr(err, "/nonexistent/x.dptrace") && rep.events == 0 &&
                  rep.blocks == 0 && !rep.damage[0],
              "info of a missing file: %d \"%s\"", lrc, err);
    /* each call zeroes the report first: a failed one leaves nothing of the last */
    CHECK(trace_tool_validate(lo, tpath, &rep, err) == 0 && rep.events == n_events);
    free(drain(lo));
    CHECK_MSG(trace_tool_validate(lo, "/nonexistent/x.dptrace", &rep, err) < 0 && rep.events == 0 &&
                  rep.blocks == 0,
              "validate of a missing file: %llu events, %zu blocks", (unsigned long long)rep.events,
              rep.blocks);
    CHECK(trace_tool_export_chrome("/nonexistent/x.dptrace", ljpath, &rep, err) < 0);

    /* ---- the command, as a subprocess ------------------------------------------------ */
    const char *info_json[] = {"trace", "info", "--json", tpath};
    CHECK(run(4, info_json) == 0);
    char *s = slurp(out_path);
    CHECK_MSG(!strcmp(s, lib_json), "info --json printed \"%s\", trace_tool_info \"%s\"", s,
              lib_json);
    free(lib_json);
    json_t *o = json_loads(s, 0, &jerr);
    CHECK_MSG(o != NULL, "info --json printed invalid JSON: %s", jerr.text);
    CHECK(strchr(s, '\n') == s + strlen(s) - 1);               /* one line */
    free(s);
    json_t *counts = json_object_get(o, "counts");
    CHECK(json_is_object(json_object_get(o, "metadata")));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"), "engine")),
                  "real"));
    CHECK(json_is_number(json_object_get(o, "duration_s")) &&
          json_number_value(json_object_get(o, "duration_s")) > 0);
    CHECK(json_integer_value(json_object_get(o, "events")) == (json_int_t)g.n + 1);
    CHECK(json_integer_value(json_object_get(o, "dropped")) == 17);
    CHECK(json_integer_value(json_object_get(counts, "push_end")) == 2 * 40 * 2);
    CHECK(json_integer_value(json_object_get(counts, "apply")) +
              json_integer_value(json_object_get(counts, "drop")) == 2 * 40 * 2);
    CHECK(json_integer_value(json_object_get(counts, "drop")) == (json_int_t)dropped_kind);
    CHECK(json_integer_value(json_object_get(counts, "step_end")) == 2 * 40);
    CHECK(json_is_integer(json_object_get(counts, "eval")) &&
          json_is_integer(json_object_get(counts, "pull_end")));
    CHECK(json_object_size(counts) == EVT_KIND_COUNT - 1);
    CHECK(json_integer_value(json_object_get(o, "ps")) == 1 &&
          json_integer_value(json_object_get(o, "workers")) == 2);
    CHECK(json_is_null(json_object_get(o, "damage")));
    json_decref(o);

    const char *info[] = {"trace", "info", tpath};
    CHECK(run(3, info) == 0 && out_has("step_end") && out_has("\n  engine               real\n") &&
          out_has("\n  mode                 sync\n"));
    {   /* its first line names the file and its blocks, as the reader counts them */
        trace_reader *br = trace_reader_open(tpath, err);
        char first[700];
        snprintf(first, sizeof first, "trace:     %s (%zu blocks)\n", tpath, br ? trace_reader_block_count(br) : 0);
        s = slurp(out_path);
        CHECK_MSG(br && trace_reader_block_count(br) > 0 && !strncmp(s, first, strlen(first)),
                  "info began \"%.80s\", not \"%s\"", s, first);
        free(s);
        trace_reader_close(br);
    }
    s = slurp(out_path);
    CHECK_MSG(!strcmp(s, lib_text), "info printed \"%s\", trace_tool_info \"%s\"", s, lib_text);
    free(s);
    free(lib_text);

    const char *validate[] = {"trace", "validate", tpath};
    CHECK(run(3, validate) == 0 && out_has("ok"));

    const char *exp[] = {"trace", "export", "--chrome", jpath, tpath};
    CHECK(run(5, exp) == 0);
    json_t *j = json_load_file(jpath, 0, &jerr);
    CHECK(j && json_is_array(json_object_get(j, "traceEvents")));
    char *cmd_exp = slurp(jpath), *lib_exp = slurp(ljpath);
    CHECK_MSG(*cmd_exp && !strcmp(cmd_exp, lib_exp),
              "export's file differs from trace_tool_export_chrome's (%zu vs %zu bytes)",
              strlen(cmd_exp), strlen(lib_exp));
    free(cmd_exp);
    free(lib_exp);
    /* ts in microseconds: the events' ts run from the first event's time to the last's
     * (cluster_start, events_dropped: instants at their own time), both / 1000 */
    double ts_min = INFINITY, ts_max = -INFINITY;
    size_t ji;
    json_t *jev;
    json_array_foreach(json_object_get(j, "traceEvents"), ji, jev) {
        const char *ph = json_string_value(json_object_get(jev, "ph"));
        double ts = json_number_value(json_object_get(jev, "ts"));
        if (!ph || !strcmp(ph, "M")) continue;
        if (ts < ts_min) ts_min = ts;
        if (ts > ts_max) ts_max = ts;
    }
    CHECK_MSG(fabs(ts_min - (double)g.ev[0].t / 1000.0) < 0.0005,
              "export's first ts %.3f is not the first event's %lld ns in us", ts_min,
              (long long)g.ev[0].t);
    CHECK_MSG(fabs(ts_max - (double)g.ev[g.n - 1].t / 1000.0) < 0.0005,
              "export's last ts %.3f is not the last event's %lld ns in us", ts_max,
              (long long)g.ev[g.n - 1].t);
    json_decref(j);
    char eq[700];
    snprintf(eq, sizeof eq, "--chrome=%s", jpath);
    const char *exp2[] = {"trace", "export", eq, tpath};
    CHECK(run(4, exp2) == 0);
    const char *exp_nodir[] = {"trace", "export", "--chrome", "/nonexistent/dir/x.json", tpath};
    CHECK(run(5, exp_nodir) == 1 && err_is(want_exp_err));
    test_export_onto_input(tpath);
    test_info_metadata();
    test_info_tasks();

    /* damage: a flipped byte inside the (only) block */
    trace_reader *r = trace_reader_open(tpath, err);
    trace_block_info bi;
    trace_reader_block_info(r, 0, &bi);
    trace_reader_close(r);
    char *all = slurp(tpath);
    FILE *f = fopen(tpath, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    all[bi.offset + 100] ^= 0x20;
    f = fopen(bad, "wb");
    fwrite(all, 1, (size_t)size, f);
    fclose(f);
    const char *vbad[] = {"trace", "validate", bad};
    char want[64];
    snprintf(want, sizeof want, "offset %llu", (unsigned long long)bi.offset);
    CHECK(run(3, vbad) == 1 && err_has("bad.dptrace") && err_has(want));
    lrc = trace_tool_validate(lo, bad, &rep, err);
    CHECK_MSG(lrc == DP_ECORRUPT && !strncmp(err, bad, strlen(bad)) && strstr(err, want) &&
                  !strncmp(rep.damage, "block at offset ", 16),
              "trace_tool_validate of a flipped block byte: %d \"%s\", damage \"%s\"", lrc, err,
              rep.damage);
    lrc = trace_tool_info(lo, bad, 1, &rep, err);
    CHECK_MSG(lrc == 0 && strstr(rep.damage, want), "trace_tool_info of a damaged trace: %d, "
              "damage \"%s\"", lrc, rep.damage);
    const char *ibad[] = {"trace", "info", "--json", bad};
    CHECK(run(4, ibad) == 0 && out_has("\"damage\":\"block at offset"));
    /* truncated: validate fails and names the offset */
    all[bi.offset + 100] ^= 0x20;
    f = fopen(bad, "wb");
    fwrite(all, 1, (size_t)size - 50, f);
    fclose(f);
    CHECK(run(3, vbad) == 1 && err_has("truncated at offset"));
    /* not a trace at all */
    f = fopen(bad, "wb");
    fputs("{\"traceEvents\":[]}", f);
    fclose(f);
    CHECK(run(3, vbad) == 1 && err_has("not a Downpour trace"));
    /* a flipped byte in each field of the first block's header; the block starts right
     * after the file header, at 16 + metadata length + 4 */
    uint8_t *u = (uint8_t *)all;
    long blk0 = 16 + (long)((uint32_t)u[12] | (uint32_t)u[13] << 8 | (uint32_t)u[14] << 16 |
                            (uint32_t)u[15] << 24) + 4;
    CHECK_MSG(blk0 == (long)bi.offset, "first block at %ld by the format, %llu by the reader",
              blk0, (unsigned long long)bi.offset);
    char line[1200], dline[200];
    snprintf(dline, sizeof dline, "block at offset %ld: bad block header; skipped", blk0);
    snprintf(line, sizeof line, "downpour: trace validate: %s: %s\n", bad, dline);
    for (size_t i = 0; i < DP_ARRAY_LEN(hdr_fields); i++) {
        u[blk0 + hdr_fields[i].at] ^= hdr_fields[i].mask;
        f = fopen(bad, "wb");
        fwrite(all, 1, (size_t)size, f);
        fclose(f);
        u[blk0 + hdr_fields[i].at] ^= hdr_fields[i].mask;
        int rc = run(3, vbad);
        CHECK_MSG(rc == 1, "validate exits %d with the block header's %s flipped (+%d)", rc,
                  hdr_fields[i].name, hdr_fields[i].at);
        CHECK_MSG(err_is(line), "validate's stderr with the %s flipped is not: %s",
                  hdr_fields[i].name, line);
        lrc = trace_tool_validate(lo, bad, &rep, err);
        CHECK_MSG(lrc == DP_ECORRUPT && !strcmp(rep.damage, dline) &&
                      !strncmp(err, bad, strlen(bad)) && !strcmp(err + strlen(bad) + 2, dline),
                  "trace_tool_validate with the %s flipped (+%d): %d, \"%s\", want \"%s: %s\"",
                  hdr_fields[i].name, hdr_fields[i].at, lrc, err, bad, dline);
    }
    free(all);

    /* usage */
    const char *none[] = {"trace"};
    CHECK(run(1, none) == 2);
    const char *help[] = {"trace", "--help"};
    CHECK(run(2, help) == 0 && out_has("usage: downpour trace"));
    const char *ihelp[] = {"trace", "info", "--help"};
    CHECK(run(3, ihelp) == 0 && out_has("--json"));
    const char *vhelp[] = {"trace", "validate", "-h"};
    CHECK(run(3, vhelp) == 0 && out_has("validate"));
    const char *ehelp[] = {"trace", "export", "--help"};
    CHECK(run(3, ehelp) == 0 && out_has("--chrome"));
    const char *bogus[] = {"trace", "frobnicate", tpath};
    CHECK(run(3, bogus) == 2 && err_has("frobnicate"));
    const char *badopt[] = {"trace", "info", "--jsn", tpath};
    CHECK(run(4, badopt) == 2 && err_has("--jsn"));
    const char *nofile[] = {"trace", "validate"};
    CHECK(run(2, nofile) == 2 && err_has("missing TRACE"));
    const char *nochrome[] = {"trace", "export", tpath};
    CHECK(run(3, nochrome) == 2 && err_has("--chrome"));
    const char *dangling[] = {"trace", "export", tpath, "--chrome"};
    CHECK(run(4, dangling) == 2);
    const char *twofiles[] = {"trace", "info", tpath, tpath};
    CHECK(run(4, twofiles) == 2 && err_has("unexpected argument"));
    const char *missing[] = {"trace", "info", "/nonexistent/x.dptrace"};
    CHECK(run(3, missing) == 1 && err_has("/nonexistent/x.dptrace"));

    fclose(lo);
    evgen_free(&g);
    unlink(tpath);
    unlink(jpath);
    unlink(ljpath);
    unlink(bad);
    unlink(out_path);
    unlink(err_path);
    rmdir(dir);
    return CHECK_DONE();
}
