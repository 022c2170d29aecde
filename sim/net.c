/* net.c — flow-level network with max-min fair sharing by progressive filling.
 * Solve: every unfrozen flow's rate rises together; a link saturates at level
 * x = (cap - frozen load) / (unfrozen weight); the link with the lowest x freezes all of
 * its unfrozen groups at x, which lowers the unfrozen weight of their other links. A lazy
 * binary heap of link levels gives O((G + L) log L) per solve for G groups and L links.
 * Between solves every group drains at a constant rate; the solve is redone only after a
 * group starts or finishes (marked dirty, done at the next sim_net_next()). Invariant:
 * a PLAIN group's rem is its bytes per flow left at time n->t. While every group is a
 * (ps link, worker NIC) pair, net_fast.c computes the same allocation far faster. */
#include "sim/net.h"
#include "sim/net_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

sim_net *sim_net_new(void)
{
    sim_net *n = xcalloc(1, sizeof *n);
    n->next_t = INFINITY;
    n->min_temp_cap = INFINITY;
    return n;
}

void sim_net_free(sim_net *n)
{
    if (!n) return;
    for (int i = 0; i < n->n_links; i++) {
        free(n->links[i].groups);
        free(n->links[i].vh);
        free(n->links[i].vq);
        free(n->links[i].bound);
        free(n->links[i].bl);
        free(n->links[i].sh);
        free(n->links[i].rl);
        free(n->links[i].mt_g);
        free(n->links[i].mt_pos);
        free(n->links[i].lab);
        free(n->links[i].mt_cookie);
        free(n->links[i].mt_next);
        free(n->links[i].pg);
    }
    for (int i = 0; i < n->n_plans; i++) {
        sim_net_plan *pl = &n->plans[i];
        free(pl->cls);
        free(pl->next);
        free(pl->ident);
        free(pl->cookie);
        free(pl->rep);
        free(pl->m);
        free(pl->first);
        free(pl->bytes);
    }
    free(n->plans);
    free(n->perm);
    free(n->prep);
    free(n->creps);
    free(n->kset);
    free(n->bound);
    free(n->scratch);
    free(n->fh);
    free(n->kc_rep);
    free(n->kc_mu);
    free(n->kc_first);
    free(n->kc_chain);
    free(n->kc_bucket);
    free(n->kc_h);
    free(n->kc_vd);
    free(n->links);
    free(n->free_links);
    free(n->g);
    free(n->free_g);
    free(n->active);
    free(n->heap);
    free(n->done);
    free(n->keys);
    free(n->keys_tmp);
    free(n);
}

int sim_net_link_add(sim_net *n, double cap, int temporary)
{
    dp_assert("sim_net_link_add: capacity must be positive", cap > 0);
    int id;
    if (n->n_free_links) {
        id = n->free_links[--n->n_free_links];
    } else {
        if (n->n_links == n->cap_links) {
            n->cap_links = n->cap_links ? n->cap_links * 2 : 64;
            n->links = xrealloc(n->links, (size_t)n->cap_links * sizeof *n->links);
            n->free_links = xrealloc(n->free_links, (size_t)n->cap_links * sizeof *n->free_links);
        }
        id = n->n_links++;
        memset(&n->links[id], 0, sizeof n->links[id]);
    }
    sim_net_link *l = &n->links[id];
    l->cap = cap;
    l->temporary = temporary;
    l->alive = 1;
    l->n_groups = 0;
    l->load = l->V = l->r = 0;
    l->n_vh = l->vq_head = l->n_vq = 0;
    l->vt_ok = 0;
    l->n_bound = 0;
    l->plan = -1;
    l->in_k = l->in_s = 0;
    l->pure = 0;
    l->shape_ok = 0;
    l->shape_v = ++n->shape_seq;
    l->eq_link = -1;
    l->last_perm = -1;
    l->twin_rep = -1;
    l->twin_n = 0;
    l->nflows = 0;
    l->n_mt = l->n_lab = 0;
    if (temporary) {
        /* the fast path's test uses the smallest temporary capacity ever seen (safe) */
        if (cap < n->min_temp_cap) n->min_temp_cap = cap;
    } else {
        if (n->n_perm == n->cap_perm) {
            n->cap_perm = n->cap_perm ? 2 * n->cap_perm : 64;
            n->perm = xrealloc(n->perm, (size_t)n->cap_perm * sizeof *n->perm);
        }
        n->perm[n->n_perm++] = id;
    }
    return id;
}

