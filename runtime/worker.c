/* worker.c — a worker task: connect to every ps, then loop { [ssp: wait for the bound]
 * pull every variable (all ps in parallel), stop when the global step has reached
 * --steps, compute loss and gradients on its batch, push every gradient (all ps in
 * parallel) and wait for the acknowledgements (in sync mode that wait is the barrier) }.
 * With --pace T a step that took less than T from its pull to the end of its compute
 * waits out the rest there, before the push, shown as its own phase (PACED_BEGIN/END).
 * Worker 0 is the chief: it initialises or restores the variables, evaluates on the
 * test set and writes checkpoints. The worker's libev loop runs only while it waits for
 * answers; pulled tensors are read straight into the parameter buffers. Talking to the
 * ps tasks (connect, pull, push, barrier, SSP gate) is worker_net.c. */
#include "runtime/task.h"
#include "runtime/worker_internal.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "cluster/vars.h"
#include "common/dp.h"
#include "runtime/ckpt.h"
#include "net/conn.h"
#include "net/sock.h"
#include "runtime/data.h"
#include "runtime/instr.h"
#include "runtime/nn.h"
#include "runtime/towers.h"

float *wk_var_slot(const var_def *d, float *const *tensors)
{
    return tensors[d->base_index] + (size_t)d->row_offset * (size_t)d->cols;
}

void wk_fail(worker *wk, const char *msg)
{
    if (wk->failed) return;
    wk->failed = 1;
    size_t n = strlen(msg);
    if (n >= sizeof wk->fail_msg) n = sizeof wk->fail_msg - 1;
    memcpy(wk->fail_msg, msg, n);
    wk->fail_msg[n] = 0;
}

/* PULL_BEGIN/END, PUSH_BEGIN/END of variable v (END events carry the duration). */
void wk_emit_transfer(worker *wk, evt_kind kind, int v, double value)
{
    wk_emit_transfer_at(wk, kind, v, value, wk->local);
}

void wk_emit_transfer_at(worker *wk, evt_kind kind, int v, double value, int64_t step)
{
    if (!wk->in) return;
    const var_def *d = &wk->cat.v[v];
    /* global_step's "push" is the step token, not a gradient: no PUSH events. */
    if (!d->trainable && (kind == EVT_PUSH_BEGIN || kind == EVT_PUSH_END)) return;
    evt_record e = rt_instr_record(wk->in, kind);
    e.peer_job = EVT_JOB_PS;
    e.peer = d->ps;
    e.var = rt_instr_var(wk->in, v);
    e.bytes = (int64_t)(d->count * sizeof(float));
    e.step = step;
    e.id = rt_instr_msg_id(step, v);
    e.value = value;
    /* a prefetch's pull of v runs while v's push goes, and (lazy acks) a push of v while
     * the last step's is unacknowledged: each has its own start */
    int push = kind == EVT_PUSH_BEGIN || kind == EVT_PUSH_END;
    int64_t *begin = &wk->t_begin[push ? (1 + (step & 1)) * wk->cat.n + v : v];
    if (kind == EVT_PULL_BEGIN || kind == EVT_PUSH_BEGIN) *begin = e.t;
    else e.dur = e.t - *begin;
    rt_instr_emit(wk->in, &e);
}

/* An event about this worker's step (compute, barrier, ssp, step end, eval). */
void wk_emit_step(worker *wk, evt_kind kind, int64_t t, int64_t dur, double value, double value2)
{
    if (!wk->in) return;
    evt_record e = rt_instr_record(wk->in, kind);
    if (t) e.t = t;
    e.device = wk->device;
    e.step = wk->local;
    e.dur = dur;
    e.value = value;
    e.value2 = value2;
    rt_instr_emit(wk->in, &e);
}

/* The checkpoint's tensors: the model's, then (optimizer with slots) each one's slot
 * under TensorFlow's name. Fills t (room for 2 * n_tensors); returns their count. */
static int tensors_of(worker *wk, ckpt_tensor *t)
{
    int n = 0;
    for (int i = 0; i < wk->n_tensors; i++)
        t[n++] = (ckpt_tensor){nn_tensor_name(wk->net, i), wk->params[i], nn_tensor_size(wk->net, i)};
    for (int i = 0; i < wk->n_tensors && wk->slots[0]; i++)
        t[n++] = (ckpt_tensor){wk->slot_names[i], wk->slots[i], nn_tensor_size(wk->net, i)};
    return n;
}

/* Chief: writes the pulled parameters (and slots) as the checkpoint of global step gs,
 * logs it and emits CHECKPOINT_WRITE. Returns 0 or a dp_err with err filled. */
static int save_checkpoint(worker *wk, int64_t gs, char *path, char *err)
{
    ckpt_tensor t[16];
    int n = tensors_of(wk, t);
    int rc = ckpt_save(wk->cfg->checkpoint_dir, gs, t, n, path, err);
    if (rc) return rc;
    wk->ckpt_step = gs;
    wk->ckpt_ns = dp_now_ns();
    dp_log(DP_LOG_INFO, wk->name, "saved checkpoint %s", path);
    rt_instr_checkpoint(wk->in, EVT_CHECKPOINT_WRITE, path, gs);
    return DP_OK;
}

