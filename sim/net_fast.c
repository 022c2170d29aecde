/* net_fast.c — the network's fast path: exact max-min rates while every group is shaped,
 * i.e. crosses one permanent link (a ps link, weight k) and one temporary link of weight
 * 1 (a cohort's stand-in worker NIC), and no NIC carries two groups on one ps link.
 * Then a flow's rate is min(level of its ps link, level of its NIC) and most NICs are not
 * bottlenecks. The candidate set K holds the NICs that may be: the others' groups are
 * BULK, aggregated per ps link (one weight, one rate r, a virtual clock V of bytes sent
 * per flow and a heap of finishing marks), so a solve is progressive filling over the ps
 * links and K's groups only. That is exact as long as no NIC outside K saturates (a
 * max-min allocation that is feasible and gives every flow a saturated link it is
 * largest on is THE allocation); the check proves it (sum of the ps rates a NIC sees <=
 * its capacity) or adds the offenders to K and solves again. NICs whose flows sum to
 * under 90% of their capacity leave K. A NIC of K that the relaxed solve finds saturated
 * by its own flows alone joins S instead (net_sat.c: its rate fixed, its load a constant
 * on its ps links, checked at each solve), and NICs of K of one shape are solved once
 * (net_shape.c), so a start or finish re-solves the ps links, the rest of K and what it
 * touched. Twins (net.h): a class's group sits on its rep;
 * passes read the other links' r and load from the rep (n->prep) and visit only reps
 * where a twin has nothing to add, and NIC-side sums replay the per-link groups'
 * additions and order, so results are bit for bit the per-link ones.
 * Single-threaded, called only from net.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "sim/net_int.h"

void *sim_net_grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    *cap = c;
    return xrealloc(p, (size_t)c * size);
}

/* ---- a ps link's heap of finishing marks (target V), ties in start order -------------
 * 4-ary: half the depth of a binary heap over the ~W marks of a busy ps link. Marks have
 * distinct (target, seq) keys, or duplicate ones of which at most one is live, so the
 * order of live pops is that of any heap. vt_ok caches "the top mark is live" so that
 * vt_clean does not touch the top's group (a cache miss) at every solve and advance; it
 * is cleared whenever the top changes or a BULK group leaves its link's clock. */

static int vt_before(const sim_net_vt_entry *a, const sim_net_vt_entry *b)
{
    return a->target < b->target || (a->target == b->target && a->seq < b->seq);
}

static void vt_push(sim_net_link *l, sim_net_vt_entry e)
{
    l->vh = sim_net_grow(l->vh, &l->cap_vh, l->n_vh + 1, sizeof *l->vh);
    int i = l->n_vh++;
    while (i > 0) {
        int p = (i - 1) / 4;
        if (!vt_before(&e, &l->vh[p])) break;
        l->vh[i] = l->vh[p];
        i = p;
    }
    l->vh[i] = e;
    if (i == 0) l->vt_ok = 0;
}

static sim_net_vt_entry vt_pop(sim_net_link *l)
{
    sim_net_vt_entry top = l->vh[0], last = l->vh[--l->n_vh];
    int i = 0, n = l->n_vh;
    l->vt_ok = 0;
    for (;;) {
        int c = 4 * i + 1;
        if (c >= n) break;
        int best = c, end = c + 4 < n ? c + 4 : n;
        for (int k = c + 1; k < end; k++)
            if (vt_before(&l->vh[k], &l->vh[best])) best = k;
        if (!vt_before(&l->vh[best], &last)) break;
        l->vh[i] = l->vh[best];
        i = best;
    }
    if (n) l->vh[i] = last;
    return top;
}

/* The marks are the heap's and the queue's (vq): a mark not before the queue's last
 * joins the queue, which then stays in order; the first mark is the earlier of the two
 * fronts. Pops come in the same order as from one heap. */
static int vt_any(const sim_net_link *l)
{
    return l->n_vh || l->vq_head < l->n_vq;
}

