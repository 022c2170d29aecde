/* sim.c — the simulated cluster: workers and ps tasks following the runtime's protocol
 * (runtime/worker.c, runtime/ps.c) in virtual time, driving the same cluster/ rules.
 * A worker loops { [ssp: ask the gate] pull every variable (the ps reads each variable's
 * version when the request arrives); stop when the global step read >= --steps; compute;
 * push }. Async / ssp push every variable at once, global_step's empty push (the step
 * token) among them, each tagged with the version read, and wait for every ack. Sync
 * (SyncReplicasOptimizer) tags every push with the global step read and goes in two
 * parts: the gradients, every ack, every RELEASE of an accumulated one (barrier part 1:
 * every variable has taken the step); then the token alone, its ack and, if accumulated,
 * its RELEASE (part 2). So the global step never runs ahead of a variable. A ps applies
 * each push with the configured rule: sync offers it to the variable's sync_acc (stale or
 * duplicate gradients dropped; the variables of a ps, or of a twin class of ps, move in
 * lockstep and share one: see sim_lock in world.h), async/ssp apply at once with
 * async_apply staleness; global_step is variable 0 (its accumulator counts the step; in
 * async every applied push advances it; the SSP gate lives with it).
 * Compute lasts its drawn time, or, on a host with fewer cores than workers
 * (--hosts, --cores-per-host), is work on the host's shared cores (cpu.h). With a ps
 * cost (--ps-pull-cost, --ps-push-cost) each ps handles its messages one at a time
 * (psq.c): answers, acks and RELEASEs leave when it has done the work.
 * Messages: a request costs one latency; data moves as network flows (one flow per
 * worker and ps per phase, carrying that ps's variables) plus one latency; acks cost one
 * latency; the sync token is a zero-byte message (one latency each way). Workers starting
 * a phase at the same instant share flow groups (see net.h).
 * Batched handling (delivery runs, ack runs, RELEASE sets) does the work of the events
 * it stands for in their order and counts them all in w->events; `no_shortcuts` turns
 * the optional shortcuts off so that tests can compare. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "sim/world.h"

static void wk_start_step(sim_world *w, int k);
static void cpu_arm(sim_world *w, int h);
static void ps_done(sim_world *w, const sim_event *ev);

static int64_t ns_of(double s)
{
    return (int64_t)llround(s * 1e9);
}

/* ---- failures ----------------------------------------------------------------------- */

static void fire_failure(sim_world *w, int i)
{
    const sim_failure *f = &w->cfg->failures[i];
    if (w->fail_done[i]) return;
    w->fail_done[i] = 1;
    evt_record e;
    evt_init(&e, EVT_FAILURE, f->job == JOB_PS ? EVT_JOB_PS : EVT_JOB_WORKER, f->task);
    e.t = w->now;
    if (w->tw) e.str = trace_writer_intern(w->tw, "simulated failure (--fail)");
    sim_emit(w, &e);
    if (f->job == JOB_PS) {
        w->ps_dead[f->task] = 1;
    } else {
        sim_wk *k = &w->wk[f->task];
        if (k->phase == SIM_W_DONE) return;
        k->copying = k->net_done = k->n_late = 0;
        if (w->cpu && (k->phase == SIM_W_COMPUTE || sim_cpu_is_busy(w->cpu, f->task))) {
            /* its work leaves the host: the others there speed up now */
            int h = sim_cpu_cancel(w->cpu, f->task, w->now);
            if (h >= 0) cpu_arm(w, h);
        }
        k->dead = 1;
        k->inc++;
        k->inc_epoch = ++w->inc_epoch;
        k->phase = SIM_W_IDLE;
    }
    if (f->restart_s >= 0)
        sim_heap_push(&w->heap, w->now + ns_of(f->restart_s), SIM_EV_RESTART, i, 0);
}

static void restart(sim_world *w, int i)
{
    const sim_failure *f = &w->cfg->failures[i];
    evt_record e;
    evt_init(&e, EVT_RECOVERY, f->job == JOB_PS ? EVT_JOB_PS : EVT_JOB_WORKER, f->task);
    e.t = w->now;
    sim_emit(w, &e);
    if (f->job == JOB_PS) {
        int p = f->task;
        w->ps_dead[p] = 0;
        for (int j = 0; j < w->n_deferred[p]; j++) {
            sim_event *d = &w->deferred[p][j];
            sim_heap_push(&w->heap, w->now, d->type, d->a, d->b);
        }
        w->n_deferred[p] = 0;
        return;
    }
    sim_wk *k = &w->wk[f->task];
    if (!k->dead) return;
    k->dead = 0;
    wk_start_step(w, f->task);
}

