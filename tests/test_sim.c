/* test_sim.c — the simulator against closed forms (each within 2%), determinism, failures,
 * SSP, trace sampling and --calibrate-from round trips:
 *   sync, constant compute C, one ps, one worker: step = C + pull + push + token
 *     with pull = push = 2 latencies + M/B and token = 2 latencies (the step token goes
 *     alone, zero bytes, after the gradients' acks: one latency each way);
 *   sync, exponential compute (mean c), W workers, negligible network: step = c * H_W;
 *   with b backup workers, the first step's barrier = E[(W-b)-th order statistic of W
 *     exponentials] = c * (H_W - H_b) (averaged over independent seeds: later steps start
 *     late workers behind, see docs/simulator.md);
 *   one ps, W workers, M bytes each way, NIC bandwidth B, negligible compute:
 *     step = 2 W M / B (and never below);
 *   async, identical workers with random compute, negligible latency: staleness = W - 1;
 *     with --pipeline f the three gradients finished early (of four) are pushed after f
 *     of the compute: their windows are f as long, staleness (W - 1)(3f + 1) / 4;
 *   --pipeline's early pushes at f of the compute span, applied one latency later;
 *   --ps-latency Lp: the three round trips of a smallest sync step, 3 (L + Lp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "events/trace.h"
#include "sim/sim.h"
#include "tests/check.h"
#include "tests/sim_check.h"

static double harmonic(int n)
{
    double h = 0;
    for (int i = 1; i <= n; i++) h += 1.0 / i;
    return h;
}

static void test_step_closed_form(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 1;
    c.n_workers = 1;
    c.model_bytes = 10e6;
    c.steps = 50;
    sim_result r;
    CHECK(run(&c, &r) == 0);
    double M = r.model_bytes, B = c.ps_bw, L = c.latency;
    double expect = c.compute.mean + 2 * (2 * L + M / B) + 2 * L;
    CHECK_REL(r.mean_step_s, expect, 0.02);
    printf("step = C + pull + push + 2L: sim %.6f s  closed form %.6f s\n", r.mean_step_s, expect);
    /* the token's round trip alone, where it is most of the step: 1 byte, ~no compute */
    c.model_bytes = 1;
    c.compute.mean = 1e-9;
    c.latency = 1e-3;
    CHECK(run(&c, &r) == 0);
    CHECK_REL(r.mean_step_s, 6 * c.latency, 0.02);  /* pull 2L + push 2L + token 2L */
    CHECK(r.global_step == 50 && !r.stalled && r.dropped == 0);
    /* --ps-latency Lp: each of the three round trips is one message to the ps and one
     * back: 3 (L + Lp) */
    c.ps_latency = 0.2e-3;
    CHECK(run(&c, &r) == 0);
    CHECK_REL(r.mean_step_s, 3 * (c.latency + c.ps_latency), 0.02);
    printf("step = 3 (L + Lp):          sim %.6f s  closed form %.6f s\n", r.mean_step_s,
           3 * (c.latency + c.ps_latency));
}

static void test_exponential_barrier(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_workers = 16;
    c.compute.kind = SIM_DIST_EXPONENTIAL;
    c.compute.mean = 0.1;
    c.model_bytes = 1000;
    c.latency = 1e-7;
    c.steps = 4000;
    sim_result r;
    CHECK(run(&c, &r) == 0);
    CHECK_REL(r.mean_step_s, 0.1 * harmonic(16), 0.02);
    printf("exp barrier c*H_16:         sim %.6f s  closed form %.6f s\n", r.mean_step_s, 0.1 * harmonic(16));
}

