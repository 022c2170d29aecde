/* gpu.cu — runtime/gpu/gpu.h on CUDA: the device list (cudart), one context per device
 * (a non-blocking stream and a cuBLAS handle bound to it), row-major SGEMM through
 * cuBLAS's column-major interface, and the element-wise kernels of the MLP.
 * cudart is linked statically; cuBLAS is opened (dlopen) by the first gpu_open, because
 * merely loading libcublas + libcublasLt costs every process ~0.2 s at startup, and most
 * processes (every one on a machine without a GPU) never use it.
 * Invariants: every call first makes the context's device current on the calling thread
 * (cudaSetDevice is per thread), so one thread may drive several contexts; all work of a
 * context runs in order on its one stream; no kernel uses atomics, so every result is
 * the same bit for bit from run to run. Every CUDA or cuBLAS error becomes dp_fail with
 * the call and the library's error text. A context is used by one thread at a time.
 * cuBLAS runs in its default math mode: true FP32, no TF32 tensor-op rounding. */
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "common/dp.h"
#include "runtime/gpu/gpu.h"
}

/* The cuBLAS entry points used here, resolved from the library at gpu_open. Held per
 * context (no mutable globals); dlopen counts references, so it is loaded once. */
struct blas_api {
    void *lib;
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSgemm_v2) sgemm;
};

struct gpu_ctx {
    int dev;
    cudaStream_t stream;
    struct blas_api api;
    cublasHandle_t blas;
    float *row_loss;       /* device scratch: one loss per row for gpu_softmax_xent */
    int row_loss_cap;      /* rows it holds */
    struct xent_out *out;  /* device: the reduced loss and a bad-label flag */
};

/* What gpu_softmax_xent downloads: the mean loss and the first out-of-range label + 1
 * (0 when every label was in range). */
struct xent_out {
    float loss;
    int bad_label;
};

#define THREADS 256

/* ---- errors ---------------------------------------------------------------------- */

static int cuda_fail(char *err, const char *what, cudaError_t e)
{
    return dp_fail(err, DP_ERR, "CUDA: %s: %s (%s)", what, cudaGetErrorString(e),
                   cudaGetErrorName(e));
}

static const char *cublas_text(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS not initialised";
    case CUBLAS_STATUS_ALLOC_FAILED: return "cuBLAS allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value (a size or leading dimension)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "kernel execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "license error";
    }
    return "unknown cuBLAS status";
}

static int blas_fail(char *err, const char *what, cublasStatus_t s)
{
    return dp_fail(err, DP_ERR, "cuBLAS: %s: %s (status %d)", what, cublas_text(s), (int)s);
}

/* CU(call): return the CUDA error of call, with its text, from the enclosing function. */
#define CU(call) do { \
    cudaError_t cu_e_ = (call); \
    if (cu_e_ != cudaSuccess) return cuda_fail(err, #call, cu_e_); \
} while (0)
#define BLAS(call) do { \
    cublasStatus_t bl_s_ = (call); \
    if (bl_s_ != CUBLAS_STATUS_SUCCESS) return blas_fail(err, #call, bl_s_); \
} while (0)

/* A kernel launch reports a bad configuration through cudaGetLastError (a fault inside
 * the kernel shows later, at the next call that waits). */
static int launched(char *err, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? DP_OK : cuda_fail(err, kernel, e);
}

/* Makes g's device current on this thread. */
static int use(gpu_ctx *g, char *err)
{
    dp_assert("gpu: NULL context", g != NULL);
    CU(cudaSetDevice(g->dev));
    return DP_OK;
}

/* Blocks for n threads in a grid-stride loop: enough to fill any GPU, never 0. */
static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    if (b > 65536) b = 65536;
    return b ? (unsigned)b : 1u;
}

/* ---- devices --------------------------------------------------------------------- */

extern "C" int gpu_built(void) { return 1; }

static int driver_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

