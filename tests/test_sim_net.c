/* test_sim_net.c — the simulator's building blocks: max-min fair rates on small
 * hand-solved flow sets (progressive filling, grouped flows with weights), flow
 * completion times, the event heap's order, and unit / distribution / flag parsing with
 * its error messages. */
#include <math.h>
#include <string.h>

#include "common/dp.h"
#include "common/units.h"
#include "sim/engine.h"
#include "sim/net.h"
#include "sim/sim.h"
#include "tests/check.h"

#define REL(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (fabs((double)(b)) + 1))

static void test_maxmin(void)
{
    /* A=1, B=1; f1:A f2:A+B f3:B -> 1/2 each */
    sim_net *n = sim_net_new();
    int A = sim_net_link_add(n, 1, 0), B = sim_net_link_add(n, 1, 0);
    int l1[] = {A}, l2[] = {A, B}, l3[] = {B};
    int f1 = sim_net_group_add(n, l1, NULL, 1, 100, 1);
    int f2 = sim_net_group_add(n, l2, NULL, 2, 100, 2);
    int f3 = sim_net_group_add(n, l3, NULL, 1, 100, 3);
    CHECK(REL(sim_net_rate(n, f1), 0.5) && REL(sim_net_rate(n, f2), 0.5) && REL(sim_net_rate(n, f3), 0.5));
    sim_net_free(n);

    /* A=10, B=4; f1:A f2:A+B f3:B f4:B -> B saturates at 4/3; f1 gets the rest of A */
    n = sim_net_new();
    A = sim_net_link_add(n, 10, 0);
    B = sim_net_link_add(n, 4, 0);
    int a[] = {A}, ab[] = {A, B}, b[] = {B};
    f1 = sim_net_group_add(n, a, NULL, 1, 100, 1);
    f2 = sim_net_group_add(n, ab, NULL, 2, 100, 2);
    f3 = sim_net_group_add(n, b, NULL, 1, 100, 3);
    int f4 = sim_net_group_add(n, b, NULL, 1, 100, 4);
    CHECK_NEAR(sim_net_rate(n, f2), 4.0 / 3, 1e-9);
    CHECK_NEAR(sim_net_rate(n, f3), 4.0 / 3, 1e-9);
    CHECK_NEAR(sim_net_rate(n, f4), 4.0 / 3, 1e-9);
    CHECK_NEAR(sim_net_rate(n, f1), 10 - 4.0 / 3, 1e-9);
    sim_net_free(n);

    /* linear network: 3 links of 1, a long flow across all, one short flow per link */
    n = sim_net_new();
    int L[3];
    for (int i = 0; i < 3; i++) L[i] = sim_net_link_add(n, 1, 0);
    int lng = sim_net_group_add(n, L, NULL, 3, 10, 0);
    int sh[3];
    for (int i = 0; i < 3; i++) sh[i] = sim_net_group_add(n, &L[i], NULL, 1, 10, i + 1);
    CHECK_NEAR(sim_net_rate(n, lng), 0.5, 1e-12);
    for (int i = 0; i < 3; i++) CHECK_NEAR(sim_net_rate(n, sh[i]), 0.5, 1e-12);
    sim_net_free(n);

    /* three links of different capacity in a chain: 1, 2, 3 with flows x:{1,2}, y:{2,3},
     * z:{3}: link 1 holds x at 1; link 2 gives y 1; link 3 gives z 2 */
    n = sim_net_new();
    int c1 = sim_net_link_add(n, 1, 0), c2 = sim_net_link_add(n, 2, 0), c3 = sim_net_link_add(n, 3, 0);
    int lx[] = {c1, c2}, ly[] = {c2, c3}, lz[] = {c3};
    int x = sim_net_group_add(n, lx, NULL, 2, 10, 0);
    int y = sim_net_group_add(n, ly, NULL, 2, 10, 1);
    int z = sim_net_group_add(n, lz, NULL, 1, 10, 2);
    CHECK_NEAR(sim_net_rate(n, x), 1, 1e-12);
    CHECK_NEAR(sim_net_rate(n, y), 1, 1e-12);
    CHECK_NEAR(sim_net_rate(n, z), 2, 1e-12);
    sim_net_free(n);

    /* grouped flows: 3 workers behind one group (weight 3 on the ps link, 1 on the
     * stand-in NIC) plus a single flow: 9 / 4 each; a NIC of 1 caps the group at 1 and
     * the single flow takes the remaining 6 */
    n = sim_net_new();
    int ps = sim_net_link_add(n, 9, 0), nic = sim_net_link_add(n, 100, 1), nic2 = sim_net_link_add(n, 100, 1);
    int lg[] = {ps, nic}, ls[] = {ps, nic2};
    double wg[] = {3, 1};
    int g = sim_net_group_add(n, lg, wg, 2, 10, 0), s = sim_net_group_add(n, ls, NULL, 2, 10, 1);
    CHECK_NEAR(sim_net_rate(n, g), 9.0 / 4, 1e-12);
    CHECK_NEAR(sim_net_rate(n, s), 9.0 / 4, 1e-12);
    sim_net_free(n);
    n = sim_net_new();
    ps = sim_net_link_add(n, 9, 0);
    nic = sim_net_link_add(n, 1, 1);
    nic2 = sim_net_link_add(n, 100, 1);
    int lg2[] = {ps, nic}, ls2[] = {ps, nic2};
    g = sim_net_group_add(n, lg2, wg, 2, 10, 0);
    s = sim_net_group_add(n, ls2, NULL, 2, 10, 1);
    CHECK_NEAR(sim_net_rate(n, g), 1, 1e-12);
    CHECK_NEAR(sim_net_rate(n, s), 6, 1e-12);
    sim_net_free(n);
}