/* Holds a delivery for a dead ps until it restarts; returns 1 when held. */
static int defer_if_dead(sim_world *w, int p, const sim_event *ev)
{
    if (!w->ps_dead[p]) return 0;
    if (w->n_deferred[p] == w->cap_deferred[p]) {
        w->cap_deferred[p] = w->cap_deferred[p] ? 2 * w->cap_deferred[p] : 16;
        w->deferred[p] = xrealloc(w->deferred[p], (size_t)w->cap_deferred[p] * sizeof *w->deferred[p]);
    }
    w->deferred[p][w->n_deferred[p]++] = *ev;
    return 1;
}

/* ---- global step and ssp ------------------------------------------------------------ */

void sim_world_global_step(sim_world *w, int64_t gs)
{
    if (!w->gs_advances) w->gs_first_ns = w->now;
    w->gs_last_ns = w->now;
    w->gs_advances++;
    if (gs > w->gs_max) w->gs_max = gs;
    if (w->cfg->mode == MODE_SYNC) {
        /* the step token goes only after every variable has taken the step */
        for (int v = 0; v < w->nv; v++)
            if (w->cat.v[v].trainable && w->vars[v].step < gs) {
                w->gs_ahead++;
                break;
            }
    }
    sim_emit_ps(w, EVT_GLOBAL_STEP, w->cat.v[w->step_var].ps, -1, -1, gs, 0, 0);
    for (int i = 0; i < w->cfg->n_failures; i++) {
        const sim_failure *f = &w->cfg->failures[i];
        if (f->job == JOB_PS && f->at_step >= 0 && gs >= f->at_step) fire_failure(w, i);
    }
}

void sim_world_ssp_release(sim_world *w)
{
    int j = 0;
    for (int i = 0; i < w->n_ssp_wait; i++) {
        int k = w->ssp_wait[i];
        if (ssp_gate_may_start(w->gate, w->ssp_step[i]))
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, SIM_EV_SSP_GO, k, w->wk[k].inc);
        else {
            w->ssp_wait[j] = k;
            w->ssp_step[j] = w->ssp_step[i];
            j++;
        }
    }
    w->n_ssp_wait = j;
}

/* ---- worker ------------------------------------------------------------------------- */

static void wk_pull(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    wk->phase = SIM_W_PULL;
    wk->t_phase = w->now;
    wk->outstanding = w->nv;
    for (int v = 0; w->tw && v < w->nv; v++)  /* sim_emit_wk does nothing without a trace */
        sim_emit_wk(w, EVT_PULL_BEGIN, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4, 0, 0,
                    0, sim_msg_id(w, k, v));
    sim_emit_wk_phase(w, EVT_PULL_BEGIN, k, wk->local, 0);
    sim_heap_push_fifo(&w->heap, w->now + w->lat_ps_ns, SIM_EV_PULL_ARRIVE, k, wk->inc);
}

static void wk_start_step(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    for (int i = 0; i < w->cfg->n_failures; i++) {
        const sim_failure *f = &w->cfg->failures[i];
        if (f->job == JOB_WORKER && f->task == k && f->at_step >= 0 && !w->fail_done[i] &&
            wk->local >= f->at_step) {
            fire_failure(w, i);
            return;
        }
    }
    if (w->gate) {
        wk->phase = SIM_W_SSP;
        wk->t_wait = -1;
        sim_heap_push_fifo(&w->heap, w->now + w->lat_ps_ns, SIM_EV_SSP_REQ, k, wk->inc);
        return;
    }
    wk_pull(w, k);
}

static void snap_unref(sim_world *w, int id)
{
    if (id < 0 || --w->snap_refs[id] > 0 || id == w->cur_snap) return;
    w->free_snaps[w->n_free_snaps++] = id;
}

