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

enum {
    EV_PULL_ARRIVE = 1, EV_PULL_DELIVER, EV_COMPUTE_END, EV_PUSH_DELIVER, EV_ACKS,
    EV_SSP_REQ, EV_SSP_GO, EV_FAIL, EV_RESTART, EV_TOKEN_ARRIVE, EV_DELIVER_BATCH
};

static void wk_start_step(sim_world *w, int k);

static int64_t ns_of(double s)
{
    return (int64_t)llround(s * 1e9);
}

/* The runtime's message id (rt_instr_msg_id): ((local step << 16) | var) + 1, the same
 * for a variable's pull and push of one step. */
static uint64_t msg_id(const sim_world *w, int k, int v)
{
    return ((uint64_t)w->wk[k].local << 16 | (uint64_t)(v & 0xffff)) + 1;
}

/* The first of ps p's variables (an index into ps_vars) that a push phase carries: in
 * sync the step token (variable 0, first on its ps) goes on its own after the gradients. */
static int push_first(const sim_world *w, int p)
{
    return w->push_first[p];
}

/* ---- acks --------------------------------------------------------------------------- */

static int ack_new(sim_world *w)
{
    int id;
    if (w->free_ack >= 0) {
        id = w->free_ack;
        w->free_ack = w->acks[id].next_free;
    } else {
        if (w->n_acks == w->cap_acks) {
            w->cap_acks = w->cap_acks ? w->cap_acks * 2 : 64;
            w->acks = xrealloc(w->acks, (size_t)w->cap_acks * sizeof *w->acks);
        }
        id = w->n_acks++;
        memset(&w->acks[id], 0, sizeof w->acks[id]);
    }
    w->acks[id].n = 0;
    w->acks[id].n_pool = 0;
    w->acks[id].floor = 0;
    w->acks[id].fold = -1;
    w->acks[id].next_free = -1;
    return id;
}

static sim_ack_ent *ack_push(sim_ack *a)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->e = xrealloc(a->e, (size_t)a->cap * sizeof *a->e);
    }
    return &a->e[a->n++];
}

/* Adds cnt acks to worker k, nacc of them ACCUMULATED, to the batch's run for k (the
 * last entry, when open to new acks) or as a new run. */
static void ack_add_run(sim_world *w, int id, int k, int cnt, int nacc)
{
    sim_ack *a = &w->acks[id];
    int32_t inc = w->wk[k].inc;
    if (a->n > a->floor) {
        sim_ack_ent *l = &a->e[a->n - 1];
        if (l->st == SIM_ACK_RUN && l->w == k && l->inc == inc) {
            l->cnt += cnt;
            l->nacc += nacc;
            return;
        }
    }
    *ack_push(a) = (sim_ack_ent){k, -1, inc, cnt, nacc, 0, SIM_ACK_RUN};
}

/* Adds worker k's ack (status st, or SIM_RELEASE) for variable v. Untraced acks join
 * the worker's run. */
static void ack_add(sim_world *w, int id, int k, int v, int st)
{
    if (st != SIM_RELEASE && !(w->tw && w->detail[k])) {
        ack_add_run(w, id, k, 1, st == SIM_ACK_ACCUMULATED);
        return;
    }
    *ack_push(&w->acks[id]) = (sim_ack_ent){k, v, w->wk[k].inc, 1, 0, 0, (int8_t)st};
}

/* Worker k's acks, all of status st, for ps p's variables ps_vars[j0 .. j1). */
static void ack_add_vars(sim_world *w, int id, int k, int j0, int j1, int st)
{
    if (w->tw && w->detail[k]) {
        for (int j = j0; j < j1; j++) ack_add(w, id, k, w->ps_vars[j], st);
        return;
    }
    ack_add_run(w, id, k, j1 - j0, st == SIM_ACK_ACCUMULATED ? j1 - j0 : 0);
}

/* Adds the RELEASEs of mult variables (v the first) to the n workers ws (ascending)
 * but `skip`, or, when ws is NULL, to every worker but `skip`. */
static void ack_add_release_set(sim_world *w, int id, int v, int mult, const int *ws, int n, int skip)
{
    sim_ack *a = &w->acks[id];
    if (ws && (n == 0 || (n == 1 && ws[0] == skip))) return;
    sim_ack_ent *e = ack_push(a);
    *e = (sim_ack_ent){skip, v, w->inc_epoch, -1, 0, mult, SIM_RELEASE_SET};
    if (!ws) return;
    if (a->n_pool + n > a->cap_pool) {
        a->cap_pool = a->n_pool + n > 2 * a->cap_pool ? a->n_pool + n : 2 * a->cap_pool;
        a->pool = xrealloc(a->pool, (size_t)a->cap_pool * sizeof *a->pool);
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ws[i] != skip) a->pool[a->n_pool + m++] = ws[i];
    e->w = -1;
    e->cnt = m;
    e->nacc = a->n_pool;
    a->n_pool += m;
}

