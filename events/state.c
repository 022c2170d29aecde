/* state.c — the replay state (see state.h): applying one event at a time to a picture of
 * the run. Task arrays are indexed by task index (bounded by EVT_STATE_MAX_TASKS so a
 * hostile index cannot force a huge allocation); variables are found through a small
 * open-addressing map from string id to array slot. trace_reader_state_at lives in
 * trace.c, next to the block index it needs. */
#include "events/state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

static const char *const phase_names[EVT_PHASE_COUNT] = {
    "idle", "pulling", "computing", "pushing", "barrier", "ssp_blocked", "dead", "stopped",
    "paced",
};

const char *evt_phase_name(int phase)
{
    if (phase < 0 || phase >= EVT_PHASE_COUNT) return "unknown";
    return phase_names[phase];
}

void evt_state_init(evt_state *st)
{
    memset(st, 0, sizeof *st);
    st->eval_step = -1;
    st->eval_accuracy = NAN;
    st->eval_loss = NAN;
}

void evt_state_release(evt_state *st)
{
    if (!st) return;
    free(st->ps);
    free(st->workers);
    free(st->vars);
    free(st->devices);
    free(st->var_slots_);
    evt_state_init(st);
}

void evt_state_reset(evt_state *st)
{
    /* Variable and device arrays keep their capacity; task arrays are rebuilt. */
    evt_var_state *vars = st->vars;
    evt_device_state *devices = st->devices;
    int32_t *slots = st->var_slots_;
    int nslots = st->var_nslots_, vcap = st->vars_cap_, dcap = st->devices_cap_;
    free(st->ps);
    free(st->workers);
    evt_state_init(st);
    st->vars = vars;
    st->vars_cap_ = vcap;
    st->devices = devices;
    st->devices_cap_ = dcap;
    st->var_slots_ = slots;
    st->var_nslots_ = nslots;
    if (slots) memset(slots, 0, (size_t)nslots * sizeof *slots);
}

static void *dup_array(const void *src, size_t n, size_t size)
{
    if (!src || n == 0) return NULL;
    void *p = xmalloc(n * size);
    memcpy(p, src, n * size);
    return p;
}

void evt_state_copy(evt_state *dst, const evt_state *src)
{
    if (dst == src) return;
    evt_state_release(dst);
    *dst = *src;
    dst->ps = dup_array(src->ps, (size_t)src->ps_len, sizeof *src->ps);
    dst->workers = dup_array(src->workers, (size_t)src->workers_len, sizeof *src->workers);
    dst->vars = dup_array(src->vars, (size_t)src->n_vars, sizeof *src->vars);
    dst->vars_cap_ = src->n_vars;
    dst->devices = dup_array(src->devices, (size_t)src->n_devices, sizeof *src->devices);
    dst->devices_cap_ = src->n_devices;
    dst->var_slots_ = dup_array(src->var_slots_, (size_t)src->var_nslots_,
                                sizeof *src->var_slots_);
}

static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static int task_equal(const evt_task_state *a, const evt_task_state *b)
{
    return a->seen == b->seen && a->started == b->started && a->job == b->job &&
           a->index == b->index && a->host == b->host && a->pid == b->pid &&
           a->phase == b->phase && a->phase_since == b->phase_since &&
           a->pulls_in_flight == b->pulls_in_flight &&
           a->pushes_in_flight == b->pushes_in_flight && a->computing == b->computing &&
           a->paced == b->paced &&
           a->in_barrier == b->in_barrier && a->in_ssp == b->in_ssp &&
           a->dead == b->dead && a->stopped == b->stopped && a->reconnecting == b->reconnecting &&
           a->step == b->step &&
           a->steps_done == b->steps_done && same_double(a->loss, b->loss) &&
           a->applies == b->applies && a->drops == b->drops &&
           a->bytes_pulled == b->bytes_pulled && a->bytes_pushed == b->bytes_pushed &&
           a->events_dropped == b->events_dropped && a->fail_reason == b->fail_reason;
}

