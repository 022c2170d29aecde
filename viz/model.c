/* model.c — the viewer's model of a whole run (see internal.h): bucketed time series
 * for the panels and the timeline, the variable / device / placement catalogue, and
 * the metadata line. Built by feeding every event once, in time order; a live source
 * keeps feeding it. Buckets: VIZ_BUCKETS of width bw; when an event falls beyond the
 * last, neighbouring buckets merge and bw doubles (bounded memory for any length). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

/* Staleness histogram bins: exact for the small values a classroom cluster shows, then
 * widening so that a 10,000-worker async run still fits: 8-31, 32-255, 256-2047, 2048+. */
int viz_stale_bin(double staleness)
{
    if (!(staleness > 0)) return 0;
    if (staleness < 8) return (int)staleness;
    if (staleness < 32) return 8;
    if (staleness < 256) return 9;
    if (staleness < 2048) return 10;
    return 11;
}

static void series_init(viz_series *s, int k, int use_max)
{
    s->k = k;
    s->use_max = use_max;
    s->v = xcalloc((size_t)VIZ_BUCKETS * (size_t)k, sizeof *s->v);
    if (use_max)
        for (size_t i = 0; i < (size_t)VIZ_BUCKETS * (size_t)k; i++) s->v[i] = -1;
}

static void series_halve(viz_series *s)
{
    int k = s->k;
    for (int i = 0; i < VIZ_BUCKETS / 2; i++)
        for (int j = 0; j < k; j++) {
            double a = s->v[(2 * i) * k + j], b = s->v[(2 * i + 1) * k + j];
            s->v[i * k + j] = s->use_max ? fmax(a, b) : a + b;
        }
    for (size_t i = (size_t)VIZ_BUCKETS / 2 * k; i < (size_t)VIZ_BUCKETS * k; i++)
        s->v[i] = s->use_max ? -1 : 0;
}

void viz_model_init(viz_model *m, int64_t duration_hint)
{
    memset(m, 0, sizeof *m);
    int64_t bw = 1000;  /* 1 us at least */
    while (duration_hint > 0 && bw * VIZ_BUCKETS <= duration_hint) bw *= 2;
    m->bw = bw;
    series_init(&m->loss, 2, 0);
    series_init(&m->wloss, 2 * VIZ_LOSS_WORKERS, 0);
    series_init(&m->gstep, 1, 1);
    series_init(&m->ps_bytes, 2 * VIZ_PS_SERIES, 0);
    series_init(&m->copy_bytes, 2 * VIZ_MACHINE_DEVICES, 0);
    series_init(&m->stale, VIZ_STALE_BINS + 1, 0);
    series_init(&m->lane, VIZ_MAX_LANES * VIZ_N_ACT, 0);
    series_init(&m->agg, VIZ_N_ACT, 0);
    m->lane_of[0] = xcalloc(EVT_STATE_MAX_TASKS, sizeof *m->lane_of[0]);
    m->lane_of[1] = xcalloc(EVT_STATE_MAX_TASKS, sizeof *m->lane_of[1]);
    m->t_start = -1;
    m->t_story = -1;
    snprintf(m->engine, sizeof m->engine, "real");
}

void viz_model_release(viz_model *m)
{
    viz_series *all[] = {&m->loss, &m->wloss, &m->gstep, &m->ps_bytes, &m->copy_bytes, &m->stale,
                         &m->lane, &m->agg};
    for (size_t i = 0; i < DP_ARRAY_LEN(all); i++) free(all[i]->v);
    free(m->marks);
    free(m->evals);
    free(m->ops);
    free(m->vars);
    free(m->devs);
    free(m->lane_of[0]);
    free(m->lane_of[1]);
    free(m->act[0]);
    free(m->act[1]);
    free(m->slow);
    free(m->sampled);
    memset(m, 0, sizeof *m);
}

static void grow_to(viz_model *m, int64_t t)
{
    while (t / m->bw >= VIZ_BUCKETS) {
        viz_series *all[] = {&m->loss, &m->wloss, &m->gstep, &m->ps_bytes, &m->copy_bytes,
                             &m->stale, &m->lane, &m->agg};
        for (size_t i = 0; i < DP_ARRAY_LEN(all); i++) series_halve(all[i]);
        m->bw *= 2;
        m->nb = (m->nb + 1) / 2;
    }
}

