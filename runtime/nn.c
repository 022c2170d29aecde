/* nn.c — forward and backward passes of the two models on the CPU: every matrix product
 * is one row-major cblas_sgemm; bias, ReLU and the softmax cross-entropy are plain loops
 * the compiler vectorises. A step allocates nothing: all activations live in workspace
 * sized for max_batch at nn_new. Loss sums are kept in double; the softmax subtracts the
 * row maximum before exponentiating, so no logit can overflow. A nn_net is used by one
 * thread at a time; parameters and gradients belong to the caller. */
#include "runtime/nn.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

#define NN_IN MODEL_INPUTS
#define NN_OUT MODEL_CLASSES

struct nn_net {
    model_kind model;
    int hidden;       /* 0 for softmax */
    int max_batch;
    float *h;         /* max_batch x hidden: ReLU activations (MLP) */
    float *dh;        /* max_batch x hidden: gradient w.r.t. the pre-activations */
    float *logits;    /* max_batch x 10 */
    float *dlogits;   /* max_batch x 10 */
};

nn_net *nn_new(model_kind model, int hidden, int max_batch)
{
    assert(((void)"nn: max_batch must be >= 1", max_batch >= 1));
    assert(((void)"nn: unknown model", model == MODEL_SOFTMAX || model == MODEL_MLP));
    assert(((void)"nn: MLP hidden size must be >= 1", model != MODEL_MLP || hidden >= 1));
    nn_net *net = xcalloc(1, sizeof *net);
    net->model = model;
    net->hidden = model == MODEL_MLP ? hidden : 0;
    net->max_batch = max_batch;
    size_t b = (size_t)max_batch;
    if (net->hidden) {
        net->h = xmalloc(b * (size_t)net->hidden * sizeof(float));
        net->dh = xmalloc(b * (size_t)net->hidden * sizeof(float));
    }
    net->logits = xmalloc(b * NN_OUT * sizeof(float));
    net->dlogits = xmalloc(b * NN_OUT * sizeof(float));
    return net;
}

void nn_free(nn_net *net)
{
    if (!net) return;
    free(net->h);
    free(net->dh);
    free(net->logits);
    free(net->dlogits);
    free(net);
}

int nn_tensors(const nn_net *net)
{
    return net->model == MODEL_MLP ? 4 : 2;
}

/* Rows and columns of tensor i (biases have cols = 1). */
static void nn_shape(const nn_net *net, int i, int *rows, int *cols)
{
    assert(((void)"nn: tensor index out of range", i >= 0 && i < nn_tensors(net)));
    if (net->model == MODEL_SOFTMAX) i += 2;
    switch (i) {
    case 0: *rows = NN_IN; *cols = net->hidden; break;
    case 1: *rows = net->hidden; *cols = 1; break;
    case 2: *rows = net->model == MODEL_MLP ? net->hidden : NN_IN; *cols = NN_OUT; break;
    default: *rows = NN_OUT; *cols = 1; break;
    }
}

size_t nn_tensor_size(const nn_net *net, int i)
{
    int r, c;
    nn_shape(net, i, &r, &c);
    return (size_t)r * (size_t)c;
}

const char *nn_tensor_name(const nn_net *net, int i)
{
    static const char *const names[4] = {
        "hidden/weights", "hidden/biases", "softmax/weights", "softmax/biases"
    };
    assert(((void)"nn: tensor index out of range", i >= 0 && i < nn_tensors(net)));
    return names[net->model == MODEL_SOFTMAX ? i + 2 : i];
}

void nn_init_params(const nn_net *net, float *const *params, uint64_t seed)
{
    dp_rng r;
    dp_rng_seed(&r, seed);
    for (int i = 0; i < nn_tensors(net); i++) {
        int rows, cols;
        nn_shape(net, i, &rows, &cols);
        size_t count = (size_t)rows * (size_t)cols;
        if (cols == 1) {
            memset(params[i], 0, count * sizeof(float));
            continue;
        }
        /* glorot_uniform: U(-l, l) with l = sqrt(6 / (fan_in + fan_out)) */
        double limit = sqrt(6.0 / (double)(rows + cols));
        for (size_t k = 0; k < count; k++)
            params[i][k] = (float)((2.0 * dp_rng_uniform(&r) - 1.0) * limit);
    }
}

/* out (batch x n) = in (batch x k) @ w (k x n) + bias. */
static void affine(const float *in, const float *w, const float *bias, float *out,
                   int batch, int k, int n)
{
    for (int i = 0; i < batch; i++) memcpy(out + (size_t)i * n, bias, (size_t)n * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, n, k, 1.0f, in, k, w, n,
                1.0f, out, n);
}

/* Forward pass up to the logits; returns the input of the output layer
 * (x for softmax, the ReLU activations for the MLP) and its width in *width. */