/* The chief: is a periodic checkpoint due at the global step just read (ckpt_due)? Sync:
 * only when every variable read is of that step (with backup workers the others may have
 * moved a variable on between our pulls: the caller checks). */
static int checkpoint_due(const worker *wk)
{
    const rt_config *cfg = wk->cfg;
    if (!wk->chief || !cfg->checkpoint_dir[0] || wk->gs >= cfg->steps) return 0;
    return ckpt_due(wk->gs, wk->ckpt_step, wk->ckpt_ns, dp_now_ns(), cfg->save_ckpt_steps, cfg->save_ckpt_secs);
}

static int versions_at_step(const worker *wk)
{
    if (wk->cfg->mode != MODE_SYNC) return 1;
    for (int v = 0; v < wk->cat.n; v++)
        if (wk->cat.v[v].trainable && wk->version[v] != wk->gs) return 0;
    return 1;
}

/* Chief, end of training: asks global_step's ps for the final step (answered once every
 * other worker is done, so no push can follow), then pulls the final variables (and
 * slots, for the checkpoint): the evaluation, the checkpoint and the statistics carry
 * the ps's final global step, not the last one the chief read. */
static int final_pull(worker *wk)
{
    net_frame h = {.type = MSG_FINAL_STEP};
    wk_send(wk, wk->cat.v[wk->step_var].ps, h, NULL, 0);
    /* A worker that died before it joined is never done nor lost to the ps: the answer
     * may not come. Then the chief goes on from its own last read. */
    int rc = wk_wait_for(wk, FINAL_STEP_WAIT_S);
    if (rc == DP_ETIMEDOUT && !wk->timed_out) {
        dp_log(DP_LOG_WARN, wk->name, "the ps did not report the final global step within %g s (a worker "
               "that never joined?): finishing from global step %lld", FINAL_STEP_WAIT_S, (long long)wk->gs);
        wk->final_abandoned = 1;
        wk->outstanding--;
        rc = DP_OK;
    }
    if (rc) return rc;
    return wk_pull_all(wk, wk->cfg->checkpoint_dir[0] != 0);
}

/* TASK_START and DEVICE(s); the chief also describes the model (variables and their
 * placement); every worker announces the ops of its own graph on its own devices (the
 * log_device_placement lines). */
static void announce(worker *wk)
{
    rt_instr *in = wk->in;
    if (!in) return;
    wk->device = rt_instr_cpu(in, EVT_JOB_WORKER, wk->index);
    evt_record e = rt_instr_record(in, EVT_TASK_START);
    e.str = rt_instr_str(in, wk->spec->workers[wk->index].host);
    e.bytes = getpid();
    rt_instr_emit(in, &e);
    for (int d = 0; d < (wk->devs ? dev_count(wk->devs) : 1); d++) {
        e = rt_instr_record(in, EVT_DEVICE);
        e.device = wk->devs ? rt_instr_str(in, dev_name(wk->devs, d)) : wk->device;
        rt_instr_emit(in, &e);
    }
    if (wk->chief) {
        for (int v = 0; v < wk->cat.n; v++) {
            const var_def *d = &wk->cat.v[v];
            rt_instr_define_var(in, v, d);
            e = rt_instr_record(in, EVT_VAR_PLACE);
            e.var = rt_instr_var(in, v);
            e.peer_job = EVT_JOB_PS;
            e.peer = d->ps;
            e.device = rt_instr_cpu(in, EVT_JOB_PS, d->ps);
            rt_instr_emit(in, &e);
        }
    }
    if (wk->tw) {
        tw_announce(wk->tw);
        return;
    }
    int parts = catalog_partitioned(&wk->cat);
    for (int op = 0; op < GOP_COUNT; op++) {
        if (!graph_op_in((graph_op)op, wk->cat.model, parts)) continue;
        e = rt_instr_record(in, EVT_OP_PLACE);
        e.var = rt_instr_str(in, graph_op_name((graph_op)op));
        e.str = rt_instr_str(in, graph_op_type((graph_op)op));
        e.device = wk->device;
        rt_instr_emit(in, &e);
    }
}

/* --log-device-placement: what this worker's TensorFlow would print, in one write so
 * that the workers' blocks never interleave. */
static void log_placement(worker *wk)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return;
    if (!wk->tw) {
        catalog_log_placement(f, &wk->cat, wk->index);
    } else {
        dev_log_mapping(f, wk->devs);
        catalog_log_vars(f, &wk->cat);
        tw_log_ops(f, wk->tw);
    }
    fclose(f);
    fwrite(buf, 1, len, stderr);
    fflush(stderr);
    free(buf);
}

