/* gpu.h — the CUDA side of the device layer (runtime/device.h): cuBLAS for the matrix
 * products, small CUDA kernels for the element-wise parts, device memory and host <->
 * device copies. Built from runtime/gpu/gpu.cu when nvcc is found (the Makefile defines
 * DP_HAVE_CUDA=1 and links cudart and cublas); otherwise runtime/gpu/gpu_none.c gives
 * the same functions, reporting that CUDA was not built and that there are no devices.
 * A machine with the CUDA build but no GPU or driver sees gpu_device_count() == 0 and
 * runs everything else unchanged.
 *
 * Matrices are row-major float32 (as runtime/nn.c). Every call is asynchronous on the
 * context's stream unless it says otherwise; gpu_sync() waits. Functions returning int
 * give DP_OK or a negative dp_err with the CUDA/cuBLAS error text in err (DP_ERRLEN). */
#ifndef RUNTIME_GPU_GPU_H
#define RUNTIME_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

/* 1 when this binary was built with CUDA, else 0. */
int gpu_built(void);

/* CUDA devices visible to this process (0 without the CUDA build, a driver or a GPU).
 * Never fails: errors read as 0 devices; *why (may be NULL) gets a short reason when
 * the count is 0 ("CUDA not built", "no CUDA driver", "no CUDA device", or "CUDA
 * driver older than this CUDA runtime"). */
int gpu_device_count(const char **why);

typedef struct gpu_info {
    char name[256];          /* "NVIDIA H200" */
    char pci_bus_id[32];     /* "0000:19:00.0" */
    int cc_major, cc_minor;  /* compute capability */
    size_t memory_bytes;     /* total global memory */
    double peak_fp32_flops;  /* SMs x FP32 lanes per SM x 2 x clock: the cuBLAS bench's roof */
} gpu_info;

/* Fills *info for device dev in [0, gpu_device_count()). */
int gpu_device_info(int dev, gpu_info *info, char *err);

/* One context per device: the device, a stream and a cuBLAS handle. */
typedef struct gpu_ctx gpu_ctx;
gpu_ctx *gpu_open(int dev, char *err);
void gpu_close(gpu_ctx *g);

/* Device memory (bytes); NULL with err on failure. gpu_free(NULL) is a no-op. */
void *gpu_alloc(gpu_ctx *g, size_t bytes, char *err);
void gpu_free(gpu_ctx *g, void *p);
/* Host <-> device copies of bytes; these two wait for the copy (and all earlier work
 * on the stream) to finish, so host buffers may be reused on return. */
int gpu_upload(gpu_ctx *g, void *dev_dst, const void *host_src, size_t bytes, char *err);
int gpu_download(gpu_ctx *g, void *host_dst, const void *dev_src, size_t bytes, char *err);
/* Device -> device copy (same context). */
int gpu_copy(gpu_ctx *g, void *dev_dst, const void *dev_src, size_t bytes, char *err);
int gpu_sync(gpu_ctx *g, char *err);

/* Row-major SGEMM through cuBLAS: C[m x n] = alpha * op(A) * op(B) + beta * C, with
 * op(A) m x k and op(B) k x n; lda/ldb/ldc are row strides (as cblas_sgemm with
 * CblasRowMajor). */
int gpu_sgemm(gpu_ctx *g, int trans_a, int trans_b, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc,
              char *err);

/* Element-wise kernels (all pointers on the device). */
/* y[r][c] += bias[c] for a rows x cols y. */
int gpu_bias_add(gpu_ctx *g, float *y, const float *bias, int rows, int cols, char *err);
/* y = max(y, 0) in place. */
int gpu_relu(gpu_ctx *g, float *y, size_t n, char *err);
/* dy *= (y > 0): ReLU's backward pass given its output y. */
int gpu_relu_grad(gpu_ctx *g, float *dy, const float *y, size_t n, char *err);
/* out[c] = sum over rows of x[r][c] (the bias gradient). */
int gpu_col_sum(gpu_ctx *g, float *out, const float *x, int rows, int cols, char *err);
/* Softmax cross-entropy over rows x cols logits and uint8 labels (device): dlogits =
 * (softmax - onehot) / rows, and *loss_host = the mean loss (this call waits). */
int gpu_softmax_xent(gpu_ctx *g, const float *logits, const uint8_t *labels, int rows, int cols,
                     float *dlogits, float *loss_host, char *err);
/* y += a * x (gradient averaging, SGD). */
int gpu_axpy(gpu_ctx *g, size_t n, float a, const float *x, float *y, char *err);
/* x *= a. */
int gpu_scale(gpu_ctx *g, size_t n, float a, float *x, char *err);

#endif
