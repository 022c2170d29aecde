/* towers.c — a task's replicas over its devices (see towers.h). A tower is one nn_net
 * placed on devices; tw_step runs every tower's driver on its own thread (each op then
 * runs on its device's thread), waits for all, and averages their gradients on the
 * variables' device weighted by slice size, so the result is the full batch's gradient. */
#include "runtime/towers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

#define TW_MAX DEV_MAX

typedef struct tw_tower {
    struct tw_set *set;
    int index;
    char prefix[32];          /* "tower_0" or "" */
    nn_net *net;
    nn_place place;
    float *grads[4];          /* own gradients (several towers), else the caller's */
    int64_t t_compute, t_copy;
    int off, n;               /* this step's slice */
    float loss;
} tw_tower;

struct tw_set {
    dev_set *devs;
    rt_instr *in;
    model_kind model;
    int hidden, n_tensors, var_dev;
    int n;
    tw_tower tw[TW_MAX];
    uint32_t dev_ids[DEV_MAX];
    dev_rule rules[DEV_MAX_RULES];   /* --device-for, parsed once */
    int n_rules;
    unsigned char rule_used[DEV_MAX_RULES];   /* a rule was the first to match a name */
    /* this step */
    float *const *params;
    float *const *grads;
    const float *x;
    const uint8_t *y;
    int64_t step;
};

/* name in this tower: "tower_1/hidden/MatMul", or name itself for a lone replica. */
static const char *in_tower(const tw_tower *w, const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", w->prefix, w->prefix[0] ? "/" : "", name);
    return buf;
}

/* COMPUTE_BEGIN/END on the device; var names the run's first op ("tower_1/hidden/MatMul",
 * or "average_gradients" for the averaging). */
static void compute_event(tw_tower *w, int dev, const char *op, int begin)
{
    rt_instr *in = w->set->in;
    if (!in) return;
    evt_record e = rt_instr_record(in, begin ? EVT_COMPUTE_BEGIN : EVT_COMPUTE_END);
    e.var = rt_instr_str(in, op);
    e.device = w->set->dev_ids[dev];
    e.step = w->set->step;
    if (begin) w->t_compute = e.t;
    else e.dur = e.t - w->t_compute;
    rt_instr_emit(in, &e);
}

static void on_compute(void *ctx, int dev, int op, int begin)
{
    char name[160];
    compute_event(ctx, dev, in_tower(ctx, op >= 0 ? graph_op_name((graph_op)op) : "", name, sizeof name), begin);
}

static void on_copy(void *ctx, const char *name, int src, int dst, size_t bytes, int grad, int begin)
{
    tw_tower *w = ctx;
    rt_instr *in = w->set->in;
    if (!in) return;
    evt_kind k = grad ? (begin ? EVT_PUSH_BEGIN : EVT_PUSH_END) : (begin ? EVT_PULL_BEGIN : EVT_PULL_END);
    evt_record e = rt_instr_record(in, k);
    char full[160];
    e.var = rt_instr_str(in, grad ? name : in_tower(w, name, full, sizeof full));
    e.device = w->set->dev_ids[dst];
    e.str = w->set->dev_ids[src];
    e.bytes = (int64_t)bytes;
    e.step = w->set->step;
    if (begin) w->t_copy = e.t;
    else e.dur = e.t - w->t_copy;
    rt_instr_emit(in, &e);
}

/* The devices replicas run on: the GPUs when there are some, else the CPUs. */
static int compute_devices(const dev_set *devs, int *out)
{
    int n = 0, gpus = dev_count_kind(devs, DEV_GPU);
    for (int i = 0; i < dev_count(devs); i++)
        if (dev_kind_of(devs, i) == (gpus ? DEV_GPU : DEV_CPU)) out[n++] = i;
    return n;
}

static int is_hidden_op(int op)
{
    return op == GOP_HID_CONCAT || op == GOP_HID_MATMUL || op == GOP_HID_ADD || op == GOP_HID_RELU ||
           op == GOP_RELU_GRAD || op == GOP_HID_ADD_GRAD || op == GOP_HID_MATMUL_GRAD_W || op == GOP_X ||
           op == GOP_Y;
}

/* The rule that decides name's device has been used. */
static void note_rule(tw_set *t, const char *name)
{
    int r = dev_rule_first(t->rules, t->n_rules, name);
    if (r >= 0) t->rule_used[r] = 1;
}

/* A rule that matched no op or variable is surely a misspelt pattern (a tower's ops are
 * "tower_0/hidden/MatMul", a lone one's "hidden/MatMul"): said once, as a warning. */
static void warn_unused_rules(const tw_set *t)
{
    char example[160];
    in_tower(&t->tw[0], graph_op_name(GOP_HID_MATMUL), example, sizeof example);
    for (int r = 0; r < t->n_rules; r++)
        if (!t->rule_used[r])
            dp_log(DP_LOG_WARN, dev_task_name(t->devs),
                   "--device-for '%s=%s' matches no op or variable here, so it places nothing (names "
                   "are like '%s'; --log-device-placement lists them)",
                   t->rules[r].pattern, t->rules[r].device, example);
}