/* --worker-devices cpu:N (N > 1) or gpu:N: this worker's devices and one tower on each. */
static int open_devices(worker *wk, char *err)
{
    const rt_config *cfg = wk->cfg;
    if (!cfg->worker_dev_gpu && cfg->worker_dev_n <= 1) {
        if (!cfg->device_for[0]) return DP_OK;
        /* one device: the rules move nothing, but they are checked as a tower's would be */
        dev_set *one = dev_set_new("worker", wk->index, 1, 0, err);
        if (!one) return DP_EINVAL;
        int rc = tw_check_placement(cfg, one, err);
        dev_set_free(one);
        return rc;
    }
    if (cfg->worker_dev_gpu) {
        const char *why = NULL;
        int have = gpu_device_count(&why);
        if (have < cfg->worker_dev_n)
            return dp_fail(err, DP_EINVAL, "--worker-devices %s: this machine has %d CUDA device%s%s%s",
                           cfg->worker_devices, have, have == 1 ? "" : "s", why ? " (" : "", why ? why : "");
    }
    wk->devs = dev_set_new("worker", wk->index, cfg->worker_dev_gpu ? 1 : cfg->worker_dev_n,
                           cfg->worker_dev_gpu ? cfg->worker_dev_n : 0, err);
    if (!wk->devs) return DP_EINVAL;
    wk->tw = tw_new(cfg, wk->devs, RT_STRATEGY_TOWERS, wk->in, err);
    return wk->tw ? DP_OK : DP_EINVAL;
}

/* Chief: evaluates the pulled parameters on the test set, logs and emits EVAL. The set
 * is made floats a batch at a time: the whole set's floats (31 MB for Fashion-MNIST,
 * page by page on the first evaluation) cost the first evaluation about 90 ms more than
 * the later ones, which in sync every worker waited out at the barrier. */
static double evaluate(worker *wk, dataset *test, double *loss, const char *what)
{
    uint64_t t0 = dp_now_ns();
    double acc = nn_evaluate_rows(wk->eval_net, wk->params, dataset_rows_fn, test, test->y, test->n, loss);
    int64_t took = (int64_t)(dp_now_ns() - t0);
    dp_log(DP_LOG_INFO, wk->name, "%s at global step %lld: accuracy %.4f, loss %.4f", what,
           (long long)wk->gs, acc, *loss);
    if (wk->in) {
        evt_record e = rt_instr_record(wk->in, EVT_EVAL);
        e.step = wk->gs;
        e.value = acc;
        e.value2 = *loss;
        e.dur = took;
        rt_instr_emit(wk->in, &e);
    }
    return acc;
}

/* Chief: restore from the latest checkpoint or initialise from the seed, then send every
 * variable to its ps. `restore`: the session is restored after a lost ps — every
 * variable on every ps is overwritten (INIT_RESTORE), as TensorFlow's chief restores the
 * latest checkpoint when it recreates its session; without a checkpoint, the seed's
 * values at step 0 (and fresh optimizer slots). */
static int chief_init(worker *wk, int restore, char *err)
{
    int64_t gs_lost = wk->gs;
    int64_t gs0 = 0;
    ckpt_tensor t[16];
    int restored = 0;
    char path[1024] = "";
    if (wk->cfg->checkpoint_dir[0]) {
        int rc = ckpt_latest(wk->cfg->checkpoint_dir, path, err);
        if (rc < 0) return rc;
        if (rc == 1) {
            int n = tensors_of(wk, t);
            rc = ckpt_load(path, &gs0, t, n, err);
            if (rc) return rc;
            restored = 1;
        }
    }
    if (!restored) nn_init_params(wk->net, wk->params, (uint64_t)wk->cfg->seed);
    if (restore)
        dp_log(DP_LOG_WARN, wk->name, "restoring the session on every ps from %s: global step %lld -> %lld "
               "(%lld steps lost)", restored ? "the last checkpoint" : "the initial values (no checkpoint)",
               (long long)gs_lost, (long long)gs0, (long long)(gs_lost > gs0 ? gs_lost - gs0 : 0));
    wk->ckpt_step = gs0;
    wk->ckpt_ns = dp_now_ns();
    /* A restore starts the session after the newest we have seen. */
    int64_t session = restore ? wk->session + 1 : 0;
    int64_t flags = (restore ? INIT_RESTORE | (restored ? 0 : INIT_FRESH_SLOT) : 0) | session << PROTO_SESSION_SHIFT;
    for (int v = 0; v < wk->cat.n; v++) {
        const var_def *d = &wk->cat.v[v];
        /* The restored optimizer slot goes first: the variable's INIT makes it live. */
        if (restored && d->trainable && wk->slots[d->base_index]) {
            net_frame hs = {.type = MSG_INIT_SLOT, .id = (uint32_t)v, .arg1 = flags};
            wk_send(wk, d->ps, hs, d->count ? wk_var_slot(d, wk->slots) : NULL, d->count * sizeof(float));
        }
        net_frame h = {.type = MSG_INIT, .id = (uint32_t)v, .arg0 = gs0, .arg1 = flags};
        wk_send(wk, d->ps, h, d->count ? wk_var_slot(d, wk->params) : NULL, d->count * sizeof(float));
    }
    wk->inits_taken = 0;
    int rc = wk_wait_all(wk);
    if (rc == WK_PS_LOST) return rc;
    if (rc) return dp_fail(err, DP_EPROTO, "%s", wk->failed ? wk->fail_msg : "stopped");
    /* A restarted chief finds the variables on the ps tasks: nothing was restored. */
    if (restored && wk->inits_taken) {
        dp_log(DP_LOG_INFO, wk->name, "restored %s (global step %lld)", path, (long long)gs0);
        rt_instr_checkpoint(wk->in, EVT_CHECKPOINT_RESTORE, path, gs0);
    } else if (restored) {
        dp_log(DP_LOG_INFO, wk->name, "the ps tasks hold the variables already (a restarted chief): %s not "
               "restored", path);
    } else if (restore) {
        rt_instr_checkpoint(wk->in, EVT_CHECKPOINT_RESTORE, "", gs0);   /* no path: the initial values */
    }
    if (!wk->inits_taken) return DP_OK;
    wk->gs = gs0;
    if (restore) wk->session = wk->need_session = session;
    return DP_OK;
}

