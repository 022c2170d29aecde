/* ps_update.c — a ps task's variables (see ps_internal.h): pulls answered with a
 * snapshot, pushes under the configured update rule (sync accumulators and the step
 * token, async and ssp applies), TensorFlow's check_numerics on every gradient, the
 * chief's INIT and its restore of a session after a lost ps, and the events of each.
 * Single-threaded: only the ps's loop calls these. */
#include "runtime/ps_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dp.h"

ps_var *ps_local_var(ps_server *ps, uint32_t id)
{
    if (id >= (uint32_t)ps->cat.n) return NULL;
    if (ps->cat.v[id].ps != ps->index) return NULL;
    return &ps->vars[id];
}

/* The catalogue index of our first variable: the chief sends a restore in catalogue
 * order, so its INIT starts one. */
static int first_local_var(const ps_server *ps)
{
    for (int i = 0; i < ps->cat.n; i++)
        if (ps->cat.v[i].ps == ps->index) return i;
    return -1;
}

int64_t ps_var_version(const ps_server *ps, const ps_var *v)
{
    return ps->cfg->mode == MODE_SYNC ? sync_acc_step(v->acc) : v->av.version;
}

void ps_send_pull(ps_server *ps, ps_client *cl, ps_var *v)
{
    net_frame h = {.type = MSG_PULL_RESP, .id = (uint32_t)v->id, .arg0 = ps_var_version(ps, v),
                      .arg1 = v->session};
    /* A snapshot: the variable may change before the frame is fully written. */
    net_conn_send(cl->conn, h, v->data, v->def->count * sizeof(float), 1);
    ps->pulls++;
}

/* A checkpoint's pull: the value, then its slot, queued in one loop turn so that both
 * are of the same version. */
void ps_send_pull_with_slot(ps_server *ps, ps_client *cl, ps_var *v)
{
    ps_send_pull(ps, cl, v);
    net_frame h = {.type = MSG_SLOT_RESP, .id = (uint32_t)v->id, .arg0 = ps_var_version(ps, v)};
    net_conn_send(cl->conn, h, v->slot, v->def->count * sizeof(float), 1);
}

/* The global step as this ps holds it now — the value of `global_step`, which every
 * applied step advances (async: also the pushes of workers that pulled just before
 * --steps was reached) — or -1 when global_step lives on another ps. Once every worker
 * is done it is the run's final global step: FINAL_STEP answers it to the chief (for its
 * evaluation, checkpoint and statistics), the statistics line reports it as
 * "global_step", and the launcher's summary takes it over the chief's line. */
long long ps_global_step(const ps_server *ps)
{
    if (!ps->holds_step) return -1;
    for (int i = 0; i < ps->cat.n; i++) {
        const ps_var *v = &ps->vars[i];
        if (v->def->ps == ps->index && !v->def->trainable) return (long long)ps_var_version(ps, v);
    }
    return -1;
}

/* FINAL_STEP: answered (with the global step) once every worker but the asking one is
 * done or lost, so that no push can follow: the run's final global step. */
void ps_answer_final_step(ps_server *ps)
{
    int w = ps->final_waiter;
    if (w < 0) return;
    for (int i = 0; i < ps->cfg->n_workers; i++)
        if (i != w && !ps->finished[i]) return;
    ps->final_waiter = -1;
    if (!ps->clients[w]) return;
    int64_t gs = ps_global_step(ps);
    if (gs < 0) gs = 0;
    net_frame h = {.type = MSG_FINAL_STEP_RESP, .arg0 = gs};
    net_conn_send(ps->clients[w]->conn, h, NULL, 0, 0);
}

static void send_ack(ps_client *cl, uint32_t var, int64_t version, int status, int64_t staleness)
{
    if (!cl) return;
    net_frame h = {.type = MSG_PUSH_ACK, .id = var, .arg0 = version,
                      .arg1 = status | (staleness << 8)};
    net_conn_send(cl->conn, h, NULL, 0, 0);
}