int viz_model_bucket(const viz_model *m, int64_t t)
{
    int64_t b = t < 0 ? 0 : t / m->bw;
    return b >= VIZ_BUCKETS ? VIZ_BUCKETS - 1 : (int)b;
}

static double *at(viz_series *s, int b, int j)
{
    return &s->v[(size_t)b * (size_t)s->k + (size_t)j];
}

int64_t viz_model_gstep_at(const viz_model *m, int b)
{
    double best = 0;
    if (b >= VIZ_BUCKETS) b = VIZ_BUCKETS - 1;
    for (int i = 0; i <= b; i++)
        if (m->gstep.v[i] > best) best = m->gstep.v[i];
    return (int64_t)best;
}

int viz_model_lane(const viz_model *m, int job, int task)
{
    if ((job != EVT_JOB_PS && job != EVT_JOB_WORKER) || task < 0 || task >= EVT_STATE_MAX_TASKS)
        return -1;
    return m->lane_of[job][task] - 1;
}

static int lane_for(viz_model *m, int job, int task)
{
    if ((job != EVT_JOB_PS && job != EVT_JOB_WORKER) || task < 0 || task >= EVT_STATE_MAX_TASKS)
        return -1;
    int16_t *slot = &m->lane_of[job][task];
    /* the first tasks of each job, so that many ps do not leave workers without lanes */
    if (*slot == 0 && task < VIZ_MAX_LANES / 2 && m->n_lanes < VIZ_MAX_LANES) {
        m->lane_job[m->n_lanes] = job;
        m->lane_task[m->n_lanes] = task;
        *slot = (int16_t)++m->n_lanes;
    }
    return *slot - 1;
}

static viz_act *act_for(viz_model *m, int job, int task)
{
    if ((job != EVT_JOB_PS && job != EVT_JOB_WORKER) || task < 0 || task >= EVT_STATE_MAX_TASKS)
        return NULL;
    if (task >= m->act_len[job]) {
        int n = m->act_len[job] ? m->act_len[job] : 16;
        while (n <= task) n *= 2;
        m->act[job] = xrealloc(m->act[job], (size_t)n * sizeof *m->act[job]);
        memset(m->act[job] + m->act_len[job], 0, (size_t)(n - m->act_len[job]) * sizeof *m->act[job]);
        m->act_len[job] = n;
    }
    return &m->act[job][task];
}

/* Spreads the interval [a, b) over the buckets of one activity. */
static void add_interval(viz_model *m, int lane, int is_worker, int act, int64_t a, int64_t b)
{
    if (b <= a || a < 0) return;
    for (int64_t k = a / m->bw; k * m->bw < b && k < VIZ_BUCKETS; k++) {
        int64_t lo = k * m->bw > a ? k * m->bw : a, hi = (k + 1) * m->bw < b ? (k + 1) * m->bw : b;
        if (lane >= 0) *at(&m->lane, (int)k, lane * VIZ_N_ACT + act) += (double)(hi - lo);
        if (is_worker) *at(&m->agg, (int)k, act) += (double)(hi - lo);
    }
}

/* Whether task a has nothing open. */
static int act_idle(const viz_act *a)
{
    for (int i = 0; i < VIZ_N_ACT; i++)
        if (a->cnt[i] > 0) return 0;
    return 1;
}

static void activity(viz_model *m, int job, int task, int act, int begin, int64_t t)
{
    viz_act *a = act_for(m, job, task);
    if (!a) return;
    int lane = lane_for(m, job, task);
    if (begin) {
        if (a->cnt[act]++ == 0) a->since[act] = t;
    } else if (a->cnt[act] > 0 && --a->cnt[act] == 0) {
        add_interval(m, lane, job == EVT_JOB_WORKER, act, a->since[act], t);
        if (act_idle(a)) a->idle_since = t;
    }
}

/* A task stopped (or the whole run did): whatever it had open ends now, so no phase runs
 * on past the end of the run. */
static void close_task(viz_model *m, int job, int task, int64_t t)
{
    if ((job != EVT_JOB_PS && job != EVT_JOB_WORKER) || task < 0 || task >= m->act_len[job]) return;
    viz_act *a = &m->act[job][task];
    if (act_idle(a)) return;
    int lane = viz_model_lane(m, job, task);
    for (int i = 0; i < VIZ_N_ACT; i++)
        if (a->cnt[i] > 0) {
            add_interval(m, lane, job == EVT_JOB_WORKER, i, a->since[i], t);
            a->cnt[i] = 0;
        }
    a->idle_since = t;
}

