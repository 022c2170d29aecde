/* test_update.c — the sync accumulator (mean in worker order, stale and duplicate drops,
 * backup workers, the token counter, workers beyond the first 64), async staleness, and
 * the SSP gate. */
#include <stdlib.h>
#include <string.h>

#include "cluster/update.h"
#include "common/dp.h"
#include "tests/check.h"

static void test_parse(void)
{
    update_mode m;
    CHECK(update_mode_parse("sync", &m) == 0 && m == MODE_SYNC);
    CHECK(update_mode_parse("async", &m) == 0 && m == MODE_ASYNC);
    CHECK(update_mode_parse("ssp", &m) == 0 && m == MODE_SSP);
    CHECK(update_mode_parse("bsp", &m) == DP_EINVAL);
    CHECK(!strcmp(update_mode_name(MODE_SSP), "ssp") && !strcmp(update_mode_name(MODE_SYNC), "sync"));
    stale_stats s = { 0 };
    CHECK(stale_stats_mean(&s) == 0.0);
    stale_stats_add(&s, 3);
    stale_stats_add(&s, 0);
    CHECK(s.n == 2 && s.sum == 3 && s.max == 3);
    CHECK_NEAR(stale_stats_mean(&s), 1.5, 1e-12);
}

/* Offers the three gradients in the given arrival order and takes the mean. */
static void mean_in_order(const float g[3][4], const int order[3], float out[4], int workers[3])
{
    sync_acc *a = sync_acc_new(3, 3, 4, 0);
    CHECK(sync_acc_offer(a, order[0], 0, g[order[0]]) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, order[1], 0, g[order[1]]) == SYNC_ACCUMULATED);
    CHECK(sync_acc_count(a) == 2);
    /* who the step still waits for: the one that has not offered */
    CHECK(sync_acc_holds(a, order[0]) && sync_acc_holds(a, order[1]) && !sync_acc_holds(a, order[2]));
    CHECK(!sync_acc_holds(a, -1) && !sync_acc_holds(a, 3));
    CHECK(sync_acc_offer(a, order[2], 0, g[order[2]]) == SYNC_READY);
    CHECK(sync_acc_take(a, out, workers) == 3);
    CHECK(sync_acc_step(a) == 1 && sync_acc_count(a) == 0);
    CHECK(!sync_acc_holds(a, order[0]));
    sync_acc_free(a);
}

