/* net_int.h — the simulator network's internals, shared by net.c (API, general
 * progressive filling) and net_fast.c (the exact fast path for ps-link / worker-NIC
 * groups). Not part of the public interface: include only from sim/net*.c.
 * Group states: PLAIN (rem and rate valid), BULK (fast path: drains at its permanent
 * link's rate r; rem = target - link V), BOUND (fast path: its temporary link is a
 * candidate bottleneck; rem and rate valid, listed on its permanent link), SAT (fast
 * path, net_sat.c: its NIC is saturated by its own flows alone, so its rate is fixed at
 * cap / flows; rate valid, rem is its bytes left at time t0). A NIC's groups are all in
 * one state: BULK (not in K nor S), BOUND (in K) or SAT (in S). */
#ifndef SIM_NET_INT_H
#define SIM_NET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/net.h"

enum { SIM_NG_PLAIN = 0, SIM_NG_BULK = 1, SIM_NG_BOUND = 2, SIM_NG_SAT = 3 };

typedef struct sim_net_vt_entry {
    double target; uint64_t seq; uint32_t gen; int group;
} sim_net_vt_entry;
typedef struct sim_net_done_key { uint64_t seq; int group; int member; } sim_net_done_key;
typedef struct sim_net_level { double x; int link; uint32_t ver; } sim_net_level;

typedef struct sim_net_link {
    double cap;
    double frozen;      /* solve: load of frozen flows */
    double unfrozen;    /* solve: weight of unfrozen flows */
    int *groups;        /* groups crossing this link */
    int n_groups, cap_groups;
    uint32_t ver;
    int lv_dirty;       /* relaxed solve: raised since its entry was set (see raise_level) */
    double raise_x;     /* and the level at that raise */
    int temporary, alive;
    int last_perm;      /* temporary: permanent link of the last group added, -1 none */
    /* fast path, permanent links: weight of its BULK groups, their virtual bytes sent per
     * flow V (at the network's time) and rate r, a min-heap of their targets (entries
     * of groups no longer BULK are stale and skipped), and its BOUND groups */
    double load, V, r;
    sim_net_vt_entry *vh;
    int n_vh, cap_vh;
    sim_net_vt_entry *vq; /* marks added in increasing order (the usual case: equal bytes on
                           * a clock that only goes forward) wait here, first in first out:
                           * live ones are vq[vq_head .. n_vq); the heap has the others */
    int vq_head, n_vq, cap_vq;
    int vt_ok;          /* the top mark is known live (vt_clean has nothing to do) */
    int *bound;
    int n_bound, cap_bound;
    double bound_w;     /* the sum of its BOUND groups' weights on it (whole numbers unless
                         * n->frac_w: then summed over the list at each solve) */
    int n_ub;           /* relaxed solve: its BOUND groups not yet frozen */
    int *bl;            /* its BULK groups (any order; check() visits them) */
    int n_bl, cap_bl;
    /* net_sat.c, permanent links (reps): the load of its SAT groups (sum of w x their
     * rate), how many there are, a lazy max-heap of their rates (stale entries skipped)
     * and, after a solve, the level its own flows froze at (INFINITY: it did not) */
    double satload, sat_lim;
    int n_sat;
    sim_net_vt_entry *sh;
    int n_sh, cap_sh;
    /* fast path, temporary links: index in the candidate set + 1 (0: not in it), the
     * check's sum of rates and its visit stamp */
    int in_k;
    int in_s;           /* in S: saturated by its own flows (net_sat.c) */
    uint64_t pure;      /* == n->fz_stamp: the last relaxed solve froze all its flows at
                         * cap / nflows (within 1e-12), by itself or in a tie: joins S */
    double minfz;       /* relaxed solve: the least level its flows froze at by ps links */
    int kc, kc_next;    /* relaxed solve: its shape class in K and the next NIC of it */
    int shape_ok;       /* shape_h is its groups' (cleared when a group comes or goes) */
    uint64_t shape_h;
    uint64_t shape_v;   /* a new number (n->shape_seq) whenever its groups change */
    int eq_link;        /* net_shape.c: the NIC it was last found of the same shape as, */
    uint64_t eq_v, eq_rv; /* at these shape_v (its own, that NIC's) */
    int *rl;            /* relaxed solve, ps links: the BOUND groups of the classes' reps */
    int n_rl, cap_rl;
    double sum;
    uint32_t stamp;
    /* twins (see sim_net_twin): permanent links, the class's representative (itself
     * for a rep; -1 when not twinned). A member other than the rep never carries a
     * group: the rep's group stands for the class, and net_fast.c reads a member's r
     * and load from its rep (a member's own r and load are not kept). */
    int twin_rep;
    int twin_n;                   /* rep: links in its class */
    int cls_g;                    /* sim_net_cohort_add's scratch: the class's group */
    int cls_tail;                 /* and its last member so far */
    uint32_t cls_stamp;
    /* temporary links: flows on it (sum of its groups' NIC weights, exact integers) and,
     * for a NIC of sim_net_cohort_add, its member table: member i (the cohort's i-th ps
     * link) belongs to group mt_g[i], sits at slot mt_pos[i] of lab (the order the
     * plain per-member groups would have in this link's group list, kept by replaying
     * their swap-removals), reports mt_cookie[i] */
    int nflows;
    int n_mt, cap_mt, n_lab, cap_lab;
    int *mt_g, *mt_pos, *lab;
    int *mt_next;                 /* the next member of the same group (-1: none) */
    /* a NIC of sim_net_cohort_add_plan keeps only lab and mt_pos: a member's group is
     * pg[its class], its cookie cookie_base + the plan's, its next the plan's (mt_g,
     * mt_cookie and mt_next unused); plan is -1 otherwise */
    int plan;
    int *pg, cap_pg;
    int64_t cookie_base;
    int64_t *mt_cookie;
    uint64_t mt_seq0;             /* member i's seq is mt_seq0 + i */
} sim_net_link;