/* The chief's evaluation ending at e->t: from e->dur before it, or else from the moment
 * the chief last fell idle (the runtime pulls, evaluates, then reports), drawn on its lane. */
static void evaluation(viz_model *m, const evt_record *e, int64_t t)
{
    int64_t t0 = t;
    if (e->dur > 0) t0 = t - e->dur;
    else if (e->job == EVT_JOB_WORKER && e->task >= 0 && e->task < m->act_len[EVT_JOB_WORKER]) {
        const viz_act *a = &m->act[EVT_JOB_WORKER][e->task];
        if (act_idle(a) && a->idle_since > 0) t0 = a->idle_since;
    }
    if (t0 < 0) t0 = 0;
    if (m->n_evals == m->cap_evals) {
        m->cap_evals = m->cap_evals ? 2 * m->cap_evals : 32;
        m->evals = xrealloc(m->evals, m->cap_evals * sizeof *m->evals);
    }
    m->evals[m->n_evals++] = (viz_eval){t, e->value, e->value2, e->step, t0};
    m->has_eval = 1;
    if (e->job == EVT_JOB_WORKER && t0 < t)
        add_interval(m, lane_for(m, EVT_JOB_WORKER, e->task), 1, VIZ_ACT_EVAL, t0, t);
}

/* Worker w has per-message events (sampling: it is one of the sampled workers). */
static void sampled(viz_model *m, int w)
{
    if (w < 0 || w >= EVT_STATE_MAX_TASKS) return;
    if (w >= m->sampled_len) {
        int n = m->sampled_len ? m->sampled_len : 64;
        while (n <= w) n *= 2;
        m->sampled = xrealloc(m->sampled, (size_t)n);
        memset(m->sampled + m->sampled_len, 0, (size_t)(n - m->sampled_len));
        m->sampled_len = n;
    }
    if (!m->sampled[w]) {
        m->sampled[w] = 1;
        m->n_sampled++;
    }
}

static void mark(viz_model *m, const evt_record *e)
{
    if (m->n_marks >= VIZ_MAX_MARKS) return;
    if (m->n_marks == m->cap_marks) {
        m->cap_marks = m->cap_marks ? 2 * m->cap_marks : 64;
        m->marks = xrealloc(m->marks, m->cap_marks * sizeof *m->marks);
    }
    m->marks[m->n_marks++] = (viz_mark){e->t, e->kind, e->job, e->task, e->value};
}

static viz_var *var_for(viz_model *m, uint32_t name)
{
    for (int i = m->n_vars - 1; i >= 0; i--)
        if (m->vars[i].name == name) return &m->vars[i];
    if (m->n_vars == m->cap_vars) {
        m->cap_vars = m->cap_vars ? 2 * m->cap_vars : 16;
        m->vars = xrealloc(m->vars, (size_t)m->cap_vars * sizeof *m->vars);
    }
    viz_var *v = &m->vars[m->n_vars++];
    *v = (viz_var){name, 0, 0, 0, -1};
    return v;
}

int viz_model_var_index(const viz_model *m, uint32_t name)
{
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].name == name) return i;
    return -1;
}

int viz_model_device_index(const viz_model *m, uint32_t device)
{
    for (int i = 0; i < m->n_devs; i++)
        if (m->devs[i].device == device) return i;
    return -1;
}

int viz_model_task_devices(const viz_model *m, int job, int task, uint32_t *ids, int max)
{
    int n = 0;
    for (int i = 0; i < m->n_devs && n < max; i++)
        if (m->devs[i].job == job && m->devs[i].task == task) ids[n++] = m->devs[i].device;
    return n;
}

static void device(viz_model *m, int job, int task, uint32_t dev)
{
    if (!dev || viz_model_device_index(m, dev) >= 0 || m->n_devs >= 4096) return;
    if (m->n_devs == m->cap_devs) {
        m->cap_devs = m->cap_devs ? 2 * m->cap_devs : 16;
        m->devs = xrealloc(m->devs, (size_t)m->cap_devs * sizeof *m->devs);
    }
    m->devs[m->n_devs++] = (viz_taskdev){(uint8_t)job, task, dev};
}