/* A snapshot of the current versions (shared until a version changes). */
static int snap_current(sim_world *w)
{
    if (w->cur_snap >= 0) return w->cur_snap;
    int id;
    if (w->n_free_snaps) {
        id = w->free_snaps[--w->n_free_snaps];
    } else {
        if (w->n_snaps == w->cap_snaps) {
            w->cap_snaps = w->cap_snaps ? 2 * w->cap_snaps : 16;
            w->snap = xrealloc(w->snap, (size_t)w->cap_snaps * sizeof *w->snap);
            w->snap_refs = xrealloc(w->snap_refs, (size_t)w->cap_snaps * sizeof *w->snap_refs);
            w->free_snaps = xrealloc(w->free_snaps, (size_t)w->cap_snaps * sizeof *w->free_snaps);
        }
        id = w->n_snaps++;
        w->snap[id] = xmalloc((size_t)w->nv * sizeof **w->snap);
    }
    int64_t *ver = w->snap[id];
    for (int v = 0; v < w->nv; v++)
        ver[v] = w->cfg->mode == MODE_SYNC ? w->vars[v].step : w->vars[v].av.version;
    w->snap_refs[id] = 0;
    w->cur_snap = id;
    return id;
}

/* A variable's version changed: the current snapshot no longer describes the ps. */
void sim_world_versions_changed(sim_world *w)
{
    int id = w->cur_snap;
    if (id < 0) return;
    w->cur_snap = -1;
    if (w->snap_refs[id] == 0) w->free_snaps[w->n_free_snaps++] = id;
}

static void pull_arrive(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    int id = snap_current(w);
    w->snap_refs[id]++;
    snap_unref(w, wk->snap);
    wk->snap = id;
    float *th = w->theta_read + (size_t)k * (size_t)w->d;
    memcpy(th, w->theta, (size_t)w->d * sizeof *th);
    wk->loss_read = sim_nqm_loss(w, th);
    w->bytes_pulled += (int64_t)w->model_bytes;
    if (w->psm) {
        sim_psq_pull(w, k);  /* each ps answers when it has done the work */
        return;
    }
    w->pend[0][w->n_pend[0]++] = k;
}

/* Worker k's pull_end events for ps p's variables, now. */
static void emit_pull_end(sim_world *w, int k, int p)
{
    sim_wk *wk = &w->wk[k];
    const int64_t *ver = sim_read_versions(w, k);
    for (int j = w->ps_first[p]; j < w->ps_first[p + 1]; j++) {
        int v = w->ps_vars[j];
        sim_emit_wk(w, EVT_PULL_END, k, p, v, wk->local, (int64_t)w->cat.v[v].count * 4, w->now - wk->t_phase,
                    (double)ver[v], 0, sim_msg_id(w, k, v));
    }
}

/* ... once its copying is done, as a real worker's come when the bytes are read. */
static void late_pull_end(sim_world *w, int k, int p)
{
    sim_wk *wk = &w->wk[k];
    if (!wk->late_ps) wk->late_ps = xmalloc((size_t)w->P * sizeof *wk->late_ps);
    wk->late_ps[wk->n_late++] = p;
}

void sim_world_copy(sim_world *w, int k, double bytes)
{
    if (!w->cpu || !(w->cfg->copy_rate > 0) || !(bytes > 0)) return;
    sim_wk *wk = &w->wk[k];
    int h = w->wk_host[k];
    double ns = bytes / w->cfg->copy_rate * 1e9;
    if (sim_cpu_is_busy(w->cpu, k)) sim_cpu_add(w->cpu, k, ns, w->now);
    else sim_cpu_start(w->cpu, h, k, ns, w->now);
    wk->copying = 1;
    cpu_arm(w, h);
}

