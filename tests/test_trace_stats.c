/* test_trace_stats.c — `downpour trace stats` (trace_tool_stats): where each worker's
 * time went. The traces are written by hand, event by event, so every expected second
 * below is read off the timeline in the comments, not computed by the code under test. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "events/trace_tool.h"
#include "tests/check.h"

static char dir[] = "/tmp/dp_test_trace_stats.XXXXXX";

#define MS 1000000LL
enum { MAXEV = 4096 };
static evt_record ev[MAXEV];
static int nev;

static void add(evt_kind kind, int job, int task, long long t_ms, long long step)
{
    if (nev == MAXEV) abort();
    evt_record *e = &ev[nev++];
    evt_init(e, kind, job, task);
    e->t = t_ms * MS;
    e->step = step;
}

static int by_time(const void *a, const void *b)
{
    const evt_record *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x < y ? -1 : x > y;   /* stable: a task's events keep their order */
}

static void write_trace(const char *path, const char *meta)
{
    char err[DP_ERRLEN];
    qsort(ev, (size_t)nev, sizeof ev[0], by_time);
    trace_writer *w = trace_writer_open(path, meta, err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) return;
    for (int i = 0; i < nev; i++) trace_writer_add(w, &ev[i]);
    CHECK_MSG(trace_writer_close(w, err) == 0, "%s", err);
    nev = 0;
}

static char *run_stats(const char *path, int json)
{
    char *buf = NULL, err[DP_ERRLEN] = "";
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    trace_tool_report rep;
    int rc = trace_tool_stats(f, path, json, &rep, err);
    fclose(f);
    CHECK_MSG(rc == 0, "trace_tool_stats(%s): %d %s", path, rc, err);
    return buf;
}

static double phase(json_t *w, const char *name)
{
    return json_real_value(json_object_get(json_object_get(w, "phase_s"), name));
}

/* A sync run, 1 ps and 2 workers, two steps each (times in ms):
 *   worker 0: pull 0-10, compute 10-40 (a push starts at 30: computing wins), push to 50,
 *             barrier 50-80; pull 80-90, compute 90-120, push 120-130, barrier 130-160;
 *             idle 160-170, stops at 170: computing 60, pulling 20, pushing 20, barrier
 *             60, idle 10 of 170.
 *   worker 1: pull 0-10, compute 10-70, push 70-80; pull 80-90, compute 90-150, push
 *             150-160; idle 160-175, stops at 175: computing 120, pulling 20, pushing
 *             20, idle 15 of 175. */
static void add_sync_run(void)
{
    add(EVT_TASK_START, EVT_JOB_PS, 0, 0, 0);
    for (int w = 0; w < 2; w++) add(EVT_TASK_START, EVT_JOB_WORKER, w, 0, 0);
    add(EVT_PULL_BEGIN, EVT_JOB_WORKER, 0, 0, 0);
    add(EVT_PULL_END, EVT_JOB_WORKER, 0, 10, 0);
    add(EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 10, 1);
    add(EVT_PUSH_BEGIN, EVT_JOB_WORKER, 0, 30, 1);
    add(EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 40, 1);
    add(EVT_PUSH_END, EVT_JOB_WORKER, 0, 50, 1);
    add(EVT_STEP_END, EVT_JOB_WORKER, 0, 50, 1);
    add(EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 50, 1);
    add(EVT_BARRIER_RELEASE, EVT_JOB_WORKER, 0, 80, 1);
    add(EVT_PULL_BEGIN, EVT_JOB_WORKER, 0, 80, 1);
    add(EVT_PULL_END, EVT_JOB_WORKER, 0, 90, 1);
    add(EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 90, 2);
    add(EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 120, 2);
    add(EVT_PUSH_BEGIN, EVT_JOB_WORKER, 0, 120, 2);
    add(EVT_PUSH_END, EVT_JOB_WORKER, 0, 130, 2);
    add(EVT_STEP_END, EVT_JOB_WORKER, 0, 130, 2);
    add(EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 130, 2);
    add(EVT_BARRIER_RELEASE, EVT_JOB_WORKER, 0, 160, 2);
    add(EVT_TASK_STOP, EVT_JOB_WORKER, 0, 170, 2);
    for (int s = 0; s < 2; s++) {
        long long t0 = 80 * s;
        add(EVT_PULL_BEGIN, EVT_JOB_WORKER, 1, t0, s);
        add(EVT_PULL_END, EVT_JOB_WORKER, 1, t0 + 10, s);
        add(EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, t0 + 10, s + 1);
        add(EVT_COMPUTE_END, EVT_JOB_WORKER, 1, t0 + 70, s + 1);
        add(EVT_PUSH_BEGIN, EVT_JOB_WORKER, 1, t0 + 70, s + 1);
        add(EVT_PUSH_END, EVT_JOB_WORKER, 1, t0 + 80, s + 1);
        add(EVT_STEP_END, EVT_JOB_WORKER, 1, t0 + 80, s + 1);
    }
    add(EVT_TASK_STOP, EVT_JOB_WORKER, 1, 175, 2);
    add(EVT_TASK_STOP, EVT_JOB_PS, 0, 175, 2);
}

