/* cmd_sim.c — `downpour sim`: dispatch only. Flags come from the run description's key
 * table (sim/config.c), the run from sim/run.c; this file prints the help, the progress
 * bar on a terminal, and the summary line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "common/dp.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: downpour sim --ps N --workers N --mode sync|async|ssp [flags]\n\n"
        "Simulates a ps/worker cluster in virtual time with the same placement and update\n"
        "rules as `downpour cluster`, and records the same events (--trace). Network: flow\n"
        "level, max-min fair NIC sharing plus latency. Learning: a noisy quadratic SURROGATE,\n"
        "so the reported loss is the surrogate's, not the real model's. Prints one JSON\n"
        "summary line on stdout. Same seed and flags, same events.\n\nflags:\n");
    run_usage(f, RUN_CMD_SIM);
}

static void write_summary(const sim_options *o, const sim_result *r, double wall_s)
{
    char *line = sim_summary_line(&o->c, r, wall_s);
    printf("%s\n", line);
    fflush(stdout);
    if (o->summary[0]) {
        FILE *f = fopen(o->summary, "w");
        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        } else {
            fprintf(stderr, "downpour: sim: --summary %s: %s\n", o->summary, strerror(errno));
        }
    }
    free(line);
}

int cmd_sim(int argc, char **argv)
{
    sim_options o;
    sim_options_init(&o);
    char err[DP_ERRLEN];
    int rc = sim_options_parse(&o, argc, argv, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    sim_calibration cal;
    memset(&cal, 0, sizeof cal);
    if (!rc && o.calibrate[0]) {
        rc = sim_calibrate(o.calibrate, &cal, err);
        if (!rc) {
            sim_options_calibrate(&o, &cal);
            /* What the run uses (explicit keys and the ps's work taken into account). */
            char d[128], pull[64], push[64], hosts[96];
            sim_dist_format(&o.c.compute, d, sizeof d);
            sim_ps_cost_format(&o.c.ps_pull_cost, pull, sizeof pull);
            sim_ps_cost_format(&o.c.ps_push_cost, push, sizeof push);
            sim_hosts_format(&o.c.hosts, hosts, sizeof hosts);
            double push_bw = o.c.ps_push_bw > 0 ? o.c.ps_push_bw : o.c.ps_bw;
            fprintf(stderr, "downpour: sim: calibrated from %s: compute %s, bandwidth %.4g MB/s "
                    "(pushes %.4g MB/s), latency %.4g us, ps work %s a pull, %s a push, hosts %s, "
                    "cores per host %d (0: unlimited), copying %.4g MB/s of CPU (0: free), the ps's "
                    "sending %.4g MB/s of CPU (0: free), the chief's evaluations %.4g ms every %d global "
                    "steps (0: none), measured mean step %.6g s%s\n", o.calibrate, d,
                    o.c.ps_bw / 1e6, push_bw / 1e6, o.c.latency * 1e6, pull, push, hosts[0] ? hosts : "0",
                    o.c.cores_per_host, o.c.copy_rate / 1e6, o.c.ps_send_rate / 1e6, o.c.eval_s * 1e3,
                    o.c.eval_s > 0 ? o.c.eval_every : 0, cal.mean_step_s,
                    cal.cpu_measured ? " (compute and copying from the CPU the workers measured)" : "");
        }
    }
    if (!rc) rc = sim_config_check(&o.c, err);
    if (rc) {
        fprintf(stderr, "downpour: sim: %s\n", err);
        sim_calibration_release(&cal);
        return 2;
    }
    sim_bar b;
    sim_bar_init(&b, isatty(2) && !o.quiet);
    o.c.progress = sim_bar_progress;
    o.c.progress_ctx = &b;
    fprintf(stderr, "downpour: sim: simulated; not modelled: %s (docs/simulator.md)\n", SIM_NOT_MODELLED);
    sim_result r;
    uint64_t t0 = dp_now_ns();
    rc = sim_run(&o.c, &r, err);
    double wall = (double)(dp_now_ns() - t0) / 1e9;
    if (b.tty) fputc('\n', stderr);
    sim_calibration_release(&cal);
    if (rc) {
        fprintf(stderr, "downpour: sim: %s\n", err);
        return 1;
    }
    if (r.stalled)
        fprintf(stderr, "downpour: sim: stalled at global step %lld of %lld (a failed task never came "
                        "back?)\n", (long long)r.global_step, (long long)o.c.steps);
    if (r.timed_out)
        fprintf(stderr, "downpour: sim: stopped by --max-sim-time %.3f s at global step %lld of %lld (the "
                        "last event before it at %.3f s simulated)\n",
                o.c.max_sim_s, (long long)r.global_step, (long long)o.c.steps, r.sim_s);
    write_summary(&o, &r, wall);
    return 0;
}
