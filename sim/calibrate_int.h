/* calibrate_int.h — what calibrate.c (the compute and network fit) and calibrate_ps.c
 * (the ps's own work) share: a task's span of work on its host, the cores' model read
 * backwards over such spans, and the ps's answers collected from a trace. Not part of the
 * public API. Single-threaded. */
#ifndef SIM_CALIBRATE_INT_H
#define SIM_CALIBRATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

/* A task's span of work: a worker's compute gap (job JOB_WORKER) or a ps's busy span
 * (JOB_PS), in trace ns. */
typedef struct sim_cal_span {
    int64_t t0, t1;
    int job, task;
} sim_cal_span;

/* Processor sharing read backwards (cpu.h's model): span i, on a host of cal->cores cores
 * where n(t) spans were open at t, did the work of the integral of min(1, cores / n(t))
 * over it alone; work[i] gets it in seconds. One sweep over the spans' ends. */
void sim_cal_derate(const sim_cal_span *s, int n, const sim_calibration *cal, double *work);

/* The median of v[0..n) (n >= 1; v is sorted in place). */
double sim_cal_median(double *v, size_t n);

typedef struct sim_cal_ps sim_cal_ps;

/* An empty collection of ps answers. Free with sim_cal_ps_free (NULL: no-op). */
sim_cal_ps *sim_cal_ps_new(void);
void sim_cal_ps_free(sim_cal_ps *c);
/* A ps's answer as its worker saw it: to a pull (push 0) or a push (push 1) of `bytes`
 * sent at t_req, received (pull_end, push_end) at t_end (trace ns). */
void sim_cal_ps_add(sim_cal_ps *c, int push, int ps, int worker, int64_t t_req, int64_t t_end, double bytes);

/* A ps's APPLY of worker's gradient of var (trace string id) in message id at t, and the
 * worker's push_end with status APPLIED for that message: the ack's one-way trip. */
void sim_cal_ps_apply(sim_cal_ps *c, int worker, uint32_t var, uint64_t id, int64_t t);
void sim_cal_ps_ack(sim_cal_ps *c, int worker, uint32_t var, uint64_t id, int64_t t);

/* Ps `ps`'s CPU over its serving (its task_stop's value2, s); for cal->ps_send_rate. */
void sim_cal_ps_cpu(sim_cal_ps *c, int ps, double cpu_s);

/* Fits cal->ps_pull_cost, ps_push_cost, ps_samples, ps_send_rate (when every ps said its
 * CPU: sim_cal_ps_cpu) and the network that goes with them
 * (ps_latency, ps_bandwidth, ps_push_bandwidth), after the network fit with the ps's work
 * folded in (cal->latency, bandwidth, push_bandwidth); see calibrate.c's header. With
 * the cores (cal->cores, cal->hosts), the costs are the work alone: the ps's busy spans
 * are de-rated together with the n_gaps compute gaps, whose work alone, counting the
 * ps's spans, goes to gap_work (s; NULL when there are no cores to share). */
void sim_cal_ps_fit(sim_cal_ps *c, const sim_cal_span *gaps, int n_gaps, double *gap_work, sim_calibration *cal);

#endif
