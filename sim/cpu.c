/* cpu.c — processor-sharing hosts (see cpu.h): per host a virtual work clock and a
 * binary min-heap of busy tasks keyed by (finishing mark, start sequence); each task
 * knows its heap slot, so a stop removes it in O(log k). */
#include "sim/cpu.h"

#include <math.h>
#include <stdlib.h>

#include "common/dp.h"

typedef struct cpu_task {
    double mark;      /* the host's V at which it finishes */
    uint64_t seq;     /* start order: ties finish in it */
    int host;
    int pos;          /* slot in its host's heap, -1 when not busy */
} cpu_task;

typedef struct cpu_host {
    double v;         /* ns of solo work each busy task has done since time 0 */
    int64_t t;        /* when v was last brought up to date */
    int *heap;        /* task ids */
    int n, cap;
} cpu_host;

struct sim_cpu {
    int n_hosts, cores, n_tasks;
    cpu_host *hosts;
    cpu_task *tasks;
    uint64_t seq;
};

sim_cpu *sim_cpu_new(int n_hosts, int cores, int n_tasks)
{
    dp_assert("sim_cpu: a host has at least one core", cores >= 1);
    sim_cpu *c = xcalloc(1, sizeof *c);
    c->n_hosts = n_hosts;
    c->cores = cores;
    c->n_tasks = n_tasks;
    c->hosts = xcalloc((size_t)(n_hosts > 0 ? n_hosts : 1), sizeof *c->hosts);
    c->tasks = xcalloc((size_t)(n_tasks > 0 ? n_tasks : 1), sizeof *c->tasks);
    for (int i = 0; i < n_tasks; i++) c->tasks[i].pos = -1;
    return c;
}

void sim_cpu_free(sim_cpu *c)
{
    if (!c) return;
    for (int h = 0; h < c->n_hosts; h++) free(c->hosts[h].heap);
    free(c->hosts);
    free(c->tasks);
    free(c);
}

/* Each busy task's share of a core: all of one while there are cores enough. */
static double rate(const sim_cpu *c, const cpu_host *h)
{
    return h->n <= c->cores ? 1.0 : (double)c->cores / (double)h->n;
}

/* Brings host h's clock to now at the rate of its busy tasks so far. */
static void advance(const sim_cpu *c, cpu_host *h, int64_t now)
{
    dp_assert("sim_cpu: time runs forward", now >= h->t);
    if (h->n) h->v += (double)(now - h->t) * rate(c, h);
    h->t = now;
}

static int less(const sim_cpu *c, int a, int b)
{
    const cpu_task *x = &c->tasks[a], *y = &c->tasks[b];
    return x->mark < y->mark || (x->mark == y->mark && x->seq < y->seq);
}

static void place(sim_cpu *c, cpu_host *h, int i, int id)
{
    h->heap[i] = id;
    c->tasks[id].pos = i;
}

static void sift_up(sim_cpu *c, cpu_host *h, int i)
{
    int id = h->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!less(c, id, h->heap[p])) break;
        place(c, h, i, h->heap[p]);
        i = p;
    }
    place(c, h, i, id);
}

static void sift_down(sim_cpu *c, cpu_host *h, int i)
{
    int id = h->heap[i];
    for (;;) {
        int l = 2 * i + 1, best = i;
        if (l >= h->n) break;
        best = l + 1 < h->n && less(c, h->heap[l + 1], h->heap[l]) ? l + 1 : l;
        if (!less(c, h->heap[best], id)) break;
        place(c, h, i, h->heap[best]);
        i = best;
    }
    place(c, h, i, id);
}

/* Takes the task in slot i out of its host's heap. */
static void remove_at(sim_cpu *c, cpu_host *h, int i)
{
    int id = h->heap[i];
    c->tasks[id].pos = -1;
    int last = h->heap[--h->n];
    if (i == h->n) return;
    place(c, h, i, last);
    if (i > 0 && less(c, last, h->heap[(i - 1) / 2])) sift_up(c, h, i);
    else sift_down(c, h, i);
}

void sim_cpu_start(sim_cpu *c, int h, int id, double work_ns, int64_t now)
{
    dp_assert("sim_cpu: host out of range", h >= 0 && h < c->n_hosts);
    dp_assert("sim_cpu: task out of range or already busy", id >= 0 && id < c->n_tasks && c->tasks[id].pos < 0);
    cpu_host *ho = &c->hosts[h];
    advance(c, ho, now);
    cpu_task *t = &c->tasks[id];
    t->mark = ho->v + (work_ns > 0 ? work_ns : 0);
    t->seq = c->seq++;
    t->host = h;
    if (ho->n == ho->cap) {
        ho->cap = ho->cap ? 2 * ho->cap : 8;
        ho->heap = xrealloc(ho->heap, (size_t)ho->cap * sizeof *ho->heap);
    }
    ho->n++;
    place(c, ho, ho->n - 1, id);
    sift_up(c, ho, ho->n - 1);
}

void sim_cpu_add(sim_cpu *c, int id, double work_ns, int64_t now)
{
    dp_assert("sim_cpu: adding work to a task that is not busy", id >= 0 && id < c->n_tasks && c->tasks[id].pos >= 0);
    cpu_host *ho = &c->hosts[c->tasks[id].host];
    advance(c, ho, now);
    c->tasks[id].mark += work_ns > 0 ? work_ns : 0;
    sift_down(c, ho, c->tasks[id].pos);
}

int sim_cpu_is_busy(const sim_cpu *c, int id)
{
    return id >= 0 && id < c->n_tasks && c->tasks[id].pos >= 0;
}

int sim_cpu_cancel(sim_cpu *c, int id, int64_t now)
{
    if (id < 0 || id >= c->n_tasks || c->tasks[id].pos < 0) return -1;
    int h = c->tasks[id].host;
    cpu_host *ho = &c->hosts[h];
    advance(c, ho, now);
    remove_at(c, ho, c->tasks[id].pos);
    return h;
}

int64_t sim_cpu_next(const sim_cpu *c, int h)
{
    const cpu_host *ho = &c->hosts[h];
    if (!ho->n) return INT64_MAX;
    double rem = (c->tasks[ho->heap[0]].mark - ho->v) / rate(c, ho);
    /* rounded up to the ns, but not for the rounding errors of the clock (1e-3 ns) */
    return rem <= 1e-3 ? ho->t : ho->t + (int64_t)ceil(rem - 1e-3);
}

int sim_cpu_pop(sim_cpu *c, int h, int64_t now, int *ids)
{
    cpu_host *ho = &c->hosts[h];
    if (!ho->n) return 0;
    advance(c, ho, now);
    int n = 0;
    /* the task this instant was computed for is done, whatever the clock's last bits say */
    double mark = c->tasks[ho->heap[0]].mark;
    if (ho->v < mark) ho->v = mark;
    do {
        ids[n++] = ho->heap[0];
        remove_at(c, ho, 0);
    } while (ho->n && sim_cpu_next(c, h) <= now);
    return n;
}

int sim_cpu_busy(const sim_cpu *c, int h)
{
    return c->hosts[h].n;
}
