/* instr.c — task-side instrumentation over the events/ emitter (see instr.h). */
#include "runtime/instr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster/spec.h"
#include "common/dp.h"

/* Events a task may buffer while the hub is slow or away before dropping. */
#define INSTR_CAPACITY 65536

struct rt_instr {
    evt_emitter *em;
    int job, task;
    uint32_t *var_ids;   /* per catalogue index */
    int n_vars;
};

rt_instr *rt_instr_new(const char *hub_addr, int job, int task, const var_catalog *cat)
{
    if (!hub_addr || !*hub_addr) return NULL;
    char err[DP_ERRLEN];
    evt_emitter *em = evt_emitter_new(hub_addr, job, task, INSTR_CAPACITY, err);
    if (!em) {
        dp_log(DP_LOG_WARN, "instrumentation", "--hub %s: %s; running without events", hub_addr, err);
        return NULL;
    }
    rt_instr *in = xcalloc(1, sizeof *in);
    in->em = em;
    in->job = job;
    in->task = task;
    if (cat) {
        in->n_vars = cat->n;
        in->var_ids = xmalloc((size_t)cat->n * sizeof *in->var_ids);
        for (int i = 0; i < cat->n; i++) in->var_ids[i] = evt_emitter_intern(em, cat->v[i].name);
    }
    return in;
}

void rt_instr_free(rt_instr *in)
{
    if (!in) return;
    evt_emitter_free(in->em);
    free(in->var_ids);
    free(in);
}

int64_t rt_instr_now(const rt_instr *in)
{
    return in ? evt_emitter_now(in->em) : 0;
}

evt_record rt_instr_record(const rt_instr *in, evt_kind kind)
{
    evt_record e;
    evt_init(&e, kind, in ? in->job : 0, in ? in->task : 0);
    e.t = rt_instr_now(in);
    return e;
}

void rt_instr_emit(rt_instr *in, const evt_record *e)
{
    if (in) evt_emit(in->em, e);
}

uint32_t rt_instr_str(rt_instr *in, const char *s)
{
    return in ? evt_emitter_intern(in->em, s) : 0;
}

uint32_t rt_instr_var(const rt_instr *in, int var_index)
{
    if (!in || var_index < 0 || var_index >= in->n_vars) return 0;
    return in->var_ids[var_index];
}

uint32_t rt_instr_cpu(rt_instr *in, int job, int task)
{
    if (!in) return 0;
    char name[96];
    spec_device_name(name, sizeof name, job == EVT_JOB_PS ? JOB_PS : JOB_WORKER, task, "CPU", 0);
    return evt_emitter_intern(in->em, name);
}

void rt_instr_checkpoint(rt_instr *in, evt_kind kind, const char *path, int64_t step)
{
    if (!in) return;
    evt_record e = rt_instr_record(in, kind);
    e.str = rt_instr_str(in, path);
    e.step = step;
    rt_instr_emit(in, &e);
}

void rt_instr_log(rt_instr *in, const char *fmt, ...)
{
    if (!in) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    evt_record e = rt_instr_record(in, EVT_LOG);
    e.str = evt_emitter_intern(in->em, buf);
    e.value = DP_LOG_INFO;
    evt_emit(in->em, &e);
}

uint64_t rt_instr_sent(const rt_instr *in) { return in ? evt_emitter_sent(in->em) : 0; }
uint64_t rt_instr_dropped(const rt_instr *in) { return in ? evt_emitter_dropped(in->em) : 0; }

uint64_t rt_instr_msg_id(int64_t step, int var)
{
    return ((uint64_t)step << 16 | (uint64_t)(var & 0xffff)) + 1;
}

void rt_instr_define_var(rt_instr *in, int v, const var_def *d)
{
    char shape[64];
    if (d->ndim == 2) snprintf(shape, sizeof shape, "%dx%d", d->rows, d->cols);
    else if (d->ndim == 1) snprintf(shape, sizeof shape, "%d", d->rows);
    else snprintf(shape, sizeof shape, "scalar");
    evt_record e = rt_instr_record(in, EVT_VAR_DEFINE);
    e.var = rt_instr_var(in, v);
    e.str = rt_instr_str(in, shape);
    e.bytes = (int64_t)d->bytes;
    rt_instr_emit(in, &e);
}
