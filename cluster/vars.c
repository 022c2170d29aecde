/* vars.c — the model's variable catalogue (TensorFlow creation order, global_step first),
 * fixed-size partitioning along axis 0, placement on ps tasks as replica_device_setter
 * does it (round-robin, or greedy by byte size), and TensorFlow's log_device_placement
 * listing. Pure logic: no sockets, no clock; the log goes to a caller's FILE.
 * Invariant: the parts of a base variable are consecutive in the catalogue, in row order,
 * and their rows add up to the base variable's rows. */
#include "cluster/vars.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "common/dp.h"

#define MAX_HIDDEN 65536
#define MAX_PARTITION 1024

/* One base tensor of the model, in nn order. */
typedef struct base_tensor {
    const char *name;
    int ndim, rows, cols;
} base_tensor;

/* Fills b with the model's tensors in nn order; returns their count. */
static int model_tensors(model_kind model, int hidden, base_tensor b[4])
{
    if (model == MODEL_MLP) {
        b[0] = (base_tensor){ "hidden/weights", 2, MODEL_INPUTS, hidden };
        b[1] = (base_tensor){ "hidden/biases", 1, hidden, 1 };
        b[2] = (base_tensor){ "softmax/weights", 2, hidden, MODEL_CLASSES };
        b[3] = (base_tensor){ "softmax/biases", 1, MODEL_CLASSES, 1 };
        return 4;
    }
    b[0] = (base_tensor){ "softmax/weights", 2, MODEL_INPUTS, MODEL_CLASSES };
    b[1] = (base_tensor){ "softmax/biases", 1, MODEL_CLASSES, 1 };
    return 2;
}