/* Sends the batch (arrives one latency later) or frees it when empty. */
static void ack_send(sim_world *w, int id)
{
    if (w->acks[id].n) {
        sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_ACKS, id, 0);
        w->acks[id].nev = 1;
        w->open_ack = id;
        w->open_seq = w->heap.next_seq;
        w->open_t = w->now + w->lat_ns;
        return;
    }
    w->acks[id].next_free = w->free_ack;
    w->free_ack = id;
}

/* Whether a batch sent now would be the event right after open_ack, at its time: then
 * its acks are handled right after open_ack's, so they may join it (same order). */
static int ack_mergeable(const sim_world *w)
{
    return w->open_ack >= 0 && w->heap.next_seq == w->open_seq && w->open_t == w->now + w->lat_ns;
}

/* A batch for acks about to be sent together: the open batch when they may join it
 * (its current length in *start), else a new one (*start = -1). Ended by ack_end. */
static int ack_begin(sim_world *w, int *start)
{
    if (!ack_mergeable(w)) {
        *start = -1;
        return ack_new(w);
    }
    int id = w->open_ack;
    sim_ack *a = &w->acks[id];
    *start = a->n;
    /* new entries only, so that ack_end may split them off; but a run at the end may go
     * on (its counts now are kept, to split its new part off too) */
    a->floor = a->n;
    a->fold = -1;
    if (a->n > 0 && a->e[a->n - 1].st == SIM_ACK_RUN) {
        a->floor = a->fold = a->n - 1;
        a->fold_cnt = a->e[a->fold].cnt;
        a->fold_nacc = a->e[a->fold].nacc;
    }
    return id;
}

/* Sends the acks added since ack_begin: as part of the open batch (counted as one more
 * engine event) when nothing was scheduled meanwhile, else as a batch of their own. */
static void ack_end(sim_world *w, int id, int start)
{
    if (start < 0) {
        ack_send(w, id);
        return;
    }
    sim_ack *a = &w->acks[id];
    int n = a->n, fold = a->fold;
    int folded = fold >= 0 && a->e[fold].cnt != a->fold_cnt;
    a->floor = 0;
    a->fold = -1;
    if (n == start && !folded) return;  /* nothing added: no event, as an empty batch */
    if (id == w->open_ack && ack_mergeable(w)) {
        a->nev++;
        return;
    }
    int id2 = ack_new(w);
    a = &w->acks[id];
    sim_ack *b = &w->acks[id2];
    if (folded) {  /* the run's new part */
        sim_ack_ent x = a->e[fold];
        x.cnt -= a->fold_cnt;
        x.nacc -= a->fold_nacc;
        a->e[fold].cnt = a->fold_cnt;
        a->e[fold].nacc = a->fold_nacc;
        *ack_push(b) = x;
    }
    for (int i = start; i < n; i++) {
        dp_assert("sim: RELEASE sets go in batches of their own", a->e[i].st != SIM_RELEASE_SET);
        *ack_push(b) = a->e[i];  /* incarnations as recorded */
    }
    a->n = start;
    ack_send(w, id2);
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
    emit(w, &e);
    if (f->job == JOB_PS) {
        w->ps_dead[f->task] = 1;
    } else {
        sim_wk *k = &w->wk[f->task];
        if (k->phase == W_DONE) return;
        k->dead = 1;
        k->inc++;
        k->inc_epoch = ++w->inc_epoch;
        k->phase = W_IDLE;
    }
    if (f->restart_s >= 0) sim_heap_push(&w->heap, w->now + ns_of(f->restart_s), EV_RESTART, i, 0);
}

static void restart(sim_world *w, int i)
{
    const sim_failure *f = &w->cfg->failures[i];
    evt_record e;
    evt_init(&e, EVT_RECOVERY, f->job == JOB_PS ? EVT_JOB_PS : EVT_JOB_WORKER, f->task);
    e.t = w->now;
    emit(w, &e);
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

static void global_step_advanced(sim_world *w, int64_t gs)
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
    emit_ps(w, EVT_GLOBAL_STEP, w->cat.v[w->step_var].ps, -1, -1, gs, 0, 0);
    for (int i = 0; i < w->cfg->n_failures; i++) {
        const sim_failure *f = &w->cfg->failures[i];
        if (f->job == JOB_PS && f->at_step >= 0 && gs >= f->at_step) fire_failure(w, i);
    }
}