typedef struct sim_net_group {
    int nl;
    int link[SIM_NET_MAX_LINKS];
    double w[SIM_NET_MAX_LINKS];
    int pos[SIM_NET_MAX_LINKS];   /* index in each link's group list */
    double rem, rate;
    int64_t cookie;
    uint64_t seq;
    int active_pos;               /* index in n->active, -1 when free */
    int frozen;                   /* net.c's solve */
    uint64_t fz;                  /* net_fast.c's relaxed solve: frozen when == n->fz_stamp */
    int shaped;                   /* (permanent link, temporary link of weight 1) */
    int state;                    /* SIM_NG_PLAIN / SIM_NG_BULK / SIM_NG_BOUND */
    double target;                /* BULK: finishes when its link's V reaches this */
    uint32_t gen;                 /* bumped each time it enters its link's heap */
    int bpos, apos;               /* BOUND: index in its link's bound list, in n->bound */
    int blpos;                    /* BULK: index in its link's bl */
    double t0;                    /* SAT: when it joined S (rem is its bytes left then) */
    uint32_t sgen;                /* SAT: bumped each time it joins S (heap entries' gen) */
    int m;                        /* flows it stands for on its NIC (twins: class size) */
    int twin;                     /* made by sim_net_cohort_add: members on its NIC's table */
    int left;                     /* advance: members not yet reported */
    int mhead;                    /* twin: its first member on its NIC's table */
} sim_net_group;

typedef struct sim_net_plan {   /* see sim_net_plan_add */
    int np, nc;                   /* members, classes */
    int *cls;                     /* member -> class (in first-member order) */
    int *next;                    /* the next member of the same class, -1 none */
    int *ident;                   /* 0 .. np-1 */
    int64_t *cookie;
    int *rep, *m, *first;         /* per class: rep link, members, first member */
    double *bytes;                /* per class */
} sim_net_plan;

