/* ps.c — a parameter-server task: one libev loop serving every worker. It holds the
 * variables the placement gave it (and global_step when placed here), applies pushed
 * gradients with the optimizer under the configured update rule, answers pulls with a
 * snapshot of the variable, and defers answers that must wait (pulls of variables the
 * chief has not initialised yet; sync pushes until their step is complete; SSP starts
 * beyond the staleness bound). Single-threaded: only the loop touches this state. This
 * file: connections (net/conn_auth.c runs the handshake, net/conn.c the limits and the
 * listener's cap; here: HELLO and the frames' dispatch) and ps_run; the variables and the
 * update rule are ps_update.c. */
#include "runtime/ps_internal.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"

volatile int rt_stop_requested;

static void *on_header(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject)
{
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    /* Before HELLO (net_conn ran the handshake) only HELLO's token is read: no tensor
     * payload. */
    if (cl->worker < 0 && h->type != MSG_HELLO) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s of %u bytes before HELLO", proto_type_name(h->type), h->length);
        return NULL;
    }
    if (h->type != MSG_PUSH && h->type != MSG_INIT && h->type != MSG_INIT_SLOT) return NULL;
    ps_var *v = ps_local_var(ps, h->id);
    if (!v) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s for variable id %u, which is not on %s", proto_type_name(h->type),
                 h->id, ps->name);
        return NULL;
    }
    if (h->length != v->def->count * sizeof(float)) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s of %s carries %u bytes, expected %zu", proto_type_name(h->type),
                 v->def->name, h->length, v->def->count * sizeof(float));
        return NULL;
    }
    if (h->type == MSG_INIT_SLOT && (!v->slot || !v->def->trainable)) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "INIT_SLOT of %s, which keeps no optimizer slot (%s)", v->def->name,
                 optim_name(ps->cfg->optimizer));
        return NULL;
    }
    /* Sync: a push lands in the worker's own buffer, which the accumulator borrows until
     * the step is taken (ps_handle_push); one it holds already (a duplicate, to be
     * dropped) must not overwrite it. */
    if (h->type == MSG_PUSH && v->lent && !sync_acc_holds(v->acc, cl->worker)) {
        /* On shared memory the accumulator borrows it where it lies in the ring. */
        if (net_conn_hold_payload(c)) {
            ps->lent_pushes++;
            cl->holding = 1;
            return NULL;
        }
        float **b = &v->lent[cl->worker];
        if (!*b) *b = xmalloc(v->def->count * sizeof(float));
        return *b;
    }
    if (h->type == MSG_PUSH) {
        /* Async and ssp apply a push as it arrives and keep nothing of it: on shared
         * memory it is checked and applied where it lies in the ring, not copied out. */
        if (ps->cfg->mode != MODE_SYNC && net_conn_lend_payload(c)) {
            ps->lent_pushes++;
            return NULL;
        }
        return cl->grad;
    }
    /* A restore is staged in the client's buffer and copied in once whole. */
    if (h->arg1 & INIT_RESTORE) return cl->grad;
    return h->type == MSG_INIT ? (v->initialised ? NULL : v->data) : (v->initialised ? NULL : v->slot);
}

/* HELLO: the worker takes its slot. A slot held by a live connection is given over only
 * to the same worker process (its session token): a worker that lost another ps
 * reconnects, and its HELLO may come before we see its old connection close. Any other
 * claim is refused and the holder left alone. */
