/* device.h — a task's devices, named as TensorFlow names them
 * (/job:localhost/replica:0/task:0/device:CPU:1, .../device:GPU:0): CPU devices computing
 * through CBLAS, any number of them (virtual CPU devices, as TensorFlow's
 * device_count={'CPU': N}), and the CUDA devices present (runtime/gpu/gpu.h). Every device
 * has its own thread: dev_call runs a function there and waits, so a CUDA context is only
 * ever used by the thread that opened it. Also TensorFlow's placement rules: device
 * specifications ("/gpu:1", "/device:CPU:0", a full name), --device-for PATTERN=DEVICE
 * rules globbed on op names, hard placement errors in TensorFlow's words and soft
 * placement, and the "Device mapping:" part of log_device_placement.
 * Thread rules: dev_call and dev_parallel may be called from any thread except a device
 * thread itself (a device never waits on another device, so no cycle can deadlock). */
#ifndef RUNTIME_DEVICE_H
#define RUNTIME_DEVICE_H

#include <stddef.h>
#include <stdio.h>

#include "runtime/gpu/gpu.h"

#define DEV_MAX 64          /* devices in one task */
#define DEV_NAME_MAX 96
#define DEV_MAX_RULES 32

typedef enum dev_kind { DEV_CPU = 0, DEV_GPU = 1 } dev_kind;

typedef struct dev_set dev_set;

/* Opens the devices of task `task` of job `job` ("localhost", "worker"): n_cpu CPU
 * devices (1..DEV_MAX) then up to max_gpu CUDA devices (-1: every one present, 0: none);
 * starts one thread per device (a GPU's thread opens its CUDA context). Returns NULL with
 * err on failure. Free with dev_set_free(), which stops the threads. */
dev_set *dev_set_new(const char *job, int task, int n_cpu, int max_gpu, char *err);
void dev_set_free(dev_set *s);

/* Devices: CPUs first (CPU:0 is index 0), then GPUs. */
int dev_count(const dev_set *s);
int dev_count_kind(const dev_set *s, dev_kind kind);
dev_kind dev_kind_of(const dev_set *s, int d);
/* The k of CPU:k / GPU:k. */
int dev_ordinal(const dev_set *s, int d);
/* Index of the k-th device of a kind, or -1. */
int dev_index(const dev_set *s, dev_kind kind, int k);
/* Full TensorFlow name; borrowed until dev_set_free. */
const char *dev_name(const dev_set *s, int d);
/* The task the devices belong to: "/job:worker/replica:0/task:1". */
const char *dev_task_name(const dev_set *s);
/* A GPU device's CUDA context (NULL for a CPU): use it only inside dev_call(s, d, ...). */
gpu_ctx *dev_gpu(const dev_set *s, int d);

/* Finds the device a specification names: "/gpu:1", "gpu:1", "/device:GPU:1",
 * "/cpu:0", or a full "/job:J/replica:0/task:T/device:CPU:0" (case of the type ignored).
 * Returns its index, -1 when the specification is well-formed but names no device of
 * this task, or DP_EINVAL with err when it is not a device specification. canon (may be
 * NULL) gets TensorFlow's spelling of the specification ("/device:GPU:1", or the full
 * name as given). */
int dev_find(const dev_set *s, const char *spec, char *canon, size_t canon_n, char *err);

/* Runs fn(arg) on device d's thread and waits for it to return. */
void dev_call(dev_set *s, int d, void (*fn)(void *arg), void *arg);
/* Runs fn(i, arg) for i in 0..n-1 on n threads at once (the towers' drivers), and joins. */
void dev_parallel(int n, void (*fn)(int i, void *arg), void *arg);

/* Prints TensorFlow's "Device mapping:" block: one line per GPU ("/job:.../device:GPU:0
 * -> device: 0, name: NVIDIA H200, pci bus id: 0000:19:00.0, compute capability: 9.0"),
 * or "Device mapping: no known devices." when the task has none. */
void dev_log_mapping(FILE *f, const dev_set *s);

/* ---- placement rules ---------------------------------------------------------------- */

/* One --device-for rule: ops whose name matches the glob pattern go to device. */
typedef struct dev_rule {
    char pattern[128];
    char device[DEV_NAME_MAX];
} dev_rule;

/* Parses "PATTERN=DEVICE" ("softmax/MatMul=/gpu:1"); `what` names the input in messages.
 * Checks the device is a well-formed specification (not that it exists). */
int dev_rule_parse(const char *text, dev_rule *r, const char *what, char *err);
/* Parses a list of rules separated by ',' or ';' (the [placement] device_for key) into
 * rules[*n..max), advancing *n. */
int dev_rules_parse(const char *text, dev_rule *rules, int *n, int max, const char *what, char *err);

/* The first of the n rules whose pattern matches `name`, or -1. */
int dev_rule_first(const dev_rule *rules, int n, const char *name);

/* The device of op `name`: the first rule whose pattern matches it, else `def`. A rule
 * naming a device this task does not have is TensorFlow's error ("Cannot assign a device
 * for operation 'NAME': Could not satisfy explicit device specification '/device:GPU:2'
 * because no devices matching that specification are registered in this process;
 * available devices: ...") unless soft, when the op falls back to `def` and *fell_back
 * (may be NULL) is set. Returns the device index or a negative dp_err with err. */
int dev_place(const dev_set *s, const dev_rule *rules, int n_rules, const char *name, int def,
              int soft, int *fell_back, char *err);

#endif