static void ssp_release(sim_world *w)
{
    int j = 0;
    for (int i = 0; i < w->n_ssp_wait; i++) {
        int k = w->ssp_wait[i];
        if (ssp_gate_may_start(w->gate, w->ssp_step[i]))
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_SSP_GO, k, w->wk[k].inc);
        else {
            w->ssp_wait[j] = k;
            w->ssp_step[j] = w->ssp_step[i];
            j++;
        }
    }
    w->n_ssp_wait = j;
}

/* ---- network glue ------------------------------------------------------------------- */

/* Moves the network to now and schedules the deliveries of finished flows. */
static void net_sync(sim_world *w)
{
    const sim_net_done *d;
    int n = sim_net_advance(w->net, (double)w->now / 1e9, &d);
    if (n == 0) return;
    /* One event for all of them: they would be consecutive events (one latency from
     * now, consecutive sequence numbers), so running them in turn in one event is the
     * same order; counted as n engine events. */
    int id = w->free_db;
    if (id >= 0) {
        w->free_db = w->dbs[id].next_free;
    } else {
        id = w->n_dbs++;
        w->dbs = xrealloc(w->dbs, (size_t)w->n_dbs * sizeof *w->dbs);
        memset(&w->dbs[id], 0, sizeof w->dbs[id]);
    }
    sim_dbatch *b = &w->dbs[id];
    if (b->cap < n) {
        b->cap = n > 2 * b->cap ? n : 2 * b->cap;
        b->c = xrealloc(b->c, (size_t)b->cap * sizeof *b->c);
        b->p = xrealloc(b->p, (size_t)b->cap * sizeof *b->p);
    }
    b->n = n;
    for (int i = 0; i < n; i++) {
        b->c[i] = (int)(d[i].cookie >> 32);
        b->p[i] = (int)(d[i].cookie & 0xffffffff);
    }
    sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_DELIVER_BATCH, id, 0);
}

static int cohort_new(sim_world *w)
{
    int id;
    if (w->n_free_cohorts) {
        id = w->free_cohorts[--w->n_free_cohorts];
    } else {
        if (w->n_cohorts == w->cap_cohorts) {
            w->cap_cohorts = w->cap_cohorts ? w->cap_cohorts * 2 : 64;
            w->cohorts = xrealloc(w->cohorts, (size_t)w->cap_cohorts * sizeof *w->cohorts);
            w->free_cohorts = xrealloc(w->free_cohorts, (size_t)w->cap_cohorts * sizeof *w->free_cohorts);
        }
        id = w->n_cohorts++;
        memset(&w->cohorts[id], 0, sizeof w->cohorts[id]);
    }
    return id;
}

