/* flows.c — the simulated cluster's network glue (see sim.c and net.h): a phase's workers
 * that start pulling (or pushing) at the same instant form a cohort whose transfers are
 * network flows (one group per ps, or with twin ps one planned group for all); finished
 * flows become one batch of deliveries, one latency later. */
#include <stdlib.h>
#include <string.h>

#include "sim/world.h"

/* One delivery event for the finished flows d[0 .. n) of direction dir (-1: both) that
 * arrive lat from now. */
static void batch(sim_world *w, const sim_net_done *d, int n, int dir, int64_t lat)
{
    int m = 0;
    for (int i = 0; i < n; i++) m += dir < 0 || w->cohorts[(int)(d[i].cookie >> 32)].dir == dir;
    if (!m) return;
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
    b->n = m;
    for (int i = 0, j = 0; i < n; i++) {
        int c = (int)(d[i].cookie >> 32);
        if (dir >= 0 && w->cohorts[c].dir != dir) continue;
        b->c[j] = c;
        b->p[j++] = (int)(d[i].cookie & 0xffffffff);
    }
    sim_heap_push_fifo(&w->heap, w->now + lat, SIM_EV_DELIVER_BATCH, id, 0);
}

/* Moves the network to now and schedules the deliveries of finished flows. */
void sim_flows_sync(sim_world *w)
{
    const sim_net_done *d;
    int n = sim_net_advance(w->net, (double)w->now / 1e9, &d);
    if (n == 0) return;
    /* One event for all of them: they would be consecutive events (one latency from
     * now, consecutive sequence numbers), so running them in turn in one event is the
     * same order; counted as n engine events. With a ps latency of its own, the pushes
     * (to the ps) are a batch of their own. */
    if (w->lat_ps_ns == w->lat_ns) {
        batch(w, d, n, -1, w->lat_ns);
        return;
    }
    batch(w, d, n, 0, w->lat_ns);
    batch(w, d, n, 1, w->lat_ps_ns);
}

int sim_world_cohort_new(sim_world *w)
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

void sim_flows_cohort_done(sim_world *w, int c)
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
        if (w->ps_first[p + 1] == (dir ? sim_push_first(w, p) : w->ps_first[p])) continue;
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
void sim_flows_start(sim_world *w, int dir)
{
    int n = w->n_pend[dir];
    if (!n) return;
    w->n_pend[dir] = 0;
    sim_flows_sync(w);
    int c = sim_world_cohort_new(w);
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
    for (int i = 0; i < n; i++) {
        co->incs[i] = w->wk[co->members[i]].inc;
        sim_world_copy(w, co->members[i], w->model_bytes);
    }
    co->groups_left = 0;
    co->link = -1;
    if (w->twins) {
        /* equal shards share one flow group (the same result as one group per ps) */
        if (!w->plan_ready[dir]) plan_dir(w, dir);
        co->groups_left = w->co_n[dir];
        for (int i = 0; i < w->n_zero[dir]; i++)
            sim_heap_push_fifo(&w->heap, w->now + (dir ? w->lat_ps_ns : w->lat_ns),
                               dir ? SIM_EV_PUSH_DELIVER : SIM_EV_PULL_DELIVER, c, w->zero_ps[dir][i]);
        if (w->plan[dir] >= 0) {
            double cap = dir && w->cfg->worker_push_bw > 0 ? w->cfg->worker_push_bw : w->cfg->worker_bw;
            co->link = sim_net_link_add(w->net, cap, 1);
            sim_net_cohort_add_plan(w->net, co->link, w->plan[dir], (int64_t)c << 32, (double)n);
        }
        return;
    }
    for (int p = 0; p < w->P; p++) {
        if (w->ps_first[p + 1] == (dir ? sim_push_first(w, p) : w->ps_first[p])) continue;
        co->groups_left++;
        if (w->ps_bytes[p] <= 0) {
            sim_heap_push_fifo(&w->heap, w->now + (dir ? w->lat_ps_ns : w->lat_ns),
                               dir ? SIM_EV_PUSH_DELIVER : SIM_EV_PULL_DELIVER, c, p);
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