static const sim_net_vt_entry *vt_top(const sim_net_link *l)
{
    if (l->vq_head == l->n_vq) return &l->vh[0];
    if (!l->n_vh || vt_before(&l->vq[l->vq_head], &l->vh[0])) return &l->vq[l->vq_head];
    return &l->vh[0];
}

static void vt_insert(sim_net_link *l, sim_net_vt_entry e)
{
    if (l->vq_head == l->n_vq) l->vq_head = l->n_vq = 0;
    if (l->n_vq > l->vq_head && vt_before(&e, &l->vq[l->n_vq - 1])) {
        vt_push(l, e);
        return;
    }
    if (l->n_vq == l->vq_head) l->vt_ok = 0;  /* may be the new first mark */
    if (l->n_vq == l->cap_vq && l->vq_head > l->cap_vq / 2) {
        memmove(l->vq, l->vq + l->vq_head, (size_t)(l->n_vq - l->vq_head) * sizeof *l->vq);
        l->n_vq -= l->vq_head;
        l->vq_head = 0;
    }
    l->vq = sim_net_grow(l->vq, &l->cap_vq, l->n_vq + 1, sizeof *l->vq);
    l->vq[l->n_vq++] = e;
}

static sim_net_vt_entry vt_pop_top(sim_net_link *l)
{
    if (l->vq_head < l->n_vq && (!l->n_vh || vt_before(&l->vq[l->vq_head], &l->vh[0]))) {
        l->vt_ok = 0;
        return l->vq[l->vq_head++];
    }
    return vt_pop(l);
}

/* Drops marks of groups that finished, were bound, or whose slot was reused. */
static void vt_clean(const sim_net *n, sim_net_link *l)
{
    if (l->vt_ok) return;
    while (vt_any(l)) {
        const sim_net_vt_entry *e = vt_top(l);
        const sim_net_group *g = &n->g[e->group];
        if (g->active_pos >= 0 && g->seq == e->seq && g->gen == e->gen && g->state == SIM_NG_BULK) {
            l->vt_ok = 1;
            return;
        }
        vt_pop_top(l);
    }
}

/* ---- group states ------------------------------------------------------------------- */

static void bulk_add(sim_net *n, int id, double rem)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    g->state = SIM_NG_BULK;
    l->bl = sim_net_grow(l->bl, &l->cap_bl, l->n_bl + 1, sizeof *l->bl);
    g->blpos = l->n_bl;
    l->bl[l->n_bl++] = id;
    g->target = l->V + rem;
    g->gen++;
    l->load += g->w[0];
    vt_insert(l, (sim_net_vt_entry){g->target, g->seq, g->gen, id});
}

/* A BULK group leaves its link's list (its marks go stale by its state). */
static void bulk_drop(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    int last = l->bl[--l->n_bl];
    l->bl[g->blpos] = last;
    n->g[last].blpos = g->blpos;
    l->vt_ok = 0;
}

static void bind(sim_net *n, int id, double rem)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    if (g->state == SIM_NG_BULK) bulk_drop(n, id);
    g->state = SIM_NG_BOUND;
    g->rem = rem;
    g->rate = 0;
    l->bound = sim_net_grow(l->bound, &l->cap_bound, l->n_bound + 1, sizeof *l->bound);
    g->bpos = l->n_bound;
    l->bound[l->n_bound++] = id;
    l->bound_w += g->w[0];
    if (g->w[0] != floor(g->w[0])) n->frac_w = 1;
    n->bound = sim_net_grow(n->bound, &n->cap_bound, n->n_bound + 1, sizeof *n->bound);
    g->apos = n->n_bound;
    n->bound[n->n_bound++] = id;
}

static void unbind(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    sim_net_link *l = &n->links[g->link[0]];
    int last = l->bound[--l->n_bound];
    l->bound[g->bpos] = last;
    n->g[last].bpos = g->bpos;
    l->bound_w -= g->w[0];
    last = n->bound[--n->n_bound];
    n->bound[g->apos] = last;
    n->g[last].apos = g->apos;
    g->bpos = g->apos = -1;
    g->state = SIM_NG_PLAIN;
}

