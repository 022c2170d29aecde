/* hub_frame.c — what a connection says to the hub before and while it streams (see
 * hub_internal.h; net/conn.c has run the handshake and checked each header against the
 * protocol's table): the first frame's role switch (task or subscriber), clock probes and the offset estimate
 * (NTP-style: of several round trips the one with the smallest RTT wins, offset = task_ns
 * - (hub_send + rtt/2)), string remapping into the global table, a task's RESUME and its
 * EVENTS (sequence counts for the acknowledgements), and frame validation: a bad frame
 * closes only its connection, with a logged reason. */
#include "hub/hub_internal.h"

#include <stdio.h>
#include <string.h>

#define HUB_SEQ_MAX (1ull << 62)      /* bounds on a task's RESUME */
#define HUB_COPIES_MAX (1u << 20)
#define HUB_CLOCK_MAX (1ll << 61)     /* |task clock| in a PROBE_REPLY or record, ns (73 years):
                                       * aligning a time then cannot overflow */

static void hub_send_probe(evt_hub *h, hub_conn *c)
{
    uint8_t p[16];
    c->probe_seq++;
    dp_put_u64(p, c->probe_seq);
    dp_put_u64(p + 8, (uint64_t)dp_now_ns());
    evt_wire_put(hub_out(c), EVT_F_PROBE, p, sizeof p);
    hub_conn_flush(h, c);
}

hub_offset *hub_offset_slot(evt_hub *h, int job, int task)
{
    for (size_t i = 0; i < h->noffsets; i++)
        if (h->offsets[i].job == job && h->offsets[i].task == task) return &h->offsets[i];
    if (h->noffsets == h->offsets_cap) {
        h->offsets_cap = h->offsets_cap ? h->offsets_cap * 2 : 16;
        h->offsets = xrealloc(h->offsets, h->offsets_cap * sizeof *h->offsets);
    }
    hub_offset *o = &h->offsets[h->noffsets++];
    memset(o, 0, sizeof *o);
    o->job = job;
    o->task = task;
    return o;
}

static void hub_task_synced(evt_hub *h, hub_conn *c)
{
    uint8_t p[16];
    dp_put_u64(p, (uint64_t)c->offset);
    dp_put_u64(p + 8, (uint64_t)c->best_rtt);
    evt_wire_put(hub_out(c), EVT_F_READY, p, sizeof p);
    c->synced = 1;
    hub_conn_flush(h, c);
    pthread_mutex_lock(&h->mu);
    hub_offset *o = hub_offset_slot(h, c->job, c->task);
    o->offset = c->offset;
    o->rtt = c->best_rtt;
    o->synced = 1;
    pthread_mutex_unlock(&h->mu);
    evt_record r;
    evt_init(&r, EVT_CLOCK_SYNC, c->job, c->task);
    r.t = hub_now(h);
    r.value = (double)c->offset;
    r.value2 = (double)c->best_rtt;
    hub_merge_push(h, &r);
    dp_log(h->opt.quiet ? DP_LOG_DEBUG : DP_LOG_INFO, "hub", "%s %s connected: clock offset %+.3f ms (rtt %.1f us)", c->name,
           c->peer, (double)c->offset / 1e6, (double)c->best_rtt / 1e3);
}

static int hub_define_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    hub_conn *c = ctx;
    DP_UNUSED(len);
    if (id != c->map_len + 1) return DP_EPROTO;
    if (c->map_len == c->map_cap) {
        c->map_cap = c->map_cap ? c->map_cap * 2 : 64;
        c->map = xrealloc(c->map, c->map_cap * sizeof *c->map);
    }
    c->map[c->map_len++] = hub_intern(c->hub, s);
    return 0;
}

static int hub_remap(const hub_conn *c, uint32_t *id)
{
    if (*id == 0) return 0;
    if (*id > c->map_len) return -1;
    *id = c->map[*id - 1];
    return 0;
}

/* Handles one frame; returns 0, or a negative code with why filled (caller closes). */
/* Notes that the task's records 1..seq have all arrived once the events pushed so far
 * are out. The list is bounded: when full the newest mark replaces the last one, which
 * only delays an acknowledgement. */
static void hub_mark(evt_hub *h, hub_conn *c, uint64_t seq)
{
    hub_ackmark m = { h->seq, seq };
    if (c->nmarks == HUB_MARKS_MAX) c->marks[HUB_MARKS_MAX - 1] = m;
    else c->marks[c->nmarks++] = m;
}

