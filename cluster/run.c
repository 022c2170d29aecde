/* run.c — everything the run description's key table (run_keys.c) drives (see run.h):
 * value parsing with the checks and messages of every flag and scenario key, defaults,
 * argv parsing (suggesting a near key for a misspelt flag), --help lines, the table as
 * `downpour keys` prints it, and the summary's common part. */
#include "cluster/run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "common/units.h"

/* Index of `text` among the '|'-separated choices, or -1. */
static int choice_index(const char *choices, const char *text)
{
    size_t tl = strlen(text);
    int idx = 0;
    for (const char *p = choices; p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == tl && !strncmp(p, text, len)) return idx;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* "sync|async|ssp" as "sync, async or ssp". */
static void choices_text(const char *choices, char *buf, size_t n)
{
    size_t o = 0;
    int count = 1;
    for (const char *p = choices; *p; p++) count += *p == '|';
    int seen = 0;
    for (const char *p = choices; *p && o + 8 < n; p++) {
        if (*p == '|') {
            seen++;
            const char *sep = seen == count - 1 ? " or " : ", ";
            o += (size_t)snprintf(buf + o, n - o, "%s", sep);
        } else {
            buf[o++] = *p;
        }
    }
    buf[o < n ? o : n - 1] = 0;
}

/* One straggler: "worker:IxF", or the runtime's older "I:F". */
static int parse_straggler(const run_key *k, const char *s, const char *what, run_straggler *out,
                           char *err)
{
    const char *num = s, *fac = NULL;
    if (!strncmp(s, "worker:", 7)) {
        num = s + 7;
        fac = strchr(num, 'x');
    } else {
        fac = strchr(num, ':');
    }
    char ibuf[32];
    size_t il = fac ? (size_t)(fac - num) : 0;
    long long idx;
    if (!fac || il == 0 || il >= sizeof ibuf)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not worker:IxF (e.g. worker:3x4)", what, s);
    memcpy(ibuf, num, il);
    ibuf[il] = 0;
    if (dp_parse_int(ibuf, &idx) || idx < 0 || idx >= SPEC_MAX_WORKERS)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not worker:IxF (e.g. worker:3x4)", what, s);
    double f;
    if (dp_parse_double(fac + 1, &f) || !(f >= k->min) || f > k->max)
        return dp_fail(err, DP_EINVAL, "%s: factor \"%s\" is not a number in %g..%g", what, fac + 1,
                       k->min, k->max);
    out->worker = (int)idx;
    out->factor = f;
    return DP_OK;
}

/* "worker:7" / "ps:0" at the start of s: characters consumed, or -1. */
static int parse_fault_task(const char *s, int *job, int *task)
{
    int off;
    if (!strncmp(s, "worker:", 7)) { *job = JOB_WORKER; off = 7; }
    else if (!strncmp(s, "ps:", 3)) { *job = JOB_PS; off = 3; }
    else return -1;
    if (s[off] < '0' || s[off] > '9') return -1;
    long v = 0;
    int i = off;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (s[i] - '0');
        if (v > 1000000) return -1;
    }
    *task = (int)v;
    return i;
}

int run_fault_parse(const char *s, const char *what, run_fault *out, char *err)
{
    const char *usage = "JOB:I@step=N or JOB:I@time=T, optionally ,restart=T; e.g. worker:1@step=200";
    int job, task;
    int n = s ? parse_fault_task(s, &job, &task) : -1;
    if (n < 0 || s[n] != '@') return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not %s", what, s ? s : "", usage);
    memset(out, 0, sizeof *out);
    out->job = job;
    out->task = task;
    out->at_step = -1;
    out->at_s = -1;
    out->restart_s = -1;
    char buf[128], w2[96];
    if (strlen(s + n + 1) >= sizeof buf) return dp_fail(err, DP_EINVAL, "%s: \"%s\" is too long", what, s);
    snprintf(buf, sizeof buf, "%s", s + n + 1);
    char *restart = strstr(buf, ",restart=");
    if (restart) {
        *restart = 0;
        snprintf(w2, sizeof w2, "%s restart", what);
        int rc = dp_parse_time(restart + 9, w2, &out->restart_s, err);
        if (rc) return rc;
    }
    const char *at = !strncmp(buf, "time=", 5) ? buf + 5 : !strncmp(buf, "t=", 2) ? buf + 2 : NULL;
    if (!strncmp(buf, "step=", 5)) {
        long long v;
        if (dp_parse_int(buf + 5, &v) || v < 0)
            return dp_fail(err, DP_EINVAL, "%s: step \"%s\" is not a non-negative integer", what, buf + 5);
        out->at_step = v;
    } else if (at) {
        snprintf(w2, sizeof w2, "%s time", what);
        int rc = dp_parse_time(at, w2, &out->at_s, err);
        if (rc) return rc;
    } else {
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not %s", what, s, usage);
    }
    return DP_OK;
}

