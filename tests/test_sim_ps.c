/* test_sim_ps.c — the ps's own work (sim/psq.c, --ps-pull-cost, --ps-push-cost) against
 * closed forms worked out by hand here, on clusters whose network costs nothing (no
 * latency, 10^18 B/s) and whose model is softmax (global_step, weights, biases, all on
 * the one ps):
 *   async, W pushes arriving together at one ps whose push costs A each (3 messages of
 *     A/3): the ps applies them one after another, at A, 2A, ..., WA after they came
 *     (its APPLY events and the workers' acks then), in worker order;
 *   sync, constant compute C: push cost a per message (2 gradients, then the token alone)
 *     gives step = C + 3aW (the W pushes, then the W tokens, one at a time); pull cost p
 *     per message (3 per answer) gives step = C + 3pW (the last answer comes 3pW after
 *     the requests, then that worker computes);
 *   on shared cores: one core for the ps and 2 workers, pull cost 3p per answer: worker
 *     0's answer alone (3p), worker 1's while worker 0 computes, at half speed (6p, so
 *     9p after its request), then both computing at half speed: step = 2C + 6p; without
 *     cores C + 6p; the ps and worker 0 on one core, worker 1 alone: step = C + 9p;
 *   defaults: cost 0 is today's model (the very same run); failures with queued work;
 *   --calibrate-from a simulated trace with ps costs, with --ps-*-cost fit, reproduces its
 *     mean step (the fitted costs within 1-35%: see the checks); without, the model is off;
 *   parsing and messages of T[,BW]. */
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

/* One ps, W workers, softmax, constant compute C, a network that costs nothing. */
static void quiet(sim_config *c, int workers, double C, int mode)
{
    sim_config_init(c);
    c->n_ps = 1;
    c->n_workers = workers;
    c->mode = (update_mode)mode;
    c->steps = 20;
    c->model = MODEL_SOFTMAX;
    c->compute = (sim_dist){SIM_DIST_CONSTANT, C, 0, 0};
    c->latency = 0;
    c->ps_bw = c->worker_bw = 1e18;
}

/* The first n events of `kind` from job/task (task -1: any) whose var is the softmax
 * weights (var_sid 0: any): their times into t (and tasks into who). Returns how many. */
static int times_of(const char *path, int kind, int job, int task, int64_t *t, int *who, int n)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return -1;
    evt_record e;
    int m = 0;
    uint32_t weights = 0;
    while (trace_reader_next(r, &e) == 1 && m < n) {
        if (e.kind == EVT_VAR_DEFINE && !weights) {
            const char *name = trace_reader_string(r, e.var);
            if (name && !strcmp(name, "softmax/weights")) weights = e.var;
        }
        if (e.kind != kind || e.job != job || (task >= 0 && e.task != task)) continue;
        if (kind == EVT_APPLY || kind == EVT_PUSH_END || kind == EVT_PULL_END || kind == EVT_PULL_BEGIN)
            if (!weights || e.var != weights) continue;
        if (who) who[m] = job == EVT_JOB_PS ? e.peer : e.task;
        t[m++] = e.t;
    }
    trace_reader_close(r);
    return m;
}

