/* hub_merge.c — the hub's merge: a min-heap on (aligned time, arrival) holds events for
 * the reorder window, then emits them in time order to the trace (string ids remapped
 * to the trace's table), to the state kept for late subscribers (cluster, task, device,
 * variable and placement events, plus the latest global step) and to every subscriber.
 * Each subscriber's queue is bounded: a frame that does not fit is dropped and counted
 * for that subscriber alone, and its string definitions are sent lazily (before the
 * first frame that may use them) so a stalled subscriber costs bounded memory.
 * Runs on the hub's loop thread only. */
#include "hub/hub_internal.h"

#include <stdlib.h>
#include <string.h>

/* Beyond this many held events the oldest go out at once, whatever the window. */
#define HUB_HEAP_MAX (1u << 20)

uint32_t hub_intern(evt_hub *h, const char *s)
{
    uint32_t id = evt_strtab_intern(h->strings, s);
    while (h->ntrace_ids < id) {
        if (h->ntrace_ids + 1 >= h->trace_ids_cap) {
            h->trace_ids_cap = h->trace_ids_cap ? h->trace_ids_cap * 2 : 256;
            h->trace_ids = xrealloc(h->trace_ids, h->trace_ids_cap * sizeof *h->trace_ids);
        }
        uint32_t gid = ++h->ntrace_ids;
        h->trace_ids[gid] = h->trace ? trace_writer_intern(h->trace, evt_strtab_get(h->strings, gid))
                                     : gid;
    }
    return id;
}

static int item_less(const hub_item *a, const hub_item *b)
{
    return a->e.t < b->e.t || (a->e.t == b->e.t && a->seq < b->seq);
}

static void heap_pop(evt_hub *h, hub_item *top)
{
    *top = h->heap[0];
    hub_item last = h->heap[--h->nheap];
    size_t i = 0, n = h->nheap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l >= n) break;
        m = (l + 1 < n && item_less(&h->heap[l + 1], &h->heap[l])) ? l + 1 : l;
        if (!item_less(&h->heap[m], &last)) break;
        h->heap[i] = h->heap[m];
        i = m;
    }
    if (n) h->heap[i] = last;
}

static int is_state_kind(int kind)
{
    switch (kind) {
    case EVT_CLUSTER_START: case EVT_CLUSTER_STOP: case EVT_TASK_START: case EVT_TASK_STOP:
    case EVT_DEVICE: case EVT_VAR_DEFINE: case EVT_VAR_PLACE: case EVT_OP_PLACE:
        return 1;
    default:
        return 0;
    }
}

void hub_merge_fan_out(evt_hub *h)
{
    if (!h->nout) return;
    h->frame.off = h->frame.len = 0;
    evt_wire_put_events(&h->frame, h->out, h->nout);
    size_t flen = h->frame.len;
    uint32_t nstr = evt_strtab_count(h->strings);
    /* Each subscriber's queue: its own bound, or its share of all subscribers' together
     * when there are many, so that stalled ones cost a bounded total however many. */
    size_t cap = h->opt.sub_queue_bytes, share = h->opt.subs_total_bytes / (h->st.subs_now ? h->st.subs_now : 1);
    if (share < cap) cap = share;
    int64_t now = hub_now(h);
    for (hub_conn *c = h->conns, *next; c; c = next) {
        next = c->next;   /* c may close (and be unlinked) while flushing */
        if (c->role != HC_SUB || c->dead) continue;
        if (net_conn_pending(c->conn) + flen > cap) {
            c->dropped += h->nout;
            h->st.sub_dropped += h->nout;
            if (!c->stalled_since) c->stalled_since = now;
            if (now - c->stalled_since > (int64_t)h->opt.sub_stall_s * 1000000000ll) {
                h->st.subs_cut++;
                char why[96];
                snprintf(why, sizeof why, "its queue stayed full for %d s (too slow a viewer)", h->opt.sub_stall_s);
                hub_conn_close(h, c, why, 0);
            }
            continue;
        }
        c->stalled_since = 0;
        if (c->dropped > c->dropped_sent) {
            uint8_t p[8];
            dp_put_u64(p, c->dropped);
            evt_wire_put(hub_out(c), EVT_F_DROPPED, p, sizeof p);
        }
        if (nstr > c->defs_sent) {
            evt_wire_put_strings(hub_out(c), h->strings, c->defs_sent + 1, nstr);
        }
        dp_buf_append(hub_out(c), h->frame.data, flen);
        if (hub_conn_flush(h, c) == DP_EFULL) {
            /* Over the connection's own bound (net_conn_set_out_cap): nothing of it
             * was queued; counted like any other drop, strings sent again next time. */
            c->dropped += h->nout;
            h->st.sub_dropped += h->nout;
            continue;
        }
        c->dropped_sent = c->dropped;
        c->defs_sent = nstr;
    }
    h->nout = 0;
}

