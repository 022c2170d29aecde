/* run.c — one simulation from configuration to result: defaults and checks, building the
 * world (catalogue and placement through cluster/vars.h, accumulators, network links,
 * workers with their RNG streams and speeds), the main loop, and the summary numbers.
 * Main loop invariant: all events at the current instant run before the network's flows
 * of that instant start (so simultaneous starters share one flow group and one solve),
 * then time moves to the earlier of the next event and the next flow completion. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "sim/world.h"

int sim_config_check(const sim_config *c, char *err)
{
    int rc = run_check(&c->run, err);
    if (rc) return rc;
    if (c->ps_pull_cost.fit || c->ps_push_cost.fit)
        return dp_fail(err, DP_EINVAL, "--%s fit: the ps's work is fitted by --calibrate-from, which is not given",
                       c->ps_pull_cost.fit ? "ps-pull-cost" : "ps-push-cost");
    if (!(c->ps_bw > 0) || !(c->worker_bw > 0)) return dp_fail(err, DP_EINVAL, "--bandwidth: must be positive");
    if (!(c->compute.mean >= 0)) return dp_fail(err, DP_EINVAL, "--compute: mean must not be negative");
    if (c->model_bytes < 0 || c->model_bytes > 200e9)
        return dp_fail(err, DP_EINVAL, "--model-bytes: must be in 0..200GB");
    for (int i = 0; i < c->hosts.n_rules; i++) {
        const sim_host_rule *h = &c->hosts.rule[i];
        int n = h->job == JOB_PS ? c->n_ps : c->n_workers;
        if (h->last >= n)
            return dp_fail(err, DP_EINVAL, "--hosts: %s %d does not exist (%d %s tasks)",
                           spec_job_name((dp_job)h->job), h->last, n, spec_job_name((dp_job)h->job));
    }
    for (int i = 0; i < c->n_failures; i++) {
        const sim_failure *f = &c->failures[i];
        int n = f->job == JOB_PS ? c->n_ps : c->n_workers;
        if (f->task >= n)
            return dp_fail(err, DP_EINVAL, "--fail: %s %d does not exist (%d %s tasks)",
                           spec_job_name((dp_job)f->job), f->task, n, spec_job_name((dp_job)f->job));
    }
    return DP_OK;
}

/* ps links whose shards have equal bytes (and, per direction, equal capacity) are
 * interchangeable: every cohort sends each of them the same flow, so the network keeps
 * one group per class (sim_net_twin); the allocation and every completion are the same. */
static void declare_twins(sim_world *w)
{
    int pairs = 0;
    /* not with the ps's own work: equal shards' answers leave when each ps is done */
    for (int p = 0; p < w->P && !w->cfg->no_shortcuts && !w->psm; p++) {
        if (w->ps_bytes[p] <= 0) continue;
        for (int q = 0; q < p; q++) {
            if (w->ps_bytes[q] != w->ps_bytes[p]) continue;
            sim_net_twin(w->net, w->ps_up[p], w->ps_up[q]);
            sim_net_twin(w->net, w->ps_down[p], w->ps_down[q]);
            pairs++;
            break;
        }
    }
    w->twins = pairs > 0;
    w->co_links = xmalloc((size_t)w->P * sizeof *w->co_links);
    w->co_bytes = xmalloc((size_t)w->P * sizeof *w->co_bytes);
    w->co_cookies = xmalloc((size_t)w->P * sizeof *w->co_cookies);
}

/* Sync, twins, no ps failures: one lock per twin class of ps with pushed variables
 * (see sim_lock in world.h). Needs ps_acc, ps_dims, ps_dim, declare_twins' classes. */