/* Temporary link k joins K: its BULK groups become BOUND with their bytes left. */
static void k_add(sim_net *n, int k)
{
    n->kset = sim_net_grow(n->kset, &n->cap_k, n->n_k + 1, sizeof *n->kset);
    sim_net_link *t = &n->links[k];
    t->in_k = n->n_k + 1;
    n->kset[n->n_k++] = k;
    for (int i = 0; i < t->n_groups; i++) {
        int id = t->groups[i];
        sim_net_group *g = &n->g[id];
        if (g->state != SIM_NG_BULK) continue;
        sim_net_link *l = &n->links[g->link[0]];
        l->load -= g->w[0];
        double rem = g->target - l->V;
        bind(n, id, rem > 0 ? rem : 0);
    }
}

/* Temporary link k leaves K; with rebulk its groups go back to their links' clocks. */
static void k_remove(sim_net *n, int k, int rebulk)
{
    sim_net_link *t = &n->links[k];
    int i = t->in_k - 1, last = n->kset[--n->n_k];
    n->kset[i] = last;
    n->links[last].in_k = i + 1;
    t->in_k = 0;
    if (!rebulk) return;
    for (int j = 0; j < t->n_groups; j++) {
        int id = t->groups[j];
        if (n->g[id].state != SIM_NG_BOUND) continue;
        double rem = n->g[id].rem;
        unbind(n, id);
        bulk_add(n, id, rem);
    }
}

/* NIC k of S goes back to K (its groups changed, or a ps link's level fell below its
 * rate): its groups become BOUND with their bytes left. */
static void s_leave(sim_net *n, int k)
{
    sim_net_link *t = &n->links[k];
    t->in_s = 0;
    n->kset = sim_net_grow(n->kset, &n->cap_k, n->n_k + 1, sizeof *n->kset);
    t->in_k = n->n_k + 1;
    n->kset[n->n_k++] = k;
    for (int i = 0; i < t->n_groups; i++) {
        int id = t->groups[i];
        if (n->g[id].state != SIM_NG_SAT) continue;
        double rem = sim_net_sat_part(n, id);
        bind(n, id, rem);
    }
}

/* NIC k of K, which the last relaxed solve found saturated by its own flows (t->pure),
 * joins S at its rate cap / flows (the level that solve froze its flows at, or within
 * 1e-12 of it). */
static void s_join(sim_net *n, int k)
{
    k_remove(n, k, 0);
    sim_net_link *t = &n->links[k];
    t->in_s = 1;
    n->sat_joins++;
    for (int i = 0; i < t->n_groups; i++) {
        int id = t->groups[i];
        sim_net_group *g = &n->g[id];
        if (g->state != SIM_NG_BOUND) continue;
        double rem = g->rem;
        unbind(n, id);
        g->rem = rem;
        g->rate = t->cap / (double)t->nflows;
        sim_net_sat_join(n, id);
    }
}

void sim_net_fast_enter(sim_net *n)
{
    for (int i = 0; i < n->n_perm; i++) {
        sim_net_link *l = &n->links[n->perm[i]];
        l->V = l->r = l->load = 0;
        l->n_vh = l->n_bound = l->n_bl = 0;
        l->bound_w = 0;
        l->vq_head = l->n_vq = 0;
        l->vt_ok = 0;
    }
    sim_net_sat_reset(n);
    n->n_k = n->n_bound = 0;
    for (int i = 0; i < n->n_active; i++) {
        int id = n->active[i];
        n->g[id].bpos = n->g[id].apos = -1;
        bulk_add(n, id, n->g[id].rem);
    }
    n->fast = 1;
}

