/* test_sim_cores.c — hosts and their shared cores (sim/cpu.c, --hosts, --cores-per-host)
 * against closed forms worked out by hand here, not by the code under test:
 *   k busy identical tasks of work T on c cores: each finishes at T * k / c when k > c,
 *     at T when k <= c (a task never runs faster than alone);
 *   a task joining mid-way slows the others from that moment, one leaving speeds them up
 *     (processor sharing: every busy task runs at min(1, c / k) while k are busy);
 *   the whole simulation: sync with negligible network, W workers of constant compute C
 *     on one host of c cores: step = C * max(1, W / c); a worker alone on its host keeps
 *     C exactly; a straggler sharing one core finishes as worked out below; a worker
 *     dying mid-compute leaves its share to the other;
 *   --calibrate-from a trace recorded on shared cores fits the work a step takes alone
 *     (the trace's compute gaps are longer) and carries hosts and cores over; a trace
 *     that says nothing about hosts calibrates as before (unlimited cores);
 *   --hosts parsing, its messages and the round-robin dealing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "events/trace.h"
#include "sim/cpu.h"
#include "sim/sim.h"
#include "tests/check.h"
#include "tests/sim_check.h"

#define MS 1000000LL  /* ns */

/* Runs host 0 of c until idle; finish[id] gets each task's finishing time. */
static void drain(sim_cpu *c, int64_t *finish, int n_tasks)
{
    int *ids = malloc((size_t)n_tasks * sizeof *ids);
    int64_t t;
    while ((t = sim_cpu_next(c, 0)) != INT64_MAX) {
        int n = sim_cpu_pop(c, 0, t, ids);
        for (int i = 0; i < n; i++) finish[ids[i]] = t;
    }
    free(ids);
}

static void test_closed_form_together(void)
{
    static const int cases[][2] = {{1, 2}, {2, 4}, {2, 3}, {3, 7}, {4, 4}, {4, 2}, {1, 1}, {8, 3}};
    const int64_t T = 10 * MS;
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        int cores = cases[i][0], k = cases[i][1];
        sim_cpu *c = sim_cpu_new(1, cores, k);
        for (int j = 0; j < k; j++) sim_cpu_start(c, 0, j, (double)T, 5 * MS);
        CHECK(sim_cpu_busy(c, 0) == k);
        /* all finish at once, k / c times slower when crowded (rounded up to the ns) */
        int64_t want = 5 * MS + (k > cores ? (T * k + cores - 1) / cores : T);
        CHECK_MSG(sim_cpu_next(c, 0) == want, "%d tasks on %d cores: next %lld, want %lld", k, cores,
                  (long long)sim_cpu_next(c, 0), (long long)want);
        int ids[8];
        int n = sim_cpu_pop(c, 0, want, ids);
        CHECK_MSG(n == k, "%d tasks on %d cores: %d finished together", k, cores, n);
        int order = 1;
        for (int j = 0; j < n; j++) order &= ids[j] == j;
        CHECK_MSG(order, "%d tasks on %d cores: finished in the order they started", k, cores);
        CHECK(sim_cpu_next(c, 0) == INT64_MAX && sim_cpu_busy(c, 0) == 0);
        sim_cpu_free(c);
    }
    sim_cpu_free(NULL);
}

