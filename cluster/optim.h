/* optim.h — the optimizers applied on the ps, with TensorFlow's update rules:
 *   sgd:      var -= lr * g
 *   momentum: accum = momentum * accum + g;  var -= lr * accum         (momentum 0.9)
 *   adagrad:  accum += g*g;  var -= lr * g / sqrt(accum)               (accum starts at 0.1)
 * Per-shard state (the slot) lives beside each variable on its ps. Pure math. */
#ifndef CLUSTER_OPTIM_H
#define CLUSTER_OPTIM_H

#include <stddef.h>

typedef enum opt_kind { OPT_SGD = 0, OPT_MOMENTUM = 1, OPT_ADAGRAD = 2 } opt_kind;

typedef struct optim_conf {
    opt_kind kind;
    float lr;
    float momentum;        /* 0.9 by default */
    float adagrad_init;    /* 0.1 by default, TensorFlow's initial_accumulator_value */
} optim_conf;

/* Fills defaults for kind with learning rate lr. */
void optim_conf_init(optim_conf *c, opt_kind kind, float lr);

/* Parses "sgd" / "momentum" / "adagrad"; DP_EINVAL otherwise. */
int optim_parse(const char *s, opt_kind *out);
const char *optim_name(opt_kind k);

/* The slot variable's name after its variable's, as TensorFlow's ("hidden/weights/Momentum"):
 * "Momentum", "Adagrad", or NULL (sgd has no slot). */
const char *optim_slot_name(opt_kind k);

/* Number of slot floats needed per variable float: 0 (sgd) or 1. */
int optim_slot_width(opt_kind k);

/* Initialises a slot of n floats (zeros for momentum, adagrad_init for adagrad). */
void optim_slot_init(const optim_conf *c, float *slot, size_t n);

/* Applies gradient g (n floats) to var, updating slot (n floats or NULL for sgd); the three
 * do not overlap. */
void optim_apply(const optim_conf *c, float *restrict var, float *restrict slot, const float *restrict g,
                 size_t n);

#endif