static void cohort_done_one(sim_world *w, int c)
{
    sim_cohort *co = &w->cohorts[c];
    if (--co->groups_left > 0) return;
    if (co->cap > 64) {  /* small member lists stay for the slot's next cohort */
        free(co->members);
        free(co->incs);
        co->members = NULL;
        co->incs = NULL;
        co->cap = 0;
    }
    w->free_cohorts[w->n_free_cohorts++] = c;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* Works out, once per direction, which ps a phase talks to and (twins) the network's
 * plan for its flows: every cohort of a direction uses the same ps links and bytes. */
static void plan_dir(sim_world *w, int dir)
{
    w->plan_ready[dir] = 1;
    w->plan[dir] = -1;
    w->zero_ps[dir] = xmalloc((size_t)w->P * sizeof *w->zero_ps[dir]);
    int np = 0;
    for (int p = 0; p < w->P; p++) {
        if (w->ps_first[p + 1] == (dir ? push_first(w, p) : w->ps_first[p])) continue;
        w->co_n[dir]++;
        if (w->ps_bytes[p] <= 0) {
            w->zero_ps[dir][w->n_zero[dir]++] = p;
            continue;
        }
        w->co_links[np] = dir ? w->ps_down[p] : w->ps_up[p];
        w->co_bytes[np] = w->ps_bytes[p];
        w->co_cookies[np++] = p;
    }
    if (np) w->plan[dir] = sim_net_plan_add(w->net, w->co_links, w->co_bytes, w->co_cookies, np);
}

/* Starts the flows of every worker that began a pull (dir 0) or push (dir 1) now. */
static void flush_dir(sim_world *w, int dir)
{
    int n = w->n_pend[dir];
    if (!n) return;
    w->n_pend[dir] = 0;
    net_sync(w);
    int c = cohort_new(w);
    sim_cohort *co = &w->cohorts[c];
    co->dir = dir;
    co->n = n;
    if (co->cap < n) {
        co->cap = n;
        co->members = xrealloc(co->members, (size_t)n * sizeof *co->members);
        co->incs = xrealloc(co->incs, (size_t)n * sizeof *co->incs);
    }
    memcpy(co->members, w->pend[dir], (size_t)n * sizeof *co->members);
    qsort(co->members, (size_t)n, sizeof *co->members, int_cmp);
    for (int i = 0; i < n; i++) co->incs[i] = w->wk[co->members[i]].inc;
    co->groups_left = 0;
    co->link = -1;
    if (w->twins) {
        /* equal shards share one flow group (the same result as one group per ps) */
        if (!w->plan_ready[dir]) plan_dir(w, dir);
        co->groups_left = w->co_n[dir];
        for (int i = 0; i < w->n_zero[dir]; i++)
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, dir ? EV_PUSH_DELIVER : EV_PULL_DELIVER, c,
                               w->zero_ps[dir][i]);
        if (w->plan[dir] >= 0) {
            double cap = dir && w->cfg->worker_push_bw > 0 ? w->cfg->worker_push_bw : w->cfg->worker_bw;
            co->link = sim_net_link_add(w->net, cap, 1);
            sim_net_cohort_add_plan(w->net, co->link, w->plan[dir], (int64_t)c << 32, (double)n);
        }
        return;
    }
    for (int p = 0; p < w->P; p++) {
        if (w->ps_first[p + 1] == (dir ? push_first(w, p) : w->ps_first[p])) continue;
        co->groups_left++;
        if (w->ps_bytes[p] <= 0) {
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, dir ? EV_PUSH_DELIVER : EV_PULL_DELIVER, c, p);
            continue;
        }
        if (co->link < 0) {
            double cap = dir && w->cfg->worker_push_bw > 0 ? w->cfg->worker_push_bw : w->cfg->worker_bw;
            co->link = sim_net_link_add(w->net, cap, 1);
        }
        int links[2] = {dir ? w->ps_down[p] : w->ps_up[p], co->link};
        double wt[2] = {(double)n, 1.0};
        sim_net_group_add(w->net, links, wt, 2, w->ps_bytes[p], (int64_t)c << 32 | p);
    }
}

/* ---- worker ------------------------------------------------------------------------- */

static void wk_pull(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    wk->phase = W_PULL;
    wk->t_phase = w->now;
    wk->outstanding = w->nv;
    for (int v = 0; w->tw && v < w->nv; v++)  /* emit_wk does nothing without a trace */
        emit_wk(w, EVT_PULL_BEGIN, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4, 0, 0,
                0, msg_id(w, k, v));
    emit_wk_phase(w, EVT_PULL_BEGIN, k, wk->local, 0);
    sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_PULL_ARRIVE, k, wk->inc);
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
        wk->phase = W_SSP;
        wk->t_wait = -1;
        sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_SSP_REQ, k, wk->inc);
        return;
    }
    wk_pull(w, k);
}

/* The versions worker k read at its last pull. */
static const int64_t *read_versions(const sim_world *w, int k)
{
    return w->snap[w->wk[k].snap];
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
static void versions_changed(sim_world *w)
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
    wk->loss_read = nqm_loss(w, th);
    w->bytes_pulled += (int64_t)w->model_bytes;
    w->pend[0][w->n_pend[0]++] = k;
}

static void pull_done(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    emit_wk_phase(w, EVT_PULL_END, k, wk->local, w->now - wk->t_phase);
    wk->gs_read = read_versions(w, k)[w->step_var];
    if (wk->gs_read >= w->cfg->steps) {
        wk->phase = W_DONE;
        w->n_done++;
        if (w->gate) {
            ssp_gate_retire(w->gate, k);
            ssp_release(w);
        }
        return;
    }
    wk->phase = W_COMPUTE;
    wk->t_compute = w->now;
    emit_wk(w, EVT_COMPUTE_BEGIN, k, -1, -1, wk->local, 0, 0, 0, 0, 0);
    double d = sim_draw_compute(w, k);
    sim_heap_push(&w->heap, w->now + ns_of(d), EV_COMPUTE_END, k, wk->inc);
}

static void compute_end(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    emit_wk(w, EVT_COMPUTE_END, k, -1, -1, wk->local, 0, w->now - wk->t_compute, 0, 0, 0);
    nqm_grad(w, k);
    wk->phase = W_PUSH;
    wk->t_phase = w->now;
    wk->token = 0;
    wk->outstanding = w->cfg->mode == MODE_SYNC ? w->nv - 1 : w->nv;  /* sync: the token later */
    wk->releases_due = 0;
    wk->t_wait = -1;
    for (int v = 0; w->tw && v < w->nv; v++)
        if (w->cat.v[v].trainable)  /* global_step's push is the step token: no events */
            emit_wk(w, EVT_PUSH_BEGIN, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4, 0, 0,
                0, msg_id(w, k, v));
    emit_wk_phase(w, EVT_PUSH_BEGIN, k, wk->local, 0);
    w->bytes_pushed += (int64_t)w->model_bytes;
    w->pend[1][w->n_pend[1]++] = k;
}