static void test_join_and_leave(void)
{
    int64_t f[3];
    /* one core; A (10 ms) from 0, B (10 ms) joins at 4 ms: A alone did 4, then both at
     * 1/2: A's last 6 take 12 -> 16 ms; B did 6 by then, its last 4 alone -> 20 ms */
    sim_cpu *c = sim_cpu_new(1, 1, 2);
    sim_cpu_start(c, 0, 0, 10 * MS, 0);
    CHECK(sim_cpu_next(c, 0) == 10 * MS);
    sim_cpu_start(c, 0, 1, 10 * MS, 4 * MS);
    drain(c, f, 2);
    CHECK_MSG(f[0] == 16 * MS && f[1] == 20 * MS, "join: %lld %lld", (long long)f[0], (long long)f[1]);
    sim_cpu_free(c);
    /* two cores; A, B (6 ms) from 0, C (6 ms) joins at 2 ms: A, B did 2 at full speed,
     * then three at 2/3: their last 4 take 6 -> 8 ms; C did 4 by then, its last 2 alone
     * -> 10 ms */
    c = sim_cpu_new(1, 2, 3);
    sim_cpu_start(c, 0, 0, 6 * MS, 0);
    sim_cpu_start(c, 0, 1, 6 * MS, 0);
    sim_cpu_start(c, 0, 2, 6 * MS, 2 * MS);
    drain(c, f, 3);
    CHECK_MSG(f[0] == 8 * MS && f[1] == 8 * MS && f[2] == 10 * MS, "join on 2 cores: %lld %lld %lld",
              (long long)f[0], (long long)f[1], (long long)f[2]);
    sim_cpu_free(c);
    /* one core; A, B (10 ms) from 0, B leaves (dies) at 4 ms: A did 2, its last 8 alone
     * -> 12 ms */
    c = sim_cpu_new(1, 1, 2);
    sim_cpu_start(c, 0, 0, 10 * MS, 0);
    sim_cpu_start(c, 0, 1, 10 * MS, 0);
    CHECK(sim_cpu_next(c, 0) == 20 * MS);
    CHECK(sim_cpu_cancel(c, 1, 4 * MS) == 0);
    CHECK(sim_cpu_cancel(c, 1, 4 * MS) == -1);  /* not busy any more */
    drain(c, f, 1);
    CHECK_MSG(f[0] == 12 * MS, "leave: %lld", (long long)f[0]);
    sim_cpu_free(c);
    /* one core; A (2 ms) and B (6 ms) from 0: both at 1/2, A done at 4 ms; B did 2, its
     * last 4 alone -> 8 ms; a task of no work ends at once */
    c = sim_cpu_new(1, 1, 3);
    sim_cpu_start(c, 0, 0, 2 * MS, 0);
    sim_cpu_start(c, 0, 1, 6 * MS, 0);
    sim_cpu_start(c, 0, 2, 0, 0);
    CHECK(sim_cpu_next(c, 0) == 0);
    drain(c, f, 3);
    CHECK_MSG(f[2] == 0 && f[0] == 4 * MS + 0 * MS + 0 && f[1] == 8 * MS, "uneven: %lld %lld %lld",
              (long long)f[0], (long long)f[1], (long long)f[2]);
    sim_cpu_free(c);
    /* hosts are independent: two crowded hosts of one core each */
    c = sim_cpu_new(2, 1, 4);
    for (int j = 0; j < 4; j++) sim_cpu_start(c, j / 2, j, (j % 2 ? 3 : 1) * MS, 0);
    /* per host: 1 ms and 3 ms at 1/2 -> 2 ms, then 2 ms alone -> 4 ms */
    CHECK(sim_cpu_next(c, 0) == 2 * MS && sim_cpu_next(c, 1) == 2 * MS);
    int ids[4];
    CHECK(sim_cpu_pop(c, 1, 2 * MS, ids) == 1 && ids[0] == 2);
    CHECK(sim_cpu_next(c, 1) == 4 * MS && sim_cpu_next(c, 0) == 2 * MS && sim_cpu_busy(c, 0) == 2);
    sim_cpu_free(c);
}

static void test_sim_step(void)
{
    static const int cases[][2] = {{4, 2}, {4, 1}, {6, 4}, {3, 2}, {2, 2}, {2, 4}};
    const double C = 0.010;
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        int W = cases[i][0], cores = cases[i][1];
        sim_config c;
        quiet_net(&c, W, C);
        sim_result plain, shared;
        CHECK(run(&c, &plain) == 0);
        c.hosts.n = 1;
        c.cores_per_host = cores;
        CHECK(run(&c, &shared) == 0);
        double want = C * (W > cores ? (double)W / cores : 1.0);
        CHECK_REL(shared.mean_step_s, want, 1e-4);
        printf("sync, %d workers on one host of %d cores, C = 10 ms: step %.6f s, closed form %.6f s\n", W,
               cores, shared.mean_step_s, want);
        if (W <= cores)  /* nothing shared: the very same run */
            CHECK(shared.mean_step_s == plain.mean_step_s && shared.sim_s == plain.sim_s &&
                  shared.sim_events == plain.sim_events && shared.final_loss == plain.final_loss);
        else
            CHECK(shared.sim_events == plain.sim_events && shared.global_step == plain.global_step);
    }
}

/* The exact shortcuts (twin ps, shared accumulators, delivery runs) hand workers to
 * their compute (and their copying) in the same order, so shared cores give the same run
 * with them and without; and the same seed, the same run. */