static void link_attach(sim_net_link *l, int group, int *pos)
{
    if (l->n_groups == l->cap_groups) {
        l->cap_groups = l->cap_groups ? l->cap_groups * 2 : 8;
        l->groups = xrealloc(l->groups, (size_t)l->cap_groups * sizeof *l->groups);
    }
    *pos = l->n_groups;
    l->groups[l->n_groups++] = group;
}

/* A new group; m > 0: a cohort group standing for m flows (its NIC's member table is
 * filled by the caller), seq given; m == 0: a plain one. */
static int group_add(sim_net *n, const int *links, const double *w, int nl, double bytes,
                     int64_t cookie, int m, uint64_t seq)
{
    dp_assert("sim_net_group_add: 1..SIM_NET_MAX_LINKS links", nl >= 1 && nl <= SIM_NET_MAX_LINKS);
    dp_assert("sim_net_group_add: bytes must be positive", bytes > 0);
    int id;
    if (n->n_free_g) {
        id = n->free_g[--n->n_free_g];
    } else {
        int old = n->cap_g;
        n->cap_g = old ? old * 2 : 256;
        n->g = xrealloc(n->g, (size_t)n->cap_g * sizeof *n->g);
        n->free_g = xrealloc(n->free_g, (size_t)n->cap_g * sizeof *n->free_g);
        n->active = xrealloc(n->active, (size_t)n->cap_g * sizeof *n->active);
        /* hand out the new slots lowest id first */
        for (int i = n->cap_g - 1; i >= old; i--) n->free_g[n->n_free_g++] = i;
        id = n->free_g[--n->n_free_g];
    }
    sim_net_group *g = &n->g[id];
    memset(g, 0, sizeof *g);
    g->nl = nl;
    for (int i = 0; i < nl; i++) {
        dp_assert("sim_net_group_add: unknown link", links[i] >= 0 && links[i] < n->n_links &&
                  n->links[links[i]].alive);
        g->link[i] = links[i];
        g->w[i] = w ? w[i] : 1.0;
        dp_assert("sim_net_group_add: weight must be positive", g->w[i] > 0);
        link_attach(&n->links[links[i]], id, &g->pos[i]);
    }
    g->rem = bytes;
    g->cookie = cookie;
    g->state = SIM_NG_PLAIN;
    g->bpos = g->apos = -1;
    g->m = m > 0 ? m : 1;
    g->twin = m > 0;
    g->left = g->m;
    n->n_flows += g->m;
    for (int i = 0; i < nl; i++)
        if (n->links[links[i]].temporary) {
            n->links[links[i]].nflows += g->m;
            n->links[links[i]].shape_ok = 0;
            n->links[links[i]].shape_v = ++n->shape_seq;
        }
    if (m > 0) {
        g->seq = seq;
        g->shaped = 1;
        n->n_twin_groups++;
    } else if (nl == 2 && !n->links[g->link[0]].temporary && n->links[g->link[1]].temporary &&
        g->w[1] == 1.0) {
        /* shaped only while a NIC's groups come in increasing ps-link order, so that a NIC
         * never carries two groups on one ps link (net_fast.c's bound relies on it) */
        sim_net_link *nic = &n->links[g->link[1]];
        g->shaped = g->link[0] > nic->last_perm;
        nic->last_perm = g->link[0];
    }
    if (m == 0) g->seq = n->seq++;
    if (!g->shaped) n->n_unshaped++;
    g->active_pos = n->n_active;
    n->active[n->n_active++] = id;
    if (n->fast) sim_net_fast_added(n, id);
    n->dirty = 1;
    return id;
}

int sim_net_group_add(sim_net *n, const int *links, const double *w, int nl, double bytes,
                      int64_t cookie)
{
    for (int i = 0; i < nl; i++)
        dp_assert("sim_net_group_add: twins and cohort NICs take only sim_net_cohort_add",
                  links[i] >= 0 && links[i] < n->n_links && n->links[links[i]].twin_rep < 0 &&
                  n->links[links[i]].n_mt == 0);
    return group_add(n, links, w, nl, bytes, cookie, 0, 0);
}

