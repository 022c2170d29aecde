/* nqm.c — the learning surrogate: a noisy quadratic model (Zhang et al. 2019, "Which
 * Algorithmic Choices Matter at Which Batch Sizes?"). Loss L(theta) = 1/2 sum h_i theta_i^2
 * with curvature h_i = 1/(i+1); a worker's stochastic gradient at the parameters it pulled
 * is h_i theta_i + noise * sqrt(h_i / batch) * N(0,1) (noise covariance H/B). The d
 * dimensions are spread over the trainable variables in contiguous blocks, so each
 * variable's slice is pulled, pushed, aggregated and applied exactly like the variable.
 * This is NOT the real model's loss. Also: compute-time draws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/world.h"

void sim_nqm_init(sim_world *w)
{
    const sim_config *c = w->cfg;
    w->d = c->nqm_dims;
    int d = w->d;
    w->h = xmalloc((size_t)(d ? d : 1) * sizeof *w->h);
    w->theta = xmalloc((size_t)(d ? d : 1) * sizeof *w->theta);
    w->slot = xmalloc((size_t)(d ? d : 1) * sizeof *w->slot);
    w->mean = xmalloc((size_t)(d ? d : 1) * sizeof *w->mean);
    w->noise_sd = xmalloc((size_t)(d ? d : 1) * sizeof *w->noise_sd);
    double scale = c->nqm_noise / sqrt((double)c->batch);
    for (int i = 0; i < d; i++) {
        w->h[i] = 1.0 / (i + 1);
        w->noise_sd[i] = scale * sqrt(w->h[i]);  /* gradient noise of dim i (see sim_nqm_grad) */
        w->theta[i] = 1.0f;
    }
    optim_slot_init(&w->opt, w->slot, (size_t)d);
    w->theta_read = xcalloc((size_t)w->W * (size_t)(d ? d : 1), sizeof *w->theta_read);
    w->grad = xcalloc((size_t)w->W * (size_t)(d ? d : 1), sizeof *w->grad);
    int n_tr = 0;
    for (int v = 0; v < w->nv; v++) n_tr += w->cat.v[v].trainable;
    int k = 0;
    for (int v = 0; v < w->nv; v++) {
        sim_var *sv = &w->vars[v];
        sv->dim0 = 0;
        sv->dims = 0;
        if (!w->cat.v[v].trainable || n_tr == 0) continue;
        /* trainable var k carries dims [k*d/n_tr, (k+1)*d/n_tr) */
        int a = (int)((int64_t)k * d / n_tr), b = (int)((int64_t)(k + 1) * d / n_tr);
        sv->dim0 = a;
        sv->dims = b - a;
        k++;
    }
}

void sim_nqm_release(sim_world *w)
{
    free(w->h);
    free(w->noise_sd);
    free(w->theta);
    free(w->slot);
    free(w->mean);
    free(w->theta_read);
    free(w->grad);
}

double sim_nqm_loss(const sim_world *w, const float *theta)
{
    double s = 0;
    for (int i = 0; i < w->d; i++) s += 0.5 * w->h[i] * (double)theta[i] * (double)theta[i];
    return s;
}

void sim_nqm_grad(sim_world *w, int wk)
{
    const float *th = w->theta_read + (size_t)wk * (size_t)w->d;
    float *g = w->grad + (size_t)wk * (size_t)w->d;
    dp_rng *r = &w->wk[wk].rng;
    for (int i = 0; i < w->d; i += 2) {
        /* Box-Muller, both outputs used */
        double u1 = dp_rng_uniform(r), u2 = dp_rng_uniform(r);
        double rad = sqrt(-2.0 * log(1.0 - u1)), a = 6.283185307179586 * u2;
        double z[2] = {rad * cos(a), rad * sin(a)};
        for (int j = 0; j < 2 && i + j < w->d; j++) {
            int k = i + j;
            g[k] = (float)(w->h[k] * th[k] + w->noise_sd[k] * z[j]);
        }
    }
}

double sim_draw_compute(sim_world *w, int wk)
{
    const sim_dist *d = &w->cfg->compute;
    dp_rng *r = &w->wk[wk].rng;
    double x = d->mean;
    switch (d->kind) {
    case SIM_DIST_CONSTANT:
        break;
    case SIM_DIST_NORMAL:
        x = d->mean + d->sd * dp_rng_normal(r);
        if (x < 0.01 * d->mean) x = 0.01 * d->mean;
        break;
    case SIM_DIST_LOGNORMAL: {
        double mu = log(d->mean) - 0.5 * d->sigma * d->sigma;
        x = exp(mu + d->sigma * dp_rng_normal(r));
        break;
    }
    case SIM_DIST_EXPONENTIAL:
        x = -d->mean * log(1.0 - dp_rng_uniform(r));
        break;
    }
    return x * w->wk[wk].speed;
}
