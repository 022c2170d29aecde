/* worker_net.c — a worker task's conversation with the ps tasks (see worker_internal.h):
 * connecting and HELLO, pulls read straight into the parameter buffers, pushes in the
 * order each mode needs, the sync barrier's RELEASEs and WAITING reports, the SSP gate.
 * Every answer is counted in wk->outstanding; wk_wait_all() runs the libev loop until
 * they are in. */
#include "runtime/worker_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

/* Sync: a ps says our step still waits for worker arg0 after arg1 ms. Logged once per
 * whole second; at --barrier-timeout the step is given up (wait loops return
 * DP_ETIMEDOUT). */
static void on_waiting(worker *wk, const net_frame *h)
{
    char who[64];
    spec_task_name(who, sizeof who, JOB_WORKER, (int)h->arg0);
    int64_t secs = h->arg1 / 1000;
    if (secs > wk->waited_logged) {
        wk->waited_logged = secs;
        dp_log(DP_LOG_WARN, wk->name, "waiting for %s (%lld s)", who, (long long)secs);
        rt_instr_log(wk->in, "%s: waiting for %s (%lld s)", wk->name, who, (long long)secs);
    }
    double limit = wk->cfg->barrier_timeout_s;
    /* once: every variable of the step says so, and the chief's last pull follows */
    if (limit > 0 && (double)h->arg1 >= limit * 1e3 && !wk->timeout_msg[0]) {
        wk->timed_out = 1;
        snprintf(wk->timeout_msg, sizeof wk->timeout_msg,
                 "barrier timeout: step %lld waited %.0f s for %s (--barrier-timeout %gs)",
                 (long long)wk->gs, (double)h->arg1 / 1e3, who, limit);
        if (wk->in) {
            evt_record e = rt_instr_record(wk->in, EVT_BARRIER_TIMEOUT);
            e.step = wk->gs;
            e.peer_job = EVT_JOB_WORKER;
            e.peer = (int32_t)h->arg0;
            e.value = (double)h->arg1 / 1e3;
            e.str = rt_instr_str(wk->in, wk->timeout_msg);
            rt_instr_emit(wk->in, &e);
        }
    }
}

static void *on_header(net_conn *c, const net_frame *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(c);
    wk_ps *p = ctx;
    worker *wk = p->wk;
    if (h->type != MSG_PULL_RESP && h->type != MSG_SLOT_RESP) return NULL;
    const char *what = proto_type_name(h->type);
    if (h->id >= (uint32_t)wk->cat.n || wk->cat.v[h->id].ps != p->index) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s for variable id %u, which %s does not hold", what, h->id, p->name);
        return NULL;
    }
    const var_def *d = &wk->cat.v[h->id];
    if (h->type == MSG_SLOT_RESP && (!wk->slots[d->base_index] || !d->trainable)) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "SLOT_RESP of %s, which this worker did not ask for", d->name);
        return NULL;
    }
    if (h->length != d->count * sizeof(float)) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s of %s carries %u bytes, expected %zu", what, d->name, h->length,
                 d->count * sizeof(float));
        return NULL;
    }
    if (h->type == MSG_SLOT_RESP) return wk_var_slot(d, wk->slots);
    return wk_var_slot(d, wk->pf_outstanding > 0 ? wk->pf_params : wk->params);
}

