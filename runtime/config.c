/* config.c — table-driven training flags (see config.h). */
#include "runtime/config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "common/units.h"

enum ftype { F_INT, F_LLONG, F_DOUBLE, F_STR, F_BOOL, F_MODE, F_OPT, F_MODEL, F_PLACE, F_TIME };

typedef struct flag_def {
    const char *name;
    enum ftype type;
    size_t off;
    size_t size;       /* for strings */
    double min, max;
    int scope;
    const char *help;
} flag_def;

#define OFF(f) offsetof(rt_config, f)
#define STR(f) OFF(f), sizeof(((rt_config *)0)->f)

static const flag_def flags[] = {
    {"ps", F_INT, OFF(n_ps), 0, 1, 4096, RT_FLAG_CLUSTER, "N        ps tasks (default 1)"},
    {"workers", F_INT, OFF(n_workers), 0, 1, 4096, RT_FLAG_CLUSTER, "N   worker tasks (default 2)"},
    {"mode", F_MODE, OFF(mode), 0, 0, 0, RT_FLAG_TRAIN, "M      sync | async | ssp (default sync)"},
    {"backup-workers", F_INT, OFF(backup_workers), 0, 0, 4095, RT_FLAG_TRAIN,
     "B  sync: replicas_to_aggregate = workers - B (default 0)"},
    {"staleness", F_INT, OFF(staleness), 0, 0, 1000000, RT_FLAG_TRAIN, "S ssp: staleness bound (default 3)"},
    {"steps", F_LLONG, OFF(steps), 0, 1, 1e12, RT_FLAG_TRAIN, "N     train until the global step reaches N (default 1000)"},
    {"batch", F_INT, OFF(batch), 0, 1, 65536, RT_FLAG_TRAIN, "N     batch size per worker (default 64)"},
    {"lr", F_DOUBLE, OFF(lr), 0, 1e-9, 1e3, RT_FLAG_TRAIN, "X        learning rate (default 0.05)"},
    {"optimizer", F_OPT, OFF(optimizer), 0, 0, 0, RT_FLAG_TRAIN, "O sgd | momentum | adagrad (default sgd)"},
    {"model", F_MODEL, OFF(model), 0, 0, 0, RT_FLAG_TRAIN, "M     softmax | mlp (default mlp)"},
    {"hidden", F_INT, OFF(hidden), 0, 1, 16384, RT_FLAG_TRAIN, "N    mlp hidden units (default 128)"},
    {"data", F_STR, STR(data), 1, 0, RT_FLAG_TRAIN, "DIR    Fashion-MNIST IDX directory, or 'synthetic'"},
    {"placement", F_PLACE, OFF(placement), 0, 0, 0, RT_FLAG_TRAIN, "P round-robin | greedy (default round-robin)"},
    {"seed", F_LLONG, OFF(seed), 0, 0, 9e18, RT_FLAG_TRAIN, "N      seed for initialisation and data order (default 1)"},
    {"partition", F_INT, OFF(partition), 0, 1, 1024, RT_FLAG_TRAIN, "K split weight matrices into K parts along axis 0"},
    {"eval-every", F_INT, OFF(eval_every), 0, 0, 1e9, RT_FLAG_TRAIN, "N chief evaluates every N global steps (0: only at the end)"},
    {"trace", F_STR, STR(trace), 1, 0, RT_FLAG_CLUSTER, "FILE  record the run's events (starts a hub)"},
    {"hub", F_STR, STR(hub), 1, 0, RT_FLAG_TRAIN, "ADDR    send events to an existing hub"},
    {"view", F_BOOL, OFF(view), 0, 0, 1, RT_FLAG_CLUSTER, "        open the live viewer"},
    {"log-device-placement", F_BOOL, OFF(log_placement), 0, 0, 1, RT_FLAG_TRAIN,
     " print TensorFlow's device placement log"},
    {"checkpoint-dir", F_STR, STR(checkpoint_dir), 1, 0, RT_FLAG_TRAIN, "DIR write checkpoints; resume from one"},
    {"summary", F_STR, STR(summary), 1, 0, RT_FLAG_CLUSTER, "FILE also write the summary JSON to FILE"},
    {"connect-timeout", F_INT, OFF(connect_timeout), 0, 1, 86400, RT_FLAG_TRAIN,
     "S seconds a worker waits for its ps (default 60)"},
    {"log-every", F_INT, OFF(log_every), 0, 1, 1e9, RT_FLAG_TRAIN, "N worker progress line every N local steps (default 100)"},
    {"synthetic-samples", F_INT, OFF(synthetic_n), 0, 100, 1e7, RT_FLAG_TRAIN,
     "N size of the synthetic training set (default 6000)"},
    {"slow-worker", F_STR, STR(slow_worker), 1, 0, RT_FLAG_TRAIN, "I:F worker I computes F times slower (a straggler)"},
    {"pace", F_TIME, OFF(pace_s), 0, 0, 3600, RT_FLAG_TRAIN,
     "T      every worker step takes at least T (e.g. 200ms), to watch live (default 0: off)"},
    {"quiet", F_BOOL, OFF(quiet), 0, 0, 1, RT_FLAG_TRAIN, "       fewer progress lines"},
};

