/* spec.h — what a TensorFlow cluster spec is: jobs ("ps", "worker") of tasks with
 * host:port addresses, parsed from --ps_hosts/--worker_hosts lists or from TF_CONFIG
 * JSON, and TensorFlow-style device names. Pure logic: no sockets, no clock. */
#ifndef CLUSTER_SPEC_H
#define CLUSTER_SPEC_H

#include <stddef.h>

typedef enum dp_job { JOB_PS = 0, JOB_WORKER = 1 } dp_job;

/* One task address. host is a name, dotted IPv4 or an IPv6 literal in its canonical text
 * ("::1": written "[::1]:2222" in a host list, stored without the brackets); port
 * 1..65535. */
typedef struct dp_addr {
    char host[256];
    int port;
} dp_addr;

/* A cluster: n_ps ps tasks and n_workers worker tasks. Arrays owned by the spec;
 * release with spec_release(). Limits: 1..4096 ps, 1..65536 workers. */
typedef struct cluster_spec {
    int n_ps, n_workers;
    dp_addr *ps;
    dp_addr *workers;
} cluster_spec;

#define SPEC_MAX_PS 4096
#define SPEC_MAX_WORKERS 65536

/* Parses "host:port" or "[v6addr]:port". Errors (DP_EINVAL, message in err): empty, no
 * colon, empty host, host too long, an unbracketed IPv6 address, a bracketed text that
 * is not an IPv6 address, port not a number or outside 1..65535. */
int spec_addr_parse(const char *s, dp_addr *a, char *err);

/* Writes a as "host:port", or "[v6addr]:port" for an IPv6 host, into buf (size n).
 * Returns buf. */
char *spec_addr_format(char *buf, size_t n, const dp_addr *a);

/* Parses a comma-separated list "h:p,h:p" into a new array (*out, caller frees with
 * free()) of *n entries. `what` names the flag in messages ("--ps_hosts"). Errors:
 * empty list, empty entry, bad address (message names the entry index and text),
 * too many entries. */
int spec_parse_hosts(const char *list, const char *what, int max, dp_addr **out, int *n,
                     char *err);

/* Fills spec from the two flag values. Both lists must be non-empty. Duplicate
 * host:port pairs anywhere in the cluster are an error. */
int spec_from_flags(cluster_spec *spec, const char *ps_hosts, const char *worker_hosts,
                    char *err);

/* Parses TF_CONFIG JSON: {"cluster":{"ps":[...],"worker":[...]},"task":{"type":"worker","index":1}}
 * ("chief" job is not supported: worker 0 is the chief). "index" may be a string of
 * digits ("1"), as TensorFlow's TFConfigClusterResolver accepts. Fills spec, *job, *index.
 * Errors name the JSON path: invalid JSON (with line/column), missing "cluster",
 * "cluster.ps" not an array of strings, bad address at "cluster.worker[2]", missing
 * or unknown "task.type", "task.index" not an integer or out of range. */
int spec_from_tf_config(const char *json, cluster_spec *spec, dp_job *job, int *index,
                        char *err);

/* What a task was told about its cluster and itself: the four flags (NULL / -1 when not
 * given) and $TF_CONFIG (NULL or "" when unset). Strings borrowed. */
typedef struct spec_task_args {
    const char *job_name;     /* --job_name */
    long long task_index;     /* --task_index, -1 when not given */
    const char *ps_hosts;     /* --ps_hosts */
    const char *worker_hosts; /* --worker_hosts */
    const char *tf_config;    /* $TF_CONFIG */
} spec_task_args;

/* Decides the cluster and this task's job and index, TensorFlow's way:
 *  - the cluster comes from --ps_hosts/--worker_hosts when either is given (then all four
 *    flags are required and TF_CONFIG is not read), else from TF_CONFIG's "cluster";
 *  - with TF_CONFIG, --job_name and --task_index each override TF_CONFIG's task.type and
 *    task.index (TFConfigClusterResolver(task_type=, task_id=)); a field not overridden
 *    comes from TF_CONFIG's "task", which may then be absent.
 * The final index is checked against the job's tasks. Fills spec (release with
 * spec_release), *job, *index. note (size note_n) gets one line when something given
 * was not used — a flag overriding a different TF_CONFIG value, or TF_CONFIG set beside
 * the host flags — else "". Returns 0 or DP_EINVAL with err filled; spec left empty. */
int spec_resolve(const spec_task_args *a, cluster_spec *spec, dp_job *job, int *index,
                 char *note, size_t note_n, char *err);

/* Frees the arrays; leaves an empty spec. spec_release on an empty spec is a no-op. */
void spec_release(cluster_spec *spec);

/* "ps" or "worker". */
const char *spec_job_name(dp_job job);

/* Parses "ps" / "worker" into *job; DP_EINVAL otherwise. */
int spec_job_parse(const char *s, dp_job *job);

/* Writes the TensorFlow device name "/job:worker/replica:0/task:1/device:CPU:0"
 * into buf (size n); dev_type is "CPU" or "GPU". Returns buf. */
char *spec_device_name(char *buf, size_t n, dp_job job, int task, const char *dev_type,
                       int dev_index);

/* Writes the task name "/job:ps/replica:0/task:0" into buf. Returns buf. */
char *spec_task_name(char *buf, size_t n, dp_job job, int task);

#endif
