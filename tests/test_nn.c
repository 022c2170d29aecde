/* test_nn.c — the models' gradients against central finite differences and (the MLP, every
 * element) against a textbook double-precision step, the loss at a
 * zero init, seeded Glorot init, SGD learning the synthetic set, and chunked evaluation;
 * evaluation a batch at a time from pixel bytes (nn_evaluate_rows with dataset_rows, as
 * the chief evaluates Fashion-MNIST) gives the same bits as from the whole set's floats. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "runtime/data.h"
#include "runtime/nn.h"
#include "tests/check.h"

/* Parameter and gradient arrays for a net, allocated to its tensor sizes. */
typedef struct bufs {
    int n;
    float *p[4];
    float *g[4];
} bufs;

static void bufs_new(bufs *b, const nn_net *net)
{
    b->n = nn_tensors(net);
    for (int i = 0; i < b->n; i++) {
        b->p[i] = xcalloc(nn_tensor_size(net, i), sizeof(float));
        b->g[i] = xcalloc(nn_tensor_size(net, i), sizeof(float));
    }
}

static void bufs_free(bufs *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->p[i]);
        free(b->g[i]);
    }
}

static void test_shapes(void)
{
    nn_net *s = nn_new(MODEL_SOFTMAX, 0, 8);
    nn_net *m = nn_new(MODEL_MLP, 16, 8);
    CHECK(nn_tensors(s) == 2 && nn_tensors(m) == 4);
    CHECK(nn_tensor_size(s, 0) == 7840 && nn_tensor_size(s, 1) == 10);
    CHECK(!strcmp(nn_tensor_name(s, 0), "softmax/weights"));
    CHECK(!strcmp(nn_tensor_name(s, 1), "softmax/biases"));
    CHECK(nn_tensor_size(m, 0) == 784 * 16 && nn_tensor_size(m, 1) == 16);
    CHECK(nn_tensor_size(m, 2) == 160 && nn_tensor_size(m, 3) == 10);
    CHECK(!strcmp(nn_tensor_name(m, 0), "hidden/weights"));
    CHECK(!strcmp(nn_tensor_name(m, 1), "hidden/biases"));
    CHECK(!strcmp(nn_tensor_name(m, 2), "softmax/weights"));
    CHECK(!strcmp(nn_tensor_name(m, 3), "softmax/biases"));
    nn_free(s);
    nn_free(m);
    nn_free(NULL);
}

static void test_init(void)
{
    nn_net *net = nn_new(MODEL_MLP, 32, 4);
    bufs a, b, c;
    bufs_new(&a, net);
    bufs_new(&b, net);
    bufs_new(&c, net);
    nn_init_params(net, a.p, 5);
    nn_init_params(net, b.p, 5);
    nn_init_params(net, c.p, 6);
    for (int i = 0; i < 4; i++) {
        size_t sz = nn_tensor_size(net, i);
        CHECK_MSG(memcmp(a.p[i], b.p[i], sz * sizeof(float)) == 0, "tensor %d", i);
        if (i % 2 == 0) {
            CHECK_MSG(memcmp(a.p[i], c.p[i], sz * sizeof(float)) != 0, "tensor %d", i);
            /* Glorot uniform: within +-limit, mean ~0, variance ~limit^2/3 */
            int rows = i == 0 ? 784 : 32, cols = i == 0 ? 32 : 10;
            double limit = sqrt(6.0 / (rows + cols)), sum = 0, sq = 0, mx = 0;
            for (size_t k = 0; k < sz; k++) {
                sum += a.p[i][k];
                sq += (double)a.p[i][k] * a.p[i][k];
                mx = fmax(mx, fabs(a.p[i][k]));
            }
            CHECK_MSG(mx <= limit && mx > 0.9 * limit, "max %g limit %g", mx, limit);
            CHECK_NEAR(sum / sz, 0.0, 0.1 * limit);
            CHECK_NEAR(sq / sz, limit * limit / 3, 0.15 * limit * limit / 3);
        } else {
            int zero = 1;
            for (size_t k = 0; k < sz; k++) zero &= a.p[i][k] == 0.0f;
            CHECK_MSG(zero, "bias %d not zero", i);
        }
    }
    bufs_free(&a);
    bufs_free(&b);
    bufs_free(&c);
    nn_free(net);
}

/* Loss and gradients at zero weights: every class 1/10, so the loss is ln 10 and the
 * output bias gradient is 0.1 - (class frequency). */