static void push_done(sim_world *w, int k)
{
    sim_wk *wk = &w->wk[k];
    if (wk->t_wait >= 0)
        emit_wk(w, EVT_BARRIER_RELEASE, k, -1, -1, wk->local, 0, w->now - wk->t_wait, 0, 0, 0);
    emit_wk(w, EVT_STEP_END, k, -1, -1, wk->local, 0, 0, wk->loss_read, (double)wk->gs_read, 0);
    wk->local++;
    w->samples += w->cfg->batch;
    wk_start_step(w, k);
}

/* ---- ps ----------------------------------------------------------------------------- */

/* After a take of the n workers rel (ascending) by worker k's push: the RELEASEs of the
 * mult variables (v the first) that took the step, to the others, in one batch that
 * stands for the mult batches (one per variable) that would have been sent in turn. */
static void send_releases(sim_world *w, int k, int v, int mult, const int *rel, int n)
{
    int id = ack_new(w);
    ack_add_release_set(w, id, v, mult, n == w->W ? NULL : rel, n == w->W ? n - 1 : n, k);
    ack_send(w, id);
    w->acks[id].nev = mult;
}

/* What a ps's accumulator said to one sync push: the offer's result, the step then
 * and, after a take, the new step, the mean (at the ps's first dim) and who was taken. */
typedef struct sync_verdict {
    int r;
    int64_t cur, now_step;
    const float *mean;
    const int *rel;
    int n;
} sync_verdict;

/* Worker k's push to ps p offered to the ps's own accumulator. */
static void ps_verdict(sim_world *w, int p, int k, sync_verdict *vd)
{
    int64_t read = w->wk[k].gs_read;
    vd->cur = w->vars[w->ps_vars[w->push_first[p]]].step;
    dp_assert("sim: a sync push is ahead of its variable's step (the runtime's ps would refuse it)",
              read <= vd->cur);
    const float *g = NULL;
    if (w->ps_dims[p]) {
        const float *row = w->grad + (size_t)k * (size_t)w->d;
        for (int i = 0; i < w->ps_dims[p]; i++) w->gbuf[i] = row[w->ps_dim[w->ps_dim0[p] + i]];
        g = w->gbuf;
    }
    vd->r = sync_acc_offer(w->ps_acc[p], k, read, g);
    if (vd->r != SYNC_READY) return;
    vd->n = sync_acc_take(w->ps_acc[p], w->mean, w->released);
    vd->now_step = sync_acc_step(w->ps_acc[p]);
    vd->mean = w->mean;
    vd->rel = w->released;
}

/* Member i (worker k) of cohort c offered to lock L: at the first ps of L it reaches in
 * this round (one delivery batch, one cohort) the offer is made for all of L's ps;
 * the others take the verdict as recorded. */
static int lock_offer(sim_world *w, sim_lock *L, int i, int k)
{
    if (L->stamp[i] == w->round) return L->st[i];
    int64_t read = w->wk[k].gs_read;
    L->cur[i] = L->step;
    dp_assert("sim: a sync push is ahead of its variable's step (the runtime's ps would refuse it)",
              read <= L->step);
    const float *g = NULL;
    if (L->dims) {
        const float *row = w->grad + (size_t)k * (size_t)w->d;
        for (int j = 0; j < L->dims; j++) w->gbuf[j] = row[L->dim[j]];
        g = w->gbuf;
    }
    int r = sync_acc_offer(L->acc, k, read, g);
    if (r == SYNC_READY) {
        L->n_rel = sync_acc_take(L->acc, L->mean, L->rel);
        L->step = sync_acc_step(L->acc);
    }
    L->st[i] = (int8_t)r;
    L->stamp[i] = w->round;
    return r;
}

static void lock_verdict(sim_world *w, int p, int i, int k, sync_verdict *vd)
{
    sim_lock *L = &w->locks[w->ps_lock[p]];
    vd->r = lock_offer(w, L, i, k);
    vd->cur = L->cur[i];
    vd->now_step = L->step;
    vd->mean = L->mean + w->ps_lock_off[p];
    vd->rel = L->rel;
    vd->n = L->n_rel;
}

/* Sync: member i (worker k) of cohort c pushes ps p's gradients (every variable the push
 * phase carries to it); each variable is handled as if by its own accumulator (the
 * same drops, applies, events and acks, in variable order). */