extern "C" int gpu_device_count(const char **why)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear it, so no later call reports it */
        if (why) {
            switch (e) {
            case cudaErrorInsufficientDriver:
                /* The same error for no driver and an old one: cudart has loaded
                 * libcuda.so.1 only if there is one. */
                *why = driver_loaded() ? "CUDA driver older than this CUDA runtime"
                                       : "no CUDA driver";
                break;
            case cudaErrorNoDevice: *why = "no CUDA device"; break;
            default: *why = cudaGetErrorString(e); break; /* a static string */
            }
        }
        return 0;
    }
    if (n == 0 && why) *why = "no CUDA device";
    return n;
}

/* FP32 lanes per SM for a compute capability (CUDA C Programming Guide, "Arithmetic
 * Instructions" throughput table); 128 for anything newer than this table. */
static int fp32_lanes(int major, int minor)
{
    switch (major) {
    case 3: return 192;
    case 5: return 128;
    case 6: return minor == 0 ? 64 : 128;
    case 7: return 64;                     /* Volta, Turing */
    case 8: return minor == 0 ? 64 : 128;  /* A100 64; GA10x, Orin, Ada 128 */
    default: return 128;                   /* Hopper, Blackwell */
    }
}

extern "C" int gpu_device_info(int dev, gpu_info *info, char *err)
{
    int n = gpu_device_count(NULL);
    if (dev < 0 || dev >= n)
        return dp_fail(err, DP_EINVAL, "no CUDA device %d (%d present)", dev, n);
    memset(info, 0, sizeof *info);
    cudaDeviceProp p;
    CU(cudaGetDeviceProperties(&p, dev));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    CU(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, dev));
    /* TensorFlow's log writes the bus id in lower case: 0000:19:00.0 */
    for (char *c = info->pci_bus_id; *c; c++)
        if (*c >= 'A' && *c <= 'F') *c = (char)(*c - 'A' + 'a');
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->memory_bytes = p.totalGlobalMem;
    /* cudaDeviceProp.clockRate is gone in CUDA 13; the attribute remains (kHz). */
    int khz = 0;
    CU(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    info->peak_fp32_flops = (double)p.multiProcessorCount * fp32_lanes(p.major, p.minor) *
                            2.0 * (double)khz * 1e3;
    return DP_OK;
}

/* ---- contexts and memory --------------------------------------------------------- */

#ifndef DP_CUBLAS_DIR
#define DP_CUBLAS_DIR "/usr/local/cuda/lib64"
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

/* Opens cuBLAS (the toolkit's copy the build used, else the loader's search path) and
 * resolves the entry points; RTLD_NODELETE keeps it loaded after the last context. */
static int blas_load(struct blas_api *a, char *err)
{
    const char *paths[] = {DP_CUBLAS_DIR "/" CUBLAS_SONAME, CUBLAS_SONAME};
    for (size_t i = 0; i < DP_ARRAY_LEN(paths) && !a->lib; i++)
        a->lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!a->lib) {
        const char *why = dlerror();
        return dp_fail(err, DP_ERR, "cuBLAS: cannot load %s: %s", CUBLAS_SONAME, why ? why : "?");
    }
    a->create = (decltype(a->create))dlsym(a->lib, "cublasCreate_v2");
    a->destroy = (decltype(a->destroy))dlsym(a->lib, "cublasDestroy_v2");
    a->set_stream = (decltype(a->set_stream))dlsym(a->lib, "cublasSetStream_v2");
    a->sgemm = (decltype(a->sgemm))dlsym(a->lib, "cublasSgemm_v2");
    if (!a->create || !a->destroy || !a->set_stream || !a->sgemm)
        return dp_fail(err, DP_ERR, "cuBLAS: %s lacks an entry point (cublasCreate_v2, "
                       "cublasDestroy_v2, cublasSetStream_v2, cublasSgemm_v2)", CUBLAS_SONAME);
    return DP_OK;
}

