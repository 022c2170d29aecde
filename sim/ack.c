/* ack.c — the simulator's acknowledgement batches: the acks (ACK_APPLIED, ACCUMULATED,
 * DROPPED) and RELEASEs a ps sends back, grouped into batches that arrive together one
 * latency later (deliver.c handles arrivals). Consecutive acks to one worker are kept as a
 * run (a count, and how many say ACCUMULATED), a step's RELEASEs as one set; a batch
 * sent right after the previous one (nothing scheduled in between, same arrival time)
 * joins it and counts as its own engine event, so the order of handling and the event
 * count are those of one batch per message. Single-threaded, state in sim_world. */
#include <string.h>

#include "sim/world.h"

int sim_ack_new(sim_world *w)
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
void sim_ack_add_run(sim_world *w, int id, int k, int cnt, int nacc)
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

/* Adds worker k's ack (status st) for variable v. Untraced acks join the worker's run.
 * (RELEASEs go in sets: sim_ack_add_release_set.) */
void sim_ack_add(sim_world *w, int id, int k, int v, int st)
{
    if (!(w->tw && w->detail[k])) {
        sim_ack_add_run(w, id, k, 1, st == SIM_ACK_ACCUMULATED);
        return;
    }
    *ack_push(&w->acks[id]) = (sim_ack_ent){k, v, w->wk[k].inc, 1, 0, 0, (int8_t)st};
}

/* Worker k's acks, all of status st, for ps p's variables ps_vars[j0 .. j1). */
void sim_ack_add_vars(sim_world *w, int id, int k, int j0, int j1, int st)
{
    if (w->tw && w->detail[k]) {
        for (int j = j0; j < j1; j++) sim_ack_add(w, id, k, w->ps_vars[j], st);
        return;
    }
    sim_ack_add_run(w, id, k, j1 - j0, st == SIM_ACK_ACCUMULATED ? j1 - j0 : 0);
}

/* Adds the RELEASEs of mult variables (v the first) to the n workers ws (ascending)
 * but `skip`, or, when ws is NULL, to every worker but `skip`. */
void sim_ack_add_release_set(sim_world *w, int id, int v, int mult, const int *ws, int n, int skip)
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

static void ack_free(sim_world *w, int id)
{
    w->acks[id].next_free = w->free_ack;
    w->free_ack = id;
}

/* The batch arrives one latency from now. */
static void ack_schedule(sim_world *w, int id)
{
    sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, SIM_EV_ACKS, id, 0);
    w->open_ack = id;
    w->open_seq = w->heap.next_seq;
    w->open_t = w->now + w->lat_ns;
}

/* Sends the batch (arrives one latency later) or frees it when empty. While the ps's
 * work is being modelled for a message (w->holding, psq.c), a batch is held for it
 * instead, and sent by sim_ack_send_held when the ps has done that work. */
void sim_ack_send(sim_world *w, int id)
{
    if (!w->acks[id].n) {
        ack_free(w, id);
        return;
    }
    w->acks[id].nev = 1;
    if (w->holding) {
        dp_assert("sim: too many ack batches for one ps message", w->n_held < SIM_JOB_ACKS - 1);
        w->held[w->n_held++] = id;
        return;
    }
    ack_schedule(w, id);
}

void sim_ack_send_held(sim_world *w, int id)
{
    if (w->acks[id].n) ack_schedule(w, id);  /* nev as counted when it was held */
    else ack_free(w, id);
}

/* Whether a batch sent now would be the event right after open_ack, at its time: then
 * its acks are handled right after open_ack's, so they may join it (same order). */
static int ack_mergeable(const sim_world *w)
{
    return w->open_ack >= 0 && w->heap.next_seq == w->open_seq && w->open_t == w->now + w->lat_ns;
}

/* A batch for acks about to be sent together: the open batch when they may join it
 * (its current length in *start), else a new one (*start = -1). Ended by sim_ack_end. */
int sim_ack_begin(sim_world *w, int *start)
{
    if (!ack_mergeable(w)) {
        *start = -1;
        return sim_ack_new(w);
    }
    int id = w->open_ack;
    sim_ack *a = &w->acks[id];
    *start = a->n;
    /* new entries only, so that sim_ack_end may split them off; but a run at the end may go
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

/* Sends the acks added since sim_ack_begin: as part of the open batch (counted as one more
 * engine event) when nothing was scheduled meanwhile, else as a batch of their own. */
void sim_ack_end(sim_world *w, int id, int start)
{
    if (start < 0) {
        sim_ack_send(w, id);
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
    int id2 = sim_ack_new(w);
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
    sim_ack_send(w, id2);
}