/* Worker 1's pushes end last at both steps (80 and 160 against 50 and 130). */
static void test_sync(void)
{
    add_sync_run();
    const char *path = check_path(dir, "sync.dptrace");
    write_trace(path, "{\"engine\":\"real\",\"mode\":\"sync\"}");

    char *js = run_stats(path, 1);
    json_t *o = json_loads(js ? js : "", 0, NULL);
    json_t *pw = json_object_get(o, "per_worker");
    CHECK_MSG(json_array_size(pw) == 2, "two workers: %s", js);
    json_t *w0 = json_array_get(pw, 0), *w1 = json_array_get(pw, 1);
    CHECK(json_integer_value(json_object_get(w0, "steps")) == 2);
    CHECK_NEAR(json_real_value(json_object_get(w0, "time_s")), 0.170, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(w0, "mean_step_s")), 0.085, 1e-9);
    CHECK_NEAR(phase(w0, "computing"), 0.060, 1e-9);
    CHECK_NEAR(phase(w0, "pulling"), 0.020, 1e-9);
    CHECK_NEAR(phase(w0, "pushing"), 0.020, 1e-9);
    CHECK_NEAR(phase(w0, "barrier"), 0.060, 1e-9);
    CHECK_NEAR(phase(w0, "idle"), 0.010, 1e-9);
    CHECK_NEAR(phase(w0, "ssp_blocked") + phase(w0, "paced") + phase(w0, "dead"), 0, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(w1, "time_s")), 0.175, 1e-9);
    CHECK_NEAR(phase(w1, "computing"), 0.120, 1e-9);
    CHECK_NEAR(phase(w1, "barrier"), 0, 1e-12);
    CHECK_NEAR(phase(w1, "idle"), 0.015, 1e-9);
    json_t *slow = json_object_get(o, "slowest"), *busy = json_object_get(o, "most_computing");
    CHECK_MSG(json_integer_value(json_object_get(slow, "task")) == 1, "slowest: %s", js);
    CHECK_NEAR(json_real_value(json_object_get(slow, "mean_step_s")), 0.0875, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(slow, "median_step_s")), (0.085 + 0.0875) / 2, 1e-9);
    CHECK(json_integer_value(json_object_get(busy, "task")) == 1);
    CHECK_NEAR(json_real_value(json_object_get(busy, "computing_share")), 120.0 / 175, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(busy, "median_computing_share")),
               (60.0 / 170 + 120.0 / 175) / 2, 1e-9);
    json_t *last = json_object_get(o, "last_to_push");
    CHECK_MSG(json_integer_value(json_object_get(last, "task")) == 1 &&
                  json_integer_value(json_object_get(last, "steps")) == 2 &&
                  json_integer_value(json_object_get(last, "of")) == 2,
              "last to push: worker 1 at both steps: %s", js);
    CHECK(!strcmp(json_string_value(json_object_get(o, "mode")), "sync") &&
          json_integer_value(json_object_get(o, "workers")) == 2 &&
          json_integer_value(json_object_get(o, "ps")) == 1);
    json_decref(o);
    free(js);

    /* the text: the phases someone spent time in, one row each and "all" */
    char *txt = run_stats(path, 0);
    const char *t = txt ? txt : "";
    CHECK_MSG(strstr(t, "\nrun:      real, sync, 1 ps, 2 workers;"), "%s", t);
    CHECK_MSG(strstr(t, "\nworker     steps    mean step     computing       pulling       pushing"
                        "       barrier          idle\n"),
              "header: the five phases spent, no ssp wait, paced or dead column:\n%s", t);
    /* 60 / 170 = 35.29 %, 20 / 170 = 11.76 %, 60 / 170 again, 10 / 170 = 5.88 % */
    CHECK_MSG(strstr(t, "\n0              2     85.00 ms        35.3 %        11.8 %        11.8 %"
                        "        35.3 %         5.9 %\n"),
              "worker 0's row:\n%s", t);
    /* all: 4 steps in 345 ms; computing 180 / 345 = 52.2 %, barrier 60 / 345 = 17.4 % */
    CHECK_MSG(strstr(t, "\nall            4     86.25 ms        52.2 %        11.6 %        11.6 %"
                        "        17.4 %         7.2 %\n"),
              "the all row:\n%s", t);
    CHECK_MSG(strstr(t, "\nslowest step:    worker 1, 87.50 ms, 1.01x the median worker's 86.25 ms\n"),
              "%s", t);
    CHECK_MSG(strstr(t, "\nmost computing:  worker 1, 68.6 % of its time against the median worker's"
                        " 51.9 %\n"),
              "%s", t);
    CHECK_MSG(strstr(t, "\nlast to push:    worker 1 at 2 of 2 global steps (the gradients the barrier "
                        "waited for)\n"), "%s", t);
    free(txt);
    /* with a backup worker the barrier does not wait for the last: said so */
    add_sync_run();
    path = check_path(dir, "backup.dptrace");
    write_trace(path, "{\"engine\":\"real\",\"mode\":\"sync\",\"backup_workers\":1}");
    txt = run_stats(path, 0);
    CHECK_MSG(txt && strstr(txt, "\nlast to push:    worker 1 at 2 of 2 global steps (with 1 backup worker "
                               "the barrier did not wait for the last)\n"), "%s", txt);
    free(txt);
}