static void test_zero_init_loss(void)
{
    enum { B = 20 };
    dataset ds;
    dataset_synthetic(&ds, B, 1, 1);
    nn_net *net = nn_new(MODEL_SOFTMAX, 0, B);
    bufs b;
    bufs_new(&b, net);
    float loss = nn_train_step(net, b.p, b.g, ds.x, ds.y, B);
    CHECK_NEAR(loss, log(10.0), 1e-5);
    CHECK_NEAR(nn_loss(net, b.p, ds.x, ds.y, B), log(10.0), 1e-5);
    int count[10] = {0};
    for (int i = 0; i < B; i++) count[ds.y[i]]++;
    for (int j = 0; j < 10; j++) CHECK_NEAR(b.g[1][j], 0.1 - count[j] / (double)B, 1e-6);
    double l;
    double acc = nn_evaluate(net, b.p, ds.x, ds.y, B, &l);
    CHECK_NEAR(l, log(10.0), 1e-5);
    CHECK(acc >= 0.0 && acc <= 1.0);
    bufs_free(&b);
    nn_free(net);
    dataset_release(&ds);
}

/* Compares analytic gradients with central differences (float params, so eps is large
 * and the tolerance is relative with a floor). Biases start random so that their
 * gradients are exercised too; inputs are dense uniform noise. */
static void grad_check(model_kind model, int hidden)
{
    CHECK(hidden <= 64);
    enum { B = 5 };
    const float eps = 1e-2f;
    nn_net *net = nn_new(model, hidden, B);
    bufs b;
    bufs_new(&b, net);
    nn_init_params(net, b.p, 11);
    dp_rng r;
    dp_rng_seed(&r, 99);
    for (int i = 1; i < b.n; i += 2)
        for (size_t k = 0; k < nn_tensor_size(net, i); k++)
            b.p[i][k] = (float)(0.2 * dp_rng_normal(&r));
    float x[B * 784];
    uint8_t y[B];
    for (int k = 0; k < B * 784; k++) x[k] = (float)dp_rng_uniform(&r);
    for (int k = 0; k < B; k++) y[k] = (uint8_t)dp_rng_below(&r, 10);

    /* hidden pre-activations, to skip perturbations that would cross a ReLU kink */
    static double pre[B * 64];
    if (model == MODEL_MLP)
        for (int i = 0; i < B; i++)
            for (int j = 0; j < hidden; j++) {
                double z = b.p[1][j];
                for (int k = 0; k < 784; k++) z += (double)x[i * 784 + k] * b.p[0][k * hidden + j];
                pre[i * hidden + j] = z;
            }

    float loss = nn_train_step(net, b.p, b.g, x, y, B);
    CHECK_NEAR(loss, nn_loss(net, b.p, x, y, B), 1e-6);
    int skipped = 0;
    for (int t = 0; t < b.n; t++) {
        size_t sz = nn_tensor_size(net, t);
        int bad = 0, checked = 0, nonzero = 0;
        double worst = 0.0;
        for (int s = 0; s < 40; s++) {
            size_t k = s == 0 ? 0 : s == 1 ? sz - 1 : (size_t)dp_rng_below(&r, sz);
            if (model == MODEL_MLP && t < 2) {
                int j = t == 0 ? (int)(k % (size_t)hidden) : (int)k, kink = 0;
                for (int i = 0; i < B; i++) {
                    double shift = t == 0 ? eps * x[i * 784 + k / (size_t)hidden] : eps;
                    kink |= fabs(pre[i * hidden + j]) <= 1.5 * shift;
                }
                if (kink) { skipped++; continue; }
            }
            float keep = b.p[t][k];
            b.p[t][k] = keep + eps;
            double lp = nn_loss(net, b.p, x, y, B);
            b.p[t][k] = keep - eps;
            double lm = nn_loss(net, b.p, x, y, B);
            b.p[t][k] = keep;
            double num = (lp - lm) / (2.0 * eps), ana = b.g[t][k];
            double rel = fabs(num - ana) / fmax(fmax(fabs(num), fabs(ana)), 5e-3);
            worst = fmax(worst, rel);
            bad += rel > 2e-2;
            nonzero += fabs(ana) > 1e-4;
            checked++;
        }
        CHECK_MSG(bad == 0, "%s %s: %d of %d coordinates off, worst relative error %g",
                  model == MODEL_MLP ? "mlp" : "softmax", nn_tensor_name(net, t), bad, checked, worst);
        CHECK_MSG(nonzero > checked / 2, "%s: too few nonzero gradients (%d)",
                  nn_tensor_name(net, t), nonzero);
    }
    CHECK_MSG(skipped < 20, "%d coordinates skipped near ReLU kinks", skipped);
    bufs_free(&b);
    nn_free(net);
}

