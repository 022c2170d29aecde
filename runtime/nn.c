/* nn.c — forward and backward passes of the two models as TensorFlow's named ops
 * (cluster/vars.h graph_op), each run on the device its placement names. On a CPU every
 * matrix product is one row-major cblas_sgemm and bias, ReLU and the softmax
 * cross-entropy are plain loops the compiler vectorises; on a GPU the same ops are
 * cuBLAS and small CUDA kernels (runtime/gpu/gpu.h). A step allocates nothing on the
 * host: activations live in workspace sized for max_batch at nn_new (GPU buffers are made
 * on first use, on their device's thread). Loss sums are kept in double; the softmax
 * subtracts the row maximum before exponentiating, so no logit can overflow.
 * Each tensor knows the devices holding its current value (a bit per device; CPU
 * devices share host memory, so a copy between two of them moves no bytes but is still
 * a copy in the story the hooks tell). A nn_net is used by one thread at a time;
 * parameters and gradients belong to the caller. */
#include "runtime/nn.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

#define NN_IN MODEL_INPUTS
#define NN_OUT MODEL_CLASSES

/* The tensors of one step. A: the input of the output layer (H, or X for softmax). */
enum {
    NT_X, NT_Y, NT_W1, NT_B1, NT_W2, NT_B2, NT_H, NT_LOGITS, NT_DLOGITS, NT_DH,
    NT_GW1, NT_GB1, NT_GW2, NT_GB2, NT_COUNT, NT_A = 100, NT_NONE = -1
};

typedef struct nn_tensor {
    void *host;
    size_t bytes;           /* this step */
    size_t cap;             /* GPU buffers' size */
    void *gpu[DEV_MAX];
    uint64_t at;            /* devices holding the current value */
    int host_ok;            /* the host copy is current */
} nn_tensor;

struct nn_net {
    model_kind model;
    int hidden;       /* 0 for softmax */
    int max_batch;
    float *h;         /* max_batch x hidden: ReLU activations (MLP) */
    float *dh;        /* max_batch x hidden: gradient w.r.t. the pre-activations */
    float *logits;    /* max_batch x 10 */
    float *dlogits;   /* max_batch x 10 */
    float *rows;      /* max_batch x 784 for nn_evaluate_rows, made at its first call */
    /* placed nets */
    dev_set *devs;    /* NULL: every op here, on the host */
    nn_place place;
    nn_hooks hooks;
    nn_tensor t[NT_COUNT];
    int batch;
    double loss_sum;
    float loss_mean;
    int dl_scaled;    /* dlogits already divided by the batch (the GPU's xent does it) */
    int failed;
    char err[DP_ERRLEN];
};

/* Inputs (up to 3) and output of each op. */
static const struct { int in[3]; int out; } op_io[GOP_COUNT] = {
    [GOP_X] = {{NT_NONE, NT_NONE, NT_NONE}, NT_X},
    [GOP_Y] = {{NT_NONE, NT_NONE, NT_NONE}, NT_Y},
    [GOP_HID_CONCAT] = {{NT_W1, NT_NONE, NT_NONE}, NT_NONE},
    [GOP_HID_MATMUL] = {{NT_X, NT_W1, NT_NONE}, NT_H},
    [GOP_HID_ADD] = {{NT_H, NT_B1, NT_NONE}, NT_H},
    [GOP_HID_RELU] = {{NT_H, NT_NONE, NT_NONE}, NT_H},
    [GOP_SM_CONCAT] = {{NT_W2, NT_NONE, NT_NONE}, NT_NONE},
    [GOP_SM_MATMUL] = {{NT_A, NT_W2, NT_NONE}, NT_LOGITS},
    [GOP_SM_ADD] = {{NT_LOGITS, NT_B2, NT_NONE}, NT_LOGITS},
    [GOP_XENT] = {{NT_LOGITS, NT_Y, NT_NONE}, NT_DLOGITS},
    [GOP_MEAN] = {{NT_NONE, NT_NONE, NT_NONE}, NT_NONE},
    [GOP_MEAN_GRAD] = {{NT_NONE, NT_NONE, NT_NONE}, NT_NONE},
    [GOP_XENT_GRAD] = {{NT_DLOGITS, NT_NONE, NT_NONE}, NT_DLOGITS},
    [GOP_SM_ADD_GRAD] = {{NT_DLOGITS, NT_NONE, NT_NONE}, NT_GB2},
    [GOP_SM_MATMUL_GRAD_W] = {{NT_A, NT_DLOGITS, NT_NONE}, NT_GW2},
    [GOP_SM_MATMUL_GRAD_X] = {{NT_DLOGITS, NT_W2, NT_NONE}, NT_DH},
    [GOP_RELU_GRAD] = {{NT_DH, NT_H, NT_NONE}, NT_DH},
    [GOP_HID_ADD_GRAD] = {{NT_DH, NT_NONE, NT_NONE}, NT_GB1},
    [GOP_HID_MATMUL_GRAD_W] = {{NT_X, NT_DH, NT_NONE}, NT_GW1},
};