static void global_step_advanced(ps_server *ps, int64_t gs)
{
    uint64_t now = dp_now_ns();
    if (!ps->gs_advances) ps->gs_first_ns = now;
    ps->gs_last_ns = now;
    ps->gs_advances++;
    if (ps->in) {
        evt_record e = rt_instr_record(ps->in, EVT_GLOBAL_STEP);
        e.step = gs;
        rt_instr_emit(ps->in, &e);
    }
}

/* APPLY or DROP of worker's gradient of v computed at its local step clock-1. */
static void emit_update(ps_server *ps, evt_kind kind, const ps_var *v, int worker, int64_t clock,
                        int64_t version, int64_t staleness)
{
    if (!ps->in || !v->def->trainable) return;
    evt_record e = rt_instr_record(ps->in, kind);
    e.peer_job = EVT_JOB_WORKER;
    e.peer = worker;
    e.var = rt_instr_var(ps->in, v->id);
    e.device = ps->device;
    e.step = version;
    e.bytes = (int64_t)(v->def->count * sizeof(float));
    e.value = (double)staleness;
    e.id = rt_instr_msg_id(clock - 1, v->id);
    rt_instr_emit(ps->in, &e);
}

void ps_ssp_release_waiters(ps_server *ps)
{
    int k = 0;
    for (int i = 0; i < ps->n_ssp_waiting; i++) {
        ssp_waiter w = ps->ssp_waiting[i];
        if (ssp_gate_may_start(ps->gate, w.step)) {
            net_frame h = {.type = MSG_SSP_GO, .arg0 = w.step, .arg1 = ssp_gate_min(ps->gate)};
            if (ps->clients[w.worker]) net_conn_send(ps->clients[w.worker]->conn, h, NULL, 0, 0);
        } else {
            ps->ssp_waiting[k++] = w;
        }
    }
    ps->n_ssp_waiting = k;
}

/* A push computed from a session the chief has since restored (it read a version ahead
 * of the variable's): dropped, not an error — its worker has not yet noticed the lost ps,
 * or pulled before the restore reached us. */
static void lost_session_push(ps_server *ps, ps_client *cl, const ps_var *v, const net_frame *h,
                              int64_t cur)
{
    if (v->def->trainable) ps->drops++;
    ps->lost_session_drops++;
    emit_update(ps, EVT_DROP, v, cl->worker, h->arg1, cur, 0);
    send_ack(cl, h->id, cur, ACK_DROPPED, 0);
}

/* Sync: tells c that a gradient it was told ACCUMULATED has been applied (or thrown
 * away by a restore). */
static void send_release(ps_client *c, uint32_t var, int64_t version)
{
    if (!c || !c->owed[var]) return;
    c->owed[var] = 0;
    net_frame rel = {.type = MSG_RELEASE, .id = var, .arg0 = version};
    net_conn_send(c->conn, rel, NULL, 0, 0);
}

/* The index of g's first NaN or Inf, or n: TensorFlow's check_numerics. An exponent of
 * all ones is either; the first pass only ORs the verdicts, in blocks of DP_VEC_BLOCK
 * (common/dp.h: vectorised; the plain loop was the ps's largest cost per push, 134 us for
 * the MLP's 100k floats; AVX2 where the CPU has it), the second finds the element when
 * there is one. */
DP_VEC_CLONES
static size_t first_nonfinite(const float *restrict g, size_t n)
{
    uint32_t acc[DP_VEC_BLOCK] = {0}, any = 0;
    size_t i = 0;
    for (; i + DP_VEC_BLOCK <= n; i += DP_VEC_BLOCK)
        for (size_t k = 0; k < DP_VEC_BLOCK; k++) {
            uint32_t u;
            memcpy(&u, &g[i + k], sizeof u);
            acc[k] |= (u & 0x7f800000u) == 0x7f800000u;
        }
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        any |= (u & 0x7f800000u) == 0x7f800000u;
    }
    for (size_t k = 0; k < DP_VEC_BLOCK; k++) any |= acc[k];
    if (!any) return n;
    for (i = 0; i < n; i++)
        if (!isfinite(g[i])) return i;
    return n;
}

/* A gradient holding NaN or Inf: refused (ACK_DROPPED), counted, logged with its sender
 * (at most once a second), an event — never applied. */
