/* config.c — the real runtime's configuration (see config.h): the run description's
 * shared keys go through cluster/run_keys.c's table; this file applies and formats the
 * runtime's own extras. */
#include "runtime/config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "net/auth.h"
#include "runtime/device.h"

/* A text extra's field, or NULL. */
static char *text_field(rt_config *c, const char *name)
{
    if (!strcmp(name, "data")) return c->data;
    if (!strcmp(name, "trace")) return c->trace;
    if (!strcmp(name, "hub")) return c->hub;
    if (!strcmp(name, "checkpoint_dir")) return c->checkpoint_dir;
    if (!strcmp(name, "summary")) return c->summary;
    if (!strcmp(name, "device_for")) return c->device_for;
    if (!strcmp(name, "worker_devices")) return c->worker_devices;
    if (!strcmp(name, "secret_file")) return c->secret_file;
    return NULL;
}

/* An integer (or boolean) extra's field, or NULL. */
static int *int_field(rt_config *c, const char *name)
{
    if (!strcmp(name, "eval_every")) return &c->eval_every;
    if (!strcmp(name, "synthetic_samples")) return &c->synthetic_n;
    if (!strcmp(name, "connect_timeout")) return &c->connect_timeout;
    if (!strcmp(name, "log_every")) return &c->log_every;
    if (!strcmp(name, "save_checkpoint_steps")) return &c->save_ckpt_steps;
    if (!strcmp(name, "save_checkpoint_secs")) return &c->save_ckpt_secs;
    if (!strcmp(name, "view")) return &c->view;
    if (!strcmp(name, "log_device_placement")) return &c->log_placement;
    if (!strcmp(name, "quiet")) return &c->quiet;
    if (!strcmp(name, "strategy")) return &c->strategy;
    if (!strcmp(name, "cpu_devices")) return &c->cpu_devices;
    if (!strcmp(name, "allow_soft_placement")) return &c->allow_soft;
    if (!strcmp(name, "netns")) return &c->netns;
    if (!strcmp(name, "prefetch")) return &c->prefetch;
    if (!strcmp(name, "transport")) return &c->transport;
    return NULL;
}

/* --device-for: every rule checked, appended to the ones given before. */
static int set_device_for(rt_config *c, const char *text, const char *what, char *err)
{
    dev_rule rules[DEV_MAX_RULES];
    int n = 0;
    int rc = dev_rules_parse(c->device_for, rules, &n, DEV_MAX_RULES, what, err);
    if (!rc) rc = dev_rules_parse(text, rules, &n, DEV_MAX_RULES, what, err);
    if (rc) return rc;
    size_t len = strlen(c->device_for);
    if (len + strlen(text) + 2 >= RT_PATH_MAX)
        return dp_fail(err, DP_EINVAL, "%s: the rules are longer than %d bytes", what, RT_PATH_MAX - 1);
    snprintf(c->device_for + len, RT_PATH_MAX - len, "%s%s", len ? ";" : "", text);
    return DP_OK;
}

/* --worker-devices cpu:N | gpu:N */
static int set_worker_devices(rt_config *c, const char *text, const char *what, char *err)
{
    long long n = 0;
    int gpu = !strncmp(text, "gpu:", 4);
    if ((!gpu && strncmp(text, "cpu:", 4)) || dp_parse_int(text + 4, &n) || n < 1 || n > DEV_MAX)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not cpu:N or gpu:N with N in 1..%d", what, text,
                       DEV_MAX);
    snprintf(c->worker_devices, sizeof c->worker_devices, "%s", text);
    c->worker_dev_gpu = gpu;
    c->worker_dev_n = (int)n;
    return DP_OK;
}

static int rt_extra(void *ctx, const run_key *k, const run_value *v, const char *what, char *err)
{
    rt_config *c = ctx;
    if (!k) return 1;
    if (!strcmp(k->name, "device_for")) return set_device_for(c, v->text, what, err);
    if (!strcmp(k->name, "worker_devices")) return set_worker_devices(c, v->text, what, err);
    if (!strcmp(k->name, "barrier_timeout")) {
        c->barrier_timeout_s = v->d;
        return 0;
    }
    if (!strcmp(k->name, "fail")) {
        if (c->n_faults == RUN_MAX_FAULTS)
            return dp_fail(err, DP_EINVAL, "%s: at most %d faults", what, RUN_MAX_FAULTS);
        int rc = run_fault_parse(v->text, what, &c->faults[c->n_faults], err);
        if (!rc) c->n_faults++;
        return rc;
    }
    if (!strcmp(k->name, "net")) {
        if (c->n_nets == NETNS_MAX_SHAPES)
            return dp_fail(err, DP_EINVAL, "%s: at most %d links shaped", what, NETNS_MAX_SHAPES);
        int rc = netns_shape_parse(v->text, what, &c->nets[c->n_nets], err);
        if (!rc) c->n_nets++;
        if (!rc) c->netns = 1;
        return rc;
    }
    char *t = text_field(c, k->name);
    if (t) {
        if (strlen(v->text) >= RT_PATH_MAX)
            return dp_fail(err, DP_EINVAL, "%s: value longer than %d bytes", what, RT_PATH_MAX - 1);
        snprintf(t, RT_PATH_MAX, "%s", v->text);
        return 0;
    }
    int *i = int_field(c, k->name);
    if (i) {
        *i = (int)v->i;
        return 0;
    }
    return 1;
}