static void pull_done(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    if (wk->copying) {  /* the bytes are in; the copying out of the kernel is not done */
        wk->net_done = 1;
        return;
    }
    for (int i = 0; i < wk->n_late; i++) emit_pull_end(w, k, wk->late_ps[i]);
    wk->n_late = 0;
    sim_emit_wk_phase(w, EVT_PULL_END, k, wk->local, w->now - wk->t_phase);
    wk->gs_read = sim_read_versions(w, k)[w->step_var];
    if (wk->gs_read >= w->cfg->steps) {
        wk->phase = SIM_W_DONE;
        w->n_done++;
        if (w->gate) {
            ssp_gate_retire(w->gate, k);
            sim_world_ssp_release(w);
        }
        return;
    }
    wk->phase = SIM_W_COMPUTE;
    wk->t_compute = w->now;
    sim_emit_wk(w, EVT_COMPUTE_BEGIN, k, -1, -1, wk->local, 0, 0, 0, 0, 0);
    double d = sim_draw_compute(w, k);
    wk->work_s = (double)ns_of(d) / 1e9;
    /* --pipeline: the early push comes after the first part of the work */
    wk->mid = w->n_early > 0;
    wk->early_sent = wk->early_due = 0;
    int64_t first = wk->mid ? ns_of(d * w->cfg->pipeline) : ns_of(d);
    if (w->cpu) {
        /* work on its host's shared cores: it ends when the host has done it (in two
         * parts with --pipeline: they end when the whole would) */
        int h = w->wk_host[k];
        wk->work_rest = (double)(ns_of(d) - first);
        sim_cpu_start(w->cpu, h, k, (double)first, w->now);
        cpu_arm(w, h);
        return;
    }
    if (wk->mid) sim_heap_push(&w->heap, w->now + first, SIM_EV_COMPUTE_MID, k, wk->inc);
    sim_heap_push(&w->heap, w->now + ns_of(d), SIM_EV_COMPUTE_END, k, wk->inc);
}

/* --pipeline: worker k's backward pass has finished the early gradients: it pushes them
 * (one message per ps holding some; the bytes are counted with the step's push, whose
 * flows carry the whole model) and computes on. */
static void compute_mid(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    wk->mid = 0;
    wk->early_sent = 1;
    wk->early_due = w->n_early;
    wk->t_early = w->now;
    sim_nqm_grad(w, k);
    for (int v = 0; w->tw && v < w->nv; v++)
        if (w->early_var[v])
            sim_emit_wk(w, EVT_PUSH_BEGIN, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4, 0, 0,
                        0, sim_msg_id(w, k, v));
    for (int p = 0; p < w->P; p++)
        if (w->ps_early[p])
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ps_ns, SIM_EV_EARLY_ARRIVE, k,
                               (int64_t)p << 32 | (uint32_t)wk->inc);
}

/* The early push of worker k (ev->a) reaches ps p (ev->b's high half): its variables are
 * applied as the step's push would apply them, with the ps's work when modelled. */
static void early_arrive(sim_world *w, const sim_event *ev)
{
    int k = ev->a, p = (int)(ev->b >> 32);
    int32_t inc = (int32_t)(uint32_t)(ev->b & 0xffffffff);
    if (w->ps_dead[p] && defer_if_dead(w, p, ev)) return;
    sim_wk *wk = &w->wk[k];
    if (wk->dead || wk->inc != inc) return;
    if (w->psm) {
        sim_psq_early(w, p, k);
        return;
    }
    int start, acks = sim_ack_begin(w, &start);
    for (int j = w->ps_first[p]; j < w->ps_first[p + 1]; j++)
        if (w->early_var[w->ps_vars[j]]) sim_ps_push(w, p, k, w->ps_vars[j], acks);
    sim_ack_end(w, acks, start);
}

static void compute_end(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    sim_emit_wk(w, EVT_COMPUTE_END, k, -1, -1, wk->local, 0, w->now - wk->t_compute, 0, wk->work_s, 0);
    if (!wk->early_sent) sim_nqm_grad(w, k);
    wk->phase = SIM_W_PUSH;
    wk->t_phase = w->now;
    wk->token = 0;
    wk->outstanding = w->cfg->mode == MODE_SYNC ? w->nv - 1 : w->nv;  /* sync: the token later */
    /* the early push's acks: those still to come are awaited with the step's */
    if (wk->early_sent) wk->outstanding -= w->n_early - wk->early_due;
    wk->releases_due = 0;
    wk->t_wait = -1;
    for (int v = 0; w->tw && v < w->nv; v++)
        if (w->cat.v[v].trainable && !(wk->early_sent && w->early_var[v]))  /* global_step's push is the step token: no events */
            sim_emit_wk(w, EVT_PUSH_BEGIN, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4, 0, 0,
                0, sim_msg_id(w, k, v));
    sim_emit_wk_phase(w, EVT_PUSH_BEGIN, k, wk->local, 0);
    w->bytes_pushed += (int64_t)w->model_bytes;
    w->pend[1][w->n_pend[1]++] = k;
}