static void handle_hello(ps_server *ps, ps_client *cl, const net_frame *h, const void *payload)
{
    char msg[256];
    uint64_t want = rt_config_hash(ps->cfg);
    uint64_t token = 0;
    if (h->length == PROTO_TOKEN_BYTES) token = dp_get_u64(payload);
    const char *peer = net_conn_peer(cl->conn);
    if (h->id >= (uint32_t)ps->cfg->n_workers) {
        snprintf(msg, sizeof msg, "%s: worker index %u outside 0..%d", ps->name, h->id,
                 ps->cfg->n_workers - 1);
    } else if ((uint64_t)h->arg0 != want) {
        /* The values only in our own log: a peer learns nothing it could copy. */
        dp_log(DP_LOG_WARN, ps->name, "refused worker %u from %s: config hash %016llx, this ps has %016llx",
               h->id, peer, (unsigned long long)h->arg0, (unsigned long long)want);
        snprintf(msg, sizeof msg, "%s: worker %u runs with different training flags", ps->name, h->id);
        net_conn_send_error(cl->conn, msg);
        return;
    } else if (cl->worker >= 0 && cl->worker != (int)h->id) {
        snprintf(msg, sizeof msg, "%s: HELLO as worker %u on the connection of worker %d", ps->name, h->id,
                 cl->worker);
    } else {
        ps_client *old = ps->clients[h->id];
        if (old && old != cl) {
            if (!token || token != old->token) {
                dp_log(DP_LOG_WARN, ps->name, "refused a claim of worker %u's slot from %s: held by a live "
                       "connection from %s (another process)", h->id, peer, net_conn_peer(old->conn));
                snprintf(msg, sizeof msg, "%s: worker %u's slot is taken by a live connection", ps->name, h->id);
                net_conn_send_error(cl->conn, msg);
                return;
            }
            dp_log(DP_LOG_INFO, ps->name, "worker %u reconnects: closing its previous connection", h->id);
            net_conn_close(old->conn, "replaced by a new connection of the same worker");
            ps->clients[h->id] = NULL;
        }
        /* The gate's clock for this worker goes back in the answer: a restarted process
         * counts on from it (ssp_gate_rejoin). */
        int64_t clock = h->arg1;
        if (ps->gate && h->arg1 >= 0) clock = ssp_gate_rejoin(ps->gate, (int)h->id, h->arg1);
        cl->worker = (int)h->id;
        cl->token = token;
        net_conn_hello_done(cl->conn);
        if (!cl->grad) cl->grad = xmalloc((ps->max_count ? ps->max_count : 1) * sizeof(float));
        if (!cl->owed) cl->owed = xcalloc((size_t)ps->cat.n, 1);
        if (!cl->held && ps->cfg->mode == MODE_SYNC) cl->held = xcalloc((size_t)ps->cat.n, sizeof *cl->held);
        ps->clients[cl->worker] = cl;
        ps->finished[cl->worker] = 0;   /* a restarted worker trains again */
        net_frame ok = {.type = MSG_HELLO_OK, .id = (uint32_t)ps->index, .arg0 = (int64_t)want,
                        .arg1 = ps->gate ? clock : -1};
        net_conn_send(cl->conn, ok, NULL, 0, 0);
        return;
    }
    dp_log(DP_LOG_WARN, ps->name, "refused %s: %s", peer, msg);
    net_conn_send_error(cl->conn, msg);
}