/* Names of the tensors in copy events: variables and gradients by their variable. */
static const char *const tensor_names[NT_COUNT] = {
    "x", "y", "hidden/weights", "hidden/biases", "softmax/weights", "softmax/biases", "hidden/Relu",
    "softmax/add", "gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul",
    "gradients/hidden/Relu_grad/ReluGrad", "hidden/weights", "hidden/biases", "softmax/weights",
    "softmax/biases"
};

static int nt_resolve(const nn_net *net, int t)
{
    return t == NT_A ? (net->model == MODEL_MLP ? NT_H : NT_X) : t;
}

static int op_present(const nn_net *net, int op)
{
    /* parameters arrive whole (the concat of parts already done by the pull) */
    return graph_op_in((graph_op)op, net->model, 0);
}

nn_net *nn_new(model_kind model, int hidden, int max_batch)
{
    return nn_new_placed(model, hidden, max_batch, NULL, NULL, NULL);
}

nn_net *nn_new_placed(model_kind model, int hidden, int max_batch, dev_set *devs,
                      const nn_place *place, const nn_hooks *hooks)
{
    assert(((void)"nn: max_batch must be >= 1", max_batch >= 1));
    assert(((void)"nn: unknown model", model == MODEL_SOFTMAX || model == MODEL_MLP));
    assert(((void)"nn: MLP hidden size must be >= 1", model != MODEL_MLP || hidden >= 1));
    assert(((void)"nn: a placed net needs its devices and placement", !devs || place));
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
    net->devs = devs;
    if (place) net->place = *place;
    if (hooks) net->hooks = *hooks;
    for (int i = 0; devs && i < GOP_COUNT; i++)
        dp_assert("nn: op placed on a device that does not exist",
                  !op_present(net, i) || (net->place.op[i] >= 0 && net->place.op[i] < dev_count(devs)));
    for (int i = 0; devs && i < nn_tensors(net); i++)
        dp_assert("nn: variables live on CPU devices", dev_kind_of(devs, net->place.var[i]) == DEV_CPU);
    /* GPU buffer sizes: activations for max_batch, parameters whole */
    size_t hd = (size_t)net->hidden;
    size_t caps[NT_COUNT] = {b * NN_IN * 4, b, NN_IN * hd * 4, hd * 4, 0, NN_OUT * 4, b * hd * 4,
                             b * NN_OUT * 4, b * NN_OUT * 4, b * hd * 4, NN_IN * hd * 4, hd * 4, 0,
                             NN_OUT * 4};
    caps[NT_W2] = caps[NT_GW2] = (net->hidden ? hd : NN_IN) * NN_OUT * 4;
    for (int i = 0; i < NT_COUNT; i++) net->t[i].cap = caps[i];
    return net;
}

typedef struct gpu_free_arg { nn_net *net; int dev; } gpu_free_arg;

static void free_on_gpu(void *p)
{
    gpu_free_arg *a = p;
    for (int i = 0; i < NT_COUNT; i++) {
        gpu_free(dev_gpu(a->net->devs, a->dev), a->net->t[i].gpu[a->dev]);
        a->net->t[i].gpu[a->dev] = NULL;
    }
}

