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

/* ---- one replica's graph ------------------------------------------------------- */

static const struct { const char *name, *type; graph_op forward; } graph_ops[GOP_COUNT] = {
    [GOP_X] = {"x", "Placeholder", GOP_X},
    [GOP_Y] = {"y", "Placeholder", GOP_Y},
    [GOP_HID_CONCAT] = {"hidden/weights/ConcatPartitions/concat", "ConcatV2", GOP_HID_CONCAT},
    [GOP_HID_MATMUL] = {"hidden/MatMul", "MatMul", GOP_HID_MATMUL},
    [GOP_HID_ADD] = {"hidden/add", "Add", GOP_HID_ADD},
    [GOP_HID_RELU] = {"hidden/Relu", "Relu", GOP_HID_RELU},
    [GOP_SM_CONCAT] = {"softmax/weights/ConcatPartitions/concat", "ConcatV2", GOP_SM_CONCAT},
    [GOP_SM_MATMUL] = {"softmax/MatMul", "MatMul", GOP_SM_MATMUL},
    [GOP_SM_ADD] = {"softmax/add", "Add", GOP_SM_ADD},
    [GOP_XENT] = {"loss/SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                  GOP_XENT},
    [GOP_MEAN] = {"loss/Mean", "Mean", GOP_MEAN},
    [GOP_MEAN_GRAD] = {"gradients/loss/Mean_grad/truediv", "RealDiv", GOP_MEAN},
    [GOP_XENT_GRAD] = {"gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul", "Mul", GOP_XENT},
    [GOP_SM_ADD_GRAD] = {"gradients/softmax/add_grad/Sum_1", "Sum", GOP_SM_ADD},
    [GOP_SM_MATMUL_GRAD_W] = {"gradients/softmax/MatMul_grad/MatMul_1", "MatMul", GOP_SM_MATMUL},
    [GOP_SM_MATMUL_GRAD_X] = {"gradients/softmax/MatMul_grad/MatMul", "MatMul", GOP_SM_MATMUL},
    [GOP_RELU_GRAD] = {"gradients/hidden/Relu_grad/ReluGrad", "ReluGrad", GOP_HID_RELU},
    [GOP_HID_ADD_GRAD] = {"gradients/hidden/add_grad/Sum_1", "Sum", GOP_HID_ADD},
    [GOP_HID_MATMUL_GRAD_W] = {"gradients/hidden/MatMul_grad/MatMul_1", "MatMul", GOP_HID_MATMUL},
};

const char *graph_op_name(graph_op op)
{
    dp_assert("graph_op_name: op out of range", op >= 0 && op < GOP_COUNT);
    return graph_ops[op].name;
}

const char *graph_op_type(graph_op op)
{
    dp_assert("graph_op_type: op out of range", op >= 0 && op < GOP_COUNT);
    return graph_ops[op].type;
}

graph_op graph_op_forward(graph_op op)
{
    dp_assert("graph_op_forward: op out of range", op >= 0 && op < GOP_COUNT);
    return graph_ops[op].forward;
}

int graph_op_in(graph_op op, model_kind model, int partitioned)
{
    int mlp = model == MODEL_MLP;
    switch (op) {
    case GOP_HID_CONCAT: return mlp && (partitioned & 1);
    case GOP_SM_CONCAT: return (partitioned & 2) != 0;
    case GOP_HID_MATMUL: case GOP_HID_ADD: case GOP_HID_RELU: case GOP_SM_MATMUL_GRAD_X:
    case GOP_RELU_GRAD: case GOP_HID_ADD_GRAD: case GOP_HID_MATMUL_GRAD_W:
        return mlp;
    default: return op >= 0 && op < GOP_COUNT;
    }
}

int catalog_partitioned(const var_catalog *cat)
{
    int mask = 0;
    for (int i = 0; i < cat->n; i++) {
        if (cat->v[i].n_parts < 2) continue;
        if (!strcmp(cat->v[i].base, "hidden/weights")) mask |= 1;
        if (!strcmp(cat->v[i].base, "softmax/weights")) mask |= 2;
    }
    return mask;
}

void graph_log_op(FILE *f, const char *prefix, const char *name, const char *type, const char *dev)
{
    fprintf(f, "%s%s%s: (%s): %s\n", prefix ? prefix : "", prefix && *prefix ? "/" : "", name, type,
            dev);
}

void catalog_log_vars(FILE *f, const var_catalog *cat)
{
    char dev[128];
    for (int i = 0; i < cat->n; i++) {
        const var_def *d = &cat->v[i];
        graph_log_op(f, NULL, d->name, "VariableV2",
                     d->ps < 0 ? "(unplaced)" : spec_device_name(dev, sizeof dev, JOB_PS, d->ps, "CPU", 0));
    }
}

void catalog_log_placement(FILE *f, const var_catalog *cat, int worker)
{
    assert(((void)"catalog_log_placement: NULL argument", f && cat));
    char dev[128];
    /* TensorFlow lists only accelerators in the mapping: a CPU-only task has none. */
    fputs("Device mapping: no known devices.\n", f);
    catalog_log_vars(f, cat);
    /* this worker's graph, forward then backward, in TensorFlow's op names */
    spec_device_name(dev, sizeof dev, JOB_WORKER, worker, "CPU", 0);
    int parts = catalog_partitioned(cat);
    for (int op = 0; op < GOP_COUNT; op++)
        if (graph_op_in((graph_op)op, cat->model, parts))
            graph_log_op(f, NULL, graph_op_name((graph_op)op), graph_op_type((graph_op)op), dev);
}
