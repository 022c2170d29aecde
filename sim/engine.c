/* engine.c — the 4-ary min-heap behind the simulator's event queue. A 4-ary heap halves
 * the depth of a binary one and keeps a node's children in one cache line, which is what
 * matters with millions of pending events. Order: (t, seq); seq makes it a stable FIFO
 * for simultaneous events. The FIFO beside it holds events pushed at nondecreasing times
 * (sim_heap_push_fifo); a pop takes the earlier of the FIFO's head and the heap's top. */
#include "sim/engine.h"

#include <stdlib.h>

#include "common/dp.h"

void sim_heap_init(sim_heap *h)
{
    h->ev = NULL;
    h->n = h->cap = 0;
    h->next_seq = 0;
    h->fifo = NULL;
    h->f_head = h->f_n = h->f_cap = 0;
}

void sim_heap_release(sim_heap *h)
{
    free(h->ev);
    free(h->fifo);
    sim_heap_init(h);
}

static int before(const sim_event *x, const sim_event *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

void sim_heap_push(sim_heap *h, int64_t t, int type, int a, int64_t b)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->ev = xrealloc(h->ev, h->cap * sizeof *h->ev);
    }
    sim_event e = {t, h->next_seq++, type, a, b};
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 4;
        if (!before(&e, &h->ev[p])) break;
        h->ev[i] = h->ev[p];
        i = p;
    }
    h->ev[i] = e;
}

void sim_heap_push_fifo(sim_heap *h, int64_t t, int type, int a, int64_t b)
{
    if (h->f_n && h->fifo[(h->f_head + h->f_n - 1) % h->f_cap].t > t) {
        sim_heap_push(h, t, type, a, b);
        return;
    }
    if (h->f_n == h->f_cap) {
        size_t cap = h->f_cap ? h->f_cap * 2 : 1024;
        sim_event *f = xmalloc(cap * sizeof *f);
        for (size_t i = 0; i < h->f_n; i++) f[i] = h->fifo[(h->f_head + i) % h->f_cap];
        free(h->fifo);
        h->fifo = f;
        h->f_cap = cap;
        h->f_head = 0;
    }
    h->fifo[(h->f_head + h->f_n++) % h->f_cap] = (sim_event){t, h->next_seq++, type, a, b};
}

int sim_heap_pop(sim_heap *h, sim_event *out)
{
    if (h->f_n && (!h->n || before(&h->fifo[h->f_head], &h->ev[0]))) {
        *out = h->fifo[h->f_head];
        h->f_head = h->f_head + 1 == h->f_cap ? 0 : h->f_head + 1;
        h->f_n--;
        return 1;
    }
    if (!h->n) return 0;
    *out = h->ev[0];
    sim_event last = h->ev[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n) break;
        size_t best = c, end = c + 4 < n ? c + 4 : n;
        for (size_t k = c + 1; k < end; k++)
            if (before(&h->ev[k], &h->ev[best])) best = k;
        if (!before(&h->ev[best], &last)) break;
        h->ev[i] = h->ev[best];
        i = best;
    }
    if (n) h->ev[i] = last;
    return 1;
}

int64_t sim_heap_top_time(const sim_heap *h)
{
    int64_t t = h->n ? h->ev[0].t : INT64_MAX;
    if (h->f_n && h->fifo[h->f_head].t < t) t = h->fifo[h->f_head].t;
    return t;
}