static const float *forward(nn_net *net, float *const *params, const float *x, int batch,
                            int *width)
{
    if (net->model == MODEL_SOFTMAX) {
        affine(x, params[0], params[1], net->logits, batch, NN_IN, NN_OUT);
        *width = NN_IN;
        return x;
    }
    int hd = net->hidden;
    affine(x, params[0], params[1], net->h, batch, NN_IN, hd);
    size_t m = (size_t)batch * (size_t)hd;
    float *h = net->h;
    for (size_t k = 0; k < m; k++) h[k] = h[k] > 0.0f ? h[k] : 0.0f;
    affine(h, params[2], params[3], net->logits, batch, hd, NN_OUT);
    *width = hd;
    return h;
}

/* Softmax cross-entropy of row z against label y; writes softmax(z) into p when not NULL.
 * Returns the loss of this row. */
static double xent_row(const float *z, int y, float *p)
{
    float mx = z[0];
    for (int j = 1; j < NN_OUT; j++) mx = z[j] > mx ? z[j] : mx;
    float e[NN_OUT];
    float sum = 0.0f;
    for (int j = 0; j < NN_OUT; j++) {
        e[j] = expf(z[j] - mx);
        sum += e[j];
    }
    if (p) {
        float inv = 1.0f / sum;
        for (int j = 0; j < NN_OUT; j++) p[j] = e[j] * inv;
    }
    /* log(sum) >= 0 since the max term is exp(0) = 1 */
    return (double)mx + log((double)sum) - (double)z[y];
}

float nn_train_step(nn_net *net, float *const *params, float *const *grads,
                    const float *x, const uint8_t *y, int batch)
{
    assert(((void)"nn: batch out of range", batch >= 1 && batch <= net->max_batch));
    int width;
    const float *in = forward(net, params, x, batch, &width);

    /* dL/dlogits = (softmax - onehot) / batch for the mean loss */
    double loss = 0.0;
    float inv_b = 1.0f / (float)batch;
    for (int i = 0; i < batch; i++) {
        assert(((void)"nn: label out of range", y[i] < NN_OUT));
        float *d = net->dlogits + (size_t)i * NN_OUT;
        loss += xent_row(net->logits + (size_t)i * NN_OUT, y[i], d);
        d[y[i]] -= 1.0f;
        for (int j = 0; j < NN_OUT; j++) d[j] *= inv_b;
    }

    int ow = net->model == MODEL_MLP ? 2 : 0; /* index of the output weights */
    float *gw = grads[ow], *gb = grads[ow + 1];
    /* output layer: dW = in^T @ dlogits, db = column sums of dlogits */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, width, NN_OUT, batch, 1.0f, in,
                width, net->dlogits, NN_OUT, 0.0f, gw, NN_OUT);
    memset(gb, 0, NN_OUT * sizeof *gb);
    for (int i = 0; i < batch; i++)
        for (int j = 0; j < NN_OUT; j++) gb[j] += net->dlogits[(size_t)i * NN_OUT + j];

    if (net->model == MODEL_MLP) {
        int hd = net->hidden;
        /* dh = dlogits @ W2^T, then through the ReLU (h > 0 where the pre-activation was) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, hd, NN_OUT, 1.0f,
                    net->dlogits, NN_OUT, params[2], NN_OUT, 0.0f, net->dh, hd);
        size_t m = (size_t)batch * (size_t)hd;
        float *dh = net->dh;
        const float *h = net->h;
        for (size_t k = 0; k < m; k++) dh[k] = h[k] > 0.0f ? dh[k] : 0.0f;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, NN_IN, hd, batch, 1.0f, x,
                    NN_IN, dh, hd, 0.0f, grads[0], hd);
        float *gb1 = grads[1];
        memset(gb1, 0, (size_t)hd * sizeof *gb1);
        for (int i = 0; i < batch; i++) {
            const float *row = dh + (size_t)i * hd;
            for (int j = 0; j < hd; j++) gb1[j] += row[j];
        }
    }
    return (float)(loss / batch);
}

float nn_loss(nn_net *net, float *const *params, const float *x, const uint8_t *y, int batch)
{
    assert(((void)"nn: batch out of range", batch >= 1 && batch <= net->max_batch));
    int width;
    forward(net, params, x, batch, &width);
    double loss = 0.0;
    for (int i = 0; i < batch; i++) {
        assert(((void)"nn: label out of range", y[i] < NN_OUT));
        loss += xent_row(net->logits + (size_t)i * NN_OUT, y[i], NULL);
    }
    return (float)(loss / batch);
}

double nn_evaluate(nn_net *net, float *const *params, const float *x, const uint8_t *y,
                   int n, double *loss)
{
    double total = 0.0;
    long correct = 0;
    for (int s = 0; s < n; s += net->max_batch) {
        int b = n - s < net->max_batch ? n - s : net->max_batch;
        int width;
        forward(net, params, x + (size_t)s * NN_IN, b, &width);
        for (int i = 0; i < b; i++) {
            const float *z = net->logits + (size_t)i * NN_OUT;
            int best = 0;
            for (int j = 1; j < NN_OUT; j++) if (z[j] > z[best]) best = j;
            correct += best == y[s + i];
            total += xent_row(z, y[s + i], NULL);
        }
    }
    if (loss) *loss = n > 0 ? total / n : 0.0;
    return n > 0 ? (double)correct / n : 0.0;
}