static void mode_from_json(viz_model *m, json_t *o)
{
    const char *eng = json_string_value(json_object_get(o, "engine"));
    if (eng && !strcmp(eng, "local")) m->local = 1;   /* one machine: `downpour local` */
    const char *mode = json_string_value(json_object_get(o, "mode"));
    if (!mode) return;
    json_int_t backup = json_integer_value(json_object_get(o, "backup_workers"));
    snprintf(m->run_mode, sizeof m->run_mode, "%s", mode);
    m->run_backup = (int)(backup > 0 && backup < 65536 ? backup : 0);
    json_t *sb = json_object_get(o, "staleness_bound");
    if (!sb) sb = json_object_get(o, "staleness");
    if (!strcmp(mode, "sync") && backup > 0)
        snprintf(m->mode, sizeof m->mode, "sync, %lld backup", (long long)backup);
    else if (!strcmp(mode, "ssp") && json_is_integer(sb))
        snprintf(m->mode, sizeof m->mode, "ssp, bound %lld", (long long)json_integer_value(sb));
    else
        snprintf(m->mode, sizeof m->mode, "%s", mode);
}

static void set_slow(viz_model *m, long w, double f)
{
    if (w < 0 || w >= EVT_STATE_MAX_TASKS || !(f > 0) || !isfinite(f)) return;
    if (w >= m->slow_len) {
        int n = m->slow_len ? m->slow_len : 16;
        while (n <= w) n *= 2;
        m->slow = xrealloc(m->slow, (size_t)n * sizeof *m->slow);
        for (int i = m->slow_len; i < n; i++) m->slow[i] = 0;
        m->slow_len = n;
    }
    m->slow[w] = f;
}

/* "worker:3x4,worker:5x1.5" (the run description's spelling) or "3:4" (the runtime's
 * older slow_worker); anything else is ignored. */
static void stragglers_from(viz_model *m, const char *s)
{
    while (s && *s) {
        char *end;
        if (!strncmp(s, "worker:", 7)) s += 7;
        long w = strtol(s, &end, 10);
        if (end != s && (*end == 'x' || *end == ':')) {
            const char *f = end + 1;
            double v = strtod(f, &end);
            if (end != f) set_slow(m, w, v);
        }
        s = strchr(s, ',');
        if (s) s++;
    }
}

double viz_model_slow(const viz_model *m, int w)
{
    return w >= 0 && w < m->slow_len && m->slow[w] > 1 ? m->slow[w] : 0;
}

const char *viz_model_link(const viz_model *m, int job, int task)
{
    for (int i = 0; i < m->n_links; i++)
        if (m->links[i].job == job && m->links[i].task == task) return m->links[i].label;
    return NULL;
}

/* `cluster --net`: "net": [{"job": "worker", "task": 1, "label": "1 Mbit/s"}, ...] */
static void links_from(viz_model *m, json_t *net)
{
    m->n_links = 0;
    for (size_t i = 0; json_is_array(net) && i < json_array_size(net); i++) {
        json_t *e = json_array_get(net, i);
        const char *job = json_string_value(json_object_get(e, "job"));
        const char *label = json_string_value(json_object_get(e, "label"));
        json_t *task = json_object_get(e, "task");
        if (!job || !label || !json_is_integer(task) || m->n_links == (int)DP_ARRAY_LEN(m->links)) continue;
        m->links[m->n_links].job = !strcmp(job, "ps") ? EVT_JOB_PS : EVT_JOB_WORKER;
        m->links[m->n_links].task = (int)json_integer_value(task);
        snprintf(m->links[m->n_links].label, sizeof m->links[0].label, "%s", label);
        m->n_links++;
    }
}

