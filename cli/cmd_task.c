/* cmd_task.c — `downpour task`: one ps or worker task, as TensorFlow's distributed
 * trainer runs them: --job_name, --task_index, --ps_hosts, --worker_hosts, or TF_CONFIG. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cli/cmds.h"
#include "cluster/spec.h"
#include "common/dp.h"
#include "runtime/config.h"
#include "runtime/task.h"

typedef struct task_flags {
    char job[16];
    long long index;
    int have_index;
    const char *ps_hosts, *worker_hosts;
} task_flags;

static int task_flag(void *ctx, const char *name, const char *value, char *err)
{
    task_flags *t = ctx;
    if (!strcmp(name, "job_name")) {
        snprintf(t->job, sizeof t->job, "%s", value);
        return 1;
    }
    if (!strcmp(name, "task_index")) {
        if (dp_parse_int(value, &t->index) || t->index < 0)
            return dp_fail(err, DP_EINVAL, "--task_index: \"%s\" is not a non-negative integer", value);
        t->have_index = 1;
        return 1;
    }
    if (!strcmp(name, "ps_hosts")) {
        t->ps_hosts = value;
        return 1;
    }
    if (!strcmp(name, "worker_hosts")) {
        t->worker_hosts = value;
        return 1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour task --job_name=ps|worker --task_index=I --ps_hosts=h:p,... "
               "--worker_hosts=h:p,... [training flags]\n"
               "       TF_CONFIG='{\"cluster\":{...},\"task\":{\"type\":\"worker\",\"index\":1}}' downpour task [training flags]\n\n"
               "Runs one task of a cluster. Every task of a cluster must get the same training flags.\n"
               "With TF_CONFIG, --job_name and --task_index override its task (as TensorFlow's\n"
               "TFConfigClusterResolver does); --ps_hosts/--worker_hosts replace TF_CONFIG entirely.\n"
               "IPv6 addresses go in brackets: [::1]:2222.\n"
               "A worker waits for its ps tasks (--connect-timeout) and logs while it waits.\n\n"
               "training flags:\n");
    rt_config_usage(f, RT_FLAG_TRAIN);
}

static void on_stop(int sig)
{
    DP_UNUSED(sig);
    rt_stop_requested = 1;
}

int cmd_task(int argc, char **argv)
{
    rt_config cfg;
    rt_config_init(&cfg);
    task_flags t = {0};
    char err[DP_ERRLEN];
    int rc = rt_parse_args(&cfg, RT_FLAG_TRAIN, argc, argv, task_flag, &t, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "downpour: task: %s\n", err);
        return 2;
    }
    cluster_spec spec = {0};
    dp_job job = JOB_WORKER;
    int index = 0;
    spec_task_args args = {
        .job_name = t.job[0] ? t.job : NULL, .task_index = t.have_index ? t.index : -1,
        .ps_hosts = t.ps_hosts, .worker_hosts = t.worker_hosts, .tf_config = getenv("TF_CONFIG"),
    };
    char note[DP_ERRLEN];
    if (spec_resolve(&args, &spec, &job, &index, note, sizeof note, err)) {
        fprintf(stderr, "downpour: task: %s\n", err);
        return 2;
    }
    if (note[0]) fprintf(stderr, "downpour: task: %s\n", note);
    cfg.n_ps = spec.n_ps;
    cfg.n_workers = spec.n_workers;
    if (rt_config_check(&cfg, err) || rt_config_apply_secret(&cfg, err)) {
        fprintf(stderr, "downpour: task: %s\n", err);
        spec_release(&spec);
        return 2;
    }
    /* One BLAS thread per task: tasks share the machine's cores with each other. */
    openblas_set_num_threads(1);
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = job == JOB_PS ? ps_run(&cfg, &spec, index, err) : worker_run(&cfg, &spec, index, err);
    spec_release(&spec);
    if (rc) {
        char name[64];
        fprintf(stderr, "downpour: %s: %s\n", spec_task_name(name, sizeof name, job, index), err);
        return rc == DP_ECLOSED ? 130 : 1;
    }
    return 0;
}