static void test_sync_mean(void)
{
    /* float addition is not associative: 1e8 + 1 - 1e8 is 0 in this order, 1 in others */
    const float g[3][4] = { { 1e8f, 0.1f, 3.0f, -1.0f },
                            { 1.0f, 0.2f, 3.0f, 1e-8f },
                            { -1e8f, 0.3f, 3.0f, 1.0f } };
    const int orders[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
                               { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
    float ref[4];
    int w[3];
    mean_in_order(g, orders[0], ref, w);
    CHECK(w[0] == 0 && w[1] == 1 && w[2] == 2);
    /* summed in worker order: ((1e8 + 1) + -1e8) / 3 == 0 */
    CHECK(ref[0] == 0.0f);
    CHECK_NEAR(ref[1], 0.2, 1e-6);
    CHECK(ref[2] == 3.0f);
    for (int k = 1; k < 6; k++) {
        float out[4];
        mean_in_order(g, orders[k], out, w);
        CHECK_MSG(!memcmp(out, ref, sizeof ref), "arrival order %d%d%d differs", orders[k][0],
                  orders[k][1], orders[k][2]);
        CHECK(w[0] == 0 && w[1] == 1 && w[2] == 2);
    }
}

/* More than 64 workers (the accumulator keeps who offered as 64-bit words): 3 of 200
 * offer each step, arriving out of order and from words 0 to 3; the take names them in
 * ascending order and averages their gradients, step after step. */
static void test_sync_many_workers(void)
{
    sync_acc *a = sync_acc_new(200, 3, 2, 0);
    const int steps[3][3] = { { 150, 7, 130 }, { 199, 64, 63 }, { 128, 127, 0 } };
    for (int s = 0; s < 3; s++) {
        int sorted[3] = { steps[s][0], steps[s][1], steps[s][2] };
        for (int i = 0; i < 3; i++)   /* sorted by hand: the expectation, not the code's */
            for (int j = i + 1; j < 3; j++)
                if (sorted[j] < sorted[i]) {
                    int t = sorted[i];
                    sorted[i] = sorted[j];
                    sorted[j] = t;
                }
        float g[3][2], out[2];
        int w[3] = { -1, -1, -1 };
        for (int i = 0; i < 3; i++) {
            g[i][0] = (float)steps[s][i];
            g[i][1] = 1.0f;
            int want = i < 2 ? SYNC_ACCUMULATED : SYNC_READY;
            CHECK(sync_acc_offer(a, steps[s][i], s, g[i]) == want);
        }
        CHECK(sync_acc_holds(a, steps[s][0]) && !sync_acc_holds(a, 199 - s));
        CHECK(sync_acc_take(a, out, w) == 3);
        CHECK_MSG(w[0] == sorted[0] && w[1] == sorted[1] && w[2] == sorted[2], "step %d: workers %d %d %d", s,
                  w[0], w[1], w[2]);
        double mean = (steps[s][0] + steps[s][1] + steps[s][2]) / 3.0;
        CHECK_NEAR(out[0], mean, 1e-4);
        CHECK(out[1] == 1.0f);
        CHECK(sync_acc_step(a) == s + 1);
    }
    sync_acc_free(a);
}

/* Long gradients (the take is vectorised and goes a chunk at a time): every float of the
 * mean equals the plain loop's, sum in ascending worker order then one division, for
 * lengths around the vector block and the chunk, 2 to 5 workers, arrival in reverse. */
static void test_sync_mean_long(void)
{
    const size_t lens[] = { 1, 7, 8, 9, 2047, 2048, 2049, 100352 + 5 };
    dp_rng r;
    dp_rng_seed(&r, 7);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        size_t n = lens[li];
        /* lend: 0 every gradient copied, 1 every one lent (the ps), 2 mixed */
        for (int k = 2, lend = 0; k <= 5; lend = (lend + 1) % 3, k += !lend) {
            float *g = xmalloc((size_t)k * n * sizeof *g), *out = xmalloc(n * sizeof *out);
            for (size_t i = 0; i < (size_t)k * n; i++)   /* mixed signs and magnitudes */
                g[i] = (float)(dp_rng_uniform(&r) - 0.5) * (i % 3 ? 1e-3f : 1e4f);
            sync_acc *a = sync_acc_new(k, k, n, 0);
            for (int w = k - 1; w >= 0; w--) {
                const float *gw = g + (size_t)w * n;
                if (lend == 1 || (lend == 2 && w % 2)) sync_acc_offer_borrowed(a, w, 0, gw);
                else sync_acc_offer(a, w, 0, gw);
            }
            int workers[5];
            CHECK(sync_acc_take(a, out, workers) == k);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) {
                volatile float s = g[i];    /* volatile: one rounding per operation */
                for (int w = 1; w < k; w++) s += g[(size_t)w * n + i];
                float m = s / (float)k;
                if (memcmp(&m, &out[i], sizeof m)) bad++;
            }
            CHECK_MSG(bad == 0, "n %zu, %d workers (lent: %d): %zu floats differ from the plain loop", n, k, lend,
                      bad);
            sync_acc_free(a);
            free(g);
            free(out);
        }
    }
}