void rt_config_init(rt_config *c)
{
    memset(c, 0, sizeof *c);
    run_defaults(&c->run, RUN_REAL, rt_extra, c);
}

int rt_config_set(rt_config *c, const char *name, const char *text, const char *what, char *err)
{
    return run_set(&c->run, RUN_REAL, rt_extra, c, name, text, what, err);
}

double rt_config_straggler_factor(const rt_config *c, int index)
{
    for (int i = 0; i < c->n_stragglers; i++)
        if (c->stragglers[i].worker == index) return c->stragglers[i].factor;
    return 1.0;
}

int rt_config_check(const rt_config *c, char *err)
{
    int rc = run_check(&c->run, err);
    if (rc) return rc;
    if (c->partition < 1)
        return dp_fail(err, DP_EINVAL, "--partition: 0 (automatic) is the simulator's; the real runtime "
                       "needs K >= 1");
    for (int i = 0; i < c->n_faults; i++) {
        const run_fault *f = &c->faults[i];
        int n = f->job == JOB_PS ? c->n_ps : c->n_workers;
        char text[96];
        run_fault_format(f, text, sizeof text);
        if (f->task >= n)
            return dp_fail(err, DP_EINVAL, "--fail/--kill: %s names %s %d, which does not exist (%d %s task%s)",
                           text, spec_job_name((dp_job)f->job), f->task, n, spec_job_name((dp_job)f->job),
                           n == 1 ? "" : "s");
    }
    for (int i = 0; i < c->n_nets; i++) {
        const netns_shape *s = &c->nets[i];
        int n = s->job == JOB_PS ? c->n_ps : c->n_workers;
        char text[160];
        netns_shape_format(s, text, sizeof text);
        if (s->task >= n)
            return dp_fail(err, DP_EINVAL, "--net: %s names %s %d, which does not exist (%d %s task%s)",
                           text, spec_job_name((dp_job)s->job), s->task, n, spec_job_name((dp_job)s->job),
                           n == 1 ? "" : "s");
        for (int k = 0; k < i; k++)
            if (c->nets[k].job == s->job && c->nets[k].task == s->task)
                return dp_fail(err, DP_EINVAL, "--net: %s %d is shaped twice; give one --net per task",
                               spec_job_name((dp_job)s->job), s->task);
    }
    if (c->prefetch && c->mode != MODE_ASYNC)
        return dp_fail(err, DP_EINVAL, "--prefetch: only with --mode async (a %s worker may read the "
                       "parameters only once the %s lets it start its step)", update_mode_name(c->mode),
                       c->mode == MODE_SYNC ? "step token" : "staleness gate");
    if (c->netns && c->hub[0])
        return dp_fail(err, DP_EINVAL, "--netns: the tasks cannot reach --hub %s from their own network "
                       "namespaces; use --trace FILE (the launcher's hub listens on their bridge)", c->hub);
    if (c->netns && c->n_ps + c->n_workers > 250)
        return dp_fail(err, DP_EINVAL, "--netns: at most 250 tasks (one /24)");
    return DP_OK;
}

int rt_config_check_saves(const rt_config *c, char *err)
{
    if (c->checkpoint_dir[0]) return DP_OK;
    if (c->save_ckpt_steps > 0)
        return dp_fail(err, DP_EINVAL, "--save-checkpoint-steps %d: saves only with --checkpoint-dir DIR",
                       c->save_ckpt_steps);
    if (c->save_ckpt_secs > 0)
        return dp_fail(err, DP_EINVAL, "--save-checkpoint-secs %d: saves only with --checkpoint-dir DIR",
                       c->save_ckpt_secs);
    return DP_OK;
}

static int given(const rt_config *c, const char *name)
{
    return run_key_seen(c->given, sizeof c->given, name);
}

