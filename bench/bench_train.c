/* bench_train.c — the no-ps baseline: the same model, data order and optimizer as a
 * 1-worker cluster, trained in one process (compute + apply, no network). Prints
 * "samples_per_s <x>" for bench/run.sh to put beside the cluster's figure.
 *   bench_train DATA_DIR|synthetic MODEL HIDDEN BATCH STEPS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cluster/optim.h"
#include "common/dp.h"
#include "runtime/blas.h"
#include "runtime/data.h"
#include "runtime/nn.h"

int main(int argc, char **argv)
{
    rt_blas_tune(argv, 1);
    if (argc != 6) {
        fprintf(stderr, "usage: bench_train DATA_DIR|synthetic softmax|mlp HIDDEN BATCH STEPS\n");
        return 2;
    }
    openblas_set_num_threads(1);
    char err[DP_ERRLEN];
    dataset ds = {0};
    if (!strcmp(argv[1], "synthetic")) dataset_synthetic(&ds, 6000, 1, 1);
    else if (dataset_load(&ds, argv[1], 1, err)) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    model_kind m;
    model_parse(argv[2], &m);
    int hidden = atoi(argv[3]), batch = atoi(argv[4]), steps = atoi(argv[5]);
    nn_net *net = nn_new(m, hidden, batch);
    int nt = nn_tensors(net);
    float *params[4], *grads[4], *slots[4];
    optim_conf oc;
    optim_conf_init(&oc, OPT_SGD, 0.05f);
    for (int i = 0; i < nt; i++) {
        size_t n = nn_tensor_size(net, i);
        params[i] = xcalloc(n, sizeof(float));
        grads[i] = xcalloc(n, sizeof(float));
        slots[i] = NULL;
    }
    nn_init_params(net, params, 1);
    batch_order order;
    if (batch_order_init(&order, ds.n, 1, batch, 1, err)) return 1;
    int *idx = xmalloc((size_t)batch * sizeof *idx), *next = xmalloc((size_t)batch * sizeof *next);
    float *x = xmalloc((size_t)batch * DATA_FEATURES * sizeof *x);
    uint8_t *y = xmalloc((size_t)batch);
    uint64_t t0 = dp_now_ns();
    for (int s = 0; s < steps; s++) {
        batch_order_indices(&order, 0, s, idx);
        dataset_gather(&ds, idx, batch, x, y);
        /* as downpour local does: the next batch's rows come in during this step */
        batch_order_indices(&order, 0, s + 1, next);
        dataset_prefetch(&ds, next, batch);
        nn_train_step(net, params, grads, x, y, batch);
        for (int i = 0; i < nt; i++) optim_apply(&oc, params[i], slots[i], grads[i], nn_tensor_size(net, i));
    }
    double secs = (double)(dp_now_ns() - t0) / 1e9;
    printf("samples_per_s %.1f\n", (double)steps * batch / secs);
    /* The bound the step's two large matrix products alone set (MLP: the forward
     * batch x 784 . 784 x H and the weight gradient 784 x batch . batch x H, as nn.c calls
     * them), timed here right after, the same number of times: the rest of a step
     * (gathering, the small layer, element-wise passes, the update) is what the ratio
     * to it leaves. */
    if (m == MODEL_MLP) {
        float *w = params[0], *h = xcalloc((size_t)batch * hidden, sizeof *h);
        float *gw = xcalloc((size_t)DATA_FEATURES * hidden, sizeof *gw);
        t0 = dp_now_ns();
        for (int s = 0; s < steps; s++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, hidden, DATA_FEATURES, 1.0f, x,
                        DATA_FEATURES, w, hidden, 0.0f, h, hidden);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, DATA_FEATURES, hidden, batch, 1.0f, x,
                        DATA_FEATURES, h, hidden, 0.0f, gw, hidden);
        }
        secs = (double)(dp_now_ns() - t0) / 1e9;
        printf("gemm_bound_samples_per_s %.1f\n", (double)steps * batch / secs);
        free(h);
        free(gw);
    }
    return 0;
}