/* Task arrays may differ in length only by trailing never-seen slots. */
static int tasks_equal(const evt_task_state *a, int na, const evt_task_state *b, int nb)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int sa = i < na && a[i].seen, sb = i < nb && b[i].seen;
        if (sa != sb) return 0;
        if (sa && !task_equal(&a[i], &b[i])) return 0;
    }
    return 1;
}

int evt_state_equal(const evt_state *a, const evt_state *b)
{
    if (a->t != b->t || a->events != b->events ||
        memcmp(a->counts, b->counts, sizeof a->counts) != 0 ||
        a->cluster_started != b->cluster_started || a->cluster_stopped != b->cluster_stopped ||
        a->config != b->config || a->n_ps != b->n_ps || a->n_workers != b->n_workers ||
        a->global_step != b->global_step || a->applies != b->applies ||
        a->drops != b->drops || !same_double(a->staleness_sum, b->staleness_sum) ||
        !same_double(a->staleness_max, b->staleness_max) ||
        !same_double(a->last_staleness, b->last_staleness) ||
        a->eval_step != b->eval_step || !same_double(a->eval_accuracy, b->eval_accuracy) ||
        !same_double(a->eval_loss, b->eval_loss) || a->checkpoints != b->checkpoints ||
        a->failures != b->failures || a->events_dropped != b->events_dropped ||
        a->n_vars != b->n_vars || a->n_devices != b->n_devices)
        return 0;
    if (!tasks_equal(a->ps, a->ps_len, b->ps, b->ps_len)) return 0;
    if (!tasks_equal(a->workers, a->workers_len, b->workers, b->workers_len)) return 0;
    for (int i = 0; i < a->n_vars; i++) {
        const evt_var_state *x = &a->vars[i], *y = &b->vars[i];
        if (x->name != y->name || x->shape != y->shape || x->bytes != y->bytes ||
            x->ps != y->ps || x->device != y->device || x->version != y->version ||
            x->drops != y->drops || !same_double(x->last_staleness, y->last_staleness))
            return 0;
    }
    for (int i = 0; i < a->n_devices; i++) {
        const evt_device_state *x = &a->devices[i], *y = &b->devices[i];
        if (x->job != y->job || x->task != y->task || x->name != y->name ||
            x->busy != y->busy || x->ops != y->ops)
            return 0;
    }
    return 1;
}

/* ---- lookups ------------------------------------------------------------------------ */

const evt_task_state *evt_state_task(const evt_state *st, int job, int index)
{
    const evt_task_state *arr = job == EVT_JOB_PS ? st->ps
                              : job == EVT_JOB_WORKER ? st->workers : NULL;
    int len = job == EVT_JOB_PS ? st->ps_len : job == EVT_JOB_WORKER ? st->workers_len : 0;
    if (!arr || index < 0 || index >= len || !arr[index].seen) return NULL;
    return &arr[index];
}

/* The task slot for (job, index), created when new; NULL for untracked jobs/indices. */
static evt_task_state *task_slot(evt_state *st, int job, int32_t index)
{
    evt_task_state **arr;
    int *len;
    if (job == EVT_JOB_PS) {
        arr = &st->ps;
        len = &st->ps_len;
    } else if (job == EVT_JOB_WORKER) {
        arr = &st->workers;
        len = &st->workers_len;
    } else {
        return NULL;
    }
    if (index < 0 || index >= EVT_STATE_MAX_TASKS) return NULL;
    if (index >= *len) {
        int n = index + 1;
        *arr = xrealloc(*arr, (size_t)n * sizeof **arr);
        memset(*arr + *len, 0, (size_t)(n - *len) * sizeof **arr);
        *len = n;
    }
    evt_task_state *tk = &(*arr)[index];
    if (!tk->seen) {
        tk->seen = 1;
        tk->job = (uint8_t)job;
        tk->index = index;
        tk->loss = NAN;
    }
    return tk;
}

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352d;
    x ^= x >> 15;
    x *= 0x846ca68b;
    return x ^ (x >> 16);
}