void rt_config_init(rt_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_ps = 1;
    c->n_workers = 2;
    c->mode = MODE_SYNC;
    c->staleness = 3;
    c->steps = 1000;
    c->batch = 64;
    c->lr = 0.05;
    c->optimizer = OPT_SGD;
    c->model = MODEL_MLP;
    c->hidden = 128;
    snprintf(c->data, sizeof c->data, "%s", "/usr/share/datasets/fashion-mnist");
    c->placement = PLACE_ROUND_ROBIN;
    c->seed = 1;
    c->partition = 1;
    c->eval_every = 500;
    c->connect_timeout = 60;
    c->log_every = 100;
    c->synthetic_n = 6000;
}

static const flag_def *find_flag(const char *name)
{
    for (size_t i = 0; i < DP_ARRAY_LEN(flags); i++)
        if (strcmp(flags[i].name, name) == 0) return &flags[i];
    return NULL;
}

int rt_config_flag_is_bool(const char *name)
{
    const flag_def *f = find_flag(name);
    return f && f->type == F_BOOL;
}

int rt_config_flag(rt_config *c, int scope, const char *name, const char *value, char *err)
{
    const flag_def *f = find_flag(name);
    if (!f || !(f->scope & scope)) return 0;
    char *base = (char *)c + f->off;
    if (f->type == F_BOOL) {
        if (value && strcmp(value, "true") && strcmp(value, "1") && strcmp(value, "false") &&
            strcmp(value, "0"))
            return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is not true or false", name, value);
        *(int *)base = !value || !strcmp(value, "true") || !strcmp(value, "1");
        return 1;
    }
    if (!value) return dp_fail(err, DP_EINVAL, "--%s: missing value", name);
    long long iv;
    double dv;
    int rc = 0;
    switch (f->type) {
    case F_INT:
    case F_LLONG:
        if (dp_parse_int(value, &iv))
            return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is not an integer", name, value);
        if (iv < f->min || iv > f->max)
            return dp_fail(err, DP_EINVAL, "--%s: %lld is outside %.0f..%.0f", name, iv, f->min, f->max);
        if (f->type == F_INT) *(int *)base = (int)iv;
        else *(long long *)base = iv;
        break;
    case F_DOUBLE:
        if (dp_parse_double(value, &dv))
            return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is not a number", name, value);
        if (dv < f->min || dv > f->max)
            return dp_fail(err, DP_EINVAL, "--%s: %g is outside %g..%g", name, dv, f->min, f->max);
        *(double *)base = dv;
        break;
    case F_STR:
        if (!*value) return dp_fail(err, DP_EINVAL, "--%s: empty value", name);
        if (strlen(value) >= f->size)
            return dp_fail(err, DP_EINVAL, "--%s: value longer than %zu bytes", name, f->size - 1);
        memcpy(base, value, strlen(value) + 1);
        break;
    case F_TIME: {
        char what[64];
        snprintf(what, sizeof what, "--%s", name);
        int trc = dp_parse_time(value, what, &dv, err);
        if (trc) return trc;
        if (dv < f->min || dv > f->max)
            return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is outside 0..%gs", name, value, f->max);
        *(double *)base = dv;
        break;
    }
    case F_MODE: rc = update_mode_parse(value, (update_mode *)base); break;
    case F_OPT: rc = optim_parse(value, (opt_kind *)base); break;
    case F_MODEL: rc = model_parse(value, (model_kind *)base); break;
    case F_PLACE: rc = placement_parse(value, (placement_kind *)base); break;
    case F_BOOL: break;
    }
    if (rc) {
        const char *choices = f->type == F_MODE ? "sync, async or ssp"
                            : f->type == F_OPT ? "sgd, momentum or adagrad"
                            : f->type == F_MODEL ? "softmax or mlp" : "round-robin or greedy";
        return dp_fail(err, DP_EINVAL, "--%s: \"%s\" is not one of %s", name, value, choices);
    }
    return 1;
}

int rt_config_slow_worker(const rt_config *c, int *index, double *factor)
{
    *index = -1;
    *factor = 1.0;
    if (!c->slow_worker[0]) return DP_OK;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", c->slow_worker);
    char *colon = strchr(buf, ':');
    long long i;
    double f;
    if (!colon) return DP_EINVAL;
    *colon = 0;
    if (dp_parse_int(buf, &i) || i < 0 || dp_parse_double(colon + 1, &f) || f < 1.0 || f > 1000)
        return DP_EINVAL;
    *index = (int)i;
    *factor = f;
    return DP_OK;
}

