/* cpu.h — the simulator's hosts as processors shared by their busy tasks (processor
 * sharing, exact): a host of c cores running k busy tasks gives each min(1, c/k) of its
 * speed, re-scaled the moment a task starts or stops, so every busy task's remaining work
 * shrinks at the host's current rate (a task is one thread: it never runs faster than
 * alone). Per host a virtual clock V, the work each busy task has done since time 0 (ns
 * of solo work), and a heap of finishing marks (V at the start + the task's work): tasks
 * finish in mark order, the earliest when V reaches its mark. A start, stop or finish
 * costs O(log k); the clocks move only when asked (lazily), as the network's do.
 * Times are integer ns, work double ns (exact while V stays below 2^53 ns, 104 days: with
 * no contention every finish is the start plus the work, to the ns). Single-threaded. */
#ifndef SIM_CPU_H
#define SIM_CPU_H

#include <stdint.h>

typedef struct sim_cpu sim_cpu;

/* n_hosts hosts of `cores` (>= 1) cores each, for tasks 0 .. n_tasks - 1, all idle.
 * Free with sim_cpu_free (NULL: no-op). */
sim_cpu *sim_cpu_new(int n_hosts, int cores, int n_tasks);
void sim_cpu_free(sim_cpu *c);

/* Task `id` (not busy) starts work_ns (>= 0) of work, what it takes alone, on host h at
 * now (never earlier than the host's last call). */
void sim_cpu_start(sim_cpu *c, int h, int id, double work_ns, int64_t now);
/* Busy task `id` has work_ns (>= 0) more to do, from now. */
void sim_cpu_add(sim_cpu *c, int id, double work_ns, int64_t now);
/* Whether task `id` is busy. */
int sim_cpu_is_busy(const sim_cpu *c, int id);
/* Task `id` stops at now, its remaining work dropped (it died); no-op when not busy.
 * Returns its host, or -1. */
int sim_cpu_cancel(sim_cpu *c, int id, int64_t now);
/* When host h's next task finishes: ns, rounded up (to within 1e-3 ns); INT64_MAX when
 * the host is idle. */
int64_t sim_cpu_next(const sim_cpu *c, int h);
/* At now = sim_cpu_next(c, h): removes the task that finishes then and every other one
 * done by then, writes them into ids (room for n_tasks) in finishing order, ties in the
 * order they started, and returns how many. */
int sim_cpu_pop(sim_cpu *c, int h, int64_t now, int *ids);
/* Busy tasks on host h. */
int sim_cpu_busy(const sim_cpu *c, int h);

#endif
