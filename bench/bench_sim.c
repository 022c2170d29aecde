/* bench_sim.c — simulator throughput, printed as markdown rows: the 10,000-worker x
 * 100-ps x 100-step sync run (100 MB model, 10 Gbit NICs) with constant and exponential
 * compute, an async run with as many pushes as 10 of those steps, events per second,
 * and wall time as workers grow from 100 to 10,000. Each case runs once, in a forked
 * child so that its peak RSS is its own. Wall-time ratios are against the constant-compute
 * sync run, and only where the workload is the same (same workers, ps and steps); the
 * async row is another workload and gets none. Two more rows for the network's solve
 * (issue 17): a NIC-bound run (1,000 workers with 1 Gbit NICs x 100 ps x 10 sync steps,
 * exponential compute: worker NICs are the bottleneck and every flow start and end is
 * a solve, which the incremental solve of sim/net_sat.c and net_shape.c keeps small;
 * goal <= 0.5 s and <= 0.15x the 10k constant run's wall, another workload, so the
 * ratio is against a goal, not a like-for-like baseline) and 100,000 workers x 100
 * ps x 10 sync steps, exponential (goal <= 30 s, <= 2 GiB). BENCH_SIM_QUICK=1 runs
 * smaller cases; BENCH_SIM_EXP_STEPS sets the exponential case's steps (default 10;
 * make bench: 100). The two sync rows of 10,000 workers are the best of 3 runs (their goal
 * is absolute, and this shared machine's load moved one run by half), and so is the
 * NIC-bound row, whose ratio is to the first; the others run once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dp.h"
#include "sim/sim.h"

typedef struct outcome {
    int ok;
    double wall_s, rss_mb, sim_s, mean_step_s;
    uint64_t events, solves;
    int64_t global_step;
} outcome;

/* worker_bw: bytes/s of the worker NICs (0: 10 Gbit, as the ps). */
static outcome run_case_bw(int workers, int ps, int64_t steps, int exponential, update_mode mode, double worker_bw)
{
    outcome o;
    memset(&o, 0, sizeof o);
    int fd[2];
    if (pipe(fd)) return o;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        sim_config c;
        sim_config_init(&c);
        c.n_ps = ps;
        c.n_workers = workers;
        c.steps = steps;
        c.mode = mode;
        c.model_bytes = 100e6;
        c.ps_bw = c.worker_bw = 10e9 / 8;
        if (worker_bw > 0) c.worker_bw = worker_bw;
        if (exponential) c.compute.kind = SIM_DIST_EXPONENTIAL;
        sim_result r;
        char err[DP_ERRLEN];
        uint64_t t0 = dp_now_ns();
        int rc = sim_run(&c, &r, err);
        outcome x;
        memset(&x, 0, sizeof x);
        x.ok = rc == 0;
        x.wall_s = (double)(dp_now_ns() - t0) / 1e9;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        x.rss_mb = (double)ru.ru_maxrss / 1024.0;
        x.sim_s = r.sim_s;
        x.mean_step_s = r.mean_step_s;
        x.events = r.sim_events;
        x.solves = r.net_solves;
        x.global_step = r.global_step;
        if (write(fd[1], &x, sizeof x) != (ssize_t)sizeof x) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    if (pid > 0 && read(fd[0], &o, sizeof o) != (ssize_t)sizeof o) o.ok = 0;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return o;
}

static outcome run_case(int workers, int ps, int64_t steps, int exponential, update_mode mode)
{
    return run_case_bw(workers, ps, steps, exponential, mode, 0);
}
/* The fastest of n runs of one case: the simulation is deterministic, so only the wall
 * time (and the RSS beside it) differs, by what else this shared machine was doing. */
static outcome best_of(int n, int workers, int ps, int64_t steps, int exponential, update_mode mode,
                       double worker_bw)
{
    outcome best = run_case_bw(workers, ps, steps, exponential, mode, worker_bw);
    for (int i = 1; i < n; i++) {
        outcome o = run_case_bw(workers, ps, steps, exponential, mode, worker_bw);
        if (o.ok && (!best.ok || o.wall_s < best.wall_s)) best = o;
    }
    return best;
}