void nn_free(nn_net *net)
{
    if (!net) return;
    for (int d = 0; net->devs && d < dev_count(net->devs); d++) {
        if (dev_kind_of(net->devs, d) != DEV_GPU) continue;
        gpu_free_arg a = {net, d};
        dev_call(net->devs, d, free_on_gpu, &a);
    }
    free(net->h);
    free(net->dh);
    free(net->logits);
    free(net->dlogits);
    free(net->rows);
    free(net);
}

const char *nn_error(const nn_net *net)
{
    return net->failed ? net->err : "";
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


/* ---- the ops on a CPU ---------------------------------------------------------------- */

static float *tf(nn_net *net, int t) { return net->t[nt_resolve(net, t)].host; }

/* Width of the output layer's input (784 for softmax, H for the MLP). */
static int in_width(const nn_net *net) { return net->model == MODEL_MLP ? net->hidden : NN_IN; }

/* out = in @ w, with the bias added first when `fused` (the MatMul and its add on one
 * CPU device: exactly the order of one sgemm with beta = 1 onto the bias rows). */
static void cpu_matmul(const float *in, const float *w, const float *bias, float *out, int batch,
                       int k, int n, int fused)
{
    if (fused)
        for (int i = 0; i < batch; i++) memcpy(out + (size_t)i * n, bias, (size_t)n * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, n, k, 1.0f, in, k, w, n,
                fused ? 1.0f : 0.0f, out, n);
}

/* The element-wise passes, in blocks of DP_VEC_BLOCK (common/dp.h): vectorised, and bit
 * for bit the plain loops. */

/* out[j] += x[j], j < n */
static void vec_add(float *restrict out, const float *restrict x, size_t n)
{
    size_t j = 0;
    for (; j + DP_VEC_BLOCK <= n; j += DP_VEC_BLOCK)
        for (size_t k = j; k < j + DP_VEC_BLOCK; k++) out[k] += x[k];
    for (; j < n; j++) out[j] += x[j];
}

/* h = max(h, 0) as h > 0 ? h : 0 (a NaN becomes 0) */
static void vec_relu(float *restrict h, size_t n)
{
    size_t j = 0;
    for (; j + DP_VEC_BLOCK <= n; j += DP_VEC_BLOCK)
        for (size_t k = j; k < j + DP_VEC_BLOCK; k++) h[k] = h[k] > 0.0f ? h[k] : 0.0f;
    for (; j < n; j++) h[j] = h[j] > 0.0f ? h[j] : 0.0f;
}

/* dh = h > 0 ? dh : 0 */
static void vec_relu_grad(float *restrict dh, const float *restrict h, size_t n)
{
    size_t j = 0;
    for (; j + DP_VEC_BLOCK <= n; j += DP_VEC_BLOCK)
        for (size_t k = j; k < j + DP_VEC_BLOCK; k++) dh[k] = h[k] > 0.0f ? dh[k] : 0.0f;
    for (; j < n; j++) dh[j] = h[j] > 0.0f ? dh[j] : 0.0f;
}

static void cpu_bias_add(float *out, const float *bias, int batch, int n)
{
    for (int i = 0; i < batch; i++) vec_add(out + (size_t)i * n, bias, (size_t)n);
}

static void cpu_col_sum(float *out, const float *x, int batch, int n)
{
    memset(out, 0, (size_t)n * sizeof *out);
    for (int i = 0; i < batch; i++) vec_add(out, x + (size_t)i * n, (size_t)n);
}

/* 1 when op's MatMul and the add that follows it run on one CPU device (or unplaced). */
static int fused(const nn_net *net, int matmul)
{
    if (!net->devs) return 1;
    int d = net->place.op[matmul];
    return net->place.op[matmul + 1] == d && dev_kind_of(net->devs, d) == DEV_CPU;
}

static void cpu_op(nn_net *net, int op)
{
    int b = net->batch, hd = net->hidden, w = in_width(net);
    const uint8_t *y = net->t[NT_Y].host;
    switch (op) {
    case GOP_HID_MATMUL:
        cpu_matmul(tf(net, NT_X), tf(net, NT_W1), tf(net, NT_B1), tf(net, NT_H), b, NN_IN, hd,
                   fused(net, GOP_HID_MATMUL));
        break;
    case GOP_HID_ADD:
        if (!fused(net, GOP_HID_MATMUL)) cpu_bias_add(tf(net, NT_H), tf(net, NT_B1), b, hd);
        break;
    case GOP_HID_RELU:
        vec_relu(tf(net, NT_H), (size_t)b * (size_t)hd);
        break;
    case GOP_SM_MATMUL:
        cpu_matmul(tf(net, NT_A), tf(net, NT_W2), tf(net, NT_B2), tf(net, NT_LOGITS), b, w, NN_OUT,
                   fused(net, GOP_SM_MATMUL));
        break;
    case GOP_SM_ADD:
        if (!fused(net, GOP_SM_MATMUL)) cpu_bias_add(tf(net, NT_LOGITS), tf(net, NT_B2), b, NN_OUT);
        break;
    case GOP_XENT: {
        /* dL/dlogits = softmax - onehot (divided by the batch in its gradient op) */
        double loss = 0.0;
        for (int i = 0; i < b; i++) {
            assert(((void)"nn: label out of range", y[i] < NN_OUT));
            float *d = tf(net, NT_DLOGITS) + (size_t)i * NN_OUT;
            loss += xent_row(tf(net, NT_LOGITS) + (size_t)i * NN_OUT, y[i], d);
            d[y[i]] -= 1.0f;
        }
        net->loss_sum = loss;
        net->dl_scaled = 0;
        break;
    }
    case GOP_MEAN:
        if (!net->dl_scaled) net->loss_mean = (float)(net->loss_sum / b);
        break;
    case GOP_XENT_GRAD:
        if (!net->dl_scaled) {
            float inv_b = 1.0f / (float)b, *d = tf(net, NT_DLOGITS);
            for (size_t k = 0; k < (size_t)b * NN_OUT; k++) d[k] *= inv_b;
            net->dl_scaled = 1;
        }
        break;
    case GOP_SM_ADD_GRAD:
        cpu_col_sum(tf(net, NT_GB2), tf(net, NT_DLOGITS), b, NN_OUT);
        break;
    case GOP_SM_MATMUL_GRAD_W:
        /* dW = in^T @ dlogits */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w, NN_OUT, b, 1.0f, tf(net, NT_A), w,
                    tf(net, NT_DLOGITS), NN_OUT, 0.0f, tf(net, NT_GW2), NN_OUT);
        break;
    case GOP_SM_MATMUL_GRAD_X:
        /* dh = dlogits @ W2^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, hd, NN_OUT, 1.0f, tf(net, NT_DLOGITS),
                    NN_OUT, tf(net, NT_W2), NN_OUT, 0.0f, tf(net, NT_DH), hd);
        break;
    case GOP_RELU_GRAD:
        /* through the ReLU: h > 0 where the pre-activation was */
        vec_relu_grad(tf(net, NT_DH), tf(net, NT_H), (size_t)b * (size_t)hd);
        break;
    case GOP_HID_ADD_GRAD:
        cpu_col_sum(tf(net, NT_GB1), tf(net, NT_DH), b, hd);
        break;
    case GOP_HID_MATMUL_GRAD_W:
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, NN_IN, hd, b, 1.0f, tf(net, NT_X), NN_IN,
                    tf(net, NT_DH), hd, 0.0f, tf(net, NT_GW1), hd);
        break;
    default:   /* placeholders, concat of whole tensors, the mean's gradient: no work */
        break;
    }
}