/* Plain SGD on the synthetic set; returns the final train accuracy. */
static double sgd_run(model_kind model, int hidden, int steps, float lr, double *test_acc)
{
    enum { N = 2000, B = 32 };
    dataset tr, te;
    dataset_synthetic(&tr, N, 7, 1);
    dataset_synthetic(&te, 500, 7, 0);
    nn_net *net = nn_new(model, hidden, B);
    bufs b;
    bufs_new(&b, net);
    nn_init_params(net, b.p, 3);
    batch_order o;
    char err[DP_ERRLEN];
    CHECK_MSG(batch_order_init(&o, N, 1, B, 1, err) == 0, "%s", err);
    static float x[B * 784];
    uint8_t y[B];
    int idx[B];
    float first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        batch_order_indices(&o, 0, s, idx);
        dataset_gather(&tr, idx, B, x, y);
        float loss = nn_train_step(net, b.p, b.g, x, y, B);
        if (s == 0) first = loss;
        last = loss;
        for (int t = 0; t < b.n; t++)
            for (size_t k = 0; k < nn_tensor_size(net, t); k++) b.p[t][k] -= lr * b.g[t][k];
    }
    CHECK_MSG(last < first, "loss %g -> %g", first, last);
    double loss;
    double acc = nn_evaluate(net, b.p, tr.x, tr.y, tr.n, &loss);
    CHECK(isfinite(loss) && loss < first);
    *test_acc = nn_evaluate(net, b.p, te.x, te.y, te.n, NULL);

    /* chunking does not change the result: evaluate with a net of max_batch 7 */
    nn_net *small = nn_new(model, hidden, 7);
    double loss7;
    double acc7 = nn_evaluate(small, b.p, tr.x, tr.y, tr.n, &loss7);
    CHECK_NEAR(acc7, acc, 1e-12);
    CHECK_NEAR(loss7, loss, 1e-4 * loss);
    nn_free(small);

    batch_order_release(&o);
    bufs_free(&b);
    nn_free(net);
    dataset_release(&tr);
    dataset_release(&te);
    return acc;
}

static void test_learning(void)
{
    double test_acc;
    double acc = sgd_run(MODEL_SOFTMAX, 0, 300, 0.1f, &test_acc);
    CHECK_MSG(acc > 0.9, "softmax train accuracy %g", acc);
    CHECK_MSG(test_acc > 0.85 && test_acc <= 1.0, "softmax test accuracy %g", test_acc);
    acc = sgd_run(MODEL_MLP, 32, 300, 0.1f, &test_acc);
    CHECK_MSG(acc > 0.9, "mlp train accuracy %g", acc);
    CHECK_MSG(test_acc > 0.85 && test_acc <= 1.0, "mlp test accuracy %g", test_acc);
    printf("synthetic after 300 SGD steps: softmax/mlp train accuracy > 0.9\n");
}

/* Huge logits must not overflow the softmax. */
static void test_stability(void)
{
    nn_net *net = nn_new(MODEL_SOFTMAX, 0, 2);
    bufs b;
    bufs_new(&b, net);
    float x[2 * 784] = {0};
    uint8_t y[2] = {3, 4};
    b.p[1][3] = 1000.0f;
    b.p[1][4] = -1000.0f;
    float loss = nn_train_step(net, b.p, b.g, x, y, 2);
    CHECK(isfinite(loss));
    CHECK_NEAR(loss, 0.5 * (0.0 + 2000.0), 1e-2);
    int finite = 1;
    for (int j = 0; j < 10; j++) finite &= isfinite(b.g[1][j]);
    CHECK(finite);
    CHECK_NEAR(b.g[1][4], -0.5, 1e-6);
    CHECK_NEAR(b.g[1][3], 0.5, 1e-6);
    bufs_free(&b);
    nn_free(net);
}

/* Every gradient of one MLP step against the textbook forward and backward in double,
 * written here loop by loop: 5 x 61 hidden units, so the element-wise passes (nn.c's
 * blocks of 8) end on a 1-element tail, and every element is compared, not a sample. */