static void on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    char msg[256];
    if (h->type == MSG_HELLO) {
        handle_hello(ps, cl, h, payload);
        return;
    }
    if (cl->worker < 0) {
        snprintf(msg, sizeof msg, "%s: %s before HELLO", ps->name, proto_type_name(h->type));
        net_conn_send_error(c, msg);
        return;
    }
    switch (h->type) {
    case MSG_INIT:
        if (!ps_local_var(ps, h->id)) break;   /* an empty frame skips on_header's check */
        ps_handle_init(ps, cl, h, payload);
        return;
    case MSG_INIT_SLOT: {
        /* The payload went into the slot (on_header) unless the variable was already
         * initialised, when it is ignored as INIT is. An empty frame skips on_header. */
        ps_var *v = ps_local_var(ps, h->id);
        if (!v || !v->slot || !v->def->trainable) {
            snprintf(msg, sizeof msg, "%s: INIT_SLOT of %s, which keeps no optimizer slot (%s)", ps->name,
                     v ? v->def->name : "an unknown variable", optim_name(ps->cfg->optimizer));
            net_conn_send_error(c, msg);
            return;
        }
        if ((h->arg1 & INIT_RESTORE) && v->def->count)
            memcpy(v->slot, payload, v->def->count * sizeof(float));
        net_frame ok = {.type = MSG_INIT_OK, .id = h->id};
        net_conn_send(c, ok, NULL, 0, 0);
        return;
    }
    case MSG_FINAL_STEP:
        if (!ps->holds_step || ps->final_waiter >= 0) break;
        ps->final_waiter = cl->worker;
        /* The asker trains no more: it must not hold the others at the SSP bound. */
        if (ps->gate) {
            ssp_gate_retire(ps->gate, cl->worker);
            ps_ssp_release_waiters(ps);
        }
        ps_answer_final_step(ps);
        return;
    case MSG_PULL: {
        ps_var *v = ps_local_var(ps, h->id);
        if (!v) break;
        if ((h->arg1 & PULL_WITH_SLOT) && (!v->slot || !v->def->trainable || !v->initialised)) {
            snprintf(msg, sizeof msg, "%s: PULL of %s's slot, which %s", ps->name, v->def->name,
                     v->initialised ? "does not exist" : "is not initialised");
            net_conn_send_error(c, msg);
            return;
        }
        if (h->arg1 & PULL_WITH_SLOT) {
            ps_send_pull_with_slot(ps, cl, v);
            return;
        }
        /* Not initialised yet, or a reconnected worker waits for the chief's restore. */
        if (!v->initialised || PROTO_SESSION(h->arg1) > v->session) {
            int seen = 0;
            for (int i = 0; i < v->n_waiting; i++) seen |= v->waiting_pulls[i] == cl->worker;
            if (!seen) v->waiting_pulls[v->n_waiting++] = cl->worker;
            return;
        }
        ps_send_pull(ps, cl, v);
        return;
    }
    case MSG_PUSH: {
        ps_var *v = ps_local_var(ps, h->id);
        if (!v) break;                       /* an empty frame skips on_header's check */
        cl->hold_now = cl->holding ? payload : NULL;
        cl->holding = 0;
        if (!v->initialised) {
            snprintf(msg, sizeof msg, "%s: push to %s before it was initialised", ps->name, v->def->name);
            net_conn_send_error(c, msg);
        } else {
            ps_handle_push(ps, cl, h, payload);
        }
        /* held in the ring and not kept by the accumulator (dropped, refused): free now */
        if (cl->hold_now) net_conn_release(c, cl->hold_now);
        cl->hold_now = NULL;
        return;
    }
    case MSG_SSP_WAIT:
        if (!ps->gate) break;
        if (ssp_gate_may_start(ps->gate, h->arg0)) {
            net_frame go = {.type = MSG_SSP_GO, .arg0 = h->arg0, .arg1 = ssp_gate_min(ps->gate)};
            net_conn_send(c, go, NULL, 0, 0);
        } else {
            int i = 0;
            while (i < ps->n_ssp_waiting && ps->ssp_waiting[i].worker != cl->worker) i++;
            ps->ssp_waiting[i] = (ssp_waiter){cl->worker, h->arg0};
            if (i == ps->n_ssp_waiting) ps->n_ssp_waiting++;
        }
        return;
    case MSG_DONE:
        if (!cl->done) {
            cl->done = 1;
            ps->n_done++;
            if (ps->gate) {
                ssp_gate_retire(ps->gate, cl->worker);
                ps_ssp_release_waiters(ps);
            }
            ps->finished[cl->worker] = 1;
            ps_answer_final_step(ps);
        }
        return;
    case MSG_ERROR:
        dp_log(DP_LOG_WARN, ps->name, "worker %d reported: %.*s", cl->worker, (int)h->length,
               (const char *)payload);
        net_conn_close(c, "peer reported an error");
        return;
    default:
        break;
    }
    snprintf(msg, sizeof msg, "%s: unexpected %s (var %u) from worker %d", ps->name,
             proto_type_name(h->type), h->id, cl->worker);
    dp_log(DP_LOG_WARN, ps->name, "%s", msg);
    net_conn_send_error(c, msg);
}

