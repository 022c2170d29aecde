/* test_sim_dist.c — the simulator's compute-time draws (sim_draw_compute in sim/nqm.c)
 * against the closed forms of their parameters: 200,000 draws per distribution, fixed
 * seed, sample mean and variance each within 5 standard errors of
 *   constant    mean m:            every draw is m (variance 0);
 *   normal      mean m, sd s:      clipped at 0.01 m (a draw below is set to 0.01 m), so
 *                                  E and Var are those of max(N(m, s²), 0.01 m), below;
 *   lognormal   mean m, sigma s:   mu = ln m - s²/2, Var = (e^{s²} - 1) m²;
 *   exponential mean m:            Var = m².
 * The standard error of the mean is sqrt(Var/n) (closed form), that of the variance
 * sqrt((m4 - Var²)/n) with m4 the sample's fourth central moment. 5 SE is far inside the
 * mistakes these checks are for: a lognormal mean off by e^{s²/2} (s = 0.3: 4.6%, ~60 SE),
 * sigma taken as a variance, a rate taken for a mean, sd taken as a variance. Also: the
 * worker's speed factor multiplies every draw, a --straggler's factor multiplies (end to
 * end, through sim_run and the trace) that worker's compute spans, and the string forms
 * parse to those parameters. Draws go through a zeroed world holding only what the
 * sampler reads (config, per-worker RNG and speed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "sim/sim.h"
#include "sim/world.h"
#include "tests/check.h"

#define N_DRAWS 200000
#define N_SE 5.0

typedef struct moments {
    double mean, var, m4;  /* sample mean, variance (1/n), fourth central moment */
    double min, max;
    int64_t at_floor;      /* draws equal to the floor value asked for */
} moments;

/* n draws of worker 0 of a world with compute dist d and speed factor speed, seed seed;
 * their moments, and how many equal floor exactly. */
static moments draw(const sim_dist *d, double speed, uint64_t seed, int n, double floor_value)
{
    sim_config c;
    sim_config_init(&c);
    c.compute = *d;
    /* zeroed: the sampler reads only cfg and the worker's rng and speed */
    sim_world *w = xcalloc(1, sizeof *w);
    sim_wk wk;
    memset(&wk, 0, sizeof wk);
    w->cfg = &c;
    w->W = 1;
    w->wk = &wk;
    wk.speed = speed;
    dp_rng_seed(&wk.rng, seed);
    double *x = xmalloc((size_t)n * sizeof *x);
    moments m = {0};
    m.min = INFINITY;
    m.max = -INFINITY;
    for (int i = 0; i < n; i++) {
        x[i] = sim_draw_compute(w, 0);
        m.mean += x[i];
        if (x[i] < m.min) m.min = x[i];
        if (x[i] > m.max) m.max = x[i];
        if (x[i] == floor_value) m.at_floor++;
    }
    m.mean /= n;
    for (int i = 0; i < n; i++) {
        double e = x[i] - m.mean, e2 = e * e;
        m.var += e2;
        m.m4 += e2 * e2;
    }
    m.var /= n;
    m.m4 /= n;
    free(x);
    free(w);
    return m;
}

static double se_mean(double var, int n) { return sqrt(var / n); }
static double se_var(const moments *m, int n) { return sqrt((m->m4 - m->var * m->var) / n); }

static double phi(double z) { return exp(-0.5 * z * z) / sqrt(2 * M_PI); }
static double Phi(double z) { return 0.5 * erfc(-z / sqrt(2)); }

/* E and Var of max(N(m, s²), a): with al = (a - m)/s, the mass Phi(al) sits at a and
 * the rest is the normal's upper tail:
 *   E   = a Phi(al) + m (1 - Phi(al)) + s phi(al)
 *   E[X²] = a² Phi(al) + m² (1 - Phi(al)) + 2 m s phi(al) + s² (al phi(al) + 1 - Phi(al)) */
static void clipped_normal(double m, double s, double a, double *mean, double *var)
{
    double al = (a - m) / s, P = Phi(al), f = phi(al);
    double e1 = a * P + m * (1 - P) + s * f;
    double e2 = a * a * P + m * m * (1 - P) + 2 * m * s * f + s * s * (al * f + 1 - P);
    *mean = e1;
    *var = e2 - e1 * e1;
}