static uint64_t sat_joins_seen;  /* NICs that joined S in the fast-path comparisons */

/* Random (ps link, worker NIC) flow sets, the shape the simulator builds: the fast path
 * (net_fast.c: BULK groups on ps-link clocks, a candidate set of saturating NICs, and
 * net_sat.c's set S of NICs saturated by their own flows, left alone between solves)
 * must give the same rates, completion times and completion order as the general
 * progressive filling, with tight NICs (many saturate), loose ones (none does) and
 * mixes, and with cohorts arriving while others are in flight: starts and ends in any
 * order. ps capacities are ps_lo .. ps_hi, workers per group 1 .. k_max. With few, NICs
 * come in a few shapes (capacity nic_lo or nic_hi, one of two ps-link subsets), so that
 * the relaxed solve's shape classes stand for many NICs at once. Returns the number of
 * mismatches. */
static int flows_vs_general(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi, double ps_lo,
                            double ps_hi, int k_max, int few)
{
    dp_rng r;
    dp_rng_seed(&r, seed);
    sim_net *a = sim_net_new(), *b = sim_net_new();
    sim_net_fast_enable(b, 0);
    int ps[64];
    for (int p = 0; p < P; p++) {
        double cap = ps_lo + (ps_hi - ps_lo) * dp_rng_uniform(&r);
        ps[p] = sim_net_link_add(a, cap, 0);
        if (sim_net_link_add(b, cap, 0) != ps[p]) return 1;
    }
    int started = 0, bad = 0, ids[4096], n_ids = 0;
    double t = 0;
    while (started < cohorts || sim_net_active(a) || sim_net_active(b)) {
        /* a few cohorts start now: a NIC, a random subset of ps links in order */
        int burst = started < cohorts ? 1 + (int)(dp_rng_next(&r) % 3) : 0;
        for (int c = 0; c < burst && started < cohorts; c++, started++) {
            double cap = nic_lo + (nic_hi - nic_lo) * dp_rng_uniform(&r);
            int shape = (int)(dp_rng_next(&r) % 2);
            if (few) cap = shape ? nic_hi : nic_lo;
            int na = sim_net_link_add(a, cap, 1), nb = sim_net_link_add(b, cap, 1);
            double k = (double)(1 + dp_rng_next(&r) % (unsigned)k_max);
            for (int p = 0; p < P; p++) {
                if (few ? (p + shape) % 3 == 0 : dp_rng_uniform(&r) < 0.3) continue;
                double bytes = 1 + 99 * dp_rng_uniform(&r);
                int la[2] = {ps[p], na}, lb[2] = {ps[p], nb};
                double w[2] = {k, 1};
                int ga = sim_net_group_add(a, la, w, 2, bytes, started * 100 + p);
                int gb = sim_net_group_add(b, lb, w, 2, bytes, started * 100 + p);
                bad += ga != gb;
                if (n_ids < 4096) ids[n_ids++] = ga;
            }
        }
        double ta = sim_net_next(a), tb = sim_net_next(b);
        if (!(ta == tb || REL(ta, tb))) bad++;
        for (int i = 0; i < n_ids; i++) {
            if (ids[i] < 0) continue;
            double ra = sim_net_rate(a, ids[i]), rb = sim_net_rate(b, ids[i]);
            if (!REL(ra, rb)) bad++;
        }
        if (!isfinite(ta)) break;
        /* move to the next completion, or part of the way when more cohorts come */
        double tn = started < cohorts && dp_rng_uniform(&r) < 0.5 ? t + (ta - t) * dp_rng_uniform(&r) : ta;
        const sim_net_done *da, *db;
        int nda = sim_net_advance(a, tn, &da);
        int ndb = sim_net_advance(b, tn, &db);
        if (nda != ndb) {
            bad++;
        } else {
            for (int i = 0; i < nda; i++) bad += da[i].group != db[i].group || da[i].cookie != db[i].cookie;
        }
        for (int i = 0; i < nda; i++)
            for (int j = 0; j < n_ids; j++)
                if (ids[j] == da[i].group) ids[j] = -1;
        t = tn;
        if (bad) break;
    }
    sat_joins_seen += sim_net_sat_joins(a);
    sim_net_free(a);
    sim_net_free(b);
    return bad;
}