/* Sync, a worker's connection closing: the gradients it pushed for the current step stay
 * accumulated (TensorFlow's accumulator keeps them too), each logged. The ring goes with
 * the connection: one the accumulator still borrows from it moves to the worker's own
 * buffer (which the accumulator cannot be borrowing too: it holds one gradient a
 * worker). */
static void keep_held(ps_server *ps, ps_client *cl)
{
    if (cl->worker < 0 || ps->cfg->mode != MODE_SYNC) return;
    int current = ps->clients[cl->worker] == cl;
    for (int i = 0; i < ps->cat.n; i++) {
        ps_var *v = &ps->vars[i];
        int ring = cl->held && cl->held[i];
        if (ring) {
            float **b = &v->lent[cl->worker];
            if (!*b) *b = xmalloc(v->def->count * sizeof(float));
            memcpy(*b, cl->held[i], v->def->count * sizeof(float));
            sync_acc_rebind(v->acc, cl->worker, *b);
        }
        if (!cl->done && (ring || (current && v->acc && v->def->trainable && sync_acc_holds(v->acc, cl->worker))))
            dp_log(DP_LOG_INFO, ps->name, "worker %d's gradient of %s for step %lld stays accumulated%s", cl->worker,
                   v->def->name, (long long)sync_acc_step(v->acc), ring ? " (copied out of its connection's ring)" : "");
    }
}

static void on_close(net_conn *c, const char *reason, void *ctx)
{
    DP_UNUSED(c);
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    keep_held(ps, cl);
    if (cl->worker >= 0 && ps->clients[cl->worker] == cl) {
        ps->clients[cl->worker] = NULL;
        if (!cl->done)
            dp_log(DP_LOG_WARN, ps->name, "lost /job:worker/replica:0/task:%d: %s", cl->worker, reason);
        /* A lost worker clocks no more: it must not hold the others at the SSP bound. */
        if (!cl->done && ps->gate) {
            ssp_gate_retire(ps->gate, cl->worker);
            ps_ssp_release_waiters(ps);
        }
        /* A lost worker pushes no more: it no longer holds back a FINAL_STEP answer. */
        ps->finished[cl->worker] = 1;
        ps_answer_final_step(ps);
    } else if (cl->worker < 0) {
        dp_log(DP_LOG_WARN, ps->name, "dropped connection from %s: %s", net_conn_peer(c), reason);
    }
    if (cl->prev) cl->prev->next = cl->next;
    else ps->conns = cl->next;
    if (cl->next) cl->next->prev = cl->prev;
    free(cl->grad);
    free(cl->held);
    free(cl->owed);
    free(cl);
}

static const net_handler ps_handler = {NULL, on_header, on_frame, on_close};

/* An accepted connection: no buffers yet (those come with an authenticated HELLO). */
static void on_accept(net_listener *l, int fd, const char *peer, void *ctx)
{
    ps_server *ps = ctx;
    ps_client *cl = xcalloc(1, sizeof *cl);
    cl->ps = ps;
    cl->worker = -1;
    cl->next = ps->conns;
    if (ps->conns) ps->conns->prev = cl;
    ps->conns = cl;
    net_conn_opts o = {.proto = &proto_ps, .role = NET_SERVER, .key = &ps->key, .auth_context = AUTH_CTX_PS,
                       .name = ps->name, .what = "ps", .hello_s = PS_HANDSHAKE_S, .frame_s = PS_FRAME_IDLE_S,
                       .pre_hello_max = PROTO_TOKEN_BYTES, .listener = l,
                       .shm = ps->cfg->transport == RT_TRANSPORT_SHM};
    cl->conn = net_conn_new(ps->loop, fd, &o, &ps_handler, cl, peer);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    DP_UNUSED(w);
    DP_UNUSED(revents);
    rt_stop_requested = 1;
    ev_break(loop, EVBREAK_ALL);
}

