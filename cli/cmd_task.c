/* cmd_task.c — `downpour task`: one ps or worker task, as TensorFlow's distributed
 * trainer runs them. The cluster comes from a resolver (cluster/resolver.h): --job_name,
 * --task_index, --ps_hosts, --worker_hosts, or TF_CONFIG, or Slurm's environment. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cli/cmds.h"
#include "cluster/resolver.h"
#include "cluster/spec.h"
#include "common/dp.h"
#include "runtime/config.h"
#include "runtime/scontrol.h"
#include "runtime/task.h"

typedef struct task_flags {
    char job[16];
    long long index;
    int have_index;
    const char *ps_hosts, *worker_hosts;
    resolver_kind resolver;
    const char *jobs;
    int port_base;
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
    if (!strcmp(name, "cluster-resolver")) return resolver_kind_parse(value, &t->resolver, err) ? -1 : 1;
    if (!strcmp(name, "jobs")) {
        t->jobs = value;
        return 1;
    }
    if (!strcmp(name, "port-base")) {
        long long v;
        if (dp_parse_int(value, &v) || v < 1 || v > 65535)
            return dp_fail(err, DP_EINVAL, "--port-base: \"%.32s\" is not a port in 1..65535", value);
        t->port_base = (int)v;
        return 1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour task --job_name=ps|worker --task_index=I --ps_hosts=h:p,... "
               "--worker_hosts=h:p,... [training flags]\n"
               "       TF_CONFIG='{\"cluster\":{...},\"task\":{\"type\":\"worker\",\"index\":1}}' downpour task [training flags]\n"
               "       srun -n 3 downpour task --jobs ps:1,worker:2 [--port-base P] [training flags]\n\n"
               "Runs one task of a cluster. Every task of a cluster must get the same training flags.\n"
               "With TF_CONFIG, --job_name and --task_index override its task (as TensorFlow's\n"
               "TFConfigClusterResolver does); --ps_hosts/--worker_hosts replace TF_CONFIG entirely.\n"
               "IPv6 addresses go in brackets: [::1]:2222.\n"
               "A worker waits for its ps tasks (--connect-timeout) and logs while it waits.\n\n"
               "cluster flags (docs/clusters.md):\n"
               "  --cluster-resolver R     auto, flags, tfconfig or slurm (default auto: flags when\n"
               "                           --ps_hosts is given, else TF_CONFIG, else slurm when\n"
               "                           SLURM_PROCID is set)\n"
               "  --jobs ps:N,worker:M     slurm: ranks 0..N-1 are the ps tasks, the next M the\n"
               "                           workers (default ps:1 and every other task a worker)\n"
               "  --port-base P            slurm: a task listens on P + its rank on its node\n"
               "                           (default %d)\n"
               "  --print-cluster          print the resolved cluster in TF_CONFIG form and exit\n"
               "                           (check a job script: srun downpour task --print-cluster)\n"
               "  The slurm resolver expands the node list with `scontrol show hostnames`\n"
               "  ($DOWNPOUR_SCONTROL names another program). --hub defaults to $DOWNPOUR_HUB;\n"
               "  the secret is $DOWNPOUR_SECRET or --secret-file (docs/security.md).\n\n"
               "training flags:\n", RESOLVER_PORT_BASE);
    rt_config_usage(f, RT_FLAG_TRAIN);
}

static const char *process_env(void *ctx, const char *name)
{
    DP_UNUSED(ctx);
    return getenv(name);
}

/* Takes --print-cluster (bare, or =true / =false as the other switches take) out of argv:
 * the shared parser gives every flag of a command's own a value. Returns 1 when asked, 0
 * when not, -1 after saying what is wrong with its value. */
static int take_print_cluster(int *argc, char **argv)
{
    int found = 0, k = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--print-cluster")) {
            found = 1;
        } else if (!strncmp(a, "--print-cluster=", 16)) {
            const char *v = a + 16;
            if (!strcmp(v, "true") || !strcmp(v, "1")) found = 1;
            else if (!strcmp(v, "false") || !strcmp(v, "0")) found = 0;
            else {
                fprintf(stderr, "downpour: task: --print-cluster: \"%s\" is not true or false\n", v);
                return -1;
            }
        } else {
            argv[k++] = argv[i];
        }
    }
    *argc = k;
    return found;
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
    int print_cluster = take_print_cluster(&argc, argv);
    if (print_cluster < 0) return 2;
    int rc = rt_parse_args(&cfg, RT_FLAG_TRAIN, argc, argv, task_flag, &t, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "downpour: task: %s\n", err);
        return 2;
    }
    /* The hub is found as the cluster is: the flag, else the job script's environment. */
    const char *hub_env = getenv("DOWNPOUR_HUB");
    if (!cfg.hub[0] && hub_env && *hub_env && rt_config_set(&cfg, "hub", hub_env, "DOWNPOUR_HUB", err)) {
        fprintf(stderr, "downpour: task: %s\n", err);
        return 2;
    }
    cluster_spec spec = {0};
    dp_job job = JOB_WORKER;
    int index = 0;
    resolver_kind used;
    resolver_args args = {
        .kind = t.resolver, .job_name = t.job[0] ? t.job : NULL, .task_index = t.have_index ? t.index : -1,
        .ps_hosts = t.ps_hosts, .worker_hosts = t.worker_hosts, .jobs = t.jobs, .port_base = t.port_base,
        .getenv = process_env, .hostnames = scontrol_hostnames, .hostnames_ctx = getenv("DOWNPOUR_SCONTROL"),
    };
    char note[DP_ERRLEN];
    if (resolver_resolve(&args, &spec, &job, &index, &used, note, sizeof note, err)) {
        fprintf(stderr, "downpour: task: %s\n", err);
        return 2;
    }
    if (note[0]) fprintf(stderr, "downpour: task: %s\n", note);
    cfg.n_ps = spec.n_ps;
    cfg.n_workers = spec.n_workers;
    if (rt_config_check(&cfg, err) || rt_config_check_saves(&cfg, err) || rt_config_apply_secret(&cfg, err)) {
        fprintf(stderr, "downpour: task: %s\n", err);
        spec_release(&spec);
        return 2;
    }
    if (print_cluster) {
        char *json = resolver_tf_config_json(&spec, job, index);
        printf("%s\n", json);
        free(json);
        spec_release(&spec);
        return 0;
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