/* Checks the sample mean and variance of dist d (speed 1) against mean, var. */
static void check_moments(const char *what, const sim_dist *d, uint64_t seed, double mean, double var)
{
    moments m = draw(d, 1.0, seed, N_DRAWS, -1);
    double sm = se_mean(var, N_DRAWS), sv = se_var(&m, N_DRAWS);
    CHECK_MSG(fabs(m.mean - mean) <= N_SE * sm, "%s: sample mean %.9g vs closed form %.9g (%.1f SE, SE %.3g)",
              what, m.mean, mean, fabs(m.mean - mean) / sm, sm);
    CHECK_MSG(fabs(m.var - var) <= N_SE * sv, "%s: sample variance %.9g vs closed form %.9g (%.1f SE, SE %.3g)",
              what, m.var, var, fabs(m.var - var) / sv, sv);
    printf("%-34s mean %.6g (closed %.6g)  var %.6g (closed %.6g)\n", what, m.mean, mean, m.var, var);
}

/* constant: every draw is the mean, so the variance is exactly 0. */
static void test_constant_every_draw_is_mean(void)
{
    sim_dist d = {SIM_DIST_CONSTANT, 0.025, 0, 0};
    moments m = draw(&d, 1.0, 11, N_DRAWS, 0.025);
    CHECK_MSG(m.at_floor == N_DRAWS && m.min == 0.025 && m.max == 0.025,
              "constant 25ms: %lld of %d draws are 25ms, range %.9g..%.9g", (long long)m.at_floor, N_DRAWS,
              m.min, m.max);
    /* 0 but for the rounding of the sample mean's sum */
    CHECK_MSG(m.var <= 1e-12 * 0.025 * 0.025, "constant 25ms: variance %.3g", m.var);
}

/* lognormal: the parsed string form, and a wider shape set directly. */
static void test_lognormal_mean_and_variance(void)
{
    sim_dist d;
    char err[DP_ERRLEN];
    CHECK(sim_parse_dist("lognormal:mean=20ms,sigma=0.3", &d, err) == 0);
    CHECK_MSG(d.kind == SIM_DIST_LOGNORMAL && d.mean == 20e-3 && d.sigma == 0.3,
              "parsed kind %d mean %.9g sigma %.9g", d.kind, d.mean, d.sigma);
    double m = 0.020, s = 0.3;
    check_moments("lognormal mean=20ms sigma=0.3", &d, 21, m, (exp(s * s) - 1) * m * m);
    sim_dist w = {SIM_DIST_LOGNORMAL, 0.050, 0, 0.8};
    m = 0.050;
    s = 0.8;
    check_moments("lognormal mean=50ms sigma=0.8", &w, 22, m, (exp(s * s) - 1) * m * m);
}

static void test_exponential_mean_and_variance(void)
{
    sim_dist d;
    char err[DP_ERRLEN];
    CHECK(sim_parse_dist("exponential:mean=30ms", &d, err) == 0);
    CHECK_MSG(d.kind == SIM_DIST_EXPONENTIAL && d.mean == 30e-3, "parsed kind %d mean %.9g", d.kind, d.mean);
    check_moments("exponential mean=30ms", &d, 31, 0.030, 0.030 * 0.030);
}

/* normal: far from the clip (sd 3ms on 20ms: the clip at 0.2ms is 6.6 sd away) the plain
 * normal's moments; near it (sd 8ms on 10ms: 11% of the draws clipped) the clipped ones,
 * the share of draws at the floor (binomial SE), and none below it. */
static void test_normal_mean_variance_and_clip(void)
{
    sim_dist d;
    char err[DP_ERRLEN];
    CHECK(sim_parse_dist("normal:mean=20ms,sd=3ms", &d, err) == 0);
    CHECK_MSG(d.kind == SIM_DIST_NORMAL && d.mean == 20e-3 && fabs(d.sd - 3e-3) < 1e-15,
              "parsed kind %d mean %.9g sd %.9g", d.kind, d.mean, d.sd);
    check_moments("normal mean=20ms sd=3ms", &d, 41, 0.020, 0.003 * 0.003);
    /* what the command line's own empty-value check does not reach (a scenario, the API) */
    CHECK(sim_parse_dist("", &d, err) == DP_EINVAL && strstr(err, "--compute: empty distribution"));
    CHECK(sim_parse_dist(NULL, &d, err) == DP_EINVAL && strstr(err, "--compute: empty distribution"));

    double m = 0.010, s = 0.008, a = 0.01 * m, cm, cv;
    sim_dist c = {SIM_DIST_NORMAL, m, s, 0};
    clipped_normal(m, s, a, &cm, &cv);
    check_moments("normal mean=10ms sd=8ms (clipped)", &c, 42, cm, cv);
    moments r = draw(&c, 1.0, 42, N_DRAWS, a);
    double p = Phi((a - m) / s), sp = sqrt(p * (1 - p) / N_DRAWS);
    double share = (double)r.at_floor / N_DRAWS;
    CHECK_MSG(fabs(share - p) <= N_SE * sp, "normal 10ms/8ms: %.5f of draws at 1%% of the mean, expected %.5f (SE %.2g)",
              share, p, sp);
    CHECK_MSG(r.min == a, "normal 10ms/8ms: smallest draw %.9g, clip at %.9g", r.min, a);
}