static void on_stop_check(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(revents);
    ps_server *ps = dp_container_of(w, ps_server, stop_check);
    /* Done or lost: a worker that died never says DONE, and the run goes on without it
     * (a restarted one says HELLO again and counts as training). */
    for (int i = 0; i < ps->cfg->n_workers; i++)
        if (!ps->finished[i]) return;
    /* Every worker lost and none done: they are reconnecting (a ps was lost), or all
     * died; the launcher's grace stops us then, as TensorFlow's server.join() waits. */
    if (ps->n_done == 0) return;
    /* Every worker is done: stop once our answers have left. */
    for (int i = 0; i < ps->cfg->n_workers; i++)
        if (ps->clients[i] && net_conn_pending(ps->clients[i]->conn)) return;
    ev_break(loop, EVBREAK_ALL);
}

/* The worker a stalled step of v waits for: a lost one first (it is the likely cause),
 * else the first that has not pushed. */
static int missing_worker(const ps_server *ps, const ps_var *v)
{
    int first = -1;
    for (int w = 0; w < ps->cfg->n_workers; w++) {
        if (sync_acc_holds(v->acc, w)) continue;
        if (!ps->clients[w]) return w;
        if (first < 0) first = w;
    }
    return first;
}

/* Sync: a step whose gradients are partly in for 2 s tells the workers that pushed them
 * whom they wait for (they log it), every 2 s and once at --barrier-timeout (they stop
 * the run then). */
static void on_wait_check(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    ps_server *ps = dp_container_of(w, ps_server, wait_check);
    uint64_t now = dp_now_ns();
    double limit = ps->cfg->barrier_timeout_s;
    for (int i = 0; i < ps->cat.n; i++) {
        ps_var *v = &ps->vars[i];
        if (v->def->ps != ps->index || !v->acc || !v->initialised || sync_acc_count(v->acc) == 0) continue;
        double waited = (double)(now - v->wait_t0) / 1e9;
        int report = (int)(waited / 2.0);
        int timed_out = limit > 0 && waited >= limit && !v->timeout_sent;
        if (report <= v->wait_reported && !timed_out) continue;
        v->wait_reported = report;
        if (timed_out) v->timeout_sent = 1;
        int missing = missing_worker(ps, v);
        if (missing < 0) continue;
        net_frame h = {.type = MSG_WAITING, .id = (uint32_t)v->id, .arg0 = missing,
                          .arg1 = (int64_t)(waited * 1e3)};
        for (int k = 0; k < ps->cfg->n_workers; k++)
            if (ps->clients[k] && sync_acc_holds(v->acc, k)) net_conn_send(ps->clients[k]->conn, h, NULL, 0, 0);
    }
}

