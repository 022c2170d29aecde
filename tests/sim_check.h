/* sim_check.h — what the simulator's unit tests share: a relative-tolerance check and a
 * run that says why it failed. Include after tests/check.h and sim/sim.h. */
#ifndef TESTS_SIM_CHECK_H
#define TESTS_SIM_CHECK_H

#include <math.h>
#include <stdio.h>

/* a within relative tolerance tol of b */
#define CHECK_REL(a, b, tol) CHECK_MSG(fabs((a) - (b)) <= (tol) * fabs(b), \
    "%.9g vs %.9g (rel tol %g, off %.3f%%)", (double)(a), (double)(b), (double)(tol), \
    100 * fabs((a) - (b)) / fabs(b))

/* sim_run, its error on stderr */
static inline int run(const sim_config *c, sim_result *r)
{
    char err[DP_ERRLEN];
    int rc = sim_run(c, r, err);
    if (rc) fprintf(stderr, "sim_run: %s\n", err);
    return rc;
}

/* A sync cluster whose network costs ~nothing: one ps, constant compute C, no latency,
 * 20 steps. */
static inline void quiet_net(sim_config *c, int workers, double C)
{
    sim_config_init(c);
    c->n_ps = 1;
    c->n_workers = workers;
    c->steps = 20;
    c->compute = (sim_dist){SIM_DIST_CONSTANT, C, 0, 0};
    c->latency = 0;
    c->ps_bw = c->worker_bw = 1e18;
}

#endif
