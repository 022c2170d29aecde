/* hub.c — the hub's loop and connections: accept, reads (framing; what the frames say
 * is hub_frame.c), output queues with write interest on only while non-empty, delivery
 * (cumulative ACKs sent only once the records are out of the reorder window and flushed
 * to the trace), the ticks, and shutdown. The merge (reorder window, recording, state for late
 * subscribers, fan-out with drop-and-count) is in hub_merge.c. Everything here runs on
 * the hub's one thread except the functions hub.h marks as thread-safe. */
#include "hub/hub_internal.h"

#include "net/sock.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HUB_HELLO_S 10.0             /* a connection must say who it is within 10 s */
#define HUB_HELLO_NS 10000000000ll
#define HUB_FRAME_S 30.0              /* a frame stalled this long mid-way closes its connection */
#define HUB_TICK_S 0.010
#define HUB_ACK_NS 100000000ll        /* acknowledge tasks' records this often */
#define HUB_NEW_MAX_BYTES 256         /* a connection that has not said hello: its frames are
                                       * small (hello); more is refused unread */

void evt_hub_options_init(evt_hub_options *o)
{
    memset(o, 0, sizeof *o);
    o->listen = EVT_HUB_DEFAULT_ADDR;
    o->reorder_ms = 50;
    o->probes = 8;
    o->sub_queue_bytes = 8u << 20;
    o->subs_total_bytes = 64u << 20;
    o->max_subscribers = 64;
    o->max_conns = 4096;
    o->sub_stall_s = 30;
}

int64_t hub_now(const evt_hub *h)
{
    return (int64_t)dp_now_ns() - h->t0;
}

/* ---- connections ---------------------------------------------------------------- */

static void conn_free(hub_conn *c)
{
    free(c->map);
    free(c);
}

