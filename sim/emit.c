/* emit.c — the simulator's events, in the runtime's vocabulary (events/event.h) and into
 * the same trace files (events/trace.h, metadata "engine":"sim"). Trace levels: full
 * (everything), sample (per-message events only for an evenly spaced sample of workers,
 * always including the chief; for the others their phases — compute, barrier, ssp, and
 * one pull and one push event pair per step for the whole model, with no variable;
 * every worker's step_end; every ps event about a sampled worker; global steps and
 * failures), steps (step_end, global_step, failures). Events
 * are only ever emitted at the current virtual time, so the trace is time-ordered; with
 * the ps's own work (psq.c) a ps's events about a message wait until it has done the
 * work and are emitted then, at that time, as the runtime's ps emits them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/spec.h"
#include "sim/world.h"

/* A fork's events read as the continuation of the run it forks (see sim_config). */
static void shift_fork(const sim_config *c, double loss_scale, evt_record *e)
{
    e->t += c->time_offset_ns;
    switch (e->kind) {
    case EVT_GLOBAL_STEP: case EVT_APPLY: case EVT_DROP: case EVT_EVAL: case EVT_CHECKPOINT_WRITE:
        e->step += c->step_offset;
        break;
    case EVT_STEP_END:
        e->step += c->local_offset;
        e->value2 += (double)c->step_offset;
        e->value *= loss_scale;
        break;
    case EVT_SSP_WAIT: case EVT_SSP_RELEASE:
        e->value += (double)c->local_offset;
        e->step += c->local_offset;
        break;
    case EVT_PULL_BEGIN: case EVT_PULL_END: case EVT_PUSH_BEGIN: case EVT_PUSH_END:
    case EVT_COMPUTE_BEGIN: case EVT_COMPUTE_END: case EVT_BARRIER_WAIT: case EVT_BARRIER_RELEASE:
    case EVT_PACED_BEGIN: case EVT_PACED_END:
        e->step += c->local_offset;
        break;
    default:
        break;
    }
}

void sim_emit(sim_world *w, const evt_record *e)
{
    if (!w->tw || w->trace_err) return;
    const sim_config *c = w->cfg;
    if (c->step_offset || c->time_offset_ns || c->local_offset || w->loss_scale != 1) {
        evt_record f = *e;
        shift_fork(c, w->loss_scale, &f);
        if (trace_writer_add(w->tw, &f)) w->trace_err = 1;
        return;
    }
    if (trace_writer_add(w->tw, e)) w->trace_err = 1;
}

void sim_emit_wk(sim_world *w, int kind, int wk, int ps, int var, int64_t step, int64_t bytes,
                 int64_t dur, double value, double value2, uint64_t id)
{
    if (!w->tw) return;
    if (!w->detail[wk] && kind != EVT_STEP_END && kind != EVT_FAILURE && kind != EVT_RECOVERY) {
        /* Sampled-out workers keep their per-worker phases (compute, barrier, ssp); their
         * transfers come as whole-phase events from sim_emit_wk_phase. */
        int phase = kind == EVT_COMPUTE_BEGIN || kind == EVT_COMPUTE_END || kind == EVT_BARRIER_WAIT ||
                    kind == EVT_BARRIER_RELEASE || kind == EVT_SSP_WAIT || kind == EVT_SSP_RELEASE;
        if (!w->aggregate || !phase) return;
    }
    evt_record e;
    evt_init(&e, (evt_kind)kind, EVT_JOB_WORKER, wk);
    e.t = w->now;
    if (ps >= 0) {
        e.peer = ps;
        e.peer_job = EVT_JOB_PS;
    }
    if (var >= 0) e.var = w->vars[var].sid;
    if (kind == EVT_COMPUTE_BEGIN || kind == EVT_COMPUTE_END) e.device = w->wk_dev[wk];
    e.step = step;
    e.bytes = bytes;
    e.dur = dur;
    e.value = value;
    e.value2 = value2;
    e.id = id;
    sim_emit(w, &e);
}

void sim_emit_wk_phase(sim_world *w, int kind, int wk, int64_t step, int64_t dur)
{
    if (!w->tw || !w->aggregate || w->detail[wk]) return;
    evt_record e;
    evt_init(&e, (evt_kind)kind, EVT_JOB_WORKER, wk);
    e.t = w->now;
    e.step = step;
    e.bytes = (int64_t)w->model_bytes;
    e.dur = dur;
    sim_emit(w, &e);
}