static void test_shortcuts_and_seed(double copy_rate, sim_result *out)
{
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 6;
    c.n_workers = 24;
    c.steps = 20;
    c.model_bytes = 12e6;
    c.backup_workers = 3;
    c.compute = (sim_dist){SIM_DIST_EXPONENTIAL, 0.030, 0, 0};
    c.hosts.n = 4;
    c.cores_per_host = 4;
    c.stragglers[c.n_stragglers++] = (run_straggler){2, 2};
    c.copy_rate = copy_rate;
    sim_result a, b, d;
    CHECK(run(&c, &a) == 0);
    CHECK(run(&c, &d) == 0);
    c.no_shortcuts = 1;
    CHECK(run(&c, &b) == 0);
    CHECK_MSG(a.mean_step_s == b.mean_step_s && a.sim_s == b.sim_s && a.final_loss == b.final_loss &&
              a.sim_events == b.sim_events && a.dropped == b.dropped && a.locks > 0,
              "shortcuts %.9f s %llu events loss %.9g drops %lld locks %d, none %.9f s %llu events loss %.9g drops %lld", a.mean_step_s,
              (unsigned long long)a.sim_events, a.final_loss, (long long)a.dropped, a.locks, b.mean_step_s, (unsigned long long)b.sim_events, b.final_loss, (long long)b.dropped);
    CHECK(a.mean_step_s == d.mean_step_s && a.sim_events == d.sim_events && a.final_loss == d.final_loss);
    *out = a;
}

/* compute_end durations of worker k from a trace (up to n), returns how many */
static int compute_durs(const char *path, int k, int64_t *dur, int n)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return -1;
    evt_record e;
    int m = 0;
    while (trace_reader_next(r, &e) == 1)
        if (e.kind == EVT_COMPUTE_END && e.job == EVT_JOB_WORKER && e.task == k && m < n) dur[m++] = e.dur;
    trace_reader_close(r);
    return m;
}

static void test_sim_trace_durations(const char *dir)
{
    const char *path = check_path(dir, "cores.trace");
    int64_t d[64];
    char err[DP_ERRLEN];
    /* one core, two workers, C = 10 ms, worker 1 a 3x straggler as the runtime makes one
     * (its work, then a sleep of twice the time the work took, off the cores): both at 1/2
     * until their 10 ms are done at 20 ms; worker 1 then sleeps 40 ms -> 60 ms. Every
     * sync step starts them together again. */
    sim_config c;
    quiet_net(&c, 2, 0.010);
    c.stragglers[c.n_stragglers++] = (run_straggler){1, 3};
    CHECK(sim_parse_hosts("1", &c.hosts, err) == 0);
    c.cores_per_host = 1;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result r;
    CHECK(run(&c, &r) == 0);
    int n0 = compute_durs(path, 0, d, 64), ok = n0 == 20;
    for (int i = 0; i < n0; i++) ok &= d[i] == 20 * MS;
    CHECK_MSG(ok, "worker 0: %d compute spans, first %lld ns (want 20 of 20 ms)", n0, (long long)(n0 > 0 ? d[0] : 0));
    int n1 = compute_durs(path, 1, d, 64);
    ok = n1 == 20;
    for (int i = 0; i < n1; i++) ok &= d[i] == 60 * MS;
    CHECK_MSG(ok, "worker 1: %d compute spans, first %lld ns (want 20 of 60 ms)", n1, (long long)(n1 > 0 ? d[0] : 0));
    /* two hosts of two cores: workers 0-2 on host 0 (three on two cores: 2/3 each, 15 ms),
     * worker 3 alone on host 1 keeps its 10 ms to the ns */
    quiet_net(&c, 4, 0.010);
    CHECK(sim_parse_hosts("2,worker:0-2=0,worker:3=1", &c.hosts, err) == 0);
    c.cores_per_host = 2;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    CHECK(run(&c, &r) == 0);
    int n = compute_durs(path, 3, d, 64);
    ok = n == 20;
    for (int i = 0; i < n; i++) ok &= d[i] == 10 * MS;
    CHECK_MSG(ok, "worker 3 alone: %d spans, first %lld ns", n, (long long)(n > 0 ? d[0] : 0));
    n = compute_durs(path, 1, d, 64);
    ok = n == 20;
    for (int i = 0; i < n; i++) ok &= d[i] == 15 * MS;
    CHECK_MSG(ok, "worker 1 of three on two cores: %d spans, first %lld ns", n, (long long)(n > 0 ? d[0] : 0));
    CHECK_REL(r.mean_step_s, 0.015, 1e-4);
    /* one core, two workers (async), C = 10 ms; worker 1 dies at 5 ms: worker 0 did 2.5
     * ms at 1/2, its last 7.5 alone -> its first compute lasts 12.5 ms (less the few ns
     * its pull took before the failure's instant) */
    quiet_net(&c, 2, 0.010);
    c.mode = MODE_ASYNC;
    c.hosts.n = 1;
    c.cores_per_host = 1;
    CHECK(sim_parse_failure("worker:1@t=5ms", &c.failures[c.n_failures++], err) == 0);
    snprintf(c.trace, sizeof c.trace, "%s", path);
    CHECK(run(&c, &r) == 0);
    n = compute_durs(path, 0, d, 64);
    CHECK_MSG(n >= 2 && llabs(d[0] - 12500000) <= 100 && d[1] == 10 * MS, "leave: %d spans, %lld then %lld ns", n,
              (long long)(n > 0 ? d[0] : 0), (long long)(n > 1 ? d[1] : 0));
    unlink(path);
}

