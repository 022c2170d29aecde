/* gpu_none.c — runtime/gpu/gpu.h without CUDA: the build found no nvcc (or CUDA=0), so
 * there are no CUDA devices and every device call fails saying so. */
#include "runtime/gpu/gpu.h"

#include "common/dp.h"

#define NOT_BUILT "CUDA not built (no nvcc found, or CUDA=0)"

int gpu_built(void) { return 0; }

int gpu_device_count(const char **why)
{
    if (why) *why = NOT_BUILT;
    return 0;
}

int gpu_device_info(int dev, gpu_info *info, char *err)
{
    DP_UNUSED(dev);
    DP_UNUSED(info);
    return dp_fail(err, DP_EINVAL, NOT_BUILT);
}

gpu_ctx *gpu_open(int dev, char *err)
{
    DP_UNUSED(dev);
    dp_fail(err, DP_EINVAL, NOT_BUILT);
    return NULL;
}

void gpu_close(gpu_ctx *g) { DP_UNUSED(g); }

void *gpu_alloc(gpu_ctx *g, size_t bytes, char *err)
{
    DP_UNUSED(g);
    DP_UNUSED(bytes);
    dp_fail(err, DP_EINVAL, NOT_BUILT);
    return NULL;
}

void gpu_free(gpu_ctx *g, void *p)
{
    DP_UNUSED(g);
    DP_UNUSED(p);
}

/* No context can be opened, so these are never reached with one; they fail all the same. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define NONE(...) { (void)g; return dp_fail(err, DP_EINVAL, NOT_BUILT); }
int gpu_upload(gpu_ctx *g, void *d, const void *s, size_t n, char *err) NONE()
int gpu_download(gpu_ctx *g, void *d, const void *s, size_t n, char *err) NONE()
int gpu_copy(gpu_ctx *g, void *d, const void *s, size_t n, char *err) NONE()
int gpu_sync(gpu_ctx *g, char *err) NONE()
int gpu_sgemm(gpu_ctx *g, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc, char *err) NONE()
int gpu_bias_add(gpu_ctx *g, float *y, const float *b, int rows, int cols, char *err) NONE()
int gpu_relu(gpu_ctx *g, float *y, size_t n, char *err) NONE()
int gpu_relu_grad(gpu_ctx *g, float *dy, const float *y, size_t n, char *err) NONE()
int gpu_col_sum(gpu_ctx *g, float *out, const float *x, int rows, int cols, char *err) NONE()
int gpu_softmax_xent(gpu_ctx *g, const float *l, const uint8_t *y, int rows, int cols, float *dl,
                     float *loss, char *err) NONE()
int gpu_axpy(gpu_ctx *g, size_t n, float a, const float *x, float *y, char *err) NONE()
int gpu_scale(gpu_ctx *g, size_t n, float a, float *x, char *err) NONE()
