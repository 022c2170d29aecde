/* test_resolver.c — the cluster resolvers (cluster/resolver.h) on recorded environments:
 * --jobs and SLURM_STEP_TASKS_PER_NODE parsing, rank -> job/index/address the way
 * TensorFlow's SlurmClusterResolver assigns them (one node, heterogeneous nodes, a batch
 * script outside srun), auto's choice, every error line, TF_CONFIG output, and the real
 * node-list expansion through scontrol (runtime/scontrol.h): a fake one, a failing one, a
 * missing one and Slurm's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/resolver.h"
#include "common/dp.h"
#include "runtime/scontrol.h"
#include "tests/check.h"

/* A recorded environment: "NAME=value" strings, NULL-terminated. */
static const char *recorded_env(void *ctx, const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* A recorded `scontrol show hostnames`: pairs of node list and its lines, NULL-ended. */
static int recorded_hostnames(void *ctx, const char *nodelist, char ***hosts, int *n, char *err)
{
    for (const char *const *p = ctx; *p; p += 2) {
        if (strcmp(p[0], nodelist)) continue;
        char *copy = xstrdup(p[1]), *save = NULL;
        *hosts = xmalloc(64 * sizeof **hosts);
        *n = 0;
        for (char *t = strtok_r(copy, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
            (*hosts)[(*n)++] = xstrdup(t);
        free(copy);
        return DP_OK;
    }
    return dp_fail(err, DP_ERR, "recorded scontrol has no \"%s\"", nodelist);
}

static const char *const hostnames_table[] = {
    "vm", "vm",
    "n[1-4]", "n1\nn2\nn3\nn4",
    "n[9-10]", "n9\nn10",
    "n[1-3]", "n1\nn2\nn3",
    "n[1-2]", "n1\nn2",
    "dup", "a\na",
    "bad", "good\nbad host!",
    NULL,
};

typedef struct outcome {
    int rc;
    cluster_spec spec;
    dp_job job;
    int index;
    resolver_kind used;
    char note[DP_ERRLEN], err[DP_ERRLEN];
} outcome;

/* Resolves with kind, --jobs, --port-base and a recorded environment. */
static void resolve(outcome *o, resolver_kind kind, const char *jobs, int port_base,
                    const char *const *envp)
{
    resolver_args a = {
        .kind = kind, .task_index = -1, .jobs = jobs, .port_base = port_base,
        .getenv = recorded_env, .env_ctx = (void *)envp,
        .hostnames = recorded_hostnames, .hostnames_ctx = (void *)hostnames_table,
    };
    memset(o, 0, sizeof *o);
    o->rc = resolver_resolve(&a, &o->spec, &o->job, &o->index, &o->used, o->note, sizeof o->note, o->err);
}

static int addr_is(const dp_addr *a, const char *host, int port)
{
    return !strcmp(a->host, host) && a->port == port;
}

/* Expects resolving to fail with a message holding want, the spec left empty. */
static void bad(resolver_kind kind, const char *jobs, int port_base, const char *const *envp,
                const char *want)
{
    outcome o;
    resolve(&o, kind, jobs, port_base, envp);
    CHECK_MSG(o.rc != 0 && strstr(o.err, want), "rc %d, err \"%s\", want \"%s\"", o.rc, o.err, want);
    CHECK_MSG(!strchr(o.err, '\n'), "one line: \"%s\"", o.err);
    CHECK(o.spec.n_ps == 0 && o.spec.ps == NULL && o.spec.workers == NULL);
    spec_release(&o.spec);
}

static void test_jobs_parse(void)
{
    resolver_jobs j;
    char err[DP_ERRLEN];
    CHECK(resolver_jobs_parse("ps:2,worker:6", &j, err) == 0 && j.n_ps == 2 && j.n_workers == 6);
    CHECK(resolver_jobs_parse("worker:3,ps:1", &j, err) == 0 && j.n_ps == 1 && j.n_workers == 3);
    struct { const char *text, *want; } cases[] = {
        {"", "--jobs: empty"},
        {"ps:1", "needs both ps and worker"},
        {"ps:0,worker:1", "ps count \"0\" is not in 1..4096"},
        {"ps:1,worker:70000", "worker count \"70000\" is not in 1..65536"},
        {"chief:1,worker:1", "job \"chief\" is not ps or worker"},
        {"ps:1,ps:2", "ps is given twice"},
        {"ps:x,worker:1", "ps count \"x\""},
        {"ps:1,worker:2,", "entry 2 \"\" is not JOB:COUNT"},
        {"ps1,worker:2", "entry 0 \"ps1\" is not JOB:COUNT"},
        {"ps:1 ,worker:2", "ps count \"1 \""},
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        err[0] = 0;
        int rc = resolver_jobs_parse(cases[i].text, &j, err);
        CHECK_MSG(rc == DP_EINVAL && strstr(err, cases[i].want), "\"%s\": rc %d, err \"%s\", want \"%s\"",
                  cases[i].text, rc, err, cases[i].want);
    }
}

static void test_tasks_per_node(void)
{
    int *c = NULL, n = 0;
    char err[DP_ERRLEN];
    CHECK(resolver_tasks_per_node_parse("2(x3),1", "T", &c, &n, err) == 0);
    CHECK_MSG(n == 4 && c[0] == 2 && c[1] == 2 && c[2] == 2 && c[3] == 1, "n %d", n);
    free(c);
    CHECK(resolver_tasks_per_node_parse("3", "T", &c, &n, err) == 0 && n == 1 && c[0] == 3);
    free(c);
    CHECK(resolver_tasks_per_node_parse("1(x2),4,2(x2)", "T", &c, &n, err) == 0);
    CHECK_MSG(n == 5 && c[0] == 1 && c[1] == 1 && c[2] == 4 && c[3] == 2 && c[4] == 2, "n %d", n);
    free(c);
    struct { const char *text, *want; } cases[] = {
        {"", "SLURM_STEP_TASKS_PER_NODE: empty"},
        {"0", "entry 0 \"0\" is not N or N(xR)"},
        {"2(x0)", "entry 0 \"2(x0)\""},
        {"2(3)", "entry 0 \"2(3)\""},
        {"2(x3", "entry 0 \"2(x3\""},
        {"a", "entry 0 \"a\""},
        {"2,,1", "entry 1 \"\""},
        {"2,1,", "entry 2 \"\""},
        {"1(x99999999)", "is not N or N(xR) with N, R in 1..69632"},
        {"1000(x1000)", "more than 69632 tasks"},
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        err[0] = 0;
        c = NULL;
        int rc = resolver_tasks_per_node_parse(cases[i].text, "SLURM_STEP_TASKS_PER_NODE", &c, &n, err);
        CHECK_MSG(rc == DP_EINVAL && strstr(err, cases[i].want) && !c,
                  "\"%s\": rc %d, err \"%s\", want \"%s\"", cases[i].text, rc, err, cases[i].want);
    }
}

/* srun -n 3 -O on this machine's one node (the environment it_slurm.sh's tasks get). */
static void test_one_node(void)
{
    const char *const ranks[3][9] = {
        {"SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURMD_NODENAME=vm", "SLURM_STEP_NODELIST=vm",
         "SLURM_STEP_TASKS_PER_NODE=3", "SLURM_STEP_NUM_TASKS=3", "SLURM_JOB_NODELIST=vm", NULL},
        {"SLURM_PROCID=1", "SLURM_LOCALID=1", "SLURMD_NODENAME=vm", "SLURM_STEP_NODELIST=vm",
         "SLURM_STEP_TASKS_PER_NODE=3", "SLURM_STEP_NUM_TASKS=3", "SLURM_JOB_NODELIST=vm", NULL},
        {"SLURM_PROCID=2", "SLURM_LOCALID=2", "SLURMD_NODENAME=vm", "SLURM_STEP_NODELIST=vm",
         "SLURM_STEP_TASKS_PER_NODE=3", "SLURM_STEP_NUM_TASKS=3", "SLURM_JOB_NODELIST=vm", NULL},
    };
    const dp_job want_job[3] = {JOB_PS, JOB_WORKER, JOB_WORKER};
    const int want_index[3] = {0, 0, 1};
    for (int r = 0; r < 3; r++) {
        outcome o;
        resolve(&o, RESOLVER_AUTO, "ps:1,worker:2", 0, ranks[r]);
        CHECK_MSG(o.rc == 0, "rank %d: %s", r, o.err);
        CHECK(o.used == RESOLVER_SLURM);
        CHECK(o.spec.n_ps == 1 && o.spec.n_workers == 2);
        CHECK(o.rc == 0 && addr_is(&o.spec.ps[0], "vm", 8888) && addr_is(&o.spec.workers[0], "vm", 8889) &&
              addr_is(&o.spec.workers[1], "vm", 8890));
        CHECK_MSG(o.job == want_job[r] && o.index == want_index[r], "rank %d: job %d index %d", r, o.job,
                  o.index);
        if (r == 2)
            CHECK_MSG(!strcmp(o.note, "slurm: rank 2 of 3 (--jobs ps:1,worker:2) is "
                              "/job:worker/replica:0/task:1 at vm:8890"), "note \"%s\"", o.note);
        if (r == 2) {
            char *json = resolver_tf_config_json(&o.spec, o.job, o.index);
            CHECK_MSG(!strcmp(json, "{\"cluster\":{\"ps\":[\"vm:8888\"],\"worker\":[\"vm:8889\",\"vm:8890\"]},"
                              "\"task\":{\"type\":\"worker\",\"index\":1}}"), "%s", json);
            /* what --print-cluster prints is TF_CONFIG: it reads back as the same task */
            cluster_spec back;
            dp_job bj;
            int bi;
            char err[DP_ERRLEN];
            CHECK(spec_from_tf_config(json, &back, &bj, &bi, err) == 0 && bj == JOB_WORKER && bi == 1 &&
                  back.n_workers == 2 && addr_is(&back.workers[1], "vm", 8890));
            spec_release(&back);
            free(json);
        }
        spec_release(&o.spec);
    }
    /* --jobs in another order still puts ps first (TensorFlow sorts its jobs) */
    outcome o;
    resolve(&o, RESOLVER_SLURM, "worker:2,ps:1", 0, ranks[0]);
    CHECK(o.rc == 0 && o.job == JOB_PS && o.index == 0 && addr_is(&o.spec.ps[0], "vm", 8888));
    spec_release(&o.spec);
    /* no --jobs: one ps, every other task a worker */
    resolve(&o, RESOLVER_SLURM, NULL, 0, ranks[2]);
    CHECK_MSG(o.rc == 0 && o.spec.n_ps == 1 && o.spec.n_workers == 2 && o.job == JOB_WORKER && o.index == 1,
              "%s", o.err);
    CHECK_MSG(strstr(o.note, "(--jobs ps:1,worker:2, the default)"), "note \"%s\"", o.note);
    spec_release(&o.spec);
}

/* Four nodes, SLURM_STEP_TASKS_PER_NODE=2(x3),1: ranks fill node after node. */
static void test_heterogeneous(void)
{
    char procid[32], localid[32], node[32];
    const char *envp[] = {procid, localid, node, "SLURM_STEP_NODELIST=n[1-4]",
                          "SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_STEP_NUM_TASKS=7", NULL};
    const char *want_host[7] = {"n1", "n1", "n2", "n2", "n3", "n3", "n4"};
    const int want_port[7] = {2222, 2223, 2222, 2223, 2222, 2223, 2222};
    for (int r = 0; r < 7; r++) {
        snprintf(procid, sizeof procid, "SLURM_PROCID=%d", r);
        snprintf(localid, sizeof localid, "SLURM_LOCALID=%d", want_port[r] - 2222);
        snprintf(node, sizeof node, "SLURMD_NODENAME=%s", want_host[r]);
        outcome o;
        resolve(&o, RESOLVER_AUTO, "ps:2,worker:5", 2222, envp);
        CHECK_MSG(o.rc == 0, "rank %d: %s", r, o.err);
        if (o.rc) continue;
        CHECK(o.spec.n_ps == 2 && o.spec.n_workers == 5);
        for (int k = 0; k < 7; k++) {
            const dp_addr *d = k < 2 ? &o.spec.ps[k] : &o.spec.workers[k - 2];
            CHECK_MSG(addr_is(d, want_host[k], want_port[k]), "rank %d: task %d at %s:%d", r, k, d->host,
                      d->port);
        }
        CHECK_MSG(o.job == (r < 2 ? JOB_PS : JOB_WORKER) && o.index == (r < 2 ? r : r - 2),
                  "rank %d: job %d index %d", r, o.job, o.index);
        spec_release(&o.spec);
    }
    /* Slurm's node order is kept: n9 before n10, which sorting names would swap */
    const char *order[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=n[9-10]", "SLURM_STEP_TASKS_PER_NODE=1(x2)",
                           NULL};
    outcome o;
    resolve(&o, RESOLVER_SLURM, "ps:1,worker:1", 0, order);
    CHECK_MSG(o.rc == 0 && addr_is(&o.spec.ps[0], "n9", 8888) && addr_is(&o.spec.workers[0], "n10", 8888),
              "%s", o.err);
    spec_release(&o.spec);
}

/* In a batch script, outside srun: the job's variables, said in the note. */
static void test_batch_script(void)
{
    const char *envp[] = {"SLURM_PROCID=0", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_TASKS_PER_NODE=4(x2)",
                          "SLURM_NTASKS=8", "SLURM_LOCALID=0", NULL};
    outcome o;
    resolve(&o, RESOLVER_AUTO, "ps:2,worker:6", 0, envp);
    CHECK_MSG(o.rc == 0, "%s", o.err);
    CHECK(o.rc == 0 && o.job == JOB_PS && o.index == 0 && addr_is(&o.spec.ps[1], "n1", 8889) &&
          addr_is(&o.spec.workers[1], "n1", 8891) && addr_is(&o.spec.workers[2], "n2", 8888) &&
          addr_is(&o.spec.workers[5], "n2", 8891));
    CHECK_MSG(strstr(o.note, "outside srun: the job's SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE"), "%s",
              o.note);
    spec_release(&o.spec);
}

static void test_slurm_errors(void)
{
    const char *outside[] = {"SLURM_PROCID=7", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=8", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, outside,
        "SLURM_PROCID=7: rank 7 is outside --jobs ps:1,worker:2 (3 tasks)");
    const char *many[] = {"SLURM_PROCID=1", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=4", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, many,
        "too many tasks: SLURM_STEP_TASKS_PER_NODE=4 gives 4, --jobs ps:1,worker:2 uses 3; ranks 3..3 "
        "would have no job (srun -n 3)");
    const char *few[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=2", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, few,
        "too few tasks: --jobs ps:1,worker:2 needs 3, SLURM_STEP_TASKS_PER_NODE=2 gives 2 (srun -n 3)");
    const char *past[] = {"SLURM_PROCID=5", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, past,
        "SLURM_PROCID=5: rank 5 is outside the step's 3 tasks (SLURM_STEP_TASKS_PER_NODE=3)");
    const char *one[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=1", NULL};
    bad(RESOLVER_SLURM, NULL, 0, one, "1 task, and a cluster needs a ps and a worker");
    const char *num[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3",
                         "SLURM_STEP_NUM_TASKS=4", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, num,
        "SLURM_STEP_NUM_TASKS=4 disagrees with SLURM_STEP_TASKS_PER_NODE=3 (3 tasks)");
    const char *len[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=n[1-3]", "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:3", 0, len,
        "SLURM_STEP_NODELIST=n[1-3] names 3 nodes but SLURM_STEP_TASKS_PER_NODE=2(x2) counts tasks on 2");
    /* -m cyclic: rank 1 runs as task 0 of n2, not where block distribution puts it */
    const char *cyc[] = {"SLURM_PROCID=1", "SLURM_LOCALID=0", "SLURM_STEP_NODELIST=n[1-2]",
                         "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:3", 0, cyc,
        "SLURM_LOCALID=0: rank 1 should be local task 1 of node n1 (block distribution");
    const char *cyc2[] = {"SLURM_PROCID=1", "SLURMD_NODENAME=n2", "SLURM_STEP_NODELIST=n[1-2]",
                          "SLURM_STEP_TASKS_PER_NODE=2(x2)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:3", 0, cyc2, "SLURMD_NODENAME=n2: rank 1 should run on node n1");
    const char *none[] = {"SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, none, "SLURM_PROCID is not set: the slurm resolver runs in a Slurm task");
    const char *junk[] = {"SLURM_PROCID=x1", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, junk, "SLURM_PROCID=x1: not a non-negative integer");
    const char *nolist[] = {"SLURM_PROCID=0", "SLURM_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, nolist, "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set");
    const char *notpn[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, notpn, "SLURM_STEP_TASKS_PER_NODE is not set (SLURM_STEP_NODELIST is)");
    const char *badtpn[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3(x)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, badtpn, "SLURM_STEP_TASKS_PER_NODE=3(x): entry 0 \"3(x)\"");
    const char *ports[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 65534, ports, "--port-base 65534: node vm has 3 tasks, so ports would pass 65535");
    const char *dup[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=dup", "SLURM_STEP_TASKS_PER_NODE=1(x2)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:1", 0, dup, "node list names a twice (nodes 0 and 1)");
    const char *host[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=bad", "SLURM_STEP_TASKS_PER_NODE=1(x2)", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:1", 0, host, "node 1 \"bad host!\" of the node list:");
    const char *unknown[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=zz", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    bad(RESOLVER_SLURM, "ps:1,worker:2", 0, unknown, "SLURM_STEP_NODELIST=zz: recorded scontrol has no \"zz\"");
    bad(RESOLVER_SLURM, "ps:1", 0, ports, "--jobs ps:1: needs both ps and worker tasks");
}

/* Which resolver runs, and the flags it does not read. */
static void test_choice(void)
{
    const char *tfc = "TF_CONFIG={\"cluster\":{\"ps\":[\"a:1\"],\"worker\":[\"b:2\"]},\"task\":{\"type\":\"worker\","
                      "\"index\":0}}";
    const char *both[] = {tfc, "SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    const char *slurm[] = {"SLURM_PROCID=0", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=3", NULL};
    const char *empty[] = {NULL};
    outcome o;
    resolve(&o, RESOLVER_AUTO, NULL, 0, both);
    CHECK_MSG(o.rc == 0 && o.used == RESOLVER_TFCONFIG && addr_is(&o.spec.ps[0], "a", 1), "%s", o.err);
    spec_release(&o.spec);
    resolve(&o, RESOLVER_SLURM, NULL, 0, both);
    CHECK_MSG(o.rc == 0 && o.used == RESOLVER_SLURM && addr_is(&o.spec.ps[0], "vm", 8888), "%s", o.err);
    CHECK_MSG(strstr(o.note, "; TF_CONFIG is not read"), "note \"%s\"", o.note);
    spec_release(&o.spec);
    resolve(&o, RESOLVER_AUTO, NULL, 0, empty);
    CHECK_MSG(o.rc == DP_EINVAL && o.used == RESOLVER_FLAGS && strstr(o.err, "need --job_name"), "%s", o.err);
    bad(RESOLVER_AUTO, "ps:1,worker:2", 0, both,
        "--jobs: only the slurm resolver reads it, and this task resolves with tfconfig (TF_CONFIG is set)");
    bad(RESOLVER_FLAGS, NULL, 0, slurm, "need --job_name, --task_index, --ps_hosts and --worker_hosts");
    bad(RESOLVER_TFCONFIG, NULL, 0, slurm, "--cluster-resolver tfconfig: TF_CONFIG is not set");
    bad(RESOLVER_AUTO, NULL, 7000, empty, "--port-base: only the slurm resolver reads it, and this task "
        "resolves with flags (neither TF_CONFIG nor SLURM_PROCID is set)");

    /* flags on the command line: auto takes them, the slurm resolver refuses them */
    resolver_args a = {
        .kind = RESOLVER_AUTO, .job_name = "worker", .task_index = 0, .ps_hosts = "h:1", .worker_hosts = "h:2",
        .getenv = recorded_env, .env_ctx = (void *)slurm,
        .hostnames = recorded_hostnames, .hostnames_ctx = (void *)hostnames_table,
    };
    o.rc = resolver_resolve(&a, &o.spec, &o.job, &o.index, &o.used, o.note, sizeof o.note, o.err);
    CHECK_MSG(o.rc == 0 && o.used == RESOLVER_FLAGS && addr_is(&o.spec.workers[0], "h", 2), "%s", o.err);
    spec_release(&o.spec);
    a.kind = RESOLVER_SLURM;
    o.rc = resolver_resolve(&a, &o.spec, &o.job, &o.index, &o.used, o.note, sizeof o.note, o.err);
    CHECK_MSG(o.rc == DP_EINVAL && strstr(o.err, "--ps_hosts: only the flags resolver reads it "
              "(--cluster-resolver slurm)"), "%s", o.err);
    a.ps_hosts = a.worker_hosts = NULL;
    o.rc = resolver_resolve(&a, &o.spec, &o.job, &o.index, &o.used, o.note, sizeof o.note, o.err);
    CHECK_MSG(o.rc == DP_EINVAL && strstr(o.err, "--job_name: the slurm resolver takes the task from "
              "SLURM_PROCID and --jobs"), "%s", o.err);

    resolver_kind k;
    char err[DP_ERRLEN];
    CHECK(resolver_kind_parse("slurm", &k, err) == 0 && k == RESOLVER_SLURM);
    CHECK(resolver_kind_parse("tfconfig", &k, err) == 0 && k == RESOLVER_TFCONFIG);
    CHECK(resolver_kind_parse("pbs", &k, err) == DP_EINVAL &&
          strstr(err, "--cluster-resolver: \"pbs\" is not one of auto, flags, tfconfig or slurm"));
    CHECK(!strcmp(resolver_kind_name(RESOLVER_AUTO), "auto"));
}

/* Writes an executable script at path. */
static void write_script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0700);
}

/* The real expansion: scontrol_hostnames with a fake, a failing, a missing and the real
 * scontrol, alone and inside the resolver. */
static void test_scontrol(const char *dir)
{
    char **hosts = NULL, err[DP_ERRLEN];
    int n = 0;
    const char *fake = check_path(dir, "fake-scontrol");
    /* checks its arguments as scontrol gets them: no shell in between */
    write_script(fake, "[ \"$1 $2\" = 'show hostnames' ] && [ \"$3\" = 'n[1-2] x' ] || exit 3\n"
                       "printf 'n1\\n  n2 \\n\\n'");
    int rc = scontrol_hostnames((void *)fake, "n[1-2] x", &hosts, &n, err);
    CHECK_MSG(rc == 0 && n == 2 && !strcmp(hosts[0], "n1") && !strcmp(hosts[1], "n2"), "rc %d n %d: %s", rc, n,
              rc ? err : "");
    resolver_hosts_free(hosts, n);
    rc = scontrol_hostnames((void *)fake, "other", &hosts, &n, err);
    CHECK_MSG(rc == DP_ERR && strstr(err, "fake-scontrol show hostnames exited with status 3") && !hosts && !n,
              "rc %d: %s", rc, err);
    const char *quiet = check_path(dir, "quiet-scontrol");
    write_script(quiet, "exit 0");
    rc = scontrol_hostnames((void *)quiet, "vm", &hosts, &n, err);
    CHECK_MSG(rc == DP_ERR && strstr(err, "quiet-scontrol show hostnames printed no host names"), "%s", err);
    const char *killed = check_path(dir, "killed-scontrol");
    write_script(killed, "kill -9 $$");
    rc = scontrol_hostnames((void *)killed, "vm", &hosts, &n, err);
    CHECK_MSG(rc == DP_ERR && strstr(err, "show hostnames was killed by signal 9"), "%s", err);
    const char *missing = check_path(dir, "no-such-scontrol");
    rc = scontrol_hostnames((void *)missing, "vm", &hosts, &n, err);
    CHECK_MSG(rc == DP_ENOTFOUND && strstr(err, "no-such-scontrol: not found (Slurm's scontrol expands the node "
              "list: put it on PATH, or set DOWNPOUR_SCONTROL to its path)"), "rc %d: %s", rc, err);
    const char *noexec = check_path(dir, "noexec-scontrol");
    write_script(noexec, "exit 0");
    chmod(noexec, 0600);
    rc = scontrol_hostnames((void *)noexec, "vm", &hosts, &n, err);
    CHECK_MSG(rc == DP_ERR && strstr(err, "noexec-scontrol: cannot run it: Permission denied"), "%s", err);

    /* inside the resolver: a missing scontrol names the variable and the program */
    const char *envp[] = {"SLURM_PROCID=1", "SLURM_STEP_NODELIST=n[1-2]", "SLURM_STEP_TASKS_PER_NODE=1(x2)", NULL};
    resolver_args a = {
        .kind = RESOLVER_SLURM, .task_index = -1, .jobs = "ps:1,worker:1", .getenv = recorded_env,
        .env_ctx = (void *)envp, .hostnames = scontrol_hostnames, .hostnames_ctx = (void *)missing,
    };
    outcome o;
    memset(&o, 0, sizeof o);
    o.rc = resolver_resolve(&a, &o.spec, &o.job, &o.index, &o.used, o.note, sizeof o.note, o.err);
    CHECK_MSG(o.rc == DP_ENOTFOUND && strstr(o.err, "SLURM_STEP_NODELIST=n[1-2]: ") &&
              strstr(o.err, "no-such-scontrol: not found"), "%s", o.err);
    const char *fake2 = check_path(dir, "fake2-scontrol");
    write_script(fake2, "echo n1; echo n2");
    a.hostnames_ctx = (void *)fake2;
    o.rc = resolver_resolve(&a, &o.spec, &o.job, &o.index, &o.used, o.note, sizeof o.note, o.err);
    CHECK_MSG(o.rc == 0 && o.job == JOB_WORKER && o.index == 0 && addr_is(&o.spec.workers[0], "n2", 8888), "%s",
              o.err);
    spec_release(&o.spec);

    /* Slurm's own scontrol (a config file is all `show hostnames` needs) */
    if (system("command -v scontrol >/dev/null 2>&1") != 0) {
        CHECK_SKIP("scontrol is not installed (Debian's slurm-client, part of slurm-wlm: scripts/deps.sh)");
        return;
    }
    const char *conf = check_path(dir, "slurm.conf");
    FILE *f = fopen(conf, "w");
    if (f) {
        fprintf(f, "ClusterName=t\nSlurmctldHost=localhost\n");
        fclose(f);
    }
    setenv("SLURM_CONF", conf, 1);
    rc = scontrol_hostnames(NULL, "n[08-10],gpu3", &hosts, &n, err);
    CHECK_MSG(rc == 0 && n == 4 && !strcmp(hosts[0], "n08") && !strcmp(hosts[2], "n10") &&
              !strcmp(hosts[3], "gpu3"), "rc %d n %d: %s", rc, n, rc ? err : "");
    resolver_hosts_free(hosts, n);
}

int main(void)
{
    char dir[] = "/tmp/test_resolver.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_jobs_parse();
    test_tasks_per_node();
    test_one_node();
    test_heterogeneous();
    test_batch_script();
    test_slurm_errors();
    test_choice();
    test_scontrol(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return CHECK_DONE();
}