/* A trace recorded on shared cores calibrates to the work a step takes alone. */
static void test_calibration(const char *dir)
{
    const char *path = check_path(dir, "cal-cores.trace");
    char err[DP_ERRLEN];
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 1;
    c.n_workers = 4;
    c.steps = 300;
    CHECK(sim_parse_dist("lognormal:mean=10ms,sigma=0.3", &c.compute, err) == 0);
    c.ps_bw = c.worker_bw = 10e9 / 8;
    c.latency = 100e-6;
    CHECK(sim_parse_hosts("1", &c.hosts, err) == 0);
    c.cores_per_host = 2;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result truth;
    CHECK(run(&c, &truth) == 0);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK(cal.hosts.n == 1 && cal.hosts.n_rules == 0 && cal.cores == 2);
    /* four workers computing together on two cores: the gaps are ~2x the work */
    CHECK_REL(cal.compute.mean, 0.010, 0.04);
    CHECK_REL(cal.compute.sigma, 0.3, 0.1);
    /* the calibrated run, with the hosts and cores the trace says */
    sim_options o;
    sim_options_init(&o);
    char *argv[] = {"sim", NULL};
    CHECK(sim_options_parse(&o, 1, argv, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.hosts.n == 1 && o.c.cores_per_host == 2 && o.c.n_workers == 4);
    sim_result pred, nocores;
    CHECK(run(&o.c, &pred) == 0);
    CHECK_REL(pred.mean_step_s, truth.mean_step_s, 0.05);
    /* an explicit flag wins: no core sharing, so the steps are far too short */
    sim_options_init(&o);
    char *argv2[] = {"sim", "--cores-per-host", "0", NULL};
    CHECK(sim_options_parse(&o, 3, argv2, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.cores_per_host == 0);
    CHECK(run(&o.c, &nocores) == 0);
    CHECK_MSG(nocores.mean_step_s < 0.7 * truth.mean_step_s, "without cores %.6f s, truth %.6f s",
              nocores.mean_step_s, truth.mean_step_s);
    printf("calibrated from 4 workers on 2 cores (truth %.6f s): with cores %.6f s, without %.6f s; compute "
           "%.4f ms\n", truth.mean_step_s, pred.mean_step_s, nocores.mean_step_s, cal.compute.mean * 1e3);
    /* a bigger cluster keeps one host of two cores; the trace's placements (none) too */
    sim_options_init(&o);
    char *argv3[] = {"sim", "--workers", "16", NULL};
    CHECK(sim_options_parse(&o, 3, argv3, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.hosts.n == 1 && o.c.cores_per_host == 2 && o.c.n_workers == 16);
    /* a recorded straggler, worker 3, is handed on only to a cluster that has a worker 3 */
    cal.n_stragglers = 1;
    cal.stragglers[0] = (run_straggler){3, 2};
    for (int nw = 3; nw <= 4; nw++) {
        sim_options_init(&o);
        char workers[8];
        snprintf(workers, sizeof workers, "%d", nw);
        char *argv5[] = {"sim", "--workers", workers, NULL};
        CHECK(sim_options_parse(&o, 3, argv5, err) == 0);
        sim_options_calibrate(&o, &cal);
        CHECK_MSG(o.c.n_stragglers == (nw == 4), "the recorded straggler, worker 3, with %d workers: %s (%d)", nw,
                  nw == 4 ? "kept" : "dropped", o.c.n_stragglers);
    }
    cal.n_stragglers = 0;
    sim_calibration_release(&cal);
    /* placements round-trip through the trace; dropped when they name missing tasks */
    c.steps = 20;
    CHECK(sim_parse_hosts("2,worker:0-2=1", &c.hosts, err) == 0);
    CHECK(run(&c, &truth) == 0);
    CHECK(sim_calibrate(path, &cal, err) == 0);
    CHECK(cal.hosts.n == 2 && cal.hosts.n_rules == 1 && cal.hosts.rule[0].last == 2 && cal.cores == 2);
    sim_options_init(&o);
    char *argv4[] = {"sim", "--workers", "2", NULL};
    CHECK(sim_options_parse(&o, 3, argv4, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.hosts.n == 2 && o.c.hosts.n_rules == 0);
    sim_calibration_release(&cal);
    unlink(path);
    /* a trace that says nothing about hosts: unlimited cores, as before */
    CHECK(sim_calibrate("tests/data/real_sync_1ps_2w.trace", &cal, err) == 0);
    CHECK(cal.hosts.n == 0 && cal.cores == 0);
    sim_options_init(&o);
    CHECK(sim_options_parse(&o, 1, argv, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.hosts.n == 0 && o.c.cores_per_host == 0);
    sim_calibration_release(&cal);
}

static void test_parse(void)
{
    char err[DP_ERRLEN], buf[256];
    sim_hosts h;
    CHECK(sim_parse_hosts("0", &h, err) == 0 && h.n == 0 && h.n_rules == 0);
    CHECK(sim_host_of(&h, 2, JOB_WORKER, 0) == -1);
    CHECK(sim_parse_hosts("3", &h, err) == 0 && h.n == 3);
    /* dealt round-robin, ps first: ps 0, 1 on hosts 0, 1; workers 0.. from host 2 */
    CHECK(sim_host_of(&h, 2, JOB_PS, 1) == 1 && sim_host_of(&h, 2, JOB_WORKER, 0) == 2 &&
          sim_host_of(&h, 2, JOB_WORKER, 1) == 0 && sim_host_of(&h, 2, JOB_WORKER, 5) == 1);
    CHECK(sim_parse_hosts("2,worker:0-3=1,ps:0=1,worker:2=0", &h, err) == 0 && h.n == 2 && h.n_rules == 3);
    CHECK(sim_host_of(&h, 1, JOB_WORKER, 1) == 1 && sim_host_of(&h, 1, JOB_WORKER, 2) == 0 &&
          sim_host_of(&h, 1, JOB_PS, 0) == 1 && sim_host_of(&h, 1, JOB_WORKER, 4) == 1);
    sim_hosts_format(&h, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "2,worker:0-3=1,ps:0=1,worker:2=0"), "%s", buf);
    CHECK(sim_parse_hosts("2,worker:0-3", &h, err) == DP_EINVAL && strstr(err, "--hosts") &&
          strstr(err, "JOB:I-J=H"));
    CHECK(sim_parse_hosts("2,worker:1=2", &h, err) == DP_EINVAL && strstr(err, "host 2 of 2"));
    CHECK(sim_parse_hosts("0,worker:1=0", &h, err) == DP_EINVAL && strstr(err, "at least one host"));
    CHECK(sim_parse_hosts("2,chief:1=0", &h, err) == DP_EINVAL);
    CHECK(sim_parse_hosts("2,worker:3-1=0", &h, err) == DP_EINVAL);
    CHECK(sim_parse_hosts("-1", &h, err) == DP_EINVAL && strstr(err, "--hosts"));
    /* pieces longer than the parser's buffers are refused, not copied (ASan sees a copy) */
    CHECK(sim_parse_hosts("2,workerworkerworkerworker:0=1", &h, err) == DP_EINVAL && strstr(err, "JOB:I=H"));
    CHECK(sim_parse_hosts("2,worker:0-0000000000000000000000000000000000000000000000001=1", &h, err) == DP_EINVAL &&
          strstr(err, "JOB:I=H"));
    sim_config c;
    sim_config_init(&c);
    CHECK(c.hosts.n == 0 && c.cores_per_host == 0);
    CHECK(sim_config_set(&c, "hosts", "2,worker:5=1", "--hosts", err) == 0);
    CHECK(sim_config_check(&c, err) == DP_EINVAL && strstr(err, "worker 5 does not exist"));
    CHECK(sim_config_set(&c, "cores_per_host", "-1", "--cores-per-host", err) == DP_EINVAL);
    CHECK(sim_config_set(&c, "cores_per_host", "2", "--cores-per-host", err) == 0 && c.cores_per_host == 2);
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-cores.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_closed_form_together();
    test_join_and_leave();
    test_sim_step();
    sim_result plain, copied;
    test_shortcuts_and_seed(0, &plain);
    /* the workers' copying on the cores (--copy-bandwidth; test_sim_measured.c) too */
    test_shortcuts_and_seed(2e9, &copied);
    CHECK_MSG(plain.mean_step_s < copied.mean_step_s, "copying costs: %.6f s without, %.6f s with",
              plain.mean_step_s, copied.mean_step_s);
    test_sim_trace_durations(dir);
    test_calibration(dir);
    test_parse();
    rmdir(dir);
    return CHECK_DONE();
}