extern "C" gpu_ctx *gpu_open(int dev, char *err)
{
    const char *why = NULL;
    int n = gpu_device_count(&why);
    if (n == 0) {
        dp_fail(err, DP_EINVAL, "cannot open CUDA device %d: %s", dev, why);
        return NULL;
    }
    if (dev < 0 || dev >= n) {
        dp_fail(err, DP_EINVAL, "cannot open CUDA device %d: %d present", dev, n);
        return NULL;
    }
    gpu_ctx *g = (gpu_ctx *)xcalloc(1, sizeof *g);
    g->dev = dev;
    cudaError_t e;
    cublasStatus_t s;
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        cuda_fail(err, "cudaSetDevice", e);
        goto fail;
    }
    /* Non-blocking: no implicit ordering against the legacy default stream, which
     * nothing here uses. */
    if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        cuda_fail(err, "cudaStreamCreateWithFlags", e);
        goto fail;
    }
    if ((e = cudaMalloc((void **)&g->out, sizeof *g->out)) != cudaSuccess) {
        cuda_fail(err, "cudaMalloc", e);
        goto fail;
    }
    if (blas_load(&g->api, err)) goto fail;
    if ((s = g->api.create(&g->blas)) != CUBLAS_STATUS_SUCCESS) {
        g->blas = NULL;
        blas_fail(err, "cublasCreate", s);
        goto fail;
    }
    if ((s = g->api.set_stream(g->blas, g->stream)) != CUBLAS_STATUS_SUCCESS) {
        blas_fail(err, "cublasSetStream", s);
        goto fail;
    }
    return g;
fail:
    gpu_close(g);
    return NULL;
}

extern "C" void gpu_close(gpu_ctx *g)
{
    if (!g) return;
    /* Teardown reports nothing: a failed context is as closed as it will get. */
    if (cudaSetDevice(g->dev) == cudaSuccess) {
        if (g->stream) cudaStreamSynchronize(g->stream);
        if (g->blas) g->api.destroy(g->blas);
        cudaFree(g->row_loss);
        cudaFree(g->out);
        if (g->stream) cudaStreamDestroy(g->stream);
    }
    cudaGetLastError();
    if (g->api.lib) dlclose(g->api.lib);
    free(g);
}

extern "C" void *gpu_alloc(gpu_ctx *g, size_t bytes, char *err)
{
    if (use(g, err)) return NULL;
    void *p = NULL;
    /* cudaMalloc(0) succeeds with NULL, which callers read as failure. */
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        dp_fail(err, DP_ERR, "CUDA: cudaMalloc of %zu bytes on device %d: %s (%s)", bytes,
                g->dev, cudaGetErrorString(e), cudaGetErrorName(e));
        return NULL;
    }
    return p;
}

extern "C" void gpu_free(gpu_ctx *g, void *p)
{
    if (!p) return;
    if (cudaSetDevice(g->dev) == cudaSuccess) cudaFree(p); /* waits for the device */
    cudaGetLastError();
}

extern "C" int gpu_upload(gpu_ctx *g, void *dev_dst, const void *host_src, size_t bytes,
                          char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!bytes) return DP_OK;
    CU(cudaMemcpyAsync(dev_dst, host_src, bytes, cudaMemcpyHostToDevice, g->stream));
    CU(cudaStreamSynchronize(g->stream));
    return DP_OK;
}

extern "C" int gpu_download(gpu_ctx *g, void *host_dst, const void *dev_src, size_t bytes,
                            char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!bytes) return DP_OK;
    CU(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, g->stream));
    CU(cudaStreamSynchronize(g->stream));
    return DP_OK;
}

extern "C" int gpu_copy(gpu_ctx *g, void *dev_dst, const void *dev_src, size_t bytes,
                        char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!bytes) return DP_OK;
    CU(cudaMemcpyAsync(dev_dst, dev_src, bytes, cudaMemcpyDeviceToDevice, g->stream));
    return DP_OK;
}

extern "C" int gpu_sync(gpu_ctx *g, char *err)
{
    if (use(g, err)) return DP_ERR;
    CU(cudaStreamSynchronize(g->stream));
    return DP_OK;
}

/* ---- SGEMM ----------------------------------------------------------------------- */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a row-major
 * matrix read column-major is its transpose: so cuBLAS gets B before A, n before m, and
 * the same transpose flags and strides. */
