/* engine.h — the simulator's discrete-event core: a 4-ary min-heap of pending events
 * ordered by (time, sequence number), so that events at the same virtual time run in the
 * order they were scheduled (deterministic). Times are integer nanoseconds. The heap holds
 * millions of events in one flat array (32 bytes each). Single-threaded. */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_event {
    int64_t t;       /* ns of virtual time */
    uint64_t seq;    /* tie-break: scheduling order */
    int32_t type;    /* caller's event type */
    int32_t a;       /* caller's arguments */
    int64_t b;
} sim_event;

typedef struct sim_heap {
    sim_event *ev;   /* owned */
    size_t n, cap;
    uint64_t next_seq;
    sim_event *fifo; /* owned ring: events pushed with sim_heap_push_fifo */
    size_t f_head, f_n, f_cap;
} sim_heap;

/* Embedded by the caller: sim_heap_init / sim_heap_release. */
void sim_heap_init(sim_heap *h);
void sim_heap_release(sim_heap *h);
/* Adds an event at time t. */
void sim_heap_push(sim_heap *h, int64_t t, int type, int a, int64_t b);
/* Adds an event at time t like sim_heap_push (same order, same sequence numbering), in
 * O(1) when t is no earlier than the previous sim_heap_push_fifo's time; otherwise it
 * goes to the heap. */
void sim_heap_push_fifo(sim_heap *h, int64_t t, int type, int a, int64_t b);
/* Removes the earliest event into *out; returns 0 when empty, else 1. */
int sim_heap_pop(sim_heap *h, sim_event *out);
/* Time of the earliest event, or INT64_MAX when empty. */
int64_t sim_heap_top_time(const sim_heap *h);

#endif
