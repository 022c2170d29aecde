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

/* Prints TensorFlow's log_device_placement output for the run to f: "Device mapping:"
 * and one line per device of the cluster, then one line per variable
 * ("hidden/weights: (VariableV2): /job:ps/replica:0/task:1/device:CPU:0") and per op
 * of worker 0's graph ("hidden/MatMul: (MatMul): /job:worker/replica:0/task:0/device:CPU:0"). */
void catalog_log_placement(FILE *f, const var_catalog *cat, int n_ps, int n_workers);

#endif