static void print_stats(const ps_server *ps, double cpu_s)
{
    /* The least updated of our trainable variables (-1 when we hold none): in sync mode
     * every variable ends at the global step. */
    long long var_min = -1;
    for (int i = 0; i < ps->cat.n; i++) {
        const ps_var *v = &ps->vars[i];
        if (v->def->ps != ps->index || !v->def->trainable) continue;
        long long ver = (long long)ps_var_version(ps, v);
        if (var_min < 0 || ver < var_min) var_min = ver;
    }
    double mean_step = ps->gs_advances > 1
        ? (double)(ps->gs_last_ns - ps->gs_first_ns) / 1e9 / (double)(ps->gs_advances - 1) : 0;
    printf("{\"task\":\"ps\",\"index\":%d,\"applies\":%llu,\"drops\":%llu,\"pulls\":%llu,"
           "\"stale_n\":%llu,\"stale_sum\":%llu,\"stale_max\":%lld,\"holds_step\":%d,"
           "\"gs_advances\":%llu,\"mean_step_s\":%.9f,\"events\":%llu,\"events_dropped\":%llu,"
           "\"var_step_min\":%lld,\"global_step\":%lld,\"rejected\":%llu,\"conns_refused\":%llu,"
           "\"auth_failures\":%llu,\"pushes_in_place\":%llu,\"cpu_s\":%.6f}\n",
           ps->index, (unsigned long long)ps->applies, (unsigned long long)ps->drops,
           (unsigned long long)ps->pulls, (unsigned long long)ps->stale.n,
           (unsigned long long)ps->stale.sum, (long long)ps->stale.max, ps->holds_step,
           (unsigned long long)ps->gs_advances, mean_step, (unsigned long long)rt_instr_sent(ps->in),
           (unsigned long long)rt_instr_dropped(ps->in), var_min, ps_global_step(ps),
           (unsigned long long)ps->rejected, (unsigned long long)net_listener_refused(ps->listener),
           (unsigned long long)net_listener_auth_failures(ps->listener), (unsigned long long)ps->lent_pushes, cpu_s);
    fflush(stdout);
}