static void on_frame(net_conn *c, const net_frame *h, void *payload, void *ctx)
{
    wk_ps *p = ctx;
    worker *wk = p->wk;
    char msg[DP_ERRLEN + 64];
    switch (h->type) {
    case MSG_INIT_OK:
        if (h->arg0 == 1) wk->inits_taken++;
        wk->outstanding--;
        return;
    case MSG_HELLO_OK:
        /* the gate's ps: a restarted process counts on from the clock it kept */
        if (h->arg1 > wk_clock(wk)) wk->clock0 = h->arg1 - wk->local;
        wk->outstanding--;
        return;
    case MSG_SSP_GO:
        wk->outstanding--;
        return;
    case MSG_SLOT_RESP:
        wk->outstanding--;
        return;
    case MSG_FINAL_STEP_RESP:
        if (wk->final_abandoned) return; /* given up on: counted already */
        wk->final_gs = h->arg0;
        wk->outstanding--;
        return;
    case MSG_PULL_RESP:
        if (wk->pf_outstanding > 0) {   /* the prefetch's (worker_internal.h) */
            wk->pf_version[h->id] = h->arg0;
            if (h->arg1 > wk->session) wk->session = h->arg1;
            if ((int)h->id == wk->step_var) wk->pf_gs = h->arg0;
            wk->bytes_pulled += h->length;
            wk_emit_transfer_at(wk, EVT_PULL_END, (int)h->id, (double)h->arg0, wk->pf_step);
            wk->pf_outstanding--;
            return;
        }
        wk->version[h->id] = h->arg0;
        if (h->arg1 > wk->session) wk->session = h->arg1;
        if ((int)h->id == wk->step_var) wk->gs = h->arg0;
        wk->bytes_pulled += h->length;
        wk_emit_transfer(wk, EVT_PULL_END, (int)h->id, (double)h->arg0);
        wk->outstanding--;
        return;
    case MSG_PUSH_ACK:
        if (h->id >= (uint32_t)wk->cat.n || wk->push_unacked[h->id] <= 0) break;
        /* the oldest push of the variable still unacknowledged (a lazy ack may come
         * during the next step) */
        int64_t step = wk->push_step[h->id] - --wk->push_unacked[h->id];
        if ((h->arg1 & 0xff) == ACK_DROPPED && wk->cat.v[h->id].trainable) wk->drops_seen++;
        if ((h->arg1 & 0xff) == ACK_ACCUMULATED) wk->releases_due++;
        if ((int)h->id == wk->step_var) wk->gs_after = h->arg0;
        wk_emit_transfer_at(wk, EVT_PUSH_END, (int)h->id, (double)(h->arg1 & 0xff), step);
        wk->outstanding--;
        return;
    case MSG_WAITING:
        on_waiting(wk, h);
        return;
    case MSG_RELEASE:
        if (h->id >= (uint32_t)wk->cat.n || wk->releases_due <= 0) break;
        if ((int)h->id == wk->step_var) wk->gs_after = h->arg0;
        wk->releases_due--;
        return;
    case MSG_ERROR:
        snprintf(msg, sizeof msg, "%s reported: %.*s", p->name, (int)h->length, (const char *)payload);
        wk_fail(wk, msg);
        net_conn_close(c, "peer reported an error");
        return;
    default:
        break;
    }
    snprintf(msg, sizeof msg, "unexpected %s from %s", proto_type_name(h->type), p->name);
    wk_fail(wk, msg);
    net_conn_close(c, msg);
}

/* A ps connection lost mid-run is not the end: the waits return WK_PS_LOST and the
 * worker reconnects (wk_rejoin). A ps that reported an error has failed us already. */
static void on_close(net_conn *c, const char *reason, void *ctx)
{
    wk_ps *p = ctx;
    worker *wk = p->wk;
    p->conn = NULL;
    if (wk->finishing || wk->rejoining || wk->failed || wk->lost) return;
    int kind = net_conn_close_kind(c);
    if (kind == NET_CLOSE_AUTH || kind == NET_CLOSE_PROTO) {
        /* Not our ps, it does not take us, or it sent a frame we refused (a bad header,
         * an answer we did not ask for): retrying cannot help. */
        char msg[DP_ERRLEN + 64];
        snprintf(msg, sizeof msg, "%s: %s", p->name, reason);
        wk_fail(wk, msg);
        ev_break(wk->loop, EVBREAK_ONE);
        return;
    }
    wk->lost = 1;
    wk->lost_ps = p->index;
    wk->lost_ns = dp_now_ns();
    snprintf(wk->lost_msg, sizeof wk->lost_msg, "lost connection to %s: %s", p->name, reason);
    ev_break(wk->loop, EVBREAK_ONE);
}