static void make_locks(sim_world *w)
{
    w->ps_lock = xmalloc((size_t)w->P * sizeof *w->ps_lock);
    w->ps_lock_off = xcalloc((size_t)w->P, sizeof *w->ps_lock_off);
    for (int p = 0; p < w->P; p++) w->ps_lock[p] = -1;
    int ps_fail = 0;
    for (int i = 0; i < w->cfg->n_failures; i++) ps_fail |= w->cfg->failures[i].job == JOB_PS;
    if (!w->twins || ps_fail) return;
    w->locks = xcalloc((size_t)w->P, sizeof *w->locks);
    for (int p = 0; p < w->P; p++) {
        if (!w->ps_acc[p] || w->ps_bytes[p] <= 0) continue;
        int q = 0;  /* the class's first ps with a lock (declare_twins: equal bytes) */
        while (q < p && !(w->ps_lock[q] >= 0 && w->ps_bytes[q] == w->ps_bytes[p])) q++;
        if (q == p) {
            int twin = 0;
            for (int r = p + 1; r < w->P && !twin; r++) twin = w->ps_bytes[r] == w->ps_bytes[p];
            if (!twin) continue;  /* alone in its class: its own accumulator */
            w->ps_lock[p] = w->n_locks++;
        } else {
            w->ps_lock[p] = w->ps_lock[q];
        }
        sim_lock *L = &w->locks[w->ps_lock[p]];
        w->ps_lock_off[p] = L->dims;
        L->dim = xrealloc(L->dim, (size_t)(L->dims + w->ps_dims[p] + 1) * sizeof *L->dim);
        for (int i = 0; i < w->ps_dims[p]; i++) L->dim[L->dims++] = w->ps_dim[w->ps_dim0[p] + i];
    }
    int R = w->W - w->cfg->backup_workers;
    for (int l = 0; l < w->n_locks; l++) {
        sim_lock *L = &w->locks[l];
        L->acc = sync_acc_new(w->W, R, (size_t)L->dims, 0);
        L->mean = xcalloc((size_t)(L->dims ? L->dims : 1), sizeof *L->mean);
        L->rel = xmalloc((size_t)w->W * sizeof *L->rel);
        L->stamp = xcalloc((size_t)w->W, sizeof *L->stamp);
        L->st = xcalloc((size_t)w->W, sizeof *L->st);
        L->cur = xcalloc((size_t)w->W, sizeof *L->cur);
    }
    for (int p = 0; p < w->P; p++)  /* a locked ps's own accumulator is not used */
        if (w->ps_lock[p] >= 0) {
            sync_acc_free(w->ps_acc[p]);
            w->ps_acc[p] = NULL;
        }
}

/* --hosts / --cores-per-host: the shared cores, only where some host has more busy
 * tasks than cores (its workers, and its ps with the ps's own work; elsewhere no work can
 * slow down, and it runs as without hosts), or where the workers' copying is work on
 * them (--copy-bandwidth: a pull or push lasts at least its copying, shared or not).
 * Task ids: worker k is k, ps p is W + p. */
static void hosts_init(sim_world *w)
{
    const sim_config *c = w->cfg;
    int H = c->hosts.n;
    if (H <= 0 || c->cores_per_host <= 0) return;
    int *count = xcalloc((size_t)H, sizeof *count), crowded = c->copy_rate > 0;
    w->wk_host = xmalloc((size_t)w->W * sizeof *w->wk_host);
    for (int k = 0; k < w->W; k++) {
        w->wk_host[k] = sim_host_of(&c->hosts, w->P, JOB_WORKER, k);
        crowded |= ++count[w->wk_host[k]] > c->cores_per_host;
    }
    if (w->psm) {
        w->ps_host = xmalloc((size_t)w->P * sizeof *w->ps_host);
        for (int p = 0; p < w->P; p++) {
            w->ps_host[p] = sim_host_of(&c->hosts, w->P, JOB_PS, p);
            crowded |= ++count[w->ps_host[p]] > c->cores_per_host;
        }
    }
    free(count);
    if (!crowded) return;
    w->cpu = sim_cpu_new(H, c->cores_per_host, w->W + (w->psm ? w->P : 0));
    w->cpu_at = xmalloc((size_t)H * sizeof *w->cpu_at);
    for (int h = 0; h < H; h++) w->cpu_at[h] = INT64_MAX;
    w->cpu_gen = xcalloc((size_t)H, sizeof *w->cpu_gen);
    w->cpu_done = xmalloc((size_t)(w->W + w->P) * sizeof *w->cpu_done);
}