static void test_backup_order_statistic(void)
{
    const int W = 16, b = 4, runs = 1500;
    sim_config c;
    sim_config_init(&c);
    c.n_workers = W;
    c.backup_workers = b;
    c.compute.kind = SIM_DIST_EXPONENTIAL;
    c.compute.mean = 0.1;
    c.model_bytes = 1000;
    c.latency = 1e-7;
    c.steps = 1;
    c.nqm_dims = 2;
    double sum = 0;
    int64_t dropped = 0;
    for (int i = 0; i < runs; i++) {
        c.seed = 1000 + (uint64_t)i;
        sim_result r;
        if (run(&c, &r)) break;
        sum += r.first_step_s;
        dropped += r.dropped;
    }
    CHECK_REL(sum / runs, 0.1 * (harmonic(W) - harmonic(b)), 0.02);
    printf("12th of 16 exp (b=4):       sim %.6f s  closed form %.6f s\n", sum / runs,
           0.1 * (harmonic(W) - harmonic(b)));
    CHECK(dropped > 0);  /* the late workers' gradients were dropped as stale */
    /* steady state with backups is faster than without */
    c.steps = 300;
    c.seed = 1;
    sim_result with, without;
    CHECK(run(&c, &with) == 0);
    c.backup_workers = 0;
    CHECK(run(&c, &without) == 0);
    CHECK(with.mean_step_s < without.mean_step_s);
}

/* Sync with backup workers: the step token goes only after every variable has taken the
 * step, so the global step never runs ahead of a variable (checked at every advance) and
 * every variable ends exactly at the global step, as the runtime's min_variable_step. */
static void test_backup_variables_at_global_step(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 2;
    c.n_workers = 4;
    c.backup_workers = 2;
    c.compute.kind = SIM_DIST_EXPONENTIAL;
    c.compute.mean = 0.1;
    c.steps = 200;
    for (int seed = 1; seed <= 5; seed++) {
        c.seed = (uint64_t)seed;
        sim_result r;
        CHECK(run(&c, &r) == 0);
        CHECK(!r.stalled && r.global_step == c.steps && r.dropped > 0);
        CHECK_MSG(r.gs_ahead == 0, "seed %d: %lld advances ran ahead of a variable", seed, (long long)r.gs_ahead);
        CHECK_MSG(r.min_variable_step == r.global_step && r.max_variable_step == r.global_step,
                  "seed %d: variables at %lld..%lld, global step %lld", seed, (long long)r.min_variable_step,
                  (long long)r.max_variable_step, (long long)r.global_step);
    }
}

static void test_bandwidth_bound(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 1;
    c.n_workers = 8;
    c.model_bytes = 10e6;
    c.ps_bw = c.worker_bw = 1e9 / 8;
    c.latency = 0;
    c.compute.mean = 1e-6;
    c.steps = 20;
    sim_result r;
    CHECK(run(&c, &r) == 0);
    double bound = 2.0 * c.n_workers * r.model_bytes / c.ps_bw;
    CHECK(r.mean_step_s >= bound * (1 - 1e-9));
    CHECK_REL(r.mean_step_s, bound, 0.02);
    printf("bandwidth bound 2WM/B:      sim %.6f s  closed form %.6f s\n", r.mean_step_s, bound);
    /* more ps split the load: 4 ps, balanced enough to be well under the 1-ps bound */
    c.n_ps = 4;
    c.partition = 4;
    CHECK(run(&c, &r) == 0);
    CHECK(r.mean_step_s < 0.5 * bound);
}

static void test_async_staleness(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_workers = 8;
    c.mode = MODE_ASYNC;
    c.compute.kind = SIM_DIST_EXPONENTIAL;
    c.compute.mean = 0.1;
    c.model_bytes = 1000;
    c.latency = 1e-6;
    c.steps = 8 * 4000;
    c.lr = 0.02;
    sim_result r;
    CHECK(run(&c, &r) == 0);
    CHECK_REL(r.mean_staleness, c.n_workers - 1.0, 0.02);
    printf("async staleness W-1:        sim %.4f    closed form %.4f\n", r.mean_staleness, c.n_workers - 1.0);
    CHECK(r.global_step >= c.steps);  /* pushes in flight still advance it */
    CHECK(r.final_loss < r.initial_loss);
    /* --pipeline f: the other workers' pushes of a variable come at rate (W - 1) / E[C],
     * independent of this one's; an early variable's window is f C, a late one's C */
    c.pipeline = 0.5;
    CHECK(run(&c, &r) == 0);
    double want = (c.n_workers - 1) * (3 * c.pipeline + 1) / 4;
    CHECK_REL(r.mean_staleness, want, 0.02);
    printf("pipelined staleness (W-1)(3f+1)/4: sim %.4f    closed form %.4f\n", r.mean_staleness, want);
    c.pipeline = 0;
    /* identical constant workers run in lockstep: staleness 0..W-1, mean (W-1)/2 */
    c.compute.kind = SIM_DIST_CONSTANT;
    c.steps = 8 * 100;
    CHECK(run(&c, &r) == 0);
    CHECK_REL(r.mean_staleness, (c.n_workers - 1) / 2.0, 0.02);
    printf("lockstep staleness (W-1)/2: sim %.4f    closed form %.4f\n", r.mean_staleness,
           (c.n_workers - 1) / 2.0);
}