static int var_find(const evt_state *st, uint32_t name)
{
    if (!st->var_slots_) return -1;
    uint32_t mask = (uint32_t)st->var_nslots_ - 1;
    for (uint32_t i = mix32(name) & mask;; i = (i + 1) & mask) {
        int32_t s = st->var_slots_[i];
        if (s == 0) return -1;
        if (st->vars[s - 1].name == name) return s - 1;
    }
}

const evt_var_state *evt_state_var(const evt_state *st, uint32_t name)
{
    int i = name ? var_find(st, name) : -1;
    return i < 0 ? NULL : &st->vars[i];
}

static void var_index(evt_state *st, int idx)
{
    uint32_t mask = (uint32_t)st->var_nslots_ - 1;
    uint32_t i = mix32(st->vars[idx].name) & mask;
    while (st->var_slots_[i]) i = (i + 1) & mask;
    st->var_slots_[i] = idx + 1;
}

static evt_var_state *var_slot(evt_state *st, uint32_t name)
{
    if (name == 0) return NULL;
    int i = var_find(st, name);
    if (i >= 0) return &st->vars[i];
    if (st->n_vars >= (1 << 24)) return NULL;          /* bound hostile traces */
    if (st->n_vars == st->vars_cap_) {
        st->vars_cap_ = st->vars_cap_ ? 2 * st->vars_cap_ : 16;
        st->vars = xrealloc(st->vars, (size_t)st->vars_cap_ * sizeof *st->vars);
    }
    if ((st->n_vars + 1) * 2 > st->var_nslots_) {
        st->var_nslots_ = st->var_nslots_ ? 2 * st->var_nslots_ : 32;
        free(st->var_slots_);
        st->var_slots_ = xcalloc((size_t)st->var_nslots_, sizeof *st->var_slots_);
        for (int k = 0; k < st->n_vars; k++) var_index(st, k);
    }
    evt_var_state *v = &st->vars[st->n_vars];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->ps = -1;
    var_index(st, st->n_vars++);
    return v;
}

/* The device (job, task, name), created when new. A task remembers its last device
 * (devices are never removed, so the index stays valid, also in copies), so that the
 * linear search runs once per task and device, not at every compute of 10,000 workers. */
static evt_device_state *device_slot(evt_state *st, evt_task_state *tk, int job, int32_t task, uint32_t name)
{
    if (name == 0) return NULL;
    if (tk && tk->dev_slot_ > 0 && tk->dev_slot_ <= st->n_devices) {
        evt_device_state *d = &st->devices[tk->dev_slot_ - 1];
        if (d->name == name && d->task == task && d->job == job) return d;
    }
    for (int i = 0; i < st->n_devices; i++) {
        evt_device_state *d = &st->devices[i];
        if (d->name == name && d->task == task && d->job == job) {
            if (tk) tk->dev_slot_ = i + 1;
            return d;
        }
    }
    if (st->n_devices >= 65536) return NULL;
    if (tk) tk->dev_slot_ = st->n_devices + 1;
    if (st->n_devices == st->devices_cap_) {
        st->devices_cap_ = st->devices_cap_ ? 2 * st->devices_cap_ : 8;
        st->devices = xrealloc(st->devices, (size_t)st->devices_cap_ * sizeof *st->devices);
    }
    evt_device_state *d = &st->devices[st->n_devices++];
    memset(d, 0, sizeof *d);
    d->job = (uint8_t)job;
    d->task = task;
    d->name = name;
    return d;
}

/* ---- apply -------------------------------------------------------------------------- */