/* The worker's speed factor multiplies each draw (same stream: same draws, scaled). */
static void test_speed_factor_scales_draws(void)
{
    sim_dist d = {SIM_DIST_LOGNORMAL, 0.020, 0, 0.3};
    moments one = draw(&d, 1.0, 51, 10000, -1), slow = draw(&d, 2.5, 51, 10000, -1);
    CHECK_MSG(fabs(slow.mean - 2.5 * one.mean) <= 1e-12 * one.mean && fabs(slow.var - 6.25 * one.var) <= 1e-9 * one.var,
              "speed 2.5: mean %.9g vs 2.5 x %.9g, var %.9g vs 6.25 x %.9g", slow.mean, one.mean, slow.var, one.var);
}

/* End to end: `--compute constant:mean=10ms --straggler worker:3x4` through sim_run; every
 * compute_end of worker 3 lasts 40 ms, the others' 10 ms; with a speed factor of 1.5 on
 * worker 3 as well (calibration), its spans are 60 ms (the factors multiply). */
static void test_straggler_scales_compute_spans(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/strag.trace", dir);
    double speed[4] = {1, 1, 1, 1.5};
    for (int pass = 0; pass < 2; pass++) {
        sim_config c;
        sim_config_init(&c);
        char err[DP_ERRLEN];
        c.n_workers = 4;
        c.steps = 20;
        c.model_bytes = 1000;
        CHECK(sim_parse_dist("constant:mean=10ms", &c.compute, err) == 0);
        CHECK(sim_parse_straggler("worker:3x4", &c.stragglers[c.n_stragglers++], err) == 0);
        if (pass) c.speed = speed;
        snprintf(c.trace, sizeof c.trace, "%s", path);
        sim_result res;
        int rc = sim_run(&c, &res, err);
        CHECK_MSG(rc == 0, "sim_run: %s", err);
        trace_reader *r = rc ? NULL : trace_reader_open(path, err);
        CHECK_MSG(rc || r, "trace: %s", err);
        if (!r) continue;
        int64_t n[4] = {0}, bad[4] = {0}, want[4] = {10000000, 10000000, 10000000, pass ? 60000000 : 40000000};
        evt_record e;
        while (trace_reader_next(r, &e) == 1) {
            if (e.kind != EVT_COMPUTE_END || e.job != EVT_JOB_WORKER || e.task < 0 || e.task > 3) continue;
            n[e.task]++;
            if (llabs(e.dur - want[e.task]) > 1) bad[e.task]++;
        }
        trace_reader_close(r);
        CHECK_MSG(n[3] == 20 && bad[3] == 0, "pass %d: worker 3: %lld of %lld compute spans not %lld ns", pass,
                  (long long)bad[3], (long long)n[3], (long long)want[3]);
        CHECK_MSG(n[0] == 20 && bad[0] == 0 && bad[1] == 0 && bad[2] == 0,
                  "pass %d: workers 0-2: %lld/%lld/%lld spans not 10 ms (of %lld)", pass, (long long)bad[0],
                  (long long)bad[1], (long long)bad[2], (long long)n[0]);
    }
    unlink(path);
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-dist.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_constant_every_draw_is_mean();
    test_lognormal_mean_and_variance();
    test_exponential_mean_and_variance();
    test_normal_mean_variance_and_clip();
    test_speed_factor_scales_draws();
    test_straggler_scales_compute_spans(dir);
    rmdir(dir);
    return CHECK_DONE();
}
