/* test_cmd_trace.c — `downpour trace info|validate|export` through cmd_trace() itself
 * (the source is included, so no built binary is needed): exit codes, the --json object
 * of info (keys and counts), validate's one-line message naming file and offset (also
 * for a flipped byte in each field of a block header, which only the header CRC32 can
 * tell), the export file, usage errors and --help. */
#include "cli/cmd_trace.c"

#include <fcntl.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/trace_hdr.h"
#include "tests/evgen.h"

static char dir[] = "/tmp/dp_test_cmd_trace.XXXXXX";
static char out_path[512], err_path[512];

/* Runs cmd_trace with stdout and stderr captured to files. */
static int run(int argc, const char **argv)
{
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = cmd_trace(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(fo);
    close(fe);
    close(so);
    close(se);
    return rc;
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

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    char tpath[600], jpath[600], bad[600];
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    snprintf(tpath, sizeof tpath, "%s/run.dptrace", dir);
    snprintf(jpath, sizeof jpath, "%s/run.json", dir);
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

    const char *info_json[] = {"trace", "info", "--json", tpath};
    CHECK(run(4, info_json) == 0);
    char *s = slurp(out_path);
    json_error_t jerr;
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
    CHECK(run(3, info) == 0 && out_has("step_end") && out_has("\"engine\":\"real\""));

    const char *validate[] = {"trace", "validate", tpath};
    CHECK(run(3, validate) == 0 && out_has("ok"));

    const char *exp[] = {"trace", "export", "--chrome", jpath, tpath};
    CHECK(run(5, exp) == 0);
    json_t *j = json_load_file(jpath, 0, &jerr);
    CHECK(j && json_is_array(json_object_get(j, "traceEvents")));
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
    char line[1200];
    snprintf(line, sizeof line, "downpour: trace validate: %s: block at offset %ld: bad block "
             "header; skipped\n", bad, blk0);
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

    evgen_free(&g);
    unlink(tpath);
    unlink(jpath);
    unlink(bad);
    unlink(out_path);
    unlink(err_path);
    rmdir(dir);
    return CHECK_DONE();
}