void run_fault_format(const run_fault *f, char *buf, size_t n)
{
    int o = snprintf(buf, n, "%s:%d@", f->job == JOB_PS ? "ps" : "worker", f->task);
    if (o < 0 || (size_t)o >= n) return;
    if (f->at_step >= 0) o += snprintf(buf + o, n - (size_t)o, "step=%lld", (long long)f->at_step);
    else o += snprintf(buf + o, n - (size_t)o, "time=%.9gs", f->at_s);
    if (f->restart_s >= 0 && (size_t)o < n) snprintf(buf + o, n - (size_t)o, ",restart=%.9gs", f->restart_s);
}

int run_value_parse(const run_key *k, const char *text, const char *what, run_value *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->text = text;
    if (k->type == RUN_T_BOOL) {
        if (!text || !strcmp(text, "true") || !strcmp(text, "1")) out->i = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0")) out->i = 0;
        else return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not true or false", what, text);
        return DP_OK;
    }
    if (!text) return dp_fail(err, DP_EINVAL, "%s: missing value", what);
    while (*text == ' ' || *text == '\t') text++;
    out->text = text;
    if (!*text) return dp_fail(err, DP_EINVAL, "%s: empty value", what);
    char buf[128];
    int rc = DP_OK;
    switch (k->type) {
    case RUN_T_INT:
        if (dp_parse_int(text, &out->i))
            return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not an integer", what, text);
        if (out->i < k->min || out->i > k->max)
            return dp_fail(err, DP_EINVAL, "%s: %lld is outside %.0f..%.0f", what, out->i, k->min, k->max);
        return DP_OK;
    case RUN_T_REAL:
        if (dp_parse_double(text, &out->d) || !isfinite(out->d))
            return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a number", what, text);
        if ((k->min_open ? out->d <= k->min : out->d < k->min) || out->d > k->max)
            return dp_fail(err, DP_EINVAL, "%s: %g is outside %s%g, %g]", what, out->d,
                           k->min_open ? "(" : "[", k->min, k->max);
        return DP_OK;
    case RUN_T_ENUM:
        out->i = choice_index(k->choices, text);
        if (out->i < 0) {
            choices_text(k->choices, buf, sizeof buf);
            return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not one of %s", what, text, buf);
        }
        return DP_OK;
    case RUN_T_TIME:
        rc = dp_parse_time(text, what, &out->d, err);
        if (!rc && (out->d < k->min || out->d > k->max))
            return dp_fail(err, DP_EINVAL, "%s: \"%s\" is outside %gs..%gs", what, text, k->min, k->max);
        return rc;
    case RUN_T_BYTES:
        rc = dp_parse_bytes(text, what, &out->d, err);
        if (!rc && (out->d < k->min || out->d > k->max))
            return dp_fail(err, DP_EINVAL, "%s: \"%s\" is outside %g..%g bytes", what, text, k->min, k->max);
        return rc;
    case RUN_T_BANDWIDTH:
        return dp_parse_bandwidth(text, what, &out->d, err);
    case RUN_T_STRAGGLER: {
        const char *p = text;
        if (!strcmp(text, "none")) return DP_OK; /* no stragglers: clears earlier ones */
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            while (len && p[len - 1] == ' ') len--;
            if (len >= sizeof buf) return dp_fail(err, DP_EINVAL, "%s: \"%s\" is too long", what, p);
            memcpy(buf, p, len);
            buf[len] = 0;
            if (out->n_st == RUN_MAX_STRAGGLERS)
                return dp_fail(err, DP_EINVAL, "%s: at most %d stragglers", what, RUN_MAX_STRAGGLERS);
            if ((rc = parse_straggler(k, buf, what, &out->st[out->n_st], err))) return rc;
            out->n_st++;
            if (!comma) break;
            p = comma + 1;
            while (*p == ' ') p++;
        }
        return DP_OK;
    }
    case RUN_T_TEXT:
        if (strlen(text) >= 1024) return dp_fail(err, DP_EINVAL, "%s: value longer than 1023 bytes", what);
        return DP_OK;
    case RUN_T_BOOL:
        break;
    }
    return DP_OK;
}

