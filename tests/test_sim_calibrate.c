/* test_sim_calibrate.c — --calibrate-from (sim/calibrate.c) recovers the parameters a
 * trace was simulated with, each one on its own: four sync clusters with different pull
 * and push bandwidths, latency, compute distribution and shape, so that no constant (and
 * no "push = pull bandwidth") passes them all. The fit reads only the events, not the
 * metadata's network or compute fields.
 *   A: 2 ps, 8 workers, 1 Gbit pull / 400 Mbit push, 200 us, lognormal 20 ms sigma 0.3,
 *      MLP H=4096 round robin (one ps holds ~all the bytes: latency from the least
 *      squares' intercept; a push lasts as long as that ps's part), worker 7 2x slower;
 *   B: 3 ps, 6 workers, 100 Mbit both ways, 1 ms, lognormal 50 ms sigma 0.6, 20 MB in
 *      equal shards (x hardly varies: latency from the step token's round trip);
 *   C: 4 ps, 2 workers, 10 Gbit / 2.5 Gbit, 50 us, constant 10 ms, MLP H=1024;
 *   D: 8 ps, 4 workers, 10 Gbit / 5 Gbit, 100 us, lognormal 8 ms sigma 0.45, 20 MB equal
 *      shards (more ps than workers: each worker's NIC, not a ps link, bounds its
 *      transfers).
 * Sync pulls start together, so pull bandwidth and latency are exact (1%). Pushes start
 * when each worker's compute ends; where those differ (A, B, D) the mean number of
 * workers pushing is only a proxy for a push's share of its link, so push bandwidth is
 * checked to 3% there and to 1% in C (constant compute: pushes start together). Compute
 * mean and sigma come from 2000-8000 sampled gaps (1-2% standard error): 4%.
 * Not checked: the network in async mode, where pulls overlap partially and the fit's
 * concurrency proxy is off by 10% or more; async compute (exact gaps) is.
 * And a hand-written trace whose pulls' bytes hardly vary (1000 and 1010, a slope of 1 ns
 * per byte through 1 ms answers): no slope is fitted from them, the latency is the
 * assumed 50 us and the bandwidth the rest, mean bytes / (mean time - 2 latencies). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/trace.h"
#include "sim/sim.h"
#include "tests/check.h"

/* a within rel. tolerance tol of b; the message names the case */
#define CHECK_REL(name, a, b, tol) CHECK_MSG(fabs((a) - (b)) <= (tol) * fabs(b), \
    "%s: %.9g vs %.9g (rel tol %g, off %.3f%%)", name, (double)(a), (double)(b), (double)(tol), \
    100 * fabs((a) - (b)) / fabs(b))

typedef struct cal_case {
    const char *name;
    int ps, workers, hidden, steps;
    double model_bytes, bw_bits, push_bits, latency;  /* push_bits 0: as bw_bits */
    const char *compute;
    int straggler;          /* worker computing 2x slower, -1 none */
    double push_tol;
} cal_case;

