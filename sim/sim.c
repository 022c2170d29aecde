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
 * This file: failures, the global step and the SSP gate, the worker's step (the phases
 * above), hosts' shared cores and the event dispatch; what arrives at a task (deliveries,
 * early pushes, step tokens, acks and RELEASEs) is deliver.c's. Batched handling (there,
 * and here a host's CPU event: the compute ends that finish together) does the work of
 * the events it stands for in their order and counts them all in w->events;
 * `no_shortcuts` turns the optional shortcuts off so that tests can compare. */
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
        k->eval_init = 0;   /* a restarted chief counts its intervals afresh, as a new process */
        k->inc++;
        k->inc_epoch = ++w->inc_epoch;
        k->phase = SIM_W_IDLE;
        if (w->gate) {   /* as the runtime's ps: a lost worker holds nobody at the bound */
            ssp_gate_retire(w->gate, f->task);
            sim_world_ssp_release(w);
        }
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
    /* back in the gate at the clock the runtime's restarted worker counts on from */
    if (w->gate) k->local = ssp_gate_rejoin(w->gate, f->task, k->local);
    wk_start_step(w, f->task);
}

/* Holds a delivery for a dead ps until it restarts; returns 1 when held. */
int sim_world_defer_if_dead(sim_world *w, int p, const sim_event *ev)
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

void sim_wk_pull_end(sim_world *w, int k, int p)
{
    if (w->wk[k].copying) late_pull_end(w, k, p);
    else emit_pull_end(w, k, p);
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

/* The chief evaluates once in each interval of eval_every global steps it reads a step
 * of, not in the one it starts in (runtime/worker.c): at the interval's first step in
 * sync, at the first it reads in async and ssp. */
static int eval_due(sim_world *w, int k)
{
    const sim_config *c = w->cfg;
    sim_wk *wk = &w->wk[k];
    if (k != 0 || c->eval_every <= 0 || c->eval_s <= 0) return 0;
    int64_t iv = (wk->gs_read + c->step_offset) / c->eval_every;   /* a fork: the run's steps */
    if (!wk->eval_init) {
        wk->eval_init = 1;
        wk->eval_iv = iv;
        return 0;
    }
    if (iv <= wk->eval_iv) return 0;
    wk->eval_iv = iv;
    return 1;
}

/* The chief's evaluation: eval_s of work (on its host's shared cores, when they are
 * modelled) between its pull and its compute. */
static void start_eval(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    wk->phase = SIM_W_EVAL;
    wk->t_eval = w->now;
    double work = (double)ns_of(w->cfg->eval_s);
    if (w->cpu) {
        int h = w->wk_host[k];
        sim_cpu_start(w->cpu, h, k, work, w->now);
        cpu_arm(w, h);
        return;
    }
    sim_heap_push(&w->heap, w->now + (int64_t)work, SIM_EV_EVAL_END, k, wk->inc);
}

/* Worker k starts its step's compute (its pull, and the chief's evaluation, done). */
static void start_compute(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
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

/* The evaluation is done: its EVAL event (the runtime's, without an accuracy: the
 * surrogate has no test set), then the step's compute. */
static void eval_end(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    sim_emit_wk(w, EVT_EVAL, k, -1, -1, wk->gs_read, 0, w->now - wk->t_eval, NAN, NAN, 0);
    start_compute(w, k);
}

void sim_wk_pull_done(sim_world *w, int k)
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
    if (eval_due(w, k)) {
        start_eval(w, k);
        return;
    }
    start_compute(w, k);
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

/* A worker's push ends when every ack is in and, in sync, every accumulated push has
 * been released (the barrier, waited for from the first moment a release is due); a
 * sync worker then pushes the step token alone and waits again in the same way. */
void sim_wk_push_progress(sim_world *w, int k)
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
                  !wk->dead && (wk->phase == SIM_W_COMPUTE || wk->phase == SIM_W_EVAL || wk->copying));
        if (wk->phase == SIM_W_EVAL) {
            eval_end(w, k);
            continue;
        }
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
        if (wk->phase == SIM_W_PULL) sim_wk_pull_done(w, k);
        else push_done(w, k);
    }
    w->events += (uint64_t)(n > 0 ? n - 1 : 0);
    cpu_arm(w, h);
}

/* ---- events ------------------------------------------------------------------------ */

/* ps p finished its job (a SIM_EV_PS_DONE, or its task on the cores); a frozen ps's
 * waits for its restart. */
static void ps_done(sim_world *w, const sim_event *ev)
{
    int p = ev->a;
    if (w->ps_dead[p] && sim_world_defer_if_dead(w, p, ev)) return;
    sim_psq_done(w, p);
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
    case SIM_EV_EVAL_END:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b && w->wk[k].phase == SIM_W_EVAL) eval_end(w, k);
        return;
    case SIM_EV_COMPUTE_MID:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b && w->wk[k].mid) compute_mid(w, k);
        return;
    case SIM_EV_EARLY_ARRIVE:
        sim_deliver_early(w, ev);
        return;
    case SIM_EV_PULL_DELIVER:
    case SIM_EV_PUSH_DELIVER:
        w->round++;
        sim_deliver(w, ev);
        return;
    case SIM_EV_ACKS:
        sim_deliver_acks(w, k);
        return;
    case SIM_EV_DELIVER_BATCH:
        sim_deliver_batch(w, ev);
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
        sim_deliver_token(w, ev);
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