void sim_emit_ps(sim_world *w, int kind, int ps, int wk, int var, int64_t step, double value,
                 uint64_t id)
{
    if (!w->tw) return;
    if (kind != EVT_GLOBAL_STEP && wk >= 0 && !w->detail[wk]) return;
    /* as the runtime: APPLY / DROP only for gradients, not for the global-step token */
    if ((kind == EVT_APPLY || kind == EVT_DROP) && !w->cat.v[var].trainable) return;
    evt_record e;
    evt_init(&e, (evt_kind)kind, EVT_JOB_PS, ps);
    e.t = w->now;
    e.device = w->ps_dev[ps];
    if (var >= 0) e.bytes = (int64_t)w->cat.v[var].count * 4;
    if (wk >= 0) {
        e.peer = wk;
        e.peer_job = EVT_JOB_WORKER;
    }
    if (var >= 0) e.var = w->vars[var].sid;
    e.step = step;
    e.value = value;
    e.id = id;
    if (w->holding) {
        /* the ps's own work is modelled: it emits this when done with the message (psq.c) */
        if (w->n_hev == w->cap_hev) {
            w->cap_hev = w->cap_hev ? 2 * w->cap_hev : 16;
            w->hev = xrealloc(w->hev, (size_t)w->cap_hev * sizeof *w->hev);
        }
        w->hev[w->n_hev++] = e;
        return;
    }
    sim_emit(w, &e);
}

/* The run's configuration as JSON (no creation time: it goes in the metadata only): the
 * run description's keys (cluster/run.c), then the simulator's own. Caller frees. */
static char *config_json(const sim_world *w)
{
    const sim_config *c = w->cfg;
    char dist[128];
    sim_dist_format(&c->compute, dist, sizeof dist);
    json_t *o = run_desc_json(&c->run, "sim");
    /* what the model came out as (model_bytes picks the hidden width and the parts) */
    json_object_set_new(o, "hidden", json_integer(w->cat.hidden));
    json_object_set_new(o, "partition", json_integer(w->partition));
    json_object_set_new(o, "model_bytes", json_real(w->model_bytes));
    json_object_set_new(o, "ps_bandwidth_Bps", json_real(c->ps_bw));
    json_object_set_new(o, "worker_bandwidth_Bps", json_real(c->worker_bw));
    json_object_set_new(o, "latency_s", json_real(c->latency));
    json_object_set_new(o, "compute", json_string(dist));
    json_object_set_new(o, "loss", json_string("noisy quadratic surrogate"));
    json_object_set_new(o, "nqm_dims", json_integer(c->nqm_dims));
    json_object_set_new(o, "failures", json_integer(c->n_failures));
    if (c->eval_every > 0 && c->eval_s > 0) {  /* only when modelled: other traces stay as they were */
        json_object_set_new(o, "eval_every", json_integer(c->eval_every));
        json_object_set_new(o, "eval_time_s", json_real(c->eval_s));
    }
    if (w->psm) {  /* only with the ps's own work: traces without it stay as they were */
        char t[96];
        sim_ps_cost_format(&c->ps_pull_cost, t, sizeof t);
        json_object_set_new(o, "ps_pull_cost", json_string(t));
        sim_ps_cost_format(&c->ps_push_cost, t, sizeof t);
        json_object_set_new(o, "ps_push_cost", json_string(t));
        json_object_set_new(o, "ps_send_bandwidth", json_real(c->ps_send_rate));
    }
    if (c->hosts.n > 0) {
        /* as the real launcher writes them (runtime/launcher.c): one object per host, and
         * where the tasks run in --hosts syntax */
        json_t *hosts = json_array();
        for (int h = 0; h < c->hosts.n; h++) {
            char name[32];
            snprintf(name, sizeof name, "sim-host-%d", h);
            json_array_append_new(hosts, json_pack("{s:s,s:i}", "name", name, "cores", c->cores_per_host));
        }
        json_object_set_new(o, "hosts", hosts);
        char spec[8192];
        sim_hosts_format(&c->hosts, spec, sizeof spec);
        json_object_set_new(o, "task_hosts", json_string(spec));
    }
    json_t *lesson = c->lesson_json ? json_loads(c->lesson_json, 0, NULL) : NULL;
    if (lesson) json_object_set_new(o, "lesson", lesson);
    json_t *fork = c->fork_json ? json_loads(c->fork_json, 0, NULL) : NULL;
    if (fork) json_object_set_new(o, "fork", fork);
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

int sim_emit_open(sim_world *w, char *err)
{
    const sim_config *c = w->cfg;
    int level = c->trace_level;
    if (level == SIM_TRACE_AUTO) level = w->W <= 64 ? SIM_TRACE_FULL : SIM_TRACE_SAMPLE;
    int sample = c->trace_sample > 0 ? c->trace_sample : 16;
    for (int i = 0; i < w->W; i++) {
        if (level == SIM_TRACE_FULL) w->detail[i] = 1;
        else if (level == SIM_TRACE_SAMPLE) {
            int stride = (w->W + sample - 1) / sample;
            w->detail[i] = i % stride == 0;
        }
    }
    w->aggregate = level == SIM_TRACE_SAMPLE;
    w->per_msg = c->trace[0] && (level == SIM_TRACE_FULL || level == SIM_TRACE_SAMPLE);
    if (!c->trace[0]) return DP_OK;
    char *cfg = config_json(w);
    size_t mlen = strlen(cfg) + 512;
    char *meta = xmalloc(mlen);
    snprintf(meta, mlen,
             "{\"engine\":\"sim\",\"format\":\"downpour-sim/1\",\"config\":%s,\"seed\":%llu,"
             "\"cluster\":{\"ps\":%d,\"workers\":%d},\"trace_level\":\"%s\",\"created_ns\":%llu}",
             cfg, (unsigned long long)c->seed, w->P, w->W,
             level == SIM_TRACE_FULL ? "full" : level == SIM_TRACE_SAMPLE ? "sample" : "steps",
             (unsigned long long)dp_wall_ns());
    w->tw = trace_writer_open(c->trace, meta, err);
    free(meta);
    if (!w->tw) {
        free(cfg);
        return DP_EIO;
    }
    char name[160];
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.str = trace_writer_intern(w->tw, cfg);
    free(cfg);
    sim_emit(w, &e);
    for (int j = 0; j < 2; j++) {
        int n = j ? w->W : w->P;
        for (int i = 0; i < n; i++) {
            int job = j ? EVT_JOB_WORKER : EVT_JOB_PS;
            evt_init(&e, EVT_TASK_START, job, i);
            snprintf(name, sizeof name, "sim-%s-%d", j ? "worker" : "ps", i);
            e.str = trace_writer_intern(w->tw, name);
            sim_emit(w, &e);
            spec_device_name(name, sizeof name, j ? JOB_WORKER : JOB_PS, i, "CPU", 0);
            uint32_t dev = trace_writer_intern(w->tw, name);
            if (j) w->wk_dev[i] = dev;
            else w->ps_dev[i] = dev;
            evt_init(&e, EVT_DEVICE, job, i);
            e.device = dev;
            sim_emit(w, &e);
        }
    }
    for (int v = 0; v < w->nv; v++) {
        const var_def *d = &w->cat.v[v];
        w->vars[v].sid = trace_writer_intern(w->tw, d->name);
        char shape[64];
        if (d->ndim == 2) snprintf(shape, sizeof shape, "%dx%d", d->rows, d->cols);
        else if (d->ndim == 1) snprintf(shape, sizeof shape, "%d", d->rows);
        else snprintf(shape, sizeof shape, "scalar");
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_CLIENT, 0);
        e.var = w->vars[v].sid;
        e.str = trace_writer_intern(w->tw, shape);
        e.bytes = (int64_t)d->bytes;
        sim_emit(w, &e);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_CLIENT, 0);
        e.var = w->vars[v].sid;
        e.peer = d->ps;
        e.peer_job = EVT_JOB_PS;
        e.device = w->ps_dev[d->ps];
        sim_emit(w, &e);
    }
    return w->trace_err ? dp_fail(err, DP_EIO, "%s: write failed", c->trace) : DP_OK;
}