static int fast_vs_general(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi)
{
    return flows_vs_general(seed, P, cohorts, nic_lo, nic_hi, 1, 10, 4, 0);
}

/* NIC-bound: ps links far faster than the NICs, one worker a group (the simulator's
 * workers starting at scattered times), so that most NICs are saturated by their own
 * flows (S) and ps levels fall below some of them as flows come and go. */
static int nic_bound_vs_general(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi)
{
    return flows_vs_general(seed, P, 2 * cohorts, nic_lo, nic_hi, 2 * P, 6 * P, 1, 0);
}

/* NIC-bound with NICs of a few shapes only (many NICs of one shape class in K). */
static int shapes_vs_general(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi)
{
    return flows_vs_general(seed, P, 2 * cohorts, nic_lo, nic_hi, 1.5 * P, 4 * P, 2, 1);
}

typedef int (*flow_compare_fn)(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi);

/* Runs a fast-vs-reference comparison over 40 seeds x {tight, loose, mixed} NICs, with
 * 2 .. 1 + p_span ps links; returns the number of flow sets that differ. */
static int random_flow_cases(flow_compare_fn cmp, int p_span, int *cases)
{
    int bad = 0;
    for (uint64_t s = 1; s <= 40; s++) {
        int P = 2 + (int)(s % (uint64_t)p_span);
        bad += cmp(s, P, 30, 0.5, 4) != 0;        /* tight NICs */
        bad += cmp(s + 100, P, 30, 20, 40) != 0;  /* loose NICs */
        bad += cmp(s + 200, P, 40, 1, 30) != 0;   /* mixed */
        *cases += 3;
    }
    return bad;
}

static void test_fast_exact(void)
{
    int cases = 0, bad = random_flow_cases(fast_vs_general, 9, &cases);
    CHECK_MSG(bad == 0, "%d of %d random flow sets differ", bad, cases);
    uint64_t joins = sat_joins_seen;
    CHECK_MSG(joins > 100, "S was joined only %llu times", (unsigned long long)joins);
    cases = 0;
    bad = random_flow_cases(nic_bound_vs_general, 9, &cases);
    CHECK_MSG(bad == 0, "%d of %d random NIC-bound flow sets differ", bad, cases);
    CHECK_MSG(sat_joins_seen - joins > 1000, "S was joined only %llu times in NIC-bound sets",
              (unsigned long long)(sat_joins_seen - joins));
    cases = 0;
    bad = random_flow_cases(shapes_vs_general, 9, &cases);
    CHECK_MSG(bad == 0, "%d of %d random flow sets of few NIC shapes differ", bad, cases);
}