struct sim_net {
    double t;
    sim_net_link *links;
    int n_links, cap_links;
    int *free_links;
    int n_free_links;
    sim_net_group *g;
    int cap_g;
    int *free_g;
    int n_free_g;
    int *active;
    int n_active;
    uint64_t seq;
    int dirty;
    double next_t;
    sim_net_level *heap;
    int n_heap, cap_heap;
    sim_net_done *done;
    sim_net_done_key *keys, *keys_tmp;  /* keys_tmp: sort scratch */
    int cap_done;
    uint64_t solves;
    /* fast path: used while every group is shaped */
    int fast, fast_off;
    int n_unshaped;
    double min_temp_cap;
    int *perm;                    /* permanent link ids */
    int n_perm, cap_perm;
    int *kset;                    /* candidate temporary links (may saturate) */
    int n_k, cap_k;
    int *bound;                   /* BOUND groups */
    int n_bound, cap_bound;
    int *scratch;
    int cap_scratch;
    uint32_t stamp;
    int n_twins;                  /* links whose twin_rep is another link */
    int n_twin_groups;            /* active groups with twin set */
    int n_flows;                  /* active flows (sum of m) */
    /* net_fast.c's class tables, rebuilt when n_perm != prep_n (sim_net_twin sets -1):
     * prep[i] is perm[i]'s rep (itself when not twinned); creps lists, in perm order, the
     * perm links that are their own rep. Passes read a class's r and load from its rep
     * only, so the ~P twin links' structs stay out of the cache. */
    int *prep, *creps;
    int n_creps, cap_prep, prep_n;
    sim_net_plan *plans;
    int n_plans;
    uint64_t fz_stamp;            /* relaxed solves so far (see sim_net_group.fz) */
    int frac_w;                   /* a BOUND group has had a weight that is not a whole number */
    /* net_sat.c: the SAT groups' finishing times (a lazy min-heap), their count */
    sim_net_vt_entry *fh;
    int n_fh, cap_fh;
    int n_sat_g;
    uint64_t sat_joins;           /* NICs that joined S so far */
    /* the relaxed solve's shape classes of K (net_shape.c): per class its rep (lowest
     * link id), members, first member, the next class in its hash bucket; the buckets */
    int *kc_rep, *kc_mu, *kc_first, *kc_chain, *kc_bucket;
    int *kc_vd;                   /* after the solve: the class's 0.9-capacity verdict */
    uint64_t shape_seq;           /* the last shape_v handed out */
    uint64_t *kc_h;               /* per class: its shape hash */
    int n_kc, cap_kc, cap_kb;
};

/* A cohort NIC's member j: its group, cookie and the next member of its group. */
static inline int sim_net_mt_group(const sim_net *n, const sim_net_link *t, int j)
{
    return t->plan >= 0 ? t->pg[n->plans[t->plan].cls[j]] : t->mt_g[j];
}

static inline int64_t sim_net_mt_cookie_of(const sim_net *n, const sim_net_link *t, int j)
{
    return t->plan >= 0 ? t->cookie_base + n->plans[t->plan].cookie[j] : t->mt_cookie[j];
}

static inline int sim_net_mt_next_of(const sim_net *n, const sim_net_link *t, int j)
{
    return t->plan >= 0 ? n->plans[t->plan].next[j] : t->mt_next[j];
}

/* net.c */
void sim_net_heap_push(sim_net *n, double x, int link, uint32_t ver);
sim_net_level sim_net_heap_pop(sim_net *n);

/* net_fast.c */
void sim_net_fast_enter(sim_net *n);
void sim_net_fast_leave(sim_net *n);
void sim_net_fast_added(sim_net *n, int id);      /* a group started while fast */
void sim_net_fast_removed(sim_net *n, int id);    /* before its links let go of it */
void sim_net_fast_solve(sim_net *n);              /* rates and n->next_t */
int sim_net_fast_advance(sim_net *n, double dt);  /* fills n->keys; returns the count */
double sim_net_fast_rate(const sim_net *n, int id);
double sim_net_fast_remaining(const sim_net *n, int id);
/* p (an array of *cap elements of size bytes) grown to hold need, doubling; returns it
 * (reallocated: the old pointer is gone), *cap updated. Aborts when out of memory. */
void *sim_net_grow(void *p, int *cap, int need, size_t size);

/* net_sat.c: S, the NICs saturated by their own flows (see net_sat.c's top) */
void sim_net_sat_join(sim_net *n, int id);         /* a PLAIN group, rem at n->t, rate set */
double sim_net_sat_part(sim_net *n, int id);       /* leaves S; returns its rem at n->t */
void sim_net_sat_reset(sim_net *n);                /* S empty (entering / leaving the fast path) */
int sim_net_sat_violator(sim_net *n, int link);    /* a group of S that breaks link's bound, or -1 */
double sim_net_sat_next(sim_net *n);               /* the earliest finish, INFINITY none */
int sim_net_sat_advance(sim_net *n, double t, int nd); /* finished ones to n->keys[nd..] */

/* net_shape.c: K's shape classes for the relaxed solve (see net_shape.c's top) */
void sim_net_k_classes(sim_net *n);                /* t->kc, kc_rep, kc_mu, kc_first */
void sim_net_k_classes_copy(sim_net *n);           /* the reps' rates and verdicts to the others */

#endif
