/* resolver.c — the cluster resolvers of `downpour task` (see resolver.h): which one runs,
 * and the Slurm one, after TensorFlow's SlurmClusterResolver. Pure logic: the environment
 * and the node-list expansion are callbacks. Invariant: on success the spec holds exactly
 * the --jobs' tasks, rank order, ps first; on failure it is left empty. Every error is
 * one line naming the variable or flag, its value and what is wrong. */
#include "cluster/resolver.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/dp.h"

static const char *const kind_names[] = {"auto", "flags", "tfconfig", "slurm"};

int resolver_kind_parse(const char *s, resolver_kind *kind, char *err)
{
    for (size_t i = 0; i < DP_ARRAY_LEN(kind_names); i++)
        if (s && !strcmp(s, kind_names[i])) {
            *kind = (resolver_kind)i;
            return DP_OK;
        }
    return dp_fail(err, DP_EINVAL, "--cluster-resolver: \"%.64s\" is not one of auto, flags, tfconfig "
                   "or slurm", s ? s : "");
}

const char *resolver_kind_name(resolver_kind kind)
{
    dp_assert("resolver_kind_name: unknown kind", (size_t)kind < DP_ARRAY_LEN(kind_names));
    return kind_names[kind];
}

void resolver_hosts_free(char **hosts, int n)
{
    for (int i = 0; hosts && i < n; i++) free(hosts[i]);
    free(hosts);
}

/* Parses the decimal count at *p (digits only) into *v, advancing *p; at most `max`.
 * Returns 0, or DP_EINVAL when there is no digit or the number is larger. */
static int parse_count(const char **p, long long max, long long *v)
{
    if (!isdigit((unsigned char)**p)) return DP_EINVAL;
    long long x = 0;
    while (isdigit((unsigned char)**p)) {
        x = x * 10 + (**p - '0');
        if (x > max) return DP_EINVAL;
        (*p)++;
    }
    *v = x;
    return DP_OK;
}

int resolver_jobs_parse(const char *text, resolver_jobs *jobs, char *err)
{
    jobs->n_ps = jobs->n_workers = 0;
    if (!text || !*text)
        return dp_fail(err, DP_EINVAL, "--jobs: empty; give ps:N,worker:M (e.g. ps:1,worker:2)");
    const char *p = text;
    for (int entry = 0;; entry++) {
        const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        if (!colon || colon > end)
            return dp_fail(err, DP_EINVAL, "--jobs %.128s: entry %d \"%.*s\" is not JOB:COUNT", text, entry,
                           (int)(end - p > 64 ? 64 : end - p), p);
        size_t nlen = (size_t)(colon - p);
        dp_job job;
        int *slot;
        if (nlen == 2 && !strncmp(p, "ps", 2)) job = JOB_PS;
        else if (nlen == 6 && !strncmp(p, "worker", 6)) job = JOB_WORKER;
        else
            return dp_fail(err, DP_EINVAL, "--jobs %.128s: job \"%.*s\" is not ps or worker (worker 0 "
                           "is the chief)", text, (int)(nlen > 64 ? 64 : nlen), p);
        slot = job == JOB_PS ? &jobs->n_ps : &jobs->n_workers;
        if (*slot)
            return dp_fail(err, DP_EINVAL, "--jobs %.128s: %s is given twice", text, spec_job_name(job));
        long long max = job == JOB_PS ? SPEC_MAX_PS : SPEC_MAX_WORKERS, v = 0;
        const char *q = colon + 1;
        if (parse_count(&q, max, &v) || q != end || v < 1)
            return dp_fail(err, DP_EINVAL, "--jobs %.128s: %s count \"%.*s\" is not in 1..%lld", text,
                           spec_job_name(job), (int)(end - colon - 1 > 32 ? 32 : end - colon - 1),
                           colon + 1, max);
        *slot = (int)v;
        if (!comma) break;
        p = comma + 1;
    }
    if (!jobs->n_ps || !jobs->n_workers)
        return dp_fail(err, DP_EINVAL, "--jobs %.128s: needs both ps and worker tasks (e.g. ps:1,worker:2)",
                       text);
    return DP_OK;
}