/* A ps was lost (WK_PS_LOST): reconnect to every ps and, the chief, restore the session
 * from the last checkpoint; the others wait (up to --connect-timeout) for that restore in
 * their next pull. Gives up after WK_MAX_FRUITLESS_REJOINS losses without a step. */
static int recover(worker *wk, char *err)
{
    for (;;) {
        if (++wk->fruitless > WK_MAX_FRUITLESS_REJOINS)
            return dp_fail(err, DP_ECLOSED, "%s: %s, %d times without a step completed: giving up", wk->name,
                           wk->lost_msg, WK_MAX_FRUITLESS_REJOINS);
        int rc = wk_rejoin(wk, err);
        if (rc == DP_OK && wk->chief) rc = chief_init(wk, 1, err);
        if (rc == WK_PS_LOST) continue;
        if (rc) return rc;
        if (!wk->chief) {
            /* Train on nothing older than the chief's restore. */
            wk->need_session = wk->session + 1;
            wk->pull_deadline_s = wk->cfg->connect_timeout;
        }
        return DP_OK;
    }
}

/* The error text of a wait that failed. */
static void wait_failed(worker *wk, int rc, char *err)
{
    if (rc == DP_EPROTO) dp_fail(err, rc, "%s: %s", wk->name, wk->fail_msg);
    else if (rc == DP_ECLOSED) dp_fail(err, rc, "%s: stopped by signal", wk->name);
    else if (rc == DP_ETIMEDOUT && !wk->timed_out)
        dp_fail(err, rc, "%s: reconnected after %s, but the session was not restored within %d s (is the chief "
                "running?)", wk->name, wk->lost_msg, wk->cfg->connect_timeout);
}

static double mean_recent_loss(const worker *wk)
{
    int n = wk->n_losses < LOSS_WINDOW ? wk->n_losses : LOSS_WINDOW;
    double s = 0;
    for (int i = 0; i < n; i++) s += wk->losses[i];
    return n ? s / n : NAN;
}

static uint64_t params_checksum(const worker *wk)
{
    uint64_t h = DP_FNV1A_INIT;
    for (int i = 0; i < wk->n_tensors; i++)
        h = dp_fnv1a(h, wk->params[i], nn_tensor_size(wk->net, i) * sizeof(float));
    return h;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !rt_stop_requested) {}
}

/* --pace: holds the step that began (its first pull) at step_t0 until pace_s has passed,
 * after its compute and before its push: the gradients are in hand and wait to be applied
 * (docs/runtime.md). A straggler slowed by `slow` (> 1) is held for slow x pace_s, so that
 * pacing never hides it. The wait is interrupted by a stop request, as every sleep here
 * is. Returns the ns waited (0: pacing off, or the step was already long enough: then no
 * event and no wait). */
static uint64_t pace_step(worker *wk, uint64_t step_t0, double slow)
{
    if (wk->cfg->pace_s <= 0) return 0;
    double pace_s = wk->cfg->pace_s * (slow > 1.0 ? slow : 1.0);
    uint64_t pace = (uint64_t)(pace_s * 1e9), w0 = dp_now_ns();
    if (w0 - step_t0 >= pace || rt_stop_requested) return 0;
    int64_t pt0 = rt_instr_now(wk->in);
    wk_emit_step(wk, EVT_PACED_BEGIN, pt0, 0, pace_s, 0);
    sleep_ns(step_t0 + pace - w0);
    uint64_t waited = dp_now_ns() - w0;
    /* The span in the trace is the very wait counted in paced_s. */
    wk_emit_step(wk, EVT_PACED_END, pt0 + (int64_t)waited, (int64_t)waited, 0, 0);
    return waited;
}

static int load_data(worker *wk, dataset *train, dataset *test, char *err)
{
    const rt_config *cfg = wk->cfg;
    if (!strcmp(cfg->data, "synthetic")) {
        dataset_synthetic(train, cfg->synthetic_n, (uint64_t)cfg->seed, 1);
        if (wk->chief) dataset_synthetic(test, 2000, (uint64_t)cfg->seed, 0);
        return DP_OK;
    }
    int rc = dataset_load(train, cfg->data, 1, err);
    if (rc == DP_OK && wk->chief) rc = dataset_load(test, cfg->data, 0, err);
    return rc;
}