/* The common end of every wait loop. */
static int wait_result(const worker *wk)
{
    if (wk->failed) return DP_EPROTO;
    if (wk->lost) return WK_PS_LOST;
    if (wk->timed_out) return DP_ETIMEDOUT;
    if (rt_stop_requested) return DP_ECLOSED;
    return DP_OK;
}

static int waiting_on(const worker *wk)
{
    return !wk->failed && !wk->lost && !wk->timed_out && !rt_stop_requested;
}

static void wk_send_hello(worker *wk, int ps);

/* Connected and, with a secret, both sides proved it (net/conn_auth.c): HELLO. */
static void on_open(net_conn *c, void *ctx)
{
    DP_UNUSED(c);
    wk_ps *p = ctx;
    p->wk->outstanding--;
    wk_send_hello(p->wk, p->index);
}

static const net_handler wk_handler = {on_open, on_header, on_frame, on_close};

/* Runs the loop until every awaited answer has come, a connection fails, or a signal
 * asks us to stop. */
int wk_wait_all(worker *wk)
{
    while (wk->outstanding > 0 && waiting_on(wk)) ev_run(wk->loop, EVRUN_ONCE);
    return wait_result(wk);
}

static void on_wait_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(revents);
    *(int *)w->data = 1;
    ev_break(loop, EVBREAK_ONE);
}

int wk_wait_for(worker *wk, double seconds)
{
    int expired = 0;
    ev_timer deadline;
    ev_timer_init(&deadline, on_wait_deadline, seconds, 0.);
    deadline.data = &expired;
    ev_timer_start(wk->loop, &deadline);
    while (wk->outstanding > 0 && waiting_on(wk) && !expired) ev_run(wk->loop, EVRUN_ONCE);
    ev_timer_stop(wk->loop, &deadline);
    int rc = wait_result(wk);
    if (rc) return rc;
    return wk->outstanding > 0 ? DP_ETIMEDOUT : DP_OK;
}

int wk_send(worker *wk, int ps, net_frame h, const void *payload, size_t len)
{
    if (!wk->ps[ps].conn || net_conn_send(wk->ps[ps].conn, h, payload, len, 0) != DP_OK) return 0;
    wk->outstanding++;
    return 1;
}

/* A reconnection attempt to ps `ps` that failed (or, attempt 1, the loss itself). */
static void emit_retry(worker *wk, int ps, int attempt, const char *why)
{
    if (!wk->in) return;
    evt_record e = rt_instr_record(wk->in, EVT_PS_RETRY);
    e.peer_job = EVT_JOB_PS;
    e.peer = ps;
    e.step = wk->gs;
    e.value = attempt;
    e.dur = (int64_t)(dp_now_ns() - wk->lost_ns);
    e.str = rt_instr_str(wk->in, why);
    rt_instr_emit(wk->in, &e);
}

/* HELLO with this process's session token (proto.h). */
static void wk_send_hello(worker *wk, int ps)
{
    uint8_t tok[PROTO_TOKEN_BYTES];
    dp_put_u64(tok, wk->token);
    net_frame h = {.type = MSG_HELLO, .id = (uint32_t)wk->index,
                      .arg0 = (int64_t)rt_config_hash(wk->cfg), .arg1 = wk_clock(wk)};
    if (!wk->ps[ps].conn) return;
    if (net_conn_send(wk->ps[ps].conn, h, tok, sizeof tok, 1) == DP_OK) wk->outstanding++;
}