static void push_done(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    if (wk->copying) {
        wk->net_done = 1;
        return;
    }
    if (wk->t_wait >= 0)
        sim_emit_wk(w, EVT_BARRIER_RELEASE, k, -1, -1, wk->local, 0, w->now - wk->t_wait, 0, 0, 0);
    sim_emit_wk(w, EVT_STEP_END, k, -1, -1, wk->local, 0, 0, wk->loss_read, (double)wk->gs_read, 0);
    wk->local++;
    w->samples += w->cfg->batch;
    wk_start_step(w, k);
}

/* ---- shared cores ------------------------------------------------------------------ */

/* Host h's work changed: its one armed event goes to its next finish (an event armed
 * earlier for another time is left in the heap, stale: its generation is old). */
static void cpu_arm(sim_world *w, int h)
{
    sim_world_cpu_arm(w, h);
}

void sim_world_cpu_arm(sim_world *w, int h)
{
    int64_t t = sim_cpu_next(w->cpu, h);
    if (t == w->cpu_at[h]) return;
    w->cpu_at[h] = t;
    w->cpu_gen[h]++;
    if (t != INT64_MAX) sim_heap_push(&w->heap, t, SIM_EV_CPU, h, (int64_t)w->cpu_gen[h]);
}

/* Host h's armed event: the workers whose compute is done end it, in finishing order
 * (as the COMPUTE_END events they stand for, and counted as them), and the ps whose job
 * is done finish it (as their SIM_EV_PS_DONE). */
static void cpu_event(sim_world *w, int h, uint64_t gen)
{
    if (gen != w->cpu_gen[h]) {
        w->events--;  /* stale: not an event of the protocol */
        return;
    }
    w->cpu_at[h] = INT64_MAX;
    int n = sim_cpu_pop(w->cpu, h, w->now, w->cpu_done);
    for (int i = 0; i < n; i++) {
        int k = w->cpu_done[i];
        if (k >= w->W) {
            sim_event e = {w->now, 0, SIM_EV_PS_DONE, k - w->W, 0};
            ps_done(w, &e);
            continue;
        }
        sim_wk *wk = &w->wk[k];
        dp_assert("sim: a worker's work ended while it was not working (a death not cancelled)",
                  !wk->dead && (wk->phase == SIM_W_COMPUTE || wk->copying));
        if (wk->phase == SIM_W_COMPUTE) {
            if (wk->mid) {  /* --pipeline: the first part is done; the rest follows at once */
                compute_mid(w, k);
                if (wk->work_rest > 0) {
                    sim_cpu_start(w->cpu, h, k, wk->work_rest, w->now);
                    continue;
                }
            }
            if (wk->hold > 0) {  /* a straggler sleeps; the runtime counts it as work */
                int64_t held = ns_of(wk->hold * (double)(w->now - wk->t_compute) / 1e9);
                wk->work_s += (double)held / 1e9;
                sim_heap_push(&w->heap, w->now + held, SIM_EV_COMPUTE_END, k, wk->inc);
                continue;
            }
            compute_end(w, k);
            continue;
        }
        /* its transfer's copying is done: the pull or push ends if its bytes are through */
        wk->copying = 0;
        if (!wk->net_done) continue;
        wk->net_done = 0;
        if (wk->phase == SIM_W_PULL) pull_done(w, k);
        else push_done(w, k);
    }
    w->events += (uint64_t)(n > 0 ? n - 1 : 0);
    cpu_arm(w, h);
}

/* ---- deliveries ------------------------------------------------------------------ */

static void deliver(sim_world *w, const sim_event *ev)
{
    int c = ev->a, p = (int)ev->b;
    if (w->ps_dead[p] && defer_if_dead(w, p, ev)) return;
    sim_cohort *co = &w->cohorts[c];
    int v0 = ev->type == SIM_EV_PULL_DELIVER ? w->ps_first[p] : sim_push_first(w, p), v1 = w->ps_first[p + 1];
    if (ev->type == SIM_EV_PULL_DELIVER) {
        for (int i = 0; i < co->n; i++) {
            int k = co->members[i];
            sim_wk *wk = &w->wk[k];
            if (wk->dead || wk->inc != co->incs[i]) continue;
            if (w->tw && w->detail[k]) {
                if (wk->copying) late_pull_end(w, k, p);
                else emit_pull_end(w, k, p);
            }
            wk->outstanding -= v1 - v0;
            if (wk->outstanding == 0) pull_done(w, k);
        }
    } else if (w->psm) {
        for (int i = 0; i < co->n; i++) {  /* each a message the ps handles in turn */
            const sim_wk *wk = &w->wk[co->members[i]];
            if (!wk->dead && wk->inc == co->incs[i]) sim_psq_push(w, p, c, i);
        }
    } else {
        int start, acks = sim_ack_begin(w, &start);
        for (int i = 0; i < co->n; i++) {
            int k = co->members[i];
            sim_wk *wk = &w->wk[k];
            if (wk->dead || wk->inc != co->incs[i]) continue;
            if (w->cfg->mode == MODE_SYNC) sim_ps_push_sync(w, p, c, i, acks);
            else
                sim_ps_push_step(w, p, k, v0, v1, wk->early_sent, acks);
        }
        sim_ack_end(w, acks, start);
    }
    sim_flows_cohort_done(w, c);
}