static int derive_phase(const evt_task_state *tk)
{
    if (tk->dead) return EVT_PHASE_DEAD;
    if (tk->stopped) return EVT_PHASE_STOPPED;
    if (tk->in_barrier) return EVT_PHASE_BARRIER;
    if (tk->in_ssp) return EVT_PHASE_SSP;
    if (tk->paced) return EVT_PHASE_PACED;
    if (tk->computing) return EVT_PHASE_COMPUTING;
    if (tk->pushes_in_flight) return EVT_PHASE_PUSHING;
    if (tk->pulls_in_flight) return EVT_PHASE_PULLING;
    return EVT_PHASE_IDLE;
}

static void clear_activity(evt_task_state *tk)
{
    tk->pulls_in_flight = tk->pushes_in_flight = tk->computing = tk->paced = 0;
    tk->in_barrier = tk->in_ssp = 0;
}

/* Sums of values read from a file wrap instead of overflowing (no UB on hostile input). */
static int64_t add_wrap(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t sub_wrap(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static void dec(int *x)
{
    if (*x > 0) (*x)--;
}

void evt_state_apply(evt_state *st, const evt_record *e)
{
    int kind = e->kind < EVT_KIND_COUNT ? e->kind : 0;
    st->counts[kind]++;
    st->events++;
    st->t = e->t;
    if (kind == 0) return;

    evt_task_state *tk = task_slot(st, e->job, e->task);
    evt_var_state *v;
    evt_device_state *d;
    switch ((evt_kind)kind) {
    case EVT_CLUSTER_START:
        st->cluster_started = 1;
        st->config = e->str;
        break;
    case EVT_CLUSTER_STOP:
        st->cluster_stopped = 1;
        break;
    case EVT_TASK_START:
        if (!tk) break;
        if (!tk->started) {
            tk->started = 1;
            if (e->job == EVT_JOB_PS) st->n_ps++;
            else st->n_workers++;
        }
        tk->host = e->str;
        tk->pid = e->bytes;
        tk->stopped = tk->dead = 0;
        break;
    case EVT_TASK_STOP:
        if (!tk) break;
        tk->stopped = 1;
        clear_activity(tk);
        break;
    case EVT_DEVICE:
        device_slot(st, tk, e->job, e->task, e->device);
        break;
    case EVT_VAR_DEFINE:
        if ((v = var_slot(st, e->var))) {
            v->shape = e->str;
            v->bytes = e->bytes;
        }
        break;
    case EVT_VAR_PLACE:
        if ((v = var_slot(st, e->var))) {
            v->ps = e->peer;
            v->device = e->device;
        }
        break;
    case EVT_OP_PLACE:
        if ((d = device_slot(st, tk, e->job, e->task, e->device))) d->ops++;
        break;
    case EVT_PULL_BEGIN:
        if (tk) {
            tk->pulls_in_flight++;
            tk->step = e->step;
        }
        break;
    case EVT_PULL_END:
        if (tk) {
            dec(&tk->pulls_in_flight);
            tk->reconnecting = 0;
            tk->bytes_pulled = add_wrap(tk->bytes_pulled, e->bytes);
        }
        break;
    case EVT_PUSH_BEGIN:
        if (tk) {
            tk->pushes_in_flight++;
            tk->step = e->step;
        }
        break;
    case EVT_PUSH_END:
        if (tk) {
            dec(&tk->pushes_in_flight);
            tk->bytes_pushed = add_wrap(tk->bytes_pushed, e->bytes);
        }
        break;
    case EVT_APPLY:
        st->applies++;
        st->staleness_sum += e->value;
        if (e->value > st->staleness_max) st->staleness_max = e->value;
        st->last_staleness = e->value;
        if (e->step > st->global_step) st->global_step = e->step;
        if (tk) {
            tk->applies++;
            tk->step = e->step;
        }
        if ((v = var_slot(st, e->var))) {
            /* APPLY carries the variable's version after the update; in sync mode
             * several gradients land in one update, so count by it, not by events. */
            if (e->step > 0) {
                if (e->step > v->version) v->version = e->step;
            } else {
                v->version++;
            }
            v->last_staleness = e->value;
        }
        break;
    case EVT_DROP:
        st->drops++;
        if (tk) tk->drops++;
        if ((v = var_slot(st, e->var))) v->drops++;
        break;
    case EVT_COMPUTE_BEGIN:
        if (tk) {
            tk->computing++;
            tk->step = e->step;
        }
        if ((d = device_slot(st, tk, e->job, e->task, e->device))) d->busy++;
        break;
    case EVT_COMPUTE_END:
        if (tk) dec(&tk->computing);
        if ((d = device_slot(st, tk, e->job, e->task, e->device))) dec(&d->busy);
        break;
    case EVT_PACED_BEGIN:
        if (tk) {
            tk->paced++;
            tk->step = e->step;
        }
        break;
    case EVT_PACED_END:
        if (tk) dec(&tk->paced);
        break;
    case EVT_STEP_END:
        if (tk) {
            tk->steps_done++;
            tk->step = e->step;
            tk->loss = e->value;
        }
        break;
    case EVT_BARRIER_WAIT:
        if (tk) tk->in_barrier = 1;
        break;
    case EVT_BARRIER_RELEASE:
        if (tk) tk->in_barrier = 0;
        break;
    case EVT_SSP_WAIT:
        if (tk) tk->in_ssp = 1;
        break;
    case EVT_SSP_RELEASE:
        if (tk) tk->in_ssp = 0;
        break;
    case EVT_GLOBAL_STEP:
        st->global_step = e->step;
        break;
    case EVT_CHECKPOINT_RESTORE:            /* a restore sets the step back, and every variable */
        st->global_step = e->step;
        for (int i = 0; i < st->n_vars; i++) st->vars[i].version = e->step;
        break;
    case EVT_EVAL:
        st->eval_step = e->step;
        st->eval_accuracy = e->value;
        st->eval_loss = e->value2;
        break;
    case EVT_CHECKPOINT_WRITE:
        st->checkpoints++;
        break;
    case EVT_FAILURE:
        st->failures++;
        if (tk) {
            tk->dead = 1;
            tk->fail_reason = e->str ? e->str : tk->fail_reason;
            clear_activity(tk);
        }
        break;
    case EVT_RECOVERY:
        if (tk) {
            tk->dead = 0;
            tk->fail_reason = 0;
        }
        break;
    case EVT_EVENTS_DROPPED:
        /* Cumulative per task: the total moves by the difference. Untracked tasks
         * (the hub, a client) keep one cumulative figure per job. */
        if (tk) {
            st->events_dropped = add_wrap(st->events_dropped, sub_wrap(e->bytes, tk->events_dropped));
            tk->events_dropped = e->bytes;
        } else {
            int j = e->job & 3;
            st->events_dropped = add_wrap(st->events_dropped, sub_wrap(e->bytes, st->other_dropped_[j]));
            st->other_dropped_[j] = e->bytes;
        }
        break;
    case EVT_BARRIER_TIMEOUT:
        st->failures++;   /* the run stops; the task itself is not dead */
        break;
    case EVT_GRAD_REJECTED:
        st->drops++;   /* never applied */
        break;
    case EVT_PS_RETRY:
        /* The worker gave up its step and session: what was in flight never ends. The
         * ps's own FAILURE marks the ps dead. */
        if (tk && e->value <= 1) {
            clear_activity(tk);
            tk->reconnecting = 1;
        }
        break;
    case EVT_LOG:
    case EVT_CLOCK_SYNC:
    case EVT_KIND_COUNT:
        break;
    }
    if (tk) {
        int ph = derive_phase(tk);
        if (ph != tk->phase) {
            tk->phase = ph;
            tk->phase_since = e->t;
        }
    }
}