/* RESUME {u64 acked, u32 copies, u64 incarnation}: once, after READY, before any event. */
static int hub_resume(evt_hub *h, hub_conn *c, const uint8_t *p, char *why)
{
    if (!c->synced) return dp_fail(why, DP_EPROTO, "resume before clock sync");
    if (c->resumed) return dp_fail(why, DP_EPROTO, "resume after events or twice");
    uint64_t acked = dp_get_u64(p);
    uint32_t copies = dp_get_u32(p + 8);
    uint64_t incarnation = dp_get_u64(p + 12);
    if (acked > HUB_SEQ_MAX || copies > HUB_COPIES_MAX)
        return dp_fail(why, DP_EPROTO, "resume: acked %llu / copies %u out of range",
                       (unsigned long long)acked, copies);
    c->resumed = 1;
    c->seq_recv = c->seq_acked = acked;
    c->copies_left = copies;
    pthread_mutex_lock(&h->mu);
    hub_offset *o = hub_offset_slot(h, c->job, c->task);
    /* A new process of the task (restarted by its launcher) starts its own sequence:
     * nothing it sends was seen before. */
    if (!o->sequenced || o->incarnation != incarnation) {
        o->sequenced = 1;
        o->incarnation = incarnation;
        o->first = o->received = o->recorded = acked;
        o->defs_through = 0;
    }
    /* This hub already holds the task's records up to o->received (an earlier
     * connection brought them): what is re-sent below that is not recorded again, nor
     * are definition copies when this hub has every definition they repeat. */
    c->seq_seen = o->received;
    c->copies_known = o->defs_through >= acked;
    if (!c->copies_known) o->defs_through = acked;
    pthread_mutex_unlock(&h->mu);
    if (c->seq_seen > acked) hub_mark(h, c, c->seq_seen);
    return 0;
}