/* Reads every event of a trace into a flat buffer of fields, strings resolved. */
static int trace_events(const char *path, char **out, size_t *len)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    evt_record e;
    while (trace_reader_next(r, &e) == 1) {
        char line[512];
        int k = snprintf(line, sizeof line, "%lld %u %u %d %d %s %s %s %lld %lld %lld %llu %.17g %.17g\n",
                         (long long)e.t, e.kind, e.job, e.task, e.peer, trace_reader_string(r, e.device),
                         trace_reader_string(r, e.var), e.kind == 1 ? "cfg" : trace_reader_string(r, e.str),
                         (long long)e.step, (long long)e.bytes, (long long)e.dur,
                         (unsigned long long)e.id, e.value, e.value2);
        if (n + (size_t)k + 1 > cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        memcpy(buf + n, line, (size_t)k);
        n += (size_t)k;
    }
    trace_reader_close(r);
    *out = buf;
    *len = n;
    return 0;
}

/* Runs `workers` async workers with constant 10 ms compute, 1 ms latency and 20 steps,
 * every event traced to path, and opens the trace (NULL, counted as a failure, when it
 * cannot). */
static trace_reader *run_async_traced(const char *path, int workers, double pipeline)
{
    sim_config c;
    sim_config_init(&c);
    c.n_workers = workers;
    c.mode = MODE_ASYNC;
    c.compute.kind = SIM_DIST_CONSTANT;
    c.compute.mean = 0.010;
    c.latency = 0.001;
    c.steps = 20;
    c.pipeline = pipeline;
    c.trace_level = 2;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result r;
    CHECK(run(&c, &r) == 0);
    char err[DP_ERRLEN];
    trace_reader *tr = trace_reader_open(path, err);
    CHECK(tr != NULL);
    return tr;
}

/* --pipeline: in the trace, every compute span [t0, t1] of worker k holds its early
 * pushes (every trainable variable but hidden/weights) at t0 + f (t1 - t0), the ps applies
 * them one latency later, and hidden/weights goes at t1; without it nothing is pushed
 * inside a span. Two async workers, constant compute. */
static void test_pipeline_trace(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pipe.trace", dir);
    for (int on = 0; on < 2; on++) {
        trace_reader *tr = run_async_traced(path, 2, on ? 0.25 : 0);
        if (!tr) return;
        int64_t t0[2] = {-1, -1}, mid[2] = {-1, -1};
        int spans = 0, early = 0, early_ok = 1, applies = 0, apply_ok = 1, late_ok = 1, dev_bad = 0;
        evt_record e;
        while (trace_reader_next(tr, &e) == 1) {
            const char *v = trace_reader_string(tr, e.var);
            if (e.kind == EVT_APPLY && e.job == EVT_JOB_PS && strcmp(v, "hidden/weights") && strcmp(v, "global_step") &&
                mid[e.peer & 1] >= 0) {
                applies++;
                apply_ok &= e.t == mid[e.peer & 1] + 1000000;
            }
            if (e.job != EVT_JOB_WORKER || e.task < 0 || e.task > 1) continue;
            int k = e.task;
            if (e.kind == EVT_COMPUTE_BEGIN || e.kind == EVT_COMPUTE_END) {   /* on the worker's device */
                char want[96];
                snprintf(want, sizeof want, "/job:worker/replica:0/task:%d/device:CPU:0", k);
                const char *dev = trace_reader_string(tr, e.device);
                dev_bad += !dev || strcmp(dev, want) != 0;
            }
            if (e.kind == EVT_COMPUTE_BEGIN) t0[k] = e.t, mid[k] = -1;
            if (e.kind == EVT_COMPUTE_END && t0[k] >= 0) {
                spans++;
                t0[k] = -1;
            }
            if (e.kind == EVT_PUSH_BEGIN && t0[k] >= 0) {
                early++;
                mid[k] = e.t;
                early_ok &= e.t == t0[k] + 2500000 && strcmp(v, "hidden/weights") != 0;
            }
            if (e.kind == EVT_PUSH_BEGIN && t0[k] < 0 && !strcmp(v, "hidden/weights") && on) late_ok &= mid[k] >= 0;
        }
        trace_reader_close(tr);
        CHECK_MSG(dev_bad == 0, "every compute begin and end names its worker's CPU:0 (%d do not)", dev_bad);
        if (on) {
            CHECK_MSG(spans >= 20 && early == 3 * spans && early_ok, "--pipeline 0.25: %d spans, %d early pushes (%s)",
                      spans, early, early_ok ? "each at 2.5 ms" : "some elsewhere");
            CHECK_MSG(applies >= 3 * spans - 6 && apply_ok, "--pipeline: %d early applies, %s", applies,
                      apply_ok ? "each one latency after its push" : "some not one latency after");
            CHECK(late_ok);
        } else {
            CHECK_MSG(spans >= 20 && early == 0, "no --pipeline: %d spans, %d pushes inside them", spans, early);
        }
        unlink(path);
    }
}