/* ---- the ops on a GPU (only on that device's thread) ------------------------------- */

static float *gbuf(nn_net *net, int t, int d)
{
    nn_tensor *x = &net->t[nt_resolve(net, t)];
    if (!x->gpu[d] && !net->failed) {
        x->gpu[d] = gpu_alloc(dev_gpu(net->devs, d), x->cap, net->err);
        if (!x->gpu[d]) net->failed = 1;
    }
    return x->gpu[d];
}

static int gpu_op(nn_net *net, int op, int d)
{
    gpu_ctx *g = dev_gpu(net->devs, d);
    int b = net->batch, hd = net->hidden, w = in_width(net);
    size_t m = (size_t)b * (size_t)hd;
    char *e = net->err;
    float *out = op_io[op].out != NT_NONE ? gbuf(net, op_io[op].out, d) : NULL;
    float *a = op_io[op].in[0] != NT_NONE ? gbuf(net, op_io[op].in[0], d) : NULL;
    float *c = op_io[op].in[1] != NT_NONE ? gbuf(net, op_io[op].in[1], d) : NULL;
    if (net->failed) return DP_ERR;
    switch (op) {
    case GOP_HID_MATMUL: return gpu_sgemm(g, 0, 0, b, hd, NN_IN, 1.0f, a, NN_IN, c, hd, 0.0f, out, hd, e);
    case GOP_HID_ADD: return gpu_bias_add(g, out, c, b, hd, e);
    case GOP_HID_RELU: return gpu_relu(g, out, m, e);
    case GOP_SM_MATMUL: return gpu_sgemm(g, 0, 0, b, NN_OUT, w, 1.0f, a, w, c, NN_OUT, 0.0f, out, NN_OUT, e);
    case GOP_SM_ADD: return gpu_bias_add(g, out, c, b, NN_OUT, e);
    case GOP_XENT:
        net->dl_scaled = 1;
        return gpu_softmax_xent(g, a, (const uint8_t *)c, b, NN_OUT, out, &net->loss_mean, e);
    case GOP_XENT_GRAD:
        if (net->dl_scaled) return DP_OK;
        net->dl_scaled = 1;
        return gpu_scale(g, (size_t)b * NN_OUT, 1.0f / (float)b, out, e);
    case GOP_MEAN: cpu_op(net, op); return DP_OK;
    case GOP_SM_ADD_GRAD: return gpu_col_sum(g, out, a, b, NN_OUT, e);
    case GOP_SM_MATMUL_GRAD_W: return gpu_sgemm(g, 1, 0, w, NN_OUT, b, 1.0f, a, w, c, NN_OUT, 0.0f, out, NN_OUT, e);
    case GOP_SM_MATMUL_GRAD_X: return gpu_sgemm(g, 0, 1, b, hd, NN_OUT, 1.0f, a, NN_OUT, c, NN_OUT, 0.0f, out, hd, e);
    case GOP_RELU_GRAD: return gpu_relu_grad(g, out, c, m, e);
    case GOP_HID_ADD_GRAD: return gpu_col_sum(g, out, a, b, hd, e);
    case GOP_HID_MATMUL_GRAD_W: return gpu_sgemm(g, 1, 0, NN_IN, hd, b, 1.0f, a, NN_IN, c, hd, 0.0f, out, hd, e);
    default: return DP_OK;
    }
}

