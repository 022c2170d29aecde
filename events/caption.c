/* caption.c — the caption rules (see caption.h). Each rule is one small static function
 * called for the event kinds it reads; it states its condition, builds its line and hands
 * it to emit(), which applies the one-caption-per-rule-per-global-step limit and appends
 * to the bounded history (a ring). The run state the rules need is small and O(1) a
 * event: per worker (bounded by EVT_STATE_MAX_TASKS) its barrier step, SSP clock, compute
 * window and failure time; the version each (worker, variable) last pulled, in an
 * open-addressing map; the barrier count of the current step. */
#include "events/caption.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/dp.h"
#include "events/state.h"
#include "events/trace.h"

static const char *const rule_names[EVT_CAPTION_RULE_COUNT] = {
    "failure", "recovery", "barrier_timeout", "drop", "staleness", "eval", "checkpoint", "straggler",
    "ssp_wait", "barrier", "first_step", "cluster", "pace", "reconnect", "overlap",
};

const char *evt_caption_rule_name(int rule)
{
    if (rule < 0 || rule >= EVT_CAPTION_RULE_COUNT) return "unknown";
    return rule_names[rule];
}

const char *evt_caption_strtab_str(const void *strtab, uint32_t id)
{
    return strtab ? evt_strtab_get(strtab, id) : "";
}

const char *evt_caption_trace_str(const void *reader, uint32_t id)
{
    return reader ? trace_reader_string(reader, id) : "";
}

/* What the run was asked to do; -1 / "" where unknown. */
typedef struct cap_config {
    char mode[8];            /* "sync", "async", "ssp" */
    int ps, workers, backup, bound;
    double pace;             /* seconds, -1 unknown */
} cap_config;

typedef struct cap_worker {
    int64_t wait_step;       /* step of its open BARRIER_WAIT, -1 none */
    int64_t clock;           /* steps completed (last STEP_END step + 1) */
    int64_t cmp_sum;         /* compute ns in the straggler window */
    int64_t cmp_n;
    int64_t fail_t;          /* time of its last FAILURE, -1 none */
    int computing;           /* a COMPUTE_BEGIN without its END */
    uint8_t overlapped;      /* bit 0: a push, bit 1: a pull began while it computed
                              * (each captioned once a worker) */
} cap_worker;

struct evt_captioner {
    evt_caption_str_fn str;
    const void *ctx;
    cap_config meta;         /* from the metadata, kept across reset */
    cap_config cfg;          /* meta, gaps filled from CLUSTER_START */
    /* history: a ring of cap captions, n of them from head */
    evt_caption *ring;
    size_t cap, head, n;
    uint64_t dropped;
    uint64_t emitted[EVT_CAPTION_RULE_COUNT];
    int64_t last_step[EVT_CAPTION_RULE_COUNT];   /* global step of the rule's last caption */
    int64_t t_last;
    /* run state */
    int64_t gstep;           /* max of GLOBAL_STEP and BARRIER_WAIT steps */
    cap_worker *wk;
    int wk_len;              /* allocated slots; also workers seen = max index + 1 */
    int workers_seen;
    int64_t *ps_fail_t;
    int ps_len;
    int64_t bar_step;        /* the barrier being filled, -1 none */
    int bar_count;           /* workers waiting at it */
    int64_t strag_total;     /* COMPUTE_ENDs in the straggler window */
    int strag_active;        /* workers with at least one of them */
    uint64_t *pull_key;      /* (worker + 1) << 32 | var, 0 = empty */
    int64_t *pull_ver;
    size_t pull_cap, pull_n;
};

#define NO_STEP INT64_MIN

/* ---- configuration from JSON ---------------------------------------------------------- */

static void config_clear(cap_config *k)
{
    memset(k, 0, sizeof *k);
    k->ps = k->workers = k->backup = k->bound = -1;
    k->pace = -1;
}

/* The member key of o, or of o's "config" object (the simulator nests its run there). */
static json_t *member(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v) v = json_object_get(json_object_get(o, "config"), key);
    return v;
}

static void fill_int(int *dst, json_t *o, const char *key)
{
    json_t *v = member(o, key);
    if (*dst < 0 && json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 1000000000)
        *dst = (int)json_integer_value(v);
}

