/* bench_gpu.c — the GPU against the CPU for the same network, and cuBLAS against the
 * GPU's peak. Samples/s of one forward+backward pass (the batch uploaded each step, the
 * loss downloaded: what a training step pays) of the MLP 784-128-10 at batch 64 and 1024
 * and of a wide MLP 784-4096-4096-10 at batch 1024, on GPU 0 through runtime/gpu/gpu.h
 * and on the CPU through cblas (OpenBLAS, all its threads), both composed alike by
 * tests/gpu_mlp.h; best of 3 rounds, the two sides interleaved. Then square SGEMM
 * (4096, 8192) in TFLOP/s and as a fraction of gpu_info.peak_fp32_flops.
 * Prints "key value" lines for bench/run.sh; without a CUDA device it prints
 * "skipped: no CUDA device (<why>)" and exits 0.
 *   bench_gpu [SECONDS]   (each measurement runs for at least SECONDS, default 0.3) */
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "common/dp.h"
#include "runtime/gpu/gpu.h"
#include "tests/gpu_mlp.h"

static char err[DP_ERRLEN];

static void die(const char *what)
{
    fprintf(stderr, "bench_gpu: %s: %s\n", what, err);
    exit(1);
}

/* Samples/s of steps on m (host batch x, y of `rows` rows), run for at least min_s after
 * one warm-up step, and at least 2 steps. */
static double samples_per_s(mlp_net *m, const float *x, const uint8_t *y, int rows, double min_s)
{
    float loss;
    if (mlp_set_batch(m, x, y, rows, err) || mlp_step(m, rows, &loss, err)) die("warm-up step");
    uint64_t t0 = dp_now_ns();
    long steps = 0;
    double secs;
    do {
        if (mlp_set_batch(m, x, y, rows, err) || mlp_step(m, rows, &loss, err)) die("step");
        steps++;
        secs = (double)(dp_now_ns() - t0) / 1e9;
    } while (secs < min_s || steps < 2);
    return (double)steps * rows / secs;
}

/* One network on both sides, same parameters and batch: best of 3 rounds each. */
static void bench_mlp(gpu_ctx *g, const char *key, const int *widths, int layers, int batch,
                      double min_s)
{
    dp_rng r;
    dp_rng_seed(&r, 1);
    mlp_net gm, cm;
    if (mlp_init(&gm, g, widths, layers, batch, err)) die("GPU allocation");
    mlp_init(&cm, NULL, widths, layers, batch, err);
    float *W[MLP_MAX_LAYERS], *b[MLP_MAX_LAYERS];
    for (int l = 0; l < layers; l++) {
        size_t n = mlp_wsize(&cm, l);
        double lim = sqrt(6.0 / (widths[l] + widths[l + 1]));
        W[l] = xmalloc(n * sizeof(float));
        b[l] = xcalloc((size_t)widths[l + 1], sizeof(float));
        for (size_t i = 0; i < n; i++) W[l][i] = (float)((2 * dp_rng_uniform(&r) - 1) * lim);
    }
    float *x = xmalloc((size_t)batch * widths[0] * sizeof *x);
    uint8_t *y = xmalloc((size_t)batch);
    for (size_t i = 0; i < (size_t)batch * widths[0]; i++) x[i] = (float)dp_rng_uniform(&r);
    for (int i = 0; i < batch; i++) y[i] = (uint8_t)dp_rng_below(&r, (uint64_t)widths[layers]);
    if (mlp_set_params(&gm, W, b, err)) die("upload");
    mlp_set_params(&cm, W, b, err);
    double best_g = 0, best_c = 0;
    for (int round = 0; round < 3; round++) {
        for (int side = 0; side < 2; side++) { /* G C, C G, G C */
            int gpu = (side == 0) != (round == 1);
            double v = samples_per_s(gpu ? &gm : &cm, x, y, batch, min_s);
            if (gpu) best_g = v > best_g ? v : best_g;
            else best_c = v > best_c ? v : best_c;
        }
    }
    printf("%s_gpu_samples_per_s %.1f\n%s_cpu_samples_per_s %.1f\n", key, best_g, key, best_c);
    fflush(stdout);
    mlp_release(&gm);
    mlp_release(&cm);
    for (int l = 0; l < layers; l++) { free(W[l]); free(b[l]); }
    free(x);
    free(y);
}

/* Square C = A B, n x n: best of 3 timings of `reps` calls, in FLOP/s. */
static double sgemm_flops(gpu_ctx *g, int n, int reps)
{
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = gpu_alloc(g, bytes, err), *b = a ? gpu_alloc(g, bytes, err) : NULL;
    float *c = b ? gpu_alloc(g, bytes, err) : NULL;
    if (!c) die("SGEMM allocation");
    /* values do not change the time; zeros need no upload */
    float *h = xcalloc((size_t)n * n, sizeof *h);
    if (gpu_upload(g, a, h, bytes, err) || gpu_upload(g, b, h, bytes, err)) die("upload");
    free(h);
    if (gpu_sgemm(g, 0, 0, n, n, n, 1, a, n, b, n, 0, c, n, err) || gpu_sync(g, err)) die("SGEMM");
    double best = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = dp_now_ns();
        for (int i = 0; i < reps; i++)
            if (gpu_sgemm(g, 0, 0, n, n, n, 1, a, n, b, n, 0, c, n, err)) die("SGEMM");
        if (gpu_sync(g, err)) die("sync");
        double secs = (double)(dp_now_ns() - t0) / 1e9;
        double f = 2.0 * n * n * (double)n * reps / secs;
        best = f > best ? f : best;
    }
    gpu_free(g, a);
    gpu_free(g, b);
    gpu_free(g, c);
    return best;
}

int main(int argc, char **argv)
{
    double min_s = argc > 1 ? atof(argv[1]) : 0.3;
    const char *why = NULL;
    if (gpu_device_count(&why) == 0) {
        printf("skipped: no CUDA device (%s)\n", why);
        return 0;
    }
    gpu_info info;
    if (gpu_device_info(0, &info, err)) die("gpu_device_info");
    gpu_ctx *g = gpu_open(0, err);
    if (!g) die("gpu_open");
    printf("gpu_name %s\ngpu_cc %d.%d\ngpu_peak_fp32_tflops %.2f\ncpu_threads %d\n", info.name,
           info.cc_major, info.cc_minor, info.peak_fp32_flops / 1e12, openblas_get_num_threads());
    fflush(stdout);
    int mlp[3] = {784, 128, 10}, wide[4] = {784, 4096, 4096, 10};
    bench_mlp(g, "mlp128_b64", mlp, 2, 64, min_s);
    bench_mlp(g, "mlp128_b1024", mlp, 2, 1024, min_s);
    bench_mlp(g, "wide4096_b1024", wide, 3, 1024, min_s);
    int sizes[2][2] = {{4096, 20}, {8192, 4}};
    for (int i = 0; i < 2; i++) {
        double f = sgemm_flops(g, sizes[i][0], sizes[i][1]);
        printf("sgemm%d_tflops %.2f\nsgemm%d_peak_fraction %.3f\n", sizes[i][0], f / 1e12,
               sizes[i][0], f / info.peak_fp32_flops);
    }
    gpu_close(g);
    return 0;
}
