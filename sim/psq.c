/* psq.c — the ps's own work (--ps-pull-cost, --ps-push-cost): each ps is one thread that
 * handles one message at a time in arrival order, as the runtime's ps runs one libev
 * loop. A pull answer costs the ps the pull cost's time per variable it carries plus
 * their bytes at the cost's rate; a push (or the sync step token) likewise with the push
 * cost. A message's effects on the ps's state are made when it arrives (sim.c, deliver.c,
 * ps.c), in arrival order, so they are what the real ps computes handling its queue in
 * turn; what the ps sends back waits for its work: the answer's flow, the acks and
 * RELEASEs. With --ps-send-bandwidth the ps then writes the answer while it travels: its
 * flow starts when the pull's work is done, and the ps stays busy for the bytes at that
 * rate (a SEND job in the pull's place at the head of its queue) before its next message.
 * A busy ps is a busy task (W + p) on its host's cores when those are modelled (cpu.h),
 * else its work takes what it takes alone. Single-threaded, state in sim_world. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/world.h"

void sim_psq_init(sim_world *w)
{
    w->psq = xcalloc((size_t)(w->P > 0 ? w->P : 1), sizeof *w->psq);
}

void sim_psq_release(sim_world *w)
{
    for (int p = 0; w->psq && p < w->P; p++) {
        sim_psq *q = &w->psq[p];
        for (int i = 0; i < q->n; i++) free(q->q[(q->head + i) % q->cap].ev);
        free(q->q);
    }
    free(w->hev);
    free(w->psq);
    free(w->pp_k);
    free(w->pp_p);
    free(w->ps_host);
}

/* Starts the work of ps p's head job: on its host's cores, or an event when it is done. */
static void job_start(sim_world *w, int p)
{
    const sim_psq *q = &w->psq[p];
    const sim_ps_job *j = &q->q[q->head];
    /* a pull answer streams through the socket as the ps writes it: the worker's copying
     * runs beside the ps's work, not after it */
    if (j->kind == SIM_JOB_PULL && !w->wk[j->k].dead && w->wk[j->k].inc == j->inc)
        sim_world_copy(w, j->k, w->ps_bytes[p]);
    if (w->cpu) {
        int h = w->ps_host[p];
        sim_cpu_start(w->cpu, h, w->W + p, j->work_ns, w->now);
        sim_world_cpu_arm(w, h);
        return;
    }
    /* rounded up to the ns, as the cores' finishing times are */
    int64_t d = j->work_ns <= 1e-3 ? 0 : (int64_t)ceil(j->work_ns - 1e-3);
    sim_heap_push(&w->heap, w->now + d, SIM_EV_PS_DONE, p, 0);
}

/* A job at the tail of ps p's queue (started by job_go). */
static sim_ps_job *job_add(sim_world *w, int p, int kind, int k, double work_s)
{
    sim_psq *q = &w->psq[p];
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 8;
        sim_ps_job *nq = xmalloc((size_t)cap * sizeof *nq);
        for (int i = 0; i < q->n; i++) nq[i] = q->q[(q->head + i) % q->cap];
        free(q->q);
        q->q = nq;
        q->head = 0;
        q->cap = cap;
    }
    sim_ps_job *j = &q->q[(q->head + q->n) % q->cap];
    q->n++;
    *j = (sim_ps_job){k, w->wk[k].inc, kind, work_s * 1e9, {-1, -1, -1}, NULL, 0};
    return j;
}

/* The job just added starts now when the ps had nothing else to do. */
static void job_go(sim_world *w, int p)
{
    if (w->psq[p].n == 1) job_start(w, p);
}

void sim_psq_pull(sim_world *w, int k)
{
    for (int p = 0; p < w->P; p++) {
        int msgs = w->ps_first[p + 1] - w->ps_first[p];
        if (!msgs) continue;
        job_add(w, p, SIM_JOB_PULL, k, sim_ps_cost_s(&w->cfg->ps_pull_cost, msgs, w->ps_bytes[p]));
        job_go(w, p);
    }
}

