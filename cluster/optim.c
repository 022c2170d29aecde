/* optim.c — the optimizers a ps applies to its shards, with TensorFlow's update rules
 * (ApplyGradientDescent, ApplyMomentum without Nesterov, ApplyAdagrad). All arithmetic is
 * float32, one element at a time in index order, so the real runtime and the simulator
 * produce the same bits. Pure math: no state beyond the caller's slot arrays. */
#include "cluster/optim.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "common/dp.h"

void optim_conf_init(optim_conf *c, opt_kind kind, float lr)
{
    assert(((void)"optim_conf_init: NULL conf", c));
    c->kind = kind;
    c->lr = lr;
    c->momentum = 0.9f;
    c->adagrad_init = 0.1f;
}

int optim_parse(const char *s, opt_kind *out)
{
    if (!s) return DP_EINVAL;
    if (!strcmp(s, "sgd")) *out = OPT_SGD;
    else if (!strcmp(s, "momentum")) *out = OPT_MOMENTUM;
    else if (!strcmp(s, "adagrad")) *out = OPT_ADAGRAD;
    else return DP_EINVAL;
    return DP_OK;
}

const char *optim_name(opt_kind k)
{
    switch (k) {
    case OPT_SGD: return "sgd";
    case OPT_MOMENTUM: return "momentum";
    case OPT_ADAGRAD: return "adagrad";
    }
    return "?";
}

const char *optim_slot_name(opt_kind k)
{
    return k == OPT_MOMENTUM ? "Momentum" : k == OPT_ADAGRAD ? "Adagrad" : NULL;
}

int optim_slot_width(opt_kind k)
{
    return k == OPT_SGD ? 0 : 1;
}

void optim_slot_init(const optim_conf *c, float *slot, size_t n)
{
    assert(((void)"optim_slot_init: NULL conf", c));
    if (c->kind == OPT_SGD || n == 0) return;
    assert(((void)"optim_slot_init: NULL slot", slot));
    float v = c->kind == OPT_ADAGRAD ? c->adagrad_init : 0.0f;
    for (size_t i = 0; i < n; i++) slot[i] = v;
}

/* In blocks of DP_VEC_BLOCK (common/dp.h): vectorised, bit for bit the plain loop. */
DP_VEC_CLONES
void optim_apply(const optim_conf *c, float *restrict var, float *restrict slot, const float *restrict g,
                 size_t n)
{
    assert(((void)"optim_apply: NULL argument", c && (n == 0 || (var && g))));
    const float lr = c->lr;
    size_t i = 0;
    switch (c->kind) {
    case OPT_SGD:
        for (; i + DP_VEC_BLOCK <= n; i += DP_VEC_BLOCK)
            for (size_t j = i; j < i + DP_VEC_BLOCK; j++) var[j] -= lr * g[j];
        for (; i < n; i++) var[i] -= lr * g[i];
        break;
    case OPT_MOMENTUM: {
        assert(((void)"optim_apply: momentum needs a slot", n == 0 || slot));
        const float m = c->momentum;
        for (; i + DP_VEC_BLOCK <= n; i += DP_VEC_BLOCK)
            for (size_t j = i; j < i + DP_VEC_BLOCK; j++) {
                slot[j] = m * slot[j] + g[j];
                var[j] -= lr * slot[j];
            }
        for (; i < n; i++) {
            slot[i] = m * slot[i] + g[i];
            var[i] -= lr * slot[i];
        }
        break;
    }
    case OPT_ADAGRAD:
        assert(((void)"optim_apply: adagrad needs a slot", n == 0 || slot));
        for (; i < n; i++) {
            slot[i] += g[i] * g[i];
            var[i] -= lr * g[i] / sqrtf(slot[i]);
        }
        break;
    default:
        assert(((void)"optim_apply: unknown optimizer", 0));
    }
}