/* Places tower w's ops and variables: the strategy's default, then the rules. */
static int place_tower(tw_set *t, tw_tower *w, const rt_config *cfg, int strategy, const int *cdev,
                       int n_cdev, char *err)
{
    const dev_rule *rules = t->rules;
    int n_rules = t->n_rules;
    int first = cdev[0], second = n_cdev > 1 ? cdev[1] : cdev[0];
    int partitioned = 0;
    for (int op = 0; op < GOP_COUNT; op++) {
        int fwd = graph_op_forward((graph_op)op);
        int def;
        if (strategy == RT_STRATEGY_TOWERS) def = cdev[w->index];
        else if (strategy == RT_STRATEGY_SPLIT)
            def = t->model == MODEL_MLP ? (is_hidden_op(op) ? first : second) : (op <= GOP_Y ? first : second);
        else def = first;
        if (fwd != op) def = w->place.op[fwd];   /* colocated with its forward op */
        char name[160];
        in_tower(w, graph_op_name((graph_op)op), name, sizeof name);
        int in_graph = graph_op_in((graph_op)op, t->model, partitioned);
        if (in_graph) note_rule(t, name);
        int d = in_graph ? dev_place(t->devs, rules, n_rules, name, def, cfg->allow_soft, NULL, err) : def;
        if (d < 0) return d;
        w->place.op[op] = d;
    }
    /* Variables live in host memory, where the optimizer applies them: on /cpu:0, or
     * (split) on their layer's device when that is a CPU; a rule moves one only to
     * another CPU device. */
    for (int i = 0; i < t->n_tensors; i++) {
        const char *vn = nn_tensor_name(w->net, i);
        int def = t->var_dev;
        if (strategy == RT_STRATEGY_SPLIT) {
            int layer = t->model == MODEL_MLP && i < 2 ? first : second;
            if (dev_kind_of(t->devs, layer) == DEV_CPU) def = layer;
        }
        note_rule(t, vn);
        int d = dev_place(t->devs, rules, n_rules, vn, def, 1, NULL, err);
        if (d < 0) return d;
        w->place.var[i] = dev_kind_of(t->devs, d) == DEV_CPU ? d : def;
    }
    return DP_OK;
}

/* A set on devs for cfg's model and rules, with no tower yet (NULL with err: a rule that
 * does not parse). */
static tw_set *set_new(const rt_config *cfg, dev_set *devs, rt_instr *in, char *err)
{
    tw_set *t = xcalloc(1, sizeof *t);
    t->devs = devs;
    t->in = in;
    t->model = cfg->model;
    t->hidden = cfg->hidden;
    t->var_dev = 0;
    if (dev_rules_parse(cfg->device_for, t->rules, &t->n_rules, DEV_MAX_RULES, "--device-for", err)) {
        free(t);
        return NULL;
    }
    return t;
}

int tw_check_placement(const rt_config *cfg, dev_set *devs, char *err)
{
    tw_set *t = set_new(cfg, devs, NULL, err);
    if (!t) return DP_EINVAL;
    int cdev[DEV_MAX];
    int n_cdev = compute_devices(devs, cdev);
    t->n = 1;
    nn_net *probe = nn_new(cfg->model, cfg->hidden, 1);
    t->n_tensors = nn_tensors(probe);
    t->tw[0].set = t;
    t->tw[0].net = probe;
    int rc = place_tower(t, &t->tw[0], cfg, RT_STRATEGY_SINGLE, cdev, n_cdev, err);
    if (!rc) warn_unused_rules(t);
    nn_free(probe);
    free(t);
    return rc;
}

tw_set *tw_new(const rt_config *cfg, dev_set *devs, int strategy, rt_instr *in, char *err)
{
    tw_set *t = set_new(cfg, devs, in, err);
    if (!t) return NULL;
    int cdev[DEV_MAX];
    int n_cdev = compute_devices(devs, cdev);
    t->n = strategy == RT_STRATEGY_TOWERS ? n_cdev : 1;
    if (cfg->batch < t->n) {
        dp_fail(err, DP_EINVAL, "--batch: %d is smaller than the %d towers (one slice each)", cfg->batch, t->n);
        free(t);
        return NULL;
    }
    tw_set_instr(t, in);
    nn_net *probe = nn_new(cfg->model, cfg->hidden, 1);
    t->n_tensors = nn_tensors(probe);
    int max_slice = (cfg->batch + t->n - 1) / t->n;
    for (int i = 0; i < t->n; i++) {
        tw_tower *w = &t->tw[i];
        w->set = t;
        w->index = i;
        if (t->n > 1) snprintf(w->prefix, sizeof w->prefix, "tower_%d", i);
        w->net = probe;
        int rc = place_tower(t, w, cfg, strategy, cdev, n_cdev, err);
        w->net = NULL;
        if (rc) {
            nn_free(probe);
            tw_free(t);
            return NULL;
        }
        nn_hooks h = {.ctx = w, .compute = on_compute, .copy = on_copy};
        w->net = nn_new_placed(cfg->model, cfg->hidden, max_slice, devs, &w->place, &h);
        if (t->n > 1)
            for (int k = 0; k < t->n_tensors; k++)
                w->grads[k] = xcalloc(nn_tensor_size(probe, k), sizeof(float));
    }
    nn_free(probe);
    warn_unused_rules(t);
    return t;
}