/* The network-solve rows (see the top): NIC-bound, and 100,000 workers. */
static void solve_rows(int quick, double base)
{
    int nw = quick ? 200 : 1000, nps = quick ? 20 : 100, bw = quick ? 2000 : 100000;
    int64_t st = quick ? 3 : 10;
    /* its ratio is to the constant run's best of 3: the best of 3 too */
    outcome o = best_of(3, nw, nps, st, 1, MODE_SYNC, 1e9 / 8);
    char ratio[96];
    snprintf(ratio, sizeof ratio, "%.2f of the constant run (another workload; goal <= 0.15)",
             base > 0 ? o.wall_s / base : 0);
    printf("| sync, 100 MB, 1 Gbit worker NICs (NIC-bound), exponential compute, best of 3 | %d x %d x %lld | %.2f | %s | "
           "%.0f | %llu | %.3g | %llu | %.1f | %.3f |\n", nw, nps, (long long)st, o.wall_s, ratio, o.rss_mb,
           (unsigned long long)o.events, o.wall_s > 0 ? (double)o.events / o.wall_s : 0,
           (unsigned long long)o.solves, o.sim_s, o.mean_step_s);
    fflush(stdout);
    int met = o.ok && base > 0 && o.wall_s <= 0.5 && o.wall_s <= 0.15 * base;
    outcome b = run_case(bw, 100, st, 1, MODE_SYNC);
    printf("| sync, 100 MB, 10 Gbit, exponential compute | %d x 100 x %lld | %.2f | none: not the same workload | "
           "%.0f | %llu | %.3g | %llu | %.1f | %.3f |\n", bw, (long long)st, b.wall_s, b.rss_mb,
           (unsigned long long)b.events, b.wall_s > 0 ? (double)b.events / b.wall_s : 0,
           (unsigned long long)b.solves, b.sim_s, b.mean_step_s);
    fflush(stdout);
    if (!quick) {
        printf("\nGoal: the NIC-bound row within 0.5 s and 0.15x the constant run: %s. Goal: 100,000 workers "
               "within 30 s and 2 GiB on one core: %s.\n", met ? "met" : "NOT met",
               b.ok && b.wall_s <= 30 && b.rss_mb <= 2048 ? "met" : "NOT met");
    }
}

int main(void)
{
    int quick = getenv("BENCH_SIM_QUICK") != NULL;
    int big = quick ? 1000 : 10000;
    int64_t steps = quick ? 20 : 100;
    const char *es = getenv("BENCH_SIM_EXP_STEPS");
    int64_t exp_steps = es ? atoll(es) : quick ? 3 : 10;
    if (exp_steps < 2) exp_steps = 2;

    printf("### simulator (`downpour sim`), one core\n\n");
    printf("| case | workers x ps x steps | wall s | wall ratio to baseline | peak RSS MiB | engine events | events/s | "
           "rate solves | simulated s | mean step s |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    double base = 0;  /* the constant-compute run, measured first: the others as its multiple */
    int met = 1;      /* goal: each sync row <= 10 s wall and <= 1 GiB peak RSS */
    for (int e = 0; e < 3; e++) {
        /* the third: async, as many global steps as 10 sync steps of pushes (an async
         * global step is one worker's push): another workload, so no ratio */
        int64_t st = e == 0 ? steps : e == 1 ? exp_steps : (int64_t)big * 10;
        /* the sync rows hold an absolute goal: the best of 3, as the runtime's rows */
        outcome o = best_of(e < 2 ? 3 : 1, big, 100, st, e > 0, e == 2 ? MODE_ASYNC : MODE_SYNC, 0);
        if (e == 0) base = o.wall_s;
        if (e < 2) met &= o.ok && o.wall_s <= 10 && o.rss_mb <= 1024;
        char ratio[64];
        if (e == 0) snprintf(ratio, sizeof ratio, "1.00 (baseline)");
        else if (e == 1 && st == steps && base > 0) snprintf(ratio, sizeof ratio, "%.2f", o.wall_s / base);
        else snprintf(ratio, sizeof ratio, "none: not the same workload");
        printf("| %s, 100 MB, 10 Gbit, %s compute%s | %d x 100 x %lld | %.2f | %s | %.0f | %llu | %.3g | %llu | "
               "%.1f | %.3f |\n", e == 2 ? "async" : "sync", e ? "exponential" : "constant",
               e < 2 ? ", best of 3" : "", big, (long long)st,
               o.wall_s, ratio, o.rss_mb,
               (unsigned long long)o.events, o.wall_s > 0 ? (double)o.events / o.wall_s : 0,
               (unsigned long long)o.solves, o.sim_s, o.mean_step_s);
        fflush(stdout);
    }
    solve_rows(quick, base);
    if (!quick)
        printf("\nGoal: each sync row (10,000 workers x 100 ps x 100 steps) within 10 s and 1 GiB on one "
               "core: %s.\n", met && exp_steps >= 100 ? "met" : exp_steps < 100 ? "not measured (fewer steps)" : "NOT met");
    printf("\n### wall time vs workers (sync, 100 ps, 100 MB, constant compute, %lld steps)\n\n",
           (long long)steps);
    printf("| workers | wall s | engine events E | wall / (E log2 E) ns | wall / (workers x steps) us | "
           "peak RSS MiB |\n");
    printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    int ws[] = {100, 300, 1000, 3000, 10000};
    for (size_t i = 0; i < DP_ARRAY_LEN(ws); i++) {
        if (ws[i] > big) break;
        outcome o = run_case(ws[i], 100, steps, 0, MODE_SYNC);
        double E = (double)o.events;
        printf("| %d | %.3f | %llu | %.2f | %.2f | %.0f |\n", ws[i], o.wall_s, (unsigned long long)o.events,
               E > 1 ? o.wall_s * 1e9 / (E * log2(E)) : 0, o.wall_s * 1e6 / ((double)ws[i] * (double)steps),
               o.rss_mb);
        fflush(stdout);
    }
    return 0;
}
