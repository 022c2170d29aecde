/* test_sim_eval.c — the chief's evaluations in the simulator (--eval-every, --eval-time),
 * against closed forms worked out by hand here, not by the code under test:
 *   sync, negligible network, W workers of constant compute C, S steps: the chief reads
 *     every global step g = 0 .. S - 1 and evaluates at each g that starts a new interval
 *     of E (g = E, 2E, ... < S; not at 0, where its first interval begins, as in
 *     runtime/worker.c), so the run takes S * C + floor((S - 1) / E) * T, and its trace
 *     has that many `eval` events, each from worker 0, of duration T, at those steps;
 *   on one shared core the others compute their step while the chief evaluates: all W
 *     share the core until their (W - 1) * C of work is done, at W * C, the evaluation
 *     having done C of its T; it ends alone, T - C later: it lasts T + (W - 1) * C and
 *     the chief's compute follows, so the run still takes S * C * W + floor((S - 1) / E) * T;
 *   --eval-time 0 or --eval-every 0: no evaluation, the very run without them;
 *   async: an evaluation holds the chief only: the other worker goes on;
 *   a restarted chief counts its intervals afresh, as a new process does: the interval
 *     it rejoins in has no evaluation;
 *   --calibrate-from measures T (the mean of the trace's evaluations) and reads E from
 *     the metadata; flags given win; a trace whose metadata does not say E (recorded
 *     before the runtime wrote it) gives the step of its first evaluation before the
 *     run's last step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/trace.h"
#include "sim/sim.h"
#include "tests/check.h"
#include "tests/sim_check.h"

#define MS 1000000LL  /* ns */

typedef struct evals {
    int n, other;       /* eval events of worker 0, of anyone else */
    int64_t dur[16], step[16];
    int64_t steps_of[2];  /* compute_end events of workers 0 and 1 */
} evals;

static int read_evals(const char *path, evals *out)
{
    char err[DP_ERRLEN];
    memset(out, 0, sizeof *out);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return -1;
    evt_record e;
    while (trace_reader_next(r, &e) == 1) {
        if (e.kind == EVT_COMPUTE_END && e.job == EVT_JOB_WORKER && e.task >= 0 && e.task < 2)
            out->steps_of[e.task]++;
        if (e.kind != EVT_EVAL) continue;
        if (e.job != EVT_JOB_WORKER || e.task != 0) {
            out->other++;
            continue;
        }
        if (out->n < 16) {
            out->dur[out->n] = e.dur;
            out->step[out->n] = e.step;
        }
        out->n++;
    }
    trace_reader_close(r);
    return 0;
}

/* sync, W workers, C = 10 ms, S = 100 steps, E = 30, T = 50 ms; cores 0: unlimited */
static void sync_case(const char *dir, int W, int cores)
{
    const double C = 0.010, T = 0.050;
    const int S = 100, E = 30;
    sim_config c;
    quiet_net(&c, W, C);
    c.steps = S;
    c.eval_every = E;
    c.eval_s = T;
    if (cores) {
        c.hosts.n = 1;
        c.cores_per_host = cores;
    }
    snprintf(c.trace, sizeof c.trace, "%s", check_path(dir, "eval.trace"));
    sim_result r;
    CHECK(run(&c, &r) == 0);
    int n_eval = (S - 1) / E;   /* 30, 60, 90 */
    double per_step = C * (cores && W > cores ? (double)W / cores : 1.0);
    double want = S * per_step + n_eval * T;
    CHECK_REL(r.sim_s, want, 1e-4);
    printf("sync, %d workers%s, C = 10 ms, 100 steps, an evaluation of 50 ms every 30: %.6f s, closed form "
           "%.6f s\n", W, cores ? " on 1 core" : "", r.sim_s, want);
    evals ev;
    CHECK(read_evals(c.trace, &ev) == 0);
    CHECK_MSG(ev.n == n_eval && ev.other == 0, "%d evaluations by the chief (want %d), %d by others", ev.n,
              n_eval, ev.other);
    int64_t dur = cores ? (50 + (W - 1) * 10) * MS : 50 * MS;   /* T + (W - 1) C on one core */
    for (int i = 0; i < ev.n && i < n_eval; i++)
        CHECK_MSG(ev.dur[i] == dur && ev.step[i] == (int64_t)(i + 1) * E,
                  "evaluation %d: %lld ns at step %lld", i, (long long)ev.dur[i], (long long)ev.step[i]);

    /* none: eval_s 0, or eval_every 0: the very run without them */
    sim_result none0, none1;
    c.trace[0] = 0;
    c.eval_s = 0;
    CHECK(run(&c, &none0) == 0);
    c.eval_s = T;
    c.eval_every = 0;
    CHECK(run(&c, &none1) == 0);
    CHECK_REL(none0.sim_s, S * per_step, 1e-4);
    CHECK(none0.sim_s == none1.sim_s && none0.sim_events == none1.sim_events &&
          none0.final_loss == none1.final_loss);
}

/* async, 2 workers of 10 ms a step, 200 steps, an evaluation of eval_s every 50, traced */
static void async_config(sim_config *c, double eval_s, const char *dir, const char *trace)
{
    quiet_net(c, 2, 0.010);
    c->mode = MODE_ASYNC;
    c->steps = 200;
    c->eval_every = 50;
    c->eval_s = eval_s;
    snprintf(c->trace, sizeof c->trace, "%s", check_path(dir, trace));
}

