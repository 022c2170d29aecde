/* nn.h — the models' forward and backward passes on the CPU through CBLAS (OpenBLAS):
 * softmax regression (784-10) and an MLP (784-H-10, ReLU), float32, mean cross-entropy.
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

typedef struct nn_net nn_net;

/* New net with workspace for max_batch samples (>= 1); free with nn_free(). */
nn_net *nn_new(model_kind model, int hidden, int max_batch);
void nn_free(nn_net *net);

/* Number of tensors (2 or 4) and the float count / TensorFlow name of tensor i. */
int nn_tensors(const nn_net *net);
size_t nn_tensor_size(const nn_net *net, int i);
const char *nn_tensor_name(const nn_net *net, int i);

/* Initialises parameters (params[i] has nn_tensor_size(i) floats): weights Glorot-
 * uniform (TensorFlow's default) from the seed, biases zero. */
void nn_init_params(const nn_net *net, float *const *params, uint64_t seed);

/* One forward+backward pass on a batch (x: batch x 784, y: labels). Writes the gradient
 * of the mean cross-entropy w.r.t. each tensor into grads[i] and returns the mean loss.
 * batch <= max_batch (asserted). params borrowed, not modified. */
float nn_train_step(nn_net *net, float *const *params, float *const *grads,
                    const float *x, const uint8_t *y, int batch);

/* Mean loss only (forward pass), for the gradient check. */
float nn_loss(nn_net *net, float *const *params, const float *x, const uint8_t *y, int batch);

/* Evaluates on n samples in chunks of max_batch: returns accuracy in [0,1] and stores
 * the mean loss in *loss when not NULL. */
double nn_evaluate(nn_net *net, float *const *params, const float *x, const uint8_t *y,
                   int n, double *loss);

#endif