int wk_connect_all(worker *wk, char *err)
{
    if (!wk->auth_loaded) {
        int rc = auth_key_from_env(&wk->key, err);
        if (rc) return rc;
        randombytes_buf(&wk->token, sizeof wk->token);
        if (!wk->token) wk->token = 1;   /* 0 means "none given" */
        wk->auth_loaded = 1;
    }
    for (int i = 0; i < wk->spec->n_ps; i++) {
        const dp_addr *a = &wk->spec->ps[i];
        wk_ps *p = &wk->ps[i];
        uint64_t start = dp_now_ns(), last_log = 0;
        double backoff = 0.05;
        for (int attempt = 2;; attempt++) {
            char why[DP_ERRLEN];
            int fd = net_connect(a->host, a->port, why);
            if (fd >= 0) {
                net_conn_opts o = {.proto = &proto_ps, .role = NET_CLIENT, .key = &wk->key,
                                   .auth_context = AUTH_CTX_PS, .name = wk->name, .what = "worker",
                                   .shm = wk->cfg->transport == RT_TRANSPORT_SHM};
                p->conn = net_conn_new(wk->loop, fd, &o, &wk_handler, p, p->name);
                wk->outstanding++;   /* open: on_open sends HELLO */
                break;
            }
            if (fd == DP_EINVAL) return dp_fail(err, fd, "%s: %s", p->name, why);
            if (wk->lost_ns) emit_retry(wk, i, attempt, why);
            uint64_t now = dp_now_ns();
            double waited = (double)(now - start) / 1e9;
            char at[300];
            if (rt_stop_requested) return dp_fail(err, DP_ECLOSED, "stopped while connecting");
            if (waited >= wk->cfg->connect_timeout)
                return dp_fail(err, DP_ETIMEDOUT, "%s at %s did not answer within %d s (%s)",
                               p->name, spec_addr_format(at, sizeof at, a),
                               wk->cfg->connect_timeout, why);
            if (!last_log || now - last_log >= 2000000000ull) {
                dp_log(DP_LOG_INFO, wk->name, "still waiting for response from %s at %s (%s)",
                       p->name, spec_addr_format(at, sizeof at, a), why);
                last_log = now;
            }
            struct timespec ts = {0, (long)(backoff * 1e9)};
            nanosleep(&ts, NULL);
            backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
        }
    }
    int rc = wk_wait_all(wk);
    if (rc == WK_PS_LOST) return rc;
    if (rc) return dp_fail(err, DP_EPROTO, "%s", wk->failed ? wk->fail_msg : "stopped");
    return DP_OK;
}

int wk_rejoin(worker *wk, char *err)
{
    char at[300];
    const wk_ps *lost = &wk->ps[wk->lost_ps];
    dp_log(DP_LOG_WARN, wk->name, "%s; reconnecting (retrying with backoff for up to %d s)", wk->lost_msg,
           wk->cfg->connect_timeout);
    rt_instr_log(wk->in, "%s: %s; reconnecting", wk->name, wk->lost_msg);
    emit_retry(wk, wk->lost_ps, 1, wk->lost_msg);
    /* The session is over on every ps: its answers are thrown away with it. */
    wk->rejoining = 1;
    for (int i = 0; i < wk->spec->n_ps; i++)
        if (wk->ps[i].conn) net_conn_close(wk->ps[i].conn, "reconnecting after a lost ps");
    wk->rejoining = 0;
    wk->outstanding = wk->releases_due = 0;
    wk->pf_outstanding = wk->pf_sent = 0;
    memset(wk->push_unacked, 0, (size_t)wk->cat.n * sizeof *wk->push_unacked);
    wk->waited_logged = 0;
    wk->lost = 0;
    int rc = wk_connect_all(wk, err);
    if (rc) return rc;
    wk->rejoins++;
    double down = (double)(dp_now_ns() - wk->lost_ns) / 1e9;
    dp_log(DP_LOG_INFO, wk->name, "reconnected to %s at %s after %.1f s", lost->name,
           spec_addr_format(at, sizeof at, &wk->spec->ps[wk->lost_ps]), down);
    rt_instr_log(wk->in, "%s: reconnected to %s after %.1f s", wk->name, lost->name, down);
    wk->lost_ns = 0;
    return DP_OK;
}

