/* deliver.c — what reaches the simulated tasks (the protocol is sim.c's): a finished
 * flow's delivery (a ps's pull answer to a cohort's workers, a cohort's push to a ps),
 * the batch of deliveries of flows that finished together (flows.c), a worker's early
 * push (--pipeline) at a ps and its sync step token at global_step's, and a batch of acks
 * and RELEASEs (ack.c) at the workers. What reaches a dead ps waits for its restart;
 * what reaches a worker that died since it was sent (its incarnation changed) is ignored.
 * Batched handling (delivery runs, ack runs, RELEASE sets) does the work of the events it
 * stands for in their order and counts them all in w->events; `no_shortcuts` turns the
 * delivery runs off so that tests can compare. Single-threaded, state in sim_world. */
#include "sim/world.h"

void sim_deliver(sim_world *w, const sim_event *ev)
{
    int c = ev->a, p = (int)ev->b;
    if (w->ps_dead[p] && sim_world_defer_if_dead(w, p, ev)) return;
    sim_cohort *co = &w->cohorts[c];
    int v0 = ev->type == SIM_EV_PULL_DELIVER ? w->ps_first[p] : sim_push_first(w, p), v1 = w->ps_first[p + 1];
    if (ev->type == SIM_EV_PULL_DELIVER) {
        for (int i = 0; i < co->n; i++) {
            int k = co->members[i];
            sim_wk *wk = &w->wk[k];
            if (wk->dead || wk->inc != co->incs[i]) continue;
            if (w->tw && w->detail[k]) sim_wk_pull_end(w, k, p);
            wk->outstanding -= v1 - v0;
            if (wk->outstanding == 0) sim_wk_pull_done(w, k);
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
        if (wk->outstanding == 0) sim_wk_pull_done(w, k);
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
    sim_deliver(w, &e);
}

/* Runs a delivery batch's deliveries in turn, as the events they stand for. */
void sim_deliver_batch(sim_world *w, const sim_event *ev)
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

/* The early push of worker k (ev->a) reaches ps p (ev->b's high half): its variables are
 * applied as the step's push would apply them, with the ps's work when modelled. */
void sim_deliver_early(sim_world *w, const sim_event *ev)
{
    int k = ev->a, p = (int)(ev->b >> 32);
    int32_t inc = (int32_t)(uint32_t)(ev->b & 0xffffffff);
    if (w->ps_dead[p] && sim_world_defer_if_dead(w, p, ev)) return;
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

/* The sync step token reaches global_step's ps (sent one latency earlier). */
void sim_deliver_token(sim_world *w, const sim_event *ev)
{
    int k = ev->a, p = w->cat.v[w->step_var].ps;
    if (w->ps_dead[p] && sim_world_defer_if_dead(w, p, ev)) return;
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

/* One RELEASE to each worker of a set, in turn. While a worker still has releases due
 * after this one, sim_wk_push_progress would change nothing (it either awaits acks or is
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
        if ((wk->releases_due -= e->mult) <= 0) sim_wk_push_progress(w, k);
    }
}

void sim_deliver_acks(sim_world *w, int id)
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
        sim_wk_push_progress(w, k);
    }
    w->events += (uint64_t)(a->nev - 1);  /* a merged batch counts as the batches it joined */
    if (id == w->open_ack) w->open_ack = -1;
    a->n = 0;
    a->next_free = w->free_ack;
    w->free_ack = id;
}