void rt_config_warn_unread(const rt_config *c, const char *cmd)
{
    if (given(c, "staleness") && c->mode != MODE_SSP)
        dp_log(DP_LOG_WARN, cmd, "--staleness %d: only --mode ssp reads it; this %s run does not", c->staleness,
               update_mode_name(c->mode));
    if (given(c, "barrier_timeout") && c->mode != MODE_SYNC)
        dp_log(DP_LOG_WARN, cmd, "--barrier-timeout: only --mode sync waits at a barrier; this %s run does not",
               update_mode_name(c->mode));
    if (given(c, "hidden") && c->model != MODEL_MLP)
        dp_log(DP_LOG_WARN, cmd, "--hidden %d: only --model mlp has a hidden layer", c->hidden);
    if (given(c, "synthetic_samples") && strcmp(c->data, "synthetic"))
        dp_log(DP_LOG_WARN, cmd, "--synthetic-samples %d: only --data synthetic reads it; this run trains on %s",
               c->synthetic_n, c->data);
}

int rt_config_apply_secret(const rt_config *c, char *err)
{
    if (c->secret_file[0]) return auth_secret_file_to_env(c->secret_file, err);
    /* A secret from the environment is checked here too, once, before any task starts
     * (each task would refuse it on its own, one line apiece, after the launch). */
    return auth_env_check(err);
}

static int scope_cmd(int scope)
{
    return (scope & RT_FLAG_LOCAL) ? RUN_CMD_LOCAL : (scope & RT_FLAG_CLUSTER) ? RUN_CMD_CLUSTER : RUN_CMD_TASK;
}

void rt_config_usage(FILE *f, int scope)
{
    run_usage(f, scope_cmd(scope));
}

/* The i-th of "a|b|c". */
static void choice_text(const char *choices, int i, char *out, size_t n)
{
    const char *p = choices;
    for (; i > 0 && p; i--) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
    size_t len = p ? strcspn(p, "|") : 0;
    snprintf(out, n, "%.*s", (int)len, p ? p : "");
}

int rt_config_to_argv(const rt_config *c, char **argv)
{
    size_t nk;
    const run_key *keys = run_keys(&nk);
    rt_config *m = (rt_config *)c;   /* the field lookups do not write */
    int n = 0;
    for (size_t i = 0; i < nk; i++) {
        const run_key *k = &keys[i];
        if (!(k->cmds & RUN_CMD_TASK)) continue;
        if (!strcmp(k->name, "secret_file")) continue;   /* the tasks get $DOWNPOUR_SECRET */
        char val[RT_PATH_MAX + 8];
        if (run_format(&c->run, k, val, sizeof val) == 0) {
            if (!val[0]) continue;                  /* no stragglers */
        } else if (text_field(m, k->name)) {
            if (!text_field(m, k->name)[0]) continue;
            snprintf(val, sizeof val, "%s", text_field(m, k->name));
        } else if (!strcmp(k->name, "barrier_timeout")) {
            snprintf(val, sizeof val, "%.9gs", c->barrier_timeout_s);
        } else if (int_field(m, k->name)) {
            int v = *int_field(m, k->name);
            if (k->type == RUN_T_BOOL && !v) continue;
            if (k->type == RUN_T_ENUM) choice_text(k->choices, v, val, sizeof val);
            else snprintf(val, sizeof val, k->type == RUN_T_BOOL ? "true" : "%d", v);
        } else {
            continue;
        }
        dp_assert("config: every task flag fits the launcher's argv", n < RT_CONFIG_MAX_ARGS);
        char flag[64];
        run_key_flag(k, flag, sizeof flag);
        size_t len = strlen(flag) + strlen(val) + 2;
        argv[n] = xmalloc(len);
        snprintf(argv[n], len, "%s=%s", flag, val);
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
    return dp_fnv1a(DP_FNV1A_INIT, buf, strlen(buf));
}

typedef struct args_ctx {
    rt_config *c;
    rt_extra_flag_fn extra;
    void *ctx;
} args_ctx;

static int args_extra(void *ctx, const run_key *k, const run_value *v, const char *what, char *err)
{
    args_ctx *a = ctx;
    if (k) return rt_extra(a->c, k, v, what, err);
    if (!a->extra) return 1;
    int rc = a->extra(a->ctx, what, v->text, err);
    return rc < 0 ? rc : rc == 1 ? 0 : 1;
}

int rt_parse_args(rt_config *c, int scope, int argc, char **argv, rt_extra_flag_fn extra,
                  void *ctx, char *err)
{
    args_ctx a = {c, extra, ctx};
    size_t n;
    run_keys(&n);
    dp_assert("config: given[] holds every key", n <= sizeof c->given);
    return run_parse_argv(&c->run, scope_cmd(scope), args_extra, &a, argc, argv, c->given, err);
}