int resolver_tasks_per_node_parse(const char *text, const char *what, int **counts, int *n,
                                  char *err)
{
    const long long max_total = (long long)SPEC_MAX_PS + SPEC_MAX_WORKERS;
    *counts = NULL;
    *n = 0;
    if (!text || !*text) return dp_fail(err, DP_EINVAL, "%s: empty", what);
    /* First pass: check the syntax and the totals, so that "1(x99999999)" is refused
     * before anything is allocated; second pass: fill. */
    long long nodes = 0, tasks = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *p = text;
        int k = 0;
        for (int entry = 0;; entry++) {
            const char *start = p;
            long long c = 0, reps = 1;
            int bad = parse_count(&p, max_total, &c) || c < 1;
            if (!bad && *p == '(') {
                bad = strncmp(p, "(x", 2) != 0;
                if (!bad) {
                    p += 2;
                    bad = parse_count(&p, max_total, &reps) || reps < 1 || *p != ')';
                }
                if (!bad) p++;
            }
            if (bad || (*p && *p != ',')) {
                const char *end = strchr(start, ',');
                int len = end ? (int)(end - start) : (int)strlen(start);
                return dp_fail(err, DP_EINVAL, "%s=%.128s: entry %d \"%.*s\" is not N or N(xR) with "
                               "N, R in 1..%lld", what, text, entry, len > 32 ? 32 : len, start, max_total);
            }
            if (pass == 0) {
                nodes += reps;
                tasks += c * reps;
                if (nodes > max_total || tasks > max_total)
                    return dp_fail(err, DP_EINVAL, "%s=%.128s: more than %lld tasks", what, text, max_total);
            } else {
                for (long long r = 0; r < reps; r++) (*counts)[k++] = (int)c;
            }
            if (!*p) break;
            p++;
        }
        if (pass == 0) *counts = xmalloc((size_t)nodes * sizeof **counts);
    }
    *n = (int)nodes;
    return DP_OK;
}

/* ---- which resolver ------------------------------------------------------------ */

static const char *env(const resolver_args *a, const char *name)
{
    const char *v = a->getenv ? a->getenv(a->env_ctx, name) : NULL;
    return v && *v ? v : NULL;
}

/* auto's choice, and why (for messages): flags, TF_CONFIG, then Slurm. */
static resolver_kind pick(const resolver_args *a, const char **why)
{
    if (a->kind != RESOLVER_AUTO) {
        *why = "--cluster-resolver";
        return a->kind;
    }
    if (a->ps_hosts || a->worker_hosts) {
        *why = "--ps_hosts/--worker_hosts given";
        return RESOLVER_FLAGS;
    }
    if (env(a, "TF_CONFIG")) {
        *why = "TF_CONFIG is set";
        return RESOLVER_TFCONFIG;
    }
    if (env(a, "SLURM_PROCID")) {
        *why = "SLURM_PROCID is set";
        return RESOLVER_SLURM;
    }
    *why = "neither TF_CONFIG nor SLURM_PROCID is set";
    return RESOLVER_FLAGS;
}

/* A flag the chosen resolver does not read is an error, never silently dropped. */
static int check_flags(const resolver_args *a, resolver_kind k, const char *why, char *err)
{
    const char *kn = resolver_kind_name(k);
    if (k != RESOLVER_SLURM && (a->jobs || a->port_base))
        return dp_fail(err, DP_EINVAL, "%s: only the slurm resolver reads it, and this task resolves "
                       "with %s (%s)", a->jobs ? "--jobs" : "--port-base", kn, why);
    if (k != RESOLVER_FLAGS && (a->ps_hosts || a->worker_hosts))
        return dp_fail(err, DP_EINVAL, "%s: only the flags resolver reads it (--cluster-resolver %s)",
                       a->ps_hosts ? "--ps_hosts" : "--worker_hosts", kn);
    if (k == RESOLVER_SLURM && (a->job_name || a->task_index >= 0))
        return dp_fail(err, DP_EINVAL, "%s: the slurm resolver takes the task from SLURM_PROCID and "
                       "--jobs", a->job_name ? "--job_name" : "--task_index");
    if (k == RESOLVER_TFCONFIG && !env(a, "TF_CONFIG"))
        return dp_fail(err, DP_EINVAL, "--cluster-resolver tfconfig: TF_CONFIG is not set");
    return DP_OK;
}

