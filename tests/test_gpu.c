/* test_gpu.c — runtime/gpu/gpu.h. Without a CUDA device (always so in CI): gpu_built()
 * matches the build, the device count is 0 with a reason, gpu_open(0) fails saying why,
 * and the GPU checks are one "skipped: no CUDA device (<why>)". With one: every kernel
 * and SGEMM (all four transpose combinations, odd sizes, padded strides) against plain
 * loops on the CPU, and an MLP forward+backward composed of these calls (tests/gpu_mlp.h)
 * against runtime/nn.c, all within 1e-4 relative (max |gpu - cpu| / max |cpu|). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "runtime/gpu/gpu.h"
#include "runtime/nn.h"
#include "tests/gpu_mlp.h"

#ifdef DP_HAVE_CUDA
#define BUILT 1
#else
#define BUILT 0
#endif

#define TOL 1e-4

static char err[DP_ERRLEN];
static dp_rng rng;

/* max |a - b| / max |b|: the error relative to the reference's scale. */
static double rel_err(const float *a, const float *b, size_t n)
{
    double d = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        d = e > d ? e : d;
        s = fabs((double)b[i]) > s ? fabs((double)b[i]) : s;
    }
    return s > 0.0 ? d / s : d;
}
#define CHECK_REL(gpu, cpu, n, what) do { double r_ = rel_err((gpu), (cpu), (n)); \
    CHECK_MSG(r_ <= TOL, "%s: relative error %.3g", (what), r_); } while (0)

static float *randv(size_t n, double scale)
{
    float *v = xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)((2.0 * dp_rng_uniform(&rng) - 1.0) * scale);
    return v;
}

/* A device copy of n host floats (the test stops on failure: nothing after it can run). */
static float *dev_copy(gpu_ctx *g, const void *host, size_t bytes)
{
    float *d = gpu_alloc(g, bytes, err);
    if (!d || gpu_upload(g, d, host, bytes, err)) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    return d;
}

static void get(gpu_ctx *g, void *host, const void *dev, size_t bytes)
{
    int rc = gpu_download(g, host, dev, bytes, err);
    CHECK_MSG(rc == 0, "download: %s", err);
}

static void test_no_device(const char *why)
{
    CHECK_MSG(why && *why, "a reason for 0 devices");
    if (BUILT)
        CHECK_MSG(!strcmp(why, "no CUDA driver") || !strcmp(why, "no CUDA device") ||
                  !strcmp(why, "CUDA driver older than this CUDA runtime"), "%s", why);
    else
        CHECK_MSG(!strncmp(why, "CUDA not built", 14), "%s", why);
    err[0] = 0;
    gpu_ctx *g = gpu_open(0, err);
    CHECK(g == NULL);
    CHECK_MSG(strstr(err, why) != NULL, "gpu_open(0) says why: '%s'", err);
    gpu_info info;
    CHECK(gpu_device_info(0, &info, err) != 0);
    gpu_close(NULL);
}

