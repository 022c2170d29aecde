/* cmd_sim.c — `downpour sim`: parse the flags (with units), optionally calibrate from a
 * real trace, run the simulator with a progress bar on a terminal, and print the same
 * summary JSON line as `downpour cluster` with "engine":"sim" and the simulator's extras. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cmds.h"
#include "cluster/spec.h"
#include "common/dp.h"
#include "common/units.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: downpour sim --ps N --workers N --mode sync|async|ssp [flags]\n\n"
        "Simulates a ps/worker cluster in virtual time with the same placement and update\n"
        "rules as `downpour cluster`, and records the same events (--trace). Network: flow\n"
        "level, max-min fair NIC sharing plus latency. Learning: a noisy quadratic SURROGATE,\n"
        "so the reported loss is the surrogate's, not the real model's. Prints one JSON\n"
        "summary line on stdout.\n\nflags:\n"
        "  --ps N                 ps tasks (default 1)\n"
        "  --workers N            worker tasks (default 2)\n"
        "  --mode M               sync | async | ssp (default sync)\n"
        "  --backup-workers B     sync: replicas_to_aggregate = workers - B (default 0)\n"
        "  --staleness S          ssp: staleness bound (default 3)\n"
        "  --steps N              run until the global step reaches N (default 100)\n"
        "  --model-bytes SIZE     model size, e.g. 100MB, 64MiB (an MLP of about that size,\n"
        "                         weights partitioned over the ps)\n"
        "  --model M              softmax | mlp (default mlp; --hidden N, default 128)\n"
        "  --partition K          split weight matrices into K parts along axis 0\n"
        "  --placement P          round-robin | greedy (default round-robin)\n"
        "  --bandwidth BW         every NIC, each direction, e.g. 10Gbit, 100Mbit (default 10Gbit)\n"
        "  --ps-bandwidth BW      ps NICs only;  --worker-bandwidth BW  worker NICs only\n"
        "  --latency T            one-way per-message latency, e.g. 50us (default 50us)\n"
        "  --compute DIST         per-step compute time: constant:mean=T | normal:mean=T,sd=T |\n"
        "                         lognormal:mean=T,sigma=X | exponential:mean=T\n"
        "                         (default constant:mean=100ms)\n"
        "  --straggler worker:IxF worker I computes F times slower (repeatable)\n"
        "  --fail JOB:I@step=N|@t=T[,restart=T]  a task dies (and maybe comes back) (repeatable)\n"
        "  --seed N               seed (default 1): same seed and flags, same events\n"
        "  --batch N              batch size per worker, for samples/s and the surrogate (64)\n"
        "  --optimizer O          sgd | momentum | adagrad, applied to the surrogate (sgd)\n"
        "  --lr X                 surrogate learning rate (default 0.2)\n"
        "  --nqm-dims N           surrogate dimensions (default 32)\n"
        "  --trace FILE           record the events (same format as the real runtime)\n"
        "  --trace-level L        full | sample[:K] | steps | auto (default auto: full up to 64\n"
        "                         workers, else per-message events for 16 sampled workers)\n"
        "  --calibrate-from TRACE fit compute time, bandwidth and latency from a recorded run;\n"
        "                         cluster flags default to that run's, explicit flags win\n"
        "  --max-sim-time T       stop after this much simulated time\n"
        "  --summary FILE         also write the summary JSON to FILE\n"
        "  --quiet                no progress bar\n");
}

typedef struct opts {
    sim_config c;
    char summary[SIM_PATH_MAX];
    char calibrate[SIM_PATH_MAX];
    int quiet;
    int set_ps, set_workers, set_mode, set_compute, set_bw, set_psbw, set_wkbw, set_lat, set_model, set_steps;
} opts;

static int parse_count(const char *name, const char *v, long long lo, long long hi, long long *out,
                       char *err)
{
    if (dp_parse_int(v, out) || *out < lo || *out > hi)
        return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is not an integer in %lld..%lld", name, v, lo, hi);
    return DP_OK;
}

static int apply_flag(opts *o, const char *name, const char *v, char *err)
{
    sim_config *c = &o->c;
    long long n;
    int rc = DP_OK;
    if (!strcmp(name, "ps")) {
        if (!(rc = parse_count(name, v, 1, SPEC_MAX_PS, &n, err))) c->n_ps = (int)n, o->set_ps = 1;
    } else if (!strcmp(name, "workers")) {
        if (!(rc = parse_count(name, v, 1, SPEC_MAX_WORKERS, &n, err))) c->n_workers = (int)n, o->set_workers = 1;
    } else if (!strcmp(name, "mode")) {
        if (update_mode_parse(v, &c->mode)) return dp_fail(err, DP_EINVAL, "--mode: \"%s\" is not sync, async or ssp", v);
        o->set_mode = 1;
    } else if (!strcmp(name, "backup-workers")) {
        if (!(rc = parse_count(name, v, 0, SPEC_MAX_WORKERS, &n, err))) c->backup_workers = (int)n;
    } else if (!strcmp(name, "staleness")) {
        if (!(rc = parse_count(name, v, 0, 1000000, &n, err))) c->staleness = (int)n;
    } else if (!strcmp(name, "steps")) {
        if (!(rc = parse_count(name, v, 1, 1000000000LL, &n, err))) c->steps = n, o->set_steps = 1;
    } else if (!strcmp(name, "model-bytes")) {
        rc = dp_parse_bytes(v, "--model-bytes", &c->model_bytes, err);
        if (!rc && c->model_bytes < 4) return dp_fail(err, DP_EINVAL, "--model-bytes: \"%s\" is too small", v);
        o->set_model = 1;
    } else if (!strcmp(name, "model")) {
        if (model_parse(v, &c->model)) return dp_fail(err, DP_EINVAL, "--model: \"%s\" is not softmax or mlp", v);
        o->set_model = 1;
    } else if (!strcmp(name, "hidden")) {
        if (!(rc = parse_count(name, v, 1, 65536, &n, err))) c->hidden = (int)n;
    } else if (!strcmp(name, "partition")) {
        if (!(rc = parse_count(name, v, 1, 1024, &n, err))) c->partition = (int)n;
    } else if (!strcmp(name, "placement")) {
        if (placement_parse(v, &c->placement))
            return dp_fail(err, DP_EINVAL, "--placement: \"%s\" is not round-robin or greedy", v);
    } else if (!strcmp(name, "bandwidth")) {
        rc = dp_parse_bandwidth(v, "--bandwidth", &c->ps_bw, err);
        c->worker_bw = c->ps_bw;
        o->set_bw = 1;
    } else if (!strcmp(name, "ps-bandwidth")) {
        rc = dp_parse_bandwidth(v, "--ps-bandwidth", &c->ps_bw, err);
        o->set_psbw = 1;
    } else if (!strcmp(name, "worker-bandwidth")) {
        rc = dp_parse_bandwidth(v, "--worker-bandwidth", &c->worker_bw, err);
        o->set_wkbw = 1;
    } else if (!strcmp(name, "latency")) {
        rc = dp_parse_time(v, "--latency", &c->latency, err);
        o->set_lat = 1;
    } else if (!strcmp(name, "compute")) {
        rc = sim_parse_dist(v, &c->compute, err);
        o->set_compute = 1;
    } else if (!strcmp(name, "straggler")) {
        if (c->n_stragglers == SIM_MAX_STRAGGLERS)
            return dp_fail(err, DP_EINVAL, "--straggler: at most %d", SIM_MAX_STRAGGLERS);
        rc = sim_parse_straggler(v, &c->stragglers[c->n_stragglers], err);
        if (!rc) c->n_stragglers++;
    } else if (!strcmp(name, "fail")) {
        if (c->n_failures == SIM_MAX_FAILURES)
            return dp_fail(err, DP_EINVAL, "--fail: at most %d", SIM_MAX_FAILURES);
        rc = sim_parse_failure(v, &c->failures[c->n_failures], err);
        if (!rc) c->n_failures++;
    } else if (!strcmp(name, "seed")) {
        if (!(rc = parse_count(name, v, 0, INT64_MAX, &n, err))) c->seed = (uint64_t)n;
    } else if (!strcmp(name, "batch")) {
        if (!(rc = parse_count(name, v, 1, 1 << 24, &n, err))) c->batch = (int)n;
    } else if (!strcmp(name, "optimizer")) {
        if (optim_parse(v, &c->optimizer))
            return dp_fail(err, DP_EINVAL, "--optimizer: \"%s\" is not sgd, momentum or adagrad", v);
    } else if (!strcmp(name, "lr")) {
        if (dp_parse_double(v, &c->lr) || !(c->lr > 0) || c->lr > 100)
            return dp_fail(err, DP_EINVAL, "--lr: \"%s\" is not a number in (0, 100]", v);
    } else if (!strcmp(name, "nqm-dims")) {
        if (!(rc = parse_count(name, v, 0, 4096, &n, err))) c->nqm_dims = (int)n;
    } else if (!strcmp(name, "trace")) {
        if (strlen(v) >= sizeof c->trace) return dp_fail(err, DP_EINVAL, "--trace: path too long");
        snprintf(c->trace, sizeof c->trace, "%s", v);
    } else if (!strcmp(name, "trace-level")) {
        rc = sim_parse_trace_level(v, &c->trace_level, &c->trace_sample, err);
    } else if (!strcmp(name, "summary")) {
        if (strlen(v) >= sizeof o->summary) return dp_fail(err, DP_EINVAL, "--summary: path too long");
        snprintf(o->summary, sizeof o->summary, "%s", v);
    } else if (!strcmp(name, "calibrate-from")) {
        if (strlen(v) >= sizeof o->calibrate) return dp_fail(err, DP_EINVAL, "--calibrate-from: path too long");
        snprintf(o->calibrate, sizeof o->calibrate, "%s", v);
    } else if (!strcmp(name, "max-sim-time")) {
        rc = dp_parse_time(v, "--max-sim-time", &c->max_sim_s, err);
    } else {
        return dp_fail(err, DP_EINVAL, "unknown flag \"--%s\" (see --help)", name);
    }
    return rc;
}

/* Returns 1 for --help, 0 when parsed, or DP_EINVAL. */
static int parse_args(opts *o, int argc, char **argv, char *err)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return dp_fail(err, DP_EINVAL, "unexpected argument \"%s\" (see --help)", a);
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) return dp_fail(err, DP_EINVAL, "unknown flag \"%s\"", a);
        memcpy(name, a + 2, len);
        name[len] = 0;
        if (!strcmp(name, "quiet")) {
            o->quiet = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) return dp_fail(err, DP_EINVAL, "--%s: missing value", name);
            v = argv[++i];
        }
        int rc = apply_flag(o, name, v, err);
        if (rc) return rc;
    }
    return 0;
}

