/* synth.h — a synthetic synchronous run written straight into a trace, for the viewer's
 * tests, bench and demo frames: per global step every worker pulls each variable, computes
 * (worker 1 is a straggler), pushes; the ps applies the first N - backup gradients and
 * drops the rest as stale; workers wait at the barrier until the step is released; loss
 * falls, accuracy rises, evaluations and checkpoints happen now and then. Events stream
 * out step by step (sorted within a step), so a 10M-event trace needs little memory.
 * Deterministic for a seed. Header-only (static); needs events/trace.h and common/dp.h. */
#ifndef VIZ_SYNTH_H
#define VIZ_SYNTH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/trace.h"

typedef struct viz_synth_opts {
    int n_ps, n_workers, n_vars, steps, backup;
    uint64_t seed;
    int64_t max_events;      /* stop after about this many events (0 = no limit) */
    const char *title;
} viz_synth_opts;

typedef struct synth_ev { evt_record e; uint64_t seq; } synth_ev;

static int synth_cmp(const void *pa, const void *pb)
{
    const synth_ev *a = pa, *b = pb;
    if (a->e.t != b->e.t) return a->e.t < b->e.t ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

typedef struct synth_buf { synth_ev *v; size_t n, cap; uint64_t seq; } synth_buf;

static void synth_put(synth_buf *b, const evt_record *e)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->v = xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n].e = *e;
    b->v[b->n++].seq = b->seq++;
}

static int synth_flush(trace_writer *w, synth_buf *b, uint64_t *count)
{
    qsort(b->v, b->n, sizeof *b->v, synth_cmp);
    for (size_t i = 0; i < b->n; i++)
        if (trace_writer_add(w, &b->v[i].e)) return -1;
    *count += b->n;
    b->n = 0;
    return 0;
}

