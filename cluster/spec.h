/* spec.h — what a TensorFlow cluster spec is: jobs ("ps", "worker") of tasks with
 * host:port addresses, parsed from --ps_hosts/--worker_hosts lists or from TF_CONFIG
 * JSON, and TensorFlow-style device names. Pure logic: no sockets, no clock. */
#ifndef CLUSTER_SPEC_H
#define CLUSTER_SPEC_H

#include <stddef.h>

typedef enum dp_job { JOB_PS = 0, JOB_WORKER = 1 } dp_job;

/* One task address. host is a name or dotted IPv4 (no brackets); port 1..65535. */
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

/* Parses "host:port". Errors (DP_EINVAL, message in err): empty, no colon, empty
 * host, host too long, port not a number or outside 1..65535. */
int spec_addr_parse(const char *s, dp_addr *a, char *err);

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
 * ("chief" job is not supported: worker 0 is the chief). Fills spec, *job, *index.
 * Errors name the JSON path: invalid JSON (with line/column), missing "cluster",
 * "cluster.ps" not an array of strings, bad address at "cluster.worker[2]", missing
 * or unknown "task.type", "task.index" not an integer or out of range. */
int spec_from_tf_config(const char *json, cluster_spec *spec, dp_job *job, int *index,
                        char *err);

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