/* The ps's APPLY events, as the runtime writes them: one per gradient (never for the
 * global-step token, whose push only advances the clock), each carrying the staleness it
 * was applied at. Four identical constant workers run in lockstep, so the applies'
 * staleness averages (W - 1) / 2 (test_async_staleness) and ranges over 0..W-1. */
static void test_apply_events(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/apply.trace", dir);
    const int W = 4;
    trace_reader *tr = run_async_traced(path, W, 0);
    if (!tr) return;
    int token = 0, applies = 0, in_range = 1;
    double sum = 0;
    evt_record e;
    while (trace_reader_next(tr, &e) == 1) {
        if (e.kind != EVT_APPLY) continue;
        if (!strcmp(trace_reader_string(tr, e.var), "global_step")) {
            token++;
            continue;
        }
        applies++;
        sum += e.value;
        in_range &= e.value >= 0 && e.value <= W - 1 && e.value == floor(e.value);
    }
    trace_reader_close(tr);
    CHECK_MSG(token == 0, "%d APPLY events for the global-step token", token);
    CHECK_MSG(applies >= 4 * 20, "%d APPLY events for 20 steps of 4 gradients", applies);
    CHECK_MSG(in_range, "every APPLY's staleness a whole number in 0..%d", W - 1);
    CHECK_MSG(applies > 0 && fabs(sum / applies - (W - 1) / 2.0) <= 0.1 * (W - 1) / 2.0,
              "APPLY staleness mean %.4f, lockstep closed form %.4f", applies ? sum / applies : 0, (W - 1) / 2.0);
    unlink(path);
}

/* Async: a step's pushes are applied in the runtime's order (send_step_pushes), the
 * gradients and then global_step's push, so each advance of the global step comes after
 * the apply of hidden/weights' gradient of the same version (both at one instant here). */
static void test_clock_after_grads(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/clock.trace", dir);
    trace_reader *tr = run_async_traced(path, 1, 0);
    if (!tr) return;
    int64_t hw = -1;
    int advances = 0, after = 0;
    evt_record e;
    while (trace_reader_next(tr, &e) == 1) {
        if (e.kind == EVT_APPLY && e.job == EVT_JOB_PS && !strcmp(trace_reader_string(tr, e.var), "hidden/weights"))
            hw = e.step;
        if (e.kind == EVT_GLOBAL_STEP) {
            advances++;
            after += hw == e.step;
        }
    }
    trace_reader_close(tr);
    CHECK_MSG(advances >= 20 && after == advances, "async: %d of %d global steps advanced after their hidden/weights apply",
              after, advances);
    unlink(path);
}

/* 1 when traces a and b hold the same events (at least one), 0 when they differ, -1
 * when one cannot be read. */
static int same_events(const char *a, const char *b)
{
    char *ea = NULL, *eb = NULL;
    size_t la = 0, lb = 0;
    int rc = trace_events(a, &ea, &la) || trace_events(b, &eb, &lb) ? -1
             : la == lb && la > 0 && memcmp(ea, eb, la) == 0;
    free(ea);
    free(eb);
    return rc;
}

