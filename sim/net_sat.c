/* net_sat.c — the fast path's set S: NICs saturated by their own flows alone. When the
 * relaxed solve freezes every flow of a NIC at its first level cap / flows, before any
 * of its ps links reaches that level, the NIC's rate stays cap / flows for as long as
 * its groups do not change and every ps link it crosses keeps a level at least that
 * high. Such a NIC joins S: its groups are SAT, their load on each ps link is a fixed
 * satload that later solves take off the link's capacity, and their finishing times are
 * fixed (one heap). So a solve visits the ps links, K and the groups that changed, not
 * the NICs of S, which in a NIC-bound run are nearly all of them. The bound is checked
 * at every solve against each link's largest SAT rate (a lazy max-heap per link); a NIC
 * that breaks it, or whose groups change, goes back to K. Single-threaded, called only
 * from net_fast.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "sim/net_int.h"

/* An entry names a SAT group at one of its visits to S (stale once it left). */
static int live(const sim_net *n, const sim_net_vt_entry *e)
{
    const sim_net_group *g = &n->g[e->group];
    return g->active_pos >= 0 && g->state == SIM_NG_SAT && g->seq == e->seq && g->sgen == e->gen;
}

/* Heap order: largest target first when max, else smallest; ties in start order. */
static int ent_before(const sim_net_vt_entry *a, const sim_net_vt_entry *b, int max)
{
    if (a->target != b->target) return max ? a->target > b->target : a->target < b->target;
    return a->seq < b->seq;
}

static void ent_down(sim_net_vt_entry *h, int nh, int i, sim_net_vt_entry e, int max)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= nh) break;
        if (c + 1 < nh && ent_before(&h[c + 1], &h[c], max)) c++;
        if (!ent_before(&h[c], &e, max)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static void ent_pop(sim_net_vt_entry *h, int *nh, int max)
{
    sim_net_vt_entry last = h[--*nh];
    if (*nh) ent_down(h, *nh, 0, last, max);
}

/* Pushes e, first dropping the stale entries when they outnumber the live ones (stale
 * entries deep in a heap would otherwise stay there for good). */
static void ent_push(const sim_net *n, sim_net_vt_entry **hp, int *nh, int *cap, int n_live,
                     sim_net_vt_entry e, int max)
{
    sim_net_vt_entry *h = *hp;
    if (*nh >= 2 * n_live + 64) {
        int m = 0;
        for (int i = 0; i < *nh; i++)
            if (live(n, &h[i])) h[m++] = h[i];
        *nh = m;
        for (int i = m / 2 - 1; i >= 0; i--) ent_down(h, m, i, h[i], max);
    }
    h = *hp = sim_net_grow(h, cap, *nh + 1, sizeof *h);
    int i = (*nh)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ent_before(&e, &h[p], max)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

void sim_net_sat_join(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    dp_assert("sim_net_sat_join: a positive rate", g->rate > 0);
    g->state = SIM_NG_SAT;
    g->t0 = n->t;
    g->sgen++;
    l->satload += g->w[0] * g->rate;
    l->n_sat++;
    n->n_sat_g++;
    sim_net_vt_entry e = {g->rate, g->seq, g->sgen, id};
    ent_push(n, &l->sh, &l->n_sh, &l->cap_sh, l->n_sat, e, 1);
    e.target = g->t0 + g->rem / g->rate;
    ent_push(n, &n->fh, &n->n_fh, &n->cap_fh, n->n_sat_g, e, 0);
}

double sim_net_sat_part(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    l->satload -= g->w[0] * g->rate;
    if (--l->n_sat == 0) l->satload = 0;  /* no rounding left behind */
    n->n_sat_g--;
    g->state = SIM_NG_PLAIN;
    double rem = g->rem - g->rate * (n->t - g->t0);
    return rem > 0 ? rem : 0;
}

void sim_net_sat_reset(sim_net *n)
{
    for (int i = 0; i < n->n_perm; i++) {
        sim_net_link *l = &n->links[n->perm[i]];
        l->satload = 0;
        l->n_sat = l->n_sh = 0;
        l->sat_lim = INFINITY;
    }
    n->n_fh = n->n_sat_g = 0;
}

/* Link's bound on S: its load within its capacity and, when its own flows froze at a
 * level, no SAT rate above that level (then those flows would have frozen first: the
 * NIC is not saturated by its own flows alone). 1e-12 relative leeway, so that ties
 * computed in another order do not bounce NICs between S and K. */
int sim_net_sat_violator(sim_net *n, int link)
{
    sim_net_link *l = &n->links[link];
    while (l->n_sh && !live(n, &l->sh[0])) ent_pop(l->sh, &l->n_sh, 1);
    if (!l->n_sh) return -1;
    if (l->satload > l->cap * (1 + 1e-12)) return l->sh[0].group;
    if (isfinite(l->sat_lim) && l->sh[0].target > l->sat_lim * (1 + 1e-12)) return l->sh[0].group;
    return -1;
}

double sim_net_sat_next(sim_net *n)
{
    while (n->n_fh && !live(n, &n->fh[0])) ent_pop(n->fh, &n->n_fh, 0);
    return n->n_fh ? n->fh[0].target : INFINITY;
}

int sim_net_sat_advance(sim_net *n, double t, int nd)
{
    while (n->n_fh) {
        const sim_net_vt_entry *e = &n->fh[0];
        sim_net_group *g = &n->g[e->group];
        if (!live(n, e)) {
            ent_pop(n->fh, &n->n_fh, 0);
            continue;
        }
        /* finished to within a nanosecond's worth of bytes, as a BOUND group */
        if (g->rem - g->rate * (t - g->t0) > g->rate * 1e-9 + 1e-6) break;
        n->keys[nd].seq = e->seq;
        n->keys[nd].group = e->group;
        nd++;
        g->sgen++;  /* counted once: its entries are stale until it is removed */
        ent_pop(n->fh, &n->n_fh, 0);
    }
    return nd;
}