void sim_net_twin(sim_net *n, int link, int rep)
{
    dp_assert("sim_net_twin: permanent links of equal capacity, nothing in flight",
              link >= 0 && link < n->n_links && rep >= 0 && rep < n->n_links && !n->n_active &&
              !n->links[link].temporary && !n->links[rep].temporary &&
              n->links[link].cap == n->links[rep].cap);
    dp_assert("sim_net_twin: rep is a member of another class",
              n->links[rep].twin_rep < 0 || n->links[rep].twin_rep == rep);
    dp_assert("sim_net_twin: link already twinned", link == rep || n->links[link].twin_rep < 0);
    if (n->links[rep].twin_rep < 0) {
        n->links[rep].twin_rep = rep;
        n->links[rep].twin_n = 1;
    }
    if (link == rep) return;
    n->links[link].twin_rep = rep;
    n->links[rep].twin_n++;
    n->n_twins++;
    n->prep_n = -1;  /* net_fast.c rebuilds its class tables */
}

/* Room for np members in a NIC's lab and mt_pos. */
static void lab_reserve(sim_net_link *t, int np)
{
    if (t->cap_lab >= np) return;
    t->cap_lab = np;
    t->mt_pos = xrealloc(t->mt_pos, (size_t)np * sizeof *t->mt_pos);
    t->lab = xrealloc(t->lab, (size_t)np * sizeof *t->lab);
}

int sim_net_cohort_add(sim_net *n, int nic, const int *links, const double *bytes,
                       const int64_t *cookies, int np, double w)
{
    dp_assert("sim_net_cohort_add: a fresh temporary link and the fast path",
              nic >= 0 && nic < n->n_links && n->links[nic].alive && n->links[nic].temporary &&
              n->links[nic].n_groups == 0 && !n->fast_off && np > 0);
    sim_net_link *t = &n->links[nic];
    if (t->cap_mt < np) {
        t->cap_mt = np;
        t->mt_g = xrealloc(t->mt_g, (size_t)np * sizeof *t->mt_g);
        t->mt_cookie = xrealloc(t->mt_cookie, (size_t)np * sizeof *t->mt_cookie);
        t->mt_next = xrealloc(t->mt_next, (size_t)np * sizeof *t->mt_next);
    }
    lab_reserve(t, np);
    uint32_t s1 = ++n->stamp;
    for (int i = 0; i < np; i++) {
        dp_assert("sim_net_cohort_add: permanent links in increasing order",
                  links[i] >= 0 && links[i] < n->n_links && !n->links[links[i]].temporary &&
                  (i == 0 || links[i] > links[i - 1]));
        int r = n->links[links[i]].twin_rep >= 0 ? n->links[links[i]].twin_rep : links[i];
        sim_net_link *l = &n->links[r];
        if (l->cls_stamp != s1) {
            l->cls_stamp = s1;
            l->cls_g = 0;
        }
        l->cls_g++;  /* members of the class in this cohort */
    }
    uint32_t s2 = ++n->stamp;
    uint64_t seq0 = n->seq;
    int made = 0;
    for (int i = 0; i < np; i++) {
        int r = n->links[links[i]].twin_rep >= 0 ? n->links[links[i]].twin_rep : links[i];
        sim_net_link *l = &n->links[r];
        if (l->cls_stamp != s2) {
            dp_assert("sim_net_cohort_add: a cohort spans every twin of a class",
                      l->cls_g == (l->twin_rep >= 0 ? l->twin_n : 1));
            int m = l->cls_g;
            int ls[2] = {r, nic};
            double ws[2] = {w, (double)m};
            int id = group_add(n, ls, ws, 2, bytes[i], 0, m, seq0 + (uint64_t)i);
            l = &n->links[r];
            l->cls_stamp = s2;
            l->cls_g = id;
            n->g[id].mhead = i;
            made++;
        } else {
            dp_assert("sim_net_cohort_add: twins carry equal bytes", bytes[i] == n->g[l->cls_g].rem);
            n->links[nic].mt_next[l->cls_tail] = i;
        }
        l->cls_tail = i;
        t = &n->links[nic];
        t->mt_next[i] = -1;
        t->mt_g[i] = l->cls_g;
        t->mt_pos[i] = i;
        t->lab[i] = i;
        t->mt_cookie[i] = cookies[i];
    }
    t->n_mt = t->n_lab = np;
    t->plan = -1;
    t->mt_seq0 = seq0;
    n->seq = seq0 + (uint64_t)np;
    return made;
}

