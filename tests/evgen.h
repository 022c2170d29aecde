/* evgen.h — a synthetic but realistic run for the events tests: ps and worker task
 * starts, devices, variables and their placement, then per worker step: pulls of every
 * variable, compute on the worker's device, pushes, applies (or drops) on the ps, step
 * end with loss, global step; barrier waits in sync mode; an eval now and then. Events
 * come out ordered by time (stable), as a hub would merge them. Header-only, static. */
#ifndef TESTS_EVGEN_H
#define TESTS_EVGEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/event.h"

typedef struct evgen {
    evt_record *ev;
    size_t n, cap;
    evt_strtab *strs;      /* names used by the events */
} evgen;

static void evgen_push(evgen *g, const evt_record *e)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1024;
        g->ev = xrealloc(g->ev, g->cap * sizeof *g->ev);
    }
    g->ev[g->n++] = *e;
}

/* Stable sort by t (qsort is not stable: sort (t, index) pairs). */
static void evgen_sort(evgen *g)
{
    typedef struct { int64_t t; size_t i; } key;
    key *k = xmalloc(g->n * sizeof *k);
    for (size_t i = 0; i < g->n; i++) k[i] = (key){g->ev[i].t, i};
    key *tmp = xmalloc(g->n * sizeof *tmp);
    for (size_t w = 1; w < g->n; w *= 2) {
        for (size_t lo = 0; lo < g->n; lo += 2 * w) {
            size_t mid = lo + w < g->n ? lo + w : g->n, hi = lo + 2 * w < g->n ? lo + 2 * w : g->n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = k[b].t < k[a].t ? k[b++] : k[a++];
            while (a < mid) tmp[o++] = k[a++];
            while (b < hi) tmp[o++] = k[b++];
        }
        memcpy(k, tmp, g->n * sizeof *k);
    }
    evt_record *ev = xmalloc(g->n * sizeof *ev);
    for (size_t i = 0; i < g->n; i++) ev[i] = g->ev[k[i].i];
    free(g->ev);
    g->ev = ev;
    g->cap = g->n;
    free(k);
    free(tmp);
}