static void test_fifo_applies(const char *dir)
{
    const char *path = check_path(dir, "fifo.trace");
    const int W = 4;
    const int64_t A = 3 * MS;  /* a push: 3 messages of 1 ms */
    sim_config c;
    quiet(&c, W, 0.010, MODE_ASYNC);
    c.steps = W;  /* each worker's first push */
    c.ps_push_cost = (sim_ps_cost){0.001, 0, 0};
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result r;
    CHECK(run(&c, &r) == 0);
    int64_t ap[8], ce[8], ack[8];
    int who[8];
    int n = times_of(path, EVT_APPLY, EVT_JOB_PS, 0, ap, who, W);
    int nc = times_of(path, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, ce, NULL, 1);
    CHECK_MSG(n == W && nc == 1, "%d applies, %d compute ends", n, nc);
    if (n != W || nc != 1) return;
    /* the pushes came when the computes ended (+ a ns of transfer): applied at A, 2A, .. */
    int ok = 1;
    for (int i = 0; i < W; i++) {
        int64_t since = ap[i] - ce[0];
        ok &= who[i] == i && since >= (i + 1) * A && since <= (i + 1) * A + 10;
        if (i) ok &= ap[i] - ap[i - 1] == A;
    }
    CHECK_MSG(ok, "applies %lld %lld %lld %lld ns after the pushes came (want 3, 6, 9, 12 ms), workers %d %d %d %d",
              (long long)(ap[0] - ce[0]), (long long)(ap[1] - ce[0]), (long long)(ap[2] - ce[0]),
              (long long)(ap[3] - ce[0]), who[0], who[1], who[2], who[3]);
    /* each worker's ack leaves with its apply (no latency) */
    for (int i = 0; i < W; i++) {
        int m = times_of(path, EVT_PUSH_END, EVT_JOB_WORKER, i, ack, NULL, 1);
        CHECK_MSG(m == 1 && ack[0] == ap[i], "worker %d: ack at %lld, apply at %lld", i, (long long)(m ? ack[0] : 0),
                  (long long)ap[i]);
    }
    unlink(path);
}

static void test_sync_steps(void)
{
    const double C = 0.010;
    for (int W = 1; W <= 4; W++) {
        sim_config c;
        sim_result r, plain;
        quiet(&c, W, C, MODE_SYNC);
        CHECK(run(&c, &plain) == 0);
        c.ps_push_cost = (sim_ps_cost){0.001, 0, 0};
        CHECK(run(&c, &r) == 0);
        /* the network's ~ns per transfer aside: C, then W pushes (2 ms) and W tokens (1 ms) */
        CHECK_REL(r.mean_step_s, plain.mean_step_s + 3 * 0.001 * W, 1e-5);
        CHECK_REL(r.mean_step_s, C + 3 * 0.001 * W, 1e-5);
        printf("sync, %d workers, push cost 1 ms per message: step %.6f s, closed form %.6f s\n", W,
               r.mean_step_s, C + 0.003 * W);
        quiet(&c, W, C, MODE_SYNC);
        c.ps_pull_cost = (sim_ps_cost){0.0005, 0, 0};
        CHECK(run(&c, &r) == 0);
        CHECK_REL(r.mean_step_s, C + 3 * 0.0005 * W, 1e-5);
        /* the same by bytes: softmax's 31400 bytes at 31.4 MB/s are 1 ms */
        quiet(&c, W, C, MODE_SYNC);
        c.ps_pull_cost = (sim_ps_cost){0, 31.4e6, 0};
        CHECK(run(&c, &r) == 0);
        CHECK_REL(r.mean_step_s, C + 0.001 * W, 1e-5);
    }
}