int hub_handle_frame(evt_hub *h, hub_conn *c, const net_frame *fh,
                            const uint8_t *p, char *why)
{
    if (c->role == HC_NEW) {
        if (fh->type == EVT_F_HELLO_TASK) {
            uint32_t job = dp_get_u32(p);
            int32_t task = (int32_t)dp_get_u32(p + 4);
            if (job > EVT_JOB_HUB || task < 0)
                return dp_fail(why, DP_EPROTO, "hello_task: bad job %u / task %d", job, task);
            if (net_conn_alt_auth(c->conn)) {
                dp_log(DP_LOG_WARN, "hub", "authentication failed from %s: a task's hello with the viewer token",
                       c->peer);
                return dp_fail(why, DP_EPROTO, "the viewer token may only subscribe");
            }
            net_conn_hello_done(c->conn);
            c->role = HC_TASK;
            c->job = (int)job;
            c->task = task;
            static const char *jobs[] = { "ps", "worker", "client", "hub" };
            snprintf(c->name, sizeof c->name, "task %s:%d", jobs[job], task);
            h->st.tasks_now++;
            h->st.tasks_total++;
            h->had_tasks = 1;
            c->best_rtt = INT64_MAX;
            hub_send_probe(h, c);
            return 0;
        }
        if (fh->type == EVT_F_HELLO_SUB) {
            /* Whatever merged output is still pending predates this subscriber's
             * state snapshot: send it to the others first so nothing is doubled. */
            if (h->st.subs_now >= (uint64_t)h->opt.max_subscribers) {
                h->st.subs_refused++;
                return dp_fail(why, DP_EINVAL, "this hub serves at most %d viewers at once", h->opt.max_subscribers);
            }
            hub_merge_fan_out(h);
            net_conn_hello_done(c->conn);
            c->role = HC_SUB;
            snprintf(c->name, sizeof c->name, "subscriber");
            h->st.subs_now++;
            h->st.subs_total++;
            if (h->opt.sub_sndbuf > 0)
                setsockopt(net_conn_fd(c->conn), SOL_SOCKET, SO_SNDBUF, &h->opt.sub_sndbuf,
                           sizeof h->opt.sub_sndbuf);
            dp_log(h->opt.quiet ? DP_LOG_DEBUG : DP_LOG_INFO, "hub", "subscriber %s attached", c->peer);
            hub_merge_send_state(h, c);
            return 0;
        }
        return dp_fail(why, DP_EPROTO, "first frame is %s, not a hello",
                       evt_wire_type_name(fh->type));
    }
    if (c->role == HC_SUB)
        return dp_fail(why, DP_EPROTO, "unexpected %s frame from a subscriber",
                       evt_wire_type_name(fh->type));

    switch (fh->type) {
    case EVT_F_PROBE_REPLY: {
        int64_t t3 = (int64_t)dp_now_ns();
        uint64_t seq = dp_get_u64(p);
        int64_t t1 = (int64_t)dp_get_u64(p + 8), t2 = (int64_t)dp_get_u64(p + 16);
        /* t1 echoes our clock (>= 0, not ahead of now); the task's t2 must leave an
         * offset that fits (a hostile reply would overflow it and every aligned time). */
        if (c->synced || seq != c->probe_seq || t1 < 0 || t1 > t3)
            return dp_fail(why, DP_EPROTO, "probe_reply %llu does not answer probe %llu",
                           (unsigned long long)seq, (unsigned long long)c->probe_seq);
        int64_t rtt = t3 - t1;
        if (t2 < -HUB_CLOCK_MAX || t2 > HUB_CLOCK_MAX)
            return dp_fail(why, DP_EPROTO, "probe_reply: task clock %lld out of range", (long long)t2);
        if (rtt < c->best_rtt) {
            c->best_rtt = rtt;
            c->offset = t2 - (t1 + rtt / 2);
        }
        if ((int)c->probe_seq < h->opt.probes) hub_send_probe(h, c);
        else hub_task_synced(h, c);
        return 0;
    }
    case EVT_F_STRINGS: {
        int rc = evt_wire_each_string(p, fh->length, hub_define_string, c, why);
        if (rc == DP_EPROTO && !why[0])
            dp_fail(why, DP_EPROTO, "string definitions out of order (have %u)", c->map_len);
        return rc;
    }
    case EVT_F_RESUME:
        return hub_resume(h, c, p, why);
    case EVT_F_EVENTS: {
        if (!c->synced) return dp_fail(why, DP_EPROTO, "events before clock sync");
        c->resumed = 1;   /* a task that sent no RESUME starts at sequence 0 */
        h->nscratch = 0;
        int n = evt_wire_get_events(p, fh->length, &h->scratch, &h->nscratch,
                                    &h->scratch_cap, why);
        if (n < 0) return n;
        for (size_t i = 0; i < h->nscratch; i++) {
            evt_record *e = &h->scratch[i];
            if (hub_remap(c, &e->device) || hub_remap(c, &e->var) || hub_remap(c, &e->str))
                return dp_fail(why, DP_EPROTO, "record %zu uses an undefined string id", i);
            if (e->t < -HUB_CLOCK_MAX || e->t > HUB_CLOCK_MAX)
                return dp_fail(why, DP_EPROTO, "record %zu: time %lld out of range", i, (long long)e->t);
        }
        uint64_t seq0 = c->seq_recv;
        for (size_t i = 0; i < h->nscratch; i++) {
            evt_record *e = &h->scratch[i];
            e->t = e->t - c->offset - h->t0;
            int keep = 1;
            /* Drop reports and definition copies are not in the task's sequence;
             * copies, and records an earlier connection to this hub already brought,
             * are not recorded twice. */
            if (e->kind == EVT_EVENTS_DROPPED) {
                pthread_mutex_lock(&h->mu);
                hub_offset_slot(h, c->job, c->task)->dropped = (uint64_t)e->bytes;
                pthread_mutex_unlock(&h->mu);
            } else if (c->copies_left) {
                c->copies_left--;
                keep = !c->copies_known;
            } else {
                keep = ++c->seq_recv > c->seq_seen;
            }
            if (keep) hub_merge_push(h, e);
        }
        if (c->seq_recv > seq0) hub_mark(h, c, c->seq_recv);
        pthread_mutex_lock(&h->mu);
        hub_offset *o = hub_offset_slot(h, c->job, c->task);
        if (c->seq_recv > o->received) o->received = c->seq_recv;
        if (c->seq_recv > o->defs_through) o->defs_through = c->seq_recv;
        pthread_mutex_unlock(&h->mu);
        h->st.events_in += h->nscratch;
        return 0;
    }
    default:
        return dp_fail(why, DP_EPROTO, "unexpected %s frame from a task",
                       evt_wire_type_name(fh->type));
    }
}