static int world_init(sim_world *w, const sim_config *c, char *err)
{
    memset(w, 0, sizeof *w);
    w->cfg = c;
    w->P = c->n_ps;
    w->W = c->n_workers;
    w->free_ack = -1;
    w->open_ack = -1;
    w->free_db = -1;
    sim_heap_init(&w->heap);
    dp_rng_seed(&w->rng, c->seed);
    w->lat_ns = (int64_t)llround(c->latency * 1e9);
    w->lat_ps_ns = c->ps_latency > 0 ? (int64_t)llround(c->ps_latency * 1e9) : w->lat_ns;
    model_kind model = c->model;
    int hidden = c->hidden, partition = c->partition > 0 ? c->partition : 1;
    if (c->model_bytes > 0) {
        /* an MLP 784-H-10 whose float32 variables add up to about model_bytes */
        double h = (c->model_bytes / 4 - 10) / (MODEL_INPUTS + 1 + MODEL_CLASSES);
        model = MODEL_MLP;
        hidden = h < 1 ? 1 : h > 65536 ? 65536 : (int)llround(h);
        if (c->partition <= 0) partition = c->n_ps < 1024 ? c->n_ps : 1024;
    }
    w->partition = partition;
    int rc = catalog_build(&w->cat, model, hidden, partition, err);
    if (rc) return rc;
    rc = catalog_place(&w->cat, w->P, c->placement, err);
    if (rc) return rc;
    w->nv = w->cat.n;
    w->step_var = catalog_find(&w->cat, "global_step");
    dp_assert("sim: the catalogue starts with global_step", w->step_var == 0);
    w->ps_first = xcalloc((size_t)w->P + 1, sizeof *w->ps_first);
    w->ps_vars = xmalloc((size_t)w->nv * sizeof *w->ps_vars);
    w->ps_bytes = xcalloc((size_t)w->P, sizeof *w->ps_bytes);
    for (int v = 0; v < w->nv; v++) w->ps_first[w->cat.v[v].ps + 1]++;
    for (int p = 0; p < w->P; p++) w->ps_first[p + 1] += w->ps_first[p];
    int *fill = xcalloc((size_t)w->P, sizeof *fill);
    for (int v = 0; v < w->nv; v++) {
        int p = w->cat.v[v].ps;
        w->ps_vars[w->ps_first[p] + fill[p]++] = v;
        /* what goes over the wire: the floats (global_step's payload is empty) */
        w->ps_bytes[p] += (double)w->cat.v[v].count * 4;
        w->model_bytes += (double)w->cat.v[v].count * 4;
    }
    free(fill);
    /* --pipeline: backward finishes every gradient but the first layer's weights (nn order
     * 0, the last op) before its end; async / ssp push them then (runtime/worker_net.c,
     * wk_step_progress). Sync is pushed as a whole: see SIM_NOT_MODELLED. */
    if (c->mode != MODE_SYNC && c->pipeline > 0) {
        w->early_var = xcalloc((size_t)w->nv, 1);
        w->ps_early = xcalloc((size_t)w->P, sizeof *w->ps_early);
        w->ps_early_bytes = xcalloc((size_t)w->P, sizeof *w->ps_early_bytes);
        for (int v = 0; v < w->nv; v++) {
            const var_def *d = &w->cat.v[v];
            if (!d->trainable || d->base_index <= 0) continue;
            w->early_var[v] = 1;
            w->n_early++;
            w->ps_early[d->ps]++;
            w->ps_early_bytes[d->ps] += (double)d->count * 4;
        }
    }
    w->push_first = xmalloc((size_t)w->P * sizeof *w->push_first);
    for (int p = 0; p < w->P; p++) {
        int j = w->ps_first[p];
        if (c->mode == MODE_SYNC && j < w->ps_first[p + 1] && w->ps_vars[j] == w->step_var) j++;
        w->push_first[p] = j;
    }
    optim_conf_init(&w->opt, c->optimizer, (float)c->lr);
    w->vars = xcalloc((size_t)w->nv, sizeof *w->vars);
    sim_nqm_init(w);
    if (c->mode == MODE_SYNC) {
        int R = w->W - c->backup_workers;
        w->vars[w->step_var].acc = sync_acc_new(w->W, R, (size_t)w->vars[w->step_var].dims, 0);
        w->ps_acc = xcalloc((size_t)w->P, sizeof *w->ps_acc);
        w->ps_dims = xcalloc((size_t)w->P, sizeof *w->ps_dims);
        w->ps_dim0 = xcalloc((size_t)w->P + 1, sizeof *w->ps_dim0);
        w->ps_dim = xcalloc((size_t)(w->d ? w->d : 1), sizeof *w->ps_dim);
        int o = 0;
        for (int p = 0; p < w->P; p++) {
            w->ps_dim0[p] = o;
            if (w->push_first[p] == w->ps_first[p + 1]) continue;
            for (int j = w->push_first[p]; j < w->ps_first[p + 1]; j++) {
                const sim_var *sv = &w->vars[w->ps_vars[j]];
                for (int i = 0; i < sv->dims; i++) w->ps_dim[o++] = sv->dim0 + i;
                w->ps_dims[p] += sv->dims;
            }
            w->ps_acc[p] = sync_acc_new(w->W, R, (size_t)w->ps_dims[p], 0);
        }
        w->ps_dim0[w->P] = o;
        w->gbuf = xcalloc((size_t)(w->d ? w->d : 1), sizeof *w->gbuf);
    }
    if (c->mode == MODE_SSP) {
        w->gate = ssp_gate_new(w->W, c->staleness);
        w->ssp_wait = xmalloc((size_t)w->W * sizeof *w->ssp_wait);
        w->ssp_step = xmalloc((size_t)w->W * sizeof *w->ssp_step);
    }
    w->wk = xcalloc((size_t)w->W, sizeof *w->wk);
    w->cur_snap = -1;
    for (int k = 0; k < w->W; k++) {
        sim_wk *wk = &w->wk[k];
        dp_rng_seed(&wk->rng, c->seed * 0x9E3779B97F4A7C15ull + (uint64_t)k * 0xD1B54A32D192ED03ull + 1);
        wk->speed = c->speed ? c->speed[k] : 1.0;
        wk->t_wait = -1;
        wk->snap = -1;
    }
    w->psm = c->ps_pull_cost.msg_s > 0 || c->ps_pull_cost.rate > 0 || c->ps_push_cost.msg_s > 0 ||
             c->ps_push_cost.rate > 0 || c->ps_send_rate > 0;
    if (w->psm) sim_psq_init(w);
    hosts_init(w);
    /* a straggler: alone, F times the work; on shared cores, the runtime's way (its work,
     * then a sleep of F - 1 times the time it took) */
    for (int i = 0; i < c->n_stragglers; i++) {
        sim_wk *wk = &w->wk[c->stragglers[i].worker];
        if (w->cpu) wk->hold = (1 + wk->hold) * c->stragglers[i].factor - 1;
        else wk->speed *= c->stragglers[i].factor;
    }
    w->net = sim_net_new();
    w->ps_up = xmalloc((size_t)w->P * sizeof *w->ps_up);
    w->ps_down = xmalloc((size_t)w->P * sizeof *w->ps_down);
    for (int p = 0; p < w->P; p++) {
        w->ps_up[p] = sim_net_link_add(w->net, c->ps_bw, 0);
        w->ps_down[p] = sim_net_link_add(w->net, c->ps_push_bw > 0 ? c->ps_push_bw : c->ps_bw, 0);
    }
    declare_twins(w);
    if (c->mode == MODE_SYNC) make_locks(w);
    w->pend[0] = xmalloc((size_t)w->W * sizeof *w->pend[0]);
    w->pend[1] = xmalloc((size_t)w->W * sizeof *w->pend[1]);
    w->released = xmalloc((size_t)w->W * sizeof *w->released);
    w->ps_dead = xcalloc((size_t)w->P, 1);
    w->deferred = xcalloc((size_t)w->P, sizeof *w->deferred);
    w->n_deferred = xcalloc((size_t)w->P, sizeof *w->n_deferred);
    w->cap_deferred = xcalloc((size_t)w->P, sizeof *w->cap_deferred);
    w->fail_done = xcalloc((size_t)(c->n_failures ? c->n_failures : 1), 1);
    w->detail = xcalloc((size_t)w->W, 1);
    w->wk_dev = xcalloc((size_t)w->W, sizeof *w->wk_dev);
    w->ps_dev = xcalloc((size_t)w->P, sizeof *w->ps_dev);
    return DP_OK;
}