static void test_shared_core(const char *dir)
{
    const char *path = check_path(dir, "core.trace");
    const double C = 0.010, p = 0.001;  /* an answer: 3 messages of p */
    char err[DP_ERRLEN];
    sim_config c;
    quiet(&c, 2, C, MODE_SYNC);
    c.ps_pull_cost = (sim_ps_cost){p, 0, 0};
    sim_result alone, shared;
    CHECK(run(&c, &alone) == 0);
    CHECK_REL(alone.mean_step_s, C + 6 * p, 1e-5);
    CHECK(sim_parse_hosts("1", &c.hosts, err) == 0);
    c.cores_per_host = 1;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    CHECK(run(&c, &shared) == 0);
    CHECK_REL(shared.mean_step_s, 2 * C + 6 * p, 1e-5);
    printf("a ps and 2 workers on one core, pull 3 ms: step %.6f s (closed form %.6f), alone %.6f s (%.6f)\n",
           shared.mean_step_s, 2 * C + 6 * p, alone.mean_step_s, C + 6 * p);
    /* worker 1's answer, served while worker 0 computes: 3 ms alone, then 3 ms of work at
     * half speed; worker 0's, first, 3 ms */
    int64_t b1[4], e1[4], e0[4], b0[4];
    int n = times_of(path, EVT_PULL_END, EVT_JOB_WORKER, 1, e1, NULL, 4);
    int m = times_of(path, EVT_PULL_END, EVT_JOB_WORKER, 0, e0, NULL, 4);
    int k = times_of(path, EVT_PULL_BEGIN, EVT_JOB_WORKER, 1, b1, NULL, 4);
    int q = times_of(path, EVT_PULL_BEGIN, EVT_JOB_WORKER, 0, b0, NULL, 4);
    CHECK(n == 4 && m == 4 && k == 4 && q == 4);
    int ok = n == 4 && m == 4 && k == 4 && q == 4;
    for (int i = 0; ok && i < 4; i++)
        ok &= llabs(e1[i] - b1[i] - 9 * MS) <= 10 && llabs(e0[i] - b0[i] - 3 * MS) <= 10;
    CHECK_MSG(ok, "pulls: worker 0 %lld ns, worker 1 %lld ns (want 3 and 9 ms)", (long long)(e0[0] - b0[0]),
              (long long)(e1[0] - b1[0]));
    unlink(path);
    /* the ps alone crowds its host: ps and worker 0 on one core, worker 1 on a host of its
     * own; worker 1's answer at 3p + 6p (half speed beside worker 0), its compute alone:
     * step 9p + C (worker 0 ends earlier, at 6p + C) */
    quiet(&c, 2, C, MODE_SYNC);
    c.ps_pull_cost = (sim_ps_cost){p, 0, 0};
    CHECK(sim_parse_hosts("2,ps:0=0,worker:0=0,worker:1=1", &c.hosts, err) == 0);
    c.cores_per_host = 1;
    CHECK(run(&c, &shared) == 0);
    CHECK_REL(shared.mean_step_s, C + 9 * p, 1e-5);
}

/* Cost 0 is the model off: the very same run; a cost only where it matters changes it. */
static void test_defaults_and_failures(void)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 6;
    c.n_workers = 24;
    c.steps = 30;
    c.model_bytes = 12e6;
    c.backup_workers = 3;
    c.compute = (sim_dist){SIM_DIST_EXPONENTIAL, 0.020, 0, 0};
    sim_result a, b;
    CHECK(run(&c, &a) == 0);
    c.ps_pull_cost = c.ps_push_cost = (sim_ps_cost){0, 0, 0};
    CHECK(run(&c, &b) == 0);
    CHECK(a.mean_step_s == b.mean_step_s && a.sim_events == b.sim_events && a.final_loss == b.final_loss &&
          a.locks > 0);
    /* with the ps's work: no twins, no locks; the run ends with every variable at the step */
    c.ps_pull_cost = (sim_ps_cost){20e-6, 2e9, 0};
    c.ps_push_cost = (sim_ps_cost){30e-6, 1e9, 0};
    CHECK(run(&c, &b) == 0);
    CHECK(b.locks == 0 && b.global_step == 30 && !b.stalled && b.min_variable_step == 30 &&
          b.max_variable_step == 30 && b.gs_ahead == 0 && b.mean_step_s > a.mean_step_s);
    /* the shortcuts that are left (delivery runs) change nothing */
    sim_result d;
    c.no_shortcuts = 1;
    CHECK(run(&c, &d) == 0);
    c.no_shortcuts = 0;
    CHECK(d.mean_step_s == b.mean_step_s && d.sim_events == b.sim_events && d.final_loss == b.final_loss);
    /* a worker and a ps failing with work queued, and coming back */
    char err[DP_ERRLEN];
    CHECK(sim_parse_failure("worker:3@step=5,restart=30ms", &c.failures[c.n_failures++], err) == 0);
    CHECK(sim_parse_failure("ps:1@step=10,restart=50ms", &c.failures[c.n_failures++], err) == 0);
    c.hosts.n = 2;
    c.cores_per_host = 2;
    CHECK(run(&c, &b) == 0);
    CHECK_MSG(b.global_step == 30 && !b.stalled && b.min_variable_step == 30, "global step %lld stalled %d",
              (long long)b.global_step, b.stalled);
    c.mode = MODE_ASYNC;
    c.backup_workers = 0;
    c.steps = 300;
    CHECK(run(&c, &b) == 0);
    CHECK(b.global_step >= 300 && !b.stalled);
}

