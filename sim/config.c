/* config.c — the simulator's configuration from the run description's key table: its
 * extras (network, compute model, failures, surrogate, trace level), the `downpour sim`
 * options (flags, --calibrate-from filling what the flags left unset), and the summary
 * JSON (the common part from cluster/run.c, then the simulator's own keys). */
#include "sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "common/units.h"

static int sim_extra(void *ctx, const run_key *k, const run_value *v, const char *what, char *err)
{
    sim_config *c = ctx;
    if (!k) return 1;
    const char *n = k->name;
    if (!strcmp(n, "model_bytes")) c->model_bytes = v->d;
    else if (!strcmp(n, "bandwidth")) c->ps_bw = c->worker_bw = v->d;
    else if (!strcmp(n, "ps_bandwidth")) c->ps_bw = v->d;
    else if (!strcmp(n, "worker_bandwidth")) c->worker_bw = v->d;
    else if (!strcmp(n, "latency")) c->latency = v->d;
    else if (!strcmp(n, "ps_latency")) c->ps_latency = v->d;
    else if (!strcmp(n, "compute")) return sim_parse_dist(v->text, &c->compute, err);
    else if (!strcmp(n, "hosts")) return sim_parse_hosts(v->text, &c->hosts, err);
    else if (!strcmp(n, "cores_per_host")) c->cores_per_host = (int)v->i;
    else if (!strcmp(n, "ps_pull_cost")) return sim_parse_ps_cost(v->text, what, &c->ps_pull_cost, err);
    else if (!strcmp(n, "ps_push_cost")) return sim_parse_ps_cost(v->text, what, &c->ps_push_cost, err);
    else if (!strcmp(n, "copy_bandwidth")) {
        c->copy_rate = 0;
        return strcmp(v->text, "0") ? dp_parse_bandwidth(v->text, what, &c->copy_rate, err) : DP_OK;
    } else if (!strcmp(n, "ps_send_bandwidth")) {
        c->ps_send_rate = 0;
        return strcmp(v->text, "0") ? dp_parse_bandwidth(v->text, what, &c->ps_send_rate, err) : DP_OK;
    } else if (!strcmp(n, "nqm_dims")) c->nqm_dims = (int)v->i;
    else if (!strcmp(n, "eval_every")) c->eval_every = (int)v->i;
    else if (!strcmp(n, "eval_time")) c->eval_s = v->d;
    else if (!strcmp(n, "pipeline")) c->pipeline = v->d;
    else if (!strcmp(n, "max_sim_time")) c->max_sim_s = v->d;
    else if (!strcmp(n, "trace_level")) return sim_parse_trace_level(v->text, &c->trace_level, &c->trace_sample, err);
    else if (!strcmp(n, "trace")) snprintf(c->trace, sizeof c->trace, "%s", v->text);
    else if (!strcmp(n, "fail")) {
        if (c->n_failures == SIM_MAX_FAILURES)
            return dp_fail(err, DP_EINVAL, "%s: at most %d failures", what, SIM_MAX_FAILURES);
        int rc = run_fault_parse(v->text, what, &c->failures[c->n_failures], err);
        if (!rc) c->n_failures++;
        return rc;
    } else return 1;
    return 0;
}

void sim_config_init(sim_config *c)
{
    memset(c, 0, sizeof *c);
    c->nqm_noise = 1.0;
    c->trace_sample = 16;
    run_defaults(&c->run, RUN_SIM, sim_extra, c);
}

int sim_config_set(sim_config *c, const char *name, const char *text, const char *what, char *err)
{
    return run_set(&c->run, RUN_SIM, sim_extra, c, name, text, what, err);
}

/* The options' own keys (not the simulation's): --summary, --calibrate-from, --quiet. */
static int opt_extra(void *ctx, const run_key *k, const run_value *v, const char *what, char *err)
{
    sim_options *o = ctx;
    if (!k) return 1;
    if (!strcmp(k->name, "summary")) snprintf(o->summary, sizeof o->summary, "%s", v->text);
    else if (!strcmp(k->name, "calibrate_from")) snprintf(o->calibrate, sizeof o->calibrate, "%s", v->text);
    else if (!strcmp(k->name, "quiet")) o->quiet = (int)v->i;
    else return sim_extra(&o->c, k, v, what, err);
    return 0;
}

void sim_options_init(sim_options *o)
{
    memset(o, 0, sizeof *o);
    sim_config_init(&o->c);
}

int sim_options_set(sim_options *o, const char *name, const char *text, const char *what, char *err)
{
    const run_key *k = run_key_find(name);
    if (k) {
        size_t n;
        const run_key *all = run_keys(&n);
        if ((size_t)(k - all) < sizeof o->seen) o->seen[k - all] = 1;
    }
    return run_set(&o->c.run, RUN_SIM, opt_extra, o, name, text, what, err);
}