void sim_net_fast_leave(sim_net *n)
{
    for (int i = 0; i < n->n_active; i++) {
        sim_net_group *g = &n->g[n->active[i]];
        if (g->state == SIM_NG_BULK) {
            const sim_net_link *l = &n->links[g->link[0]];
            g->rem = g->target - l->V;
            if (g->rem < 0) g->rem = 0;
            g->rate = l->r;
        } else if (g->state == SIM_NG_SAT) {
            g->rem = sim_net_sat_part(n, n->active[i]);  /* the rate stays */
            n->links[g->link[1]].in_s = 0;
        }
        g->state = SIM_NG_PLAIN;
        g->bpos = g->apos = -1;
    }
    for (int i = 0; i < n->n_perm; i++) {
        sim_net_link *l = &n->links[n->perm[i]];
        l->n_vh = l->n_bound = l->n_bl = 0;
        l->bound_w = 0;
        l->vq_head = l->n_vq = 0;
        l->vt_ok = 0;
        l->load = 0;
    }
    sim_net_sat_reset(n);
    for (int i = 0; i < n->n_k; i++) n->links[n->kset[i]].in_k = 0;
    n->n_k = n->n_bound = 0;
    n->fast = 0;
}

void sim_net_fast_added(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    if (!g->shaped) return;  /* stays PLAIN; the next solve leaves the fast path */
    if (n->links[g->link[1]].in_s) s_leave(n, g->link[1]);  /* its rate changes */
    if (n->links[g->link[1]].in_k) bind(n, id, g->rem);
    else bulk_add(n, id, g->rem);
}

void sim_net_fast_removed(sim_net *n, int id)
{
    sim_net_group *g = &n->g[id];
    if (g->state == SIM_NG_BULK) {
        n->links[g->link[0]].load -= g->w[0];
        bulk_drop(n, id);
    } else if (g->state == SIM_NG_BOUND) {
        unbind(n, id);
    } else if (g->state == SIM_NG_SAT) {
        sim_net_sat_part(n, id);
    }
    g->state = SIM_NG_PLAIN;
    if (g->shaped) {
        sim_net_link *t = &n->links[g->link[1]];
        if (t->in_k && t->n_groups == 1) k_remove(n, g->link[1], 0);
        if (t->in_s && t->n_groups == 1) t->in_s = 0;
        else if (t->in_s) s_leave(n, g->link[1]);  /* the others' rate rises */
    }
}

/* ---- solving ------------------------------------------------------------------------ */

static void classes_update(sim_net *n)
{
    if (n->prep_n == n->n_perm) return;
    if (n->cap_prep < n->n_perm) {
        n->cap_prep = n->n_perm;
        n->prep = xrealloc(n->prep, (size_t)n->cap_prep * sizeof *n->prep);
        n->creps = xrealloc(n->creps, (size_t)n->cap_prep * sizeof *n->creps);
    }
    n->n_creps = 0;
    for (int i = 0; i < n->n_perm; i++) {
        int id = n->perm[i], rep = n->links[id].twin_rep;
        n->prep[i] = rep >= 0 ? rep : id;
        if (n->prep[i] == id) n->creps[n->n_creps++] = id;
    }
    n->prep_n = n->n_perm;
}

/* The relaxed solve's queue of link levels: a binary heap of (x, link). A link is in it
 * at most once (queued at the start, requeued only once popped), so the keys are
 * distinct and it pops links in the same (x, link id) order as net.c's lazy heap, whose
 * superseded entries are skipped, however it was built. Entries touch no link struct. */

static int lv_before(const sim_net_level *a, const sim_net_level *b)
{
    return a->x < b->x || (a->x == b->x && a->link < b->link);
}