/* ---- the executor ------------------------------------------------------------------ */

typedef struct seg_arg { nn_net *net; int dev, first, last, t; } seg_arg;

static void run_segment(void *p)
{
    seg_arg *s = p;
    nn_net *net = s->net;
    int gpu = net->devs && dev_kind_of(net->devs, s->dev) == DEV_GPU;
    for (int op = s->first; op < s->last && !net->failed; op++) {
        if (!op_present(net, op)) continue;
        if (!gpu) cpu_op(net, op);
        else if (gpu_op(net, op, s->dev)) net->failed = 1;
    }
}

static void upload_on(void *p)
{
    seg_arg *s = p;
    nn_tensor *x = &s->net->t[s->t];
    void *dst = gbuf(s->net, s->t, s->dev);
    if (dst && gpu_upload(dev_gpu(s->net->devs, s->dev), dst, x->host, x->bytes, s->net->err))
        s->net->failed = 1;
}

static void download_on(void *p)
{
    seg_arg *s = p;
    nn_tensor *x = &s->net->t[s->t];
    if (gpu_download(dev_gpu(s->net->devs, s->dev), x->host, x->gpu[s->dev], x->bytes, s->net->err))
        s->net->failed = 1;
}

/* Makes tensor t's current value present on device d (copying when it is not). */
static void ensure(nn_net *net, int t, int d, int grad)
{
    nn_tensor *x = &net->t[t];
    uint64_t bit = 1ull << d;
    if ((x->at & bit) || net->failed) return;
    int src = 0;
    while (src < DEV_MAX && !(x->at & (1ull << src))) src++;
    dp_assert("nn: a tensor is read before any op wrote it", src < DEV_MAX);
    const nn_hooks *h = &net->hooks;
    if (h->copy) h->copy(h->ctx, tensor_names[t], src, d, x->bytes, grad, 1);
    seg_arg a = {net, src, 0, 0, t};
    if (!x->host_ok) {
        dev_call(net->devs, src, download_on, &a);
        x->host_ok = 1;
    }
    if (dev_kind_of(net->devs, d) == DEV_GPU) {
        a.dev = d;
        dev_call(net->devs, d, upload_on, &a);
    }
    x->at |= bit;
    if (h->copy) h->copy(h->ctx, tensor_names[t], src, d, x->bytes, grad, 0);
}