/* Applies a shared key; returns 1 when k is not one. */
static int set_shared(run_desc *d, const run_key *k, const run_value *v)
{
    const char *n = k->name;
    if (!strcmp(n, "ps")) d->n_ps = (int)v->i;
    else if (!strcmp(n, "workers")) d->n_workers = (int)v->i;
    else if (!strcmp(n, "mode")) d->mode = (update_mode)v->i;
    else if (!strcmp(n, "backup_workers")) d->backup_workers = (int)v->i;
    else if (!strcmp(n, "staleness")) d->staleness = (int)v->i;
    else if (!strcmp(n, "steps")) d->steps = v->i;
    else if (!strcmp(n, "batch")) d->batch = (int)v->i;
    else if (!strcmp(n, "lr")) d->lr = v->d;
    else if (!strcmp(n, "optimizer")) d->optimizer = (opt_kind)v->i;
    else if (!strcmp(n, "model")) d->model = (model_kind)v->i;
    else if (!strcmp(n, "hidden")) d->hidden = (int)v->i;
    else if (!strcmp(n, "placement")) d->placement = (placement_kind)v->i;
    else if (!strcmp(n, "partition")) d->partition = (int)v->i;
    else if (!strcmp(n, "seed")) d->seed = (uint64_t)v->i;
    else if (!strcmp(n, "pace")) d->pace_s = v->d;
    else if (!strcmp(n, "straggler")) {
        if (v->n_st == 0) d->n_stragglers = 0; /* "none" */
        for (int i = 0; i < v->n_st; i++) {
            /* a worker named again takes the new factor */
            int j = 0;
            while (j < d->n_stragglers && d->stragglers[j].worker != v->st[i].worker) j++;
            if (j == RUN_MAX_STRAGGLERS) continue;
            d->stragglers[j] = v->st[i];
            if (j == d->n_stragglers) d->n_stragglers++;
        }
    } else return 1;
    return 0;
}

int run_set(run_desc *d, int engine, run_extra_fn extra, void *ctx, const char *name,
            const char *text, const char *what, char *err)
{
    const run_key *k = run_key_find(name);
    if (!k) return dp_fail(err, DP_EINVAL, "%s: unknown key", what);
    if (!(run_key_engines(k) & engine))
        return dp_fail(err, DP_EINVAL, "%s: not used by the %s", what,
                       engine == RUN_SIM ? "simulator" : "real runtime");
    run_value v;
    int rc = run_value_parse(k, text, what, &v, err);
    if (rc) return rc;
    if (set_shared(d, k, &v) == 0) return DP_OK;
    rc = extra ? extra(ctx, k, &v, what, err) : 1;
    if (rc == 1) return dp_fail(err, DP_EINVAL, "%s: not handled by this engine", what);
    return rc;
}

void run_defaults(run_desc *d, int engine, run_extra_fn extra, void *ctx)
{
    memset(d, 0, sizeof *d);
    /* the enum keys' choices are in the enums' order */
    dp_assert("run: mode choices follow update_mode", !strcmp(update_mode_name(MODE_SSP), "ssp"));
    dp_assert("run: optimizer choices follow opt_kind", !strcmp(optim_name(OPT_ADAGRAD), "adagrad"));
    dp_assert("run: model choices follow model_kind", !strcmp(model_name(MODEL_MLP), "mlp"));
    size_t n;
    const run_key *keys = run_keys(&n);
    for (size_t i = 0; i < n; i++) {
        const run_key *k = &keys[i];
        const char *def = run_key_default(k, engine);
        if (!def || !(run_key_engines(k) & engine)) continue;
        char err[DP_ERRLEN];
        int rc = run_set(d, engine, extra, ctx, k->name, def, k->name, err);
        dp_assert("run: every default passes its own checks", rc == 0);
        DP_UNUSED(rc);
    }
}

int run_check(const run_desc *d, char *err)
{
    if (d->backup_workers >= d->n_workers)
        return dp_fail(err, DP_EINVAL, "--backup-workers: %d leaves no replica to aggregate with %d workers",
                       d->backup_workers, d->n_workers);
    if (d->backup_workers && d->mode != MODE_SYNC)
        return dp_fail(err, DP_EINVAL, "--backup-workers: only meaningful with --mode sync");
    for (int i = 0; i < d->n_stragglers; i++)
        if (d->stragglers[i].worker >= d->n_workers)
            return dp_fail(err, DP_EINVAL, "--straggler: worker %d does not exist (%d workers)",
                           d->stragglers[i].worker, d->n_workers);
    return DP_OK;
}