/* Sends the PULL of every variable for local step `step` (with_slots: and its slot),
 * staged per ps and written at once: one write per ps, not one per variable. A prefetch
 * (pf) counts its answers in pf_outstanding, any other pull in outstanding. */
static void send_pulls(worker *wk, int64_t step, int with_slots, int pf)
{
    for (int p = 0; p < wk->spec->n_ps; p++) {
        net_conn *c = wk->ps[p].conn;
        int answers = 0;
        for (int v = 0; v < wk->cat.n; v++) {
            const var_def *d = &wk->cat.v[v];
            if (d->ps != p) continue;
            int slot = with_slots && d->trainable && wk->slots[d->base_index];
            net_frame h = {.type = MSG_PULL, .proto = proto_ps.id, .id = (uint32_t)v, .arg0 = step,
                           .arg1 = (slot ? PULL_WITH_SLOT : 0) | wk->need_session << PROTO_SESSION_SHIFT};
            wk_emit_transfer_at(wk, EVT_PULL_BEGIN, v, 0, step);
            if (c) net_frame_put(net_conn_stage(c), &h, NULL, 0);
            answers += 1 + slot;   /* the PULL_RESP, and the SLOT_RESP after it */
        }
        if (!c || !answers || net_conn_flush(c) != DP_OK) continue;
        if (pf) wk->pf_outstanding += answers;
        else wk->outstanding += answers;
    }
}

/* Pulls every variable; with_slots (the chief, for a checkpoint) also their optimizer
 * slots, each answered right after its variable. */
int wk_pull_all(worker *wk, int with_slots)
{
    send_pulls(wk, wk->local, with_slots, 0);
    return wk_pull_wait(wk);
}

void wk_pull_send(worker *wk)
{
    send_pulls(wk, wk->local, 0, 0);
}

int wk_pull_wait(worker *wk)
{
    if (wk->pull_deadline_s > 0) {
        double s = wk->pull_deadline_s;
        wk->pull_deadline_s = 0;
        return wk_wait_for(wk, s);
    }
    return wk_wait_all(wk);
}

void wk_prefetch_send(worker *wk)
{
    wk->pf_step = wk->local + 1;
    send_pulls(wk, wk->pf_step, 0, 1);
    wk->pf_sent = 1;
}

int wk_prefetch_finish(worker *wk, int take)
{
    while (wk->pf_outstanding > 0 && waiting_on(wk)) ev_run(wk->loop, EVRUN_ONCE);
    int rc = wait_result(wk);
    wk->pf_sent = 0;
    if (rc || !take) return rc;
    for (int i = 0; i < wk->n_tensors; i++) {
        float *t = wk->params[i];
        wk->params[i] = wk->pf_params[i];
        wk->pf_params[i] = t;
    }
    int64_t *ver = wk->version;
    wk->version = wk->pf_version;
    wk->pf_version = ver;
    wk->gs = wk->pf_gs;
    return DP_OK;
}

/* Sends the pushes of variables [first, last); their acknowledgements are awaited by the
 * caller. */
static void send_pushes(worker *wk, int first, int last, int64_t clock)
{
    int sync = wk->cfg->mode == MODE_SYNC;
    for (int v = first; v < last; v++) {
        const var_def *d = &wk->cat.v[v];
        if (wk->pushed[v]) {   /* sent during the compute (wk_step_progress) */
            wk->pushed[v] = 0;
            continue;
        }
        /* Sync gradients carry the global step they were computed from (TensorFlow's
         * local_step); async ones the version of the variable they read. */
        net_frame h = {.type = MSG_PUSH, .id = (uint32_t)v, .arg0 = sync ? wk->gs : wk->version[v],
                          .arg1 = clock};
        /* Borrowed: the gradient buffers stay untouched until every ack is in. */
        size_t len = d->count * sizeof(float);
        wk_emit_transfer(wk, EVT_PUSH_BEGIN, v, 0);
        if (wk_send(wk, d->ps, h, d->count ? wk_var_slot(d, wk->grads) : NULL, len)) {
            wk->push_step[v] = wk->local;
            wk->push_unacked[v]++;
        }
        wk->bytes_pushed += len;
    }
}

