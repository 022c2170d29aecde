/* ps.c — a parameter-server task: one libev loop serving every worker. It holds the
 * variables the placement gave it (and global_step when placed here), applies pushed
 * gradients with the optimizer under the configured update rule, answers pulls with a
 * snapshot of the variable, and defers answers that must wait (pulls of variables the
 * chief has not initialised yet; sync pushes until their step is complete; SSP starts
 * beyond the staleness bound). Single-threaded: only the loop touches this state. */
#include "runtime/task.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cluster/optim.h"
#include "cluster/update.h"
#include "cluster/vars.h"
#include "common/dp.h"
#include "net/auth.h"
#include "runtime/conn.h"
#include "runtime/instr.h"

/* The limits on connections that have not yet said an authenticated HELLO
 * (docs/security.md): dropped after PS_HANDSHAKE_S; any connection whose partly received
 * frame waits PS_FRAME_IDLE_S for its next byte is dropped; at most
 * PS_MAX_CONNS(workers) connections at once, the rest closed at accept. */
#define PS_HANDSHAKE_S 5.0
#define PS_FRAME_IDLE_S 30.0
#define PS_MAX_CONNS(workers) (4 * (workers) + 16)
#define PS_GUARD_S 0.25
#define PS_REFUSE_LOG_NS 1000000000ull

volatile int rt_stop_requested;

typedef struct ps_server ps_server;

typedef struct ps_var {
    const var_def *def;
    int id;              /* catalogue index */
    float *data;
    float *slot;
    float *mean;         /* sync: the mean gradient being applied */
    int initialised;
    int64_t session;     /* the restore its value comes from (0: the first INIT) */
    sync_acc *acc;       /* sync mode */
    async_var av;        /* async / ssp mode */
    int64_t *clock;      /* sync: per worker, the clock its pending gradient carried */
    int *waiting_pulls;  /* worker indices whose pull waits for INIT */
    int n_waiting;
    uint64_t wait_t0;    /* sync: when the current step's first gradient came in */
    int wait_reported;   /* sync: WAITING reports sent for this step (every 2 s) */
    int timeout_sent;    /* sync: the --barrier-timeout WAITING went out for this step */
} ps_var;

/* A connection's handshake: AUTH_HELLO, then AUTH_PROOF (with a secret), then HELLO. */
enum { PS_AUTH_WANT_HELLO, PS_AUTH_WANT_PROOF, PS_AUTH_DONE };

typedef struct ps_client {
    ps_server *ps;
    net_conn *conn;
    struct ps_client *prev, *next;   /* every connection, for the guard timer */
    uint64_t born_ns;
    int auth;            /* PS_AUTH_*: DONE from the start without a secret */
    auth_hs hs;
    uint64_t token;      /* the worker process's session token (HELLO; 0: none given) */
    int worker;          /* -1 until HELLO */
    float *grad;         /* receive buffer for pushes, sized for the largest local var;
                          * allocated at HELLO, never for a peer that has not said it */
    int done;
    uint8_t *owed;       /* sync, per variable: a gradient acknowledged ACCUMULATED on this
                          * connection and not yet RELEASEd (one pushed on an earlier
                          * connection of the same worker is released silently: this
                          * connection never heard of it) */
} ps_client;

typedef struct ssp_waiter { int worker; int64_t step; } ssp_waiter;

