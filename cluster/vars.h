/* vars.h — the model's variable catalogue and its placement on ps tasks, as TensorFlow's
 * replica_device_setter does it: variables in creation order (global_step first, as in
 * TensorFlow's mnist_replica example), optionally partitioned along axis 0, placed
 * round-robin or greedily by byte size. Pure logic: no sockets, no clock. */
#ifndef CLUSTER_VARS_H
#define CLUSTER_VARS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef enum model_kind { MODEL_SOFTMAX = 0, MODEL_MLP = 1 } model_kind;
typedef enum placement_kind { PLACE_ROUND_ROBIN = 0, PLACE_GREEDY = 1 } placement_kind;

#define MODEL_INPUTS 784
#define MODEL_CLASSES 10
#define VAR_NAME_MAX 64

/* One variable or one part of a partitioned variable.
 * Shapes are TensorFlow's: weights [rows, cols] row-major (x @ W), biases [rows] (cols=1),
 * global_step a scalar int64 counter (rows=cols=1, count=0 floats, trainable=0).
 * A part covers rows [row_offset, row_offset+rows) of its base variable; its floats
 * start at element row_offset*cols of the base tensor. */
typedef struct var_def {
    char name[VAR_NAME_MAX];  /* "hidden/weights" or "hidden/weights/part_1" */
    char base[VAR_NAME_MAX];  /* "hidden/weights" */
    int base_index;           /* index of the base tensor in nn order, -1 for global_step */
    int part, n_parts;        /* 0,1 when not partitioned */
    int ndim;                 /* 0 for global_step, 1 biases, 2 weights */
    int rows, cols;
    int row_offset;
    size_t count;             /* floats in this variable/part (0 for global_step) */
    size_t bytes;             /* count*4, or 8 for global_step */
    int trainable;
    int ps;                   /* ps task it is placed on, -1 before placement */
} var_def;

typedef struct var_catalog {
    int n;
    var_def *v;      /* owned */
    model_kind model;
    int hidden;
} var_catalog;

/* Builds the catalogue: global_step, then for MODEL_MLP hidden/weights [784,H],
 * hidden/biases [H], softmax/weights [H,10], softmax/biases [10]; for MODEL_SOFTMAX
 * softmax/weights [784,10], softmax/biases [10]. partition K >= 1 splits every 2-D weight
 * into min(K, rows) parts along axis 0 (first rows%K parts one row larger, as
 * TensorFlow's fixed_size_partitioner). Errors: hidden outside 1..65536, K outside 1..1024.
 * Release with catalog_release(). */
int catalog_build(var_catalog *cat, model_kind model, int hidden, int partition, char *err);
void catalog_release(var_catalog *cat);

/* Places every variable on one of n_ps ps tasks: round-robin in creation order
 * (v1->ps:0, v2->ps:1, v3->ps:0 ...) or greedy (least bytes so far, ties to the lowest
 * index). Sets v[i].ps. Errors: n_ps < 1. */
int catalog_place(var_catalog *cat, int n_ps, placement_kind kind, char *err);

/* Index of the variable named `name`, or -1. */
int catalog_find(const var_catalog *cat, const char *name);

/* Total bytes placed on ps task `ps`. */
size_t catalog_ps_bytes(const var_catalog *cat, int ps);

/* Parses "softmax"/"mlp" and "round-robin"/"greedy"; DP_EINVAL otherwise. */
int model_parse(const char *s, model_kind *out);
int placement_parse(const char *s, placement_kind *out);
const char *model_name(model_kind m);
const char *placement_name(placement_kind p);

/* ---- one replica's graph: the ops of its forward and backward pass, in TensorFlow's
 * names, in the order they run (and log_device_placement lists them). */
typedef enum graph_op {
    GOP_X, GOP_Y,
    GOP_HID_CONCAT, GOP_HID_MATMUL, GOP_HID_ADD, GOP_HID_RELU,
    GOP_SM_CONCAT, GOP_SM_MATMUL, GOP_SM_ADD,
    GOP_XENT, GOP_MEAN, GOP_MEAN_GRAD, GOP_XENT_GRAD,
    GOP_SM_ADD_GRAD, GOP_SM_MATMUL_GRAD_W, GOP_SM_MATMUL_GRAD_X,
    GOP_RELU_GRAD, GOP_HID_ADD_GRAD, GOP_HID_MATMUL_GRAD_W,
    GOP_COUNT
} graph_op;

/* "hidden/MatMul" and "MatMul" (static strings). */
const char *graph_op_name(graph_op op);
const char *graph_op_type(graph_op op);
/* The forward op a gradient op differentiates (the op itself for a forward op): a
 * gradient op without a device of its own is colocated with it. */
graph_op graph_op_forward(graph_op op);
/* 1 when op is in the graph of `model`; partitioned is catalog_partitioned()'s mask
 * (bit 0 hidden/weights, bit 1 softmax/weights split into parts: a ConcatV2 joins
 * them before the layer's MatMul). */
int graph_op_in(graph_op op, model_kind model, int partitioned);
/* Which weights of cat are split into parts (the mask graph_op_in takes). */
int catalog_partitioned(const var_catalog *cat);

/* Prints one log_device_placement line "[prefix/]name: (type): device". */
void graph_log_op(FILE *f, const char *prefix, const char *name, const char *type, const char *dev);
/* One "name: (VariableV2): /job:ps/replica:0/task:K/device:CPU:0" line per variable. */
void catalog_log_vars(FILE *f, const var_catalog *cat);

/* Prints what TensorFlow's log_device_placement prints in worker task `worker` of a
 * CPU-only cluster: "Device mapping: no known devices.", one line per variable (on its
 * ps) and one per op of that worker's graph on /job:worker/replica:0/task:W/device:CPU:0
 * (workers with several devices compose the log from the pieces above). */
void catalog_log_placement(FILE *f, const var_catalog *cat, int worker);

#endif