int sim_options_parse(sim_options *o, int argc, char **argv, char *err)
{
    size_t n;
    run_keys(&n);
    dp_assert("sim: seen[] holds every key", n <= sizeof o->seen);
    return run_parse_argv(&o->c.run, RUN_CMD_SIM, opt_extra, o, argc, argv, o->seen, err);
}

/* Whether the key `name` was given (a flag or a scenario key). */
static int given(const sim_options *o, const char *name)
{
    return run_key_seen(o->seen, sizeof o->seen, name);
}

void sim_options_calibrate(sim_options *o, const sim_calibration *cal)
{
    sim_config *c = &o->c;
    int set_bw = given(o, "bandwidth"), set_psbw = given(o, "ps_bandwidth"), set_wkbw = given(o, "worker_bandwidth");
    int set_model = given(o, "model") || given(o, "model_bytes");
    /* A real run on shared cores that measured its CPU: the ps's work (fitted) and the
     * workers' copying (measured) load the cores, unless the flags say otherwise. */
    int measured = cal->cpu_measured && cal->cores > 0;
    if (measured && !given(o, "ps_pull_cost") && !given(o, "ps_push_cost"))
        c->ps_pull_cost.fit = c->ps_push_cost.fit = 1;

    /* "fit": the ps's fitted work, and the network, compute and speeds fitted with it;
     * else those with its work folded in, as without the model */
    int psm = c->ps_pull_cost.fit || c->ps_push_cost.fit;
    double bw = psm ? cal->ps_bandwidth : cal->bandwidth, push_bw = psm ? cal->ps_push_bandwidth : cal->push_bandwidth;
    double lat = psm ? cal->ps_latency : cal->latency;
    if (c->ps_pull_cost.fit) c->ps_pull_cost = cal->ps_pull_cost;
    if (c->ps_push_cost.fit) c->ps_push_cost = cal->ps_push_cost;
    if (!given(o, "ps") && cal->n_ps > 0) c->n_ps = cal->n_ps;
    if (!given(o, "workers") && cal->n_workers > 0) c->n_workers = cal->n_workers;
    if (!given(o, "mode") && cal->mode >= 0) c->mode = (update_mode)cal->mode;
    if (!given(o, "compute") && cal->compute.mean > 0) c->compute = psm ? cal->ps_compute : cal->compute;
    if (!set_bw && !set_psbw && bw > 0) c->ps_bw = bw;
    if (!set_bw && !set_wkbw && bw > 0) c->worker_bw = bw;
    if (!given(o, "latency") && lat >= 0) c->latency = lat;
    if (!set_bw && !set_psbw && !set_wkbw && push_bw > 0) c->ps_push_bw = c->worker_push_bw = push_bw;
    if (!given(o, "steps") && cal->steps > 0) c->steps = cal->steps;
    if (!set_model) {
        if (cal->model[0] && !model_parse(cal->model, &c->model)) {
            if (cal->hidden > 0) c->hidden = cal->hidden;
            if (cal->partition > 0 && !c->partition) c->partition = cal->partition;
        } else if (cal->model_bytes > 0) {
            c->model_bytes = cal->model_bytes;
        }
    }
    if (cal->batch > 0) c->batch = cal->batch;
    /* the recorded hosts and cores (a local launcher: one host, its cores); the trace's
     * placements only while they name tasks of this cluster */
    if (!given(o, "hosts") && cal->hosts.n > 0) {
        int keep = 1;
        for (int i = 0; i < cal->hosts.n_rules; i++)
            keep &= cal->hosts.rule[i].last < (cal->hosts.rule[i].job == JOB_PS ? c->n_ps : c->n_workers);
        c->hosts = cal->hosts;
        if (!keep) c->hosts.n_rules = 0;
    }
    if (!given(o, "cores_per_host") && cal->cores > 0) c->cores_per_host = cal->cores;
    if (measured && !given(o, "copy_bandwidth")) c->copy_rate = cal->copy_rate;
    if (psm && !given(o, "ps_send_bandwidth")) c->ps_send_rate = cal->ps_send_rate;
    if (!given(o, "pipeline")) c->pipeline = cal->pipeline;
    if (!given(o, "eval_time")) c->eval_s = cal->eval_s;
    if (!given(o, "eval_every") && cal->eval_every >= 0) c->eval_every = cal->eval_every;
    if (psm && cal->ps_msg_latency > 0 && !given(o, "latency") && !given(o, "ps_latency"))
        c->ps_latency = cal->ps_msg_latency;
    if (!given(o, "straggler") && cal->n_stragglers) {
        int keep = 1;
        for (int i = 0; i < cal->n_stragglers; i++) keep &= cal->stragglers[i].worker < c->n_workers;
        if (keep) {
            memcpy(c->stragglers, cal->stragglers, sizeof c->stragglers);
            c->n_stragglers = cal->n_stragglers;
        }
    }
    /* all on one host with the ps's work its own: the transfers cross no ps NIC
     * (loopback), each goes as fast as its worker takes it */
    if (measured && psm && c->hosts.n == 1 && !set_bw && !set_psbw) c->ps_bw = c->ps_push_bw = SIM_FREE_BW;
    /* per-worker speeds carry over when the cluster has the same workers */
    if (cal->speed && cal->n_speed == c->n_workers) c->speed = psm && cal->ps_speed ? cal->ps_speed : cal->speed;
}