struct ps_server {
    struct ev_loop *loop;
    const rt_config *cfg;
    const cluster_spec *spec;
    int index;
    char name[64];
    var_catalog cat;
    ps_var *vars;        /* indexed by catalogue index; only local ones are used */
    size_t max_count;
    int lfd;
    ev_io accept_w;
    ev_signal sigint_w, sigterm_w;
    ev_timer stop_check;
    ev_timer wait_check; /* sync: tells workers held at the barrier whom they wait for */
    ps_client **clients; /* by worker index */
    int n_done;
    optim_conf opt;
    ssp_gate *gate;
    ssp_waiter *ssp_waiting;
    int n_ssp_waiting;
    int *released;       /* scratch: workers released by a sync take */
    int holds_step;      /* global_step lives here */
    int restores;        /* sessions the chief restored here after a ps was lost (INIT_RESTORE) */
    uint64_t lost_session_drops; /* pushes from before a restore (ahead of the variable), dropped */
    int final_waiter;    /* worker waiting for FINAL_STEP_RESP, or -1 */
    uint8_t *finished;   /* per worker: DONE, or lost after HELLO (for FINAL_STEP) */
    rt_instr *in;        /* NULL without a hub */
    uint32_t device;     /* this task's CPU device (string id) */
    auth_key key;        /* the run's secret; key.set == 0: no handshake */
    ps_client *conns;    /* every open connection */
    int n_conns, max_conns;
    ev_timer guard;      /* handshake and read timeouts */
    uint64_t refused, refused_logged, refused_log_ns;  /* connections over the cap */
    uint64_t auth_failures;
    /* statistics */
    uint64_t applies, drops, pulls;
    uint64_t rejected;   /* gradients holding NaN or Inf, never applied */
    uint64_t rejected_logged_ns;
    stale_stats stale;
    uint64_t gs_first_ns, gs_last_ns, gs_advances;
};

static ps_var *local_var(ps_server *ps, uint32_t id)
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

static int64_t var_version(const ps_server *ps, const ps_var *v)
{
    return ps->cfg->mode == MODE_SYNC ? sync_acc_step(v->acc) : v->av.version;
}

static void send_pull(ps_server *ps, ps_client *cl, ps_var *v)
{
    proto_header h = {.type = MSG_PULL_RESP, .var = (uint32_t)v->id, .arg0 = var_version(ps, v),
                      .arg1 = v->session};
    /* A snapshot: the variable may change before the frame is fully written. */
    net_conn_send(cl->conn, h, v->data, v->def->count * sizeof(float), 1);
    ps->pulls++;
}

/* A checkpoint's pull: the value, then its slot, queued in one loop turn so that both
 * are of the same version. */
static void send_pull_with_slot(ps_server *ps, ps_client *cl, ps_var *v)
{
    send_pull(ps, cl, v);
    proto_header h = {.type = MSG_SLOT_RESP, .var = (uint32_t)v->id, .arg0 = var_version(ps, v)};
    net_conn_send(cl->conn, h, v->slot, v->def->count * sizeof(float), 1);
}

/* The global step as this ps holds it now — the value of `global_step`, which every
 * applied step advances (async: also the pushes of workers that pulled just before
 * --steps was reached) — or -1 when global_step lives on another ps. Once every worker
 * is done it is the run's final global step: FINAL_STEP answers it to the chief (for its
 * evaluation, checkpoint and statistics), the statistics line reports it as
 * "global_step", and the launcher's summary takes it over the chief's line. */
static long long ps_global_step(const ps_server *ps)
{
    if (!ps->holds_step) return -1;
    for (int i = 0; i < ps->cat.n; i++) {
        const ps_var *v = &ps->vars[i];
        if (v->def->ps == ps->index && !v->def->trainable) return (long long)var_version(ps, v);
    }
    return -1;
}

/* FINAL_STEP: answered (with the global step) once every worker but the asking one is
 * done or lost, so that no push can follow: the run's final global step. */
static void answer_final_step(ps_server *ps)
{
    int w = ps->final_waiter;
    if (w < 0) return;
    for (int i = 0; i < ps->cfg->n_workers; i++)
        if (i != w && !ps->finished[i]) return;
    ps->final_waiter = -1;
    if (!ps->clients[w]) return;
    int64_t gs = ps_global_step(ps);
    if (gs < 0) gs = 0;
    proto_header h = {.type = MSG_FINAL_STEP_RESP, .arg0 = gs};
    net_conn_send(ps->clients[w]->conn, h, NULL, 0, 0);
}