/* Pull deliveries (c, ps[0..m)) of one cohort in a row, none from a dead ps and none
 * traced per message: every member counts them down at once. Its last delivery, if
 * here, is the last of them, so members finish their pulls in the same order as when
 * each delivery is handled in turn (the counting has no other effect). */
static void deliver_pull_run(sim_world *w, int c, const int *ps, int m)
{
    sim_cohort *co = &w->cohorts[c];
    int total = 0;
    for (int i = 0; i < m; i++) total += w->ps_first[ps[i] + 1] - w->ps_first[ps[i]];
    for (int i = 0; i < co->n; i++) {
        int k = co->members[i];
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != co->incs[i]) continue;
        wk->outstanding -= total;
        if (wk->outstanding == 0) pull_done(w, k);
    }
    co->groups_left -= m - 1;
    sim_flows_cohort_done(w, c);
}

/* Sync push deliveries (c, ps[0..m)) of a one-worker cohort in a row, none from a dead
 * ps. When the worker is alive, every ps is in a lock, none takes a step and no ack is
 * traced, each delivery would only add acks to the worker's run in the open batch
 * (nothing is scheduled in between): one addition, counted as the m merged events.
 * Returns 0, having handled nothing, otherwise (the verdicts asked for stay recorded
 * for the round, so the deliveries one by one replay them). */
static int deliver_push_run(sim_world *w, int c, const int *ps, int m)
{
    sim_cohort *co = &w->cohorts[c];
    int k = co->members[0];
    if (w->wk[k].dead || w->wk[k].inc != co->incs[0] || (w->tw && w->detail[k])) return 0;
    int cnt = 0, nacc = 0, drops = 0;
    for (int i = 0; i < m; i++) {
        int p = ps[i], nv = w->ps_first[p + 1] - w->push_first[p];
        if (w->ps_lock[p] < 0 || nv == 0) return 0;
        int r = sim_ps_lock_offer(w, &w->locks[w->ps_lock[p]], 0, k);
        if (r == SYNC_READY) return 0;
        cnt += nv;
        if (r == SYNC_ACCUMULATED) nacc += nv;
        else drops += nv;  /* every pushed variable is trainable */
    }
    int start, acks = sim_ack_begin(w, &start);
    w->drops += drops;
    sim_ack_add_run(w, acks, k, cnt, nacc);
    sim_ack_end(w, acks, start);
    dp_assert("sim: a push run's acks went out in the open batch", acks == w->open_ack);
    w->acks[acks].nev += m - 1;
    co->groups_left -= m - 1;
    sim_flows_cohort_done(w, c);
    return 1;
}

/* Delivery (c, p) of batch ev, as the engine event it stands for. */
static void deliver_one(sim_world *w, const sim_event *ev, int c, int p)
{
    sim_event e = *ev;
    e.a = c;
    e.b = p;
    e.type = w->cohorts[c].dir ? SIM_EV_PUSH_DELIVER : SIM_EV_PULL_DELIVER;
    deliver(w, &e);
}