int sim_net_plan_add(sim_net *n, const int *links, const double *bytes, const int64_t *cookies, int np)
{
    dp_assert("sim_net_plan_add: at least one link", np > 0);
    n->plans = xrealloc(n->plans, (size_t)(n->n_plans + 1) * sizeof *n->plans);
    sim_net_plan *pl = &n->plans[n->n_plans];
    pl->np = np;
    pl->nc = 0;
    pl->cls = xmalloc((size_t)np * sizeof *pl->cls);
    pl->next = xmalloc((size_t)np * sizeof *pl->next);
    pl->ident = xmalloc((size_t)np * sizeof *pl->ident);
    pl->cookie = xmalloc((size_t)np * sizeof *pl->cookie);
    pl->rep = xmalloc((size_t)np * sizeof *pl->rep);
    pl->m = xmalloc((size_t)np * sizeof *pl->m);
    pl->first = xmalloc((size_t)np * sizeof *pl->first);
    pl->bytes = xmalloc((size_t)np * sizeof *pl->bytes);
    int *last = xmalloc((size_t)np * sizeof *last);
    for (int i = 0; i < np; i++) {
        dp_assert("sim_net_plan_add: permanent links in increasing order",
                  links[i] >= 0 && links[i] < n->n_links && !n->links[links[i]].temporary &&
                  (i == 0 || links[i] > links[i - 1]) && bytes[i] > 0);
        int r = n->links[links[i]].twin_rep >= 0 ? n->links[links[i]].twin_rep : links[i];
        int c = 0;
        while (c < pl->nc && pl->rep[c] != r) c++;
        if (c == pl->nc) {
            pl->rep[c] = r;
            pl->m[c] = 0;
            pl->first[c] = i;
            pl->bytes[c] = bytes[i];
            pl->nc++;
        } else {
            dp_assert("sim_net_plan_add: twins carry equal bytes", bytes[i] == pl->bytes[c]);
            pl->next[last[c]] = i;
        }
        pl->m[c]++;
        last[c] = i;
        pl->cls[i] = c;
        pl->next[i] = -1;
        pl->ident[i] = i;
        pl->cookie[i] = cookies[i];
    }
    for (int c = 0; c < pl->nc; c++)
        dp_assert("sim_net_plan_add: a plan spans every twin of a class",
                  pl->m[c] == (n->links[pl->rep[c]].twin_rep >= 0 ? n->links[pl->rep[c]].twin_n : 1));
    free(last);
    return n->n_plans++;
}

int sim_net_cohort_add_plan(sim_net *n, int nic, int plan, int64_t cookie_base, double w)
{
    dp_assert("sim_net_cohort_add_plan: a fresh temporary link, the fast path, a plan",
              nic >= 0 && nic < n->n_links && n->links[nic].alive && n->links[nic].temporary &&
              n->links[nic].n_groups == 0 && !n->fast_off && plan >= 0 && plan < n->n_plans);
    const sim_net_plan *pl = &n->plans[plan];
    int np = pl->np;
    sim_net_link *t = &n->links[nic];
    lab_reserve(t, np);
    if (t->cap_pg < pl->nc) {
        t->cap_pg = pl->nc;
        t->pg = xrealloc(t->pg, (size_t)pl->nc * sizeof *t->pg);
    }
    t->plan = plan;
    t->cookie_base = cookie_base;
    uint64_t seq0 = n->seq;
    for (int c = 0; c < pl->nc; c++) {  /* in first-member order, as sim_net_cohort_add */
        int ls[2] = {pl->rep[c], nic};
        double ws[2] = {w, (double)pl->m[c]};
        int id = group_add(n, ls, ws, 2, pl->bytes[c], 0, pl->m[c], seq0 + (uint64_t)pl->first[c]);
        n->g[id].mhead = pl->first[c];
        n->links[nic].pg[c] = id;
    }
    t = &n->links[nic];
    memcpy(t->mt_pos, pl->ident, (size_t)np * sizeof *t->mt_pos);
    memcpy(t->lab, pl->ident, (size_t)np * sizeof *t->lab);
    t->n_mt = t->n_lab = np;
    t->mt_seq0 = seq0;
    n->seq = seq0 + (uint64_t)np;
    return pl->nc;
}

