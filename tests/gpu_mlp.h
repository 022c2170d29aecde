/* gpu_mlp.h — a fully connected ReLU network of any depth (widths[0] inputs, widths[L]
 * classes, mean softmax cross-entropy) composed from runtime/gpu/gpu.h's calls, and the
 * same network composed on the CPU from cblas_sgemm and plain loops. Shared by
 * tests/test_gpu.c (which checks the GPU one against runtime/nn.c, an independent CPU
 * code) and bench/bench_gpu.c (which times both). Not the device layer: that lives in
 * runtime/. Row-major float32 throughout; one net per thread.
 * Layout: layer l (0 <= l < L) has weights W[l] [widths[l] x widths[l+1]] and biases
 * b[l] [widths[l+1]]; act[0] is the input batch, act[l+1] layer l's output (logits for
 * the last), dact[l] the gradient w.r.t. act[l]'s pre-activation. */
#ifndef TESTS_GPU_MLP_H
#define TESTS_GPU_MLP_H

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "runtime/gpu/gpu.h"

#define MLP_MAX_LAYERS 4

typedef struct mlp_net {
    gpu_ctx *g;        /* NULL: the CPU composition; else borrowed, outlives the net */
    int layers;        /* L */
    int w[MLP_MAX_LAYERS + 1];
    int batch;         /* max rows */
    float *W[MLP_MAX_LAYERS], *b[MLP_MAX_LAYERS], *gW[MLP_MAX_LAYERS], *gb[MLP_MAX_LAYERS];
    float *act[MLP_MAX_LAYERS + 1], *dact[MLP_MAX_LAYERS + 1];
    uint8_t *y;
} mlp_net;

static inline size_t mlp_wsize(const mlp_net *m, int l) { return (size_t)m->w[l] * (size_t)m->w[l + 1]; }

/* Allocates (on g's device, or on the host when g is NULL) parameters, gradients and
 * activations for `layers` layers of widths[0..layers] and batch rows. Returns 0 or a
 * dp_err with err set; mlp_release() frees either way. */
static inline int mlp_init(mlp_net *m, gpu_ctx *g, const int *widths, int layers, int batch,
                           char *err)
{
    memset(m, 0, sizeof *m);
    dp_assert("mlp: too many layers", layers >= 1 && layers <= MLP_MAX_LAYERS);
    m->g = g;
    m->layers = layers;
    m->batch = batch;
    memcpy(m->w, widths, (size_t)(layers + 1) * sizeof *widths);
#define MLP_ALLOC(p, n) do { \
        size_t bytes_ = (n); \
        if (g) { if (!((p) = gpu_alloc(g, bytes_, err))) return DP_ERR; } \
        else (p) = xcalloc(1, bytes_); \
    } while (0)
    for (int l = 0; l < layers; l++) {
        MLP_ALLOC(m->W[l], mlp_wsize(m, l) * sizeof(float));
        MLP_ALLOC(m->gW[l], mlp_wsize(m, l) * sizeof(float));
        MLP_ALLOC(m->b[l], (size_t)widths[l + 1] * sizeof(float));
        MLP_ALLOC(m->gb[l], (size_t)widths[l + 1] * sizeof(float));
    }
    for (int l = 0; l <= layers; l++) {
        MLP_ALLOC(m->act[l], (size_t)batch * (size_t)widths[l] * sizeof(float));
        if (l) MLP_ALLOC(m->dact[l], (size_t)batch * (size_t)widths[l] * sizeof(float));
    }
    MLP_ALLOC(m->y, (size_t)batch);
#undef MLP_ALLOC
    return DP_OK;
}

static inline void mlp_release(mlp_net *m)
{
    void *all[4 * MLP_MAX_LAYERS + 2 * (MLP_MAX_LAYERS + 1) + 1];
    int n = 0;
    for (int l = 0; l < MLP_MAX_LAYERS; l++) {
        all[n++] = m->W[l]; all[n++] = m->b[l]; all[n++] = m->gW[l]; all[n++] = m->gb[l];
    }
    for (int l = 0; l <= MLP_MAX_LAYERS; l++) { all[n++] = m->act[l]; all[n++] = m->dact[l]; }
    all[n++] = m->y;
    for (int i = 0; i < n; i++) {
        if (m->g) gpu_free(m->g, all[i]);
        else free(all[i]);
    }
    memset(m, 0, sizeof *m);
}