/* Holds the ack batches the rules send while handling a message (ack.c), and the ps's
 * events about it (emit.c), for the job. */
static void hold_begin(sim_world *w)
{
    w->holding = 1;
    w->n_held = 0;
    w->n_hev = 0;
}

/* The held batches, then `acks`, become job j's, to send in that order when it is done. */
static void hold_end(sim_world *w, sim_ps_job *j, int acks)
{
    w->holding = 0;
    dp_assert("sim: a ps message sends at most two release batches", w->n_held < SIM_JOB_ACKS);
    for (int i = 0; i < w->n_held; i++) j->acks[i] = w->held[i];
    j->acks[w->n_held] = acks;
    w->acks[acks].nev = 1;
    w->n_held = 0;
    if (w->n_hev) {
        j->ev = xmalloc((size_t)w->n_hev * sizeof *j->ev);
        memcpy(j->ev, w->hev, (size_t)w->n_hev * sizeof *j->ev);
        j->n_ev = w->n_hev;
        w->n_hev = 0;
    }
}

void sim_psq_push(sim_world *w, int p, int c, int i)
{
    int k = w->cohorts[c].members[i];
    int j0 = w->push_first[p], j1 = w->ps_first[p + 1];
    int early = w->wk[k].early_sent;  /* --pipeline: those variables came before */
    int msgs = j1 - j0 - (early ? w->ps_early[p] : 0);
    double bytes = w->ps_bytes[p] - (early ? w->ps_early_bytes[p] : 0);
    sim_ps_job *j = job_add(w, p, SIM_JOB_PUSH, k, sim_ps_cost_s(&w->cfg->ps_push_cost, msgs, bytes));
    int idx = (int)(j - w->psq[p].q);
    hold_begin(w);
    int acks = sim_ack_new(w);
    if (w->cfg->mode == MODE_SYNC) sim_ps_push_sync(w, p, c, i, acks);
    else
        sim_ps_push_step(w, p, k, j0, j1, early, acks);
    hold_end(w, &w->psq[p].q[idx], acks);
    job_go(w, p);
}

void sim_psq_early(sim_world *w, int p, int k)
{
    sim_ps_job *j = job_add(w, p, SIM_JOB_PUSH, k,
                            sim_ps_cost_s(&w->cfg->ps_push_cost, w->ps_early[p], w->ps_early_bytes[p]));
    int idx = (int)(j - w->psq[p].q);
    hold_begin(w);
    int acks = sim_ack_new(w);
    for (int v = w->ps_first[p]; v < w->ps_first[p + 1]; v++)
        if (w->early_var[w->ps_vars[v]]) sim_ps_push(w, p, k, w->ps_vars[v], acks);
    hold_end(w, &w->psq[p].q[idx], acks);
    job_go(w, p);
}

void sim_psq_token(sim_world *w, int p, int k)
{
    sim_ps_job *j = job_add(w, p, SIM_JOB_PUSH, k, sim_ps_cost_s(&w->cfg->ps_push_cost, 1, 0));
    int idx = (int)(j - w->psq[p].q);
    hold_begin(w);
    int acks = sim_ack_new(w);
    sim_ps_push(w, p, k, w->step_var, acks);
    hold_end(w, &w->psq[p].q[idx], acks);
    job_go(w, p);
}

/* Worker k's pull answer from ps p leaves at this instant (its flow starts at the next
 * flush), unless the worker died since it asked. Returns whether it left. */
