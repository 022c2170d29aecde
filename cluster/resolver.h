/* resolver.h — how a task learns its cluster and its place in it, as TensorFlow's cluster
 * resolvers do: from --ps_hosts/--worker_hosts flags, from TF_CONFIG, or from Slurm's
 * environment (SlurmClusterResolver: node list, tasks per node, SLURM_PROCID, jobs given
 * in rank order, ports port_base + local rank). Pure logic: the environment and the
 * expansion of a Slurm node list reach it through callbacks, so tests feed it recorded
 * environments; the real expansion calls Slurm's own `scontrol` (runtime/scontrol.h).
 * Not thread-safe by itself; callers resolve once, before any thread starts. */
#ifndef CLUSTER_RESOLVER_H
#define CLUSTER_RESOLVER_H

#include <stddef.h>

#include "cluster/spec.h"

/* --cluster-resolver: auto picks flags when --ps_hosts/--worker_hosts is given, else
 * tfconfig when TF_CONFIG is set, else slurm when SLURM_PROCID is set, else flags. */
typedef enum resolver_kind {
    RESOLVER_AUTO = 0,
    RESOLVER_FLAGS,
    RESOLVER_TFCONFIG,
    RESOLVER_SLURM
} resolver_kind;

/* TensorFlow's SlurmClusterResolver default port_base. */
#define RESOLVER_PORT_BASE 8888

/* Parses "auto", "flags", "tfconfig" or "slurm". Returns 0 or DP_EINVAL (message names
 * --cluster-resolver and the choices). */
int resolver_kind_parse(const char *s, resolver_kind *kind, char *err);

/* "auto", "flags", "tfconfig" or "slurm". */
const char *resolver_kind_name(resolver_kind kind);

/* --jobs ps:N,worker:M: how many tasks each job gets, in rank order (ps first, as
 * TensorFlow's resolver sorts its jobs). Each job at most once, in any order; both
 * needed; counts within spec.h's limits. Returns 0 or DP_EINVAL naming --jobs and the
 * entry. */
typedef struct resolver_jobs {
    int n_ps, n_workers;
} resolver_jobs;
int resolver_jobs_parse(const char *text, resolver_jobs *jobs, char *err);

/* Expands a Slurm tasks-per-node list ("2(x3),1" is 2,2,2,1) into a new array (*counts,
 * caller frees with free()) of *n entries, each >= 1. `what` names the variable in
 * messages ("SLURM_STEP_TASKS_PER_NODE"). The total is bounded by spec.h's task limits
 * before anything is allocated. Returns 0 or DP_EINVAL naming what, the text and the
 * entry. */
int resolver_tasks_per_node_parse(const char *text, const char *what, int **counts, int *n,
                                  char *err);

/* The environment: the value of `name`, or NULL when it is not set. The string must
 * stay valid until resolver_resolve returns. */
typedef const char *(*resolver_getenv_fn)(void *ctx, const char *name);

/* Expands a Slurm node list ("n[01-03],gpu7") into host names, in Slurm's order: fills
 * *hosts with a new array of *n new strings (the caller frees with resolver_hosts_free).
 * Returns 0, or a dp_err with one line in err. runtime/scontrol.h has the real one. */
typedef int (*resolver_hostnames_fn)(void *ctx, const char *nodelist, char ***hosts, int *n,
                                     char *err);

/* Frees what a resolver_hostnames_fn returned; (NULL, 0) is a no-op. */
void resolver_hosts_free(char **hosts, int n);

/* What a task was told: its flags (strings borrowed; NULL / -1 / 0 when not given) and
 * the way to read its environment (TF_CONFIG, SLURM_*) and to expand a node list. */
typedef struct resolver_args {
    resolver_kind kind;           /* --cluster-resolver */
    const char *job_name;         /* --job_name */
    long long task_index;         /* --task_index, -1 when not given */
    const char *ps_hosts;         /* --ps_hosts */
    const char *worker_hosts;     /* --worker_hosts */
    const char *jobs;             /* --jobs (slurm); NULL: ps:1,worker:<the rest> */
    int port_base;                /* --port-base (slurm); 0: RESOLVER_PORT_BASE */
    resolver_getenv_fn getenv;
    void *env_ctx;
    resolver_hostnames_fn hostnames;
    void *hostnames_ctx;
} resolver_args;

/* Resolves the cluster and this task's job and index with the resolver a->kind names
 * (auto: see resolver_kind). Flags and TF_CONFIG follow spec_resolve (cluster/spec.h).
 * Slurm follows TensorFlow's SlurmClusterResolver:
 *  - nodes: a->hostnames(SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST), in Slurm's order
 *    (TensorFlow sorts the names, which puts "n10" before "n9" where Slurm's ranks do not);
 *  - tasks per node: SLURM_STEP_TASKS_PER_NODE (else the job's SLURM_TASKS_PER_NODE, as
 *    in a batch script outside srun), one count per node; SLURM_STEP_NUM_TASKS, when set,
 *    must be their sum;
 *  - ranks fill the nodes in order (Slurm's default block distribution; SLURM_LOCALID and
 *    SLURMD_NODENAME, when set, must agree), each task at port_base + its local rank;
 *  - ranks go to the jobs in order, ps first: rank r < n_ps is ps r, the next are workers;
 *    the step's tasks must be exactly the jobs' (TensorFlow refuses a mismatch too).
 * Errors, one line naming the input: an unknown or missing variable, a rank outside the
 * jobs ("SLURM_PROCID=7: rank 7 is outside --jobs ps:1,worker:2 (3 tasks)"), too few or
 * too many tasks, node and count lists of different lengths, a flag the chosen resolver
 * does not read, and whatever a->hostnames says (a missing scontrol).
 * Fills spec (release with spec_release), *job, *index and *used (the resolver that ran);
 * note (size note_n) gets one line worth telling the user (what was not read, or where a
 * Slurm task landed), else "". Returns 0 or a dp_err with err filled; spec left empty. */
int resolver_resolve(const resolver_args *a, cluster_spec *spec, dp_job *job, int *index,
                     resolver_kind *used, char *note, size_t note_n, char *err);

/* The cluster in TF_CONFIG form, one line without a newline:
 * {"cluster":{"ps":["h:p",...],"worker":[...]},"task":{"type":"worker","index":1}}.
 * Returns a new string (caller frees with free()). */
char *resolver_tf_config_json(const cluster_spec *spec, dp_job job, int index);

#endif