extern "C" int gpu_sgemm(gpu_ctx *g, int trans_a, int trans_b, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b, int ldb,
                         float beta, float *c, int ldc, char *err)
{
    if (m < 0 || n < 0 || k < 0)
        return dp_fail(err, DP_EINVAL, "gpu_sgemm: negative size %d x %d x %d", m, n, k);
    if (use(g, err)) return DP_ERR;
    if (!m || !n) return DP_OK;
    BLAS(g->api.sgemm(g->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                     trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                     &beta, c, ldc));
    return DP_OK;
}

/* ---- element-wise kernels -------------------------------------------------------- */

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

static __global__ void k_bias_add(float *y, const float *bias, size_t n, int cols)
{
    GRID_STRIDE(i, n) y[i] += bias[i % (size_t)cols];
}

static __global__ void k_relu(float *y, size_t n)
{
    GRID_STRIDE(i, n) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

static __global__ void k_relu_grad(float *dy, const float *y, size_t n)
{
    GRID_STRIDE(i, n) dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static __global__ void k_axpy(size_t n, float a, const float *x, float *y)
{
    GRID_STRIDE(i, n) y[i] += a * x[i];
}

static __global__ void k_scale(size_t n, float a, float *x)
{
    GRID_STRIDE(i, n) x[i] *= a;
}

/* Column sums: a block of COLS_X x COLS_Y threads owns COLS_X adjacent columns (so a
 * warp reads adjacent addresses); its COLS_Y rows of threads each sum every COLS_Y-th
 * row, then add their partial sums in a fixed order. */
#define COLS_X 32
#define COLS_Y 8
static __global__ void k_col_sum(float *out, const float *x, int rows, int cols)
{
    __shared__ float part[COLS_Y][COLS_X];
    int c = blockIdx.x * COLS_X + threadIdx.x;
    float s = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += COLS_Y) s += x[(size_t)r * cols + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        for (int j = 1; j < COLS_Y; j++) s += part[j][threadIdx.x];
        out[c] = s;
    }
}

/* Softmax cross-entropy, one warp per row: the row maximum, the sum of exp(z - max),
 * then row_loss[r] = max + log(sum) - z[label] (the form runtime/nn.c uses) and
 * dlogits = (softmax - onehot) / rows. A label >= cols is recorded in out->bad_label. */
#define XENT_ROWS 8 /* warps (rows) per block */
static __global__ void k_xent_rows(const float *z, const uint8_t *labels, int rows, int cols,
                                   float *dz, float *row_loss, struct xent_out *out)
{
    int r = blockIdx.x * XENT_ROWS + threadIdx.y;
    int lane = threadIdx.x;
    if (r >= rows) return;
    const float *zr = z + (size_t)r * cols;
    float mx = -INFINITY;
    for (int j = lane; j < cols; j += 32) mx = fmaxf(mx, zr[j]);
    for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int j = lane; j < cols; j += 32) sum += expf(zr[j] - mx);
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    int y = labels[r];
    if (y >= cols) {
        if (lane == 0) {
            atomicCAS(&out->bad_label, 0, y + 1); /* a flag only: no result depends on order */
            row_loss[r] = 0.0f;
        }
        y = -1;
    }
    float inv = 1.0f / sum, inv_rows = 1.0f / (float)rows;
    float *dr = dz + (size_t)r * cols;
    for (int j = lane; j < cols; j += 32)
        dr[j] = (expf(zr[j] - mx) * inv - (j == y ? 1.0f : 0.0f)) * inv_rows;
    if (lane == 0 && y >= 0) row_loss[r] = (float)((double)mx + log((double)sum) - (double)zr[y]);
}

/* The mean of row_loss in one block, summed in double in a fixed tree order. */
static __global__ void k_mean(const float *row_loss, int rows, struct xent_out *out)
{
    __shared__ double part[THREADS];
    double s = 0.0;
    for (int r = threadIdx.x; r < rows; r += THREADS) s += row_loss[r];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w; w >>= 1) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out->loss = (float)(part[0] / rows);
}

