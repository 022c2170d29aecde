/* test_lab.c — the lab's commands in process, where `make asan-unit` sees them: `downpour
 * lessons` over scenarios/lessons, `run` and `compare` of small simulated scenarios and
 * `fork` of the run's trace (no child process, no window). The integration tests
 * (it_scenario, it_compare, it_fork, it_lesson) check what these write in depth; this one
 * is here so that a leak or an overrun on their paths (a report's series, a lesson
 * folder's handle, a variant's options, a fork's) fails a sanitizer build. Run from the repository root (tests/run.sh does). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <math.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/dp.h"
#include "events/trace.h"
#include "lab/lab.h"
#include "lab/series.h"

static char dir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* `downpour lessons`: one line per lesson file, each naming the command that runs it. */
static void test_lessons(void)
{
    const char *lessons = "scenarios/lessons";
    DIR *d = opendir(lessons);
    CHECK_MSG(d != NULL, "%s: run from the repository root", lessons);
    if (!d) return;
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        files += l > 4 && !strcmp(de->d_name + l - 4, ".ini");
    }
    closedir(d);
    char err[DP_ERRLEN] = "";
    FILE *out = tmpfile();
    CHECK_MSG(lab_lessons(out, lessons, err) == 0, "%s", err);
    rewind(out);
    char line[512];
    int lines = 0, commands = 0;
    while (fgets(line, sizeof line, out)) {
        lines++;
        commands += strstr(line, "downpour run scenarios/lessons/") || strstr(line, "downpour compare scenarios/lessons/");
    }
    fclose(out);
    CHECK_MSG(files >= 12 && lines == files && commands == files, "%d files, %d lines, %d commands", files,
              lines, commands);
}

static const char *write_scenario(const char *name, const char *vary)
{
    const char *path = check_path(dir, name);
    FILE *f = fopen(path, "w");
    fprintf(f, "[scenario]\ntitle = %s\nengine = sim\n[cluster]\nps = 2\nworkers = 4\n"
               "[training]\nsteps = 40\n%s", name, vary ? vary : "");
    fclose(f);
    return path;
}

/* The options of a run or comparison into out, with no window. */
static lab_options options(const char *out)
{
    lab_options o;
    lab_options_init(&o);
    o.out_dir = out;
    o.no_view = 1;
    return o;
}

/* `downpour run` of a simulated scenario: its trace, summary and sheet. */
static void test_run(void)
{
    char err[DP_ERRLEN] = "", out[512];
    snprintf(out, sizeof out, "%s/run", dir);
    lab_options o = options(out);
    CHECK_MSG(lab_run(write_scenario("run.ini", NULL), &o, err) == 0, "%s", err);
    CHECK(exists(check_path(out, "trace.dptrace")));
    CHECK(exists(check_path(out, "summary.json")));
    CHECK(exists(check_path(out, "sheet.png")));
    /* a configuration the simulator refuses (checked across keys, after the file parsed) */
    const char *bad = write_scenario("bad.ini", "backup_workers = 4\n");
    snprintf(out, sizeof out, "%s/bad", dir);
    err[0] = 0;
    CHECK_MSG(lab_run(bad, &o, err) != 0 && strstr(err, "bad.ini:9: backup_workers: 4 leaves no replica"),
              "%s", err);
}

/* `downpour fork` of the run's trace at step 20, with a backup worker: a simulated trace
 * that says what it forked from. */
static void test_fork(void)
{
    char err[DP_ERRLEN] = "", run[512], out[512];
    snprintf(run, sizeof run, "%s/run/trace.dptrace", dir);
    snprintf(out, sizeof out, "%s/fork.dptrace", dir);
    lab_options o = options(NULL);
    o.sets[o.n_sets++] = "backup_workers=1";
    int rc = lab_fork(run, 20, &o, out, err);   /* prints the fork's summary line */
    CHECK_MSG(rc == 0 && exists(out), "lab_fork: %d %s", rc, err);
    trace_reader *r = trace_reader_open(out, err);
    const char *meta = r ? trace_reader_metadata(r) : NULL;
    CHECK_MSG(meta && strstr(meta, "\"fork\"") && strstr(meta, "\"at_step\":20") && strstr(meta, "backup_workers=1"),
              "the fork's metadata: %s", meta ? meta : err);
    if (r) trace_reader_close(r);
}

/* A report's accuracy curve: the evaluations with an accuracy (the simulator's have none,
 * NaN), at most LAB_MAX_EVALS of them (a run evaluating every step for longer is cut). */
static void test_series_evals(void)
{
    char err[DP_ERRLEN] = "";
    const char *path = check_path(dir, "evals.dptrace");
    trace_writer *w = trace_writer_open(path, "{\"engine\":\"real\"}", err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) return;
    int n = LAB_MAX_EVALS + 500;
    for (int i = 0; i < 3 + n; i++) {
        evt_record e;
        evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
        e.t = 1000000 * (int64_t)(i + 1);
        e.step = i;
        e.value = i < 3 ? NAN : (double)(i - 3) / n;   /* 3 without an accuracy first */
        trace_writer_add(w, &e);
    }
    CHECK(trace_writer_close(w, err) == 0);
    lab_series s;
    CHECK_MSG(lab_series_read(path, &s, err) == 0, "%s", err);
    int finite = 1;
    for (size_t i = 0; i < s.accuracy.n; i++) finite &= isfinite(s.accuracy.y[i]);
    CHECK_MSG(s.accuracy.n == LAB_MAX_EVALS && finite && s.accuracy.y[0] == 0.0,
              "%zu accuracy points (want %d, the first 0, none NaN): %s", s.accuracy.n, LAB_MAX_EVALS,
              finite ? "all finite" : "a NaN among them");
    lab_series_release(&s);
}

/* `downpour compare` of two simulated variants: the report folder's table has both. */
static void test_compare(void)
{
    char err[DP_ERRLEN] = "", out[512];
    snprintf(out, sizeof out, "%s/compare", dir);
    lab_options o = options(out);
    CHECK_MSG(lab_compare(write_scenario("cmp.ini", "[compare]\nvary = mode: sync, async\n"), &o, err) == 0,
              "%s", err);
    CHECK(exists(check_path(out, "report.md")));
    FILE *f = fopen(check_path(out, "summary.csv"), "r");
    int rows = 0;
    char line[4096];
    while (f && fgets(line, sizeof line, f)) rows++;
    if (f) fclose(f);
    CHECK_MSG(rows == 3, "summary.csv: %d lines (a header and 2 variants)", rows);
    CHECK(exists(check_path(out, "variants/mode-sync/trace.dptrace")));
    CHECK(exists(check_path(out, "variants/mode-async/trace.dptrace")));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/dp_test_lab.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_lessons();
    test_run();
    test_fork();
    test_series_evals();
    test_compare();
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return CHECK_DONE();
}