static void test_mlp_reference(void)
{
    enum { B = 5, H = 61, IN = 784, OUT = 10 };
    nn_net *net = nn_new(MODEL_MLP, H, B);
    bufs b;
    bufs_new(&b, net);
    nn_init_params(net, b.p, 5);
    dp_rng r;
    dp_rng_seed(&r, 17);
    for (int j = 0; j < H; j++) b.p[1][j] = (float)(0.1 * dp_rng_normal(&r));
    for (int j = 0; j < OUT; j++) b.p[3][j] = (float)(0.1 * dp_rng_normal(&r));
    static float x[B * IN];
    uint8_t y[B];
    for (int k = 0; k < B * IN; k++) x[k] = (float)dp_rng_uniform(&r);
    for (int i = 0; i < B; i++) y[i] = (uint8_t)dp_rng_below(&r, OUT);
    static double pre[B][H], a[B][H], dz[B][OUT], dh[B][H];
    double loss = 0;
    int near_kink = 0;
    for (int i = 0; i < B; i++) {
        for (int j = 0; j < H; j++) {
            double z = b.p[1][j];
            for (int k = 0; k < IN; k++) z += (double)x[i * IN + k] * b.p[0][k * H + j];
            pre[i][j] = z;
            a[i][j] = z > 0 ? z : 0;
            near_kink += fabs(z) < 1e-4;
        }
        double lg[OUT], mx = -INFINITY, sum = 0;
        for (int o = 0; o < OUT; o++) {
            lg[o] = b.p[3][o];
            for (int j = 0; j < H; j++) lg[o] += a[i][j] * b.p[2][j * OUT + o];
            mx = fmax(mx, lg[o]);
        }
        for (int o = 0; o < OUT; o++) sum += exp(lg[o] - mx);
        loss += mx + log(sum) - lg[y[i]];
        for (int o = 0; o < OUT; o++) dz[i][o] = (exp(lg[o] - mx) / sum - (o == y[i])) / B;
        for (int j = 0; j < H; j++) {
            double d = 0;
            for (int o = 0; o < OUT; o++) d += dz[i][o] * b.p[2][j * OUT + o];
            dh[i][j] = pre[i][j] > 0 ? d : 0;
        }
    }
    CHECK_MSG(near_kink == 0, "%d pre-activations within 1e-4 of the kink: pick another seed", near_kink);
    float l = nn_train_step(net, b.p, b.g, x, y, B);
    CHECK_NEAR(l, loss / B, 1e-5);
    int bad[4] = {0};
    double worst = 0;
    for (int t = 0; t < 4; t++) {
        size_t n = nn_tensor_size(net, t);
        for (size_t e = 0; e < n; e++) {
            double want = 0;
            for (int i = 0; i < B; i++) {
                if (t == 0) want += (double)x[i * IN + e / H] * dh[i][e % H];
                if (t == 1) want += dh[i][e];
                if (t == 2) want += a[i][e / OUT] * dz[i][e % OUT];
                if (t == 3) want += dz[i][e];
            }
            double err = fabs(b.g[t][e] - want) / fmax(fabs(want), 1e-3);
            worst = fmax(worst, err);
            bad[t] += err > 1e-3;
        }
        CHECK_MSG(bad[t] == 0, "mlp %s: %d of %zu gradients off the reference (worst relative %g)",
                  nn_tensor_name(net, t), bad[t], n, worst);
    }
    bufs_free(&b);
    nn_free(net);
}

static void rows_of(void *ctx, int first, int count, float *buf)
{
    dataset_rows(ctx, first, count, buf);
}

/* 2,500 samples of random pixel bytes (not a multiple of the batch of 1,000): the same
 * accuracy and loss, to the bit, from the rows a batch at a time and from dataset_x. */
static void test_evaluate_rows(void)
{
    enum { N = 2500, BATCH = 1000 };
    dp_rng r;
    dp_rng_seed(&r, 11);
    uint8_t *px = xmalloc((size_t)N * DATA_FEATURES);
    dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.n = N;
    ds.px = px;
    ds.y = xmalloc(N);
    for (size_t i = 0; i < (size_t)N * DATA_FEATURES; i++) px[i] = (uint8_t)(dp_rng_next(&r) >> 56);
    for (int i = 0; i < N; i++) ds.y[i] = (uint8_t)(dp_rng_next(&r) % 10);
    nn_net *net = nn_new(MODEL_MLP, 32, BATCH);
    bufs b;
    bufs_new(&b, net);
    nn_init_params(net, b.p, 3);
    float *buf = xmalloc((size_t)BATCH * DATA_FEATURES * sizeof *buf);
    double l_rows, l_x;
    double a_rows = nn_evaluate_rows(net, b.p, rows_of, &ds, ds.y, N, &l_rows);
    double a_x = nn_evaluate(net, b.p, dataset_x(&ds), ds.y, N, &l_x);
    CHECK_MSG(a_rows == a_x && l_rows == l_x && a_x > 0 && isfinite(l_x),
              "from rows %.17g, %.17g; from floats %.17g, %.17g", a_rows, l_rows, a_x, l_x);
    /* a row from the bytes is the floats' row */
    dataset_rows(&ds, N - 3, 3, buf);
    CHECK(memcmp(buf, ds.x + (size_t)(N - 3) * DATA_FEATURES, 3 * DATA_FEATURES * sizeof *buf) == 0);
    free(buf);
    free(ds.x);
    free(ds.y);
    free(px);
    bufs_free(&b);
    nn_free(net);
}

int main(void)
{
    test_shapes();
    test_init();
    test_zero_init_loss();
    grad_check(MODEL_SOFTMAX, 0);
    grad_check(MODEL_MLP, 16);
    test_mlp_reference();
    test_stability();
    test_learning();
    test_evaluate_rows();
    return CHECK_DONE();
}