static void conn_unlink(evt_hub *h, hub_conn *c)
{
    if (c->prev) c->prev->next = c->next;
    else h->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Takes c out of the hub (stats, the live list) and queues it for freeing after the
 * current callback (a connection is never freed inside its own callback). */
static void conn_retire(evt_hub *h, hub_conn *c)
{
    c->dead = 1;
    if (c->role == HC_TASK) h->st.tasks_now--;
    if (c->role == HC_SUB) {
        h->st.subs_now--;
        if (c->dropped)
            dp_log(DP_LOG_INFO, "hub", "%s %s had %llu events dropped (too slow)", c->name,
                   c->peer, (unsigned long long)c->dropped);
    }
    conn_unlink(h, c);
    c->next = h->dead;
    h->dead = c;
}

/* Closes c; bad: the peer broke the protocol and is told why (an ERROR frame, then the
 * close). c stays on the dead list until its net_conn is gone (on_close). */
void hub_conn_close(evt_hub *h, hub_conn *c, const char *why, int bad)
{
    if (c->dead) return;
    if (bad) {
        h->st.bad_conns++;
        dp_log(DP_LOG_WARN, "hub", "dropping %s %s: %s", c->name, c->peer, why);
    } else {
        dp_log(h->opt.quiet ? DP_LOG_DEBUG : DP_LOG_INFO, "hub", "%s %s disconnected%s%s", c->name, c->peer,
               why ? ": " : "", why ? why : "");
    }
    conn_retire(h, c);
    if (!c->conn) return;
    if (bad) net_conn_send_error(c->conn, why);
    else net_conn_close(c->conn, why ? why : "closed by the hub");
}

/* Frees the dead connections whose net_conn is gone; all = close those still sending
 * their last frame first (the hub is going away). */
static void hub_free_dead_all(evt_hub *h, int all)
{
    hub_conn **pp = &h->dead;
    while (*pp) {
        hub_conn *c = *pp;
        if (all && c->conn) net_conn_close(c->conn, "hub stopping");
        if (c->conn) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        conn_free(c);
    }
}

static void hub_free_dead(evt_hub *h) { hub_free_dead_all(h, 0); }

int hub_conn_flush(evt_hub *h, hub_conn *c)
{
    DP_UNUSED(h);
    if (c->dead || !c->conn) return DP_ECLOSED;
    return net_conn_flush(c->conn);
}

static void *conn_on_header(net_conn *nc, const net_frame *f, void *ctx, char *err, int *reject)
{
    DP_UNUSED(nc);
    DP_UNUSED(f);
    DP_UNUSED(err);
    DP_UNUSED(reject);
    DP_UNUSED(ctx);
    return NULL;   /* every payload into the connection's buffer: the protocol bounds it */
}

static void conn_on_frame(net_conn *nc, const net_frame *f, void *payload, void *ctx)
{
    DP_UNUSED(nc);
    hub_conn *c = ctx;
    if (c->dead) return;
    evt_hub *h = c->hub;
    h->st.bytes_in += NET_HEADER + (uint64_t)f->length;
    char why[DP_ERRLEN];
    why[0] = 0;
    int rc = hub_handle_frame(h, c, f, payload, why);
    if (rc < 0) hub_conn_close(h, c, why[0] ? why : "protocol error", 1);
}

/* The peer closed, a frame was bad, the handshake failed or a limit passed (the
 * net_conn said why in the log where it matters); a conn the hub closed is detached. */
static void conn_on_close(net_conn *nc, const char *reason, void *ctx)
{
    hub_conn *c = ctx;
    c->conn = NULL;
    if (c->dead) return;
    evt_hub *h = c->hub;
    int kind = net_conn_close_kind(nc);
    if (kind == NET_CLOSE_PROTO || kind == NET_CLOSE_AUTH || kind == NET_CLOSE_TIMEOUT) {
        h->st.bad_conns++;
        dp_log(DP_LOG_WARN, "hub", "dropping %s %s: %s", c->name, c->peer, reason);
    } else {
        int orderly = !strcmp(reason, "peer closed the connection");
        dp_log(h->opt.quiet ? DP_LOG_DEBUG : DP_LOG_INFO, "hub", "%s %s disconnected%s%s", c->name, c->peer,
               orderly ? "" : ": ", orderly ? "" : reason);
    }
    conn_retire(h, c);
}

static const net_handler hub_handler = {NULL, conn_on_header, conn_on_frame, conn_on_close};

static void accept_cb(net_listener *l, int fd, const char *peer, void *ctx)
{
    evt_hub *h = ctx;
    hub_conn *c = xcalloc(1, sizeof *c);
    c->hub = h;
    c->role = HC_NEW;
    c->born = hub_now(h);
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    snprintf(c->name, sizeof c->name, "connection");
    c->next = h->conns;
    if (h->conns) h->conns->prev = c;
    h->conns = c;
    net_conn_opts o = {.proto = &evt_wire_proto, .role = NET_SERVER, .key = &h->key, .alt_key = &h->viewer_key,
                       .auth_context = AUTH_CTX_HUB, .name = "hub", .what = "hub", .hello_s = HUB_HELLO_S,
                       .frame_s = HUB_FRAME_S,
                       .pre_hello_max = HUB_NEW_MAX_BYTES, .listener = l};
    c->conn = net_conn_new(h->loop, fd, &o, &hub_handler, c, peer);
}

/* ---- loop-level watchers ------------------------------------------------------ */

static void hub_publish(evt_hub *h)
{
    h->st.conns_refused = h->listener ? net_listener_refused(h->listener) : h->st.conns_refused;
    pthread_mutex_lock(&h->mu);
    h->snap = h->st;
    h->snap.task_dropped = 0;
    for (size_t i = 0; i < h->noffsets; i++) h->snap.task_dropped += h->offsets[i].dropped;
    pthread_mutex_unlock(&h->mu);
}

/* Acknowledges to each task the records of its that have left the reorder window,
 * after flushing them to the trace (so an acknowledged record survives the hub being
 * killed). With no trace, leaving the window (fanned out) is enough. */
static void hub_ack(evt_hub *h)
{
    uint64_t min_arrival = h->seq;   /* every held event arrived at or after this */
    for (size_t i = 0; i < h->nheap; i++)
        if (h->heap[i].seq < min_arrival) min_arrival = h->heap[i].seq;
    int any = 0;
    for (hub_conn *c = h->conns; c && !any; c = c->next)
        any = c->role == HC_TASK && c->nmarks && c->marks[0].arrival <= min_arrival;
    if (!any) return;
    if (h->trace && !h->trace_failed) {
        char err[DP_ERRLEN];
        if (trace_writer_flush(h->trace, err) < 0) {
            h->trace_failed = 1;
            dp_log(DP_LOG_ERROR, "hub", "%s; recording stops, streaming goes on", err);
        }
    }
    for (hub_conn *c = h->conns, *next; c; c = next) {
        next = c->next;   /* c may close while flushing */
        if (c->role != HC_TASK || !c->nmarks) continue;
        size_t k = 0;
        uint64_t seq = c->seq_acked;
        while (k < c->nmarks && c->marks[k].arrival <= min_arrival) seq = c->marks[k++].seq;
        memmove(c->marks, c->marks + k, (c->nmarks - k) * sizeof *c->marks);
        c->nmarks -= k;
        if (seq <= c->seq_acked) continue;
        c->seq_acked = seq;
        pthread_mutex_lock(&h->mu);
        hub_offset *o = hub_offset_slot(h, c->job, c->task);
        if (seq > o->recorded) o->recorded = seq;
        pthread_mutex_unlock(&h->mu);
        uint8_t p[8];
        dp_put_u64(p, seq);
        evt_wire_put(hub_out(c), EVT_F_ACK, p, sizeof p);
        hub_conn_flush(h, c);
    }
}

/* At a stop with tasks still streaming: one record per such task saying how far this
 * hub got with it (events_dropped written by the hub: event.h), so that this trace
 * says what it holds even if the final ACK never reaches the task. */
static void hub_record_delivery(evt_hub *h)
{
    for (hub_conn *c = h->conns; c; c = c->next) {
        if (c->role != HC_TASK || !c->resumed) continue;
        pthread_mutex_lock(&h->mu);
        hub_offset o = *hub_offset_slot(h, c->job, c->task);
        pthread_mutex_unlock(&h->mu);
        if (!o.sequenced) continue;
        evt_record e;
        evt_init(&e, EVT_EVENTS_DROPPED, c->job, c->task);
        e.t = hub_now(h);
        e.peer_job = EVT_JOB_HUB;
        e.bytes = (int64_t)o.dropped;
        e.step = (int64_t)o.recorded;
        e.id = o.first;
        e.value = 2;
        hub_merge_push(h, &e);
    }
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(revents);
    evt_hub *h = dp_container_of(w, evt_hub, tick);
    int64_t now = hub_now(h);
    hub_merge_emit(h, now - (int64_t)h->opt.reorder_ms * 1000000);
    if (now - h->last_ack >= HUB_ACK_NS) {
        hub_ack(h);
        h->last_ack = now;
    }
    for (hub_conn *c = h->conns, *next; c; c = next) {
        next = c->next;
        if (c->role == HC_TASK && !c->synced && now - c->born > HUB_HELLO_NS)
            hub_conn_close(h, c, "clock probes unanswered within 10 s", 1);
    }
    hub_free_dead(h);
    hub_publish(h);
    if (h->opt.exit_when_idle_ms > 0 && h->had_tasks && h->st.tasks_now == 0) {
        if (!h->idle_since) h->idle_since = now ? now : 1;
        if (now - h->idle_since >= (int64_t)h->opt.exit_when_idle_ms * 1000000) {
            dp_log(DP_LOG_INFO, "hub", "all tasks gone for %d ms: stopping",
                   h->opt.exit_when_idle_ms);
            ev_break(loop, EVBREAK_ALL);
        }
    } else {
        h->idle_since = 0;
    }
    if (h->opt.progress_ms > 0 && now - h->last_progress >= (int64_t)h->opt.progress_ms * 1000000) {
        double dt = (double)(now - h->last_progress) / 1e9;
        fprintf(stderr, "hub: %llu tasks, %llu viewers, %llu events (%.0f/s), %llu late, "
                "%llu dropped for viewers, %llu dropped by tasks\n",
                (unsigned long long)h->st.tasks_now, (unsigned long long)h->st.subs_now,
                (unsigned long long)h->st.events_out,
                (double)(h->st.events_out - h->last_progress_events) / (dt > 0 ? dt : 1),
                (unsigned long long)h->st.events_late, (unsigned long long)h->st.sub_dropped,
                (unsigned long long)h->snap.task_dropped);
        h->last_progress = now;
        h->last_progress_events = h->st.events_out;
    }
}

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    DP_UNUSED(w);
    DP_UNUSED(revents);
    ev_break(loop, EVBREAK_ALL);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    DP_UNUSED(revents);
    dp_log(DP_LOG_INFO, "hub", "%s: stopping", w->signum == SIGINT ? "SIGINT" : "SIGTERM");
    ev_break(loop, EVBREAK_ALL);
}