static int answer_leaves(sim_world *w, int p, const sim_ps_job *j)
{
    const sim_wk *wk = &w->wk[j->k];
    if (wk->dead || wk->inc != j->inc) return 0;
    if (w->n_pp == w->cap_pp) {
        w->cap_pp = w->cap_pp ? 2 * w->cap_pp : 64;
        w->pp_k = xrealloc(w->pp_k, (size_t)w->cap_pp * sizeof *w->pp_k);
        w->pp_p = xrealloc(w->pp_p, (size_t)w->cap_pp * sizeof *w->pp_p);
    }
    w->pp_k[w->n_pp] = j->k;
    w->pp_p[w->n_pp++] = p;
    return 1;
}

void sim_psq_done(sim_world *w, int p)
{
    sim_psq *q = &w->psq[p];
    dp_assert("sim: a ps finished work it did not have", q->n > 0);
    sim_ps_job *head = &q->q[q->head];
    if (head->kind == SIM_JOB_PULL && w->cfg->ps_send_rate > 0 && w->ps_bytes[p] > 0 &&
        answer_leaves(w, p, head)) {
        /* the answer goes, and the ps writes it while it travels */
        head->kind = SIM_JOB_SEND;
        head->work_ns = w->ps_bytes[p] / w->cfg->ps_send_rate * 1e9;
        job_start(w, p);
        return;
    }
    sim_ps_job j = *head;
    q->head = (q->head + 1) % q->cap;
    q->n--;
    if (j.kind == SIM_JOB_PULL) {
        answer_leaves(w, p, &j);  /* (with a send rate: its worker died, nothing leaves) */
    } else if (j.kind == SIM_JOB_PUSH) {
        for (int i = 0; i < j.n_ev; i++) {  /* done: what it did shows now */
            j.ev[i].t = w->now;
            sim_emit(w, &j.ev[i]);
        }
        free(j.ev);
        /* a dead worker's acks are ignored when they arrive; the others' RELEASEs go */
        for (int a = 0; a < SIM_JOB_ACKS && j.acks[a] >= 0; a++) sim_ack_send_held(w, j.acks[a]);
    }
    if (q->n) job_start(w, p);
}

static int int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One cohort per ps (its workers, ascending), so that answers leaving one ps together
 * share one flow group. A worker's answers from ps that finish at different instants are
 * cohorts of their own, each with its stand-in NIC. */
void sim_psq_flush(sim_world *w)
{
    int n = w->n_pp;
    if (!n) return;
    w->n_pp = 0;
    sim_world_net_sync(w);
    int64_t *key = xmalloc((size_t)n * sizeof *key);
    for (int i = 0; i < n; i++) key[i] = (int64_t)w->pp_p[i] << 32 | w->pp_k[i];
    qsort(key, (size_t)n, sizeof *key, int64_cmp);
    for (int i = 0; i < n;) {
        int p = (int)(key[i] >> 32), m = 0;
        while (i + m < n && (int)(key[i + m] >> 32) == p) m++;
        int c = sim_world_cohort_new(w);
        sim_cohort *co = &w->cohorts[c];
        co->dir = 0;
        co->n = m;
        if (co->cap < m) {
            co->cap = m;
            co->members = xrealloc(co->members, (size_t)m * sizeof *co->members);
            co->incs = xrealloc(co->incs, (size_t)m * sizeof *co->incs);
        }
        for (int j = 0; j < m; j++) {
            co->members[j] = (int)(key[i + j] & 0xffffffff);
            co->incs[j] = w->wk[co->members[j]].inc;
        }
        co->groups_left = 1;
        co->link = -1;
        if (w->ps_bytes[p] <= 0) {
            sim_heap_push_fifo(&w->heap, w->now + w->lat_ns, SIM_EV_PULL_DELIVER, c, p);
        } else {
            co->link = sim_net_link_add(w->net, w->cfg->worker_bw, 1);
            int links[2] = {w->ps_up[p], co->link};
            double wt[2] = {(double)m, 1.0};
            sim_net_group_add(w->net, links, wt, 2, w->ps_bytes[p], (int64_t)c << 32 | p);
        }
        i += m;
    }
    free(key);
}