extern "C" int gpu_bias_add(gpu_ctx *g, float *y, const float *bias, int rows, int cols,
                            char *err)
{
    if (rows < 0 || cols < 0)
        return dp_fail(err, DP_EINVAL, "gpu_bias_add: negative size %d x %d", rows, cols);
    if (use(g, err)) return DP_ERR;
    size_t n = (size_t)rows * (size_t)cols;
    if (!n) return DP_OK;
    k_bias_add<<<blocks_for(n), THREADS, 0, g->stream>>>(y, bias, n, cols);
    return launched(err, "k_bias_add");
}

extern "C" int gpu_relu(gpu_ctx *g, float *y, size_t n, char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!n) return DP_OK;
    k_relu<<<blocks_for(n), THREADS, 0, g->stream>>>(y, n);
    return launched(err, "k_relu");
}

extern "C" int gpu_relu_grad(gpu_ctx *g, float *dy, const float *y, size_t n, char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!n) return DP_OK;
    k_relu_grad<<<blocks_for(n), THREADS, 0, g->stream>>>(dy, y, n);
    return launched(err, "k_relu_grad");
}

extern "C" int gpu_col_sum(gpu_ctx *g, float *out, const float *x, int rows, int cols,
                           char *err)
{
    if (rows < 0 || cols < 0)
        return dp_fail(err, DP_EINVAL, "gpu_col_sum: negative size %d x %d", rows, cols);
    if (use(g, err)) return DP_ERR;
    if (!cols) return DP_OK;
    dim3 threads(COLS_X, COLS_Y);
    k_col_sum<<<(unsigned)((cols + COLS_X - 1) / COLS_X), threads, 0, g->stream>>>(out, x, rows,
                                                                                   cols);
    return launched(err, "k_col_sum");
}

extern "C" int gpu_softmax_xent(gpu_ctx *g, const float *logits, const uint8_t *labels,
                                int rows, int cols, float *dlogits, float *loss_host,
                                char *err)
{
    if (rows < 1 || cols < 1)
        return dp_fail(err, DP_EINVAL, "gpu_softmax_xent: size %d x %d (both must be >= 1)",
                       rows, cols);
    if (use(g, err)) return DP_ERR;
    if (rows > g->row_loss_cap) {
        /* cudaFree waits for the device, so the old scratch is no longer in use. */
        cudaFree(g->row_loss);
        g->row_loss = NULL;
        g->row_loss_cap = 0;
        CU(cudaMalloc((void **)&g->row_loss, (size_t)rows * sizeof(float)));
        g->row_loss_cap = rows;
    }
    CU(cudaMemsetAsync(g->out, 0, sizeof *g->out, g->stream));
    dim3 threads(32, XENT_ROWS);
    k_xent_rows<<<(unsigned)((rows + XENT_ROWS - 1) / XENT_ROWS), threads, 0, g->stream>>>(
        logits, labels, rows, cols, dlogits, g->row_loss, g->out);
    if (launched(err, "k_xent_rows")) return DP_ERR;
    k_mean<<<1, THREADS, 0, g->stream>>>(g->row_loss, rows, g->out);
    if (launched(err, "k_mean")) return DP_ERR;
    struct xent_out o;
    CU(cudaMemcpyAsync(&o, g->out, sizeof o, cudaMemcpyDeviceToHost, g->stream));
    CU(cudaStreamSynchronize(g->stream));
    if (o.bad_label)
        return dp_fail(err, DP_EINVAL, "gpu_softmax_xent: label %d out of range (%d classes)",
                       o.bad_label - 1, cols);
    if (loss_host) *loss_host = o.loss;
    return DP_OK;
}

extern "C" int gpu_axpy(gpu_ctx *g, size_t n, float a, const float *x, float *y, char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!n) return DP_OK;
    k_axpy<<<blocks_for(n), THREADS, 0, g->stream>>>(n, a, x, y);
    return launched(err, "k_axpy");
}

extern "C" int gpu_scale(gpu_ctx *g, size_t n, float a, float *x, char *err)
{
    if (use(g, err)) return DP_ERR;
    if (!n) return DP_OK;
    k_scale<<<blocks_for(n), THREADS, 0, g->stream>>>(n, a, x);
    return launched(err, "k_scale");
}