void wk_step_progress(void *ctx, int grad)
{
    worker *wk = ctx;
    if (!wk->computing || !wk->pipeline) return;
    if (grad < 0 && wk->outstanding <= 0 && wk->pf_outstanding <= 0) return;
    /* between ops that finished no gradient, a look at what arrived at most every
     * WK_POLL_NS: each look is a system call (epoll_wait), and ops are a few us apart */
    uint64_t t0 = dp_now_ns();
    if (grad < 0 && t0 - wk->polled_ns < WK_POLL_NS) return;
    for (int v = 0; grad >= 0 && v < wk->cat.n; v++) {
        const var_def *d = &wk->cat.v[v];
        if (!d->trainable || d->base_index != grad) continue;
        send_pushes(wk, v, v + 1, wk_clock(wk) + 1);
        wk->pushed[v] = 1;
    }
    if (wk->outstanding > 0 || wk->pf_outstanding > 0) ev_run(wk->loop, EVRUN_NOWAIT);
    /* It never waits, so its time is its CPU (a thread CPU clock read is a system call,
     * 1.6 us in a VM here), unless the scheduler took the core from it meanwhile: a time
     * over WK_HOOK_MAX_NS, which no send or read of one step takes, counts as that. */
    uint64_t t1 = dp_now_ns();
    wk->polled_ns = t1;
    wk->progress_cpu_ns += t1 - t0 < WK_HOOK_MAX_NS ? t1 - t0 : WK_HOOK_MAX_NS;
}

/* Sends the pushes of variables [first, last) and waits for their acknowledgements. */
static int push_range(worker *wk, int first, int last, int64_t clock)
{
    send_pushes(wk, first, last, clock);
    return wk_wait_all(wk);
}

/* The step's gradients: every variable's push but global_step's. */
static void send_grads(worker *wk, int64_t clock)
{
    send_pushes(wk, 0, wk->step_var, clock);
    send_pushes(wk, wk->step_var + 1, wk->cat.n, clock);
}

/* Async: the gradients, then global_step's push (the step's clock). The last gradient
 * (the first layer's weights, the largest) is the one the step waits for; a frame
 * written before it cost it a system call that wakes the ps, about 30 us over loopback
 * TCP here, between the compute's end and its push. */
static void send_step_pushes(worker *wk, int64_t clock)
{
    send_grads(wk, clock);
    send_pushes(wk, wk->step_var, wk->step_var + 1, clock);
}

/* Waits for every RELEASE still due (sync gradients accumulated, not yet applied). */
static int wait_releases(worker *wk)
{
    while (wk->releases_due > 0 && waiting_on(wk)) ev_run(wk->loop, EVRUN_ONCE);
    return wait_result(wk);
}

/* BARRIER_WAIT / RELEASE: their step is the global step whose gradients are aggregated
 * (the step the worker computed on), not its local step: the two part after a restore
 * rolls the global step back, and for a restarted worker, which counts from 0 again. */
static void emit_barrier(worker *wk, evt_kind kind, int64_t t, int64_t dur)
{
    if (!wk->in) return;
    evt_record e = rt_instr_record(wk->in, kind);
    e.t = t;
    e.device = wk->device;
    e.step = wk->gs;
    e.dur = dur;
    rt_instr_emit(wk->in, &e);
}

/* Async with lazy acks: the acks of the step before this one are in (a step pushes
 * every variable once, and a variable's acks come in order, so none has more than
 * this step's push unacknowledged). */
static int previous_step_acked(const worker *wk)
{
    for (int v = 0; v < wk->cat.n; v++)
        if (wk->push_unacked[v] > 1) return 0;
    return 1;
}