/* Simulates k into path, calibrates from it, and checks every fitted parameter. */
static void check_case(const cal_case *k, const char *path)
{
    sim_config c;
    sim_config_init(&c);
    char err[DP_ERRLEN];
    c.n_ps = k->ps;
    c.n_workers = k->workers;
    c.steps = k->steps;
    if (k->hidden) c.hidden = k->hidden;
    c.model_bytes = k->model_bytes;
    c.ps_bw = c.worker_bw = k->bw_bits / 8;
    if (k->push_bits > 0) c.ps_push_bw = c.worker_push_bw = k->push_bits / 8;
    double push_bw = k->push_bits > 0 ? k->push_bits / 8 : c.ps_bw;
    c.latency = k->latency;
    CHECK_MSG(sim_parse_dist(k->compute, &c.compute, err) == 0, "%s: %s", k->name, err);
    if (k->straggler >= 0) c.stragglers[c.n_stragglers++] = (run_straggler){k->straggler, 2};
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result truth;
    int rc = sim_run(&c, &truth, err);
    CHECK_MSG(rc == 0, "%s: sim_run: %s", k->name, err);
    if (rc) return;
    sim_calibration cal;
    rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s: sim_calibrate: %s", k->name, err);
    if (rc) return;
    printf("%s: bandwidth %.6g Gbit (%.6g)  push %.6g Gbit (%.6g)  latency %.6g us (%.6g)  compute %s %.6g ms "
           "sigma %.4g  speed[last] %.4f\n", k->name, cal.bandwidth * 8e-9, k->bw_bits * 1e-9,
           cal.push_bandwidth * 8e-9, push_bw * 8e-9, cal.latency * 1e6, k->latency * 1e6,
           cal.compute.kind == SIM_DIST_LOGNORMAL ? "lognormal" : cal.compute.kind == SIM_DIST_CONSTANT ? "constant" : "other",
           cal.compute.mean * 1e3, cal.compute.sigma, cal.speed ? cal.speed[cal.n_speed - 1] : 0);

    CHECK_MSG(cal.n_ps == k->ps && cal.n_workers == k->workers && cal.mode == MODE_SYNC && cal.steps == k->steps,
              "%s: cluster %d ps %d workers mode %d steps %d", k->name, cal.n_ps, cal.n_workers, cal.mode, cal.steps);
    CHECK_REL(k->name, cal.model_bytes, truth.model_bytes, 1e-9);
    CHECK_REL(k->name, cal.bandwidth, c.ps_bw, 0.01);
    CHECK_REL(k->name, cal.latency, c.latency, 0.01);
    CHECK_REL(k->name, cal.push_bandwidth, push_bw, k->push_tol);
    CHECK_MSG(cal.compute.kind == c.compute.kind, "%s: fitted compute kind %d, simulated %d", k->name,
              cal.compute.kind, c.compute.kind);
    CHECK_REL(k->name, cal.compute.mean, c.compute.mean, 0.04);
    if (c.compute.kind == SIM_DIST_LOGNORMAL) CHECK_REL(k->name, cal.compute.sigma, c.compute.sigma, 0.04);
    /* speed factors all ~1: the straggler (the metadata names it) is taken out of its
     * compute and handed back as a straggler, to be slowed again */
    int bad = 0;
    for (int i = 0; i < cal.n_speed; i++)
        if (fabs(cal.speed[i] - 1.0) > 0.05) bad++;
    CHECK_MSG(k->straggler < 0 ? cal.n_stragglers == 0 :
              cal.n_stragglers == 1 && cal.stragglers[0].worker == k->straggler && cal.stragglers[0].factor == 2,
              "%s: %d stragglers handed back", k->name, cal.n_stragglers);
    CHECK_MSG(cal.n_speed == k->workers && bad == 0, "%s: %d of %d speed factors off by more than 0.05", k->name,
              bad, cal.n_speed);
    CHECK_REL(k->name, cal.mean_step_s, truth.mean_step_s, 1e-6);
    sim_calibration_release(&cal);
}

static void test_sync_fits_each_parameter(const char *dir)
{
    static const cal_case cases[] = {
        {"A", 2, 8, 4096, 1000, 0, 1e9, 400e6, 200e-6, "lognormal:mean=20ms,sigma=0.3", 7, 0.03},
        {"B", 3, 6, 0, 1000, 20e6, 100e6, 0, 1e-3, "lognormal:mean=50ms,sigma=0.6", -1, 0.03},
        {"C", 4, 2, 1024, 300, 0, 10e9, 2.5e9, 50e-6, "constant:mean=10ms", -1, 0.01},
        {"D", 8, 4, 0, 1000, 20e6, 10e9, 5e9, 100e-6, "lognormal:mean=8ms,sigma=0.45", -1, 0.03},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/cal.trace", dir);
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) check_case(&cases[i], path);
    unlink(path);
}

/* Async: each compute gap is exact (last pull_end to first push_begin), so the compute
 * distribution is recovered as in sync. */