/* ---- public API ------------------------------------------------------------------ */

evt_hub *evt_hub_new(const evt_hub_options *opt, char *err)
{
    evt_hub_options defaults;
    evt_hub_options_init(&defaults);
    if (!opt) opt = &defaults;
    evt_hub *h = xcalloc(1, sizeof *h);
    h->opt = *opt;
    int lfd = -1;
    pthread_mutex_init(&h->mu, NULL);
    if (!h->opt.listen) h->opt.listen = EVT_HUB_DEFAULT_ADDR;
    if (h->opt.reorder_ms < 0) h->opt.reorder_ms = 0;
    if (h->opt.probes <= 0) h->opt.probes = 8;
    if (!h->opt.sub_queue_bytes) h->opt.sub_queue_bytes = 8u << 20;
    if (!h->opt.subs_total_bytes) h->opt.subs_total_bytes = 64u << 20;
    if (h->opt.max_subscribers <= 0) h->opt.max_subscribers = 64;
    if (h->opt.max_conns <= 0) h->opt.max_conns = 4096;
    if (h->opt.sub_stall_s <= 0) h->opt.sub_stall_s = 30;
    h->opt.listen = NULL;   /* not kept: borrowed from the caller */
    h->opt.trace_path = NULL;
    h->opt.metadata_json = NULL;
    if (auth_hub_key_from_env(&h->key, err)) goto fail;
    if (h->key.set) {
        auth_viewer_token(&h->key, h->viewer_token, sizeof h->viewer_token);
        auth_key_from_secret(&h->viewer_key, h->viewer_token, strlen(h->viewer_token), "viewer token", NULL);
    }
    h->strings = evt_strtab_new();
    h->t0 = (int64_t)dp_now_ns();
    h->last_out_t = INT64_MIN;

    struct sockaddr_storage ss;
    const char *listen_addr = opt->listen ? opt->listen : EVT_HUB_DEFAULT_ADDR;
    lfd = net_listen_addr(listen_addr, "hub", &ss, err);
    if (lfd < 0) goto fail;
    net_addr_text((struct sockaddr *)&ss, h->address, sizeof h->address);
    if (!h->key.set && !auth_host_is_loopback(h->address))
        dp_log(DP_LOG_WARN, "hub", "listening on %s without a secret: anyone who can reach it can stream "
               "into the run or watch it (set $DOWNPOUR_SECRET or --secret-file)", h->address);
    h->port = net_addr_port(&ss);

    if (opt->trace_path) {
        char meta[512];
        const char *m = opt->metadata_json;
        if (!m) {
            snprintf(meta, sizeof meta,
                     "{\"engine\":\"real\",\"source\":\"hub\",\"listen\":\"%s\","
                     "\"start_wall_ns\":%llu}",
                     h->address, (unsigned long long)dp_wall_ns());
            m = meta;
        }
        h->trace = trace_writer_open(opt->trace_path, m, err);
        if (!h->trace) goto fail;
    }

    h->loop = ev_loop_new(EVFLAG_AUTO);
    if (!h->loop) {
        dp_fail(err, DP_EIO, "hub: cannot create an event loop");
        goto fail;
    }
    h->listener = net_listener_new(h->loop, lfd, h->opt.max_conns, "hub", accept_cb, h);
    lfd = -1;
    ev_async_init(&h->stop_w, stop_cb);
    ev_async_start(h->loop, &h->stop_w);
    ev_timer_init(&h->tick, tick_cb, HUB_TICK_S, HUB_TICK_S);
    ev_timer_start(h->loop, &h->tick);
    if (h->opt.handle_signals) {
        ev_signal_init(&h->sigint_w, signal_cb, SIGINT);
        ev_signal_init(&h->sigterm_w, signal_cb, SIGTERM);
        ev_signal_start(h->loop, &h->sigint_w);
        ev_signal_start(h->loop, &h->sigterm_w);
    }
    return h;
fail:
    if (lfd >= 0) close(lfd);
    if (h->trace) trace_writer_close(h->trace, NULL);
    h->trace = NULL;
    evt_hub_free(h);
    return NULL;
}