static void world_release(sim_world *w)
{
    if (w->tw) trace_writer_close(w->tw, NULL);
    for (int v = 0; w->vars && v < w->nv; v++) sync_acc_free(w->vars[v].acc);
    for (int p = 0; w->ps_acc && p < w->P; p++) sync_acc_free(w->ps_acc[p]);
    free(w->ps_acc);
    free(w->ps_dims);
    for (int l = 0; l < w->n_locks; l++) {
        sim_lock *L = &w->locks[l];
        sync_acc_free(L->acc);
        free(L->dim);
        free(L->mean);
        free(L->rel);
        free(L->stamp);
        free(L->st);
        free(L->cur);
    }
    free(w->locks);
    free(w->ps_lock);
    free(w->ps_lock_off);
    free(w->ps_dim0);
    free(w->ps_dim);
    free(w->gbuf);
    free(w->vars);
    if (w->theta) sim_nqm_release(w);
    ssp_gate_free(w->gate);
    free(w->ssp_wait);
    free(w->ssp_step);
    for (int k = 0; w->wk && k < w->W; k++) free(w->wk[k].late_ps);
    free(w->wk);
    for (int i = 0; i < w->n_snaps; i++) free(w->snap[i]);
    free(w->snap);
    free(w->snap_refs);
    free(w->free_snaps);
    sim_cpu_free(w->cpu);
    sim_psq_release(w);
    free(w->wk_host);
    free(w->cpu_at);
    free(w->cpu_gen);
    free(w->cpu_done);
    sim_net_free(w->net);
    free(w->ps_up);
    free(w->co_links);
    free(w->zero_ps[0]);
    free(w->zero_ps[1]);
    free(w->co_bytes);
    free(w->co_cookies);
    free(w->ps_down);
    for (int i = 0; i < w->n_cohorts; i++) {
        free(w->cohorts[i].members);
        free(w->cohorts[i].incs);
    }
    free(w->cohorts);
    free(w->free_cohorts);
    free(w->pend[0]);
    free(w->pend[1]);
    free(w->released);
    for (int i = 0; i < w->n_acks; i++) {
        free(w->acks[i].e);
        free(w->acks[i].pool);
    }
    free(w->acks);
    for (int i = 0; i < w->n_dbs; i++) {
        free(w->dbs[i].c);
        free(w->dbs[i].p);
    }
    free(w->dbs);
    for (int p = 0; w->deferred && p < w->P; p++) free(w->deferred[p]);
    free(w->deferred);
    free(w->n_deferred);
    free(w->cap_deferred);
    free(w->ps_dead);
    free(w->fail_done);
    free(w->detail);
    free(w->wk_dev);
    free(w->ps_dev);
    free(w->ps_first);
    free(w->push_first);
    free(w->ps_vars);
    free(w->ps_bytes);
    free(w->early_var);
    free(w->ps_early);
    free(w->ps_early_bytes);
    catalog_release(&w->cat);
    sim_heap_release(&w->heap);
}