int run_parse_argv(run_desc *d, int cmd, run_extra_fn extra, void *ctx, int argc, char **argv,
                   unsigned char *seen, char *err)
{
    int engine = cmd == RUN_CMD_SIM ? RUN_SIM : RUN_REAL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return dp_fail(err, DP_EINVAL, "unexpected argument \"%s\" (see --help)", a);
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) return dp_fail(err, DP_EINVAL, "unknown flag \"%s\" (see --help)", a);
        memcpy(name, a + 2, len);
        name[len] = 0;
        const run_key *k = run_key_find(name);
        const char *v = eq ? eq + 1 : NULL;
        if (!k && extra) {
            /* a flag of the command's own (TensorFlow's --job_name, ...): always a value */
            int bare = !v && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2));
            run_value ov = {.text = v ? v : bare ? "" : argv[i + 1]};
            char perr[DP_ERRLEN];
            int orc = extra(ctx, NULL, &ov, name, bare ? perr : err);
            /* no value to give: a flag of the command's own misses one; any other is unknown */
            if (bare && orc <= 0) return dp_fail(err, DP_EINVAL, "--%s: missing value", name);
            if (!bare && !v) v = argv[i + 1];
            if (orc < 0) return orc;
            if (orc == 0) {
                if (!eq) i++;
                continue;
            }
            if (bare) orc = 1;
            v = eq ? eq + 1 : NULL;
        }
        if (!k || !(k->cmds & cmd) || strchr(name, '_')) {
            const run_key *near = run_key_suggest(name, NULL);
            char flag[64] = "";
            if (near && (near->cmds & cmd)) run_key_flag(near, flag, sizeof flag);
            if (flag[0])
                return dp_fail(err, DP_EINVAL, "unknown flag \"--%s\" (did you mean \"%s\"? see --help)",
                               name, flag);
            return dp_fail(err, DP_EINVAL, "unknown flag \"--%s\" (see --help)", name);
        }
        if (!v && k->type != RUN_T_BOOL) {
            if (i + 1 >= argc) return dp_fail(err, DP_EINVAL, "--%s: missing value", name);
            v = argv[++i];
        }
        char what[72];
        snprintf(what, sizeof what, "--%s", name);
        int rc = run_set(d, engine, extra, ctx, k->name, v, what, err);
        if (rc) return rc;
        if (seen) {
            size_t n;
            seen[k - run_keys(&n)] = 1;  /* its place in the table */
        }
    }
    return 0;
}

void run_usage(FILE *f, int cmd)
{
    int engine = cmd == RUN_CMD_SIM ? RUN_SIM : RUN_REAL;
    size_t n;
    const run_key *keys = run_keys(&n);
    for (size_t i = 0; i < n; i++) {
        const run_key *k = &keys[i];
        if (!(k->cmds & cmd)) continue;
        char flag[64], left[96];
        run_key_flag(k, flag, sizeof flag);
        snprintf(left, sizeof left, "%s %s", flag, k->arg);
        const char *def = run_key_default(k, engine);
        fprintf(f, "  %-24s %s", left, k->help);
        if (def && k->type != RUN_T_BOOL) fprintf(f, " (default %s)", def);
        if (k->alias) fprintf(f, "; also accepted as --%s", k->alias);
        fputc('\n', f);
    }
}

int run_format(const run_desc *d, const run_key *k, char *buf, size_t n)
{
    const char *nm = k->name;
    if (!strcmp(nm, "ps")) snprintf(buf, n, "%d", d->n_ps);
    else if (!strcmp(nm, "workers")) snprintf(buf, n, "%d", d->n_workers);
    else if (!strcmp(nm, "mode")) snprintf(buf, n, "%s", update_mode_name(d->mode));
    else if (!strcmp(nm, "backup_workers")) snprintf(buf, n, "%d", d->backup_workers);
    else if (!strcmp(nm, "staleness")) snprintf(buf, n, "%d", d->staleness);
    else if (!strcmp(nm, "steps")) snprintf(buf, n, "%lld", (long long)d->steps);
    else if (!strcmp(nm, "batch")) snprintf(buf, n, "%d", d->batch);
    else if (!strcmp(nm, "lr")) snprintf(buf, n, "%.17g", d->lr);
    else if (!strcmp(nm, "optimizer")) snprintf(buf, n, "%s", optim_name(d->optimizer));
    else if (!strcmp(nm, "model")) snprintf(buf, n, "%s", model_name(d->model));
    else if (!strcmp(nm, "hidden")) snprintf(buf, n, "%d", d->hidden);
    else if (!strcmp(nm, "placement")) snprintf(buf, n, "%s", placement_name(d->placement));
    else if (!strcmp(nm, "partition")) snprintf(buf, n, "%d", d->partition);
    else if (!strcmp(nm, "seed")) snprintf(buf, n, "%llu", (unsigned long long)d->seed);
    else if (!strcmp(nm, "pace")) snprintf(buf, n, "%.9gs", d->pace_s);
    else if (!strcmp(nm, "straggler")) {
        size_t o = 0;
        buf[0] = 0;
        for (int i = 0; i < d->n_stragglers && o + 32 < n; i++)
            o += (size_t)snprintf(buf + o, n - o, "%sworker:%dx%.17g", i ? "," : "",
                                  d->stragglers[i].worker, d->stragglers[i].factor);
    } else return 1;
    return 0;
}