static void bind(nn_net *net, int t, void *host, size_t bytes, int dev)
{
    nn_tensor *x = &net->t[t];
    x->host = host;
    x->bytes = bytes;
    x->at = dev >= 0 ? 1ull << dev : 0;
    x->host_ok = dev >= 0;
}

/* Points the step's tensors at the caller's arrays and the workspace. */
static void bind_step(nn_net *net, float *const *params, float *const *grads, const float *x,
                      const uint8_t *y, int batch)
{
    size_t b = (size_t)batch, hd = (size_t)net->hidden;
    int mlp = net->model == MODEL_MLP, *pv = net->place.var, *po = net->place.op;
    int plain = !net->devs;
    net->batch = batch;
    net->dl_scaled = 0;
    bind(net, NT_X, (void *)x, b * NN_IN * 4, plain ? 0 : po[GOP_X]);
    bind(net, NT_Y, (void *)y, b, plain ? 0 : po[GOP_Y]);
    for (int i = 0; i < nn_tensors(net); i++) {
        int t = (mlp ? NT_W1 : NT_W2) + i;
        bind(net, t, params[i], nn_tensor_size(net, i) * 4, plain ? 0 : pv[i]);
        if (grads) bind(net, t - NT_W1 + NT_GW1, grads[i], nn_tensor_size(net, i) * 4, -1);
    }
    bind(net, NT_H, net->h, b * hd * 4, -1);
    bind(net, NT_DH, net->dh, b * hd * 4, -1);
    bind(net, NT_LOGITS, net->logits, b * NN_OUT * 4, -1);
    bind(net, NT_DLOGITS, net->dlogits, b * NN_OUT * 4, -1);
}

/* The tensor whose gradient op writes (each is written by one op only), or -1. */
static int grad_done_by(const nn_net *net, int op)
{
    int o = op_io[op].out, first = net->model == MODEL_MLP ? NT_GW1 : NT_GW2;
    return o >= first && o < NT_GW1 + 4 ? o - first : -1;
}

void nn_set_progress(nn_net *net, void (*fn)(void *ctx, int grad), void *ctx)
{
    assert(((void)"nn: progress hooks are for unplaced nets", !net->devs));
    net->hooks.progress = fn;
    net->hooks.ctx = ctx;
}

/* Runs ops [0, last) that are in the graph: consecutive ops on one device as one run on
 * its thread, after copying in the inputs that live elsewhere. */
