/* test_optim.c — sgd, momentum and adagrad against hand-computed TensorFlow updates. */
#include <string.h>

#include "cluster/optim.h"
#include "common/dp.h"
#include "tests/check.h"

#define TOL 1e-6

static void test_conf(void)
{
    optim_conf c;
    optim_conf_init(&c, OPT_MOMENTUM, 0.25f);
    CHECK(c.kind == OPT_MOMENTUM && c.lr == 0.25f && c.momentum == 0.9f && c.adagrad_init == 0.1f);
    opt_kind k;
    CHECK(optim_parse("sgd", &k) == 0 && k == OPT_SGD);
    CHECK(optim_parse("momentum", &k) == 0 && k == OPT_MOMENTUM);
    CHECK(optim_parse("adagrad", &k) == 0 && k == OPT_ADAGRAD);
    CHECK(optim_parse("adam", &k) == DP_EINVAL);
    CHECK(optim_parse(NULL, &k) == DP_EINVAL);
    CHECK(!strcmp(optim_name(OPT_SGD), "sgd") && !strcmp(optim_name(OPT_ADAGRAD), "adagrad") &&
          !strcmp(optim_name(OPT_MOMENTUM), "momentum"));
    CHECK(optim_slot_width(OPT_SGD) == 0 && optim_slot_width(OPT_MOMENTUM) == 1 &&
          optim_slot_width(OPT_ADAGRAD) == 1);
}

static void test_sgd(void)
{
    optim_conf c;
    optim_conf_init(&c, OPT_SGD, 0.1f);
    float var[2] = { 1.0f, -2.0f };
    const float g1[2] = { 0.5f, 1.0f }, g2[2] = { -1.0f, 0.25f };
    optim_slot_init(&c, NULL, 2); /* no slot for sgd */
    optim_apply(&c, var, NULL, g1, 2);
    CHECK_NEAR(var[0], 0.95, TOL);
    CHECK_NEAR(var[1], -2.1, TOL);
    optim_apply(&c, var, NULL, g2, 2);
    CHECK_NEAR(var[0], 1.05, TOL);
    CHECK_NEAR(var[1], -2.125, TOL);
    optim_apply(&c, var, NULL, NULL, 0); /* empty apply is a no-op */
    CHECK_NEAR(var[0], 1.05, TOL);
}

static void test_momentum(void)
{
    optim_conf c;
    optim_conf_init(&c, OPT_MOMENTUM, 0.1f);
    float var[1] = { 1.0f }, slot[1] = { 42.0f };
    optim_slot_init(&c, slot, 1);
    CHECK(slot[0] == 0.0f);
    const float g[1] = { 1.0f };
    /* accum = 0.9*accum + g; var -= lr*accum */
    optim_apply(&c, var, slot, g, 1);
    CHECK_NEAR(slot[0], 1.0, TOL);
    CHECK_NEAR(var[0], 0.9, TOL);
    optim_apply(&c, var, slot, g, 1);
    CHECK_NEAR(slot[0], 1.9, TOL);
    CHECK_NEAR(var[0], 0.71, TOL);
    optim_apply(&c, var, slot, g, 1);
    CHECK_NEAR(slot[0], 2.71, TOL);
    CHECK_NEAR(var[0], 0.439, TOL);

    /* a custom momentum, and a gradient that reverses */
    c.momentum = 0.5f;
    float v2[2] = { 0.0f, 0.0f }, s2[2];
    optim_slot_init(&c, s2, 2);
    const float ga[2] = { 2.0f, -1.0f }, gb[2] = { -2.0f, -1.0f };
    optim_apply(&c, v2, s2, ga, 2);  /* s = 2, -1;  v = -0.2, 0.1 */
    optim_apply(&c, v2, s2, gb, 2);  /* s = -1, -1.5; v = -0.1, 0.25 */
    CHECK_NEAR(s2[0], -1.0, TOL);
    CHECK_NEAR(s2[1], -1.5, TOL);
    CHECK_NEAR(v2[0], -0.1, TOL);
    CHECK_NEAR(v2[1], 0.25, TOL);
}

static void test_adagrad(void)
{
    optim_conf c;
    optim_conf_init(&c, OPT_ADAGRAD, 0.1f);
    float var[1] = { 1.0f }, slot[1];
    optim_slot_init(&c, slot, 1);
    CHECK(slot[0] == 0.1f);
    /* accum += g*g; var -= lr*g/sqrt(accum) */
    const float g1[1] = { 1.0f }, g2[1] = { 2.0f }, g3[1] = { -1.0f };
    optim_apply(&c, var, slot, g1, 1);
    CHECK_NEAR(slot[0], 1.1, TOL);
    CHECK_NEAR(var[0], 0.9046537410754407, TOL);
    optim_apply(&c, var, slot, g2, 1);
    CHECK_NEAR(slot[0], 5.1, TOL);
    CHECK_NEAR(var[0], 0.8160922525214311, TOL);
    optim_apply(&c, var, slot, g3, 1);
    CHECK_NEAR(slot[0], 6.1, TOL);
    CHECK_NEAR(var[0], 0.8565810690303769, TOL);

    optim_conf_init(&c, OPT_ADAGRAD, 0.5f);
    float v2[2] = { 2.0f, -1.0f }, s2[2];
    optim_slot_init(&c, s2, 2);
    const float ga[2] = { 0.5f, -0.5f }, gb[2] = { 0.5f, 1.0f };
    optim_apply(&c, v2, s2, ga, 2);
    CHECK_NEAR(v2[0], 1.5774228726357418, TOL);
    CHECK_NEAR(v2[1], -0.5774228726357418, TOL);
    optim_apply(&c, v2, s2, gb, 2);
    CHECK_NEAR(s2[0], 0.6, TOL);
    CHECK_NEAR(s2[1], 1.35, TOL);
    CHECK_NEAR(v2[0], 1.2546742604517904, TOL);
    CHECK_NEAR(v2[1], -1.007754355547677, TOL);
}

/* The blocked loops (vectorised) give, bit for bit, the plain element-by-element update,
 * over a length that is not a multiple of the block, with and without a slot. */
static void test_long_vectors(void)
{
    enum { N = 1003 };
    static float var[N], ref[N], slot[N], sref[N], g[N];
    for (int kind = 0; kind < 2; kind++) {
        optim_conf c;
        optim_conf_init(&c, kind ? OPT_MOMENTUM : OPT_SGD, 0.037f);
        for (int i = 0; i < N; i++) {
            var[i] = ref[i] = 0.25f * (float)(i % 17) - 1.0f;
            slot[i] = sref[i] = 0.01f * (float)(i % 5);
            g[i] = 0.3f * (float)((i * 7) % 11) - 1.3f;
        }
        for (int round = 0; round < 3; round++) {
            optim_apply(&c, var, kind ? slot : NULL, g, N);
            for (int i = 0; i < N; i++) {
                if (kind) {
                    sref[i] = c.momentum * sref[i] + g[i];
                    ref[i] -= c.lr * sref[i];
                } else {
                    ref[i] -= c.lr * g[i];
                }
            }
        }
        int same = !memcmp(var, ref, sizeof var) && (!kind || !memcmp(slot, sref, sizeof slot));
        CHECK_MSG(same, "%s over %d floats differs from the plain loop", kind ? "momentum" : "sgd", N);
    }
}

int main(void)
{
    test_conf();
    test_sgd();
    test_momentum();
    test_adagrad();
    test_long_vectors();
    return CHECK_DONE();
}