/* A trace simulated with ps costs calibrates to a run with the same mean step. */
static void test_calibration(const char *dir)
{
    const char *path = check_path(dir, "cal.trace");
    char err[DP_ERRLEN];
    for (int mode = 0; mode < 2; mode++) {
        sim_config c;
        sim_config_init(&c);
        c.n_ps = 1;
        c.n_workers = 4;
        c.mode = mode ? MODE_ASYNC : MODE_SYNC;
        c.steps = 400;
        c.hidden = 512;
        CHECK(sim_parse_dist("lognormal:mean=5ms,sigma=0.3", &c.compute, err) == 0);
        c.ps_bw = c.worker_bw = 10e9 / 8;
        c.latency = 50e-6;
        c.ps_pull_cost = (sim_ps_cost){50e-6, 500e6, 0};
        c.ps_push_cost = (sim_ps_cost){30e-6, 1e9, 0};
        snprintf(c.trace, sizeof c.trace, "%s", path);
        sim_result truth, pred, off;
        CHECK(run(&c, &truth) == 0);
        sim_calibration cal;
        int rc = sim_calibrate(path, &cal, err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc) continue;
        /* a job's messages end together (one flow), so its cost is checked whole: the gaps
         * between answers are exact in sync (answers never overtake acks), less so in async */
        double bytes = cal.model_bytes;
        CHECK_REL(sim_ps_cost_s(&cal.ps_pull_cost, 5, bytes), sim_ps_cost_s(&c.ps_pull_cost, 5, bytes),
                  mode ? 0.2 : 0.01);
        /* a push's bytes cross the network before the ps's work: the two trade off (the
         * fitted network is faster where the ps is slower) */
        CHECK_REL(sim_ps_cost_s(&cal.ps_push_cost, 4, bytes), sim_ps_cost_s(&c.ps_push_cost, 4, bytes),
                  mode ? 0.35 : 0.15);
        CHECK_REL(cal.ps_latency, 50e-6, 0.01);
        sim_options o;
        sim_options_init(&o);
        char *argv[] = {"sim", "--ps-pull-cost", "fit", "--ps-push-cost", "fit", NULL};
        CHECK(sim_options_parse(&o, 5, argv, err) == 0);
        CHECK(sim_config_check(&o.c, err) == DP_EINVAL && strstr(err, "--ps-pull-cost fit") &&
              strstr(err, "--calibrate-from"));
        sim_options_calibrate(&o, &cal);
        CHECK(o.c.ps_pull_cost.rate > 0 && o.c.ps_push_cost.rate > 0 && !o.c.ps_pull_cost.fit &&
              o.c.latency == cal.ps_latency && o.c.ps_bw == cal.ps_bandwidth);
        CHECK(run(&o.c, &pred) == 0);
        CHECK_REL(pred.mean_step_s, truth.mean_step_s, 0.03);
        /* by default the model is off, the network fitted with the ps's work in it */
        sim_options_init(&o);
        char *argv0[] = {"sim", NULL};
        CHECK(sim_options_parse(&o, 1, argv0, err) == 0);
        sim_options_calibrate(&o, &cal);
        CHECK(o.c.ps_pull_cost.msg_s == 0 && o.c.ps_pull_cost.rate == 0 && o.c.ps_push_cost.rate == 0 &&
              o.c.latency == cal.latency && o.c.ps_bw == cal.bandwidth);
        CHECK(run(&o.c, &off) == 0);
        printf("%s, ps costs 50us,500MB/s / 30us,1GB/s: truth %.6f s, calibrated %.6f s, model off %.6f s; fitted "
               "pull %.3g us + %.4g MB/s, push %.3g us + %.4g MB/s, latency %.4g us, bandwidth %.4g / %.4g MB/s\n",
               mode ? "async" : "sync", truth.mean_step_s, pred.mean_step_s, off.mean_step_s,
               cal.ps_pull_cost.msg_s * 1e6, cal.ps_pull_cost.rate / 1e6, cal.ps_push_cost.msg_s * 1e6,
               cal.ps_push_cost.rate / 1e6, cal.ps_latency * 1e6, cal.ps_bandwidth / 1e6, cal.ps_push_bandwidth / 1e6);
        sim_calibration_release(&cal);
    }
    unlink(path);
    /* a trace whose ps answers at once (no waits worth a cost): the model stays off */
    sim_calibration cal;
    CHECK(sim_calibrate("tests/data/real_sync_1ps_2w.trace", &cal, err) == 0);
    printf("real_sync_1ps_2w: pull %.3g us + %.4g MB/s, push %.3g us + %.4g MB/s (%lld / %lld gaps)\n",
           cal.ps_pull_cost.msg_s * 1e6, cal.ps_pull_cost.rate / 1e6, cal.ps_push_cost.msg_s * 1e6,
           cal.ps_push_cost.rate / 1e6, (long long)cal.ps_samples[0], (long long)cal.ps_samples[1]);
    sim_calibration_release(&cal);
}