/* Fills the flags the user did not give from a calibration. */
static void apply_calibration(opts *o, const sim_calibration *cal)
{
    sim_config *c = &o->c;
    if (!o->set_ps && cal->n_ps > 0) c->n_ps = cal->n_ps;
    if (!o->set_workers && cal->n_workers > 0) c->n_workers = cal->n_workers;
    if (!o->set_mode && cal->mode >= 0) c->mode = (update_mode)cal->mode;
    if (!o->set_compute && cal->compute.mean > 0) c->compute = cal->compute;
    if (!o->set_bw && !o->set_psbw && cal->bandwidth > 0) c->ps_bw = cal->bandwidth;
    if (!o->set_bw && !o->set_wkbw && cal->bandwidth > 0) c->worker_bw = cal->bandwidth;
    if (!o->set_lat && cal->latency >= 0) c->latency = cal->latency;
    if (!o->set_bw && !o->set_psbw && !o->set_wkbw && cal->push_bandwidth > 0)
        c->ps_push_bw = c->worker_push_bw = cal->push_bandwidth;
    if (!o->set_steps && cal->steps > 0) c->steps = cal->steps;
    if (!o->set_model) {
        if (cal->model[0] && !model_parse(cal->model, &c->model)) {
            if (cal->hidden > 0) c->hidden = cal->hidden;
            if (cal->partition > 0 && !c->partition) c->partition = cal->partition;
        } else if (cal->model_bytes > 0) {
            c->model_bytes = cal->model_bytes;
        }
    }
    if (cal->batch > 0) c->batch = cal->batch;
    /* per-worker speeds carry over when the cluster has the same workers */
    if (cal->speed && cal->n_speed == c->n_workers) c->speed = cal->speed;
}