/* async, 2 workers: while the chief evaluates, worker 1 computes on */
static void async_case(const char *dir)
{
    sim_config c;
    async_config(&c, 0.100, dir, "eval-async.trace");   /* 10 of worker 1's steps each */
    sim_result r;
    CHECK(run(&c, &r) == 0);
    evals ev;
    CHECK(read_evals(c.trace, &ev) == 0);
    /* both at 10 ms a step until the chief's first evaluation at global step 50; then
     * worker 1 alone pushes 10 steps per evaluation: it does more than the chief */
    CHECK_MSG(ev.n >= 2 && ev.other == 0, "%d evaluations", ev.n);
    CHECK_MSG(ev.steps_of[1] >= ev.steps_of[0] + 10 * ev.n - 2,
              "async: worker 1 %lld steps, the chief %lld, %d evaluations of 10 steps' time",
              (long long)ev.steps_of[1], (long long)ev.steps_of[0], ev.n);
    printf("async, 2 workers, an evaluation of 100 ms every 50 steps: the chief %lld steps, worker 1 %lld, "
           "%d evaluations\n", (long long)ev.steps_of[0], (long long)ev.steps_of[1], ev.n);
}

/* async, 2 workers, E = 50: the chief dies at 0.2 s (global step about 40, before its
 * first evaluation) and restarts at 0.5 s (worker 1 alone has taken it to about 70): its
 * first pull reads a step of the interval [50, 100), where it starts counting, so its
 * first evaluation is at 100 or later, not at once. */
static void restart_case(const char *dir)
{
    sim_config c;
    async_config(&c, 0.020, dir, "eval-restart.trace");
    char err[DP_ERRLEN];
    CHECK(sim_config_set(&c, "fail", "worker:0@time=0.2s,restart=0.3s", "test", err) == 0);
    sim_result r;
    CHECK(run(&c, &r) == 0);
    evals ev;
    CHECK(read_evals(c.trace, &ev) == 0);
    CHECK_MSG(ev.n >= 1 && ev.step[0] >= 100, "restarted chief: %d evaluations, the first at step %lld", ev.n,
              (long long)(ev.n ? ev.step[0] : -1));
}

/* --calibrate-from: T from the trace's evaluations, E from its metadata; flags win */
static void calibration_case(const char *dir)
{
    sim_config c;
    quiet_net(&c, 2, 0.010);
    c.steps = 100;
    c.eval_every = 30;
    c.eval_s = 0.050;
    snprintf(c.trace, sizeof c.trace, "%s", check_path(dir, "eval-cal.trace"));
    sim_result r;
    CHECK(run(&c, &r) == 0);
    sim_calibration cal;
    char err[DP_ERRLEN];
    CHECK(sim_calibrate(c.trace, &cal, err) == 0);
    CHECK_MSG(fabs(cal.eval_s - 0.050) < 1e-9 && cal.eval_every == 30, "fitted %.9f s every %d", cal.eval_s,
              cal.eval_every);
    sim_options o;
    sim_options_init(&o);
    char *argv[] = {"sim", "--eval-every", "40"};
    CHECK(sim_options_parse(&o, 3, argv, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK_MSG(o.c.eval_every == 40 && fabs(o.c.eval_s - 0.050) < 1e-9, "options: every %d, %.9f s",
              o.c.eval_every, o.c.eval_s);
    sim_options_init(&o);
    sim_options_calibrate(&o, &cal);
    CHECK_MSG(o.c.eval_every == 30 && fabs(o.c.eval_s - 0.050) < 1e-9, "options: every %d, %.9f s",
              o.c.eval_every, o.c.eval_s);
    sim_calibration_release(&cal);
}

/* A trace recorded before the runtime wrote --eval-every into the metadata (lesson 12's
 * real 4-worker run, --eval-every 300, 1,200 steps): the interval is the step of its first
 * evaluation before the last step, and the time the mean of its evaluations, read here
 * from its eval events. */
static void inferred_case(void)
{
    const char *path = "scenarios/recorded/real-1ps-4w-sync-fashion-mnist.dptrace";
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    CHECK_MSG(r != NULL, "%s", err);
    if (!r) return;
    CHECK(strstr(trace_reader_metadata(r), "eval_every") == NULL);
    evt_record e;
    double sum = 0;
    int n = 0;
    int64_t first = -1;
    while (trace_reader_next(r, &e) == 1)
        if (e.kind == EVT_EVAL && e.dur > 0) {
            sum += (double)e.dur / 1e9;
            n++;
            if (first < 0) first = e.step;
        }
    trace_reader_close(r);
    CHECK(n == 4 && first == 300);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s", rc ? err : "");
    if (rc) return;
    CHECK_MSG(cal.eval_every == 300 && n > 0 && fabs(cal.eval_s - sum / n) < 1e-9, "inferred: every %d, %.9f s "
              "(the trace's mean %.9f s)", cal.eval_every, cal.eval_s, n ? sum / n : 0);
    sim_calibration_release(&cal);
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-eval.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    sync_case(dir, 2, 0);
    sync_case(dir, 3, 1);
    async_case(dir);
    restart_case(dir);
    unlink(check_path(dir, "eval-restart.trace"));
    calibration_case(dir);
    inferred_case();
    unlink(check_path(dir, "eval.trace"));
    unlink(check_path(dir, "eval-async.trace"));
    unlink(check_path(dir, "eval-cal.trace"));
    rmdir(dir);
    return CHECK_DONE();
}