static void test_async_fits_compute(const char *dir)
{
    char path[512], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/cal_async.trace", dir);
    sim_config c;
    sim_config_init(&c);
    c.n_ps = 2;
    c.n_workers = 4;
    c.mode = MODE_ASYNC;
    c.steps = 4 * 1500;
    c.model_bytes = 1e6;
    c.ps_bw = c.worker_bw = 1e9 / 8;
    CHECK(sim_parse_dist("lognormal:mean=30ms,sigma=0.5", &c.compute, err) == 0);
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result truth;
    int rc = sim_run(&c, &truth, err);
    CHECK_MSG(rc == 0, "sim_run: %s", err);
    sim_calibration cal;
    rc = rc ? rc : sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "sim_calibrate: %s", err);
    if (!rc) {
        printf("async: compute %.6g ms sigma %.4g\n", cal.compute.mean * 1e3, cal.compute.sigma);
        CHECK_MSG(cal.mode == MODE_ASYNC, "async: fitted mode %d", cal.mode);
        CHECK_MSG(cal.compute.kind == SIM_DIST_LOGNORMAL, "async: fitted compute kind %d", cal.compute.kind);
        CHECK_REL("async", cal.compute.mean, 0.030, 0.04);
        CHECK_REL("async", cal.compute.sigma, 0.5, 0.04);
        sim_calibration_release(&cal);
    }
    unlink(path);
}

static void test_bytes_hardly_vary(const char *dir)
{
    char path[512], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/cal_flat.trace", dir);
    trace_writer *tw = trace_writer_open(path, "{\"engine\":\"sim\",\"ps\":1,\"workers\":1,\"mode\":\"async\"}", err);
    CHECK_MSG(tw != NULL, "%s", err);
    if (!tw) return;
    const int64_t MS = 1000000;
    double sum_b = 0, sum_t = 0;
    for (int s = 0; s < 50; s++) {
        /* pull (the fitted answers), a 1 ms compute, a 1000-byte 1 ms push, step end */
        int64_t t = (int64_t)s * 4 * MS, bytes = s % 2 ? 1010 : 1000, dur = MS + (bytes - 1000);
        sum_b += (double)bytes;
        sum_t += (double)dur / 1e9;
        const struct { int kind; int64_t at, bytes, dur; } ev[] = {
            {EVT_PULL_BEGIN, t, bytes, 0},           {EVT_PULL_END, t + dur, bytes, dur},
            {EVT_COMPUTE_BEGIN, t + dur, 0, 0},      {EVT_COMPUTE_END, t + dur + MS, 0, MS},
            {EVT_PUSH_BEGIN, t + dur + MS, 1000, 0}, {EVT_PUSH_END, t + dur + 2 * MS, 1000, MS},
            {EVT_STEP_END, t + dur + 2 * MS, 0, 0},
        };
        for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
            evt_record e;
            evt_init(&e, (evt_kind)ev[i].kind, EVT_JOB_WORKER, 0);
            e.t = ev[i].at;
            e.bytes = ev[i].bytes;
            e.dur = ev[i].dur;
            e.peer = ev[i].bytes ? 0 : -1;
            e.peer_job = ev[i].bytes ? EVT_JOB_PS : 0;
            e.var = 1;
            e.id = (uint64_t)(2 * s + (ev[i].kind == EVT_PUSH_BEGIN || ev[i].kind == EVT_PUSH_END)) + 1;
            trace_writer_add(tw, &e);
        }
    }
    CHECK(trace_writer_close(tw, err) == 0);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "sim_calibrate: %s", err);
    if (!rc) {
        double my = sum_t / 50, bw = sum_b / 50 / (my - 2 * 50e-6);
        printf("bytes that hardly vary: latency %.6g us (50), bandwidth %.6g B/s (%.6g)\n", cal.latency * 1e6,
               cal.bandwidth, bw);
        CHECK_REL("flat bytes: latency", cal.latency, 50e-6, 1e-9);
        CHECK_REL("flat bytes: bandwidth", cal.bandwidth, bw, 1e-6);
        sim_calibration_release(&cal);
    }
    unlink(path);
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-cal.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_sync_fits_each_parameter(dir);
    test_async_fits_compute(dir);
    test_bytes_hardly_vary(dir);
    rmdir(dir);
    return CHECK_DONE();
}