typedef struct bar { int tty; double last; uint64_t t0; } bar;

static void on_progress(const sim_progress *p, void *ctx)
{
    bar *b = ctx;
    if (!b->tty) return;
    double frac = p->steps > 0 ? (double)p->global_step / (double)p->steps : 0;
    if (frac > 1) frac = 1;
    double wall = (double)(dp_now_ns() - b->t0) / 1e9;
    if (frac < 1 && wall - b->last < 0.1) return;
    b->last = wall;
    char fill[41];
    int n = (int)(frac * 40);
    for (int i = 0; i < 40; i++) fill[i] = i < n ? '#' : '.';
    fill[40] = 0;
    fprintf(stderr, "\rsim [%s] %3.0f%%  step %lld/%lld  sim %.3fs  %.2fM events  %.1fs",
            fill, frac * 100, (long long)p->global_step, (long long)p->steps, p->sim_s,
            (double)p->events / 1e6, wall);
    fflush(stderr);
}

static void summary(const opts *o, const sim_result *r, double wall_s)
{
    const sim_config *c = &o->c;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    json_t *j = json_object();
    json_object_set_new(j, "engine", json_string("sim"));
    json_object_set_new(j, "mode", json_string(update_mode_name(c->mode)));
    json_object_set_new(j, "ps", json_integer(c->n_ps));
    json_object_set_new(j, "workers", json_integer(c->n_workers));
    json_object_set_new(j, "steps", json_integer(c->steps));
    json_object_set_new(j, "global_step", json_integer(r->global_step));
    json_object_set_new(j, "wall_s", json_real(wall_s));
    json_object_set_new(j, "mean_step_s", json_real(r->mean_step_s));
    json_object_set_new(j, "samples_per_s", json_real(r->samples_per_s));
    json_object_set_new(j, "final_loss", json_real(r->final_loss));
    json_object_set_new(j, "loss_model", json_string("noisy quadratic surrogate"));
    json_object_set_new(j, "test_accuracy", json_null());
    json_object_set_new(j, "mean_staleness", json_real(r->mean_staleness));
    json_object_set_new(j, "max_staleness", json_integer(r->max_staleness));
    json_object_set_new(j, "dropped_gradients", json_integer(r->dropped));
    json_object_set_new(j, "min_variable_step", json_integer(r->min_variable_step));
    json_object_set_new(j, "bytes_pulled", json_integer(r->bytes_pulled));
    json_object_set_new(j, "bytes_pushed", json_integer(r->bytes_pushed));
    json_object_set_new(j, "events", json_integer((json_int_t)r->trace_events));
    json_object_set_new(j, "events_dropped", json_integer(0));
    json_object_set_new(j, "trace", c->trace[0] ? json_string(c->trace) : json_null());
    json_object_set_new(j, "model_bytes", json_integer((json_int_t)r->model_bytes));
    json_object_set_new(j, "optimizer", json_string(optim_name(c->optimizer)));
    json_object_set_new(j, "batch", json_integer(c->batch));
    json_object_set_new(j, "backup_workers", json_integer(c->backup_workers));
    if (c->mode == MODE_SSP) json_object_set_new(j, "staleness_bound", json_integer(c->staleness));
    json_object_set_new(j, "sim_time_s", json_real(r->sim_s));
    json_object_set_new(j, "sim_events", json_integer((json_int_t)r->sim_events));
    json_object_set_new(j, "events_per_s", json_real(wall_s > 0 ? (double)r->sim_events / wall_s : 0));
    json_object_set_new(j, "net_solves", json_integer((json_int_t)r->net_solves));
    json_object_set_new(j, "peak_rss_mb", json_real((double)ru.ru_maxrss / 1024.0));
    json_object_set_new(j, "stalled", json_boolean(r->stalled));
    char *line = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
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
    json_decref(j);
}