static void test_parse(void)
{
    char err[DP_ERRLEN], buf[96];
    sim_ps_cost k;
    CHECK(sim_parse_ps_cost("0", "--ps-pull-cost", &k, err) == 0 && k.msg_s == 0 && k.rate == 0);
    CHECK(sim_parse_ps_cost("20us,2GB/s", "--ps-pull-cost", &k, err) == 0 && fabs(k.msg_s - 20e-6) < 1e-15 &&
          k.rate == 2e9);
    CHECK(sim_parse_ps_cost("1ms", "--ps-push-cost", &k, err) == 0 && k.msg_s == 1e-3 && k.rate == 0 && !k.fit);
    CHECK(sim_parse_ps_cost("fit", "--ps-push-cost", &k, err) == 0 && k.fit && k.msg_s == 0);
    sim_ps_cost_format(&k, buf, sizeof buf);
    CHECK(!strcmp(buf, "fit"));
    CHECK(sim_parse_ps_cost("0,8Gbit", "--ps-push-cost", &k, err) == 0 && k.msg_s == 0 && k.rate == 1e9);
    sim_ps_cost_format(&(sim_ps_cost){20e-6, 2e9, 0}, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "20us,2000MB/s"), "%s", buf);
    CHECK(sim_parse_ps_cost(buf, "x", &k, err) == 0 && fabs(k.msg_s - 20e-6) < 1e-15 && k.rate == 2e9);
    sim_ps_cost_format(&(sim_ps_cost){0, 0, 0}, buf, sizeof buf);
    CHECK(!strcmp(buf, "0"));
    CHECK(sim_parse_ps_cost("", "--ps-pull-cost", &k, err) == DP_EINVAL && strstr(err, "--ps-pull-cost") &&
          strstr(err, "T[,BW]") && strstr(err, "or fit"));
    CHECK(sim_parse_ps_cost("20", "--ps-pull-cost", &k, err) == DP_EINVAL && strstr(err, "--ps-pull-cost"));
    CHECK(sim_parse_ps_cost("20us,2", "--ps-push-cost", &k, err) == DP_EINVAL && strstr(err, "--ps-push-cost") &&
          strstr(err, "unit"));
    CHECK(sim_parse_ps_cost("20us,", "--ps-push-cost", &k, err) == DP_EINVAL);
    CHECK(sim_ps_cost_s(&(sim_ps_cost){1e-3, 1e6, 0}, 3, 2e6) == 3e-3 + 2);
    sim_config c;
    sim_config_init(&c);
    CHECK(c.ps_pull_cost.msg_s == 0 && c.ps_push_cost.rate == 0);
    CHECK(sim_config_set(&c, "ps_push_cost", "5us,1GB/s", "--ps-push-cost", err) == 0 && c.ps_push_cost.rate == 1e9);
    CHECK(sim_config_set(&c, "ps_pull_cost", "fast", "--ps-pull-cost", err) == DP_EINVAL && strstr(err, "--ps-pull-cost"));
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-ps.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_fifo_applies(dir);
    test_sync_steps();
    test_shared_core(dir);
    test_defaults_and_failures();
    test_calibration(dir);
    test_parse();
    rmdir(dir);
    return CHECK_DONE();
}