/* Generates a run; sync=1 adds barrier waits. Caller frees with evgen_free. */
static void evgen_run(evgen *g, int n_ps, int n_workers, int n_vars, int steps, int sync,
                      uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->strs = evt_strtab_new();
    dp_rng rng;
    dp_rng_seed(&rng, seed);
    char name[128];
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.str = evt_strtab_intern(g->strs, "{\"mode\":\"sync\",\"lr\":0.05}");
    evgen_push(g, &e);
    for (int p = 0; p < n_ps; p++) {
        evt_init(&e, EVT_TASK_START, EVT_JOB_PS, p);
        e.t = 1000 + p;
        e.str = evt_strtab_intern(g->strs, "localhost");
        e.bytes = 4000 + p;
        evgen_push(g, &e);
        snprintf(name, sizeof name, "/job:ps/replica:0/task:%d/device:CPU:0", p);
        evt_init(&e, EVT_DEVICE, EVT_JOB_PS, p);
        e.t = 1100 + p;
        e.device = evt_strtab_intern(g->strs, name);
        evgen_push(g, &e);
    }
    uint32_t *wdev = xcalloc((size_t)n_workers, sizeof *wdev);
    for (int w = 0; w < n_workers; w++) {
        evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, w);
        e.t = 2000 + w;
        e.str = evt_strtab_intern(g->strs, "localhost");
        e.bytes = 5000 + w;
        evgen_push(g, &e);
        snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:%s:0", w,
                 w % 2 ? "GPU" : "CPU");
        wdev[w] = evt_strtab_intern(g->strs, name);
        evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, w);
        e.t = 2100 + w;
        e.device = wdev[w];
        evgen_push(g, &e);
    }
    uint32_t *var = xcalloc((size_t)n_vars, sizeof *var);
    for (int v = 0; v < n_vars; v++) {
        snprintf(name, sizeof name, "layer%d/%s", v / 2, v % 2 ? "biases" : "weights");
        var[v] = evt_strtab_intern(g->strs, name);
        evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
        e.t = 3000 + v;
        e.var = var[v];
        e.str = evt_strtab_intern(g->strs, v % 2 ? "128" : "784x128");
        e.bytes = v % 2 ? 512 : 401408;
        evgen_push(g, &e);
        evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
        e.t = 3500 + v;
        e.var = var[v];
        e.peer_job = EVT_JOB_PS;
        e.peer = v % n_ps;
        snprintf(name, sizeof name, "/job:ps/replica:0/task:%d/device:CPU:0", v % n_ps);
        e.device = evt_strtab_intern(g->strs, name);
        evgen_push(g, &e);
    }
    int64_t gstep = 0;
    for (int w = 0; w < n_workers; w++) {
        int64_t t = 10000 + (int64_t)dp_rng_below(&rng, 5000);
        uint64_t msg = 1;
        for (int s = 0; s < steps; s++) {
            for (int v = 0; v < n_vars; v++) {          /* pulls overlap */
                int64_t b = t + v * 300, d = 20000 + (int64_t)dp_rng_below(&rng, 30000);
                evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, w);
                e.t = b; e.peer_job = EVT_JOB_PS; e.peer = v % n_ps; e.var = var[v];
                e.step = s; e.id = msg;
                evgen_push(g, &e);
                e.kind = EVT_PULL_END; e.t = b + d; e.dur = d; e.bytes = 4096;
                e.value = s;
                evgen_push(g, &e);
                msg++;
            }
            t += 60000;
            int64_t cd = 100000 + (int64_t)dp_rng_below(&rng, 50000);
            evt_init(&e, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, w);
            e.t = t; e.device = wdev[w]; e.step = s;
            evgen_push(g, &e);
            e.kind = EVT_COMPUTE_END; e.t = t + cd; e.dur = cd;
            evgen_push(g, &e);
            t += cd + 1000;
            for (int v = 0; v < n_vars; v++) {
                int64_t b = t + v * 200, d = 20000 + (int64_t)dp_rng_below(&rng, 30000);
                evt_init(&e, EVT_PUSH_BEGIN, EVT_JOB_WORKER, w);
                e.t = b; e.peer_job = EVT_JOB_PS; e.peer = v % n_ps; e.var = var[v];
                e.step = s; e.id = msg; e.bytes = 4096;
                evgen_push(g, &e);
                e.kind = EVT_PUSH_END; e.t = b + d; e.dur = d;
                evgen_push(g, &e);
                int drop = dp_rng_below(&rng, 20) == 0;
                evt_init(&e, drop ? EVT_DROP : EVT_APPLY, EVT_JOB_PS, v % n_ps);
                e.t = b + d + 500; e.peer_job = EVT_JOB_WORKER; e.peer = w; e.var = var[v];
                e.step = drop ? gstep : ++gstep; e.value = (double)dp_rng_below(&rng, 4);
                e.id = msg;
                evgen_push(g, &e);
                msg++;
            }
            t += 60000;
            if (sync) {
                evt_init(&e, EVT_BARRIER_WAIT, EVT_JOB_WORKER, w);
                e.t = t; e.step = s;
                evgen_push(g, &e);
                int64_t wait = (int64_t)dp_rng_below(&rng, 40000);
                e.kind = EVT_BARRIER_RELEASE; e.t = t + wait; e.dur = wait;
                evgen_push(g, &e);
                t += wait;
            }
            evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, w);
            e.t = t; e.step = s; e.value = 2.3 / (1.0 + s * 0.01); e.value2 = (double)gstep;
            evgen_push(g, &e);
            evt_init(&e, EVT_GLOBAL_STEP, EVT_JOB_PS, 0);
            e.t = t + 1; e.step = (int64_t)s * n_workers + w + 1;
            evgen_push(g, &e);
            if (w == 0 && s % 50 == 49) {
                evt_init(&e, EVT_EVAL, EVT_JOB_WORKER, 0);
                e.t = t + 2; e.step = s; e.value = 0.5 + s * 0.001; e.value2 = 1.0;
                evgen_push(g, &e);
                evt_init(&e, EVT_LOG, EVT_JOB_WORKER, 0);
                e.t = t + 3;
                snprintf(name, sizeof name, "step %d: \"eval\"\tdone \xce\xbb", s);
                e.str = evt_strtab_intern(g->strs, name);
                evgen_push(g, &e);
            }
            t += 1000;
        }
    }
    evgen_sort(g);
    free(wdev);
    free(var);
}

static void evgen_free(evgen *g)
{
    free(g->ev);
    evt_strtab_free(g->strs);
    memset(g, 0, sizeof *g);
}

#endif