static void meta_run(viz_model *m, json_t *o)
{
    links_from(m, json_object_get(o, "net"));
    json_t *cfg = json_object_get(o, "config");
    json_t *where[2] = {o, json_is_object(cfg) ? cfg : NULL};
    for (int i = 0; i < 2 && where[i]; i++) {
        const char *st = json_string_value(json_object_get(where[i], "straggler"));
        if (!st) st = json_string_value(json_object_get(where[i], "slow_worker"));
        if (st) stragglers_from(m, st);
    }
    const char *lvl = json_string_value(json_object_get(o, "trace_level"));
    if (lvl && !strcmp(lvl, "sample")) m->trace_level = VIZ_TRACE_SAMPLE;
    else if (lvl && !strcmp(lvl, "steps")) m->trace_level = VIZ_TRACE_STEPS;
    for (int i = 0; i < 2 && where[i]; i++) {   /* a fork: "fork": {"at_step", "set"} */
        json_t *f = json_object_get(where[i], "fork");
        json_t *at = json_is_object(f) ? json_object_get(f, "at_step") : NULL;
        if (!json_is_integer(at) || json_integer_value(at) < 1) continue;
        m->fork_step = (int64_t)json_integer_value(at);
        json_t *set = json_object_get(f, "set");
        m->fork_set[0] = 0;
        for (size_t k = 0; json_is_array(set) && k < json_array_size(set); k++) {
            const char *kv = json_string_value(json_array_get(set, k));
            size_t used = strlen(m->fork_set);
            if (kv) snprintf(m->fork_set + used, sizeof m->fork_set - used, "%s%s", used ? ", " : "", kv);
        }
    }
    json_t *cl = json_object_get(o, "cluster");
    json_t *nw = json_is_object(cl) ? json_object_get(cl, "workers") : json_object_get(o, "workers");
    if (json_is_integer(nw) && json_integer_value(nw) > 0 && json_integer_value(nw) < EVT_STATE_MAX_TASKS)
        m->meta_workers = (int)json_integer_value(nw);
    json_t *np = json_is_object(cl) ? json_object_get(cl, "ps") : json_object_get(o, "ps");
    if (json_is_integer(np) && json_integer_value(np) > 0 && json_integer_value(np) < EVT_STATE_MAX_TASKS)
        m->meta_ps = (int)json_integer_value(np);
}

int viz_model_sample_note(const viz_model *m, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (m->trace_level == VIZ_TRACE_FULL) return 0;
    int all = m->meta_workers > m->n_workers ? m->meta_workers : m->n_workers;
    char a[32], b[32];
    viz_fmt_count(a, sizeof a, m->trace_level == VIZ_TRACE_STEPS ? 0 : m->n_sampled);
    viz_fmt_count(b, sizeof b, all);
    snprintf(buf, n, "%s sampled of %s", a, b);
    return 1;
}

const viz_eval *viz_model_eval_at(const viz_model *m, int64_t t)
{
    /* evaluations are few (one per --eval-every steps) and in time order */
    for (size_t i = 0; i < m->n_evals; i++) {
        const viz_eval *ev = &m->evals[i];
        if (ev->t0 > t) break;
        if (t < ev->t) return ev;
    }
    return NULL;
}

void viz_model_diff_stats(const viz_model *m, int64_t t0, int64_t t1, viz_diff_stats *out)
{
    /* a bin's staleness: exact below 8, then about the middle of the bin (geometric) */
    static const double mid[VIZ_STALE_BINS] = {0, 1, 2, 3, 4, 5, 6, 7, 16, 90, 720, 4000};
    double wait = 0, busy = 0, n_st = 0, sum_st = 0, drops = 0;
    memset(out, 0, sizeof *out);
    out->stale = -1;
    if (t1 <= t0 || m->nb <= 0 || t0 >= (int64_t)m->nb * m->bw) return;
    int b0 = viz_model_bucket(m, t0), b1 = viz_model_bucket(m, t1 - 1);
    for (int b = b0; b <= b1; b++) {
        /* a bucket counts by the share of it inside [t0, t1), so that two runs bucketed
         * differently (on different clocks) still read the same */
        int64_t lo = (int64_t)b * m->bw > t0 ? (int64_t)b * m->bw : t0;
        int64_t hi = (int64_t)(b + 1) * m->bw < t1 ? (int64_t)(b + 1) * m->bw : t1;
        double k = hi > lo ? (double)(hi - lo) / (double)m->bw : 0;
        const double *ag = m->agg.v + (size_t)b * (size_t)m->agg.k;
        for (int a = 0; a < VIZ_N_ACT; a++) busy += ag[a] * k;
        wait += ag[VIZ_ACT_WAIT] * k;
        const double *st = m->stale.v + (size_t)b * (size_t)m->stale.k;
        for (int j = 0; j < VIZ_STALE_BINS; j++) n_st += st[j] * k, sum_st += st[j] * k * mid[j];
        drops += st[VIZ_STALE_BINS] * k;
    }
    int nw = m->n_workers > 0 ? m->n_workers : 1;
    double span = (double)(t1 - t0) * nw;
    out->wait = span > 0 ? wait / span : 0;
    out->busy = busy > 0;
    out->drops = drops;
    out->applies = n_st;
    if (n_st > 0) out->stale = sum_st / n_st;
}