static json_t *num_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

void *run_summary_json(const run_desc *d, const run_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "engine", json_string(r->engine));
    json_object_set_new(o, "mode", json_string(update_mode_name(d->mode)));
    json_object_set_new(o, "ps", json_integer(d->n_ps));
    json_object_set_new(o, "workers", json_integer(d->n_workers));
    json_object_set_new(o, "steps", json_integer((json_int_t)d->steps));
    json_object_set_new(o, "global_step", json_integer((json_int_t)r->global_step));
    json_object_set_new(o, "wall_s", json_real(r->wall_s));
    json_object_set_new(o, "mean_step_s", json_real(r->mean_step_s));
    json_object_set_new(o, "samples_per_s", json_real(r->samples_per_s));
    json_object_set_new(o, "final_loss", num_or_null(r->final_loss));
    json_object_set_new(o, "test_accuracy", num_or_null(r->test_accuracy));
    json_object_set_new(o, "mean_staleness", json_real(r->mean_staleness));
    json_object_set_new(o, "max_staleness", json_integer((json_int_t)r->max_staleness));
    json_object_set_new(o, "dropped_gradients", json_integer((json_int_t)r->dropped_gradients));
    json_object_set_new(o, "min_variable_step", json_integer((json_int_t)r->min_variable_step));
    json_object_set_new(o, "bytes_pulled", json_integer((json_int_t)r->bytes_pulled));
    json_object_set_new(o, "bytes_pushed", json_integer((json_int_t)r->bytes_pushed));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "events_dropped", json_integer((json_int_t)r->events_dropped));
    json_object_set_new(o, "trace", r->trace && r->trace[0] ? json_string(r->trace) : json_null());
    json_object_set_new(o, "model", json_string(model_name(d->model)));
    json_object_set_new(o, "optimizer", json_string(optim_name(d->optimizer)));
    json_object_set_new(o, "lr", json_real(d->lr));
    json_object_set_new(o, "batch", json_integer(d->batch));
    json_object_set_new(o, "backup_workers", json_integer(d->backup_workers));
    json_object_set_new(o, "seed", json_integer((json_int_t)d->seed));
    if (d->mode == MODE_SSP) json_object_set_new(o, "staleness_bound", json_integer(d->staleness));
    return o;
}

/* "1..4096", "(0, 1000]", "sync | async | ssp", "0s..3600s", or "" */
static void range_text(const run_key *k, char *buf, size_t n)
{
    buf[0] = 0;
    switch (k->type) {
    case RUN_T_INT: snprintf(buf, n, "%.0f..%.0f", k->min, k->max); break;
    case RUN_T_REAL: snprintf(buf, n, "%s%g, %g]", k->min_open ? "(" : "[", k->min, k->max); break;
    case RUN_T_ENUM:
        snprintf(buf, n, "%s", k->choices);
        break;
    case RUN_T_TIME: snprintf(buf, n, "%gs..%gs", k->min, k->max); break;
    case RUN_T_BYTES: snprintf(buf, n, "size, e.g. 100MB"); break;
    case RUN_T_BANDWIDTH: snprintf(buf, n, "e.g. 10Gbit"); break;
    case RUN_T_STRAGGLER: snprintf(buf, n, "F in %g..%g", k->min, k->max); break;
    case RUN_T_BOOL: snprintf(buf, n, "true | false"); break;
    case RUN_T_TEXT: break;
    }
}