int ps_run(const rt_config *cfg, const cluster_spec *spec, int index, char *err)
{
    ps_server ps;
    memset(&ps, 0, sizeof ps);
    ps.cfg = cfg;
    ps.spec = spec;
    ps.index = index;
    int lfd = -1;
    spec_task_name(ps.name, sizeof ps.name, JOB_PS, index);
    int rc = catalog_build(&ps.cat, cfg->model, cfg->hidden, cfg->partition, err);
    if (rc) return rc;
    rc = catalog_place(&ps.cat, spec->n_ps, cfg->placement, err);
    if (rc) goto fail;
    optim_conf_init(&ps.opt, cfg->optimizer, (float)cfg->lr);
    int r = cfg->n_workers - cfg->backup_workers;
    ps.vars = xcalloc((size_t)ps.cat.n, sizeof *ps.vars);
    for (int i = 0; i < ps.cat.n; i++) {
        const var_def *d = &ps.cat.v[i];
        ps_var *v = &ps.vars[i];
        v->def = d;
        v->id = i;
        if (d->ps != index) continue;
        if (!d->trainable) ps.holds_step = 1;
        v->data = xcalloc(d->count ? d->count : 1, sizeof(float));
        if (optim_slot_width(cfg->optimizer)) {
            v->slot = xmalloc((d->count ? d->count : 1) * sizeof(float));
            optim_slot_init(&ps.opt, v->slot, d->count);
        }
        v->mean = xmalloc((d->count ? d->count : 1) * sizeof(float));
        v->waiting_pulls = xmalloc((size_t)cfg->n_workers * sizeof(int));
        v->clock = xcalloc((size_t)cfg->n_workers, sizeof(int64_t));
        if (cfg->mode == MODE_SYNC) {
            v->acc = sync_acc_new(cfg->n_workers, r, d->count, 0);
            v->lent = xcalloc((size_t)cfg->n_workers, sizeof *v->lent);
        }
        if (d->count > ps.max_count) ps.max_count = d->count;
    }
    ps.clients = xcalloc((size_t)cfg->n_workers, sizeof *ps.clients);
    ps.finished = xcalloc((size_t)cfg->n_workers, 1);
    ps.final_waiter = -1;
    ps.released = xmalloc((size_t)cfg->n_workers * sizeof(int));
    if (cfg->mode == MODE_SSP && ps.holds_step) {
        ps.gate = ssp_gate_new(cfg->n_workers, cfg->staleness);
        ps.ssp_waiting = xmalloc((size_t)cfg->n_workers * sizeof *ps.ssp_waiting);
    }
    const dp_addr *me = &spec->ps[index];
    rc = auth_key_from_env(&ps.key, err);
    if (rc) goto fail;
    if (!ps.key.set && !auth_host_is_loopback(me->host))
        dp_log(DP_LOG_WARN, ps.name, "listening on %s without a secret: anyone who can reach it can join "
               "the run (set $DOWNPOUR_SECRET or --secret-file)", me->host);
    lfd = net_listen_inherited(me->host, me->port, err);
    if (lfd < 0) {
        rc = lfd;
        goto fail;
    }
    signal(SIGPIPE, SIG_IGN);
    ps.loop = ev_loop_new(EVFLAG_AUTO);
    ps.listener = net_listener_new(ps.loop, lfd, PS_MAX_CONNS(cfg->n_workers), ps.name, on_accept, &ps);
    lfd = -1;
    ev_signal_init(&ps.sigint_w, on_signal, SIGINT);
    ev_signal_init(&ps.sigterm_w, on_signal, SIGTERM);
    ev_signal_start(ps.loop, &ps.sigint_w);
    ev_signal_start(ps.loop, &ps.sigterm_w);
    ev_timer_init(&ps.stop_check, on_stop_check, 0.01, 0.01);
    ev_timer_start(ps.loop, &ps.stop_check);
    ev_timer_init(&ps.wait_check, on_wait_check, 0.25, 0.25);
    if (cfg->mode == MODE_SYNC) ev_timer_start(ps.loop, &ps.wait_check);
    ps.in = rt_instr_new(cfg->hub, EVT_JOB_PS, index, &ps.cat);
    if (ps.in) {
        ps.device = rt_instr_cpu(ps.in, EVT_JOB_PS, index);
        evt_record e = rt_instr_record(ps.in, EVT_TASK_START);
        e.str = rt_instr_str(ps.in, me->host);
        e.bytes = getpid();
        rt_instr_emit(ps.in, &e);
        e = rt_instr_record(ps.in, EVT_DEVICE);
        e.device = ps.device;
        rt_instr_emit(ps.in, &e);
    }
    size_t bytes = catalog_ps_bytes(&ps.cat, index);
    char at[300];
    dp_log(DP_LOG_INFO, ps.name, "serving %zu bytes of variables on %s (%s, %s)", bytes,
           spec_addr_format(at, sizeof at, me), update_mode_name(cfg->mode),
           optim_name(cfg->optimizer));
    uint64_t cpu0 = dp_cpu_ns();
    ev_run(ps.loop, 0);
    double cpu_s = (double)(dp_cpu_ns() - cpu0) / 1e9;  /* the CPU its serving took */
    if (ps.in) {
        evt_record e = rt_instr_record(ps.in, EVT_TASK_STOP);
        e.value2 = cpu_s;
        rt_instr_emit(ps.in, &e);
    }
    print_stats(&ps, cpu_s);
    net_listener_free(ps.listener);
    if (rt_stop_requested && ps.n_done < cfg->n_workers)
        dp_log(DP_LOG_INFO, ps.name, "stopped by signal");
    /* Close the remaining connections: their on_close frees the clients. */
    while (ps.conns) net_conn_close(ps.conns->conn, "ps shutting down");
    ev_loop_destroy(ps.loop);
    rt_instr_free(ps.in);
    rc = DP_OK;
fail:
    if (lfd >= 0) close(lfd);
    if (ps.vars) {
        for (int i = 0; i < ps.cat.n; i++) {
            free(ps.vars[i].data);
            free(ps.vars[i].slot);
            free(ps.vars[i].mean);
            free(ps.vars[i].waiting_pulls);
            free(ps.vars[i].clock);
            sync_acc_free(ps.vars[i].acc);
            for (int w = 0; ps.vars[i].lent && w < cfg->n_workers; w++) free(ps.vars[i].lent[w]);
            free(ps.vars[i].lent);
        }
        free(ps.vars);
    }
    free(ps.clients);
    free(ps.finished);
    free(ps.released);
    free(ps.ssp_waiting);
    ssp_gate_free(ps.gate);
    catalog_release(&ps.cat);
    auth_key_clear(&ps.key);
    return rc;
}
