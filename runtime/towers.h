/* towers.h — one task's replicas of the model over its devices, placed as a strategy and
 * TensorFlow's rules say: `single` (one device does every op), `towers` (in-graph data
 * parallelism: one tower_i per device on its slice of the batch, gradients averaged on
 * the variables' device, /cpu:0) or `split` (model parallelism: the hidden layer on one
 * device, the output layer and the loss on another, activations and their gradients
 * copied between them). --device-for rules override an op's device (gradient ops follow
 * their forward op unless a rule names them). Used by `downpour local` and by a cluster
 * worker that owns several devices. Instrumented through rt_instr: compute per device,
 * copies between devices as pull (forward) and push (gradient) transfers with peer -1,
 * device = the destination and str = the source device. Thread rules: one caller thread;
 * the towers' drivers and the devices' threads are internal. */
#ifndef RUNTIME_TOWERS_H
#define RUNTIME_TOWERS_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/instr.h"
#include "runtime/nn.h"

typedef struct tw_set tw_set;

/* Places the model of cfg (model, hidden, batch, device_for, allow_soft) on devs
 * (borrowed) for `strategy` (RT_STRATEGY_*). Towers run over the task's GPUs when it has
 * some, else over its CPU devices. in (borrowed, may be NULL) gets the events. Returns
 * NULL with err: a hard placement error in TensorFlow's words, a batch smaller than the
 * number of towers. Free with tw_free(). */
tw_set *tw_new(const rt_config *cfg, dev_set *devs, int strategy, rt_instr *in, char *err);
void tw_free(tw_set *t);
/* From now on the towers' events go to in (NULL: none). */
void tw_set_instr(tw_set *t, rt_instr *in);

/* A task that runs its model on one device without towers (a cluster's worker by
 * default) checks cfg's --device-for rules as tw_new would place them: a rule naming a
 * device devs lacks is TensorFlow's error unless allow_soft; a rule that matches nothing
 * is warned about. 0 or DP_EINVAL with err. */
int tw_check_placement(const rt_config *cfg, dev_set *devs, char *err);

int tw_towers(const tw_set *t);
/* The device the variables live on (CPU:0) and tower i's device. */
int tw_var_device(const tw_set *t);
int tw_tower_device(const tw_set *t, int i);
/* The device of variable k (nn order). */
int tw_tensor_device(const tw_set *t, int k);

/* One step on the whole batch (x: batch x 784, y labels) split over the towers: writes
 * the gradient of the mean loss over the batch into grads (nn order, caller-owned) and
 * returns that mean loss, or NaN with err when a device failed. step labels events. */
float tw_step(tw_set *t, float *const *params, float *const *grads, const float *x,
              const uint8_t *y, int batch, int64_t step, char *err);

/* Prints the log_device_placement lines of the replicas' ops (and of the gradient
 * averages on the variables' device when there are several towers), and emits them as
 * OP_PLACE events. */
void tw_log_ops(FILE *f, const tw_set *t);
void tw_announce(const tw_set *t);

#endif