static void group_remove(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    if (!g->shaped) n->n_unshaped--;
    if (g->twin) n->n_twin_groups--;
    n->n_flows -= g->m;
    if (n->fast) sim_net_fast_removed(n, id);
    for (int i = 0; i < g->nl; i++) {
        sim_net_link *l = &n->links[g->link[i]];
        if (l->temporary) {
            l->nflows -= g->m;
            l->shape_ok = 0;
            l->shape_v = ++n->shape_seq;
        }
        int last = l->groups[--l->n_groups];
        if (last != id || g->pos[i] != l->n_groups) {
            l->groups[g->pos[i]] = last;
            sim_net_group *o = &n->g[last];
            for (int j = 0; j < o->nl; j++)
                if (o->link[j] == g->link[i] && o->pos[j] == l->n_groups) o->pos[j] = g->pos[i];
        }
        if (l->n_groups == 0 && l->temporary) {
            l->alive = 0;
            l->n_mt = l->n_lab = 0;
            n->free_links[n->n_free_links++] = g->link[i];
        }
    }
    int last = n->active[--n->n_active];
    n->active[g->active_pos] = last;
    n->g[last].active_pos = g->active_pos;
    g->active_pos = -1;
    n->free_g[n->n_free_g++] = id;
    n->dirty = 1;
}

void sim_net_heap_push(sim_net *n, double x, int link, uint32_t ver)
{
    if (n->n_heap == n->cap_heap) {
        n->cap_heap = n->cap_heap ? n->cap_heap * 2 : 256;
        n->heap = xrealloc(n->heap, (size_t)n->cap_heap * sizeof *n->heap);
    }
    int i = n->n_heap++;
    sim_net_level e = {x, link, ver};
    while (i > 0) {
        int p = (i - 1) / 2;
        /* ties go to the lower link id, so solves do not depend on heap history */
        if (n->heap[p].x < e.x || (n->heap[p].x == e.x && n->heap[p].link <= e.link)) break;
        n->heap[i] = n->heap[p];
        i = p;
    }
    n->heap[i] = e;
}

sim_net_level sim_net_heap_pop(sim_net *n)
{
    sim_net_level top = n->heap[0], last = n->heap[--n->n_heap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n->n_heap) break;
        if (c + 1 < n->n_heap && (n->heap[c + 1].x < n->heap[c].x ||
                                  (n->heap[c + 1].x == n->heap[c].x && n->heap[c + 1].link < n->heap[c].link)))
            c++;
        if (last.x < n->heap[c].x || (last.x == n->heap[c].x && last.link <= n->heap[c].link)) break;
        n->heap[i] = n->heap[c];
        i = c;
    }
    if (n->n_heap) n->heap[i] = last;
    return top;
}