static void sync_push(sim_world *w, int p, int c, int i, int acks)
{
    int j0 = w->push_first[p], j1 = w->ps_first[p + 1];
    if (j0 == j1) return;
    int k = w->cohorts[c].members[i];
    sync_verdict vd;
    if (w->ps_lock[p] >= 0) lock_verdict(w, p, i, k, &vd);
    else ps_verdict(w, p, k, &vd);
    if (vd.r == SYNC_STALE || vd.r == SYNC_DUPLICATE) {
        int64_t read = w->wk[k].gs_read;
        for (int j = j0; j < j1; j++) {
            int v = w->ps_vars[j];
            if (w->cat.v[v].trainable) w->drops++;
            emit_ps(w, EVT_DROP, p, k, v, vd.cur, (double)(vd.cur - read), msg_id(w, k, v));
        }
        ack_add_vars(w, acks, k, j0, j1, SIM_ACK_DROPPED);
        return;
    }
    if (vd.r != SYNC_READY) {
        /* accepted: acked now, released when the step completes */
        ack_add_vars(w, acks, k, j0, j1, SIM_ACK_ACCUMULATED);
        return;
    }
    int n = vd.n;
    versions_changed(w);
    int o = 0;
    for (int j = j0; j < j1; j++) {
        int v = w->ps_vars[j];
        sim_var *sv = &w->vars[v];
        sv->step = vd.now_step;
        dp_assert("sim: only global_step is not trainable", w->cat.v[v].trainable);
        optim_apply(&w->opt, w->theta + sv->dim0, w->slot + sv->dim0, vd.mean + o, (size_t)sv->dims);
        o += sv->dims;
        w->applies += n;
        w->stale.n += (uint64_t)n;  /* n gradients of staleness 0 */
        for (int q = 0; w->tw && q < n; q++)
            emit_ps(w, EVT_APPLY, p, vd.rel[q], v, vd.now_step, 0, msg_id(w, vd.rel[q], v));
    }
    /* the pusher (one of them) is acked APPLIED; the others get RELEASEs */
    ack_add_vars(w, acks, k, j0, j1, SIM_ACK_APPLIED);
    send_releases(w, k, w->ps_vars[j0], j1 - j0, vd.rel, n);
}

static void handle_push(sim_world *w, int p, int k, int v, int acks)
{
    sim_var *sv = &w->vars[v];
    const var_def *d = &w->cat.v[v];
    const float *g = sv->dims ? w->grad + (size_t)k * (size_t)w->d + (size_t)sv->dim0 : NULL;
    if (w->cfg->mode == MODE_SYNC) {
        /* sync pushes carry the global step read (TensorFlow's local_step) */
        int64_t read = w->wk[k].gs_read;
        int64_t cur = sv->step;
        dp_assert("sim: a sync push is ahead of its variable's step (the runtime's ps would refuse it)",
                  read <= cur);
        int r = sync_acc_offer(sv->acc, k, read, g);
        if (r == SYNC_STALE || r == SYNC_DUPLICATE) {
            if (d->trainable) w->drops++;
            emit_ps(w, EVT_DROP, p, k, v, cur, (double)(cur - read), msg_id(w, k, v));
            ack_add(w, acks, k, v, SIM_ACK_DROPPED);
            return;
        }
        if (r != SYNC_READY) {
            /* accepted: acked now, released when the step completes */
            ack_add(w, acks, k, v, SIM_ACK_ACCUMULATED);
            return;
        }
        int n = sync_acc_take(sv->acc, w->mean, w->released);
        int64_t now_step = sv->step = sync_acc_step(sv->acc);
        versions_changed(w);
        if (d->trainable) {
            optim_apply(&w->opt, w->theta + sv->dim0, w->slot + sv->dim0, w->mean, (size_t)sv->dims);
            w->applies += n;
            w->stale.n += (uint64_t)n;  /* n gradients of staleness 0 */
        }
        for (int i = 0; w->tw && i < n; i++)
            emit_ps(w, EVT_APPLY, p, w->released[i], v, now_step, 0, msg_id(w, w->released[i], v));
        /* the pusher (one of them) is acked APPLIED; the others get a RELEASE */
        ack_add(w, acks, k, v, SIM_ACK_APPLIED);
        send_releases(w, k, v, 1, w->released, n);
        if (!d->trainable) global_step_advanced(w, now_step);
        return;
    }
    int64_t s = async_apply(&sv->av, read_versions(w, k)[v]);
    versions_changed(w);
    if (d->trainable) {
        optim_apply(&w->opt, w->theta + sv->dim0, w->slot + sv->dim0, g, (size_t)sv->dims);
        w->applies++;
        stale_stats_add(&w->stale, s);
    }
    emit_ps(w, EVT_APPLY, p, k, v, sv->av.version, (double)s, msg_id(w, k, v));
    ack_add(w, acks, k, v, SIM_ACK_APPLIED);
    if (!d->trainable) {
        global_step_advanced(w, sv->av.version);
        if (w->gate) {
            ssp_gate_clock(w->gate, k, w->wk[k].local + 1);
            ssp_release(w);
        }
    }
}