/* Fills the fields of k still unknown from the JSON text (ignored when unparsable). */
static void config_fill(cap_config *k, const char *json)
{
    json_t *o = json && *json ? json_loads(json, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    const char *mode = json_string_value(member(o, "mode"));
    if (!k->mode[0] && mode && (!strcmp(mode, "sync") || !strcmp(mode, "async") || !strcmp(mode, "ssp")))
        snprintf(k->mode, sizeof k->mode, "%s", mode);
    fill_int(&k->ps, o, "ps");
    fill_int(&k->workers, o, "workers");
    fill_int(&k->backup, o, "backup_workers");
    fill_int(&k->bound, o, "staleness");
    json_t *pace = member(o, "pace");
    if (k->pace < 0 && json_is_number(pace) && json_number_value(pace) >= 0) k->pace = json_number_value(pace);
    json_decref(o);
}

/* ---- small formatting helpers ----------------------------------------------------------- */

/* "200 ms", "3.0 s". */
static void fmt_secs(char *buf, size_t n, double s)
{
    if (s < 1) snprintf(buf, n, "%.0f ms", s * 1e3);
    else snprintf(buf, n, "%.1f s", s);
}

/* "4", "2.5": one decimal, dropped when it is zero. */
static void fmt_ratio(char *buf, size_t n, double r)
{
    long long d = llround(r * 10);
    if (d % 10 == 0) snprintf(buf, n, "%lld", d / 10);
    else snprintf(buf, n, "%lld.%lld", d / 10, d % 10);
}

/* "worker 3", "ps 0", "the client". */
static void task_name(char *buf, size_t n, int job, int task)
{
    if (job == EVT_JOB_PS) snprintf(buf, n, "ps %d", task);
    else if (job == EVT_JOB_WORKER) snprintf(buf, n, "worker %d", task);
    else snprintf(buf, n, "the %s", job == EVT_JOB_CLIENT ? "client" : "hub");
}

/* A task's name in a caption, with worker 0 (it plays the master's part) "the chief". */
static void worker_or_chief(char *buf, size_t n, int job, int task)
{
    if (job == EVT_JOB_WORKER && task == 0) snprintf(buf, n, "the chief");
    else task_name(buf, n, job, task);
}

/* Copies s into out (n bytes), "/job:worker/replica:0/task:1" (and a "/device:CPU:0"
 * after it) shortened to "worker 1". */
static void shorten_names(char *out, size_t n, const char *s)
{
    size_t o = 0;
    while (*s && o + 1 < n) {
        int job_len = 0, task = -1, used = 0;
        const char *q = s;
        if (!strncmp(s, "/job:", 5)) {
            q = s + 5;
            while ((q[job_len] >= 'a' && q[job_len] <= 'z') || q[job_len] == '_') job_len++;
            q += job_len;
            if (!strncmp(q, "/replica:", 9))
                for (q += 9; *q >= '0' && *q <= '9'; q++) {}
        }
        if (job_len > 0 && sscanf(q, "/task:%d%n", &task, &used) == 1 && task >= 0) {
            q += used;
            if (!strncmp(q, "/device:", 8)) {
                for (q += 8; (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || *q == '_'; q++) {}
                if (*q == ':')
                    for (q++; *q >= '0' && *q <= '9'; q++) {}
            }
            int w = snprintf(out + o, n - o, "%.*s %d", job_len, s + 5, task);
            if (w > 0) o = o + (size_t)w < n ? o + (size_t)w : n - 1;
            s = q;
            continue;
        }
        out[o++] = *s++;
    }
    out[o] = '\0';
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static const char *str_of(const evt_captioner *c, uint32_t id)
{
    const char *s = c->str && id ? c->str(c->ctx, id) : "";
    return s ? s : "";
}

/* ---- history -------------------------------------------------------------------------- */

/* 1 when rule may still caption the current global step. */
static int may_emit(const evt_captioner *c, int rule)
{
    return c->last_step[rule] != c->gstep;
}

/* Appends a caption of rule at time t for the current global step, unless the rule has
 * already captioned it. Returns 1 when appended. */
static int emit(evt_captioner *c, int rule, int64_t t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int emit(evt_captioner *c, int rule, int64_t t, const char *fmt, ...)
{
    if (!may_emit(c, rule)) return 0;
    c->last_step[rule] = c->gstep;
    c->emitted[rule]++;
    if (c->n == c->cap) {
        c->head = (c->head + 1) % c->cap;
        c->n--;
        c->dropped++;
    }
    evt_caption *k = &c->ring[(c->head + c->n++) % c->cap];
    if (t < c->t_last) t = c->t_last;
    c->t_last = t;
    k->t = t;
    k->step = c->gstep;
    k->rule = rule;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->text, sizeof k->text, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- run state ------------------------------------------------------------------------ */

/* The state of worker w, grown on first sight; NULL for an index out of range. */
static cap_worker *worker(evt_captioner *c, int w)
{
    if (w < 0 || w >= EVT_STATE_MAX_TASKS) return NULL;
    if (w >= c->wk_len) {
        int len = c->wk_len ? c->wk_len : 16;
        while (len <= w) len *= 2;
        if (len > EVT_STATE_MAX_TASKS) len = EVT_STATE_MAX_TASKS;
        c->wk = xrealloc(c->wk, (size_t)len * sizeof *c->wk);
        for (int i = c->wk_len; i < len; i++)
            c->wk[i] = (cap_worker){.wait_step = -1, .fail_t = -1};
        c->wk_len = len;
    }
    if (w >= c->workers_seen) c->workers_seen = w + 1;
    return &c->wk[w];
}

static int64_t *ps_fail(evt_captioner *c, int p)
{
    if (p < 0 || p >= EVT_STATE_MAX_TASKS) return NULL;
    if (p >= c->ps_len) {
        int len = c->ps_len ? c->ps_len : 8;
        while (len <= p) len *= 2;
        if (len > EVT_STATE_MAX_TASKS) len = EVT_STATE_MAX_TASKS;
        c->ps_fail_t = xrealloc(c->ps_fail_t, (size_t)len * sizeof *c->ps_fail_t);
        for (int i = c->ps_len; i < len; i++) c->ps_fail_t[i] = -1;
        c->ps_len = len;
    }
    return &c->ps_fail_t[p];
}

static size_t pull_slot(const evt_captioner *c, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (c->pull_cap - 1);
    while (c->pull_key[i] && c->pull_key[i] != key) i = (i + 1) & (c->pull_cap - 1);
    return i;
}

static void pull_put(evt_captioner *c, int w, uint32_t var, int64_t version)
{
    if ((c->pull_n + 1) * 2 > c->pull_cap) {
        uint64_t *ok = c->pull_key;
        int64_t *ov = c->pull_ver;
        size_t ocap = c->pull_cap;
        c->pull_cap = ocap ? ocap * 2 : 64;
        c->pull_key = xcalloc(c->pull_cap, sizeof *c->pull_key);
        c->pull_ver = xcalloc(c->pull_cap, sizeof *c->pull_ver);
        for (size_t i = 0; i < ocap; i++)
            if (ok[i]) {
                size_t j = pull_slot(c, ok[i]);
                c->pull_key[j] = ok[i];
                c->pull_ver[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    uint64_t key = (uint64_t)(w + 1) << 32 | var;
    size_t i = pull_slot(c, key);
    if (!c->pull_key[i]) c->pull_n++;
    c->pull_key[i] = key;
    c->pull_ver[i] = version;
}

/* The version worker w last read of var, or -1. */
static int64_t pull_get(const evt_captioner *c, int w, uint32_t var)
{
    if (!c->pull_cap) return -1;
    size_t i = pull_slot(c, (uint64_t)(w + 1) << 32 | var);
    return c->pull_key[i] ? c->pull_ver[i] : -1;
}

/* Workers in the run: the metadata's count, else the largest index seen + 1. */
static int n_workers(const evt_captioner *c)
{
    return c->cfg.workers > 0 ? c->cfg.workers : c->workers_seen;
}

/* SyncReplicasOptimizer's replicas_to_aggregate: workers - backup_workers (at least 1). */
static int replicas_to_aggregate(const evt_captioner *c)
{
    int r = n_workers(c) - (c->cfg.backup > 0 ? c->cfg.backup : 0);
    return r < 1 ? 1 : r;
}

/* ---- the rules -------------------------------------------------------------------------- */

/* A worker reaches the barrier. The caption comes when one gradient short of release:
 * R - 1 workers wait (R = replicas_to_aggregate; 1 when R is 1). */
static int rule_barrier_wait(evt_captioner *c, const evt_record *e)
{
    cap_worker *w = worker(c, e->task);
    if (!w || e->step < 0) return 0;
    if (w->wait_step >= 0 && w->wait_step == c->bar_step) c->bar_count--;
    w->wait_step = e->step;
    if (e->step > c->bar_step) {
        c->bar_step = e->step;
        c->bar_count = 0;
        for (int i = 0; i < c->wk_len; i++) c->bar_count += c->wk[i].wait_step == e->step;
    } else if (e->step == c->bar_step) {
        c->bar_count++;
    } else {
        return 0;   /* a late worker waiting for a step already done */
    }
    if (e->step > c->gstep) c->gstep = e->step;
    int r = replicas_to_aggregate(c);
    int need = r > 1 ? r - 1 : 1;
    if (c->bar_count < need) return 0;
    return emit(c, EVT_CAPTION_BARRIER, e->t,
                "step %lld: %d of %d workers wait%s at the barrier \xe2\x80\x94 sync needs %d "
                "gradient%s (replicas_to_aggregate = %d)",
                (long long)e->step, c->bar_count, n_workers(c), c->bar_count == 1 ? "s" : "", r,
                r == 1 ? "" : "s", r);
}

static void barrier_release(evt_captioner *c, const evt_record *e)
{
    cap_worker *w = worker(c, e->task);
    if (!w) return;
    if (w->wait_step >= 0 && w->wait_step == c->bar_step && c->bar_count > 0) c->bar_count--;
    w->wait_step = -1;
}

/* Sync: the ps drops a gradient computed for an earlier step. DROP's step is the current
 * step G and its value the staleness, so the gradient was for step G - staleness. */
static int rule_drop(evt_captioner *c, const evt_record *e)
{
    if (e->peer < 0) return 0;
    long long g = (long long)e->step, late = llround(e->value);
    return emit(c, EVT_CAPTION_DROP, e->t,
                "worker %d's gradient for step %lld arrived at step %lld: dropped as stale",
                e->peer, g - late, g);
}

/* Async / ssp: a gradient applied late. The version read is the worker's last PULL_END of
 * that variable; without one, APPLY's step (the version after) less one less the
 * staleness. */
static int rule_staleness(evt_captioner *c, const evt_record *e)
{
    long long n = llround(e->value);
    if (n < 1 || e->peer < 0 || !may_emit(c, EVT_CAPTION_STALENESS)) return 0;
    long long read = pull_get(c, e->peer, e->var);
    if (read < 0) read = (long long)e->step - 1 - n;
    const char *var = str_of(c, e->var);
    return emit(c, EVT_CAPTION_STALENESS, e->t,
                "worker %d read %s at v%lld and pushed at v%lld: staleness %lld", e->peer,
                *var ? var : "the model", read, read + n, n);
}

/* SSP: a worker blocked by the gate. The slowest's clock is the larger of two lower
 * bounds: SSP_WAIT's value (the simulator's min clock; the runtime sends 0) and the
 * smallest clock among the workers' STEP_ENDs seen (the waiting worker's own is never the
 * smallest: it is blocked because it is ahead). */
static int rule_ssp_wait(evt_captioner *c, const evt_record *e)
{
    if (!worker(c, e->task) || !may_emit(c, EVT_CAPTION_SSP_WAIT)) return 0;
    int64_t slowest = (int64_t)llround(e->value);
    int64_t others = INT64_MAX;
    int nw = n_workers(c);
    for (int i = 0; i < nw; i++) {
        int64_t k = i < c->wk_len ? c->wk[i].clock : 0;
        if (k < others) others = k;
    }
    if (others != INT64_MAX && others > slowest) slowest = others;
    long long ahead = (long long)(e->step - slowest);
    if (ahead < 1) return 0;
    char bound[48] = "";
    if (c->cfg.bound >= 0) snprintf(bound, sizeof bound, " (staleness bound %d)", c->cfg.bound);
    return emit(c, EVT_CAPTION_SSP_WAIT, e->t, "worker %d waits: it is %lld step%s ahead of the slowest%s",
                e->task, ahead, ahead == 1 ? "" : "s", bound);
}

static int rule_eval(evt_captioner *c, const evt_record *e)
{
    if (!isfinite(e->value)) return 0;
    char who[48];
    worker_or_chief(who, sizeof who, e->job, e->task);
    return emit(c, EVT_CAPTION_EVAL, e->t, "%s evaluates at global step %lld: accuracy %.2f", who,
                (long long)e->step, e->value);
}

static int rule_checkpoint(evt_captioner *c, const evt_record *e)
{
    char who[48], path[EVT_CAPTION_TEXT / 2] = "";
    worker_or_chief(who, sizeof who, e->job, e->task);
    const char *p = base_name(str_of(c, e->str));
    if (e->kind == EVT_CHECKPOINT_WRITE) {
        if (*p) snprintf(path, sizeof path, ": %s", p);
        return emit(c, EVT_CAPTION_CHECKPOINT, e->t, "%s saves a checkpoint at global step %lld%s", who,
                    (long long)e->step, path);
    }
    if (!*p)   /* a lost ps and no checkpoint: the seed's values again */
        return emit(c, EVT_CAPTION_CHECKPOINT, e->t, "%s has no checkpoint to restore: the session starts again "
                    "from the initial values at global step %lld", who, (long long)e->step);
    return emit(c, EVT_CAPTION_CHECKPOINT, e->t, "%s restores global step %lld from %s", who,
                (long long)e->step, p);
}

static int rule_pace(evt_captioner *c, const evt_record *e)
{
    double s = e->value > 0 ? e->value : c->cfg.pace;
    char t[32];
    if (s <= 0) return emit(c, EVT_CAPTION_PACE, e->t, "worker %d waits out the pace", e->task);
    fmt_secs(t, sizeof t, s);
    return emit(c, EVT_CAPTION_PACE, e->t, "worker %d waits out the pace: %s a step", e->task, t);
}

/* A transfer that begins while its worker computes: the first push (a gradient the
 * backward pass has finished, sent while it goes on: pipelining) and the first pull (the
 * next step's parameters: --prefetch) of each worker. */
static int rule_overlap(evt_captioner *c, const evt_record *e)
{
    cap_worker *w = worker(c, e->task);
    int push = e->kind == EVT_PUSH_BEGIN, bit = push ? 1 : 2;
    /* (a transfer without a ps is a copy between the worker's own devices) */
    if (!w || !w->computing || e->peer < 0 || (w->overlapped & bit) || !may_emit(c, EVT_CAPTION_OVERLAP))
        return 0;
    w->overlapped |= (uint8_t)bit;
    const char *var = str_of(c, e->var);
    if (push)
        return emit(c, EVT_CAPTION_OVERLAP, e->t, "worker %d pushes %s while it still computes: that "
                    "gradient is done before the rest of the backward pass", e->task, *var ? var : "a gradient");
    return emit(c, EVT_CAPTION_OVERLAP, e->t, "worker %d pulls for step %lld while it computes step %lld "
                "(prefetch): its gradients are one step staler", e->task, (long long)e->step,
                (long long)e->step - 1);
}

/* The failing task's time of failure, for the recovery's "after T down". */
static int64_t *fail_time(evt_captioner *c, const evt_record *e)
{
    if (e->job == EVT_JOB_PS) return ps_fail(c, e->task);
    cap_worker *w = e->job == EVT_JOB_WORKER ? worker(c, e->task) : NULL;
    return w ? &w->fail_t : NULL;
}

/* A task fails. The launcher's reason names the task ("task /job:worker/replica:0/task:1
 * died: exit status 1"): it reads "worker 1 died: exit status 1". */
static int rule_failure(evt_captioner *c, const evt_record *e)
{
    int64_t *ft = fail_time(c, e);
    if (ft) *ft = e->t;
    char who[48], why[EVT_CAPTION_TEXT], died[64];
    task_name(who, sizeof who, e->job, e->task);
    shorten_names(why, sizeof why, str_of(c, e->str));
    snprintf(died, sizeof died, "task %s died: ", who);
    if (!strncmp(why, died, strlen(died)))
        return emit(c, EVT_CAPTION_FAILURE, e->t, "%s died: %s", who, why + strlen(died));
    if (!why[0]) return emit(c, EVT_CAPTION_FAILURE, e->t, "%s fails", who);
    return emit(c, EVT_CAPTION_FAILURE, e->t, "%s fails: %s", who, why);
}

static int rule_recovery(evt_captioner *c, const evt_record *e)
{
    int64_t *ft = fail_time(c, e);
    char who[48], down[40];
    task_name(who, sizeof who, e->job, e->task);
    if (!ft || *ft < 0 || e->t < *ft) return emit(c, EVT_CAPTION_RECOVERY, e->t, "%s recovers", who);
    fmt_secs(down, sizeof down, (double)(e->t - *ft) / 1e9);
    *ft = -1;
    return emit(c, EVT_CAPTION_RECOVERY, e->t, "%s recovers after %s down", who, down);
}

/* check_numerics: a ps refused a gradient holding NaN or Inf. */
static int rule_grad_rejected(evt_captioner *c, const evt_record *e)
{
    const char *what = str_of(c, e->str);
    return emit(c, EVT_CAPTION_DROP, e->t, "ps %d rejects worker %d's gradient: %s; never applied (check_numerics)",
                e->task, e->peer, *what ? what : "NaN or Inf");
}

/* A worker lost a ps mid-run (its first PS_RETRY; the later attempts are not captioned):
 * one caption a step however many workers lost it. */
static int rule_ps_retry(evt_captioner *c, const evt_record *e)
{
    if (e->value > 1 || e->peer < 0) return 0;
    return emit(c, EVT_CAPTION_RECONNECT, e->t, "worker %d lost ps %d at global step %lld: it reconnects, and the "
                "chief restores the session on every ps from the last checkpoint", e->task, e->peer, (long long)e->step);
}

/* --barrier-timeout: a sync step waited too long for a lost replica and the run stops. */
static int rule_barrier_timeout(evt_captioner *c, const evt_record *e)
{
    char secs[40];
    fmt_secs(secs, sizeof secs, e->value);
    if (e->peer < 0)
        return emit(c, EVT_CAPTION_TIMEOUT, e->t, "worker %d gives up at step %lld after %s at the barrier: "
                    "the run stops", e->task, (long long)e->step, secs);
    return emit(c, EVT_CAPTION_TIMEOUT, e->t, "worker %d gives up waiting %s for worker %d at step %lld: "
                "sync needs every replica without backup workers, so the run stops", e->task, secs, e->peer,
                (long long)e->step);
}

/* Compute times over a window of about EVT_CAPTION_STRAGGLER_STEPS steps a worker: when it
 * closes, the slowest worker is named if its mean is EVT_CAPTION_STRAGGLER_RATIO times the
 * others' (the mean of their means). */
static int rule_straggler(evt_captioner *c, const evt_record *e)
{
    cap_worker *w = worker(c, e->task);
    if (!w || e->dur <= 0) return 0;
    if (w->cmp_n++ == 0) c->strag_active++;
    w->cmp_sum += e->dur;
    c->strag_total++;
    if (c->strag_active < 2 || c->strag_total < (int64_t)EVT_CAPTION_STRAGGLER_STEPS * c->strag_active)
        return 0;
    int slow = -1, n = 0;
    double slow_mean = 0, sum = 0;
    for (int i = 0; i < c->wk_len; i++) {
        cap_worker *k = &c->wk[i];
        if (!k->cmp_n) continue;
        double m = (double)k->cmp_sum / (double)k->cmp_n;
        sum += m;
        n++;
        if (m > slow_mean) slow_mean = m, slow = i;
        k->cmp_sum = k->cmp_n = 0;
    }
    c->strag_total = 0;
    c->strag_active = 0;
    double others = (sum - slow_mean) / (n - 1);
    if (slow < 0 || others <= 0 || slow_mean < EVT_CAPTION_STRAGGLER_RATIO * others) return 0;
    char r[32];
    fmt_ratio(r, sizeof r, slow_mean / others);
    return emit(c, EVT_CAPTION_STRAGGLER, e->t, "worker %d is the slowest: its steps take %sx the others'",
                slow, r);
}

/* A restore (the chief's checkpoint after a lost ps) sets the global step back: the
 * barrier being filled is gone with it. */
static void step_back(evt_captioner *c, int64_t step)
{
    c->gstep = step;
    for (int r = 0; r < EVT_CAPTION_RULE_COUNT; r++) c->last_step[r] = NO_STEP;   /* steps redone */
    c->bar_step = -1;
    c->bar_count = 0;
    for (int i = 0; i < c->wk_len; i++) c->wk[i].wait_step = -1;
}

static int rule_global_step(evt_captioner *c, const evt_record *e)
{
    int first = e->step == 1 && c->gstep < 1;
    /* The ps holding global_step reports it in order: lower means a restore. */
    if (e->step < c->gstep && e->job == EVT_JOB_PS) step_back(c, e->step);
    if (e->step > c->gstep) c->gstep = e->step;
    if (!first) return 0;
    return emit(c, EVT_CAPTION_FIRST_STEP, e->t, "global step 1: every variable has taken its first update");
}

static int rule_cluster_start(evt_captioner *c, const evt_record *e)
{
    config_fill(&c->cfg, str_of(c, e->str));
    const cap_config *k = &c->cfg;
    int nw = n_workers(c);
    if (k->ps < 0 || nw <= 0 || !k->mode[0]) return emit(c, EVT_CAPTION_CLUSTER, e->t, "the cluster starts");
    char who[64], how[96];
    snprintf(who, sizeof who, "%d ps and %d worker%s", k->ps, nw, nw == 1 ? "" : "s");
    if (!strcmp(k->mode, "sync")) {
        int r = replicas_to_aggregate(c);
        if (k->backup > 0)
            snprintf(how, sizeof how, "start in sync mode: replicas_to_aggregate = %d (%d backup worker%s)", r,
                     k->backup, k->backup == 1 ? "" : "s");
        else
            snprintf(how, sizeof how, "start in sync mode: replicas_to_aggregate = %d", r);
    } else if (!strcmp(k->mode, "async")) {
        snprintf(how, sizeof how, "start asynchronously: every push is applied at once");
    } else if (k->bound >= 0) {
        snprintf(how, sizeof how, "start in ssp mode: at most %d step%s apart", k->bound, k->bound == 1 ? "" : "s");
    } else {
        snprintf(how, sizeof how, "start in ssp mode");
    }
    return emit(c, EVT_CAPTION_CLUSTER, e->t, "%s %s", who, how);
}

static int rule_cluster_stop(evt_captioner *c, const evt_record *e)
{
    char t[32];
    fmt_secs(t, sizeof t, e->value > 0 ? e->value : (double)e->t / 1e9);
    return emit(c, EVT_CAPTION_CLUSTER, e->t, "training stops at global step %lld after %s",
                (long long)c->gstep, t);
}

/* ---- public ------------------------------------------------------------------------------ */

evt_captioner *evt_captioner_new(const char *metadata_json, evt_caption_str_fn str, const void *ctx,
                                 size_t capacity)
{
    evt_captioner *c = xcalloc(1, sizeof *c);
    c->str = str;
    c->ctx = ctx;
    c->cap = capacity ? capacity : EVT_CAPTION_HISTORY;
    c->ring = xmalloc(c->cap * sizeof *c->ring);
    config_clear(&c->meta);
    config_fill(&c->meta, metadata_json);
    evt_captioner_reset(c);
    return c;
}

void evt_captioner_free(evt_captioner *c)
{
    if (!c) return;
    free(c->ring);
    free(c->wk);
    free(c->ps_fail_t);
    free(c->pull_key);
    free(c->pull_ver);
    free(c);
}

void evt_captioner_reset(evt_captioner *c)
{
    c->cfg = c->meta;
    c->head = c->n = 0;
    c->dropped = 0;
    memset(c->emitted, 0, sizeof c->emitted);
    for (int r = 0; r < EVT_CAPTION_RULE_COUNT; r++) c->last_step[r] = NO_STEP;
    c->t_last = INT64_MIN;
    c->gstep = 0;
    for (int i = 0; i < c->wk_len; i++) c->wk[i] = (cap_worker){.wait_step = -1, .fail_t = -1};
    c->workers_seen = 0;
    for (int i = 0; i < c->ps_len; i++) c->ps_fail_t[i] = -1;
    c->bar_step = -1;
    c->bar_count = 0;
    c->strag_total = 0;
    c->strag_active = 0;
    if (c->pull_cap) memset(c->pull_key, 0, c->pull_cap * sizeof *c->pull_key);
    c->pull_n = 0;
}

int evt_captioner_add(evt_captioner *c, const evt_record *e)
{
    int is_w = e->job == EVT_JOB_WORKER;
    switch (e->kind) {
    case EVT_CLUSTER_START: return rule_cluster_start(c, e);
    case EVT_CLUSTER_STOP: return rule_cluster_stop(c, e);
    case EVT_GLOBAL_STEP: return rule_global_step(c, e);
    case EVT_BARRIER_WAIT: return is_w ? rule_barrier_wait(c, e) : 0;
    case EVT_BARRIER_RELEASE:
        if (is_w) barrier_release(c, e);
        return 0;
    case EVT_DROP: return rule_drop(c, e);
    case EVT_PULL_END:
        if (is_w && worker(c, e->task) && e->var) pull_put(c, e->task, e->var, (int64_t)llround(e->value));
        return 0;
    case EVT_APPLY: return rule_staleness(c, e);
    case EVT_STEP_END: {
        cap_worker *w = is_w ? worker(c, e->task) : NULL;
        if (w && e->step + 1 > w->clock) w->clock = e->step + 1;
        return 0;
    }
    case EVT_SSP_WAIT: return is_w ? rule_ssp_wait(c, e) : 0;
    case EVT_COMPUTE_BEGIN:
        if (is_w && worker(c, e->task)) worker(c, e->task)->computing = 1;
        return 0;
    case EVT_COMPUTE_END:
        if (is_w && worker(c, e->task)) worker(c, e->task)->computing = 0;
        return is_w ? rule_straggler(c, e) : 0;
    case EVT_PUSH_BEGIN:
    case EVT_PULL_BEGIN: return is_w ? rule_overlap(c, e) : 0;
    case EVT_EVAL: return rule_eval(c, e);
    case EVT_CHECKPOINT_WRITE:
    case EVT_CHECKPOINT_RESTORE:
        if (e->step < c->gstep) step_back(c, e->step);
        return rule_checkpoint(c, e);
    case EVT_PACED_BEGIN: return is_w ? rule_pace(c, e) : 0;
    case EVT_FAILURE: return rule_failure(c, e);
    case EVT_RECOVERY: return rule_recovery(c, e);
    case EVT_BARRIER_TIMEOUT: return rule_barrier_timeout(c, e);
    case EVT_PS_RETRY: return rule_ps_retry(c, e);
    case EVT_GRAD_REJECTED: return rule_grad_rejected(c, e);
    default: return 0;
    }
}

size_t evt_captioner_count(const evt_captioner *c)
{
    return c->n;
}

const evt_caption *evt_captioner_get(const evt_captioner *c, size_t i)
{
    return i < c->n ? &c->ring[(c->head + i) % c->cap] : NULL;
}

uint64_t evt_captioner_dropped(const evt_captioner *c)
{
    return c->dropped;
}

uint64_t evt_captioner_emitted(const evt_captioner *c, int rule)
{
    return rule >= 0 && rule < EVT_CAPTION_RULE_COUNT ? c->emitted[rule] : 0;
}

const evt_caption *evt_captioner_at(const evt_captioner *c, int64_t t)
{
    /* the last kept caption at or before t (times are non-decreasing) */
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (evt_captioner_get(c, mid)->t <= t) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const evt_caption *best = evt_captioner_get(c, lo - 1);
    for (size_t i = lo - 1; i-- > 0;) {
        const evt_caption *k = evt_captioner_get(c, i);
        if (k->step != best->step) break;
        if (k->rule < best->rule) best = k;
    }
    return best;
}