/* S by hand: a NIC of 1 saturated by its one flow (rate 1, ps link of 10 far from
 * full) joins S; 19 flows from fast NICs then bring the ps level to 10 / 20 = 0.5, below
 * its rate, so it must leave S and get 0.5; once they finish it is back at 1. Every
 * step against the general solve, and the completion time worked out by hand:
 * 100 bytes = 1 x 1 s + 0.5 x 2 s (the others' 1 byte at 0.5) + 1 x 98 s -> t = 101. */
static void test_sat_leaves(void)
{
    sim_net *n[2] = {sim_net_new(), sim_net_new()};
    sim_net_fast_enable(n[1], 0);
    int ga[2], ok = 1;
    double ra[2][3], tn[2][3];
    for (int i = 0; i < 2; i++) {
        int ps = sim_net_link_add(n[i], 10, 0), nic = sim_net_link_add(n[i], 1, 1);
        int l[2] = {ps, nic};
        ga[i] = sim_net_group_add(n[i], l, NULL, 2, 100, 1);
        ra[i][0] = sim_net_rate(n[i], ga[i]);
        const sim_net_done *d;
        ok &= sim_net_advance(n[i], 1, &d) == 0;
        for (int k = 0; k < 19; k++) {
            int lk[2] = {ps, sim_net_link_add(n[i], 100, 1)};
            sim_net_group_add(n[i], lk, NULL, 2, 1, 2 + k);
        }
        ra[i][1] = sim_net_rate(n[i], ga[i]);
        tn[i][0] = sim_net_next(n[i]);
        ok &= sim_net_advance(n[i], tn[i][0], &d) == 19;
        ra[i][2] = sim_net_rate(n[i], ga[i]);
        tn[i][1] = sim_net_next(n[i]);
        ok &= sim_net_advance(n[i], tn[i][1], &d) == 1 && d[0].cookie == 1;
    }
    CHECK(ok);
    CHECK_NEAR(ra[0][0], 1, 1e-12);
    CHECK_NEAR(ra[0][1], 0.5, 1e-12);
    CHECK_NEAR(ra[0][2], 1, 1e-12);
    CHECK_NEAR(tn[0][0], 3, 1e-9);
    CHECK_NEAR(tn[0][1], 101, 1e-9);
    for (int k = 0; k < 3; k++) CHECK(REL(ra[0][k], ra[1][k]));
    CHECK(REL(tn[0][0], tn[1][0]) && REL(tn[0][1], tn[1][1]));
    CHECK_MSG(sim_net_sat_joins(n[0]) >= 2 && sim_net_sat_joins(n[1]) == 0, "joins %llu, %llu",
              (unsigned long long)sim_net_sat_joins(n[0]), (unsigned long long)sim_net_sat_joins(n[1]));
    sim_net_free(n[0]);
    sim_net_free(n[1]);
}

/* Twins (sim_net_twin + sim_net_cohort_add, or its plan form): ps links in classes of equal capacity, each
 * cohort sending equal bytes to every link of the classes it uses, must give bit for bit
 * the same completion times, reports (cookies, in the same order) and solve counts as
 * the plain per-link groups, with tight NICs (the candidate set in use) and loose ones.
 * Returns the number of mismatches. */