char *sim_summary_line(const sim_config *c, const sim_result *r, double wall_s)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    run_result rr = {
        .engine = "sim", .global_step = r->global_step + c->step_offset, .wall_s = wall_s,
        .mean_step_s = r->mean_step_s, .samples_per_s = r->samples_per_s,
        .final_loss = r->final_loss, .test_accuracy = NAN, .mean_staleness = r->mean_staleness,
        .max_staleness = r->max_staleness, .dropped_gradients = r->dropped,
        .min_variable_step = r->min_variable_step, .bytes_pulled = r->bytes_pulled,
        .bytes_pushed = r->bytes_pushed, .events = r->trace_events, .events_dropped = 0,
        .trace = c->trace,
    };
    json_t *j = run_summary_json(&c->run, &rr);
    json_object_set_new(j, "loss_model", json_string("noisy quadratic surrogate"));
    json_object_set_new(j, "not_modelled", json_string(SIM_NOT_MODELLED));
    if (c->step_offset) {
        /* a fork: its steps continue the recorded run's */
        json_object_set_new(j, "steps", json_integer((json_int_t)(c->steps + c->step_offset)));
        json_object_set_new(j, "fork_at_step", json_integer((json_int_t)c->step_offset));
    }
    json_object_set_new(j, "model_bytes", json_integer((json_int_t)r->model_bytes));
    json_object_set_new(j, "hosts", json_integer(c->hosts.n));
    json_object_set_new(j, "cores_per_host", json_integer(c->cores_per_host));
    json_object_set_new(j, "copy_bandwidth", json_real(c->copy_rate));
    json_object_set_new(j, "ps_send_bandwidth", json_real(c->ps_send_rate));
    json_object_set_new(j, "pipeline", json_real(c->mode == MODE_SYNC ? 0 : c->pipeline));
    json_object_set_new(j, "eval_every", json_integer(c->eval_every));
    json_object_set_new(j, "eval_time_s", json_real(c->eval_s));
    char cost[96];
    sim_ps_cost_format(&c->ps_pull_cost, cost, sizeof cost);
    json_object_set_new(j, "ps_pull_cost", json_string(cost));
    sim_ps_cost_format(&c->ps_push_cost, cost, sizeof cost);
    json_object_set_new(j, "ps_push_cost", json_string(cost));
    json_object_set_new(j, "latency_s", json_real(c->latency));
    json_object_set_new(j, "ps_latency_s", json_real(c->ps_latency > 0 ? c->ps_latency : c->latency));
    json_object_set_new(j, "bandwidth_Bps", json_real(c->ps_bw));
    json_object_set_new(j, "push_bandwidth_Bps", json_real(c->ps_push_bw > 0 ? c->ps_push_bw : c->ps_bw));
    json_object_set_new(j, "sim_time_s", json_real(r->sim_s));
    json_object_set_new(j, "sim_events", json_integer((json_int_t)r->sim_events));
    json_object_set_new(j, "events_per_s", json_real(wall_s > 0 ? (double)r->sim_events / wall_s : 0));
    json_object_set_new(j, "net_solves", json_integer((json_int_t)r->net_solves));
    json_object_set_new(j, "peak_rss_mb", json_real((double)ru.ru_maxrss / 1024.0));
    json_object_set_new(j, "stalled", json_boolean(r->stalled));
    json_object_set_new(j, "stopped_by_max_sim_time", json_boolean(r->timed_out));
    char *line = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(j);
    return line;
}

void sim_bar_init(sim_bar *b, int tty)
{
    b->tty = tty;
    b->last = -1;
    b->t0 = dp_now_ns();
    b->prefix = "sim";
}

void sim_bar_progress(const sim_progress *p, void *ctx)
{
    sim_bar *b = ctx;
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
    fprintf(stderr, "\r%s [%s] %3.0f%%  step %lld/%lld  sim %.3fs  %.2fM events  %.1fs", b->prefix,
            fill, frac * 100, (long long)p->global_step, (long long)p->steps, p->sim_s,
            (double)p->events / 1e6, wall);
    fflush(stderr);
}