/* --barrier-timeout passed: the chief (with --checkpoint-dir) saves the step the run
 * stopped at, when every variable is still at it, so that a resume redoes only that
 * step; the error goes to stderr (by the caller) and, as {"error": ...}, to the
 * launcher. */
static void barrier_timed_out(worker *wk, char *err)
{
    char path[1024] = "", why[DP_ERRLEN] = "";
    if (wk->chief && wk->cfg->checkpoint_dir[0]) {
        int64_t gs = wk->gs;
        wk->timed_out = 0;   /* the pulls are answered at once: no barrier */
        int rc = wk_pull_all(wk, 1);
        if (!rc && wk->gs == gs && versions_at_step(wk)) rc = save_checkpoint(wk, gs, path, why);
        else if (!rc) snprintf(why, sizeof why, "step %lld was partly applied", (long long)gs);
        if (rc || !path[0])
            dp_log(DP_LOG_WARN, wk->name, "no checkpoint at the barrier timeout: %s",
                   why[0] ? why : "pull failed");
        wk->timed_out = 1;
    }
    dp_fail(err, DP_ETIMEDOUT, "%s: %s%s%s", wk->name, wk->timeout_msg, path[0] ? "; saved " : "", path);
    json_t *o = json_pack("{s:s, s:i, s:s, s:I}", "task", "worker", "index", wk->index, "error",
                          wk->timeout_msg, "global_step", (json_int_t)wk->gs);
    if (path[0]) json_object_set_new(o, "checkpoint", json_string(path));
    char *line = json_dumps(o, JSON_COMPACT);
    printf("%s\n", line);
    fflush(stdout);
    free(line);
    json_decref(o);
}

/* The batch of `step` for this worker into idx, bx, by; returns step. */
static int64_t gather_batch(batch_order *order, const dataset *train, int index, int64_t step, int batch,
                            int *idx, float *bx, uint8_t *by)
{
    batch_order_indices(order, index, step, idx);
    dataset_gather(train, idx, batch, bx, by);
    return step;
}