/* Progressive filling over the active groups; sets every group's rate. */
static void solve(sim_net *n)
{
    dp_assert("sim_net: cohort groups need the fast path", n->n_twin_groups == 0);
    n->solves++;
    for (int i = 0; i < n->n_active; i++) n->g[n->active[i]].frozen = 0;
    /* reset the links that carry groups */
    for (int i = 0; i < n->n_links; i++) {
        sim_net_link *l = &n->links[i];
        l->frozen = 0;
        l->unfrozen = 0;
    }
    for (int i = 0; i < n->n_active; i++) {
        sim_net_group *g = &n->g[n->active[i]];
        for (int j = 0; j < g->nl; j++) n->links[g->link[j]].unfrozen += g->w[j];
    }
    n->n_heap = 0;
    for (int i = 0; i < n->n_links; i++) {
        sim_net_link *l = &n->links[i];
        if (l->alive && l->n_groups && l->unfrozen > 0)
            sim_net_heap_push(n, l->cap / l->unfrozen, i, ++l->ver);
    }
    double level_now = 0;
    while (n->n_heap) {
        sim_net_level e = sim_net_heap_pop(n);
        sim_net_link *l = &n->links[e.link];
        if (e.ver != l->ver || l->unfrozen <= 0) continue;
        double x = e.x > level_now ? e.x : level_now;
        level_now = x;
        for (int k = 0; k < l->n_groups; k++) {
            sim_net_group *g = &n->g[l->groups[k]];
            if (g->frozen) continue;
            g->frozen = 1;
            g->rate = x;
            for (int j = 0; j < g->nl; j++) {
                sim_net_link *m = &n->links[g->link[j]];
                if (m == l) continue;
                m->frozen += g->w[j] * x;
                m->unfrozen -= g->w[j];
                if (m->unfrozen <= 1e-9) {
                    m->unfrozen = 0;
                    continue;
                }
                double xm = (m->cap - m->frozen) / m->unfrozen;
                sim_net_heap_push(n, xm > x ? xm : x, g->link[j], ++m->ver);
            }
        }
        l->unfrozen = 0;
    }
    double best = INFINITY;
    for (int i = 0; i < n->n_active; i++) {
        sim_net_group *g = &n->g[n->active[i]];
        dp_assert("sim_net: every group gets a positive rate", g->frozen && g->rate > 0);
        double dt = g->rem / g->rate;
        if (dt < best) best = dt;
    }
    n->next_t = n->t + best;
    n->dirty = 0;
}

double sim_net_next(sim_net *n)
{
    if (!n->dirty) return n->next_t;
    if (!n->n_active) {
        if (n->fast) sim_net_fast_leave(n);
        n->next_t = INFINITY;
        n->dirty = 0;
        return n->next_t;
    }
    if (!n->n_unshaped && !n->fast_off) {
        if (!n->fast) sim_net_fast_enter(n);
        sim_net_fast_solve(n);
    } else {
        if (n->fast) sim_net_fast_leave(n);
        solve(n);
    }
    return n->next_t;
}

void sim_net_fast_enable(sim_net *n, int on)
{
    n->fast_off = !on;
    n->dirty = 1;
}

/* Sorts keys by seq (all distinct): runs of 16 by insertion, then bottom-up merges
 * between a and tmp. The keys mostly come as a few ascending runs (one per group). */
static void keys_sort(sim_net_done_key *a, sim_net_done_key *tmp, int nd)
{
    int i = 1;
    while (i < nd && a[i - 1].seq < a[i].seq) i++;
    if (i >= nd) return;
    for (int lo = 0; lo < nd; lo += 16) {
        int hi = lo + 16 < nd ? lo + 16 : nd;
        for (int j = lo + 1; j < hi; j++) {
            sim_net_done_key k = a[j];
            int m = j;
            while (m > lo && a[m - 1].seq > k.seq) {
                a[m] = a[m - 1];
                m--;
            }
            a[m] = k;
        }
    }
    sim_net_done_key *src = a, *dst = tmp;
    for (int wd = 16; wd < nd; wd *= 2) {
        for (int lo = 0; lo < nd; lo += 2 * wd) {
            int mid = lo + wd < nd ? lo + wd : nd, hi = lo + 2 * wd < nd ? lo + 2 * wd : nd;
            int x = lo, y = mid, o = lo;
            while (x < mid && y < hi) dst[o++] = src[x].seq < src[y].seq ? src[x++] : src[y++];
            while (x < mid) dst[o++] = src[x++];
            while (y < hi) dst[o++] = src[y++];
        }
        sim_net_done_key *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)nd * sizeof *a);
}

/* Cohort groups that finished stand for their members: one key per member (its own
 * seq), moved from the keys' tail so that expanding never overwrites an unread key. */