/* ---- slurm ----------------------------------------------------------------------- */

/* What the Slurm resolver reads from the environment. */
typedef struct slurm_env {
    long long rank;
    const char *nodelist, *nodelist_var;   /* the value and the variable it came from */
    const char *tpn, *tpn_var;
    int in_step;                           /* the STEP_ variables (inside srun) */
} slurm_env;

static int slurm_env_read(const resolver_args *a, slurm_env *s, char *err)
{
    const char *procid = env(a, "SLURM_PROCID");
    if (!procid)
        return dp_fail(err, DP_EINVAL, "SLURM_PROCID is not set: the slurm resolver runs in a Slurm task "
                       "(srun downpour task ...)");
    if (dp_parse_int(procid, &s->rank) || s->rank < 0)
        return dp_fail(err, DP_EINVAL, "SLURM_PROCID=%.32s: not a non-negative integer", procid);
    s->in_step = env(a, "SLURM_STEP_NODELIST") != NULL;
    s->nodelist_var = s->in_step ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    s->nodelist = env(a, s->nodelist_var);
    if (!s->nodelist)
        return dp_fail(err, DP_EINVAL, "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set: "
                       "not a Slurm job?");
    s->tpn_var = s->in_step ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
    s->tpn = env(a, s->tpn_var);
    if (!s->tpn) return dp_fail(err, DP_EINVAL, "%s is not set (%s is)", s->tpn_var, s->nodelist_var);
    return DP_OK;
}

/* Checks how many tasks the step has against --jobs and the rank against both. */
static int slurm_check_counts(const resolver_args *a, const slurm_env *s, const resolver_jobs *j,
                              const char *jobs_text, int total, char *err)
{
    const char *nt = s->in_step ? env(a, "SLURM_STEP_NUM_TASKS") : NULL;
    long long v;
    if (nt && (dp_parse_int(nt, &v) || v != total))
        return dp_fail(err, DP_EINVAL, "SLURM_STEP_NUM_TASKS=%.32s disagrees with %s=%.128s (%d tasks)",
                       nt, s->tpn_var, s->tpn, total);
    int need = j->n_ps + j->n_workers;
    if (total < need)
        return dp_fail(err, DP_EINVAL, "too few tasks: --jobs %s needs %d, %s=%.128s gives %d "
                       "(srun -n %d)", jobs_text, need, s->tpn_var, s->tpn, total, need);
    if (s->rank >= total)
        return dp_fail(err, DP_EINVAL, "SLURM_PROCID=%lld: rank %lld is outside the step's %d tasks "
                       "(%s=%.128s)", s->rank, s->rank, total, s->tpn_var, s->tpn);
    if (s->rank >= need)
        return dp_fail(err, DP_EINVAL, "SLURM_PROCID=%lld: rank %lld is outside --jobs %s (%d tasks)",
                       s->rank, s->rank, jobs_text, need);
    if (total > need)
        return dp_fail(err, DP_EINVAL, "too many tasks: %s=%.128s gives %d, --jobs %s uses %d; ranks "
                       "%d..%d would have no job (srun -n %d)", s->tpn_var, s->tpn, total, jobs_text,
                       need, need, total - 1, need);
    return DP_OK;
}

/* Fills spec: rank r at its node (hosts[k]) and port_base + its local rank; ranks
 * 0..n_ps-1 are the ps tasks, the rest the workers. */
static int slurm_fill(const resolver_jobs *j, char **hosts, const int *counts, int n_nodes,
                      int port_base, cluster_spec *spec, char *err)
{
    int need = j->n_ps + j->n_workers, r = 0;
    spec->n_ps = j->n_ps;
    spec->n_workers = j->n_workers;
    spec->ps = xcalloc((size_t)j->n_ps, sizeof *spec->ps);
    spec->workers = xcalloc((size_t)j->n_workers, sizeof *spec->workers);
    for (int k = 0; k < n_nodes && r < need; k++) {
        if (port_base + counts[k] - 1 > 65535)
            return dp_fail(err, DP_EINVAL, "--port-base %d: node %s has %d tasks, so ports would pass "
                           "65535", port_base, hosts[k], counts[k]);
        for (int l = 0; l < counts[k] && r < need; l++, r++) {
            dp_addr *d = r < j->n_ps ? &spec->ps[r] : &spec->workers[r - j->n_ps];
            char text[300], aerr[DP_ERRLEN];
            snprintf(text, sizeof text, "%s:%d", hosts[k], port_base + l);
            if (spec_addr_parse(text, d, aerr))
                return dp_fail(err, DP_EINVAL, "node %d \"%.64s\" of the node list: %s", k, hosts[k], aerr);
        }
    }
    for (int k = 0; k < n_nodes; k++)
        for (int m = 0; m < k; m++)
            if (!strcmp(hosts[k], hosts[m]))
                return dp_fail(err, DP_EINVAL, "node list names %s twice (nodes %d and %d)", hosts[k], m, k);
    return DP_OK;
}