/* Copies host data into the net: W/b (host arrays per layer; NULL skips), then a batch. */
static inline int mlp_set_params(mlp_net *m, float *const *W, float *const *b, char *err)
{
    for (int l = 0; l < m->layers; l++) {
        size_t wn = mlp_wsize(m, l) * sizeof(float), bn = (size_t)m->w[l + 1] * sizeof(float);
        if (m->g) {
            if (gpu_upload(m->g, m->W[l], W[l], wn, err) || gpu_upload(m->g, m->b[l], b[l], bn, err))
                return DP_ERR;
        } else {
            memcpy(m->W[l], W[l], wn);
            memcpy(m->b[l], b[l], bn);
        }
    }
    return DP_OK;
}

static inline int mlp_set_batch(mlp_net *m, const float *x, const uint8_t *y, int rows, char *err)
{
    size_t xn = (size_t)rows * (size_t)m->w[0] * sizeof(float);
    if (m->g)
        return gpu_upload(m->g, m->act[0], x, xn, err) || gpu_upload(m->g, m->y, y, (size_t)rows, err)
                   ? DP_ERR : DP_OK;
    memcpy(m->act[0], x, xn);
    memcpy(m->y, y, (size_t)rows);
    return DP_OK;
}

/* One forward+backward pass on the first `rows` rows of the batch set last; gradients go
 * to gW/gb, the mean loss to *loss. On the GPU it waits (the loss is downloaded). */
static inline int mlp_step(mlp_net *m, int rows, float *loss, char *err)
{
    int L = m->layers;
    gpu_ctx *g = m->g;
    for (int l = 0; l < L; l++) { /* act[l+1] = act[l] W[l] + b[l], ReLU except the last */
        int k = m->w[l], n = m->w[l + 1];
        size_t cnt = (size_t)rows * (size_t)n;
        if (g) {
            if (gpu_sgemm(g, 0, 0, rows, n, k, 1.0f, m->act[l], k, m->W[l], n, 0.0f,
                          m->act[l + 1], n, err) ||
                gpu_bias_add(g, m->act[l + 1], m->b[l], rows, n, err) ||
                (l + 1 < L && gpu_relu(g, m->act[l + 1], cnt, err)))
                return DP_ERR;
        } else {
            float *o = m->act[l + 1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, k, 1.0f, m->act[l], k,
                        m->W[l], n, 0.0f, o, n);
            for (size_t i = 0; i < cnt; i++) {
                o[i] += m->b[l][i % (size_t)n];
                if (l + 1 < L && o[i] < 0.0f) o[i] = 0.0f;
            }
        }
    }
    int C = m->w[L];
    if (g) {
        if (gpu_softmax_xent(g, m->act[L], m->y, rows, C, m->dact[L], loss, err)) return DP_ERR;
    } else {
        double sum = 0.0;
        for (int r = 0; r < rows; r++) {
            const float *z = m->act[L] + (size_t)r * C;
            float *d = m->dact[L] + (size_t)r * C, mx = z[0], s = 0.0f;
            for (int j = 1; j < C; j++) mx = z[j] > mx ? z[j] : mx;
            for (int j = 0; j < C; j++) s += (d[j] = expf(z[j] - mx));
            for (int j = 0; j < C; j++) d[j] = (d[j] / s - (j == m->y[r])) / (float)rows;
            sum += (double)mx + log((double)s) - (double)z[m->y[r]];
        }
        *loss = (float)(sum / rows);
    }
    for (int l = L - 1; l >= 0; l--) { /* dact[l+1] is the gradient at layer l's output */
        int k = m->w[l], n = m->w[l + 1];
        const float *in = m->act[l], *d = m->dact[l + 1];
        if (g) {
            if (gpu_sgemm(g, 1, 0, k, n, rows, 1.0f, in, k, d, n, 0.0f, m->gW[l], n, err) ||
                gpu_col_sum(g, m->gb[l], d, rows, n, err))
                return DP_ERR;
            if (l > 0 &&
                (gpu_sgemm(g, 0, 1, rows, k, n, 1.0f, d, n, m->W[l], n, 0.0f, m->dact[l], k, err) ||
                 gpu_relu_grad(g, m->dact[l], m->act[l], (size_t)rows * (size_t)k, err)))
                return DP_ERR;
        } else {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, rows, 1.0f, in, k, d, n,
                        0.0f, m->gW[l], n);
            memset(m->gb[l], 0, (size_t)n * sizeof(float));
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < n; j++) m->gb[l][j] += d[(size_t)r * n + j];
            if (l > 0) {
                float *dl = m->dact[l];
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, n, 1.0f, d, n,
                            m->W[l], n, 0.0f, dl, k);
                for (size_t i = 0; i < (size_t)rows * (size_t)k; i++)
                    if (!(m->act[l][i] > 0.0f)) dl[i] = 0.0f;
            }
        }
    }
    return DP_OK;
}

#endif