static void test_sync_drops(void)
{
    sync_acc *a = sync_acc_new(2, 2, 2, 10);
    CHECK(sync_acc_step(a) == 10);
    const float g0[2] = { 1, 2 }, g1[2] = { 3, 4 }, junk[2] = { 100, 100 };
    CHECK(sync_acc_offer(a, 0, 9, junk) == SYNC_STALE);
    CHECK(sync_acc_offer(a, 1, 10, g1) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, 1, 10, junk) == SYNC_DUPLICATE);
    CHECK(sync_acc_count(a) == 1);
    CHECK(sync_acc_offer(a, 0, 10, g0) == SYNC_READY);
    float m[2];
    int w[2];
    CHECK(sync_acc_take(a, m, w) == 2);
    CHECK(m[0] == 2.0f && m[1] == 3.0f && w[0] == 0 && w[1] == 1);
    CHECK(sync_acc_step(a) == 11);
    /* both workers may offer again at the new step */
    CHECK(sync_acc_offer(a, 0, 10, junk) == SYNC_STALE);
    CHECK(sync_acc_offer(a, 0, 11, g1) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, 1, 11, g1) == SYNC_READY);
    CHECK(sync_acc_take(a, m, w) == 2 && m[0] == 3.0f && m[1] == 4.0f);
    sync_acc_free(a);
    sync_acc_free(NULL);
}

/* A lent gradient is read at the take, not at the offer; a dropped one is not kept. */
static void test_sync_borrowed(void)
{
    sync_acc *a = sync_acc_new(3, 2, 2, 5);
    float g0[2] = { 1, 2 }, g1[2] = { 3, 4 }, junk[2] = { 100, 100 };
    CHECK(sync_acc_offer_borrowed(a, 0, 4, junk) == SYNC_STALE);
    CHECK(sync_acc_offer_borrowed(a, 1, 5, g1) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer_borrowed(a, 1, 5, junk) == SYNC_DUPLICATE);
    g1[1] = 6;   /* still the caller's: the take reads it as it is then */
    CHECK(sync_acc_offer_borrowed(a, 0, 5, g0) == SYNC_READY);
    CHECK(sync_acc_offer_borrowed(a, 2, 5, junk) == SYNC_STALE);   /* the step is full */
    float m[2];
    int w[3];
    CHECK(sync_acc_take(a, m, w) == 2);
    CHECK(m[0] == 2.0f && m[1] == 4.0f && w[0] == 0 && w[1] == 1);
    /* lent and copied in one step */
    CHECK(sync_acc_offer(a, 2, 6, g0) == SYNC_ACCUMULATED);
    g0[0] = 5;
    CHECK(sync_acc_offer_borrowed(a, 1, 6, g0) == SYNC_READY);
    CHECK(sync_acc_take(a, m, w) == 2 && m[0] == 3.0f && m[1] == 2.0f && w[0] == 1 && w[1] == 2);
    /* rebound: the take reads the new place (the ps moving a gradient out of a ring),
     * a worker holding none is left alone */
    float moved[2] = { 7, 8 };
    CHECK(sync_acc_offer_borrowed(a, 2, 7, junk) == SYNC_ACCUMULATED);
    sync_acc_rebind(a, 2, moved);
    sync_acc_rebind(a, 0, junk);
    CHECK(sync_acc_offer_borrowed(a, 1, 7, g1) == SYNC_READY);
    CHECK(sync_acc_take(a, m, w) == 2 && m[0] == 5.0f && m[1] == 7.0f);
    sync_acc_free(a);
}

static void test_sync_backup(void)
{
    /* 3 workers, 2 to aggregate: one backup worker per step */
    sync_acc *a = sync_acc_new(3, 2, 1, 0);
    const float g0[1] = { 1 }, g1[1] = { 2 }, g2[1] = { 4 };
    CHECK(sync_acc_offer(a, 2, 0, g2) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, 0, 0, g0) == SYNC_READY);
    /* a third gradient for a complete step is dropped, even before the take */
    CHECK(sync_acc_offer(a, 1, 0, g1) == SYNC_STALE);
    float m[1];
    int w[3];
    CHECK(sync_acc_take(a, m, w) == 2);
    CHECK(w[0] == 0 && w[1] == 2 && m[0] == 2.5f);
    /* the slow worker's gradient from step 0 arrives after the take: stale */
    CHECK(sync_acc_offer(a, 1, 0, g1) == SYNC_STALE);
    CHECK(sync_acc_count(a) == 0 && sync_acc_step(a) == 1);
    CHECK(sync_acc_offer(a, 1, 1, g1) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, 2, 1, g2) == SYNC_READY);
    CHECK(sync_acc_take(a, m, w) == 2 && w[0] == 1 && w[1] == 2 && m[0] == 3.0f);
    sync_acc_free(a);

    /* R == 1: every accepted gradient is ready at once */
    a = sync_acc_new(4, 1, 1, 0);
    CHECK(sync_acc_offer(a, 3, 0, g2) == SYNC_READY);
    CHECK(sync_acc_take(a, m, w) == 1 && w[0] == 3 && m[0] == 4.0f);
    sync_acc_free(a);
}