/* C = alpha op(A) op(B) + beta C with padded strides, for each transpose combination. */
static void test_sgemm(gpu_ctx *g, int m, int n, int k)
{
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        int lda = ac + 3, ldb = bc + 1, ldc = n + 2;
        float alpha = 0.75f, beta = -0.5f;
        float *a = randv((size_t)ar * lda, 1), *b = randv((size_t)br * ldb, 1);
        float *c = randv((size_t)m * ldc, 1), *ref = xmalloc((size_t)m * ldc * sizeof *ref);
        float *out = xmalloc((size_t)m * ldc * sizeof *out);
        memcpy(ref, c, (size_t)m * ldc * sizeof *ref);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0.0;
                for (int p = 0; p < k; p++)
                    s += (double)(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                         (double)(tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
                ref[(size_t)i * ldc + j] = (float)(alpha * s + beta * (double)c[(size_t)i * ldc + j]);
            }
        float *da = dev_copy(g, a, (size_t)ar * lda * 4), *db = dev_copy(g, b, (size_t)br * ldb * 4);
        float *dc = dev_copy(g, c, (size_t)m * ldc * 4);
        int rc = gpu_sgemm(g, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc, err);
        CHECK_MSG(rc == 0, "sgemm: %s", err);
        get(g, out, dc, (size_t)m * ldc * 4);
        char what[64];
        snprintf(what, sizeof what, "sgemm %c%c %dx%dx%d", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
        CHECK_REL(out, ref, (size_t)m * ldc, what);
        /* the padding between rows is untouched */
        int pad_ok = 1;
        for (int i = 0; i < m; i++)
            for (int j = n; j < ldc; j++) pad_ok &= out[(size_t)i * ldc + j] == c[(size_t)i * ldc + j];
        CHECK_MSG(pad_ok, "%s: wrote into the row padding", what);
        gpu_free(g, da); gpu_free(g, db); gpu_free(g, dc);
        free(a); free(b); free(c); free(ref); free(out);
    }
}

static void test_elementwise(gpu_ctx *g)
{
    int rows = 37, cols = 45;
    size_t n = (size_t)rows * cols;
    float *y = randv(n, 2), *bias = randv((size_t)cols, 1), *ref = xmalloc(n * 4), *out = xmalloc(n * 4);
    float *dy = dev_copy(g, y, n * 4), *dbias = dev_copy(g, bias, (size_t)cols * 4);

    CHECK_MSG(gpu_bias_add(g, dy, dbias, rows, cols, err) == 0, "%s", err);
    for (size_t i = 0; i < n; i++) ref[i] = y[i] + bias[i % cols];
    get(g, out, dy, n * 4);
    CHECK_REL(out, ref, n, "bias_add");

    CHECK_MSG(gpu_relu(g, dy, n, err) == 0, "%s", err);
    for (size_t i = 0; i < n; i++) ref[i] = ref[i] > 0 ? ref[i] : 0;
    get(g, out, dy, n * 4);
    CHECK_REL(out, ref, n, "relu");
    float *h = xmalloc(n * 4);
    memcpy(h, ref, n * 4);

    float *grad = randv(n, 1), *dgrad = dev_copy(g, grad, n * 4);
    CHECK_MSG(gpu_relu_grad(g, dgrad, dy, n, err) == 0, "%s", err);
    for (size_t i = 0; i < n; i++) ref[i] = h[i] > 0 ? grad[i] : 0;
    get(g, out, dgrad, n * 4);
    CHECK_REL(out, ref, n, "relu_grad");

    /* column sums: a tall matrix (many rows per thread) and a wide one (several blocks) */
    int shapes[][2] = {{1000, 37}, {3, 70}, {1, 1}};
    for (size_t s = 0; s < DP_ARRAY_LEN(shapes); s++) {
        int r = shapes[s][0], c = shapes[s][1];
        float *x = randv((size_t)r * c, 1), *dx = dev_copy(g, x, (size_t)r * c * 4);
        float *dout = gpu_alloc(g, (size_t)c * 4, err), *o = xmalloc((size_t)c * 4), *want = xmalloc((size_t)c * 4);
        for (int j = 0; j < c; j++) {
            double sum = 0;
            for (int i = 0; i < r; i++) sum += x[(size_t)i * c + j];
            want[j] = (float)sum;
        }
        CHECK_MSG(gpu_col_sum(g, dout, dx, r, c, err) == 0, "%s", err);
        get(g, o, dout, (size_t)c * 4);
        CHECK_REL(o, want, (size_t)c, "col_sum");
        gpu_free(g, dx); gpu_free(g, dout); free(x); free(o); free(want);
    }

    size_t big = 100003;
    float *xv = randv(big, 1), *yv = randv(big, 1), *r2 = xmalloc(big * 4), *o2 = xmalloc(big * 4);
    float *dxv = dev_copy(g, xv, big * 4), *dyv = dev_copy(g, yv, big * 4);
    CHECK_MSG(gpu_axpy(g, big, -0.3f, dxv, dyv, err) == 0, "%s", err);
    for (size_t i = 0; i < big; i++) r2[i] = yv[i] + -0.3f * xv[i];
    get(g, o2, dyv, big * 4);
    CHECK_REL(o2, r2, big, "axpy");
    CHECK_MSG(gpu_scale(g, big, 2.5f, dyv, err) == 0, "%s", err);
    for (size_t i = 0; i < big; i++) r2[i] *= 2.5f;
    get(g, o2, dyv, big * 4);
    CHECK_REL(o2, r2, big, "scale");
    /* device-to-device copy, then a sync */
    CHECK_MSG(gpu_copy(g, dxv, dyv, big * 4, err) == 0, "%s", err);
    CHECK_MSG(gpu_sync(g, err) == 0, "%s", err);
    get(g, o2, dxv, big * 4);
    CHECK(!memcmp(o2, r2, big * 4));

    gpu_free(g, dy); gpu_free(g, dbias); gpu_free(g, dgrad); gpu_free(g, dxv); gpu_free(g, dyv);
    free(y); free(bias); free(ref); free(out); free(h); free(grad); free(xv); free(yv); free(r2); free(o2);
}

/* Softmax cross-entropy against the textbook formula in double; large logits (x 100)
 * would overflow expf without the row maximum subtracted; cols > 32 spans lanes. */
static void test_xent(gpu_ctx *g, int rows, int cols, double scale)
{
    size_t n = (size_t)rows * cols;
    float *z = randv(n, scale), *want = xmalloc(n * 4), *got = xmalloc(n * 4);
    uint8_t *y = xmalloc((size_t)rows);
    double loss = 0;
    for (int r = 0; r < rows; r++) {
        y[r] = (uint8_t)dp_rng_below(&rng, (uint64_t)cols);
        const float *zr = z + (size_t)r * cols;
        double mx = zr[0], s = 0;
        for (int j = 1; j < cols; j++) mx = zr[j] > mx ? zr[j] : mx;
        for (int j = 0; j < cols; j++) s += exp(zr[j] - mx);
        for (int j = 0; j < cols; j++)
            want[(size_t)r * cols + j] = (float)((exp(zr[j] - mx) / s - (j == y[r])) / rows);
        loss += mx + log(s) - zr[y[r]];
    }
    loss /= rows;
    float *dz = dev_copy(g, z, n * 4), *dd = gpu_alloc(g, n * 4, err);
    uint8_t *dy = (uint8_t *)dev_copy(g, y, (size_t)rows);
    float got_loss = -1;
    CHECK_MSG(gpu_softmax_xent(g, dz, dy, rows, cols, dd, &got_loss, err) == 0, "%s", err);
    get(g, got, dd, n * 4);
    char what[64];
    snprintf(what, sizeof what, "softmax_xent %dx%d (x%g)", rows, cols, scale);
    CHECK_REL(got, want, n, what);
    CHECK_MSG(fabs(got_loss - loss) <= TOL * fmax(1.0, fabs(loss)), "%s: loss %.7g vs %.7g", what,
              (double)got_loss, loss);
    /* a label out of range is an error, not a read past the row */
    y[rows / 2] = (uint8_t)cols;
    if (cols < 256) {
        gpu_upload(g, dy, y, (size_t)rows, err);
        int rc = gpu_softmax_xent(g, dz, dy, rows, cols, dd, &got_loss, err);
        CHECK_MSG(rc == DP_EINVAL && strstr(err, "out of range"), "bad label: rc %d '%s'", rc, err);
    }
    gpu_free(g, dz); gpu_free(g, dd); gpu_free(g, dy);
    free(z); free(want); free(got); free(y);
}

/* The MLP 784-H-10 composed on the GPU (gpu_mlp.h) against runtime/nn.c: loss and every
 * gradient. */
static void test_mlp(gpu_ctx *g, int hidden, int batch)
{
    nn_net *net = nn_new(MODEL_MLP, hidden, batch);
    float *params[4], *grads[4], *got[4];
    for (int i = 0; i < 4; i++) {
        size_t n = nn_tensor_size(net, i);
        params[i] = xmalloc(n * 4); grads[i] = xmalloc(n * 4); got[i] = xmalloc(n * 4);
    }
    nn_init_params(net, params, 7);
    for (size_t i = 0; i < (size_t)hidden; i++) params[1][i] = (float)(0.1 * dp_rng_normal(&rng));
    for (size_t i = 0; i < 10; i++) params[3][i] = (float)(0.1 * dp_rng_normal(&rng));
    float *x = randv((size_t)batch * 784, 1);
    for (size_t i = 0; i < (size_t)batch * 784; i++) x[i] = fabsf(x[i]); /* pixels: >= 0 */
    uint8_t *y = xmalloc((size_t)batch);
    for (int i = 0; i < batch; i++) y[i] = (uint8_t)dp_rng_below(&rng, 10);
    float want_loss = nn_train_step(net, params, grads, x, y, batch);

    mlp_net m;
    int widths[3] = {784, hidden, 10};
    float *W[2] = {params[0], params[2]}, *b[2] = {params[1], params[3]};
    float loss = -1;
    int rc = mlp_init(&m, g, widths, 2, batch, err);
    if (!rc) rc = mlp_set_params(&m, W, b, err);
    if (!rc) rc = mlp_set_batch(&m, x, y, batch, err);
    if (!rc) rc = mlp_step(&m, batch, &loss, err);
    CHECK_MSG(rc == 0, "mlp on the GPU: %s", err);
    if (!rc) {
        get(g, got[0], m.gW[0], nn_tensor_size(net, 0) * 4);
        get(g, got[1], m.gb[0], nn_tensor_size(net, 1) * 4);
        get(g, got[2], m.gW[1], nn_tensor_size(net, 2) * 4);
        get(g, got[3], m.gb[1], nn_tensor_size(net, 3) * 4);
        char what[96];
        snprintf(what, sizeof what, "MLP 784-%d-10 batch %d: loss %.7g vs %.7g", hidden, batch,
                 (double)loss, (double)want_loss);
        CHECK_MSG(fabs(loss - want_loss) <= TOL * fmax(1.0, fabs(want_loss)), "%s", what);
        for (int i = 0; i < 4; i++) {
            snprintf(what, sizeof what, "MLP 784-%d-10 batch %d: %s", hidden, batch, nn_tensor_name(net, i));
            CHECK_REL(got[i], grads[i], nn_tensor_size(net, i), what);
        }
    }
    mlp_release(&m);
    for (int i = 0; i < 4; i++) { free(params[i]); free(grads[i]); free(got[i]); }
    free(x); free(y);
    nn_free(net);
}

static void test_errors(gpu_ctx *g, int ndev)
{
    gpu_info info;
    CHECK(gpu_device_info(ndev, &info, err) == DP_EINVAL);
    CHECK(gpu_open(ndev, err) == NULL && strstr(err, "present"));
    CHECK(gpu_sgemm(g, 0, 0, -1, 2, 2, 1, NULL, 2, NULL, 2, 0, NULL, 2, err) == DP_EINVAL);
    /* cuBLAS rejects a row stride below the row's width, and says so */
    float *d = gpu_alloc(g, 64 * 4, err);
    int rc = gpu_sgemm(g, 0, 0, 4, 4, 4, 1, d, 2, d, 4, 0, d, 4, err);
    CHECK_MSG(rc != 0 && strstr(err, "cuBLAS"), "rc %d '%s'", rc, err);
    /* an impossible allocation fails with CUDA's words */
    CHECK_MSG(gpu_alloc(g, (size_t)1 << 62, err) == NULL && strstr(err, "cudaMalloc"), "'%s'", err);
    CHECK_MSG(gpu_sync(g, err) == 0, "the context still works after errors: %s", err);
    gpu_free(g, d);
    gpu_free(g, NULL);
}

int main(void)
{
    dp_rng_seed(&rng, 13);
    CHECK_MSG(gpu_built() == BUILT, "gpu_built() %d, the build says %d", gpu_built(), BUILT);
    const char *why = NULL;
    int ndev = gpu_device_count(&why);
    if (ndev == 0) {
        test_no_device(why);
        CHECK_SKIP("no CUDA device (%s)", why ? why : "?");
        return CHECK_DONE();
    }
    for (int d = 0; d < ndev; d++) {
        gpu_info info;
        int rc = gpu_device_info(d, &info, err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc) continue;
        printf("GPU %d: %s, pci bus id %s, compute capability %d.%d, %.1f GiB, peak FP32 %.1f TFLOP/s\n",
               d, info.name, info.pci_bus_id, info.cc_major, info.cc_minor,
               (double)info.memory_bytes / (1 << 30), info.peak_fp32_flops / 1e12);
        CHECK(info.name[0] && info.pci_bus_id[0] && info.cc_major >= 7 && info.memory_bytes > 0 &&
              info.peak_fp32_flops > 1e12);
    }
    gpu_ctx *g = gpu_open(0, err);
    CHECK_MSG(g != NULL, "gpu_open(0): %s", err);
    if (!g) return CHECK_DONE();
    int sizes[][3] = {{37, 29, 53}, {1, 17, 5}, {130, 3, 257}, {200, 300, 784}};
    for (size_t i = 0; i < DP_ARRAY_LEN(sizes); i++) test_sgemm(g, sizes[i][0], sizes[i][1], sizes[i][2]);
    test_elementwise(g);
    test_xent(g, 37, 10, 3);
    test_xent(g, 5, 70, 100);
    test_xent(g, 1024, 10, 1);
    test_mlp(g, 128, 64);
    test_mlp(g, 100, 37);
    test_errors(g, ndev);
    gpu_close(g);
    return CHECK_DONE();
}