static void reject_push(ps_server *ps, ps_client *cl, const ps_var *v, const net_frame *h, size_t bad,
                        float x)
{
    ps->rejected++;
    int64_t cur = ps_var_version(ps, v);
    char what[160];
    snprintf(what, sizeof what, "%s at element %zu of %s's gradient", isnan(x) ? "NaN" : "Inf", bad, v->def->name);
    uint64_t now = dp_now_ns();
    if (now - ps->rejected_logged_ns >= 1000000000ull) {
        ps->rejected_logged_ns = now;
        dp_log(DP_LOG_WARN, ps->name, "rejected a gradient from worker %d (%s): %s; never applied (%llu so far)",
               cl->worker, net_conn_peer(cl->conn), what, (unsigned long long)ps->rejected);
    }
    if (ps->in) {
        evt_record e = rt_instr_record(ps->in, EVT_GRAD_REJECTED);
        e.peer_job = EVT_JOB_WORKER;
        e.peer = cl->worker;
        e.var = rt_instr_var(ps->in, v->id);
        e.device = ps->device;
        e.step = cur;
        e.value = (double)bad;
        e.str = rt_instr_str(ps->in, what);
        rt_instr_emit(ps->in, &e);
    }
    send_ack(cl, h->id, cur, ACK_DROPPED, 0);
}

/* Sync: the accumulator of v borrows none of the gradients held in connections' rings
 * any more (taken, or thrown away by a restore): every connection gets them back. */
static void release_held(ps_server *ps, ps_var *v)
{
    for (ps_client *c = ps->conns; c; c = c->next)
        if (c->held && c->held[v->id]) {
            net_conn_release(c->conn, c->held[v->id]);
            c->held[v->id] = NULL;
        }
}

void ps_handle_push(ps_server *ps, ps_client *cl, const net_frame *h, const float *g)
{
    ps_var *v = ps_local_var(ps, h->id);
    int64_t read = h->arg0;
    if (v->def->trainable) {
        size_t bad = first_nonfinite(g, v->def->count);
        if (bad < v->def->count) {
            reject_push(ps, cl, v, h, bad, g[bad]);
            return;
        }
    }
    if (ps->cfg->mode == MODE_SYNC) {
        int64_t cur = sync_acc_step(v->acc);
        if (read > cur && ps->restores) {
            lost_session_push(ps, cl, v, h, cur);
            return;
        }
        if (read > cur) {
            char msg[320];
            snprintf(msg, sizeof msg, "%s: push for step %lld of %s is ahead of step %lld",
                     ps->name, (long long)read, v->def->name, (long long)cur);
            net_conn_send_error(cl->conn, msg);
            return;
        }
        /* g is the worker's own buffer (on_header) unless the accumulator held its
         * gradient already: then it is dropped as a duplicate, never lent */
        int lent = g == v->lent[cl->worker] || g == cl->hold_now;
        int r = lent ? sync_acc_offer_borrowed(v->acc, cl->worker, read, g) : sync_acc_offer(v->acc, cl->worker, read, g);
        if (g == cl->hold_now && (r == SYNC_ACCUMULATED || r == SYNC_READY)) {
            cl->held[v->id] = g;   /* the ring's bytes stay until the take */
            cl->hold_now = NULL;
        }
        if (r == SYNC_STALE || r == SYNC_DUPLICATE) {
            if (v->def->trainable) ps->drops++;
            emit_update(ps, EVT_DROP, v, cl->worker, h->arg1, cur, cur - read);
            send_ack(cl, h->id, cur, ACK_DROPPED, cur - read);
            return;
        }
        v->clock[cl->worker] = h->arg1;
        if (sync_acc_count(v->acc) == 1) {
            v->wait_t0 = dp_now_ns();
            v->wait_reported = v->timeout_sent = 0;
        }
        if (r != SYNC_READY) {
            /* Accepted; the worker learns when the step completes (RELEASE). */
            send_ack(cl, h->id, cur, ACK_ACCUMULATED, 0);
            cl->owed[h->id] = 1;
            return;
        }
        int n = sync_acc_take(v->acc, v->mean, ps->released);
        release_held(ps, v);
        if (v->def->trainable) optim_apply(&ps->opt, v->data, v->slot, v->mean, v->def->count);
        int64_t now = sync_acc_step(v->acc);
        if (v->def->trainable) ps->applies += (uint64_t)n;
        for (int i = 0; i < n; i++) {
            int w = ps->released[i];
            if (v->def->trainable) stale_stats_add(&ps->stale, 0);
            emit_update(ps, EVT_APPLY, v, w, v->clock[w], now, 0);
            ps_client *c = ps->clients[w];
            if (c == cl) {
                send_ack(c, h->id, now, ACK_APPLIED, 0);
            } else {
                send_release(c, h->id, now);
            }
        }
        if (!v->def->trainable) global_step_advanced(ps, now);
        return;
    }
    if (read > v->av.version && ps->restores) {
        lost_session_push(ps, cl, v, h, v->av.version);
        return;
    }
    int64_t staleness = async_apply(&v->av, read);
    if (staleness < 0) staleness = 0;
    if (v->def->trainable) optim_apply(&ps->opt, v->data, v->slot, g, v->def->count);
    if (v->def->trainable) {
        ps->applies++;
        stale_stats_add(&ps->stale, staleness);
        emit_update(ps, EVT_APPLY, v, cl->worker, h->arg1, v->av.version, staleness);
    }
    send_ack(cl, h->id, v->av.version, ACK_APPLIED, staleness);
    if (!v->def->trainable) {
        global_step_advanced(ps, v->av.version);
        if (ps->gate) {
            ssp_gate_clock(ps->gate, cl->worker, h->arg1);
            ps_ssp_release_waiters(ps);
        }
    }
}