static void send_ack(ps_client *cl, uint32_t var, int64_t version, int status, int64_t staleness)
{
    if (!cl) return;
    proto_header h = {.type = MSG_PUSH_ACK, .var = var, .arg0 = version,
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

static void ssp_release_waiters(ps_server *ps)
{
    int k = 0;
    for (int i = 0; i < ps->n_ssp_waiting; i++) {
        ssp_waiter w = ps->ssp_waiting[i];
        if (ssp_gate_may_start(ps->gate, w.step)) {
            proto_header h = {.type = MSG_SSP_GO, .arg0 = w.step, .arg1 = ssp_gate_min(ps->gate)};
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
static void lost_session_push(ps_server *ps, ps_client *cl, const ps_var *v, const proto_header *h,
                              int64_t cur)
{
    if (v->def->trainable) ps->drops++;
    ps->lost_session_drops++;
    emit_update(ps, EVT_DROP, v, cl->worker, h->arg1, cur, 0);
    send_ack(cl, h->var, cur, ACK_DROPPED, 0);
}

/* Sync: tells c that a gradient it was told ACCUMULATED has been applied (or thrown
 * away by a restore). */
static void send_release(ps_client *c, uint32_t var, int64_t version)
{
    if (!c || !c->owed[var]) return;
    c->owed[var] = 0;
    proto_header rel = {.type = MSG_RELEASE, .var = var, .arg0 = version};
    net_conn_send(c->conn, rel, NULL, 0, 0);
}

/* The index of g's first NaN or Inf, or n: TensorFlow's check_numerics. An exponent of
 * all ones is either; the first pass only ORs the verdicts (vectorises), the second
 * finds the element when there is one. */
static size_t first_nonfinite(const float *g, size_t n)
{
    uint32_t any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        any |= (u & 0x7f800000u) == 0x7f800000u;
    }
    if (!any) return n;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(g[i])) return i;
    return n;
}

/* A gradient holding NaN or Inf: refused (ACK_DROPPED), counted, logged with its sender
 * (at most once a second), an event — never applied. */
static void reject_push(ps_server *ps, ps_client *cl, const ps_var *v, const proto_header *h, size_t bad,
                        float x)
{
    ps->rejected++;
    int64_t cur = var_version(ps, v);
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
    send_ack(cl, h->var, cur, ACK_DROPPED, 0);
}

static void handle_push(ps_server *ps, ps_client *cl, const proto_header *h, const float *g)
{
    ps_var *v = local_var(ps, h->var);
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
        int r = sync_acc_offer(v->acc, cl->worker, read, g);
        if (r == SYNC_STALE || r == SYNC_DUPLICATE) {
            if (v->def->trainable) ps->drops++;
            emit_update(ps, EVT_DROP, v, cl->worker, h->arg1, cur, cur - read);
            send_ack(cl, h->var, cur, ACK_DROPPED, cur - read);
            return;
        }
        v->clock[cl->worker] = h->arg1;
        if (sync_acc_count(v->acc) == 1) {
            v->wait_t0 = dp_now_ns();
            v->wait_reported = v->timeout_sent = 0;
        }
        if (r != SYNC_READY) {
            /* Accepted; the worker learns when the step completes (RELEASE). */
            send_ack(cl, h->var, cur, ACK_ACCUMULATED, 0);
            cl->owed[h->var] = 1;
            return;
        }
        int n = sync_acc_take(v->acc, v->mean, ps->released);
        if (v->def->trainable) optim_apply(&ps->opt, v->data, v->slot, v->mean, v->def->count);
        int64_t now = sync_acc_step(v->acc);
        if (v->def->trainable) ps->applies += (uint64_t)n;
        for (int i = 0; i < n; i++) {
            int w = ps->released[i];
            if (v->def->trainable) stale_stats_add(&ps->stale, 0);
            emit_update(ps, EVT_APPLY, v, w, v->clock[w], now, 0);
            ps_client *c = ps->clients[w];
            if (c == cl) {
                send_ack(c, h->var, now, ACK_APPLIED, 0);
            } else {
                send_release(c, h->var, now);
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
    send_ack(cl, h->var, v->av.version, ACK_APPLIED, staleness);
    if (!v->def->trainable) {
        global_step_advanced(ps, v->av.version);
        if (ps->gate) {
            ssp_gate_clock(ps->gate, cl->worker, h->arg1);
            ssp_release_waiters(ps);
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
static void handle_init(ps_server *ps, ps_client *cl, const proto_header *h, const void *payload)
{
    ps_var *v = local_var(ps, h->var);
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
            if (c) send_pull(ps, c, v);
        }
        v->n_waiting = 0;
    }
    proto_header ok = {.type = MSG_INIT_OK, .var = h->var, .arg0 = taken};
    net_conn_send(cl->conn, ok, NULL, 0, 0);
}

static void *on_header(net_conn *c, const proto_header *h, void *ctx, char *err, int *reject)
{
    DP_UNUSED(c);
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    /* Before an authenticated HELLO only the handshake's small frames are read (into
     * the connection's own buffer, at most PROTO_AUTH_BYTES): no tensor payload. */
    if (cl->worker < 0 && h->type != MSG_HELLO && h->type != MSG_AUTH_HELLO && h->type != MSG_AUTH_PROOF) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s of %u bytes before HELLO", proto_type_name(h->type), h->length);
        return NULL;
    }
    if (h->type != MSG_PUSH && h->type != MSG_INIT && h->type != MSG_INIT_SLOT) return NULL;
    ps_var *v = local_var(ps, h->var);
    if (!v) {
        *reject = 1;
        snprintf(err, DP_ERRLEN, "%s for variable id %u, which is not on %s", proto_type_name(h->type),
                 h->var, ps->name);
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
    /* A restore is staged in the client's buffer and copied in once whole. */
    if (h->arg1 & INIT_RESTORE) return cl->grad;
    if (h->type == MSG_INIT) return v->initialised ? NULL : v->data;
    if (h->type == MSG_INIT_SLOT) return v->initialised ? NULL : v->slot;
    return cl->grad;
}

/* A peer that failed the handshake: logged here with its address and why; it is told
 * only that authentication failed (nothing about what was expected) and dropped. */
static void auth_failed(ps_server *ps, ps_client *cl, const char *why, const char *told)
{
    ps->auth_failures++;
    dp_log(DP_LOG_WARN, ps->name, "authentication failed from %s: %s", net_conn_peer(cl->conn), why);
    net_conn_send_error(cl->conn, told ? told : "authentication failed");
}

/* The handshake (net/auth.h) before HELLO, when the ps has a secret. Returns 1 when the
 * frame was the handshake's (or ended the connection), 0 when it goes on to HELLO. */
static int handle_auth(ps_server *ps, ps_client *cl, const proto_header *h, const void *payload)
{
    int auth_frame = h->type == MSG_AUTH_HELLO || h->type == MSG_AUTH_PROOF;
    if (!ps->key.set) {
        if (!auth_frame) return 0;
        dp_log(DP_LOG_WARN, ps->name, "refused %s: it sent %s, but this ps has no secret", net_conn_peer(cl->conn),
               proto_type_name(h->type));
        net_conn_send_error(cl->conn, "this ps has no secret: give every task the same secret "
                            "($DOWNPOUR_SECRET or --secret-file), or none");
        return 1;
    }
    if (cl->auth == PS_AUTH_DONE) {
        if (!auth_frame) return 0;
        auth_failed(ps, cl, "a second handshake", NULL);
        return 1;
    }
    if (cl->auth == PS_AUTH_WANT_HELLO) {
        if (h->type != MSG_AUTH_HELLO) {
            auth_failed(ps, cl, h->type == MSG_HELLO ? "HELLO without a handshake (the peer has no secret?)"
                                                     : "no handshake", 
                        "authentication required: this ps has a secret ($DOWNPOUR_SECRET or --secret-file)");
            return 1;
        }
        uint8_t nonce[AUTH_NONCE_BYTES];
        auth_hs_start(&cl->hs, AUTH_SERVER, AUTH_CTX_PS, nonce);
        auth_hs_peer_nonce(&cl->hs, payload);
        proto_header ch = {.type = MSG_AUTH_CHALLENGE};
        net_conn_send(cl->conn, ch, nonce, sizeof nonce, 1);
        cl->auth = PS_AUTH_WANT_PROOF;
        return 1;
    }
    if (h->type != MSG_AUTH_PROOF) {
        auth_failed(ps, cl, "no proof after the challenge", NULL);
        return 1;
    }
    if (auth_hs_verify(&cl->hs, &ps->key, payload) != 0) {
        auth_failed(ps, cl, "wrong proof (a different secret, or a replayed handshake)", NULL);
        return 1;
    }
    uint8_t proof[AUTH_PROOF_BYTES];
    auth_hs_prove(&cl->hs, &ps->key, proof);
    auth_hs_clear(&cl->hs);
    proto_header ok = {.type = MSG_AUTH_OK};
    net_conn_send(cl->conn, ok, proof, sizeof proof, 1);
    cl->auth = PS_AUTH_DONE;
    return 1;
}

/* HELLO: the worker takes its slot. A slot held by a live connection is given over only
 * to the same worker process (its session token): a worker that lost another ps
 * reconnects, and its HELLO may come before we see its old connection close. Any other
 * claim is refused and the holder left alone. */
static void handle_hello(ps_server *ps, ps_client *cl, const proto_header *h, const void *payload)
{
    char msg[256];
    uint64_t want = rt_config_hash(ps->cfg);
    uint64_t token = 0;
    if (h->length == PROTO_TOKEN_BYTES)
        for (int i = 7; i >= 0; i--) token = token << 8 | ((const uint8_t *)payload)[i];
    const char *peer = net_conn_peer(cl->conn);
    if (h->var >= (uint32_t)ps->cfg->n_workers) {
        snprintf(msg, sizeof msg, "%s: worker index %u outside 0..%d", ps->name, h->var,
                 ps->cfg->n_workers - 1);
    } else if ((uint64_t)h->arg0 != want) {
        /* The values only in our own log: a peer learns nothing it could copy. */
        dp_log(DP_LOG_WARN, ps->name, "refused worker %u from %s: config hash %016llx, this ps has %016llx",
               h->var, peer, (unsigned long long)h->arg0, (unsigned long long)want);
        snprintf(msg, sizeof msg, "%s: worker %u runs with different training flags", ps->name, h->var);
        net_conn_send_error(cl->conn, msg);
        return;
    } else if (cl->worker >= 0 && cl->worker != (int)h->var) {
        snprintf(msg, sizeof msg, "%s: HELLO as worker %u on the connection of worker %d", ps->name, h->var,
                 cl->worker);
    } else {
        ps_client *old = ps->clients[h->var];
        if (old && old != cl) {
            if (!token || token != old->token) {
                dp_log(DP_LOG_WARN, ps->name, "refused a claim of worker %u's slot from %s: held by a live "
                       "connection from %s (another process)", h->var, peer, net_conn_peer(old->conn));
                snprintf(msg, sizeof msg, "%s: worker %u's slot is taken by a live connection", ps->name, h->var);
                net_conn_send_error(cl->conn, msg);
                return;
            }
            dp_log(DP_LOG_INFO, ps->name, "worker %u reconnects: closing its previous connection", h->var);
            net_conn_close(old->conn, "replaced by a new connection of the same worker");
            ps->clients[h->var] = NULL;
        }
        if (ps->gate && h->arg1 >= 0) ssp_gate_rejoin(ps->gate, (int)h->var, h->arg1);
        cl->worker = (int)h->var;
        cl->token = token;
        if (!cl->grad) cl->grad = xmalloc((ps->max_count ? ps->max_count : 1) * sizeof(float));
        if (!cl->owed) cl->owed = xcalloc((size_t)ps->cat.n, 1);
        ps->clients[cl->worker] = cl;
        ps->finished[cl->worker] = 0;   /* a restarted worker trains again */
        proto_header ok = {.type = MSG_HELLO_OK, .var = (uint32_t)ps->index, .arg0 = (int64_t)want};
        net_conn_send(cl->conn, ok, NULL, 0, 0);
        return;
    }
    dp_log(DP_LOG_WARN, ps->name, "refused %s: %s", peer, msg);
    net_conn_send_error(cl->conn, msg);
}

static void on_frame(net_conn *c, const proto_header *h, void *payload, void *ctx)
{
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    char msg[256];
    if (handle_auth(ps, cl, h, payload)) return;
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
        if (!local_var(ps, h->var)) break;   /* an empty frame skips on_header's check */
        handle_init(ps, cl, h, payload);
        return;
    case MSG_INIT_SLOT: {
        /* The payload went into the slot (on_header) unless the variable was already
         * initialised, when it is ignored as INIT is. An empty frame skips on_header. */
        ps_var *v = local_var(ps, h->var);
        if (!v || !v->slot || !v->def->trainable) {
            snprintf(msg, sizeof msg, "%s: INIT_SLOT of %s, which keeps no optimizer slot (%s)", ps->name,
                     v ? v->def->name : "an unknown variable", optim_name(ps->cfg->optimizer));
            net_conn_send_error(c, msg);
            return;
        }
        if ((h->arg1 & INIT_RESTORE) && v->def->count)
            memcpy(v->slot, payload, v->def->count * sizeof(float));
        proto_header ok = {.type = MSG_INIT_OK, .var = h->var};
        net_conn_send(c, ok, NULL, 0, 0);
        return;
    }
    case MSG_FINAL_STEP:
        if (!ps->holds_step || ps->final_waiter >= 0) break;
        ps->final_waiter = cl->worker;
        /* The asker trains no more: it must not hold the others at the SSP bound. */
        if (ps->gate) {
            ssp_gate_retire(ps->gate, cl->worker);
            ssp_release_waiters(ps);
        }
        answer_final_step(ps);
        return;
    case MSG_PULL: {
        ps_var *v = local_var(ps, h->var);
        if (!v) break;
        if ((h->arg1 & PULL_WITH_SLOT) && (!v->slot || !v->def->trainable || !v->initialised)) {
            snprintf(msg, sizeof msg, "%s: PULL of %s's slot, which %s", ps->name, v->def->name,
                     v->initialised ? "does not exist" : "is not initialised");
            net_conn_send_error(c, msg);
            return;
        }
        if (h->arg1 & PULL_WITH_SLOT) {
            send_pull_with_slot(ps, cl, v);
            return;
        }
        /* Not initialised yet, or a reconnected worker waits for the chief's restore. */
        if (!v->initialised || PROTO_SESSION(h->arg1) > v->session) {
            int seen = 0;
            for (int i = 0; i < v->n_waiting; i++) seen |= v->waiting_pulls[i] == cl->worker;
            if (!seen) v->waiting_pulls[v->n_waiting++] = cl->worker;
            return;
        }
        send_pull(ps, cl, v);
        return;
    }
    case MSG_PUSH: {
        ps_var *v = local_var(ps, h->var);
        if (!v) break;                       /* an empty frame skips on_header's check */
        if (!v->initialised) {
            snprintf(msg, sizeof msg, "%s: push to %s before it was initialised", ps->name, v->def->name);
            net_conn_send_error(c, msg);
            return;
        }
        handle_push(ps, cl, h, payload);
        return;
    }
    case MSG_SSP_WAIT:
        if (!ps->gate) break;
        if (ssp_gate_may_start(ps->gate, h->arg0)) {
            proto_header go = {.type = MSG_SSP_GO, .arg0 = h->arg0, .arg1 = ssp_gate_min(ps->gate)};
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
                ssp_release_waiters(ps);
            }
            ps->finished[cl->worker] = 1;
            answer_final_step(ps);
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
             proto_type_name(h->type), h->var, cl->worker);
    dp_log(DP_LOG_WARN, ps->name, "%s", msg);
    net_conn_send_error(c, msg);
}

static void on_close(net_conn *c, const char *reason, void *ctx)
{
    DP_UNUSED(c);
    ps_client *cl = ctx;
    ps_server *ps = cl->ps;
    if (cl->worker >= 0 && ps->clients[cl->worker] == cl) {
        ps->clients[cl->worker] = NULL;
        if (!cl->done)
            dp_log(DP_LOG_WARN, ps->name, "lost /job:worker/replica:0/task:%d: %s", cl->worker, reason);
        /* A lost worker clocks no more: it must not hold the others at the SSP bound. */
        if (!cl->done && ps->gate) {
            ssp_gate_retire(ps->gate, cl->worker);
            ssp_release_waiters(ps);
        }
        /* A lost worker pushes no more: it no longer holds back a FINAL_STEP answer. */
        ps->finished[cl->worker] = 1;
        answer_final_step(ps);
    } else if (cl->worker < 0) {
        dp_log(DP_LOG_WARN, ps->name, "dropped connection from %s: %s", net_conn_peer(c), reason);
    }
    if (cl->prev) cl->prev->next = cl->next;
    else ps->conns = cl->next;
    if (cl->next) cl->next->prev = cl->prev;
    ps->n_conns--;
    auth_hs_clear(&cl->hs);
    free(cl->grad);
    free(cl->owed);
    free(cl);
}

static const net_handler ps_handler = {on_header, on_frame, on_close};

/* Connections over the cap are closed at once; they are counted, and logged at most
 * once a second. */
static void refuse_over_cap(ps_server *ps, int fd, const char *peer)
{
    close(fd);
    ps->refused++;
    uint64_t now = dp_now_ns();
    if (now - ps->refused_log_ns < PS_REFUSE_LOG_NS) return;
    dp_log(DP_LOG_WARN, ps->name, "refused %llu connection%s over the cap of %d (latest from %s)",
           (unsigned long long)(ps->refused - ps->refused_logged), ps->refused - ps->refused_logged == 1 ? "" : "s",
           ps->max_conns, peer);
    ps->refused_logged = ps->refused;
    ps->refused_log_ns = now;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(revents);
    ps_server *ps = dp_container_of(w, ps_server, accept_w);
    for (;;) {
        char peer[96];
        int fd = net_accept(ps->lfd, peer, sizeof peer);
        if (fd < 0) return;
        if (ps->n_conns >= ps->max_conns) {
            refuse_over_cap(ps, fd, peer);
            continue;
        }
        /* No buffers yet: those come with an authenticated HELLO. */
        ps_client *cl = xcalloc(1, sizeof *cl);
        cl->ps = ps;
        cl->worker = -1;
        cl->born_ns = dp_now_ns();
        cl->auth = ps->key.set ? PS_AUTH_WANT_HELLO : PS_AUTH_DONE;
        cl->next = ps->conns;
        if (ps->conns) ps->conns->prev = cl;
        ps->conns = cl;
        ps->n_conns++;
        cl->conn = net_conn_new(loop, fd, &ps_handler, cl, peer);
    }
}

/* Every PS_GUARD_S: drops a connection that has not said an authenticated HELLO within
 * PS_HANDSHAKE_S, and one whose partly received frame has waited PS_FRAME_IDLE_S for its
 * next byte (on_close logs each with its address). */
static void on_guard(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    ps_server *ps = dp_container_of(w, ps_server, guard);
    uint64_t now = dp_now_ns();
    for (ps_client *cl = ps->conns, *next; cl; cl = next) {
        next = cl->next;   /* closing frees cl */
        char why[96];
        if (cl->worker < 0 && now - cl->born_ns > (uint64_t)(PS_HANDSHAKE_S * 1e9)) {
            snprintf(why, sizeof why, "no %sHELLO within %.0f s", ps->key.set ? "authenticated " : "",
                     PS_HANDSHAKE_S);
            net_conn_close(cl->conn, why);
        } else if (net_conn_stalled_ns(cl->conn, now) > (uint64_t)(PS_FRAME_IDLE_S * 1e9)) {
            snprintf(why, sizeof why, "a frame stalled: no byte for %.0f s", PS_FRAME_IDLE_S);
            net_conn_close(cl->conn, why);
        }
    }
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
        proto_header h = {.type = MSG_WAITING, .var = (uint32_t)v->id, .arg0 = missing,
                          .arg1 = (int64_t)(waited * 1e3)};
        for (int k = 0; k < ps->cfg->n_workers; k++)
            if (ps->clients[k] && sync_acc_holds(v->acc, k)) net_conn_send(ps->clients[k]->conn, h, NULL, 0, 0);
    }
}

static void print_stats(const ps_server *ps)
{
    /* The least updated of our trainable variables (-1 when we hold none): in sync mode
     * every variable ends at the global step. */
    long long var_min = -1;
    for (int i = 0; i < ps->cat.n; i++) {
        const ps_var *v = &ps->vars[i];
        if (v->def->ps != ps->index || !v->def->trainable) continue;
        long long ver = (long long)var_version(ps, v);
        if (var_min < 0 || ver < var_min) var_min = ver;
    }
    double mean_step = ps->gs_advances > 1
        ? (double)(ps->gs_last_ns - ps->gs_first_ns) / 1e9 / (double)(ps->gs_advances - 1) : 0;
    printf("{\"task\":\"ps\",\"index\":%d,\"applies\":%llu,\"drops\":%llu,\"pulls\":%llu,"
           "\"stale_n\":%llu,\"stale_sum\":%llu,\"stale_max\":%lld,\"holds_step\":%d,"
           "\"gs_advances\":%llu,\"mean_step_s\":%.9f,\"events\":%llu,\"events_dropped\":%llu,"
           "\"var_step_min\":%lld,\"global_step\":%lld,\"rejected\":%llu,\"conns_refused\":%llu,"
           "\"auth_failures\":%llu}\n",
           ps->index, (unsigned long long)ps->applies, (unsigned long long)ps->drops,
           (unsigned long long)ps->pulls, (unsigned long long)ps->stale.n,
           (unsigned long long)ps->stale.sum, (long long)ps->stale.max, ps->holds_step,
           (unsigned long long)ps->gs_advances, mean_step, (unsigned long long)rt_instr_sent(ps->in),
           (unsigned long long)rt_instr_dropped(ps->in), var_min, ps_global_step(ps),
           (unsigned long long)ps->rejected, (unsigned long long)ps->refused,
           (unsigned long long)ps->auth_failures);
    fflush(stdout);
}

int ps_run(const rt_config *cfg, const cluster_spec *spec, int index, char *err)
{
    ps_server ps;
    memset(&ps, 0, sizeof ps);
    ps.cfg = cfg;
    ps.spec = spec;
    ps.index = index;
    ps.lfd = -1;
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
        if (cfg->mode == MODE_SYNC) v->acc = sync_acc_new(cfg->n_workers, r, d->count, 0);
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
    ps.max_conns = PS_MAX_CONNS(cfg->n_workers);
    ps.lfd = net_listen_inherited(me->host, me->port, err);
    if (ps.lfd < 0) {
        rc = ps.lfd;
        goto fail;
    }
    signal(SIGPIPE, SIG_IGN);
    ps.loop = ev_loop_new(EVFLAG_AUTO);
    ev_io_init(&ps.accept_w, on_accept, ps.lfd, EV_READ);
    ev_io_start(ps.loop, &ps.accept_w);
    ev_signal_init(&ps.sigint_w, on_signal, SIGINT);
    ev_signal_init(&ps.sigterm_w, on_signal, SIGTERM);
    ev_signal_start(ps.loop, &ps.sigint_w);
    ev_signal_start(ps.loop, &ps.sigterm_w);
    ev_timer_init(&ps.stop_check, on_stop_check, 0.01, 0.01);
    ev_timer_start(ps.loop, &ps.stop_check);
    ev_timer_init(&ps.guard, on_guard, PS_GUARD_S, PS_GUARD_S);
    ev_timer_start(ps.loop, &ps.guard);
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
    ev_run(ps.loop, 0);
    if (ps.in) {
        evt_record e = rt_instr_record(ps.in, EVT_TASK_STOP);
        rt_instr_emit(ps.in, &e);
    }
    print_stats(&ps);
    if (rt_stop_requested && ps.n_done < cfg->n_workers)
        dp_log(DP_LOG_INFO, ps.name, "stopped by signal");
    /* Close the remaining connections: their on_close frees the clients. */
    while (ps.conns) net_conn_close(ps.conns->conn, "ps shutting down");
    ev_loop_destroy(ps.loop);
    rt_instr_free(ps.in);
    rc = DP_OK;
fail:
    if (ps.lfd >= 0) close(ps.lfd);
    if (ps.vars) {
        for (int i = 0; i < ps.cat.n; i++) {
            free(ps.vars[i].data);
            free(ps.vars[i].slot);
            free(ps.vars[i].mean);
            free(ps.vars[i].waiting_pulls);
            free(ps.vars[i].clock);
            sync_acc_free(ps.vars[i].acc);
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