/* Where block distribution puts rank r: node *node, local rank *local. */
static void slurm_place(const int *counts, int n_nodes, long long r, int *node, int *local)
{
    int k = 0;
    while (k < n_nodes - 1 && r >= counts[k]) r -= counts[k++];
    *node = k;
    *local = (int)r;
}

/* Inside srun the task knows its own local rank and node: they must be where block
 * distribution puts it, or every other task would look for it at the wrong address. */
static int slurm_check_place(const resolver_args *a, const slurm_env *s, char **hosts, int node,
                             int local, char *err)
{
    if (!s->in_step) return DP_OK;
    const char *lid = env(a, "SLURM_LOCALID"), *name = env(a, "SLURMD_NODENAME");
    long long v;
    if (lid && (dp_parse_int(lid, &v) || v != local))
        return dp_fail(err, DP_EINVAL, "SLURM_LOCALID=%.32s: rank %lld should be local task %d of node %s "
                       "(block distribution, as the resolver assumes: srun --distribution=block)", lid,
                       s->rank, local, hosts[node]);
    if (name && strcmp(name, hosts[node]))
        return dp_fail(err, DP_EINVAL, "SLURMD_NODENAME=%.64s: rank %lld should run on node %s (block "
                       "distribution, as the resolver assumes: srun --distribution=block)", name, s->rank,
                       hosts[node]);
    return DP_OK;
}

static int resolve_slurm(const resolver_args *a, cluster_spec *spec, dp_job *job, int *index,
                         char *note, size_t note_n, char *err)
{
    slurm_env s;
    int *counts = NULL, n_nodes = 0, n_hosts = 0, rc;
    char **hosts = NULL;
    char jobs_text[64];
    resolver_jobs j;
    if ((rc = slurm_env_read(a, &s, err))) goto fail;
    if ((rc = resolver_tasks_per_node_parse(s.tpn, s.tpn_var, &counts, &n_nodes, err))) goto fail;
    int total = 0;
    for (int k = 0; k < n_nodes; k++) total += counts[k];
    if (a->jobs) {
        if ((rc = resolver_jobs_parse(a->jobs, &j, err))) goto fail;
    } else {
        /* TensorFlow's default is every task a worker; a ps cluster needs one ps. */
        if (total < 2) {
            rc = dp_fail(err, DP_EINVAL, "%s=%.64s: 1 task, and a cluster needs a ps and a worker (srun "
                         "-n 2 or more)", s.tpn_var, s.tpn);
            goto fail;
        }
        j.n_ps = 1;
        j.n_workers = total - 1 > SPEC_MAX_WORKERS ? SPEC_MAX_WORKERS : total - 1;
    }
    snprintf(jobs_text, sizeof jobs_text, "ps:%d,worker:%d", j.n_ps, j.n_workers);
    if ((rc = slurm_check_counts(a, &s, &j, jobs_text, total, err))) goto fail;
    int port_base = a->port_base ? a->port_base : RESOLVER_PORT_BASE;
    if (port_base < 1 || port_base > 65535) {
        rc = dp_fail(err, DP_EINVAL, "--port-base %d: not in 1..65535", port_base);
        goto fail;
    }
    if (!a->hostnames) {
        rc = dp_fail(err, DP_EINVAL, "%s: no way to expand a Slurm node list", s.nodelist_var);
        goto fail;
    }
    char herr[DP_ERRLEN];
    if ((rc = a->hostnames(a->hostnames_ctx, s.nodelist, &hosts, &n_hosts, herr))) {
        rc = dp_fail(err, rc, "%s=%.128s: %s", s.nodelist_var, s.nodelist, herr);
        goto fail;
    }
    if (n_hosts != n_nodes) {
        rc = dp_fail(err, DP_EINVAL, "%s=%.128s names %d node%s but %s=%.128s counts tasks on %d",
                     s.nodelist_var, s.nodelist, n_hosts, n_hosts == 1 ? "" : "s", s.tpn_var, s.tpn, n_nodes);
        goto fail;
    }
    int node, local;
    slurm_place(counts, n_nodes, s.rank, &node, &local);
    if ((rc = slurm_check_place(a, &s, hosts, node, local, err))) goto fail;
    if ((rc = slurm_fill(&j, hosts, counts, n_nodes, port_base, spec, err))) goto fail;
    *job = s.rank < j.n_ps ? JOB_PS : JOB_WORKER;
    *index = (int)(*job == JOB_PS ? s.rank : s.rank - j.n_ps);
    char me[64], addr[300];
    const dp_addr *mine = *job == JOB_PS ? &spec->ps[*index] : &spec->workers[*index];
    snprintf(note, note_n, "slurm: rank %lld of %d (--jobs %s%s) is %s at %s", s.rank, total, jobs_text,
             a->jobs ? "" : ", the default", spec_task_name(me, sizeof me, *job, *index),
             spec_addr_format(addr, sizeof addr, mine));
    if (!s.in_step && strlen(note) + 80 < note_n)
        snprintf(note + strlen(note), note_n - strlen(note), " (outside srun: the job's %s and %s)",
                 s.nodelist_var, s.tpn_var);
    resolver_hosts_free(hosts, n_hosts);
    free(counts);
    return DP_OK;
fail:
    resolver_hosts_free(hosts, n_hosts);
    free(counts);
    spec_release(spec);
    return rc;
}