/* Runs a delivery batch's deliveries in turn, as the events they stand for. */
static void deliver_batch(sim_world *w, const sim_event *ev)
{
    int id = ev->a;
    int n = w->dbs[id].n;
    for (int i = 0; i < n; i++) {
        int c = w->dbs[id].c[i], j = i + 1;
        if (i == 0 || c != w->dbs[id].c[i - 1]) w->round++;  /* a cohort's deliveries are consecutive */
        int pull = !w->cohorts[c].dir;
        int run = pull ? !w->per_msg : w->cfg->mode == MODE_SYNC && w->cohorts[c].n == 1;
        if (run && !w->cfg->no_shortcuts) {
            const sim_dbatch *b = &w->dbs[id];
            int live = !w->ps_dead[b->p[i]];
            while (j < n && b->c[j] == c) live &= !w->ps_dead[b->p[j++]];
            if (live && j - i > 1) {
                if (pull) deliver_pull_run(w, c, b->p + i, j - i);
                else if (!deliver_push_run(w, c, b->p + i, j - i))
                    for (int q = i; q < j; q++) deliver_one(w, ev, c, w->dbs[id].p[q]);
                i = j - 1;
                continue;
            }
        }
        deliver_one(w, ev, c, w->dbs[id].p[i]);
    }
    w->events += (uint64_t)(n - 1);
    w->dbs[id].next_free = w->free_db;
    w->free_db = id;
}

/* The sync step token reaches global_step's ps (sent one latency earlier). */
static void token_arrive(sim_world *w, const sim_event *ev)
{
    int k = ev->a, p = w->cat.v[w->step_var].ps;
    if (w->ps_dead[p] && defer_if_dead(w, p, ev)) return;
    sim_wk *wk = &w->wk[k];
    if (wk->dead || wk->inc != ev->b) return;
    if (w->psm) {
        sim_psq_token(w, p, k);
        return;
    }
    int start, acks = sim_ack_begin(w, &start);
    sim_ps_push(w, p, k, w->step_var, acks);
    sim_ack_end(w, acks, start);
}

/* ps p finished its job (a SIM_EV_PS_DONE, or its task on the cores); a frozen ps's
 * waits for its restart. */
static void ps_done(sim_world *w, const sim_event *ev)
{
    int p = ev->a;
    if (w->ps_dead[p] && defer_if_dead(w, p, ev)) return;
    sim_psq_done(w, p);
}

/* A worker's push ends when every ack is in and, in sync, every accumulated push has
 * been released (the barrier, waited for from the first moment a release is due); a
 * sync worker then pushes the step token alone and waits again in the same way. */
static void push_progress(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    if (wk->outstanding > 0) return;
    if (wk->releases_due > 0) {
        if (wk->t_wait < 0) {
            wk->t_wait = w->now;
            sim_emit_wk(w, EVT_BARRIER_WAIT, k, -1, -1, wk->local, 0, 0, 0, 0, 0);
        }
        return;
    }
    if (w->cfg->mode == MODE_SYNC && !wk->token) {
        wk->token = 1;
        wk->outstanding = 1;
        sim_heap_push_fifo(&w->heap, w->now + w->lat_ps_ns, SIM_EV_TOKEN_ARRIVE, k, wk->inc);
        return;
    }
    push_done(w, k);
}

/* One RELEASE to each worker of a set, in turn. While a worker still has releases due
 * after this one, push_progress would change nothing (it either awaits acks or is
 * already waiting at the barrier, since it began waiting when its last ack came). */
static void release_set_arrive(sim_world *w, const sim_ack *a, const sim_ack_ent *e)
{
    int n = e->cnt < 0 ? w->W : e->cnt;
    const int *ws = e->cnt < 0 ? NULL : a->pool + e->nacc;
    for (int i = 0; i < n; i++) {
        int k = ws ? ws[i] : i;
        if (k == e->w) continue;
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc_epoch > e->inc || wk->phase != SIM_W_PUSH) continue;
        if ((wk->releases_due -= e->mult) <= 0) push_progress(w, k);
    }
}