static void out_one(evt_hub *h, const evt_record *e)
{
    if (e->t < h->last_out_t) h->st.events_late++;
    else h->last_out_t = e->t;
    if (is_state_kind(e->kind)) {
        if (h->nstate == h->state_cap) {
            h->state_cap = h->state_cap ? h->state_cap * 2 : 256;
            h->state = xrealloc(h->state, h->state_cap * sizeof *h->state);
        }
        h->state[h->nstate++] = *e;
    } else if (e->kind == EVT_GLOBAL_STEP) {
        h->gstep = *e;
        h->have_gstep = 1;
    }
    if (h->trace && !h->trace_failed) {
        evt_record r = *e;
        if (r.device) r.device = h->trace_ids[r.device];
        if (r.var) r.var = h->trace_ids[r.var];
        if (r.str) r.str = h->trace_ids[r.str];
        if (trace_writer_add(h->trace, &r) < 0) {
            h->trace_failed = 1;
            dp_log(DP_LOG_ERROR, "hub", "writing the trace failed; recording stops, "
                   "streaming goes on");
        }
    }
    h->out[h->nout++] = *e;
    h->st.events_out++;
    if (h->nout == EVT_WIRE_MAX_BATCH) hub_merge_fan_out(h);
}

void hub_merge_push(evt_hub *h, const evt_record *e)
{
    if (h->nheap == HUB_HEAP_MAX) {
        hub_item top;
        heap_pop(h, &top);
        out_one(h, &top.e);
    }
    if (h->nheap == h->heap_cap) {
        h->heap_cap = h->heap_cap ? h->heap_cap * 2 : 1024;
        h->heap = xrealloc(h->heap, h->heap_cap * sizeof *h->heap);
    }
    hub_item it = { *e, h->seq++ };
    size_t i = h->nheap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!item_less(&it, &h->heap[parent])) break;
        h->heap[i] = h->heap[parent];
        i = parent;
    }
    h->heap[i] = it;
}

void hub_merge_emit(evt_hub *h, int64_t cutoff)
{
    while (h->nheap && h->heap[0].e.t <= cutoff) {
        hub_item top;
        heap_pop(h, &top);
        out_one(h, &top.e);
    }
    hub_merge_fan_out(h);
}

void hub_merge_send_state(evt_hub *h, hub_conn *c)
{
    uint8_t p[8];
    dp_put_u64(p, (uint64_t)h->t0);
    dp_buf *out = hub_out(c);
    evt_wire_put(out, EVT_F_WELCOME, p, sizeof p);
    uint32_t nstr = evt_strtab_count(h->strings);
    if (nstr) evt_wire_put_strings(out, h->strings, 1, nstr);
    c->defs_sent = nstr;
    /* State is never dropped: a subscriber that cannot draw is useless. */
    for (size_t i = 0; i < h->nstate; i += EVT_WIRE_MAX_BATCH) {
        size_t n = h->nstate - i < EVT_WIRE_MAX_BATCH ? h->nstate - i : EVT_WIRE_MAX_BATCH;
        evt_wire_put_events(out, h->state + i, n);
    }
    if (h->have_gstep) evt_wire_put_events(out, &h->gstep, 1);
    evt_wire_put(out, EVT_F_STATE_END, NULL, 0);
    hub_conn_flush(h, c);
    /* The snapshot is never dropped; what follows is bounded (hub_merge_fan_out drops
     * first, at its share of the subscribers' total). */
    if (c->conn) net_conn_set_out_cap(c->conn, net_conn_pending(c->conn) + h->opt.sub_queue_bytes);
}

void hub_merge_release(evt_hub *h)
{
    free(h->heap);
    free(h->state);
    free(h->trace_ids);
    dp_buf_release(&h->frame);
    h->heap = NULL;
    h->state = NULL;
    h->trace_ids = NULL;
}