int sim_emit_close(sim_world *w, const sim_result *res, char *err)
{
    if (!w->tw) return DP_OK;
    evt_record e;
    for (int j = 0; j < 2; j++) {
        int n = j ? w->W : w->P;
        for (int i = 0; i < n; i++) {
            evt_init(&e, EVT_TASK_STOP, j ? EVT_JOB_WORKER : EVT_JOB_PS, i);
            e.t = w->now;
            sim_emit(w, &e);
        }
    }
    evt_init(&e, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0);
    e.t = w->now;
    e.value = res->sim_s;
    sim_emit(w, &e);
    char *cfg = config_json(w);
    json_t *m = json_object();
    json_object_set_new(m, "engine", json_string("sim"));
    json_object_set_new(m, "format", json_string("downpour-sim/1"));
    json_object_set_new(m, "config", json_loads(cfg, 0, NULL));
    json_object_set_new(m, "seed", json_integer((json_int_t)w->cfg->seed));
    json_t *cl = json_object();
    json_object_set_new(cl, "ps", json_integer(w->P));
    json_object_set_new(cl, "workers", json_integer(w->W));
    json_object_set_new(m, "cluster", cl);
    json_t *fin = json_object();
    json_object_set_new(fin, "global_step", json_integer((json_int_t)res->global_step));
    json_object_set_new(fin, "sim_time_s", json_real(res->sim_s));
    json_object_set_new(fin, "mean_step_s", json_real(res->mean_step_s));
    /* a diverged surrogate has no finite loss: null, never "nan" (not JSON) */
    json_object_set_new(fin, "final_loss", isfinite(res->final_loss) ? json_real(res->final_loss) : json_null());
    json_object_set_new(fin, "stalled", json_integer(res->stalled));
    json_object_set_new(m, "final", fin);
    char *meta = json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(m);
    free(cfg);
    trace_writer_set_final_metadata(w->tw, meta);
    free(meta);
    w->trace_events = trace_writer_events(w->tw);
    int failed = w->trace_err;
    char e2[DP_ERRLEN];
    int rc = trace_writer_close(w->tw, e2);
    w->tw = NULL;
    if (failed) return dp_fail(err, DP_EIO, "%s: write failed", w->cfg->trace);
    if (rc) return dp_fail(err, rc, "%s", e2);
    return DP_OK;
}