/* Writes the run to path. Returns the number of events, or -1 with err filled. */
static int64_t viz_synth_write(const char *path, const viz_synth_opts *o, char *err)
{
    char meta[512], name[160];
    snprintf(meta, sizeof meta,
             "{\"engine\":\"sim\",\"mode\":\"sync\",\"backup_workers\":%d,\"ps\":%d,\"workers\":%d,"
             "\"title\":\"%s\",\"seed\":%llu}", o->backup, o->n_ps, o->n_workers,
             o->title ? o->title : "synthetic sync run", (unsigned long long)o->seed);
    trace_writer *w = trace_writer_open(path, meta, err);
    if (!w) return -1;
    dp_rng rng;
    dp_rng_seed(&rng, o->seed);
    synth_buf b = {0};
    uint64_t count = 0;
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.str = trace_writer_intern(w, "{\"mode\":\"sync\"}");
    synth_put(&b, &e);
    uint32_t host = trace_writer_intern(w, "localhost");
    uint32_t *wdev = xcalloc((size_t)o->n_workers + 1, sizeof *wdev);
    for (int p = 0; p < o->n_ps; p++) {
        evt_init(&e, EVT_TASK_START, EVT_JOB_PS, p);
        e.t = 1000 + p; e.str = host; e.bytes = 4000 + p;
        synth_put(&b, &e);
        snprintf(name, sizeof name, "/job:ps/replica:0/task:%d/device:CPU:0", p);
        evt_init(&e, EVT_DEVICE, EVT_JOB_PS, p);
        e.t = 1500 + p; e.device = trace_writer_intern(w, name);
        synth_put(&b, &e);
    }
    for (int k = 0; k < o->n_workers; k++) {
        evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, k);
        e.t = 2000 + k; e.str = host; e.bytes = 5000 + k;
        synth_put(&b, &e);
        snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:%s:0", k, k % 2 ? "GPU" : "CPU");
        wdev[k] = trace_writer_intern(w, name);
        evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, k);
        e.t = 2500 + k; e.device = wdev[k];
        synth_put(&b, &e);
    }
    static const char *const layer[] = {"hidden", "softmax", "embed", "output"};
    int nv = o->n_vars;
    uint32_t *var = xcalloc((size_t)nv + 1, sizeof *var);
    int64_t *vbytes = xcalloc((size_t)nv + 1, sizeof *vbytes);
    for (int v = 0; v < nv; v++) {
        if (v < 8) snprintf(name, sizeof name, "%s/%s", layer[v / 2], v % 2 ? "biases" : "weights");
        else snprintf(name, sizeof name, "layer%d/%s", v / 2, v % 2 ? "biases" : "weights");
        var[v] = trace_writer_intern(w, name);
        vbytes[v] = v % 2 ? 512 : (v / 2 % 2 ? 5120 : 401408);
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
        e.t = 3000 + v; e.var = var[v]; e.bytes = vbytes[v];
        e.str = trace_writer_intern(w, v % 2 ? "128" : "784x128");
        synth_put(&b, &e);
        snprintf(name, sizeof name, "/job:ps/replica:0/task:%d/device:CPU:0", v % o->n_ps);
        uint32_t dev = trace_writer_intern(w, name);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
        e.t = 3500 + v; e.var = var[v]; e.peer_job = EVT_JOB_PS; e.peer = v % o->n_ps; e.device = dev;
        synth_put(&b, &e);
        char op[200];
        evt_init(&e, EVT_OP_PLACE, EVT_JOB_WORKER, 0);
        e.t = 3600 + v; e.device = dev; e.str = trace_writer_intern(w, "ApplyGradientDescent");
        snprintf(op, sizeof op, "GradientDescent/update_%d", v);
        e.var = trace_writer_intern(w, op);
        synth_put(&b, &e);
    }
    for (int k = 0; k < o->n_workers && k < 2; k++) {
        static const char *const ops[][2] = {{"MatMul", "MatMul"}, {"Relu", "Relu"},
                                             {"gradients/MatMul_grad/MatMul", "MatMul"},
                                             {"SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits"}};
        for (size_t i = 0; i < DP_ARRAY_LEN(ops); i++) {
            evt_init(&e, EVT_OP_PLACE, EVT_JOB_WORKER, k);
            snprintf(name, sizeof name, "tower_%d/%s", k, ops[i][0]);
            e.t = 3700 + k * 10 + (int64_t)i; e.var = trace_writer_intern(w, name);
            e.str = trace_writer_intern(w, ops[i][1]); e.device = wdev[k];
            synth_put(&b, &e);
        }
    }
    int64_t T = 1000000, *done = xcalloc((size_t)o->n_workers + 1, sizeof *done);
    int *order = xcalloc((size_t)o->n_workers + 1, sizeof *order);
    uint64_t *msg = xcalloc((size_t)o->n_workers + 1, sizeof *msg);
    uint32_t ckpt = trace_writer_intern(w, "/tmp/model.ckpt");
    int accept = o->n_workers - o->backup > 0 ? o->n_workers - o->backup : 1;
    for (int s = 0; s < o->steps; s++) {
        if (o->max_events > 0 && (int64_t)(count + b.n) >= o->max_events) break;
        for (int k = 0; k < o->n_workers; k++) {
            int64_t t = T + (int64_t)dp_rng_below(&rng, 2000000), pend = t;
            for (int v = 0; v < nv; v++) {
                int64_t bg = t + v * 300000, d = 5000000 + vbytes[v] * 30 + (int64_t)dp_rng_below(&rng, 6000000);
                evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, k);
                e.t = bg; e.peer_job = EVT_JOB_PS; e.peer = v % o->n_ps; e.var = var[v]; e.step = s;
                e.id = ++msg[k];
                synth_put(&b, &e);
                e.kind = EVT_PULL_END; e.t = bg + d; e.dur = d; e.bytes = vbytes[v]; e.value = s;
                synth_put(&b, &e);
                if (bg + d > pend) pend = bg + d;
            }
            double slow = k == 1 % (o->n_workers > 1 ? o->n_workers : 1) ? 1.7 : 1.0;
            int64_t cd = (int64_t)((30e6 + (double)dp_rng_below(&rng, 12000000)) * slow);
            evt_init(&e, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, k);
            e.t = pend + 200000; e.device = wdev[k]; e.step = s;
            synth_put(&b, &e);
            e.kind = EVT_COMPUTE_END; e.t += cd; e.dur = cd;
            synth_put(&b, &e);
            int64_t pt = e.t + 200000, pe = pt;
            for (int v = 0; v < nv; v++) {
                int64_t bg = pt + v * 300000, d = 5000000 + vbytes[v] * 30 + (int64_t)dp_rng_below(&rng, 6000000);
                evt_init(&e, EVT_PUSH_BEGIN, EVT_JOB_WORKER, k);
                e.t = bg; e.peer_job = EVT_JOB_PS; e.peer = v % o->n_ps; e.var = var[v]; e.step = s;
                e.id = ++msg[k]; e.bytes = vbytes[v];
                synth_put(&b, &e);
                e.kind = EVT_PUSH_END; e.t = bg + d; e.dur = d;
                synth_put(&b, &e);
                if (bg + d > pe) pe = bg + d;
            }
            done[k] = pe;
            order[k] = k;
        }
        /* the first `accept` workers to finish are aggregated; the rest are stale */
        for (int i = 1; i < o->n_workers; i++)
            for (int j = i; j > 0 && done[order[j]] < done[order[j - 1]]; j--) {
                int x = order[j]; order[j] = order[j - 1]; order[j - 1] = x;
            }
        int64_t R = done[order[accept - 1]] + 1000000;
        for (int i = 0; i < o->n_workers; i++) {
            int k = order[i], stale = i >= accept;
            uint64_t first = msg[k] - (uint64_t)nv + 1;
            for (int v = 0; v < nv; v++) {
                evt_init(&e, stale ? EVT_DROP : EVT_APPLY, EVT_JOB_PS, v % o->n_ps);
                e.t = stale ? done[k] + 500000 : done[k] + 300000;
                e.peer_job = EVT_JOB_WORKER; e.peer = k; e.var = var[v]; e.step = stale ? s + 1 : s;
                e.value = stale; e.id = first + (uint64_t)v;
                synth_put(&b, &e);
            }
            int64_t wt = done[k] + 100000;
            evt_init(&e, EVT_BARRIER_WAIT, EVT_JOB_WORKER, k);
            e.t = wt < R ? wt : R - 1; e.step = s;
            synth_put(&b, &e);
            e.kind = EVT_BARRIER_RELEASE; e.dur = R - e.t; e.t = R;
            synth_put(&b, &e);
            evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, k);
            e.t = R + 100000; e.step = s;
            e.value = (0.35 + 2.0 * exp(-s / 40.0)) * (1 + 0.08 * (dp_rng_uniform(&rng) - 0.5));
            e.value2 = s + 1;
            synth_put(&b, &e);
        }
        evt_init(&e, EVT_GLOBAL_STEP, EVT_JOB_PS, 0);
        e.t = R; e.step = s + 1;
        synth_put(&b, &e);
        if (s % 10 == 9) {
            evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
            e.t = R + 300000; e.step = s + 1;
            e.value = 0.88 - 0.78 * exp(-s / 25.0); e.value2 = 0.35 + 2.0 * exp(-s / 40.0);
            synth_put(&b, &e);
        }
        if (s % 50 == 49) {
            evt_init(&e, EVT_CHECKPOINT_WRITE, EVT_JOB_WORKER, 0);
            e.t = R + 400000; e.step = s + 1; e.str = ckpt;
            synth_put(&b, &e);
        }
        T = R + 2000000;
        if (synth_flush(w, &b, &count)) {
            dp_fail(err, DP_EIO, "%s: write failed", path);
            break;
        }
    }
    int64_t rc = synth_flush(w, &b, &count) ? -1 : (int64_t)count;
    if (trace_writer_close(w, err)) rc = -1;
    free(b.v);
    free(wdev);
    free(var);
    free(vbytes);
    free(done);
    free(order);
    free(msg);
    return rc;
}

#endif