void tw_set_instr(tw_set *t, rt_instr *in)
{
    t->in = in;
    for (int d = 0; d < dev_count(t->devs); d++) t->dev_ids[d] = rt_instr_str(in, dev_name(t->devs, d));
}

void tw_free(tw_set *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++) {
        nn_free(t->tw[i].net);
        for (int k = 0; k < 4; k++) free(t->tw[i].grads[k]);
    }
    free(t);
}

int tw_towers(const tw_set *t) { return t->n; }
int tw_var_device(const tw_set *t) { return t->var_dev; }
int tw_tensor_device(const tw_set *t, int k) { return t->tw[0].place.var[k]; }
int tw_tower_device(const tw_set *t, int i) { return t->tw[i].place.op[GOP_XENT]; }

static void tower_run(int i, void *arg)
{
    tw_set *t = arg;
    tw_tower *w = &t->tw[i];
    float *const *g = t->n > 1 ? w->grads : t->grads;
    w->loss = nn_train_step(w->net, t->params, g, t->x + (size_t)w->off * MODEL_INPUTS, t->y + w->off, w->n);
}

typedef struct avg_arg { tw_set *t; int batch; } avg_arg;

/* The full batch's gradient: the towers' mean-loss gradients weighted by slice size. */
static void average_on(void *p)
{
    avg_arg *a = p;
    tw_set *t = a->t;
    nn_net *net = t->tw[0].net;
    for (int k = 0; k < t->n_tensors; k++) {
        size_t n = nn_tensor_size(net, k);
        float *out = t->grads[k];
        float w0 = (float)t->tw[0].n / (float)a->batch;
        for (size_t j = 0; j < n; j++) out[j] = w0 * t->tw[0].grads[k][j];
        for (int i = 1; i < t->n; i++) {
            float wi = (float)t->tw[i].n / (float)a->batch;
            const float *g = t->tw[i].grads[k];
            for (size_t j = 0; j < n; j++) out[j] += wi * g[j];
        }
    }
}

float tw_step(tw_set *t, float *const *params, float *const *grads, const float *x,
              const uint8_t *y, int batch, int64_t step, char *err)
{
    t->params = params;
    t->grads = grads;
    t->x = x;
    t->y = y;
    t->step = step;
    for (int i = 0, off = 0; i < t->n; i++) {
        t->tw[i].off = off;
        t->tw[i].n = batch / t->n + (i < batch % t->n);
        off += t->tw[i].n;
    }
    dev_parallel(t->n, tower_run, t);
    double loss = 0;
    for (int i = 0; i < t->n; i++) {
        if (!isfinite(t->tw[i].loss) && nn_error(t->tw[i].net)[0]) {
            dp_fail(err, DP_ERR, "%s: %s", dev_name(t->devs, tw_tower_device(t, i)), nn_error(t->tw[i].net));
            return NAN;
        }
        loss += (double)t->tw[i].loss * t->tw[i].n;
    }
    if (t->n > 1) {
        avg_arg a = {t, batch};
        tw_tower *w0 = &t->tw[0];
        compute_event(w0, t->var_dev, "average_gradients", 1);
        dev_call(t->devs, t->var_dev, average_on, &a);
        compute_event(w0, t->var_dev, "average_gradients", 0);
    }
    return (float)(loss / batch);
}

static void log_op(FILE *f, const tw_set *t, const char *prefix, const char *name, const char *type, int dev)
{
    if (f) graph_log_op(f, prefix, name, type, dev_name(t->devs, dev));
    else if (t->in) {
        char full[192];
        snprintf(full, sizeof full, "%s%s%s", prefix ? prefix : "", prefix && *prefix ? "/" : "", name);
        evt_record e = rt_instr_record(t->in, EVT_OP_PLACE);
        e.var = rt_instr_str(t->in, full);
        e.str = rt_instr_str(t->in, type);
        e.device = t->dev_ids[dev];
        rt_instr_emit(t->in, &e);
    }
}

static void log_all(FILE *f, const tw_set *t)
{
    for (int i = 0; i < t->n; i++)
        for (int op = 0; op < GOP_COUNT; op++)
            if (graph_op_in((graph_op)op, t->model, 0))
                log_op(f, t, t->tw[i].prefix, graph_op_name((graph_op)op), graph_op_type((graph_op)op),
                       t->tw[i].place.op[op]);
    if (t->n < 2) return;
    nn_net *net = t->tw[0].net;
    for (int k = 0; k < t->n_tensors; k++) {
        char nm[96];
        snprintf(nm, sizeof nm, "average_gradients/%s/Mean", nn_tensor_name(net, k));
        log_op(f, t, NULL, nm, "Mean", t->var_dev);
    }
}

void tw_log_ops(FILE *f, const tw_set *t)
{
    log_all(f, t);
}

void tw_announce(const tw_set *t)
{
    if (t->in) log_all(NULL, t);
}