static void lv_down(sim_net_level *h, int nh, int i, sim_net_level e)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= nh) break;
        if (c + 1 < nh && lv_before(&h[c + 1], &h[c])) c++;
        if (!lv_before(&h[c], &e)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

/* Appends link id at level x; with heapify, restores the heap order as it goes (else
 * lv_heapify does it once, for the start's batch). */
static void lv_add(sim_net *n, int id, double x, int heapify)
{
    if (n->n_heap == n->cap_heap) {
        n->cap_heap = n->cap_heap ? n->cap_heap * 2 : 256;
        n->heap = xrealloc(n->heap, (size_t)n->cap_heap * sizeof *n->heap);
    }
    sim_net_level e = {x, id, 0};
    int i = n->n_heap++;
    while (heapify && i > 0) {
        int p = (i - 1) / 2;
        if (!lv_before(&e, &n->heap[p])) break;
        n->heap[i] = n->heap[p];
        i = p;
    }
    n->heap[i] = e;
}

static void lv_heapify(sim_net *n)
{
    for (int i = n->n_heap / 2 - 1; i >= 0; i--) lv_down(n->heap, n->n_heap, i, n->heap[i]);
}

static sim_net_level lv_pop(sim_net *n)
{
    sim_net_level top = n->heap[0], last = n->heap[--n->n_heap];
    if (n->n_heap) lv_down(n->heap, n->n_heap, 0, last);
    return top;
}

/* A link lost unfrozen flows at level x: its level becomes max(its fair share, x). The
 * queue is updated lazily: the link is marked and its entry, which can only be lower
 * (levels never fall), is put right when it reaches the top — the same pops, in the
 * same order, as setting it now, without moving it at each of its NICs' freezes. */
static void raise_level(sim_net *n, int id, double x)
{
    sim_net_link *m = &n->links[id];
    if (m->unfrozen <= 1e-9) {
        m->unfrozen = 0;  /* its entry stays queued and is skipped when popped */
        return;
    }
    m->raise_x = x;
    m->lv_dirty = 1;
}

/* Progressive filling over the ps links (BULK weight plus BOUND groups) and K (one NIC
 * of each shape class standing for its members). */
static void relaxed_solve(sim_net *n)
{
    n->n_heap = 0;
    n->fz_stamp++;  /* every BOUND group unfrozen */
    for (int i = 0; i < n->n_creps; i++) {
        sim_net_link *l = &n->links[n->creps[i]];
        l->frozen = l->satload;  /* S's flows: frozen from the start, at their fixed rates */
        l->sat_lim = INFINITY;
        l->r = 0;
        l->n_ub = l->n_bound;
        if (n->frac_w) {
            l->unfrozen = l->load;
            for (int j = 0; j < l->n_bound; j++) l->unfrozen += n->g[l->bound[j]].w[0];
        } else {
            l->unfrozen = l->load + l->bound_w;  /* whole numbers: the same in any order */
        }
        l->lv_dirty = 0;
        l->n_rl = 0;
        if (l->unfrozen > 0) lv_add(n, n->creps[i], (l->cap - l->frozen) / l->unfrozen, 0);
    }
    sim_net_k_classes(n);
    for (int c = 0; c < n->n_kc; c++) {
        sim_net_link *t = &n->links[n->kc_rep[c]];
        for (int j = 0; j < t->n_groups; j++) {
            sim_net_link *l = &n->links[n->g[t->groups[j]].link[0]];
            l->rl = sim_net_grow(l->rl, &l->cap_rl, l->n_rl + 1, sizeof *l->rl);
            l->rl[l->n_rl++] = t->groups[j];
        }
        /* every group on a NIC is shaped (weight 1 there, or a cohort group's member
         * count): the sum of the weights is its flow count, exactly, without visiting */
        t->frozen = 0;
        t->unfrozen = (double)t->nflows;
        t->minfz = INFINITY;
        t->lv_dirty = 0;
        lv_add(n, n->kc_rep[c], t->cap / t->unfrozen, 0);
    }
    lv_heapify(n);
    double level_now = 0;
    while (n->n_heap) {
        sim_net_level e = lv_pop(n);
        sim_net_link *l = &n->links[e.link];
        if (l->unfrozen <= 0) {
            l->lv_dirty = 0;
            continue;
        }
        if (l->lv_dirty) {  /* raised since queued: requeue at its level if that is higher */
            l->lv_dirty = 0;
            double xm = (l->cap - l->frozen) / l->unfrozen, key = xm > l->raise_x ? xm : l->raise_x;
            if (key != e.x) {
                lv_add(n, e.link, key, 1);
                continue;
            }
        }
        double x = e.x > level_now ? e.x : level_now;
        level_now = x;
        /* a NIC saturated by its own flows alone (s_join): at its first level, and any of
         * its flows that froze before it did so at that level too (a tie computed in
         * another order: within 1e-12, as sim_net_sat_violator allows) */
        if (l->temporary) {
            double key = l->cap / (double)l->nflows;
            if (x <= key * (1 + 1e-12) && l->minfz >= key * (1 - 1e-12)) l->pure = n->fz_stamp;
        }
        int side = l->temporary ? 0 : 1;  /* the other link of this link's groups */
        int cnt = l->temporary ? l->n_groups : l->n_ub ? l->n_rl : 0;  /* none left: skip */
        const int *ids = l->temporary ? l->groups : l->rl;
        if (!l->temporary) l->r = l->sat_lim = x;
        for (int k = 0; k < cnt; k++) {
            sim_net_group *g = &n->g[ids[k]];
            if (g->fz == n->fz_stamp) continue;
            g->fz = n->fz_stamp;
            int mu = n->kc_mu[n->links[g->link[1]].kc];  /* the NICs it stands for */
            n->links[g->link[0]].n_ub -= mu;
            g->rate = x;
            sim_net_link *m = &n->links[g->link[side]];
            if (side == 0) {
                /* the class's members freezing their flow in turn, all at level x */
                for (int q = 0; q < mu; q++) {
                    m->frozen += g->w[0] * x;
                    m->unfrozen -= g->w[0];
                }
            } else {
                if (g->m > 1) {
                    /* m twin links freezing their flow in turn (all at level x): the NIC's
                     * frozen load gets x added m times, as the plain groups would add it */
                    for (int q = 0; q < g->m; q++) m->frozen += x;
                } else {
                    m->frozen += g->w[1] * x;
                }
                m->unfrozen -= g->w[1];
            }
            if (side == 1 && x < m->minfz) m->minfz = x;
            raise_level(n, g->link[side], x);
        }
        l->unfrozen = 0;
    }
    sim_net_k_classes_copy(n);
}

/* a and b are perm indices; a class's rate is its rep's; ties in link id order */
static int rate_desc(const void *a, const void *b, const sim_net *n)
{
    int i = *(const int *)a, j = *(const int *)b;
    double rx = n->links[n->prep[i]].r, ry = n->links[n->prep[j]].r;
    int x = n->perm[i], y = n->perm[j];
    return rx > ry ? -1 : rx < ry ? 1 : (x > y) - (x < y);
}

/* Insertion sort (P is small and the order changes little between solves). */
static void sort_by_rate(const sim_net *n, int *a, int m)
{
    for (int i = 1; i < m; i++) {
        int v = a[i], j = i;
        while (j > 0 && rate_desc(&a[j - 1], &v, n) > 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* The sum over temporary link t's flows of a per-flow value (its group's rate, or with
 * link_r its ps link's r), compared with thr: the sign of (sum - thr). The sum is the
 * one the plain per-member groups would make, in their list's order (floating point);
 * for a cohort NIC it is first taken per group (flows times value), which differs from
 * that by a few rounding errors, and summed member by member only when within 1e-9 of
 * thr. */
static int nic_sum_cmp(const sim_net *n, const sim_net_link *t, int link_r, double thr)
{
    double s = 0;
    if (t->n_mt) {
        for (int q = 0; q < t->n_groups; q++) {
            const sim_net_group *g = &n->g[t->groups[q]];
            s += g->m * (link_r ? n->links[g->link[0]].r : g->rate);
        }
        if (s * (1 + 1e-9) < thr) return -1;
        if (s * (1 - 1e-9) > thr) return 1;
        s = 0;
        for (int q = 0; q < t->n_lab; q++) {
            const sim_net_group *g = &n->g[sim_net_mt_group(n, t, t->lab[q])];
            s += link_r ? n->links[g->link[0]].r : g->rate;
        }
    } else {
        for (int q = 0; q < t->n_groups; q++) {
            const sim_net_group *g = &n->g[t->groups[q]];
            s += link_r ? n->links[g->link[0]].r : g->rate;
        }
    }
    return (s > thr) - (s < thr);
}

/* Proves that no NIC outside K is over capacity, or adds those that are to K; returns
 * how many were added. A NIC carries at most one group per ps link, so one that touches
 * only "cold" ps links (whose rates sum to at most the smallest NIC capacity) is safe;
 * only the NICs of groups on the few "hot" links (largest rates) are summed exactly. */
static int check(sim_net *n)
{
    n->scratch = sim_net_grow(n->scratch, &n->cap_scratch, n->n_perm, sizeof *n->scratch);
    int m = 0;
    double lam = 0, thr = n->min_temp_cap * (1 - 1e-12);
    /* Usually the ps rates sum to far below any NIC's capacity. Summed per class (each
     * rep's r times its class size) the sum differs from the per-link one below by a few
     * rounding errors (relative 1e-13 for 10^3 links); with a 1e-9 margin the per-link
     * sum's verdict is the same, without visiting every link. */
    for (int i = 0; i < n->n_creps; i++) {
        const sim_net_link *l = &n->links[n->creps[i]];
        if (l->load > 0) lam += l->r * (l->twin_rep >= 0 ? l->twin_n : 1);
    }
    if (lam * (1 + 1e-9) <= thr) return 0;
    lam = 0;
    for (int i = 0; i < n->n_perm; i++) {
        const sim_net_link *l = &n->links[n->prep[i]];  /* a twin has its rep's r and load */
        if (l->load <= 0) continue;
        n->scratch[m++] = i;
        lam += l->r;
    }
    if (lam <= thr) return 0;
    sort_by_rate(n, n->scratch, m);
    double suf = 0;
    int h = m;
    while (h > 0 && suf + n->links[n->prep[n->scratch[h - 1]]].r <= thr) suf += n->links[n->prep[n->scratch[--h]]].r;
    n->stamp++;
    int added = 0;
    for (int i = 0; i < h; i++) {
        sim_net_link *l = &n->links[n->prep[n->scratch[i]]];  /* a twin's NICs are its rep's */
        if (l->stamp == n->stamp) continue;  /* a class's rep: once */
        l->stamp = n->stamp;
        /* from the end: k_add takes a group off this list by moving its last one in,
         * and a NIC has one group on it */
        for (int j = l->n_bl - 1; j >= 0; j--) {
            const sim_net_group *g = &n->g[l->bl[j]];
            sim_net_link *t = &n->links[g->link[1]];
            if (t->stamp == n->stamp) continue;
            t->stamp = n->stamp;
            if (nic_sum_cmp(n, t, 1, t->cap * (1 - 1e-12)) > 0) {
                k_add(n, g->link[1]);
                added++;
            }
        }
    }
    return added;
}

/* Sends back to K every NIC of S that a ps link's bound (sim_net_sat_violator) rules
 * out; returns how many. */
static int s_check(sim_net *n)
{
    int out = 0;
    for (int i = 0; i < n->n_creps; i++) {
        int id;
        while ((id = sim_net_sat_violator(n, n->creps[i])) >= 0) {
            s_leave(n, n->g[id].link[1]);
            out++;
        }
    }
    return out;
}

void sim_net_fast_solve(sim_net *n)
{
    n->solves++;
    classes_update(n);
    for (;;) {
        if (n->n_k) {
            relaxed_solve(n);
        } else {
            for (int i = 0; i < n->n_creps; i++) {
                sim_net_link *l = &n->links[n->creps[i]];
                l->r = l->load > 0 ? (l->cap - l->satload) / l->load : 0;
                l->sat_lim = l->load > 0 ? l->r : INFINITY;
            }
        }
        if (check(n)) continue;
        if (!n->n_sat_g || !s_check(n)) break;
    }
    /* NICs saturated by their own flows join S; those well below capacity leave K:
     * their groups' rates are their ps links' r */
    double best = INFINITY;
    for (int c = 0; c < n->n_kc; c++) n->kc_vd[c] = 2;  /* not yet summed */
    for (int i = n->n_k - 1; i >= 0; i--) {
        int k = n->kset[i];
        sim_net_link *t = &n->links[k];
        if (t->pure == n->fz_stamp) {
            s_join(n, k);
            continue;
        }
        /* a class's members have the same rates in the same order: the same sum */
        if (n->kc_vd[t->kc] == 2) n->kc_vd[t->kc] = nic_sum_cmp(n, t, 0, 0.9 * t->cap) < 0;
        if (n->kc_vd[t->kc]) {
            k_remove(n, k, 1);
            continue;
        }
        for (int j = 0; j < t->n_groups; j++) {  /* its groups stay BOUND */
            const sim_net_group *g = &n->g[t->groups[j]];
            dp_assert("sim_net: every group gets a positive rate", g->rate > 0);
            double dt = g->rem / g->rate;
            if (dt < best) best = dt;
        }
    }
    for (int i = 0; i < n->n_creps; i++) {  /* a twin has no marks */
        sim_net_link *l = &n->links[n->creps[i]];
        vt_clean(n, l);
        if (!vt_any(l)) continue;
        dp_assert("sim_net: every group gets a positive rate", l->r > 0);
        double dt = (vt_top(l)->target - l->V) / l->r;
        if (dt < best) best = dt;
    }
    double ts = sim_net_sat_next(n) - n->t;
    if (ts < best) best = ts;
    n->next_t = n->t + (best > 0 ? best : 0);
    n->dirty = 0;
}

int sim_net_fast_advance(sim_net *n, double dt)
{
    int nd = 0;
    classes_update(n);
    for (int i = 0; i < n->n_creps; i++) {  /* a twin has no marks */
        sim_net_link *l = &n->links[n->creps[i]];
        if (!vt_any(l)) continue;
        l->V += l->r * dt;
        /* finished to within a nanosecond's worth of bytes (event times are whole ns) */
        for (vt_clean(n, l); vt_any(l) && vt_top(l)->target <= l->V + l->r * 1e-9 + 1e-6; vt_clean(n, l)) {
            sim_net_vt_entry e = vt_pop_top(l);
            n->keys[nd].seq = e.seq;
            n->keys[nd].group = e.group;
            nd++;
            /* mark it so that vt_clean does not count it twice before it is removed */
            n->g[e.group].gen++;
        }
    }
    for (int i = 0; i < n->n_bound; i++) {
        sim_net_group *g = &n->g[n->bound[i]];
        g->rem -= g->rate * dt;
        if (g->rem <= g->rate * 1e-9 + 1e-6) {
            n->keys[nd].seq = g->seq;
            n->keys[nd].group = n->bound[i];
            nd++;
        }
    }
    return n->n_sat_g ? sim_net_sat_advance(n, n->t + dt, nd) : nd;
}

double sim_net_fast_rate(const sim_net *n, int id)
{
    const sim_net_group *g = &n->g[id];
    return g->state == SIM_NG_BULK ? n->links[g->link[0]].r : g->rate;
}

double sim_net_fast_remaining(const sim_net *n, int id)
{
    const sim_net_group *g = &n->g[id];
    if (g->state == SIM_NG_SAT) return g->rem - g->rate * (n->t - g->t0);
    return g->state == SIM_NG_BULK ? g->target - n->links[g->link[0]].V : g->rem;
}