static int twins_vs_plain(uint64_t seed, int P, int cohorts, double nic_lo, double nic_hi)
{
    dp_rng r;
    dp_rng_seed(&r, seed);
    sim_net *a = sim_net_new(), *b = sim_net_new();
    int ps[64], cls[64], n_cls = 1 + (int)(dp_rng_next(&r) % (unsigned)P);
    double ccap[64];
    for (int c = 0; c < n_cls; c++) ccap[c] = 1 + 9 * dp_rng_uniform(&r);
    for (int p = 0; p < P; p++) {
        cls[p] = p < n_cls ? p : (int)(dp_rng_next(&r) % (unsigned)n_cls);
        ps[p] = sim_net_link_add(a, ccap[cls[p]], 0);
        if (sim_net_link_add(b, ccap[cls[p]], 0) != ps[p]) return 1;
    }
    for (int p = 0; p < P; p++)
        for (int q = 0; q < p; q++)
            if (cls[q] == cls[p]) {
                sim_net_twin(a, ps[p], ps[q]);
                break;
            }
    int started = 0, bad = 0;
    double t = 0;
    while (started < cohorts || sim_net_active(a) || sim_net_active(b)) {
        int burst = started < cohorts ? 1 + (int)(dp_rng_next(&r) % 3) : 0;
        for (int c = 0; c < burst && started < cohorts; c++, started++) {
            double cap = nic_lo + (nic_hi - nic_lo) * dp_rng_uniform(&r);
            int na = sim_net_link_add(a, cap, 1), nb = sim_net_link_add(b, cap, 1);
            bad += na != nb;
            double k = (double)(1 + dp_rng_next(&r) % 4), cb[64];
            int use[64], links[64], np = 0;
            int64_t cookies[64];
            double bytes[64];
            for (int q = 0; q < n_cls; q++) {
                use[q] = dp_rng_uniform(&r) >= 0.3;
                cb[q] = 1 + 99 * dp_rng_uniform(&r);
            }
            for (int p = 0; p < P; p++) {
                if (!use[cls[p]]) continue;
                links[np] = ps[p];
                bytes[np] = cb[cls[p]];
                cookies[np++] = started * 100 + p;
                int lb[2] = {ps[p], nb};
                double w[2] = {k, 1};
                sim_net_group_add(b, lb, w, 2, cb[cls[p]], started * 100 + p);
            }
            if (np && dp_rng_uniform(&r) < 0.5) {
                sim_net_cohort_add(a, na, links, bytes, cookies, np, k);
            } else if (np) {
                /* the same through a plan (cookies relative to a base) */
                for (int i = 0; i < np; i++) cookies[i] -= started * 100;
                int pl = sim_net_plan_add(a, links, bytes, cookies, np);
                sim_net_cohort_add_plan(a, na, pl, started * 100, k);
            }
        }
        double ta = sim_net_next(a), tb = sim_net_next(b);
        if (ta != tb) bad++;
        if (!isfinite(ta)) break;
        double tn = started < cohorts && dp_rng_uniform(&r) < 0.5 ? t + (ta - t) * dp_rng_uniform(&r) : ta;
        const sim_net_done *da, *db;
        int nda = sim_net_advance(a, tn, &da);
        int ndb = sim_net_advance(b, tn, &db);
        if (nda != ndb) {
            bad++;
        } else {
            for (int i = 0; i < nda; i++) bad += da[i].cookie != db[i].cookie;
        }
        t = tn;
        if (bad) break;
    }
    bad += sim_net_solves(a) != sim_net_solves(b);
    sim_net_free(a);
    sim_net_free(b);
    return bad;
}

static void test_twins_exact(void)
{
    int cases = 0, bad = random_flow_cases(twins_vs_plain, 15, &cases);
    CHECK_MSG(bad == 0, "%d of %d random twin flow sets differ", bad, cases);
}

static void test_completion(void)
{
    /* 10 B and 20 B share 10 B/s: first done at t=2, then the second alone: t=3 */
    sim_net *n = sim_net_new();
    int A = sim_net_link_add(n, 10, 0);
    int la[] = {A};
    sim_net_group_add(n, la, NULL, 1, 10, 7);
    sim_net_group_add(n, la, NULL, 1, 20, 8);
    CHECK_NEAR(sim_net_next(n), 2, 1e-9);
    const sim_net_done *d;
    int k = sim_net_advance(n, 2, &d);
    CHECK(k == 1 && d[0].cookie == 7);
    CHECK_NEAR(sim_net_next(n), 3, 1e-9);
    k = sim_net_advance(n, 3, &d);
    CHECK(k == 1 && d[0].cookie == 8);
    CHECK(isinf(sim_net_next(n)) && sim_net_active(n) == 0);
    /* simultaneous finishes come back in start order */
    sim_net_group_add(n, la, NULL, 1, 5, 1);
    sim_net_group_add(n, la, NULL, 1, 5, 2);
    sim_net_group_add(n, la, NULL, 1, 5, 3);
    k = sim_net_advance(n, sim_net_next(n), &d);
    CHECK(k == 3 && d[0].cookie == 1 && d[1].cookie == 2 && d[2].cookie == 3);
    sim_net_free(n);
}