/* Async with lazy acks (--prefetch): this step's pushes go without waiting for their
 * acks, which come in while the next step computes (its parameters were prefetched
 * before this push, as without lazy acks). The next step computes into the other
 * gradient buffer; this one stays borrowed by its pushes until their acks are in, which
 * the step after next waits for here. What the ps applies, and in what order, is what
 * it was: the only difference is a wait less per step. */
static int push_lazy(worker *wk, int64_t clock)
{
    send_step_pushes(wk, clock);
    while (!previous_step_acked(wk) && waiting_on(wk)) ev_run(wk->loop, EVRUN_ONCE);
    for (int i = 0; i < wk->n_tensors; i++) {
        float *g = wk->grads[i];
        wk->grads[i] = wk->grads_alt[i];
        wk->grads_alt[i] = g;
    }
    return wait_result(wk);
}

int wk_acks_settle(worker *wk)
{
    if (wk->gs_after + wk->push_unacked[wk->step_var] < wk->cfg->steps) return DP_OK;
    return wk_wait_all(wk);
}

/* Pushes every gradient. Async: all at once, global_step's empty push after them. SSP:
 * the gradients first, then the clock (global_step's push) once all are applied; a clock
 * sent with them could release a waiting worker whose pull overtakes a gradient still
 * streaming in, one more step behind than the bound allows (tests/it_cluster.sh checks
 * the bound). Sync, as SyncReplicasOptimizer: the gradients first; once every variable
 * has taken this
 * step's update (our accumulated gradients RELEASEd, the others dropped as already
 * applied), the step token — global_step's empty push — which completes when
 * replicas_to_aggregate workers have finished the step. So the global step never runs
 * ahead of a variable, and every variable of one step is updated from the same step. */
int wk_push_all(worker *wk, int64_t clock)
{
    int rc;
    if (wk->cfg->mode == MODE_ASYNC && wk->lazy_acks) return push_lazy(wk, clock);
    if (wk->cfg->mode == MODE_ASYNC) {
        send_step_pushes(wk, clock);
        return wk_wait_all(wk);
    }
    int sv = wk->step_var;
    send_grads(wk, clock);
    if ((rc = wk_wait_all(wk))) return rc;
    if (wk->cfg->mode == MODE_SSP) return push_range(wk, sv, sv + 1, clock);
    int64_t t0 = rt_instr_now(wk->in);
    int waited = wk->releases_due > 0;
    if (waited) emit_barrier(wk, EVT_BARRIER_WAIT, t0, 0);
    if ((rc = wait_releases(wk)) || (rc = push_range(wk, sv, sv + 1, clock))) return rc;
    if (wk->releases_due > 0 && !waited) {
        waited = 1;
        t0 = rt_instr_now(wk->in);
        emit_barrier(wk, EVT_BARRIER_WAIT, t0, 0);
    }
    if ((rc = wait_releases(wk))) return rc;
    if (waited) {
        int64_t t1 = rt_instr_now(wk->in);
        emit_barrier(wk, EVT_BARRIER_RELEASE, t1, t1 - t0);
    }
    return DP_OK;
}

/* SSP: asks the step's ps whether this worker may start its next step; blocked
 * answers are shown as SSP_WAIT / SSP_RELEASE. */
int wk_ssp_wait(worker *wk)
{
    int step_ps = wk->cat.v[wk->step_var].ps;
    net_frame h = {.type = MSG_SSP_WAIT, .arg0 = wk_clock(wk)};
    int64_t t0 = rt_instr_now(wk->in);
    uint64_t w0 = dp_now_ns();
    wk_send(wk, step_ps, h, NULL, 0);
    int rc = wk_wait_all(wk);
    /* An answer within 200 us was not a wait worth showing. */
    if (!rc && dp_now_ns() - w0 > 200000) {
        int64_t t1 = rt_instr_now(wk->in);
        wk_emit_step(wk, EVT_SSP_WAIT, t0, 0, 0, 0);
        wk_emit_step(wk, EVT_SSP_RELEASE, t1, t1 - t0, 0, 0);
    }
    return rc;
}