static int expand_members(sim_net *n, int nd)
{
    int base = n->cap_done - nd;
    memmove(n->keys + base, n->keys, (size_t)nd * sizeof *n->keys);
    int out = 0;
    for (int i = 0; i < nd; i++) {
        sim_net_done_key k = n->keys[base + i];
        const sim_net_group *g = &n->g[k.group];
        if (!g->twin) {
            k.member = -1;
            n->keys[out++] = k;
            continue;
        }
        const sim_net_link *t = &n->links[g->link[1]];
        for (int j = g->mhead; j >= 0; j = sim_net_mt_next_of(n, t, j))
            n->keys[out++] = (sim_net_done_key){t->mt_seq0 + (uint64_t)j, k.group, j};
    }
    return out;
}

/* The swap-removal a plain member group would make in its NIC's group list. */
static void lab_remove(sim_net_link *t, int j)
{
    int last = t->lab[--t->n_lab], at = t->mt_pos[j];
    if (last != j || at != t->n_lab) {
        t->lab[at] = last;
        t->mt_pos[last] = at;
    }
}

int sim_net_advance(sim_net *n, double t, const sim_net_done **done)
{
    if (n->dirty) sim_net_next(n);
    double dt = t - n->t;
    dp_assert("sim_net_advance: time goes forward", dt >= -1e-12);
    if (dt < 0) dt = 0;
    int nd = 0;
    if (n->cap_done < n->n_active + n->n_flows) {
        int need = n->n_active + n->n_flows;
        n->cap_done = need > 2 * n->cap_done ? need : 2 * n->cap_done;
        n->done = xrealloc(n->done, (size_t)n->cap_done * sizeof *n->done);
        n->keys = xrealloc(n->keys, (size_t)n->cap_done * sizeof *n->keys);
        n->keys_tmp = xrealloc(n->keys_tmp, (size_t)n->cap_done * sizeof *n->keys_tmp);
    }
    if (n->fast) {
        nd = sim_net_fast_advance(n, dt);
    } else if (n->n_active) {
        dp_assert("sim_net: cohort groups need the fast path", n->n_twin_groups == 0);
        for (int i = 0; i < n->n_active; i++) {
            sim_net_group *g = &n->g[n->active[i]];
            g->rem -= g->rate * dt;
            /* finished to within a nanosecond's worth of bytes (event times are whole ns) */
            if (g->rem <= g->rate * 1e-9 + 1e-6) {
                n->keys[nd].seq = g->seq;
                n->keys[nd].group = n->active[i];
                nd++;
            }
        }
    }
    n->t = t;
    if (nd) {
        if (n->n_twin_groups) nd = expand_members(n, nd);
        else for (int i = 0; i < nd; i++) n->keys[i].member = -1;
        keys_sort(n->keys, n->keys_tmp, nd);  /* report in start order */
        for (int i = 0; i < nd; i++) {
            int id = n->keys[i].group, j = n->keys[i].member;
            n->done[i].group = id;
            if (j < 0) {
                n->done[i].cookie = n->g[id].cookie;
                group_remove(n, id);
                continue;
            }
            /* a member: its group goes when its last member is reported, which frees the
             * NIC at the same point as the plain groups' removals would */
            sim_net_link *nic = &n->links[n->g[id].link[1]];
            n->done[i].cookie = sim_net_mt_cookie_of(n, nic, j);
            lab_remove(nic, j);
            if (--n->g[id].left == 0) group_remove(n, id);
        }
    } else if (n->n_active && !n->dirty && n->t >= n->next_t) {
        n->dirty = 1;  /* rounding left a sliver: recompute */
    }
    *done = n->done;
    return nd;
}

double sim_net_rate(sim_net *n, int group)
{
    sim_net_next(n);
    dp_assert("sim_net_rate: group not in flight", group >= 0 && group < n->cap_g &&
              n->g[group].active_pos >= 0);
    return n->fast ? sim_net_fast_rate(n, group) : n->g[group].rate;
}

double sim_net_remaining(const sim_net *n, int group)
{
    return n->fast ? sim_net_fast_remaining(n, group) : n->g[group].rem;
}

double sim_net_time(const sim_net *n)
{
    return n->t;
}

int sim_net_active(const sim_net *n)
{
    return n->n_active;
}

uint64_t sim_net_solves(const sim_net *n)
{
    return n->solves;
}

uint64_t sim_net_sat_joins(const sim_net *n)
{
    return n->sat_joins;
}