/* Sync, a restore: workers whose gradient of v was accumulated for the step being thrown
 * away are released, so that none waits for a step that will never complete. */
static void release_pending(ps_server *ps, ps_var *v, int64_t gs)
{
    for (int w = 0; w < ps->cfg->n_workers; w++)
        if (sync_acc_holds(v->acc, w)) send_release(ps->clients[w], (uint32_t)v->id, gs);
}

/* INIT: the chief's initial value (ignored once initialised: a restarted chief sends it
 * again), or with INIT_RESTORE its restore of the session after a ps was lost: the value
 * (staged in the client's buffer, so no pull sees it half written), the version and the
 * step's pending sync gradients start again from step arg0. */
void ps_handle_init(ps_server *ps, ps_client *cl, const net_frame *h, const void *payload)
{
    ps_var *v = ps_local_var(ps, h->id);
    int restore = (h->arg1 & INIT_RESTORE) != 0, taken = !v->initialised || restore;
    if (taken) {
        if (restore) {
            if (v->def->count) memcpy(v->data, payload, v->def->count * sizeof(float));
            if ((h->arg1 & INIT_FRESH_SLOT) && v->slot) optim_slot_init(&ps->opt, v->slot, v->def->count);
            if (v->initialised && v->acc) release_pending(ps, v, h->arg0);
            if (PROTO_SESSION(h->arg1) > v->session) v->session = PROTO_SESSION(h->arg1);
            if (v->id == first_local_var(ps)) {
                ps->restores++;
                dp_log(DP_LOG_INFO, ps->name, "the chief restores the session: variables back at global step %lld",
                       (long long)h->arg0);
            }
        }
        v->initialised = 1;
        if (ps->cfg->mode == MODE_SYNC) {
            release_held(ps, v);
            sync_acc_free(v->acc);
            int r = ps->cfg->n_workers - ps->cfg->backup_workers;
            v->acc = sync_acc_new(ps->cfg->n_workers, r, v->def->count, h->arg0);
            v->wait_reported = v->timeout_sent = 0;
        } else {
            v->av.version = h->arg0;
        }
        if (restore && !v->def->trainable) global_step_advanced(ps, h->arg0);
        for (int i = 0; i < v->n_waiting; i++) {
            ps_client *c = ps->clients[v->waiting_pulls[i]];
            if (c) ps_send_pull(ps, c, v);
        }
        v->n_waiting = 0;
    }
    net_frame ok = {.type = MSG_INIT_OK, .id = h->id, .arg0 = taken};
    net_conn_send(cl->conn, ok, NULL, 0, 0);
}