static void test_heap(void)
{
    sim_heap h;
    sim_heap_init(&h);
    dp_rng r;
    dp_rng_seed(&r, 3);
    for (int i = 0; i < 100000; i++) sim_heap_push(&h, (int64_t)dp_rng_below(&r, 1000), 0, i, 0);
    sim_event e, prev = {-1, 0, 0, 0, 0};
    int ok = 1, n = 0;
    while (sim_heap_pop(&h, &e)) {
        if (e.t < prev.t || (e.t == prev.t && e.seq < prev.seq)) ok = 0;
        prev = e;
        n++;
    }
    CHECK(ok && n == 100000);
    CHECK(sim_heap_top_time(&h) == INT64_MAX);
    sim_heap_release(&h);
}

/* The FIFO beside the heap: interleaved pushes at a clock plus a constant delay (FIFO)
 * and at random delays (heap), popped while pushing, give exactly the heap-only order. */
static void test_heap_fifo(void)
{
    sim_heap a, b;
    sim_heap_init(&a);
    sim_heap_init(&b);
    dp_rng r;
    dp_rng_seed(&r, 5);
    int64_t now = 0;
    int ok = 1, n = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t what = (uint32_t)dp_rng_below(&r, 4);
        if (what == 0) {
            int64_t d = (int64_t)dp_rng_below(&r, 100);
            sim_heap_push(&a, now + d, 1, i, 0);
            sim_heap_push(&b, now + d, 1, i, 0);
        } else if (what == 1) {
            sim_heap_push(&a, now + 7, 2, i, 0);
            sim_heap_push_fifo(&b, now + 7, 2, i, 0);
        } else {
            sim_event x, y;
            int ga = sim_heap_pop(&a, &x), gb = sim_heap_pop(&b, &y);
            if (ga != gb || sim_heap_top_time(&a) != sim_heap_top_time(&b)) ok = 0;
            if (!ga) continue;
            if (x.t != y.t || x.seq != y.seq || x.type != y.type || x.a != y.a) ok = 0;
            now = x.t;
            n++;
        }
    }
    sim_event x, y;
    while (sim_heap_pop(&a, &x)) {
        if (!sim_heap_pop(&b, &y) || x.seq != y.seq || x.t != y.t) ok = 0;
        n++;
    }
    CHECK(ok && n > 100000);
    CHECK(sim_heap_top_time(&b) == INT64_MAX && !sim_heap_pop(&b, &y));
    sim_heap_release(&a);
    sim_heap_release(&b);
}