static void test_sync_counter(void)
{
    /* the global-step token: an accumulator with no floats */
    sync_acc *a = sync_acc_new(2, 2, 0, 5);
    CHECK(sync_acc_offer(a, 0, 4, NULL) == SYNC_STALE);
    CHECK(sync_acc_offer(a, 0, 5, NULL) == SYNC_ACCUMULATED);
    CHECK(sync_acc_offer(a, 0, 5, NULL) == SYNC_DUPLICATE);
    CHECK(sync_acc_offer(a, 1, 5, NULL) == SYNC_READY);
    int w[2];
    CHECK(sync_acc_take(a, NULL, w) == 2 && w[0] == 0 && w[1] == 1);
    CHECK(sync_acc_step(a) == 6);
    sync_acc_free(a);
}

static void test_async(void)
{
    async_var v = { 0 };
    CHECK(async_apply(&v, 0) == 0 && v.version == 1);
    CHECK(async_apply(&v, 0) == 1 && v.version == 2);  /* read before the first apply */
    CHECK(async_apply(&v, 1) == 1);
    CHECK(async_apply(&v, 0) == 3);
    CHECK(async_apply(&v, 4) == 0 && v.version == 5);
    CHECK(v.stats.n == 5 && v.stats.sum == 5 && v.stats.max == 3);
    CHECK_NEAR(stale_stats_mean(&v.stats), 1.0, 1e-12);
}