static void test_determinism(const char *dir)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a.trace", dir);
    snprintf(b, sizeof b, "%s/b.trace", dir);
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 2;
    c.n_workers = 6;
    c.backup_workers = 1;
    c.compute.kind = SIM_DIST_LOGNORMAL;
    c.compute.sigma = 0.5;
    c.steps = 30;
    c.stragglers[c.n_stragglers++] = (run_straggler){2, 3};
    snprintf(c.trace, sizeof c.trace, "%s", a);
    sim_result r1, r2;
    CHECK(run(&c, &r1) == 0);
    snprintf(c.trace, sizeof c.trace, "%s", b);
    CHECK(run(&c, &r2) == 0);
    CHECK(same_events(a, b) == 1);
    CHECK(r1.trace_events == r2.trace_events && r1.trace_events > 1000);
    c.seed = 2;
    CHECK(run(&c, &r2) == 0);
    CHECK(same_events(a, b) == 0);
    /* sampled traces keep every worker's phases (one event pair each) and step_end,
     * per-message events only for a few: several times smaller than full */
    c.n_workers = 200;
    c.backup_workers = 0;
    c.trace_level = SIM_TRACE_SAMPLE;
    c.trace_sample = 4;
    c.steps = 5;
    CHECK(run(&c, &r1) == 0);
    c.trace_level = SIM_TRACE_FULL;
    CHECK(run(&c, &r2) == 0);
    CHECK_MSG(r1.trace_events * 2 < r2.trace_events, "sample %llu vs full %llu", (unsigned long long)r1.trace_events, (unsigned long long)r2.trace_events);
    CHECK(r1.global_step == r2.global_step && r1.mean_step_s == r2.mean_step_s);
    unlink(a);
    unlink(b);
}

/* The exact shortcuts (twin ps classes sharing flow groups and, in sync, one
 * accumulator; delivery runs) against the plain simulation: the same trace, event for
 * event, and the same summary, on configurations where they are in use. */
static void test_shortcuts_exact(const char *dir)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/sa.trace", dir);
    snprintf(b, sizeof b, "%s/sb.trace", dir);
    struct {
        int ps, workers, backups, steps, dist, mode, level;
        double model_bytes, worker_bw;
        int fail_worker, fail_step, restart;
    } cases[] = {
        {6, 24, 3, 10, SIM_DIST_EXPONENTIAL, MODE_SYNC, SIM_TRACE_FULL, 12e6, 0, 5, 3, 1},
        {10, 64, 8, 6, SIM_DIST_LOGNORMAL, MODE_SYNC, SIM_TRACE_FULL, 10e6, 0, -1, 0, 0},
        {8, 32, 4, 8, SIM_DIST_CONSTANT, MODE_SYNC, SIM_TRACE_FULL, 10e6, 0, 2, 2, 0},
        {10, 300, 0, 4, SIM_DIST_EXPONENTIAL, MODE_SYNC, SIM_TRACE_SAMPLE, 10e6, 25e6, -1, 0, 0},
        {7, 40, 0, 12, SIM_DIST_EXPONENTIAL, MODE_ASYNC, SIM_TRACE_FULL, 7e6, 0, 4, 3, 1},
        /* pushes 1 ns apart on slow ps links: several cohorts finish at one advance */
        {4, 8, 1, 6, SIM_DIST_CONSTANT, MODE_SYNC, SIM_TRACE_FULL, 8e6, 0, -1, 0, 0},
    };
    double speed[8];
    for (int k = 0; k < 8; k++) speed[k] = 1 + 1e-8 * k;
    int locked = 0;
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        sim_config c;
        sim_config_init(&c);
        c.n_ps = cases[i].ps;
        c.n_workers = cases[i].workers;
        c.backup_workers = cases[i].backups;
        c.steps = cases[i].steps;
        c.compute.kind = (sim_dist_kind)cases[i].dist;
        c.compute.mean = 0.03;
        c.compute.sigma = 1;
        c.mode = (update_mode)cases[i].mode;
        c.trace_level = cases[i].level;
        c.model_bytes = cases[i].model_bytes;
        if (cases[i].worker_bw > 0) c.worker_bw = cases[i].worker_bw;
        if (i == DP_ARRAY_LEN(cases) - 1) {
            c.speed = speed;
            c.ps_bw = 100e6 / 8;
        }
        c.seed = 50 + i;
        if (cases[i].fail_worker >= 0)
            c.failures[c.n_failures++] = (sim_failure){JOB_WORKER, cases[i].fail_worker, cases[i].fail_step, -1,
                                                       cases[i].restart ? 0.3 : -1};
        sim_result r1, r2;
        snprintf(c.trace, sizeof c.trace, "%s", a);
        CHECK(run(&c, &r1) == 0);
        c.no_shortcuts = 1;
        snprintf(c.trace, sizeof c.trace, "%s", b);
        CHECK(run(&c, &r2) == 0);
        CHECK_MSG(same_events(a, b) == 1, "case %zu: traces differ", i);
        CHECK_MSG(r1.sim_s == r2.sim_s && r1.final_loss == r2.final_loss && r1.dropped == r2.dropped &&
                  r1.applies == r2.applies && r1.sim_events == r2.sim_events &&
                  r1.net_solves == r2.net_solves && r1.global_step == r2.global_step,
                  "case %zu: summaries differ (%.9g vs %.9g s)", i, r1.sim_s, r2.sim_s);
        locked += r1.locks > 0 && r1.dropped > 0;  /* shared verdicts replayed, drops too */
    }
    CHECK_MSG(locked >= 2, "only %d cases with shared accumulators and drops", locked);
    unlink(a);
    unlink(b);
}