static void test_units(void)
{
    char err[DP_ERRLEN];
    double v;
    CHECK(dp_parse_bytes("100MB", "--model-bytes", &v, err) == 0 && v == 100e6);
    CHECK(dp_parse_bytes("1MiB", "--model-bytes", &v, err) == 0 && v == 1048576);
    CHECK(dp_parse_bytes("4 KiB", "--model-bytes", &v, err) == 0 && v == 4096);
    CHECK(dp_parse_bytes("12", "--model-bytes", &v, err) == 0 && v == 12);
    CHECK(dp_parse_bytes("10Mb", "--model-bytes", &v, err) == DP_EINVAL && strstr(err, "unknown size unit \"Mb\""));
    CHECK(dp_parse_bytes("-5MB", "--model-bytes", &v, err) == DP_EINVAL && strstr(err, "--model-bytes"));
    CHECK(dp_parse_bytes("abc", "--model-bytes", &v, err) == DP_EINVAL && strstr(err, "not a size"));
    CHECK(dp_parse_bandwidth("10Gbit", "--bandwidth", &v, err) == 0 && REL(v, 1.25e9));
    CHECK(dp_parse_bandwidth("100 Mbit", "--bandwidth", &v, err) == 0 && REL(v, 12.5e6));
    CHECK(dp_parse_bandwidth("125MB/s", "--bandwidth", &v, err) == 0 && REL(v, 125e6));
    CHECK(dp_parse_bandwidth("10", "--bandwidth", &v, err) == DP_EINVAL && strstr(err, "needs a unit"));
    CHECK(dp_parse_bandwidth("10Gbt", "--bandwidth", &v, err) == DP_EINVAL && strstr(err, "Gbt"));
    CHECK(dp_parse_bandwidth("0Gbit", "--bandwidth", &v, err) == DP_EINVAL && strstr(err, "positive"));
    CHECK(dp_parse_time("50us", "--latency", &v, err) == 0 && REL(v, 50e-6));
    CHECK(dp_parse_time("1.5s", "--latency", &v, err) == 0 && REL(v, 1.5));
    CHECK(dp_parse_time("200ns", "--latency", &v, err) == 0 && REL(v, 200e-9));
    CHECK(dp_parse_time("0", "--latency", &v, err) == 0 && v == 0);
    CHECK(dp_parse_time("100", "--latency", &v, err) == DP_EINVAL && strstr(err, "needs a unit"));
    CHECK(dp_parse_time("5 hours", "--latency", &v, err) == DP_EINVAL && strstr(err, "hours"));
    CHECK(dp_parse_time("nan", "--latency", &v, err) == DP_EINVAL);
    sim_dist d;
    CHECK(sim_parse_dist("lognormal:mean=100ms,sigma=0.3", &d, err) == 0 && d.kind == SIM_DIST_LOGNORMAL &&
          REL(d.mean, 0.1) && REL(d.sigma, 0.3));
    CHECK(sim_parse_dist("normal:mean=10ms,sd=1ms", &d, err) == 0 && REL(d.sd, 1e-3));
    CHECK(sim_parse_dist("exponential:mean=2s", &d, err) == 0 && d.kind == SIM_DIST_EXPONENTIAL);
    CHECK(sim_parse_dist("constant:mean=100ms", &d, err) == 0 && d.kind == SIM_DIST_CONSTANT);
    CHECK(sim_parse_dist("gamma:mean=1s", &d, err) == DP_EINVAL && strstr(err, "unknown distribution \"gamma\""));
    CHECK(sim_parse_dist("normal:mean=1s", &d, err) == DP_EINVAL && strstr(err, "sd=T"));
    CHECK(sim_parse_dist("constant:mean=100", &d, err) == DP_EINVAL && strstr(err, "needs a unit"));
    CHECK(sim_parse_dist("constant:mean=1s,sd=2s", &d, err) == DP_EINVAL && strstr(err, "unexpected"));
    CHECK(sim_parse_dist("lognormal:mean=1s,sigma=x", &d, err) == DP_EINVAL && strstr(err, "sigma"));
    CHECK(sim_parse_dist("constant", &d, err) == DP_EINVAL);
    run_straggler s;
    CHECK(sim_parse_straggler("worker:3x4", &s, err) == 0 && s.worker == 3 && s.factor == 4);
    CHECK(sim_parse_straggler("ps:3x4", &s, err) == DP_EINVAL && strstr(err, "worker:IxF"));
    CHECK(sim_parse_straggler("worker:3x", &s, err) == DP_EINVAL);
    sim_failure f;
    CHECK(sim_parse_failure("worker:7@step=50", &f, err) == 0 && f.task == 7 && f.at_step == 50 &&
          f.restart_s < 0);
    CHECK(sim_parse_failure("ps:0@t=2s,restart=500ms", &f, err) == 0 && REL(f.at_s, 2) &&
          REL(f.restart_s, 0.5));
    CHECK(sim_parse_failure("worker:7@when=5", &f, err) == DP_EINVAL && strstr(err, "--fail"));
    CHECK(sim_parse_failure("chief:0@step=1", &f, err) == DP_EINVAL);
    int level, sample;
    CHECK(sim_parse_trace_level("sample:8", &level, &sample, err) == 0 && level == SIM_TRACE_SAMPLE && sample == 8);
    CHECK(sim_parse_trace_level("most", &level, &sample, err) == DP_EINVAL && strstr(err, "--trace-level"));
    sim_config c;
    sim_config_init(&c);
    c.n_workers = 4;
    c.backup_workers = 4;
    CHECK(sim_config_check(&c, err) == DP_EINVAL && strstr(err, "--backup-workers"));
    c.backup_workers = 0;
    c.stragglers[c.n_stragglers++] = (run_straggler){9, 2};
    CHECK(sim_config_check(&c, err) == DP_EINVAL && strstr(err, "worker 9 does not exist"));
}

int main(void)
{
    test_maxmin();
    test_fast_exact();
    test_sat_leaves();
    test_twins_exact();
    test_completion();
    test_heap();
    test_heap_fifo();
    test_units();
    return CHECK_DONE();
}
