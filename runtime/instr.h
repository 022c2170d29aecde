/* instr.h — a task's instrumentation: a thin layer over the events/ emitter that knows
 * the task's identity, interns the names it uses once, and builds event records from
 * real code paths of the ps, the worker and the launcher. Every call is a no-op when
 * the run has no hub (rt_instr is NULL), and none ever blocks: the emitter drops and
 * counts when its buffer is full. Thread rules: those of evt_emit (any thread). */
#ifndef RUNTIME_INSTR_H
#define RUNTIME_INSTR_H

#include <stdint.h>

#include "cluster/vars.h"
#include "events/event.h"
#include "hub/stream.h"

typedef struct rt_instr rt_instr;

/* Connects (in the background) to hub_addr as (job, task); NULL when hub_addr is
 * empty or NULL. Logs and returns NULL on a bad address. Free with rt_instr_free(),
 * which flushes for at most ~1 s. cat (borrowed for the life of the instr) names the
 * variables; may be NULL for the launcher. */
rt_instr *rt_instr_new(const char *hub_addr, int job, int task, const var_catalog *cat);
void rt_instr_free(rt_instr *in);

/* This task's clock in ns (the emitter's), 0 when in is NULL. */
int64_t rt_instr_now(const rt_instr *in);

/* A record of `kind` from this task, time now, peer -1. Fill in fields and emit. */
evt_record rt_instr_record(const rt_instr *in, evt_kind kind);
void rt_instr_emit(rt_instr *in, const evt_record *e);

/* Interned string ids (0 when in is NULL). */
uint32_t rt_instr_str(rt_instr *in, const char *s);
uint32_t rt_instr_var(const rt_instr *in, int var_index);
/* Emits VAR_DEFINE for catalogue variable v (d): its shape ("784x128", "128",
 * "scalar") and bytes. */
void rt_instr_define_var(rt_instr *in, int v, const var_def *d);
/* "/job:ps/replica:0/task:1/device:CPU:0" of a task's CPU device. */
uint32_t rt_instr_cpu(rt_instr *in, int job, int task);

/* Emits a checkpoint's event (CHECKPOINT_WRITE, CHECKPOINT_RESTORE): its file and global
 * step. Nothing without instrumentation (in NULL). */
void rt_instr_checkpoint(rt_instr *in, evt_kind kind, const char *path, int64_t step);

/* Emits a LOG event with printf-style text (level DP_LOG_INFO). */
void rt_instr_log(rt_instr *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Events sent / dropped so far by this task's emitter. */
uint64_t rt_instr_sent(const rt_instr *in);
uint64_t rt_instr_dropped(const rt_instr *in);

/* Message id shared by a worker's pull/push of variable var at local step step and
 * the ps events about it (flows in the Chrome export join on it); never 0. */
uint64_t rt_instr_msg_id(int64_t step, int var);

#endif