void viz_model_metadata(viz_model *m, const char *json)
{
    json_t *o = json ? json_loads(json, 0, NULL) : NULL;
    if (!o) return;
    meta_run(m, o);
    const char *eng = json_string_value(json_object_get(o, "engine"));
    if (eng) snprintf(m->engine, sizeof m->engine, "%s", eng);
    const char *keys[] = {"title", "scenario", "name"};
    for (size_t i = 0; i < DP_ARRAY_LEN(keys); i++) {
        const char *t = json_string_value(json_object_get(o, keys[i]));
        if (t && *t) {
            snprintf(m->title, sizeof m->title, "%s", t);
            break;
        }
    }
    mode_from_json(m, o);
    if (m->mode[0]) m->metadata_mode = 1;
    json_decref(o);
}

static void loss_point(viz_model *m, int b, int worker, double loss)
{
    if (!isfinite(loss)) return;
    *at(&m->loss, b, 0) += loss;
    *at(&m->loss, b, 1) += 1;
    if (worker >= 0 && worker < VIZ_LOSS_WORKERS) {
        *at(&m->wloss, b, 2 * worker) += loss;
        *at(&m->wloss, b, 2 * worker + 1) += 1;
    }
}

static void traffic(viz_model *m, int b, int ps, int push, int64_t bytes)
{
    if (ps < 0 || bytes <= 0) return;
    int k = ps < VIZ_PS_SERIES ? ps : VIZ_PS_SERIES - 1;
    *at(&m->ps_bytes, b, 2 * k + push) += (double)bytes;
}