void evt_hub_free(evt_hub *h)
{
    if (!h) return;
    dp_assert("hub: freed while running", !h->running);
    while (h->conns) hub_conn_close(h, h->conns, "hub freed", 0);
    hub_free_dead_all(h, 1);
    net_listener_free(h->listener);
    h->listener = NULL;
    if (h->trace) trace_writer_close(h->trace, NULL);
    if (h->loop) ev_loop_destroy(h->loop);
    hub_merge_release(h);
    evt_strtab_free(h->strings);
    free(h->scratch);
    free(h->offsets);
    auth_key_clear(&h->key);
    auth_key_clear(&h->viewer_key);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

const char *evt_hub_address(const evt_hub *h) { return h->address; }
const char *evt_hub_viewer_token(const evt_hub *h) { return h->key.set ? h->viewer_token : NULL; }
int evt_hub_port(const evt_hub *h) { return h->port; }

int evt_hub_run(evt_hub *h, char *err)
{
    dp_assert("hub: evt_hub_run called twice", !h->ran);
    h->ran = 1;
    h->running = 1;
    ev_run(h->loop, 0);

    /* Out: everything held goes out in order, is acknowledged to the tasks still
     * streaming (best effort: a lost final ACK only means the next hub gets those
     * records again) and noted per task, then connections and trace close. */
    hub_merge_emit(h, INT64_MAX);
    hub_ack(h);
    hub_record_delivery(h);
    hub_merge_emit(h, INT64_MAX);
    for (hub_conn *c = h->conns; c; c = c->next)
        if (c->role == HC_TASK && c->conn) shutdown(net_conn_fd(c->conn), SHUT_WR);   /* the ACK first, then EOF */
    while (h->conns) hub_conn_close(h, h->conns, "hub stopping", 0);
    hub_free_dead_all(h, 1);
    h->st.conns_refused = net_listener_refused(h->listener);
    net_listener_free(h->listener);
    h->listener = NULL;
    int rc = 0;
    if (h->trace) {
        rc = trace_writer_close(h->trace, err);
        h->trace = NULL;
    }
    hub_publish(h);
    dp_log(h->opt.quiet ? DP_LOG_DEBUG : DP_LOG_INFO, "hub", "stopped: %llu events merged, %llu late, %llu dropped for viewers",
           (unsigned long long)h->st.events_out, (unsigned long long)h->st.events_late,
           (unsigned long long)h->st.sub_dropped);
    h->running = 0;
    return rc;
}

void evt_hub_stop(evt_hub *h)
{
    if (h) ev_async_send(h->loop, &h->stop_w);
}

static void *hub_thread(void *arg)
{
    evt_hub *h = arg;
    h->thread_rc = evt_hub_run(h, h->thread_err);
    return NULL;
}

int evt_hub_start_thread(evt_hub *h, char *err)
{
    int rc = pthread_create(&h->thread, NULL, hub_thread, h);
    if (rc) {
        return dp_fail(err, DP_EIO, "hub: pthread_create: %s", strerror(rc));
    }
    h->has_thread = 1;
    return 0;
}

int evt_hub_join(evt_hub *h, char *err)
{
    if (!h->has_thread) return 0;
    evt_hub_stop(h);
    pthread_join(h->thread, NULL);
    h->has_thread = 0;
    if (h->thread_rc && err) snprintf(err, DP_ERRLEN, "%s", h->thread_err);
    return h->thread_rc;
}

void evt_hub_get_stats(evt_hub *h, evt_hub_stats *st)
{
    pthread_mutex_lock(&h->mu);
    *st = h->snap;
    pthread_mutex_unlock(&h->mu);
}

int evt_hub_task_offset(evt_hub *h, int job, int task, int64_t *offset_ns, int64_t *rtt_ns)
{
    int rc = DP_ENOTFOUND;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->noffsets; i++) {
        hub_offset *o = &h->offsets[i];
        if (o->job == job && o->task == task && o->synced) {
            if (offset_ns) *offset_ns = o->offset;
            if (rtt_ns) *rtt_ns = o->rtt;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int evt_hub_serve(const evt_hub_options *opt, FILE *out, char *err)
{
    signal(SIGPIPE, SIG_IGN);
    evt_hub *h = evt_hub_new(opt, err);
    if (!h) return DP_ERR;
    if (opt->on_bound && opt->on_bound(opt->on_bound_ctx, evt_hub_address(h), err)) {
        evt_hub_free(h);
        return DP_ERR;
    }
    fprintf(out, "hub listening on %s\n", evt_hub_address(h));
    if (evt_hub_viewer_token(h))
        fprintf(out, "viewer token: %s (read-only: `DOWNPOUR_SECRET=TOKEN downpour view --connect %s`)\n",
                evt_hub_viewer_token(h), evt_hub_address(h));
    fflush(out);
    if (opt->trace_path) fprintf(stderr, "hub: recording to %s\n", opt->trace_path);
    int rc = evt_hub_run(h, err);
    evt_hub_stats st;
    evt_hub_get_stats(h, &st);
    fprintf(stderr, "hub: done: %llu tasks, %llu viewers, %llu events merged, %llu late, "
            "%llu dropped for viewers, %llu dropped by tasks, %llu bad connections\n",
            (unsigned long long)st.tasks_total, (unsigned long long)st.subs_total,
            (unsigned long long)st.events_out, (unsigned long long)st.events_late,
            (unsigned long long)st.sub_dropped, (unsigned long long)st.task_dropped,
            (unsigned long long)st.bad_conns);
    evt_hub_free(h);
    return rc;
}