int worker_run(const rt_config *cfg, const cluster_spec *spec, int index, char *err)
{
    worker wk_, *wk = &wk_;
    memset(wk, 0, sizeof *wk);
    dataset train = {0}, test = {0};
    batch_order order = {0};
    int *idx = NULL, *idx_next = NULL;
    float *bx = NULL;
    uint8_t *by = NULL;
    wk->cfg = cfg;
    wk->spec = spec;
    wk->index = index;
    wk->chief = index == 0;
    snprintf(wk->name, sizeof wk->name, "Worker %d", index);
    signal(SIGPIPE, SIG_IGN);
    wk->loop = ev_loop_new(EVFLAG_AUTO);
    int rc = catalog_build(&wk->cat, cfg->model, cfg->hidden, cfg->partition, err);
    if (rc) goto out;
    rc = catalog_place(&wk->cat, spec->n_ps, cfg->placement, err);
    if (rc) goto out;
    /* An unwritable --checkpoint-dir fails now, not after training. */
    if (wk->chief && cfg->checkpoint_dir[0] && (rc = ckpt_dir_check(cfg->checkpoint_dir, err))) goto out;
    wk->step_var = catalog_find(&wk->cat, "global_step");
    wk->version = xcalloc((size_t)wk->cat.n, sizeof *wk->version);
    wk->t_begin = xcalloc(3 * (size_t)wk->cat.n, sizeof *wk->t_begin);
    wk->push_step = xcalloc((size_t)wk->cat.n, sizeof *wk->push_step);
    wk->push_unacked = xcalloc((size_t)wk->cat.n, sizeof *wk->push_unacked);
    wk->pushed = xcalloc((size_t)wk->cat.n, 1);
    if (cfg->prefetch) wk->pf_version = xcalloc((size_t)wk->cat.n, sizeof *wk->pf_version);
    wk->in = rt_instr_new(cfg->hub, EVT_JOB_WORKER, index, &wk->cat);
    wk->report_progress = getenv("DOWNPOUR_PROGRESS") != NULL;
    wk->hold_at = getenv("DOWNPOUR_HOLD_AT") ? atoll(getenv("DOWNPOUR_HOLD_AT")) : -1;
    wk->pipeline = !getenv("DOWNPOUR_PIPELINE") || strcmp(getenv("DOWNPOUR_PIPELINE"), "0");
    wk->lazy_acks = cfg->mode == MODE_ASYNC && cfg->prefetch && wk->pipeline && !wk->report_progress;
    rc = open_devices(wk, err);
    if (rc) goto out;
    if (cfg->log_placement) log_placement(wk);
    announce(wk);
    wk->ps = xcalloc((size_t)spec->n_ps, sizeof *wk->ps);
    for (int i = 0; i < spec->n_ps; i++) {
        wk->ps[i].wk = wk;
        wk->ps[i].index = i;
        spec_task_name(wk->ps[i].name, sizeof wk->ps[i].name, JOB_PS, i);
    }
    wk->net = nn_new(cfg->model, cfg->hidden, cfg->batch);
    nn_set_progress(wk->net, wk_step_progress, wk);
    wk->n_tensors = nn_tensors(wk->net);
    for (int i = 0; i < wk->n_tensors; i++) {
        size_t n = nn_tensor_size(wk->net, i);
        wk->params[i] = xcalloc(n, sizeof(float));
        wk->grads[i] = xcalloc(n, sizeof(float));
        wk->grads_alt[i] = xcalloc(n, sizeof(float));
        if (cfg->prefetch) wk->pf_params[i] = xcalloc(n, sizeof(float));
        if (wk->chief && optim_slot_width(cfg->optimizer)) {
            wk->slots[i] = xcalloc(n, sizeof(float));
            snprintf(wk->slot_names[i], sizeof wk->slot_names[i], "%s/%s", nn_tensor_name(wk->net, i),
                     optim_slot_name(cfg->optimizer));
        }
    }
    rc = load_data(wk, &train, &test, err);
    if (rc) goto out;
    rc = batch_order_init(&order, train.n, cfg->n_workers, cfg->batch, (uint64_t)cfg->seed, err);
    if (rc) goto out;
    idx = xmalloc((size_t)cfg->batch * sizeof *idx);
    idx_next = xmalloc((size_t)cfg->batch * sizeof *idx_next);
    bx = xmalloc((size_t)cfg->batch * DATA_FEATURES * sizeof *bx);
    by = xmalloc((size_t)cfg->batch);
    if (wk->chief) wk->eval_net = nn_new(cfg->model, cfg->hidden, DATA_EVAL_BATCH);

    rc = wk_connect_all(wk, err);
    if (rc == DP_OK && wk->report_progress) {
        /* the launcher's cue: once every ps answered, a restart of ours is in the run */
        printf("@joined\n");
        fflush(stdout);
    }
    if (rc == DP_OK && wk->chief) rc = chief_init(wk, 0, err);
    if (rc == WK_PS_LOST) rc = recover(wk, err);
    if (rc) goto out;
    double slow_factor = rt_config_straggler_factor(cfg, index);

    uint64_t t_start = dp_now_ns(), t_compute = 0, t_wait = 0, t_paced = 0, cpu_start = dp_cpu_ns();
    uint64_t t_slow = 0;  /* a straggler's extra time, counted as work as in compute_end */
    int64_t last_eval = -1;
    double accuracy = NAN, test_loss = NAN;
train:
    for (;;) {
        if (cfg->mode == MODE_SSP && (rc = wk_ssp_wait(wk))) break;
        uint64_t step_t0 = dp_now_ns();
        /* --prefetch: this step's parameters were pulled during the last one; once our
         * last push took the global step to --steps they are dropped for a fresh pull,
         * which ends the loop with the final values */
        if (wk->pf_sent && wk->lazy_acks && (rc = wk_acks_settle(wk))) break;
        /* The batch is gathered while the parameters travel (not with
         * DOWNPOUR_PIPELINE=0, the order before pipelining). Async and ssp workers walk
         * their own shard: their batch is known before the pull. Sync ones train on the
         * global batch of the step the pull reads: gathered for the step their last
         * token's ack said (the step as a rule), and again should the pull read another. */
        int own_shard = cfg->mode != MODE_SYNC;
        int64_t early_step = own_shard ? wk->local : wk->gs_after, gathered = -1;
        if (wk->pf_sent && wk->gs_after < cfg->steps) {
            if (wk->pipeline) gathered = gather_batch(&order, &train, index, early_step, cfg->batch, idx, bx, by);
            rc = wk_prefetch_finish(wk, 1);
        } else if (!(rc = wk->pf_sent ? wk_prefetch_finish(wk, 0) : DP_OK)) {
            wk_pull_send(wk);
            if (wk->pipeline) gathered = gather_batch(&order, &train, index, early_step, cfg->batch, idx, bx, by);
            rc = wk_pull_wait(wk);
        }
        if (rc) break;
        /* Sync: a worker that joins mid-step (restarted, or a backup lagging behind) may
         * read some variables after the step's update and others before it; a gradient
         * of that mix would be accumulated into the step. Read again until every variable
         * is of the global step read (the token follows the updates within moments). */
        for (int again = 0; again < 500 && !versions_at_step(wk) && wk->gs < cfg->steps; again++) {
            sleep_ns(1000000);
            if ((rc = wk_pull_all(wk, 0))) break;
        }
        if (rc) break;
        if (wk->local == 0 && getenv("DOWNPOUR_RESTART")) {
            /* The launcher restarted us (--fail ...,restart=T): we carry on from the ps. */
            char clock[64] = "";
            if (cfg->mode == MODE_SSP)
                snprintf(clock, sizeof clock, ", SSP clock %lld", (long long)wk_clock(wk));
            dp_log(DP_LOG_INFO, wk->name, "restarted: rejoining at global step %lld%s", (long long)wk->gs, clock);
            rt_instr_log(wk->in, "%s: restarted, rejoining at global step %lld%s", wk->name, (long long)wk->gs,
                         clock);
        }
        if (wk->gs >= cfg->steps) break;
        if (checkpoint_due(wk) && versions_at_step(wk)) {
            char path[1024];
            /* Again with the slots: values and slots of one version, what we train on. */
            if ((rc = wk_pull_all(wk, 1))) break;
            if (wk->gs >= cfg->steps) break;
            if (versions_at_step(wk) && (rc = save_checkpoint(wk, wk->gs, path, err))) break;
        }
        /* The chief evaluates once in each interval of eval_every global steps it reads a
         * step of: at the interval's first step in sync, at the first it sees in async and
         * ssp, where the others' pushes move the global step on between its pulls. */
        if (wk->chief && cfg->eval_every > 0 && last_eval < 0) last_eval = wk->gs / cfg->eval_every;
        if (wk->chief && cfg->eval_every > 0 && wk->gs / cfg->eval_every > last_eval) {
            last_eval = wk->gs / cfg->eval_every;
            accuracy = evaluate(wk, &test, &test_loss, "evaluation");
        }
        int64_t data_step = own_shard ? wk->local : wk->gs;
        if (gathered != data_step) gather_batch(&order, &train, index, data_step, cfg->batch, idx, bx, by);
        /* the next step's rows (sync: of the global step after this one, as a rule) come
         * in from memory while this one computes */
        batch_order_indices(&order, index, data_step + 1, idx_next);
        dataset_prefetch(&train, idx_next, cfg->batch);
        int64_t ct0 = rt_instr_now(wk->in);
        wk_emit_step(wk, EVT_COMPUTE_BEGIN, ct0, 0, 0, 0);
        /* the next step's pull goes as this step's compute starts (before its work is
         * measured) and arrives while it runs */
        if (cfg->prefetch) wk_prefetch_send(wk);
        /* towers compute on their devices' threads: the process's CPU counts them */
        uint64_t c0 = dp_now_ns(), cpu0 = wk->tw ? dp_cpu_ns() : dp_thread_cpu_ns();
        err[0] = 0;
        wk->computing = 1;
        wk->progress_cpu_ns = 0;
        float loss = wk->tw ? tw_step(wk->tw, wk->params, wk->grads, bx, by, cfg->batch, wk->local, err)
                            : nn_train_step(wk->net, wk->params, wk->grads, bx, by, cfg->batch);
        wk->computing = 0;
        if (wk->tw && !isfinite(loss) && err[0]) {
            rc = DP_ERR;
            break;
        }
        uint64_t c1 = dp_now_ns();
        /* the span's work: the CPU it used (it may have waited for a core on a shared
         * host), less what went on sending and reading between its ops, and a
         * straggler's extra time, which stands for a slower machine */
        uint64_t used = (wk->tw ? dp_cpu_ns() : dp_thread_cpu_ns()) - cpu0;
        uint64_t hook = used > wk->progress_cpu_ns ? wk->progress_cpu_ns : used;  /* said apart */
        uint64_t work = used - hook;
        if (slow_factor > 1.0) {
            uint64_t extra = (uint64_t)((double)(c1 - c0) * (slow_factor - 1.0));
            sleep_ns(extra);
            work += extra;
            t_slow += extra;
        }
        t_compute += dp_now_ns() - c0;
        int64_t ct1 = rt_instr_now(wk->in);
        wk_emit_step(wk, EVT_COMPUTE_END, ct1, ct1 - ct0, (double)hook / 1e9, (double)work / 1e9);
        if (!isfinite(loss)) {
            rc = dp_fail(err, DP_ERR, "%s: loss became %f at global step %lld (learning rate too high?)",
                         wk->name, (double)loss, (long long)wk->gs);
            break;
        }
        wk->losses[wk->n_losses++ % LOSS_WINDOW] = loss;
        t_paced += pace_step(wk, step_t0, slow_factor);
        uint64_t w0 = dp_now_ns();
        if ((rc = wk_push_all(wk, wk_clock(wk) + 1))) break;
        t_wait += dp_now_ns() - w0;
        wk_emit_step(wk, EVT_STEP_END, 0, 0, loss, (double)wk->gs);
        wk->local++;
        wk->fruitless = 0;
        if (wk->report_progress) {
            printf("@progress %lld %lld\n", (long long)wk->local, (long long)wk->gs_after);
            fflush(stdout);
            /* A --fail at this step: hold here until the launcher's SIGKILL lands, so that
             * the worker dies at exactly that step however fast steps are. */
            if (wk->local == wk->hold_at) raise(SIGSTOP);
        }
        if (!cfg->quiet && wk->local % cfg->log_every == 0) {
            /* the global step our pushes took it to: their acks (lazy ones too) */
            if (wk->lazy_acks && (rc = wk_wait_all(wk))) break;
            dp_log(DP_LOG_INFO, NULL, "%s: training step %lld done (global step: %lld), loss %.4f",
                   wk->name, (long long)wk->local, (long long)wk->gs_after, mean_recent_loss(wk));
            rt_instr_log(wk->in, "%s: training step %lld done (global step: %lld)", wk->name,
                         (long long)wk->local, (long long)wk->gs_after);
        }
    }
    /* the acks still due (async: wk_push_all does not await them) */
    if (!rc && wk->outstanding > 0) rc = wk_wait_all(wk);
    /* A lost ps: reconnect, restore, train on from the restored step. */
    if (rc == WK_PS_LOST && (rc = recover(wk, err)) == DP_OK) goto train;
    if (rc == DP_ETIMEDOUT && wk->timed_out) {
        barrier_timed_out(wk, err);
        goto out;
    }
    if (rc) {
        wait_failed(wk, rc, err);
        goto out;
    }
    double train_s = (double)(dp_now_ns() - t_start) / 1e9;
    /* the work training did: its CPU, and a straggler's extra time (compute_end's too) */
    double train_cpu_s = (double)(dp_cpu_ns() - cpu_start + t_slow) / 1e9;
    char ckpt_path[1024] = "";
    if (wk->chief) {
        rc = final_pull(wk);
        if (rc == WK_PS_LOST && (rc = recover(wk, err)) == DP_OK) goto train;
        if (rc) {
            wait_failed(wk, rc, err);
            goto out;
        }
        if (wk->local == 0)
            dp_log(DP_LOG_INFO, wk->name, "nothing to train: global step %lld already reaches --steps %lld",
                   (long long)wk->gs, (long long)cfg->steps);
        accuracy = evaluate(wk, &test, &test_loss, "final evaluation");
        /* A resume with nothing to do leaves the restored checkpoint as it is. */
        if (cfg->checkpoint_dir[0] && wk->gs != wk->ckpt_step) {
            rc = save_checkpoint(wk, wk->gs, ckpt_path, err);
            if (rc) goto out;
        }
    }
    /* Tell every ps we are done, and let the frames leave before closing. */
    wk->finishing = 1;
    for (int i = 0; i < spec->n_ps; i++) {
        net_frame h = {.type = MSG_DONE, .arg0 = wk->local};
        if (wk->ps[i].conn) net_conn_send(wk->ps[i].conn, h, NULL, 0, 0);
    }
    for (int spins = 0; spins < 1000; spins++) {
        int pending = 0;
        for (int i = 0; i < spec->n_ps; i++)
            if (wk->ps[i].conn && net_conn_pending(wk->ps[i].conn)) pending = 1;
        if (!pending) break;
        ev_run(wk->loop, EVRUN_ONCE);
    }
    /* No step trained (a resume with nothing left to do): no loss, and JSON has no NaN. */
    char loss_text[32] = "null";
    if (wk->n_losses) snprintf(loss_text, sizeof loss_text, "%.6f", mean_recent_loss(wk));
    printf("{\"task\":\"worker\",\"index\":%d,\"local_steps\":%lld,\"samples\":%lld,"
           "\"bytes_pulled\":%llu,\"bytes_pushed\":%llu,\"final_loss\":%s,\"global_step\":%lld,"
           "\"drops_seen\":%d,\"ps_reconnects\":%d,\"train_s\":%.6f,\"compute_s\":%.6f,\"wait_s\":%.6f",
           index, (long long)wk->local, (long long)wk->local * cfg->batch,
           (unsigned long long)wk->bytes_pulled, (unsigned long long)wk->bytes_pushed,
           loss_text, (long long)wk->gs, wk->drops_seen, wk->rejoins, train_s, (double)t_compute / 1e9,
           (double)t_wait / 1e9);
    if (cfg->pace_s > 0) printf(",\"paced_s\":%.6f", (double)t_paced / 1e9);
    if (wk->chief)
        printf(",\"test_accuracy\":%.6f,\"test_loss\":%.6f,\"param_checksum\":\"%016llx\"", accuracy,
               test_loss, (unsigned long long)params_checksum(wk));
    printf(",\"events\":%llu,\"events_dropped\":%llu}\n", (unsigned long long)rt_instr_sent(wk->in),
           (unsigned long long)rt_instr_dropped(wk->in));
    fflush(stdout);
    wk_emit_step(wk, EVT_TASK_STOP, 0, 0, 0, train_cpu_s);
    rc = DP_OK;
out:
    wk->finishing = 1;
    if (wk->ps) {
        for (int i = 0; i < spec->n_ps; i++)
            if (wk->ps[i].conn) net_conn_close(wk->ps[i].conn, "worker exiting");
        free(wk->ps);
    }
    ev_loop_destroy(wk->loop);
    rt_instr_free(wk->in);
    free(wk->t_begin);
    free(wk->push_step);
    free(wk->push_unacked);
    free(wk->pushed);
    for (int i = 0; i < wk->n_tensors; i++) {
        free(wk->params[i]);
        free(wk->pf_params[i]);
        free(wk->grads[i]);
        free(wk->grads_alt[i]);
        free(wk->slots[i]);
    }
    nn_free(wk->net);
    nn_free(wk->eval_net);
    tw_free(wk->tw);
    dev_set_free(wk->devs);
    free(wk->version);
    free(wk->pf_version);
    free(idx);
    free(idx_next);
    free(bx);
    free(by);
    batch_order_release(&order);
    dataset_release(&train);
    dataset_release(&test);
    catalog_release(&wk->cat);
    return rc;
}