void viz_model_add(viz_model *m, const evt_record *e, const char *(*str)(const void *, uint32_t),
                   const void *ctx)
{
    int64_t t = e->t < 0 ? 0 : e->t;
    grow_to(m, t);
    int b = (int)(t / m->bw);
    if (b + 1 > m->nb) m->nb = b + 1;
    if (t > m->t_last) m->t_last = t;
    m->events++;
    if (e->job == EVT_JOB_PS && e->task >= m->n_ps && e->task < EVT_STATE_MAX_TASKS) {
        if (e->kind == EVT_TASK_START || e->kind == EVT_DEVICE || e->kind == EVT_APPLY)
            m->n_ps = e->task + 1;
    }
    if (e->job == EVT_JOB_WORKER && e->task >= m->n_workers && e->task < EVT_STATE_MAX_TASKS)
        m->n_workers = e->task + 1;
    int is_w = e->job == EVT_JOB_WORKER;
    switch (e->kind) {
    case EVT_CLUSTER_START:
        if (m->t_start < 0) m->t_start = t;
        if (!m->metadata_mode && str) {
            json_t *o = json_loads(str(ctx, e->str), 0, NULL);
            if (o) {
                mode_from_json(m, o);
                json_decref(o);
            }
        }
        break;
    case EVT_TASK_START:
        lane_for(m, e->job, e->task);
        break;
    case EVT_TASK_STOP:
        close_task(m, e->job, e->task, t);
        break;
    case EVT_CLUSTER_STOP:
        for (int j = EVT_JOB_PS; j <= EVT_JOB_WORKER; j++)
            for (int k = 0; k < m->act_len[j]; k++) close_task(m, j, k, t);
        break;
    case EVT_DEVICE:
        device(m, e->job, e->task, e->device);
        break;
    case EVT_VAR_DEFINE: {
        viz_var *v = var_for(m, e->var);
        v->bytes = e->bytes;
        v->shape = e->str;
        break;
    }
    case EVT_VAR_PLACE: {
        viz_var *v = var_for(m, e->var);
        v->ps = e->peer;
        v->device = e->device;
        if (e->peer >= m->n_ps && e->peer < EVT_STATE_MAX_TASKS) m->n_ps = e->peer + 1;
        if (m->n_ops < VIZ_MAX_OPS) {
            if (m->n_ops == m->cap_ops) {
                m->cap_ops = m->cap_ops ? 2 * m->cap_ops : 64;
                m->ops = xrealloc(m->ops, m->cap_ops * sizeof *m->ops);
            }
            m->ops[m->n_ops++] = (viz_op){e->var, 0, e->device, 1};
        }
        break;
    }
    case EVT_OP_PLACE:
        if (m->n_ops < VIZ_MAX_OPS) {
            if (m->n_ops == m->cap_ops) {
                m->cap_ops = m->cap_ops ? 2 * m->cap_ops : 64;
                m->ops = xrealloc(m->ops, m->cap_ops * sizeof *m->ops);
            }
            m->ops[m->n_ops++] = (viz_op){e->var, e->str, e->device, 0};
        }
        break;
    case EVT_PULL_BEGIN:
    case EVT_PUSH_BEGIN: {
        int act = e->kind == EVT_PULL_BEGIN ? VIZ_ACT_PULL : VIZ_ACT_PUSH;
        if (is_w && m->t_story < 0) m->t_story = t;   /* the first transfer ends start-up */
        activity(m, e->job, e->task, act, 1, t);
        if (e->peer >= 0) activity(m, EVT_JOB_PS, e->peer, act, 1, t);
        if (e->peer >= 0 && is_w) sampled(m, e->task);
        break;
    }
    case EVT_PULL_END:
    case EVT_PUSH_END: {
        int push = e->kind == EVT_PUSH_END;
        int act = push ? VIZ_ACT_PUSH : VIZ_ACT_PULL;
        activity(m, e->job, e->task, act, 0, t);
        if (e->peer >= 0) activity(m, EVT_JOB_PS, e->peer, act, 0, t);
        traffic(m, b, e->peer, push, e->bytes);
        if (e->peer < 0 && e->str && e->device && e->bytes > 0) {   /* a copy between devices */
            int d = viz_model_device_index(m, e->device);
            if (d >= 0 && d < VIZ_MACHINE_DEVICES) *at(&m->copy_bytes, b, 2 * d + push) += (double)e->bytes;
        }
        if (e->dur > m->max_dur) m->max_dur = e->dur;
        if (e->dur > 0) {
            m->dur_sum[push] += (double)e->dur;
            m->dur_n[push]++;
        }
        break;
    }
    case EVT_COMPUTE_BEGIN:
    case EVT_COMPUTE_END:
        activity(m, e->job, e->task, VIZ_ACT_COMPUTE, e->kind == EVT_COMPUTE_BEGIN, t);
        break;
    case EVT_PACED_BEGIN:
    case EVT_PACED_END:
        if (e->kind == EVT_PACED_BEGIN) m->has_paced = 1;
        activity(m, e->job, e->task, VIZ_ACT_PACED, e->kind == EVT_PACED_BEGIN, t);
        break;
    case EVT_BARRIER_WAIT:
    case EVT_SSP_WAIT:
        activity(m, e->job, e->task, VIZ_ACT_WAIT, 1, t);
        break;
    case EVT_BARRIER_RELEASE:
    case EVT_SSP_RELEASE:
        activity(m, e->job, e->task, VIZ_ACT_WAIT, 0, t);
        break;
    case EVT_APPLY: {
        if (e->job == EVT_JOB_PS && e->peer >= 0) sampled(m, e->peer);   /* its peer is a worker */
        *at(&m->stale, b, viz_stale_bin(e->value)) += 1;
        if ((double)e->step > *at(&m->gstep, b, 0)) *at(&m->gstep, b, 0) = (double)e->step;
        break;
    }
    case EVT_DROP:
        if (e->job == EVT_JOB_PS && e->peer >= 0) sampled(m, e->peer);   /* its peer is a worker */
        *at(&m->stale, b, VIZ_STALE_BINS) += 1;
        break;
    case EVT_GLOBAL_STEP:
        if (m->t_story < 0) m->t_story = t;
        if ((double)e->step > *at(&m->gstep, b, 0)) *at(&m->gstep, b, 0) = (double)e->step;
        break;
    case EVT_STEP_END:
        loss_point(m, b, is_w ? e->task : -1, e->value);
        break;
    case EVT_EVAL:
        evaluation(m, e, t);
        mark(m, e);
        break;
    case EVT_CHECKPOINT_WRITE:
    case EVT_CHECKPOINT_RESTORE:
    case EVT_FAILURE:
    case EVT_RECOVERY:
        mark(m, e);
        break;
    case EVT_PS_RETRY:
        /* A worker lost a ps: every worker gives up its step and session, so what the
         * worker and the ps lanes had open ends here (its ends never come). */
        if (is_w && e->value <= 1) {
            close_task(m, EVT_JOB_WORKER, e->task, t);
            for (int p = 0; p < m->act_len[EVT_JOB_PS]; p++) close_task(m, EVT_JOB_PS, p, t);
        }
        break;
    default:
        break;
    }
}