/* 40 async workers, worker w computing (w + 1) ms a step for 3 steps: the text lists the
 * 8 slowest (39 down to 32) and says so; a dead worker's time is its own phase. */
static void test_many(void)
{
    for (int w = 0; w < 40; w++) {
        add(EVT_TASK_START, EVT_JOB_WORKER, w, 0, 0);
        for (int s = 0; s < 3; s++) {
            add(EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w, (long long)s * (w + 1), s + 1);
            add(EVT_COMPUTE_END, EVT_JOB_WORKER, w, (long long)(s + 1) * (w + 1), s + 1);
            add(EVT_STEP_END, EVT_JOB_WORKER, w, (long long)(s + 1) * (w + 1), s + 1);
        }
        if (w != 0) add(EVT_TASK_STOP, EVT_JOB_WORKER, w, 3LL * (w + 1), 3);
    }
    /* worker 0 dies at 3 ms and is never back: dead until the trace's last event (120) */
    add(EVT_FAILURE, EVT_JOB_WORKER, 0, 3, 3);
    const char *path = check_path(dir, "many.dptrace");
    write_trace(path, "{\"engine\":\"sim\",\"config\":{\"mode\":\"async\"}}");
    char *txt = run_stats(path, 0);
    const char *t = txt ? txt : "";
    CHECK_MSG(strstr(t, "\nrun:      sim, async, 0 ps, 40 workers;"), "a simulated run's mode: %s", t);
    CHECK_MSG(strstr(t, "\n39             3     40.00 ms") && strstr(t, "\n32             3     33.00 ms") &&
                  !strstr(t, "\n31    ") && strstr(t, "\n... the 8 slowest of 40 workers (--json lists every one)\n"),
              "the 8 slowest, then a note:\n%s", t);
    CHECK_MSG(strstr(t, "          dead\n"), "a dead column: %s", t);
    free(txt);
    char *js = run_stats(path, 1);
    json_t *o = json_loads(js ? js : "", 0, NULL);
    json_t *w0 = json_array_get(json_object_get(o, "per_worker"), 0);
    CHECK_MSG(json_array_size(json_object_get(o, "per_worker")) == 40, "JSON lists all 40");
    CHECK_NEAR(phase(w0, "dead"), 0.117, 1e-9);
    CHECK_NEAR(phase(w0, "computing"), 0.003, 1e-9);
    CHECK(json_integer_value(json_object_get(json_object_get(o, "slowest"), "task")) == 39);
    CHECK_MSG(json_is_null(json_object_get(o, "last_to_push")), "async: no last to push: %s", js);
    json_decref(o);
    free(js);
}

static void test_bad(void)
{
    char err[DP_ERRLEN] = "";
    trace_tool_report rep;
    CHECK(trace_tool_stats(stdout, check_path(dir, "none.dptrace"), 0, &rep, err) != 0 &&
          strstr(err, "none.dptrace"));
    /* the metadata's engine and mode as printed: a control character as '?' */
    add(EVT_TASK_START, EVT_JOB_WORKER, 0, 0, 0);
    const char *mpath = check_path(dir, "meta.dptrace");
    write_trace(mpath, "{\"engine\":\"re\\u0007al x\",\"config\":{\"mode\":\"a\\u001bb c\"}}");
    char *mt = run_stats(mpath, 0);
    CHECK_MSG(mt && strstr(mt, "\nrun:      re?al x, a?b c, 0 ps, 1 workers;"), "%s", mt);
    free(mt);
    /* no worker at all: says so */
    add(EVT_TASK_START, EVT_JOB_PS, 0, 0, 0);
    const char *path = check_path(dir, "ps.dptrace");
    write_trace(path, "{}");
    char *txt = run_stats(path, 0);
    CHECK_MSG(txt && strstr(txt, "\nno worker events: nothing to break down\n"), "%s", txt);
    free(txt);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    test_sync();
    test_many();
    test_bad();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return CHECK_DONE();
}