void run_print_keys(FILE *f)
{
    size_t n;
    const run_key *k = run_keys(&n);
    fprintf(f, "%-22s %-10s %-22s %-22s %-9s %s\n", "key", "section", "default (real / sim)", "range",
            "engines", "help");
    for (size_t i = 0; i < n; i++) {
        char def[64], range[64];
        const char *dr = k[i].def ? k[i].def : "-";
        if (k[i].def_sim) snprintf(def, sizeof def, "%s / %s", dr, k[i].def_sim);
        else snprintf(def, sizeof def, "%s", dr);
        if (strlen(def) > 22) snprintf(def + 19, sizeof def - 19, "...");
        range_text(&k[i], range, sizeof range);
        int e = run_key_engines(&k[i]);
        fprintf(f, "%-22s %-10s %-22s %-22s %-9s %s%s%s\n", k[i].name,
                k[i].section ? k[i].section : "(flag)", def, range,
                e == RUN_BOTH ? "real,sim" : e == RUN_SIM ? "sim" : "real", k[i].help,
                k[i].alias ? "; alias --" : "", k[i].alias ? k[i].alias : "");
    }
}

void run_print_keys_json(FILE *f)
{
    static const char *const types[] = {"int", "real", "enum", "time", "bytes", "bandwidth",
                                        "straggler", "text", "bool"};
    size_t n;
    const run_key *k = run_keys(&n);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        int e = run_key_engines(&k[i]);
        char flag[64];
        run_key_flag(&k[i], flag, sizeof flag);
        json_object_set_new(o, "name", json_string(k[i].name));
        json_object_set_new(o, "flag", json_string(flag));
        json_object_set_new(o, "section", k[i].section ? json_string(k[i].section) : json_null());
        json_object_set_new(o, "type", json_string(types[k[i].type]));
        json_object_set_new(o, "default", k[i].def ? json_string(k[i].def) : json_null());
        json_object_set_new(o, "default_sim", json_string(run_key_default(&k[i], RUN_SIM) ? run_key_default(&k[i], RUN_SIM) : ""));
        json_object_set_new(o, "min", json_real(k[i].min));
        json_object_set_new(o, "max", json_real(k[i].max));
        json_object_set_new(o, "choices", k[i].choices ? json_string(k[i].choices) : json_null());
        json_t *eng = json_array(), *cmds = json_array();
        if (e & RUN_REAL) json_array_append_new(eng, json_string("real"));
        if (e & RUN_SIM) json_array_append_new(eng, json_string("sim"));
        if (k[i].cmds & RUN_CMD_CLUSTER) json_array_append_new(cmds, json_string("cluster"));
        if (k[i].cmds & RUN_CMD_TASK) json_array_append_new(cmds, json_string("task"));
        if (k[i].cmds & RUN_CMD_SIM) json_array_append_new(cmds, json_string("sim"));
        if (k[i].cmds & RUN_CMD_LOCAL) json_array_append_new(cmds, json_string("local"));
        json_object_set_new(o, "engines", eng);
        json_object_set_new(o, "commands", cmds);
        json_object_set_new(o, "alias", k[i].alias ? json_string(k[i].alias) : json_null());
        json_object_set_new(o, "help", json_string(k[i].help));
        json_array_append_new(a, o);
    }
    char *s = json_dumps(a, JSON_INDENT(1));
    fprintf(f, "%s\n", s);
    free(s);
    json_decref(a);
}

void *run_desc_json(const run_desc *d, const char *engine)
{
    size_t n;
    const run_key *k = run_keys(&n);
    json_t *o = json_object();
    json_object_set_new(o, "engine", json_string(engine));
    for (size_t i = 0; i < n; i++) {
        char buf[2048];
        if (run_format(d, &k[i], buf, sizeof buf)) continue;   /* an engine's extra */
        json_t *v;
        switch (k[i].type) {
        case RUN_T_INT: v = json_integer((json_int_t)strtoll(buf, NULL, 10)); break;
        case RUN_T_REAL: v = json_real(strtod(buf, NULL)); break;
        case RUN_T_TIME: v = json_real(strtod(buf, NULL)); break;   /* seconds */
        default: v = json_string(buf); break;
        }
        json_object_set_new(o, k[i].name, v);
    }
    return o;
}

void run_summary_emit(void *summary, const char *path, const char *who)
{
    json_t *o = summary;
    char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    printf("%s\n", line ? line : "{}");
    fflush(stdout);
    if (line && path && path[0]) {
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        } else {
            dp_log(DP_LOG_ERROR, who, "--summary %s: %s", path, strerror(errno));
        }
    }
    free(line);
    json_decref(o);
}