static void acks_arrive(sim_world *w, int id)
{
    sim_ack *a = &w->acks[id];
    for (int i = 0; i < a->n; i++) {
        const sim_ack_ent *e = &a->e[i];
        if (e->st == SIM_RELEASE_SET) {
            release_set_arrive(w, a, e);
            continue;
        }
        int k = e->w, v = e->v;
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != e->inc) continue;
        if (wk->phase == SIM_W_COMPUTE && wk->early_due > 0 && e->st != SIM_RELEASE) {
            /* the early push's, read between the compute's ops */
            if (e->st != SIM_ACK_RUN && w->tw && w->cat.v[v].trainable)
                sim_emit_wk(w, EVT_PUSH_END, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4,
                            w->now - wk->t_early, (double)e->st, 0, sim_msg_id(w, k, v));
            wk->early_due -= e->cnt;
            continue;
        }
        if (wk->phase != SIM_W_PUSH) continue;
        if (e->st == SIM_RELEASE) {
            wk->releases_due--;  /* may run ahead of its ACCUMULATED ack: counted signed */
        } else {
            if (e->st != SIM_ACK_RUN && w->tw && w->cat.v[v].trainable) {
                int early = wk->early_sent && w->early_var && w->early_var[v];
                sim_emit_wk(w, EVT_PUSH_END, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4,
                            w->now - (early ? wk->t_early : wk->t_phase), (double)e->st, 0, sim_msg_id(w, k, v));
            }
            wk->releases_due += e->st == SIM_ACK_RUN ? e->nacc : e->st == SIM_ACK_ACCUMULATED;
            wk->outstanding -= e->cnt;
            if (wk->outstanding == 0 && !wk->token)
                sim_emit_wk_phase(w, EVT_PUSH_END, k, wk->local, w->now - wk->t_phase);
        }
        push_progress(w, k);
    }
    w->events += (uint64_t)(a->nev - 1);  /* a merged batch counts as the batches it joined */
    if (id == w->open_ack) w->open_ack = -1;
    a->n = 0;
    a->next_free = w->free_ack;
    w->free_ack = id;
}

static void dispatch(sim_world *w, const sim_event *ev)
{
    int k = ev->a;
    switch (ev->type) {
    case SIM_EV_PULL_ARRIVE:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b) pull_arrive(w, k);
        return;
    case SIM_EV_COMPUTE_END:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b) compute_end(w, k);
        return;
    case SIM_EV_COMPUTE_MID:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b && w->wk[k].mid) compute_mid(w, k);
        return;
    case SIM_EV_EARLY_ARRIVE:
        early_arrive(w, ev);
        return;
    case SIM_EV_PULL_DELIVER:
    case SIM_EV_PUSH_DELIVER:
        w->round++;
        deliver(w, ev);
        return;
    case SIM_EV_ACKS:
        acks_arrive(w, k);
        return;
    case SIM_EV_DELIVER_BATCH:
        deliver_batch(w, ev);
        return;
    case SIM_EV_SSP_REQ: {
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != ev->b) return;
        if (ssp_gate_may_start(w->gate, wk->local)) {
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, SIM_EV_SSP_GO, k, wk->inc);
            return;
        }
        wk->t_wait = w->now;
        sim_emit_wk(w, EVT_SSP_WAIT, k, -1, -1, wk->local, 0, 0, (double)ssp_gate_min(w->gate), 0, 0);
        w->ssp_wait[w->n_ssp_wait] = k;
        w->ssp_step[w->n_ssp_wait++] = wk->local;
        return;
    }
    case SIM_EV_SSP_GO: {
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != ev->b) return;
        if (wk->t_wait >= 0)
            sim_emit_wk(w, EVT_SSP_RELEASE, k, -1, -1, wk->local, 0, w->now - wk->t_wait,
                        (double)ssp_gate_min(w->gate), 0, 0);
        wk_pull(w, k);
        return;
    }
    case SIM_EV_TOKEN_ARRIVE:
        token_arrive(w, ev);
        return;
    case SIM_EV_CPU:
        cpu_event(w, k, (uint64_t)ev->b);
        return;
    case SIM_EV_PS_DONE:
        ps_done(w, ev);
        return;
    case SIM_EV_FAIL:
        fire_failure(w, k);
        return;
    case SIM_EV_RESTART:
        restart(w, k);
        return;
    default:
        dp_assert("sim: unknown event type", 0);
    }
}

/* ---- entry points for run.c ------------------------------------------------------- */

void sim_world_dispatch(sim_world *w, const sim_event *ev)
{
    dispatch(w, ev);
}

void sim_world_flush(sim_world *w)
{
    if (w->psm) sim_psq_flush(w);
    sim_flows_start(w, 0);
    sim_flows_start(w, 1);
}

void sim_world_net_sync(sim_world *w)
{
    sim_flows_sync(w);
}

void sim_world_start(sim_world *w)
{
    for (int i = 0; i < w->cfg->n_failures; i++) {
        const sim_failure *f = &w->cfg->failures[i];
        if (f->at_s >= 0) sim_heap_push(&w->heap, ns_of(f->at_s), SIM_EV_FAIL, i, 0);
    }
    for (int k = 0; k < w->W; k++) wk_start_step(w, k);
}
