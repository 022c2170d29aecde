/* ps.c — the simulated ps's handling of a push: sync pushes offered to an accumulator
 * (the ps's own, or its twin class's lock: see sim_lock in world.h) with drops,
 * applies, acks and RELEASEs as the runtime's ps (runtime/ps.c) does them; async / ssp
 * pushes applied at once with async_apply staleness. Each variable is handled as if by
 * its own accumulator, in catalogue order, so that events and acks are the same.
 * Single-threaded, state in sim_world. */
#include "sim/world.h"

/* After a take of the n workers rel (ascending) by worker k's push: the RELEASEs of the
 * mult variables (v the first) that took the step, to the others, in one batch that
 * stands for the mult batches (one per variable) that would have been sent in turn. */
static void send_releases(sim_world *w, int k, int v, int mult, const int *rel, int n)
{
    int id = sim_ack_new(w);
    sim_ack_add_release_set(w, id, v, mult, n == w->W ? NULL : rel, n == w->W ? n - 1 : n, k);
    sim_ack_send(w, id);
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

/* Offers worker k's gradient (its grad row's elements dim[0 .. dims)) to acc, whose step
 * is cur; after the take it completes, fills mean, rel (ascending), *n and *now_step.
 * Returns the offer's result. */
static int offer(sim_world *w, sync_acc *acc, int64_t cur, int k, const int *dim, int dims, float *mean,
                 int *rel, int *n, int64_t *now_step)
{
    int64_t read = w->wk[k].gs_read;
    dp_assert("sim: a sync push is ahead of its variable's step (the runtime's ps would refuse it)",
              read <= cur);
    const float *g = NULL;
    if (dims) {
        const float *row = w->grad + (size_t)k * (size_t)w->d;
        for (int j = 0; j < dims; j++) w->gbuf[j] = row[dim[j]];
        g = w->gbuf;
    }
    int r = sync_acc_offer(acc, k, read, g);
    if (r == SYNC_READY) {
        *n = sync_acc_take(acc, mean, rel);
        *now_step = sync_acc_step(acc);
    }
    return r;
}

/* Worker k's push to ps p offered to the ps's own accumulator. */
static void ps_verdict(sim_world *w, int p, int k, sync_verdict *vd)
{
    vd->cur = w->vars[w->ps_vars[w->push_first[p]]].step;
    vd->r = offer(w, w->ps_acc[p], vd->cur, k, w->ps_dim + w->ps_dim0[p], w->ps_dims[p], w->mean, w->released,
                  &vd->n, &vd->now_step);
    vd->mean = w->mean;
    vd->rel = w->released;
}

/* Member i (worker k) of this round's cohort offered to lock L: at the first of L's ps
 * it reaches in the round (one delivery batch, one cohort) the offer is made for all of
 * them; the others take the verdict as recorded. */
int sim_ps_lock_offer(sim_world *w, sim_lock *L, int i, int k)
{
    if (L->stamp[i] == w->round) return L->st[i];
    L->cur[i] = L->step;
    int r = offer(w, L->acc, L->step, k, L->dim, L->dims, L->mean, L->rel, &L->n_rel, &L->step);
    L->st[i] = (int8_t)r;
    L->stamp[i] = w->round;
    return r;
}

static void lock_verdict(sim_world *w, int p, int i, int k, sync_verdict *vd)
{
    sim_lock *L = &w->locks[w->ps_lock[p]];
    vd->r = sim_ps_lock_offer(w, L, i, k);
    vd->cur = L->cur[i];
    vd->now_step = L->step;
    vd->mean = L->mean + w->ps_lock_off[p];
    vd->rel = L->rel;
    vd->n = L->n_rel;
}

/* Sync: member i (worker k) of cohort c pushes ps p's gradients (every variable the push
 * phase carries to it); each variable is handled as if by its own accumulator (the
 * same drops, applies, events and acks, in variable order). */
void sim_ps_push_sync(sim_world *w, int p, int c, int i, int acks)
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
            sim_emit_ps(w, EVT_DROP, p, k, v, vd.cur, (double)(vd.cur - read), sim_msg_id(w, k, v));
        }
        sim_ack_add_vars(w, acks, k, j0, j1, SIM_ACK_DROPPED);
        return;
    }
    if (vd.r != SYNC_READY) {
        /* accepted: acked now, released when the step completes */
        sim_ack_add_vars(w, acks, k, j0, j1, SIM_ACK_ACCUMULATED);
        return;
    }
    int n = vd.n;
    sim_world_versions_changed(w);
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
            sim_emit_ps(w, EVT_APPLY, p, vd.rel[q], v, vd.now_step, 0, sim_msg_id(w, vd.rel[q], v));
    }
    /* the pusher (one of them) is acked APPLIED; the others get RELEASEs */
    sim_ack_add_vars(w, acks, k, j0, j1, SIM_ACK_APPLIED);
    send_releases(w, k, w->ps_vars[j0], j1 - j0, vd.rel, n);
}