static void test_ssp(void)
{
    ssp_gate *g = ssp_gate_new(3, 1);
    CHECK(ssp_gate_min(g) == 0);
    CHECK(ssp_gate_may_start(g, 0) && ssp_gate_may_start(g, 1));
    CHECK(!ssp_gate_may_start(g, 2));
    CHECK(ssp_gate_clock(g, 0, 1) == 0);
    CHECK(ssp_gate_clock(g, 0, 2) == 0);
    CHECK(!ssp_gate_may_start(g, 2));  /* worker 0 is blocked on workers 1 and 2 */
    CHECK(ssp_gate_clock(g, 1, 1) == 0);
    CHECK(ssp_gate_clock(g, 2, 1) == 1);
    CHECK(ssp_gate_may_start(g, 2) && !ssp_gate_may_start(g, 3));
    CHECK(ssp_gate_clock(g, 0, 1) == 1 && ssp_gate_clock(g, 0, 0) == 1);  /* ignored */
    CHECK(ssp_gate_clock(g, 1, 3) == 1);
    /* worker 2 finishes early: it no longer holds the others back */
    ssp_gate_retire(g, 2);
    CHECK(ssp_gate_min(g) == 2);
    CHECK(ssp_gate_may_start(g, 3) && !ssp_gate_may_start(g, 4));
    ssp_gate_retire(g, 2);  /* twice is harmless */
    CHECK(ssp_gate_clock(g, 2, 9) == 2);  /* a retired worker's clock does not count */
    CHECK(ssp_gate_clock(g, 0, 4) == 3);
    ssp_gate_retire(g, 1);
    CHECK(ssp_gate_min(g) == 4);
    ssp_gate_retire(g, 0);
    CHECK(ssp_gate_may_start(g, 1000));
    /* none active: the minimum is the highest clock any worker reported, worker 2's 9 */
    CHECK_MSG(ssp_gate_min(g) == 9, "all retired: the minimum is the highest clock, 9 (got %lld)",
              (long long)ssp_gate_min(g));
    ssp_gate_free(g);
    ssp_gate_free(NULL);

    /* rejoining (ssp_gate_rejoin): clocks 5, 7 and 3, staleness 1 */
    g = ssp_gate_new(3, 1);
    CHECK(ssp_gate_clock(g, 0, 5) == 0 && ssp_gate_clock(g, 1, 7) == 0 && ssp_gate_clock(g, 2, 3) == 3);
    /* an active worker reconnecting (a lost ps): its clock moves up, never down */
    CHECK(ssp_gate_rejoin(g, 2, 4) == 4 && ssp_gate_min(g) == 4);
    CHECK(ssp_gate_rejoin(g, 2, 2) == 4 && ssp_gate_min(g) == 4);
    /* worker 2 lost (the others' minimum is then worker 0's 5); while it is away worker 0
     * reaches 8. Its process restarted (counting from 0), it comes back level with the
     * slowest of the others, worker 1's 7, and holds the others at 7 + 1 again */
    ssp_gate_retire(g, 2);
    CHECK(ssp_gate_min(g) == 5);
    CHECK(ssp_gate_clock(g, 0, 8) == 7 && ssp_gate_may_start(g, 8));
    CHECK_MSG(ssp_gate_rejoin(g, 2, 0) == 7, "a restarted worker rejoins at the others' slowest clock, 7");
    CHECK(ssp_gate_min(g) == 7 && ssp_gate_may_start(g, 8) && !ssp_gate_may_start(g, 9));
    CHECK(ssp_gate_clock(g, 2, 8) == 7 && ssp_gate_clock(g, 1, 9) == 8 && ssp_gate_min(g) == 8);
    /* worker 1 lost ahead of the others (9 against 8): it comes back at its own 9 */
    ssp_gate_retire(g, 1);
    CHECK(ssp_gate_rejoin(g, 1, 0) == 9 && ssp_gate_min(g) == 8);
    /* or at what it says it completed, when that is more (a lost ps's session restored) */
    ssp_gate_retire(g, 1);
    CHECK(ssp_gate_rejoin(g, 1, 12) == 12 && ssp_gate_min(g) == 8);
    /* every other worker retired: it comes back at its own clock */
    ssp_gate_retire(g, 0);
    ssp_gate_retire(g, 1);
    ssp_gate_retire(g, 2);
    CHECK(ssp_gate_rejoin(g, 0, 0) == 8 && ssp_gate_min(g) == 8 && !ssp_gate_may_start(g, 10));
    ssp_gate_free(g);

    /* staleness 0 is bulk-synchronous: nobody starts step s+1 before all finished s */
    g = ssp_gate_new(2, 0);
    CHECK(ssp_gate_may_start(g, 0) && !ssp_gate_may_start(g, 1));
    CHECK(ssp_gate_clock(g, 1, 1) == 0 && !ssp_gate_may_start(g, 1));
    CHECK(ssp_gate_clock(g, 0, 1) == 1 && ssp_gate_may_start(g, 1) && !ssp_gate_may_start(g, 2));
    ssp_gate_free(g);

    /* many workers advancing in rounds: the minimum follows the slowest */
    g = ssp_gate_new(100, 2);
    for (int r = 1; r <= 5; r++) {
        for (int w = 99; w >= 0; w--) {
            int64_t m = ssp_gate_clock(g, w, r);
            if (w > 0) CHECK(m == r - 1);
            else CHECK(m == r);
        }
    }
    CHECK(ssp_gate_min(g) == 5 && ssp_gate_may_start(g, 7) && !ssp_gate_may_start(g, 8));
    ssp_gate_free(g);
}

int main(void)
{
    test_parse();
    test_sync_mean();
    test_sync_mean_long();
    test_sync_many_workers();
    test_sync_drops();
    test_sync_borrowed();
    test_sync_backup();
    test_sync_counter();
    test_async();
    test_ssp();
    return CHECK_DONE();
}