int resolver_resolve(const resolver_args *a, cluster_spec *spec, dp_job *job, int *index,
                     resolver_kind *used, char *note, size_t note_n, char *err)
{
    dp_assert("resolver_resolve: NULL argument", a && spec && job && index && used && note && note_n);
    memset(spec, 0, sizeof *spec);
    note[0] = '\0';
    const char *why;
    resolver_kind k = pick(a, &why);
    *used = k;
    int rc = check_flags(a, k, why, err);
    if (rc) return rc;
    if (k == RESOLVER_SLURM) {
        rc = resolve_slurm(a, spec, job, index, note, note_n, err);
        if (!rc && env(a, "TF_CONFIG") && strlen(note) + 40 < note_n)
            snprintf(note + strlen(note), note_n - strlen(note), "; TF_CONFIG is not read");
        return rc;
    }
    spec_task_args s = {
        .job_name = a->job_name, .task_index = a->task_index, .ps_hosts = a->ps_hosts,
        .worker_hosts = a->worker_hosts,
        /* flags: TF_CONFIG only so that spec_resolve can say it is not read */
        .tf_config = k == RESOLVER_TFCONFIG || a->ps_hosts || a->worker_hosts ? env(a, "TF_CONFIG") : NULL,
    };
    return spec_resolve(&s, spec, job, index, note, note_n, err);
}

char *resolver_tf_config_json(const cluster_spec *spec, dp_job job, int index)
{
    json_t *ps = json_array(), *wk = json_array();
    char addr[300];
    for (int i = 0; i < spec->n_ps; i++)
        json_array_append_new(ps, json_string(spec_addr_format(addr, sizeof addr, &spec->ps[i])));
    for (int i = 0; i < spec->n_workers; i++)
        json_array_append_new(wk, json_string(spec_addr_format(addr, sizeof addr, &spec->workers[i])));
    json_t *o = json_pack("{s:{s:o,s:o},s:{s:s,s:i}}", "cluster", "ps", ps, "worker", wk, "task", "type",
                          spec_job_name(job), "index", index);
    dp_assert("resolver_tf_config_json: json_pack", o != NULL);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    dp_assert("resolver_tf_config_json: json_dumps", s != NULL);
    /* jansson's allocator is malloc: the caller's free() matches */
    return s;
}