static void progress(sim_world *w)
{
    if (!w->cfg->progress) return;
    sim_progress p = {w->gs_max, w->cfg->steps, (double)w->now / 1e9, w->events};
    w->cfg->progress(&p, w->cfg->progress_ctx);
}

int sim_run(const sim_config *c, sim_result *res, char *err)
{
    memset(res, 0, sizeof *res);
    int rc = sim_config_check(c, err);
    if (rc) return rc;
    sim_world w_, *w = &w_;
    rc = world_init(w, c, err);
    if (rc) goto out;
    w->loss_scale = 1;
    rc = sim_emit_open(w, err);
    if (rc) goto out;
    res->initial_loss = sim_nqm_loss(w, w->theta);
    w->loss_scale = c->loss_start > 0 && res->initial_loss > 0 ? c->loss_start / res->initial_loss : 1;
    sim_world_start(w);
    int64_t max_ns = c->max_sim_s > 0 ? (int64_t)llround(c->max_sim_s * 1e9) : INT64_MAX;
    int stuck = 0, timed_out = 0;
    for (;;) {
        sim_event ev;
        if (sim_heap_top_time(&w->heap) <= w->now) {
            sim_heap_pop(&w->heap, &ev);
            uint64_t e0 = w->events;
            sim_world_dispatch(w, &ev);  /* may count merged events too */
            if ((++w->events >> 16) != e0 >> 16) progress(w);
            continue;
        }
        sim_world_flush(w);
        double tn = sim_net_next(w->net);
        int64_t tn_ns = isfinite(tn) ? (int64_t)ceil(tn * 1e9 - 1e-6) : INT64_MAX;
        if (tn_ns < w->now) tn_ns = w->now;
        int64_t th = sim_heap_top_time(&w->heap);
        if (tn_ns == INT64_MAX && th == INT64_MAX) break;
        int64_t next = tn_ns <= th ? tn_ns : th;
        if (next > max_ns) {
            timed_out = 1;
            break;
        }
        if (tn_ns <= th) {
            int before = sim_net_active(w->net);
            w->now = tn_ns;
            sim_world_net_sync(w);
            w->events++;
            /* a completion lost to rounding is retried; never spin at one instant */
            if (sim_net_active(w->net) == before && sim_heap_top_time(&w->heap) > w->now) {
                if (++stuck > 4) w->now++;
            } else {
                stuck = 0;
            }
        } else {
            w->now = th;
        }
    }
    progress(w);
    int64_t gs = c->mode == MODE_SYNC ? w->vars[w->step_var].step
                                       : w->vars[w->step_var].av.version;
    res->global_step = gs;
    res->locks = w->n_locks;
    res->sim_s = (double)w->now / 1e9;
    res->mean_step_s = w->gs_advances > 1
        ? (double)(w->gs_last_ns - w->gs_first_ns) / 1e9 / (double)(w->gs_advances - 1) : 0;
    res->first_step_s = (double)w->gs_first_ns / 1e9;
    res->samples = w->samples;
    res->samples_per_s = res->sim_s > 0 ? (double)w->samples / res->sim_s : 0;
    res->final_loss = sim_nqm_loss(w, w->theta) * w->loss_scale;
    res->mean_staleness = stale_stats_mean(&w->stale);
    res->max_staleness = w->stale.max;
    res->dropped = w->drops;
    res->applies = w->applies;
    res->bytes_pulled = w->bytes_pulled;
    res->bytes_pushed = w->bytes_pushed;
    res->sim_events = w->events;
    res->net_solves = sim_net_solves(w->net);
    /* stopped by --max-sim-time is not stalled */
    res->stalled = gs < c->steps && !timed_out;
    res->timed_out = timed_out;
    res->min_variable_step = res->max_variable_step = -1;
    for (int v = 0; v < w->nv; v++) {
        if (!w->cat.v[v].trainable) continue;
        int64_t s = c->mode == MODE_SYNC ? w->vars[v].step : w->vars[v].av.version;
        if (res->min_variable_step < 0 || s < res->min_variable_step) res->min_variable_step = s;
        if (s > res->max_variable_step) res->max_variable_step = s;
    }
    res->gs_ahead = w->gs_ahead;
    res->n_vars = w->nv;
    res->model_bytes = w->model_bytes;
    if (w->tw) {
        rc = sim_emit_close(w, res, err);
        res->trace_events = w->trace_events;
    }
out:
    world_release(w);
    return rc;
}