static void test_failures_and_ssp(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_workers = 4;
    c.steps = 40;
    char err[DP_ERRLEN];
    CHECK(sim_parse_failure("worker:1@step=10", &c.failures[c.n_failures++], err) == 0);
    sim_result r;
    CHECK(run(&c, &r) == 0);
    CHECK(r.stalled && r.global_step == 10);   /* sync without backups waits forever */
    c.backup_workers = 1;
    CHECK(run(&c, &r) == 0);
    CHECK(!r.stalled && r.global_step == 40);  /* a backup worker covers for it */
    c.backup_workers = 0;
    CHECK(sim_parse_failure("worker:1@step=10,restart=1s", &c.failures[0], err) == 0);
    CHECK(run(&c, &r) == 0);
    CHECK(!r.stalled && r.global_step == 40 && r.sim_s > 1.0);
    CHECK(sim_parse_failure("ps:0@t=1s,restart=2s", &c.failures[0], err) == 0);
    sim_result r0;
    c.n_failures = 0;
    CHECK(run(&c, &r0) == 0);
    c.n_failures = 1;
    CHECK(run(&c, &r) == 0);
    CHECK(!r.stalled && r.sim_s > r0.sim_s + 1.9);
    /* ssp: a 4x straggler; the others run ahead by at most the bound */
    sim_config s;
    sim_config_init(&s);
    s.n_workers = 4;
    s.mode = MODE_SSP;
    s.staleness = 2;
    s.steps = 200;
    s.stragglers[s.n_stragglers++] = (run_straggler){0, 4};
    CHECK(run(&s, &r) == 0);
    CHECK(r.global_step >= 200 && r.max_staleness > 0);
    s.mode = MODE_ASYNC;
    sim_result ra;
    CHECK(run(&s, &ra) == 0);
    CHECK(ra.sim_s < r.sim_s);  /* async never waits for the straggler */
    /* ssp: a worker lost for good leaves the gate, as on the runtime's ps: the others
     * finish the run (it held them at the bound, stalled, before) */
    s.mode = MODE_SSP;
    s.n_stragglers = 0;
    CHECK(sim_parse_failure("worker:1@step=10", &s.failures[s.n_failures++], err) == 0);
    CHECK(run(&s, &r) == 0);
    CHECK_MSG(!r.stalled && r.global_step >= 200, "ssp, a worker lost at its step 10: the others finish "
              "(stalled %d, global step %lld)", r.stalled, (long long)r.global_step);
}