int cmd_sim(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    sim_config_init(&o.c);
    char err[DP_ERRLEN];
    int rc = parse_args(&o, argc, argv, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    sim_calibration cal;
    memset(&cal, 0, sizeof cal);
    if (!rc && o.calibrate[0]) {
        rc = sim_calibrate(o.calibrate, &cal, err);
        if (!rc) {
            apply_calibration(&o, &cal);
            char d[128];
            sim_dist_format(&cal.compute, d, sizeof d);
            fprintf(stderr, "downpour: sim: calibrated from %s: compute %s, bandwidth %.4g MB/s "
                    "(pushes %.4g MB/s), latency %.4g us, measured mean step %.6g s\n", o.calibrate, d, cal.bandwidth / 1e6, cal.push_bandwidth / 1e6,
                    cal.latency * 1e6, cal.mean_step_s);
        }
    }
    if (!rc) rc = sim_config_check(&o.c, err);
    if (rc) {
        fprintf(stderr, "downpour: sim: %s\n", err);
        sim_calibration_release(&cal);
        return 2;
    }
    bar b = {isatty(2) && !o.quiet, -1, dp_now_ns()};
    o.c.progress = on_progress;
    o.c.progress_ctx = &b;
    fprintf(stderr, "downpour: sim: the loss reported is of a noisy quadratic surrogate, not of the "
                    "real model\n");
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
    summary(&o, &r, wall);
    return 0;
}