static void deliver(sim_world *w, const sim_event *ev)
{
    int c = ev->a, p = (int)ev->b;
    if (w->ps_dead[p] && defer_if_dead(w, p, ev)) return;
    sim_cohort *co = &w->cohorts[c];
    int v0 = ev->type == EV_PULL_DELIVER ? w->ps_first[p] : push_first(w, p), v1 = w->ps_first[p + 1];
    if (ev->type == EV_PULL_DELIVER) {
        for (int i = 0; i < co->n; i++) {
            int k = co->members[i];
            sim_wk *wk = &w->wk[k];
            if (wk->dead || wk->inc != co->incs[i]) continue;
            for (int j = v0; w->tw && w->detail[k] && j < v1; j++) {
                const int64_t *ver = read_versions(w, k);
                int v = w->ps_vars[j];
                emit_wk(w, EVT_PULL_END, k, p, v, wk->local, (int64_t)w->cat.v[v].count * 4,
                        w->now - wk->t_phase, (double)ver[v], 0, msg_id(w, k, v));
            }
            wk->outstanding -= v1 - v0;
            if (wk->outstanding == 0) pull_done(w, k);
        }
    } else {
        int start, acks = ack_begin(w, &start);
        for (int i = 0; i < co->n; i++) {
            int k = co->members[i];
            sim_wk *wk = &w->wk[k];
            if (wk->dead || wk->inc != co->incs[i]) continue;
            if (w->cfg->mode == MODE_SYNC) sync_push(w, p, c, i, acks);
            else for (int j = v0; j < v1; j++) handle_push(w, p, k, w->ps_vars[j], acks);
        }
        ack_end(w, acks, start);
    }
    cohort_done_one(w, c);
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
    cohort_done_one(w, c);
}

/* Sync push deliveries (c, ps[0..m)) of a one-worker cohort in a row, none from a dead
 * ps: deliver() for each in turn, without its per-delivery lookups. When every ps is in
 * a lock, none takes a step and no ack is traced, each delivery only adds acks to the
 * worker's run in the open batch (nothing is scheduled in between): one addition,
 * counted as the m merged events. */
static void deliver_push_run(sim_world *w, int c, const int *ps, int m)
{
    sim_cohort *co = &w->cohorts[c];
    int k = co->members[0];
    if (!w->wk[k].dead && w->wk[k].inc == co->incs[0]) {
        int fast = !(w->tw && w->detail[k]), cnt = 0, nacc = 0, drops = 0;
        for (int i = 0; fast && i < m; i++) {
            int p = ps[i], nv = w->ps_first[p + 1] - w->push_first[p];
            if (w->ps_lock[p] < 0 || nv == 0) {
                fast = 0;
                break;
            }
            int r = lock_offer(w, &w->locks[w->ps_lock[p]], 0, k);
            if (r == SYNC_READY) fast = 0;
            cnt += nv;
            if (r == SYNC_ACCUMULATED) nacc += nv;
            else drops += nv;  /* every pushed variable is trainable */
        }
        if (fast) {
            int start, acks = ack_begin(w, &start);
            w->drops += drops;
            ack_add_run(w, acks, k, cnt, nacc);
            ack_end(w, acks, start);
            dp_assert("sim: a push run's acks went out in the open batch", acks == w->open_ack);
            w->acks[acks].nev += m - 1;
        } else {
            for (int i = 0; i < m; i++) {
                int start, acks = ack_begin(w, &start);
                sync_push(w, ps[i], c, 0, acks);
                ack_end(w, acks, start);
            }
        }
    }
    co = &w->cohorts[c];
    co->groups_left -= m - 1;
    cohort_done_one(w, c);
}

