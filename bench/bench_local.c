/* bench_local.c — `downpour local`'s strategies on virtual CPU devices: samples/s of
 * single (one CPU device) and of towers over 2 CPU devices (each tower half the batch on
 * its own thread, gradients averaged on CPU:0), same model, batch and data, OpenBLAS on
 * one thread per call (a virtual device is one core). Prints
 * "single_samples_per_s X", "towers2_samples_per_s Y" and "ratio Y/X" for bench/run.sh.
 *   bench_local MODEL HIDDEN BATCH STEPS */
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "cluster/optim.h"
#include "common/dp.h"
#include "runtime/blas.h"
#include "runtime/data.h"
#include "runtime/towers.h"

static double run(const rt_config *cfg, int strategy, int n_cpu, int steps, const dataset *ds)
{
    char err[DP_ERRLEN];
    dev_set *s = dev_set_new("localhost", 0, n_cpu, 0, err);
    tw_set *t = s ? tw_new(cfg, s, strategy, NULL, err) : NULL;
    if (!t) {
        fprintf(stderr, "bench_local: %s\n", err);
        exit(1);
    }
    nn_net *probe = nn_new(cfg->model, cfg->hidden, 1);
    int nt = nn_tensors(probe);
    float *p[4], *g[4];
    for (int i = 0; i < nt; i++) {
        p[i] = xcalloc(nn_tensor_size(probe, i), sizeof(float));
        g[i] = xcalloc(nn_tensor_size(probe, i), sizeof(float));
    }
    nn_init_params(probe, p, 1);
    optim_conf oc;
    optim_conf_init(&oc, OPT_SGD, 0.05f);
    int b = cfg->batch, span = ds->n - b;
    uint64_t t0 = 0;
    for (int k = -5; k < steps; k++) {   /* 5 warm-up steps */
        if (k == 0) t0 = dp_now_ns();
        int off = (int)(((long long)(k + 5) * b) % span);
        tw_step(t, p, g, ds->x + (size_t)off * DATA_FEATURES, ds->y + off, b, k, err);
        for (int i = 0; i < nt; i++) optim_apply(&oc, p[i], NULL, g[i], nn_tensor_size(probe, i));
    }
    double s_el = (double)(dp_now_ns() - t0) / 1e9;
    for (int i = 0; i < nt; i++) {
        free(p[i]);
        free(g[i]);
    }
    nn_free(probe);
    tw_free(t);
    dev_set_free(s);
    return (double)steps * b / s_el;
}

int main(int argc, char **argv)
{
    rt_blas_tune(argv, 1);
    if (argc != 5) {
        fprintf(stderr, "usage: bench_local softmax|mlp HIDDEN BATCH STEPS\n");
        return 2;
    }
    openblas_set_num_threads(1);
    rt_config cfg;
    rt_config_init(&cfg);
    if (model_parse(argv[1], &cfg.model)) {
        fprintf(stderr, "bench_local: model \"%s\" is not softmax or mlp\n", argv[1]);
        return 2;
    }
    cfg.hidden = atoi(argv[2]);
    cfg.batch = atoi(argv[3]);
    int steps = atoi(argv[4]);
    if (cfg.hidden < 1 || cfg.batch < 2 || steps < 1) {
        fprintf(stderr, "bench_local: HIDDEN >= 1, BATCH >= 2 and STEPS >= 1\n");
        return 2;
    }
    dataset ds;
    dataset_synthetic(&ds, 6000, 1, 1);
    double one = run(&cfg, RT_STRATEGY_SINGLE, 1, steps, &ds);
    double two = run(&cfg, RT_STRATEGY_TOWERS, 2, steps, &ds);
    printf("single_samples_per_s %.1f\ntowers2_samples_per_s %.1f\nratio %.3f\n", one, two, two / one);
    dataset_release(&ds);
    return 0;
}
