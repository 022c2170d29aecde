/* net_shape.c — the relaxed solve's shape classes of K (net_fast.c). NICs of K with the
 * same capacity, flows and groups (ps link, weights and flows of each, in list order)
 * get the same rates by symmetry, and in progressive filling they pop one after another
 * at the same level, each adding the same loads to the same ps links. So the relaxed
 * solve runs on one NIC of each class (its lowest link id) and adds its loads mu times,
 * as its mu members would in turn, which keeps the sums those of the member-by-member
 * solve; the members then get its rates. NICs of one shape whose groups are listed in
 * another order fall in separate classes (slower, as exact). A NIC's shape hash is
 * cached until its groups change; a match found once is not compared again while
 * neither NIC changes. Single-threaded, called only from net_fast.c. */
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "sim/net_int.h"

static int same_shape(const sim_net *n, const sim_net_link *a, const sim_net_link *b)
{
    if (a->cap != b->cap || a->nflows != b->nflows || a->n_groups != b->n_groups) return 0;
    for (int i = 0; i < a->n_groups; i++) {
        const sim_net_group *x = &n->g[a->groups[i]], *y = &n->g[b->groups[i]];
        if (x->link[0] != y->link[0] || x->w[0] != y->w[0] || x->w[1] != y->w[1] || x->m != y->m) return 0;
    }
    return 1;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t dbits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static uint64_t shape_hash(const sim_net *n, sim_net_link *t)
{
    if (t->shape_ok) return t->shape_h;
    uint64_t h = mix(dbits(t->cap), (uint64_t)t->nflows);
    for (int i = 0; i < t->n_groups; i++) {
        const sim_net_group *g = &n->g[t->groups[i]];
        h = mix(h, (uint64_t)g->link[0]);
        h = mix(h, dbits(g->w[0]) ^ (dbits(g->w[1]) << 1));
    }
    t->shape_ok = 1;
    return t->shape_h = h;
}

/* Sorts K into shape classes (t->kc, kc_rep, kc_mu; members chained by kc_next). */
void sim_net_k_classes(sim_net *n)
{
    int nk = n->n_k, nb = 16;
    while (nb < 2 * nk) nb *= 2;
    if (n->cap_kc < nk) {
        n->cap_kc = nk;
        n->kc_rep = xrealloc(n->kc_rep, (size_t)nk * sizeof *n->kc_rep);
        n->kc_mu = xrealloc(n->kc_mu, (size_t)nk * sizeof *n->kc_mu);
        n->kc_first = xrealloc(n->kc_first, (size_t)nk * sizeof *n->kc_first);
        n->kc_chain = xrealloc(n->kc_chain, (size_t)nk * sizeof *n->kc_chain);
        n->kc_h = xrealloc(n->kc_h, (size_t)nk * sizeof *n->kc_h);
        n->kc_vd = xrealloc(n->kc_vd, (size_t)nk * sizeof *n->kc_vd);
    }
    if (n->cap_kb < nb) {
        n->cap_kb = nb;
        n->kc_bucket = xrealloc(n->kc_bucket, (size_t)nb * sizeof *n->kc_bucket);
    }
    for (int b = 0; b < nb; b++) n->kc_bucket[b] = -1;
    n->n_kc = 0;
    for (int i = 0; i < nk; i++) {
        int k = n->kset[i];
        sim_net_link *t = &n->links[k];
        uint64_t h = shape_hash(n, t);
        int b = (int)(h & (uint64_t)(nb - 1)), c;
        for (c = n->kc_bucket[b]; c >= 0; c = n->kc_chain[c]) {
            if (n->kc_h[c] != h) continue;
            int r = n->kc_rep[c];
            /* compared with r before, neither changed since (shape_v is never reused) */
            if (t->eq_link == r && t->eq_v == t->shape_v && t->eq_rv == n->links[r].shape_v) break;
            if (same_shape(n, &n->links[r], t)) {
                t->eq_link = r;
                t->eq_v = t->shape_v;
                t->eq_rv = n->links[r].shape_v;
                break;
            }
        }
        if (c < 0) {
            c = n->n_kc++;
            n->kc_h[c] = h;
            n->kc_chain[c] = n->kc_bucket[b];
            n->kc_bucket[b] = c;
            n->kc_rep[c] = k;
            n->kc_mu[c] = 0;
            n->kc_first[c] = -1;
        }
        t->kc = c;
        t->kc_next = n->kc_first[c];
        n->kc_first[c] = k;
        n->kc_mu[c]++;
        if (k < n->kc_rep[c]) n->kc_rep[c] = k;
    }
}

/* After the relaxed solve: each member of a class gets its rep's rates and verdict. */
void sim_net_k_classes_copy(sim_net *n)
{
    for (int c = 0; c < n->n_kc; c++) {
        if (n->kc_mu[c] == 1) continue;
        const sim_net_link *r = &n->links[n->kc_rep[c]];
        for (int k = n->kc_first[c]; k >= 0; k = n->links[k].kc_next) {
            sim_net_link *t = &n->links[k];
            if (t == r) continue;
            t->pure = r->pure;
            for (int i = 0; i < t->n_groups; i++) {
                n->g[t->groups[i]].rate = n->g[r->groups[i]].rate;
                n->g[t->groups[i]].fz = n->fz_stamp;
            }
        }
    }
}