/* Runs a delivery batch's deliveries in turn, as the events they stand for. */
static void deliver_batch(sim_world *w, const sim_event *ev)
{
    int id = ev->a;
    int n = w->dbs[id].n;
    for (int i = 0; i < n; i++) {
        const sim_dbatch *b = &w->dbs[id];
        int c = b->c[i], j = i + 1;
        if (i == 0 || c != b->c[i - 1]) w->round++;  /* a cohort's deliveries are consecutive */
        int pull = !w->cohorts[c].dir;
        int run = pull ? !w->per_msg : w->cfg->mode == MODE_SYNC && w->cohorts[c].n == 1;
        if (run && !w->cfg->no_shortcuts) {
            int live = !w->ps_dead[b->p[i]];
            while (j < n && b->c[j] == c) live &= !w->ps_dead[b->p[j++]];
            if (live && j - i > 1) {
                if (pull) deliver_pull_run(w, c, b->p + i, j - i);
                else deliver_push_run(w, c, b->p + i, j - i);
                i = j - 1;
                continue;
            }
        }
        sim_event e = *ev;
        e.a = c;
        e.b = b->p[i];
        e.type = w->cohorts[e.a].dir ? EV_PUSH_DELIVER : EV_PULL_DELIVER;
        deliver(w, &e);
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
    int start, acks = ack_begin(w, &start);
    handle_push(w, p, k, w->step_var, acks);
    ack_end(w, acks, start);
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
            emit_wk(w, EVT_BARRIER_WAIT, k, -1, -1, wk->local, 0, 0, 0, 0, 0);
        }
        return;
    }
    if (w->cfg->mode == MODE_SYNC && !wk->token) {
        wk->token = 1;
        wk->outstanding = 1;
        sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_TOKEN_ARRIVE, k, wk->inc);
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
        if (wk->dead || wk->inc_epoch > e->inc || wk->phase != W_PUSH) continue;
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
        if (wk->dead || wk->inc != e->inc || wk->phase != W_PUSH) continue;
        if (e->st == SIM_RELEASE) {
            wk->releases_due--;  /* may run ahead of its ACCUMULATED ack: counted signed */
        } else {
            if (e->st != SIM_ACK_RUN && w->tw && w->cat.v[v].trainable)
                emit_wk(w, EVT_PUSH_END, k, w->cat.v[v].ps, v, wk->local, (int64_t)w->cat.v[v].count * 4,
                        w->now - wk->t_phase, (double)e->st, 0, msg_id(w, k, v));
            wk->releases_due += e->st == SIM_ACK_RUN ? e->nacc : e->st == SIM_ACK_ACCUMULATED;
            wk->outstanding -= e->cnt;
            if (wk->outstanding == 0 && !wk->token)
                emit_wk_phase(w, EVT_PUSH_END, k, wk->local, w->now - wk->t_phase);
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
    case EV_PULL_ARRIVE:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b) pull_arrive(w, k);
        return;
    case EV_COMPUTE_END:
        if (!w->wk[k].dead && w->wk[k].inc == ev->b) compute_end(w, k);
        return;
    case EV_PULL_DELIVER:
    case EV_PUSH_DELIVER:
        w->round++;
        deliver(w, ev);
        return;
    case EV_ACKS:
        acks_arrive(w, k);
        return;
    case EV_DELIVER_BATCH:
        deliver_batch(w, ev);
        return;
    case EV_SSP_REQ: {
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != ev->b) return;
        if (ssp_gate_may_start(w->gate, wk->local)) {
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, EV_SSP_GO, k, wk->inc);
            return;
        }
        wk->t_wait = w->now;
        emit_wk(w, EVT_SSP_WAIT, k, -1, -1, wk->local, 0, 0, (double)ssp_gate_min(w->gate), 0, 0);
        w->ssp_wait[w->n_ssp_wait] = k;
        w->ssp_step[w->n_ssp_wait++] = wk->local;
        return;
    }
    case EV_SSP_GO: {
        sim_wk *wk = &w->wk[k];
        if (wk->dead || wk->inc != ev->b) return;
        if (wk->t_wait >= 0)
            emit_wk(w, EVT_SSP_RELEASE, k, -1, -1, wk->local, 0, w->now - wk->t_wait,
                    (double)ssp_gate_min(w->gate), 0, 0);
        wk_pull(w, k);
        return;
    }
    case EV_TOKEN_ARRIVE:
        token_arrive(w, ev);
        return;
    case EV_FAIL:
        fire_failure(w, k);
        return;
    case EV_RESTART:
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
    flush_dir(w, 0);
    flush_dir(w, 1);
}

void sim_world_net_sync(sim_world *w)
{
    net_sync(w);
}

void sim_world_start(sim_world *w)
{
    for (int i = 0; i < w->cfg->n_failures; i++) {
        const sim_failure *f = &w->cfg->failures[i];
        if (f->at_s >= 0) sim_heap_push(&w->heap, ns_of(f->at_s), EV_FAIL, i, 0);
    }
    for (int k = 0; k < w->W; k++) wk_start_step(w, k);
}
