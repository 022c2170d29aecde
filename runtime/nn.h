/* nn.h — the models' forward and backward passes, softmax regression (784-10) and an MLP
 * (784-H-10, ReLU), float32, mean cross-entropy, run as TensorFlow's named ops
 * (cluster/vars.h graph_op: hidden/MatMul, hidden/add, ..., gradients/...). A plain net
 * (nn_new) runs every op on the calling thread through CBLAS (OpenBLAS); a placed net
 * (nn_new_placed) runs each op on the device its placement names (runtime/device.h:
 * CBLAS on a CPU device, cuBLAS and CUDA kernels on a GPU), copying tensors between
 * devices where an op's input lives elsewhere, and reports both through hooks.
 * Tensors are in the catalogue's base order (cluster/vars.h):
 *   MLP:     0 hidden/weights [784,H], 1 hidden/biases [H], 2 softmax/weights [H,10], 3 softmax/biases [10]
 *   softmax: 0 softmax/weights [784,10], 1 softmax/biases [10]
 * A nn_net owns only workspace for up to max_batch samples; parameters and gradients
 * are caller-owned arrays. One nn_net per thread. */
#ifndef RUNTIME_NN_H
#define RUNTIME_NN_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/vars.h"
#include "runtime/device.h"

typedef struct nn_net nn_net;

/* Where a replica runs: the device (index into the dev_set) of every op of the graph,
 * and of every variable (in nn order; must be CPU devices: variables live in host
 * memory, where the optimizer applies them). */
typedef struct nn_place {
    int op[GOP_COUNT];
    int var[4];
} nn_place;

/* What a placed net tells its owner (any member may be NULL; called on the thread that
 * runs nn_train_step, never on a device thread). */
typedef struct nn_hooks {
    void *ctx;
    /* a run of consecutive ops on device dev, the first of them `op` (a graph_op, or -1
     * for work outside the graph), begins (begin = 1) or ends (0) */
    void (*compute)(void *ctx, int dev, int op, int begin);
    /* tensor `name` (bytes) is copied from device src to dst; grad: a gradient on its way
     * back to its variable's device (else a forward copy: variable, input, activation) */
    void (*copy)(void *ctx, const char *name, int src, int dst, size_t bytes, int grad, int begin);
    /* unplaced nets (nn_set_progress): between two ops of nn_train_step (not after the
     * last: the step's end says that); grad >= 0 when
     * the op just done completed the gradient of tensor `grad` (grads[grad] is final),
     * else -1. Lets a worker read what arrives and send a gradient that is ready while
     * the step goes on (runtime/worker.c) */
    void (*progress)(void *ctx, int grad);
} nn_hooks;

/* New net with workspace for max_batch samples (>= 1); free with nn_free(). */
nn_net *nn_new(model_kind model, int hidden, int max_batch);
/* New net whose nn_train_step runs on devs (borrowed: outlives the net) as place says;
 * hooks (copied; may be NULL) hear of compute runs and copies. Free with nn_free(). */
nn_net *nn_new_placed(model_kind model, int hidden, int max_batch, dev_set *devs,
                      const nn_place *place, const nn_hooks *hooks);
void nn_free(nn_net *net);
/* An unplaced net's progress hook (nn_hooks.progress; fn NULL: none). */
void nn_set_progress(nn_net *net, void (*fn)(void *ctx, int grad), void *ctx);
/* Why the last nn_train_step returned NaN because a device failed ("" otherwise). */
const char *nn_error(const nn_net *net);

/* Number of tensors (2 or 4) and the float count / TensorFlow name of tensor i. */
int nn_tensors(const nn_net *net);
size_t nn_tensor_size(const nn_net *net, int i);
const char *nn_tensor_name(const nn_net *net, int i);

/* Initialises parameters (params[i] has nn_tensor_size(i) floats): weights Glorot-
 * uniform (TensorFlow's default) from the seed, biases zero. */
void nn_init_params(const nn_net *net, float *const *params, uint64_t seed);

/* One forward+backward pass on a batch (x: batch x 784, y: labels). Writes the gradient
 * of the mean cross-entropy w.r.t. each tensor into grads[i] and returns the mean loss.
 * batch <= max_batch (asserted). params borrowed, not modified. On a CPU the results
 * are the same bits wherever the ops are placed (a MatMul and its add on one CPU device
 * run fused, bias first, as TensorFlow's _FusedMatMul). A placed net returns NaN when a
 * device fails (nn_error says why). */
float nn_train_step(nn_net *net, float *const *params, float *const *grads,
                    const float *x, const uint8_t *y, int batch);

/* Mean loss only (forward pass on the calling thread), for the gradient check. */
float nn_loss(nn_net *net, float *const *params, const float *x, const uint8_t *y, int batch);

/* Evaluates on n samples in chunks of max_batch: returns accuracy in [0,1] and stores
 * the mean loss in *loss when not NULL. */
double nn_evaluate(nn_net *net, float *const *params, const float *x, const uint8_t *y,
                   int n, double *loss);
/* nn_evaluate on samples that are not floats in memory: rows(ctx, first, count, buf)
 * writes samples first .. first + count - 1 (count <= max_batch) into buf (max_batch x
 * 784 floats, the net's, made at the first call). The same batches summed in the same
 * order: the same bits. */
typedef void (*nn_rows_fn)(void *ctx, int first, int count, float *buf);
double nn_evaluate_rows(nn_net *net, float *const *params, nn_rows_fn rows, void *ctx, const uint8_t *y,
                        int n, double *loss);

#endif