/* Async / ssp: worker k's push of variable v to ps p, applied at once; sync: the step
 * token (global_step's empty push, alone after the gradients), offered to global_step's
 * accumulator, whose take advances the global step. */
void sim_ps_push(sim_world *w, int p, int k, int v, int acks)
{
    sim_var *sv = &w->vars[v];
    const var_def *d = &w->cat.v[v];
    if (w->cfg->mode == MODE_SYNC) {
        dp_assert("sim: the only sync push handled alone is the step token", !d->trainable && !sv->dims);
        int n = 0;
        int64_t now_step = 0;
        int r = offer(w, sv->acc, sv->step, k, NULL, 0, w->mean, w->released, &n, &now_step);
        if (r == SYNC_STALE || r == SYNC_DUPLICATE) {
            sim_ack_add(w, acks, k, v, SIM_ACK_DROPPED);  /* no drop event: not a gradient */
            return;
        }
        if (r != SYNC_READY) {
            sim_ack_add(w, acks, k, v, SIM_ACK_ACCUMULATED);  /* released when the step completes */
            return;
        }
        sv->step = now_step;
        sim_world_versions_changed(w);
        /* the pusher (one of them) is acked APPLIED; the others get a RELEASE */
        sim_ack_add(w, acks, k, v, SIM_ACK_APPLIED);
        send_releases(w, k, v, 1, w->released, n);
        sim_world_global_step(w, now_step);
        return;
    }
    const float *g = sv->dims ? w->grad + (size_t)k * (size_t)w->d + (size_t)sv->dim0 : NULL;
    int64_t s = async_apply(&sv->av, sim_read_versions(w, k)[v]);
    sim_world_versions_changed(w);
    if (d->trainable) {
        optim_apply(&w->opt, w->theta + sv->dim0, w->slot + sv->dim0, g, (size_t)sv->dims);
        w->applies++;
        stale_stats_add(&w->stale, s);
    }
    sim_emit_ps(w, EVT_APPLY, p, k, v, sv->av.version, (double)s, sim_msg_id(w, k, v));
    sim_ack_add(w, acks, k, v, SIM_ACK_APPLIED);
    if (!d->trainable) {
        sim_world_global_step(w, sv->av.version);
        if (w->gate) {
            ssp_gate_clock(w->gate, k, w->wk[k].local + 1);
            sim_world_ssp_release(w);
        }
    }
}

/* Async / ssp: worker k's pushes of ps p's variables ps_vars[j0, j1) (not those it sent
 * during the compute, with skip_early), in the runtime's order (runtime/worker_net.c,
 * send_step_pushes): the gradients, then global_step's push (the step's clock). */
void sim_ps_push_step(sim_world *w, int p, int k, int j0, int j1, int skip_early, int acks)
{
    for (int clock = 0; clock < 2; clock++)
        for (int j = j0; j < j1; j++) {
            int v = w->ps_vars[j];
            if ((v == w->step_var) != clock || (skip_early && w->early_var[v])) continue;
            sim_ps_push(w, p, k, v, acks);
        }
}