static void set_name(char dst[VAR_NAME_MAX], const char *src)
{
    size_t len = strlen(src);
    assert(((void)"vars: variable name too long", len < VAR_NAME_MAX));
    if (len >= VAR_NAME_MAX) len = VAR_NAME_MAX - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

int catalog_build(var_catalog *cat, model_kind model, int hidden, int partition, char *err)
{
    assert(((void)"catalog_build: NULL catalogue", cat));
    memset(cat, 0, sizeof *cat);
    if (model != MODEL_SOFTMAX && model != MODEL_MLP)
        return dp_fail(err, DP_EINVAL, "model: unknown model %d", (int)model);
    if (model == MODEL_MLP && (hidden < 1 || hidden > MAX_HIDDEN))
        return dp_fail(err, DP_EINVAL, "--hidden: %d out of range 1..%d", hidden, MAX_HIDDEN);
    if (partition < 1 || partition > MAX_PARTITION)
        return dp_fail(err, DP_EINVAL, "--partition: %d out of range 1..%d", partition,
                       MAX_PARTITION);

    base_tensor b[4];
    int nb = model_tensors(model, hidden, b);
    int total = 1;
    for (int i = 0; i < nb; i++)
        total += b[i].ndim == 2 ? (partition < b[i].rows ? partition : b[i].rows) : 1;

    var_def *v = xcalloc((size_t)total, sizeof *v);
    int k = 0;
    /* global_step: a scalar int64, created first as in TensorFlow's mnist_replica */
    set_name(v[k].name, "global_step");
    set_name(v[k].base, "global_step");
    v[k].base_index = -1;
    v[k].n_parts = 1;
    v[k].rows = v[k].cols = 1;
    v[k].bytes = 8;
    v[k].ps = -1;
    k++;
    for (int i = 0; i < nb; i++) {
        int parts = 1;
        if (b[i].ndim == 2) parts = partition < b[i].rows ? partition : b[i].rows;
        /* fixed_size_partitioner: the first rows%parts parts are one row larger */
        int q = b[i].rows / parts, r = b[i].rows % parts, off = 0;
        for (int p = 0; p < parts; p++) {
            var_def *d = &v[k++];
            if (parts > 1) {
                char nm[VAR_NAME_MAX * 2];
                snprintf(nm, sizeof nm, "%s/part_%d", b[i].name, p);
                set_name(d->name, nm);
            } else {
                set_name(d->name, b[i].name);
            }
            set_name(d->base, b[i].name);
            d->base_index = i;
            d->part = p;
            d->n_parts = parts;
            d->ndim = b[i].ndim;
            d->rows = q + (p < r ? 1 : 0);
            d->cols = b[i].cols;
            d->row_offset = off;
            d->count = (size_t)d->rows * (size_t)d->cols;
            d->bytes = d->count * sizeof(float);
            d->trainable = 1;
            d->ps = -1;
            off += d->rows;
        }
        assert(((void)"catalog_build: parts must cover the rows", off == b[i].rows));
    }
    assert(((void)"catalog_build: variable count", k == total));
    cat->n = total;
    cat->v = v;
    cat->model = model;
    cat->hidden = model == MODEL_MLP ? hidden : 0;
    return DP_OK;
}

void catalog_release(var_catalog *cat)
{
    if (!cat) return;
    free(cat->v);
    memset(cat, 0, sizeof *cat);
}

int catalog_place(var_catalog *cat, int n_ps, placement_kind kind, char *err)
{
    assert(((void)"catalog_place: NULL catalogue", cat));
    if (n_ps < 1) return dp_fail(err, DP_EINVAL, "placement: %d ps tasks, need at least 1", n_ps);
    if (kind != PLACE_ROUND_ROBIN && kind != PLACE_GREEDY)
        return dp_fail(err, DP_EINVAL, "placement: unknown strategy %d", (int)kind);
    if (kind == PLACE_ROUND_ROBIN) {
        for (int i = 0; i < cat->n; i++) cat->v[i].ps = i % n_ps;
        return DP_OK;
    }
    /* GreedyLoadBalancingStrategy with byte_size_load_fn: least loaded, ties to lowest */
    size_t *load = xcalloc((size_t)n_ps, sizeof *load);
    for (int i = 0; i < cat->n; i++) {
        int best = 0;
        for (int p = 1; p < n_ps; p++)
            if (load[p] < load[best]) best = p;
        cat->v[i].ps = best;
        load[best] += cat->v[i].bytes;
    }
    free(load);
    return DP_OK;
}

int catalog_find(const var_catalog *cat, const char *name)
{
    assert(((void)"catalog_find: NULL argument", cat && name));
    for (int i = 0; i < cat->n; i++)
        if (!strcmp(cat->v[i].name, name)) return i;
    return -1;
}

size_t catalog_ps_bytes(const var_catalog *cat, int ps)
{
    assert(((void)"catalog_ps_bytes: NULL catalogue", cat));
    size_t sum = 0;
    for (int i = 0; i < cat->n; i++)
        if (cat->v[i].ps == ps) sum += cat->v[i].bytes;
    return sum;
}

int model_parse(const char *s, model_kind *out)
{
    if (!s) return DP_EINVAL;
    if (!strcmp(s, "softmax")) *out = MODEL_SOFTMAX;
    else if (!strcmp(s, "mlp")) *out = MODEL_MLP;
    else return DP_EINVAL;
    return DP_OK;
}

int placement_parse(const char *s, placement_kind *out)
{
    if (!s) return DP_EINVAL;
    if (!strcmp(s, "round-robin")) *out = PLACE_ROUND_ROBIN;
    else if (!strcmp(s, "greedy")) *out = PLACE_GREEDY;
    else return DP_EINVAL;
    return DP_OK;
}

const char *model_name(model_kind m)
{
    return m == MODEL_MLP ? "mlp" : m == MODEL_SOFTMAX ? "softmax" : "?";
}

const char *placement_name(placement_kind p)
{
    return p == PLACE_GREEDY ? "greedy" : p == PLACE_ROUND_ROBIN ? "round-robin" : "?";
}

/* Prints one "name: (OpType): device" line. */
static void log_op(FILE *f, const char *name, const char *type, const char *dev)
{
    fprintf(f, "%s: (%s): %s\n", name, type, dev);
}

/* Prints worker 0's ops for one dense layer "scope" (x @ W + b), with the concat that
 * TensorFlow inserts when the weights are partitioned. */
static void log_layer(FILE *f, const var_catalog *cat, const char *scope, const char *dev)
{
    char nm[2 * VAR_NAME_MAX];
    snprintf(nm, sizeof nm, "%s/weights", scope);
    int w = catalog_find(cat, nm);
    if (w < 0) {
        snprintf(nm, sizeof nm, "%s/weights/part_0", scope);
        w = catalog_find(cat, nm);
    }
    if (w >= 0 && cat->v[w].n_parts > 1) {
        snprintf(nm, sizeof nm, "%s/weights/ConcatPartitions/concat", scope);
        log_op(f, nm, "ConcatV2", dev);
    }
    snprintf(nm, sizeof nm, "%s/MatMul", scope);
    log_op(f, nm, "MatMul", dev);
    snprintf(nm, sizeof nm, "%s/add", scope);
    log_op(f, nm, "Add", dev);
}

void catalog_log_placement(FILE *f, const var_catalog *cat, int n_ps, int n_workers)
{
    assert(((void)"catalog_log_placement: NULL argument", f && cat));
    char dev[128];
    fputs("Device mapping:\n", f);
    for (int i = 0; i < n_ps; i++)
        fprintf(f, "%s -> device: CPU device\n", spec_device_name(dev, sizeof dev, JOB_PS, i,
                                                                   "CPU", 0));
    for (int i = 0; i < n_workers; i++)
        fprintf(f, "%s -> device: CPU device\n", spec_device_name(dev, sizeof dev, JOB_WORKER,
                                                                   i, "CPU", 0));

    for (int i = 0; i < cat->n; i++) {
        const var_def *d = &cat->v[i];
        if (d->ps < 0) log_op(f, d->name, "VariableV2", "(unplaced)");
        else log_op(f, d->name, "VariableV2", spec_device_name(dev, sizeof dev, JOB_PS, d->ps,
                                                                 "CPU", 0));
    }

    /* worker 0's graph, forward then backward, in TensorFlow's op names */
    spec_device_name(dev, sizeof dev, JOB_WORKER, 0, "CPU", 0);
    int mlp = cat->model == MODEL_MLP;
    log_op(f, "x", "Placeholder", dev);
    log_op(f, "y", "Placeholder", dev);
    if (mlp) {
        log_layer(f, cat, "hidden", dev);
        log_op(f, "hidden/Relu", "Relu", dev);
    }
    log_layer(f, cat, "softmax", dev);
    log_op(f, "loss/SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
           dev);
    log_op(f, "loss/Mean", "Mean", dev);
    log_op(f, "gradients/loss/Mean_grad/truediv", "RealDiv", dev);
    log_op(f, "gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul", "Mul", dev);
    log_op(f, "gradients/softmax/add_grad/Sum_1", "Sum", dev);
    log_op(f, "gradients/softmax/MatMul_grad/MatMul_1", "MatMul", dev);
    if (mlp) {
        log_op(f, "gradients/softmax/MatMul_grad/MatMul", "MatMul", dev);
        log_op(f, "gradients/hidden/Relu_grad/ReluGrad", "ReluGrad", dev);
        log_op(f, "gradients/hidden/add_grad/Sum_1", "Sum", dev);
        log_op(f, "gradients/hidden/MatMul_grad/MatMul_1", "MatMul", dev);
    }
}