double viz_model_loss_max(const viz_model *m)
{
    double mx = 0;
    for (int b = 0; b < m->nb; b++) {
        double n = m->loss.v[2 * b + 1];
        if (n > 0 && m->loss.v[2 * b] / n > mx) mx = m->loss.v[2 * b] / n;
    }
    for (size_t i = 0; i < m->n_evals; i++)
        if (isfinite(m->evals[i].loss) && m->evals[i].loss > mx) mx = m->evals[i].loss;
    return mx > 0 ? mx : 1;
}

int viz_model_rate_span(const viz_model *m)
{
    int64_t gs = viz_model_gstep_at(m, m->nb - 1);
    double step_ns = gs > 0 ? (double)m->t_last / (double)gs : (double)m->t_last / 10;
    double span = 1.5 * step_ns / (double)m->bw;
    double hi = m->nb / 4 > 16 ? m->nb / 4 : 16;
    return (int)(span < 16 ? 16 : span > hi ? hi : span);
}

/* Series column of ps p and the share of it that is p's own. */
static double ps_share(int p, int n_ps, int *k)
{
    *k = p < VIZ_PS_SERIES ? p : VIZ_PS_SERIES - 1;
    return p >= VIZ_PS_SERIES - 1 && n_ps > VIZ_PS_SERIES ? 1.0 / (n_ps - VIZ_PS_SERIES + 1) : 1.0;
}

void viz_model_ps_rates(const viz_model *m, int b, int span, int n_ps, double *rate)
{
    double per_s = (double)(span > 0 ? span : 1) * (double)m->bw / 1e9;
    const viz_series *sr = &m->ps_bytes;
    for (int p = 0; p < n_ps; p++) {
        int k;
        double wt = ps_share(p, n_ps, &k), sum[2] = {0, 0};
        for (int i = b - span + 1; i <= b; i++)
            if (i >= 0 && i < VIZ_BUCKETS)
                for (int d = 0; d < 2; d++) sum[d] += sr->v[(size_t)i * sr->k + 2 * k + d];
        rate[2 * p] = wt * sum[0] / per_s;
        rate[2 * p + 1] = wt * sum[1] / per_s;
    }
}

void viz_model_copy_rates(const viz_model *m, int b, int span, int n, double *rate)
{
    double per_s = (double)(span > 0 ? span : 1) * (double)m->bw / 1e9;
    const viz_series *sr = &m->copy_bytes;
    for (int d = 0; d < n; d++) {
        double sum[2] = {0, 0};
        for (int i = b - span + 1; i <= b && d < VIZ_MACHINE_DEVICES; i++)
            if (i >= 0 && i < VIZ_BUCKETS)
                for (int k = 0; k < 2; k++) sum[k] += sr->v[(size_t)i * sr->k + 2 * d + k];
        rate[2 * d] = sum[0] / per_s;
        rate[2 * d + 1] = sum[1] / per_s;
    }
}

int viz_model_one_machine(const viz_model *m)
{
    return m->local && m->n_ps == 0 && m->n_workers <= 1;
}

double viz_model_ps_rate_peak(const viz_model *m, int span, int n_ps, const int *group,
                              int n_groups)
{
    if (!group) n_groups = n_ps;
    if (span < 1) span = 1;
    const viz_series *sr = &m->ps_bytes;
    double *win = xcalloc(2 * (size_t)n_groups + 1, sizeof *win), peak = 0;
    for (int i = 0; i < m->nb && i < VIZ_BUCKETS; i++) {
        const double *in = sr->v + (size_t)i * sr->k;
        const double *out = i >= span ? sr->v + (size_t)(i - span) * sr->k : NULL;
        for (int p = 0; p < n_ps; p++) {
            int k, g = group ? group[p] : p;
            double wt = ps_share(p, n_ps, &k);
            dp_assert("viz: ps group out of range", g >= 0 && g < n_groups);
            for (int d = 0; d < 2; d++)
                win[2 * g + d] += wt * (in[2 * k + d] - (out ? out[2 * k + d] : 0));
        }
        for (int j = 0; j < 2 * n_groups; j++)
            if (win[j] > peak) peak = win[j];
    }
    free(win);
    peak /= (double)span * (double)m->bw / 1e9;
    return peak > 1 ? peak : 1;
}