int rt_config_check(const rt_config *c, char *err)
{
    if (c->backup_workers >= c->n_workers)
        return dp_fail(err, DP_EINVAL, "--backup-workers: %d leaves no replica to aggregate with %d workers",
                       c->backup_workers, c->n_workers);
    if (c->backup_workers && c->mode != MODE_SYNC)
        return dp_fail(err, DP_EINVAL, "--backup-workers: only meaningful with --mode sync");
    int si;
    double sf;
    if (rt_config_slow_worker(c, &si, &sf))
        return dp_fail(err, DP_EINVAL, "--slow-worker: \"%s\" is not I:F (worker index, factor 1..1000)",
                       c->slow_worker);
    if (si >= c->n_workers)
        return dp_fail(err, DP_EINVAL, "--slow-worker: worker %d does not exist (%d workers)", si,
                       c->n_workers);
    return DP_OK;
}

void rt_config_usage(FILE *f, int scope)
{
    for (size_t i = 0; i < DP_ARRAY_LEN(flags); i++)
        if (flags[i].scope & scope) fprintf(f, "  --%s %s\n", flags[i].name, flags[i].help);
}

int rt_config_to_argv(const rt_config *c, char **argv)
{
    int n = 0;
    for (size_t i = 0; i < DP_ARRAY_LEN(flags); i++) {
        const flag_def *f = &flags[i];
        if (!(f->scope & RT_FLAG_TRAIN)) continue;
        const char *base = (const char *)c + f->off;
        char val[RT_PATH_MAX + 8];
        switch (f->type) {
        case F_INT: snprintf(val, sizeof val, "%d", *(const int *)base); break;
        case F_LLONG: snprintf(val, sizeof val, "%lld", *(const long long *)base); break;
        case F_DOUBLE: snprintf(val, sizeof val, "%.17g", *(const double *)base); break;
        case F_TIME: snprintf(val, sizeof val, "%.9fs", *(const double *)base); break;
        case F_STR:
            if (!*base) continue;
            snprintf(val, sizeof val, "%s", base);
            break;
        case F_BOOL:
            if (!*(const int *)base) continue;
            snprintf(val, sizeof val, "true");
            break;
        case F_MODE: snprintf(val, sizeof val, "%s", update_mode_name(c->mode)); break;
        case F_OPT: snprintf(val, sizeof val, "%s", optim_name(c->optimizer)); break;
        case F_MODEL: snprintf(val, sizeof val, "%s", model_name(c->model)); break;
        case F_PLACE: snprintf(val, sizeof val, "%s", placement_name(c->placement)); break;
        }
        size_t len = strlen(f->name) + strlen(val) + 4;
        argv[n] = xmalloc(len);
        snprintf(argv[n], len, "--%s=%s", f->name, val);
        n++;
    }
    return n;
}

uint64_t rt_config_hash(const rt_config *c)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%d|%d|%d|%d|%d|%.17g|%d|%d|%d|%d|%d", c->mode, c->backup_workers,
             c->staleness, c->batch, c->optimizer, c->lr, c->model, c->hidden, c->placement,
             c->partition, c->n_workers);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = buf; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

int rt_parse_args(rt_config *c, int scope, int argc, char **argv, rt_extra_flag_fn extra,
                  void *ctx, const char *const *extra_bool, char *err)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return dp_fail(err, DP_EINVAL, "unexpected argument \"%s\" (see --help)", a);
        char name[128];
        const char *value = NULL;
        const char *eq = strchr(a + 2, '=');
        size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nlen >= sizeof name) return dp_fail(err, DP_EINVAL, "unknown flag \"%s\"", a);
        memcpy(name, a + 2, nlen);
        name[nlen] = 0;
        int is_bool = rt_config_flag_is_bool(name);
        for (const char *const *b = extra_bool; b && *b; b++)
            if (!strcmp(*b, name)) is_bool = 1;
        if (eq) value = eq + 1;
        else if (!is_bool) {
            if (i + 1 >= argc) return dp_fail(err, DP_EINVAL, "--%s: missing value", name);
            value = argv[++i];
        }
        int rc = rt_config_flag(c, scope, name, value, err);
        if (rc < 0) return rc;
        if (rc == 0 && extra) rc = extra(ctx, name, value, err);
        if (rc < 0) return rc;
        if (rc == 0) return dp_fail(err, DP_EINVAL, "unknown flag \"--%s\" (see --help)", name);
    }
    return 0;
}