static void test_calibration_roundtrip(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cal.trace", dir);
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 1;
    c.n_workers = 4;
    c.compute.kind = SIM_DIST_LOGNORMAL;
    c.compute.mean = 0.05;
    c.compute.sigma = 0.3;
    c.model_bytes = 4e6;
    c.ps_bw = c.worker_bw = 1e9 / 8;
    c.latency = 200e-6;
    c.steps = 200;
    c.stragglers[c.n_stragglers++] = (run_straggler){3, 2};
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result truth;
    CHECK(run(&c, &truth) == 0);
    sim_calibration cal;
    char err[DP_ERRLEN];
    CHECK(sim_calibrate(path, &cal, err) == 0);
    CHECK(cal.n_ps == 1 && cal.n_workers == 4 && cal.mode == MODE_SYNC);
    CHECK_REL(cal.compute.mean, 0.05, 0.05);
    /* the straggler (metadata) is taken out of its compute, to be slowed again */
    CHECK(cal.n_speed == 4 && fabs(cal.speed[3] - 1) < 0.1);
    CHECK(cal.n_stragglers == 1 && cal.stragglers[0].worker == 3 && cal.stragglers[0].factor == 2);
    CHECK_REL(cal.mean_step_s, truth.mean_step_s, 1e-6);
    sim_config p;
    sim_config_init(&p);
    p.n_ps = cal.n_ps;
    p.n_workers = cal.n_workers;
    p.compute = cal.compute;
    p.speed = cal.speed;
    memcpy(p.stragglers, cal.stragglers, sizeof p.stragglers);
    p.n_stragglers = cal.n_stragglers;
    p.ps_bw = p.worker_bw = cal.bandwidth;
    p.latency = cal.latency;
    p.model_bytes = cal.model_bytes;
    p.steps = 200;
    p.seed = 7;
    sim_result pred;
    CHECK(run(&p, &pred) == 0);
    CHECK_REL(pred.mean_step_s, truth.mean_step_s, 0.05);
    sim_calibration_release(&cal);
    CHECK(sim_calibrate("/nonexistent.trace", &cal, err) == DP_EINVAL && strstr(err, "--calibrate-from"));
    unlink(path);
}

/* --calibrate-from on recorded real runs (tests/data, recorded with `downpour cluster
 * --data synthetic --trace`): the simulated mean step is within 10% of the measured one. */
static void test_against_real(void)
{
    static const char *const traces[] = {
        "tests/data/real_sync_1ps_2w.trace",       /* 1 ps, 2 workers, sync, 300 steps */
        "tests/data/real_async_2ps_4w.trace",      /* 2 ps, 4 workers, async, 600 steps */
        "tests/data/real_sync_1ps_4w_slow.trace",  /* 1 ps, 4 workers, sync, worker 3 3x slower */
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(traces); i++) {
        sim_calibration cal;
        char err[DP_ERRLEN];
        int rc = sim_calibrate(traces[i], &cal, err);
        CHECK_MSG(rc == 0, "%s: %s", traces[i], err);
        if (rc) continue;
        sim_config c;
        sim_config_init(&c);
        c.n_ps = cal.n_ps;
        c.n_workers = cal.n_workers;
        c.mode = (update_mode)cal.mode;
        c.steps = cal.steps;
        c.compute = cal.compute;
        c.speed = cal.n_speed == cal.n_workers ? cal.speed : NULL;
        c.ps_bw = c.worker_bw = cal.bandwidth;
        c.ps_push_bw = c.worker_push_bw = cal.push_bandwidth;
        c.latency = cal.latency;
        CHECK(model_parse(cal.model, &c.model) == 0);
        c.hidden = cal.hidden;
        c.partition = cal.partition;
        sim_result r;
        CHECK(run(&c, &r) == 0);
        CHECK(cal.mean_step_s > 0);
        CHECK_REL(r.mean_step_s, cal.mean_step_s, 0.10);
        printf("%-40s real %.6f s  sim %.6f s  (%+.1f%%)\n", traces[i], cal.mean_step_s, r.mean_step_s,
               100 * (r.mean_step_s / cal.mean_step_s - 1));
        sim_calibration_release(&cal);
    }
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_step_closed_form();
    test_exponential_barrier();
    test_backup_order_statistic();
    test_backup_variables_at_global_step();
    test_bandwidth_bound();
    test_async_staleness();
    test_pipeline_trace(dir);
    test_clock_after_grads(dir);
    test_apply_events(dir);
    test_determinism(dir);
    test_shortcuts_exact(dir);
    test_failures_and_ssp();
    test_calibration_roundtrip(dir);
    test_against_real();
    rmdir(dir);
    return CHECK_DONE();
}