static void run_ops(nn_net *net, int last)
{
    const nn_hooks *h = &net->hooks;
    if (!net->devs) {
        int final = last - 1;   /* the hook runs between ops, not after the last */
        while (final > 0 && !op_present(net, final)) final--;
        for (int op = 0; op < last; op++) {
            if (!op_present(net, op)) continue;
            cpu_op(net, op);
            if (h->progress && op < final) h->progress(h->ctx, grad_done_by(net, op));
        }
        return;
    }
    for (int op = 0; op < last && !net->failed;) {
        if (!op_present(net, op)) {
            op++;
            continue;
        }
        int d = net->place.op[op], end = op;
        while (end < last && (!op_present(net, end) || net->place.op[end] == d)) end++;
        for (int k = op; k < end; k++) {
            if (!op_present(net, k)) continue;
            for (int j = 0; j < 3; j++)
                if (op_io[k].in[j] != NT_NONE) {
                    int t = nt_resolve(net, op_io[k].in[j]);
                    ensure(net, t, d, t >= NT_DLOGITS);
                }
            int o = op_io[k].out;
            if (o == NT_NONE) continue;
            net->t[o].at = 1ull << d;
            net->t[o].host_ok = dev_kind_of(net->devs, d) == DEV_CPU;
        }
        /* the run is named by its first op that computes (not an input placeholder) */
        int label = op;
        while (label < end && (!op_present(net, label) || !strcmp(graph_op_type((graph_op)label), "Placeholder")))
            label++;
        if (label == end) label = op;
        if (h->compute) h->compute(h->ctx, d, label, 1);
        seg_arg a = {net, d, op, end, 0};
        dev_call(net->devs, d, run_segment, &a);
        if (h->compute) h->compute(h->ctx, d, label, 0);
        op = end;
    }
}

float nn_train_step(nn_net *net, float *const *params, float *const *grads,
                    const float *x, const uint8_t *y, int batch)
{
    assert(((void)"nn: batch out of range", batch >= 1 && batch <= net->max_batch));
    net->failed = 0;
    net->err[0] = 0;
    bind_step(net, params, grads, x, y, batch);
    run_ops(net, GOP_COUNT);
    /* the gradients go back to their variables' devices (host memory) */
    int mlp = net->model == MODEL_MLP;
    for (int i = 0; net->devs && i < nn_tensors(net); i++)
        ensure(net, (mlp ? NT_GW1 : NT_GW2) + i, net->place.var[i], 1);
    if (net->failed) return NAN;
    return net->loss_mean;
}

/* Forward pass up to the logits on the calling thread (evaluation, the loss). */
static void forward_here(nn_net *net, float *const *params, const float *x, int batch)
{
    dev_set *devs = net->devs;
    net->devs = NULL;
    bind_step(net, params, NULL, x, NULL, batch);
    run_ops(net, GOP_XENT);
    net->devs = devs;
}

float nn_loss(nn_net *net, float *const *params, const float *x, const uint8_t *y, int batch)
{
    assert(((void)"nn: batch out of range", batch >= 1 && batch <= net->max_batch));
    forward_here(net, params, x, batch);
    double loss = 0.0;
    for (int i = 0; i < batch; i++) {
        assert(((void)"nn: label out of range", y[i] < NN_OUT));
        loss += xent_row(net->logits + (size_t)i * NN_OUT, y[i], NULL);
    }
    return (float)(loss / batch);
}

/* nn_evaluate's loop: each batch from x, or from rows into buf when x is NULL */
static double evaluate(nn_net *net, float *const *params, const float *x, nn_rows_fn rows, void *ctx,
                       const uint8_t *y, int n, double *loss)
{
    float *buf = NULL;
    if (!x) {
        if (!net->rows) net->rows = xmalloc((size_t)net->max_batch * NN_IN * sizeof *net->rows);
        buf = net->rows;
    }
    double total = 0.0;
    long correct = 0;
    for (int s = 0; s < n; s += net->max_batch) {
        int b = n - s < net->max_batch ? n - s : net->max_batch;
        const float *xb = x ? x + (size_t)s * NN_IN : buf;
        if (!x) rows(ctx, s, b, buf);
        forward_here(net, params, xb, b);
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

double nn_evaluate(nn_net *net, float *const *params, const float *x, const uint8_t *y,
                   int n, double *loss)
{
    return evaluate(net, params, x, NULL, NULL, y, n, loss);
}

double nn_evaluate_rows(nn_net *net, float *const *params, nn_rows_fn rows, void *ctx, const uint8_t *y,
                        int n, double *loss)
{
    return evaluate(net, params, NULL, rows, ctx, y, n, loss);
}
