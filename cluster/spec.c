/* spec.c — cluster specs from --ps_hosts/--worker_hosts flag lists or TF_CONFIG JSON,
 * and TensorFlow-style task and device names. Pure logic: no sockets, no clock.
 * Invariant: a spec filled by spec_from_flags/spec_from_tf_config has 1..SPEC_MAX_PS
 * ps, 1..SPEC_MAX_WORKERS workers, valid addresses and no host:port twice; on failure
 * the spec is left empty (spec_release is still safe). Every error is one line that
 * names the input (flag or JSON path), the entry and what is wrong. */
#include "cluster/spec.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <jansson.h>

#include "common/dp.h"

/* Unbracketed hosts are DNS names or dotted IPv4: letters, digits, '.', '-', '_'. */
static int host_char_ok(int c)
{
    return isalnum(c) || c == '.' || c == '-' || c == '_';
}

/* Copies s into dst (size n) for quoting in a one-line message: non-printable bytes
 * become \xNN and a long text is cut with "...". Returns dst. */
static const char *printable(char *dst, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s && k + 8 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (isprint(c) && c != '"' && c != '\\') dst[k++] = (char)c;
        else k += (size_t)snprintf(dst + k, n - k, "\\x%02x", c);
    }
    if (*s) {
        memcpy(dst + k, "...", 3);
        k += 3;
    }
    dst[k] = '\0';
    return dst;
}

/* Checks a bracketed IPv6 literal (without the brackets), hlen bytes at h, and writes
 * its canonical text into canon (INET6_ADDRSTRLEN bytes), so that "[0::1]" and "[::1]"
 * are the same address in the duplicate check. */
static int v6_literal_ok(const char *h, size_t hlen, char *canon, char *err)
{
    char lit[INET6_ADDRSTRLEN];
    struct in6_addr a6;
    if (hlen == 0) return dp_fail(err, DP_EINVAL, "empty IPv6 address in \"[]\"");
    if (hlen >= sizeof lit) return dp_fail(err, DP_EINVAL, "IPv6 address too long");
    memcpy(lit, h, hlen);
    lit[hlen] = '\0';
    if (inet_pton(AF_INET6, lit, &a6) != 1) {
        char q[80];
        return dp_fail(err, DP_EINVAL, "\"%s\" is not an IPv6 address",
                       printable(q, sizeof q, lit));
    }
    inet_ntop(AF_INET6, &a6, canon, INET6_ADDRSTRLEN);
    return DP_OK;
}

int spec_addr_parse(const char *s, dp_addr *a, char *err)
{
    assert(((void)"spec_addr_parse: NULL argument", s && a));
    if (!*s) return dp_fail(err, DP_EINVAL, "empty address");
    const char *colon = strrchr(s, ':');
    if (!colon) return dp_fail(err, DP_EINVAL, "missing ':port'");
    const char *h = s;       /* the host, brackets stripped */
    char canon[INET6_ADDRSTRLEN];
    size_t hlen = (size_t)(colon - s);
    if (s[0] == '[') {
        /* "[v6]:port", as gRPC and TensorFlow write IPv6 addresses */
        const char *close = strchr(s, ']');
        if (!close) return dp_fail(err, DP_EINVAL, "'[' without ']'");
        if (close[1] != ':') return dp_fail(err, DP_EINVAL, "missing ':port' after ']'");
        colon = close + 1;
        h = s + 1;
        hlen = (size_t)(close - h);
        int rc = v6_literal_ok(h, hlen, canon, err);
        if (rc) return rc;
        h = canon;
        hlen = strlen(canon);
    } else {
        if (hlen == 0) return dp_fail(err, DP_EINVAL, "empty host");
        if (hlen >= sizeof a->host)
            return dp_fail(err, DP_EINVAL, "host longer than %zu characters",
                           sizeof a->host - 1);
        if (memchr(s, ':', hlen))
            return dp_fail(err, DP_EINVAL, "an IPv6 address needs brackets, e.g. "
                           "\"[::1]:2222\"");
        for (size_t i = 0; i < hlen; i++) {
            unsigned char c = (unsigned char)s[i];
            if (!host_char_ok(c)) {
                if (isprint(c))
                    return dp_fail(err, DP_EINVAL, "host has invalid character '%c'", c);
                return dp_fail(err, DP_EINVAL, "host has invalid character 0x%02x", c);
            }
        }
    }
    const char *p = colon + 1;
    if (!*p) return dp_fail(err, DP_EINVAL, "missing port after ':'");
    /* digits only: strtoll alone would take " 12", "+12" and "-1" */
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) {
            char quoted[80];
            return dp_fail(err, DP_EINVAL, "port \"%s\" is not a number",
                           printable(quoted, sizeof quoted, p));
        }
    long long port;
    if (dp_parse_int(p, &port) != DP_OK || port < 1 || port > 65535)
        return dp_fail(err, DP_EINVAL, "port %s out of range 1..65535", p);
    memcpy(a->host, h, hlen);
    a->host[hlen] = '\0';
    a->port = (int)port;
    return DP_OK;
}

int spec_parse_hosts(const char *list, const char *what, int max, dp_addr **out, int *n,
                     char *err)
{
    assert(((void)"spec_parse_hosts: NULL argument", what && out && n));
    assert(((void)"spec_parse_hosts: max must be positive", max > 0));
    *out = NULL;
    *n = 0;
    if (!list || !*list) return dp_fail(err, DP_EINVAL, "%s: empty list", what);

    int count = 1;
    for (const char *p = list; *p; p++)
        if (*p == ',') count++;
    if (count > max)
        return dp_fail(err, DP_EINVAL, "%s: %d entries, at most %d allowed", what, count, max);

    dp_addr *v = xcalloc((size_t)count, sizeof *v);
    char entry[512];
    const char *p = list;
    for (int i = 0; i < count; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) {
            free(v);
            return dp_fail(err, DP_EINVAL, "%s: entry %d is empty", what, i);
        }
        if (len >= sizeof entry) {
            free(v);
            return dp_fail(err, DP_EINVAL, "%s: entry %d is longer than %zu characters",
                           what, i, sizeof entry - 1);
        }
        memcpy(entry, p, len);
        entry[len] = '\0';
        char why[DP_ERRLEN];
        if (spec_addr_parse(entry, &v[i], why) != DP_OK) {
            free(v);
            char q[80];
            return dp_fail(err, DP_EINVAL, "%s: entry %d \"%s\": %s", what, i,
                           printable(q, sizeof q, entry), why);
        }
        p = end ? end + 1 : p + len;
    }
    *out = v;
    *n = count;
    return DP_OK;
}

/* One address in the duplicate check, remembering where it came from. */
typedef struct addr_ref {
    const dp_addr *a;
    dp_job job;
    int index;
} addr_ref;

static int addr_ref_cmp(const void *x, const void *y)
{
    const addr_ref *a = x, *b = y;
    /* host names are case-insensitive (DNS) */
    int c = strcasecmp(a->a->host, b->a->host);
    if (c) return c;
    if (a->a->port != b->a->port) return a->a->port < b->a->port ? -1 : 1;
    if (a->job != b->job) return a->job < b->job ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Finds a host:port used twice in the cluster. Returns 1 and the two places (the
 * first in job/ps-then-worker order) when found, 0 otherwise. */
static int find_duplicate(const cluster_spec *spec, addr_ref *first, addr_ref *second)
{
    size_t n = (size_t)spec->n_ps + (size_t)spec->n_workers;
    addr_ref *r = xmalloc(n * sizeof *r);
    size_t k = 0;
    for (int i = 0; i < spec->n_ps; i++) r[k++] = (addr_ref){ &spec->ps[i], JOB_PS, i };
    for (int i = 0; i < spec->n_workers; i++)
        r[k++] = (addr_ref){ &spec->workers[i], JOB_WORKER, i };
    qsort(r, n, sizeof *r, addr_ref_cmp);
    int found = 0;
    for (size_t i = 1; i < n && !found; i++) {
        if (r[i].a->port == r[i - 1].a->port && !strcasecmp(r[i].a->host, r[i - 1].a->host)) {
            *first = r[i - 1];
            *second = r[i];
            found = 1;
        }
    }
    free(r);
    return found;
}

int spec_from_flags(cluster_spec *spec, const char *ps_hosts, const char *worker_hosts,
                    char *err)
{
    assert(((void)"spec_from_flags: NULL spec", spec));
    memset(spec, 0, sizeof *spec);
    int rc = spec_parse_hosts(ps_hosts, "--ps_hosts", SPEC_MAX_PS, &spec->ps, &spec->n_ps, err);
    if (rc) goto fail;
    rc = spec_parse_hosts(worker_hosts, "--worker_hosts", SPEC_MAX_WORKERS, &spec->workers,
                          &spec->n_workers, err);
    if (rc) goto fail;
    addr_ref a, b;
    if (find_duplicate(spec, &a, &b)) {
        char at[300];
        rc = dp_fail(err, DP_EINVAL, "duplicate address \"%s\": %s entry %d and %s entry %d",
                     spec_addr_format(at, sizeof at, b.a), a.job == JOB_PS ? "--ps_hosts" : "--worker_hosts",
                     a.index, b.job == JOB_PS ? "--ps_hosts" : "--worker_hosts", b.index);
        goto fail;
    }
    return DP_OK;
fail:
    spec_release(spec);
    return rc;
}

/* Reads cluster.<job> (an array of "host:port" strings) into *out / *n. */
static int tf_job_list(json_t *cluster, dp_job job, int max, dp_addr **out, int *n, char *err)
{
    const char *name = spec_job_name(job);
    *out = NULL;
    *n = 0;
    json_t *arr = json_object_get(cluster, name);
    if (!arr) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"cluster.%s\"", name);
    if (!json_is_array(arr))
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster.%s\" is not an array of strings",
                       name);
    size_t len = json_array_size(arr);
    if (len == 0) return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster.%s\" is empty", name);
    if (len > (size_t)max)
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster.%s\" has %zu entries, at most %d "
                       "allowed", name, len, max);
    dp_addr *v = xcalloc(len, sizeof *v);
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e)) {
            free(v);
            return dp_fail(err, DP_EINVAL, "TF_CONFIG: cluster.%s[%zu] is not a string", name, i);
        }
        char why[DP_ERRLEN];
        if (spec_addr_parse(json_string_value(e), &v[i], why) != DP_OK) {
            free(v);
            return dp_fail(err, DP_EINVAL, "TF_CONFIG: cluster.%s[%zu]: %s", name, i, why);
        }
    }
    *out = v;
    *n = (int)len;
    return DP_OK;
}

/* Parses TF_CONFIG's JSON and its "cluster" into spec; *root gets the document (caller
 * releases with json_decref, also on failure). */
static int tf_config_load(const char *json, cluster_spec *spec, json_t **root, char *err)
{
    memset(spec, 0, sizeof *spec);
    *root = NULL;
    if (!json || !*json) return dp_fail(err, DP_EINVAL, "TF_CONFIG: empty");
    json_error_t jerr;
    *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    if (!*root)
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: invalid JSON at line %d column %d: %s",
                       jerr.line, jerr.column, jerr.text);
    if (!json_is_object(*root))
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: top level is not an object");
    json_t *cluster = json_object_get(*root, "cluster");
    if (!cluster) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"cluster\"");
    if (!json_is_object(cluster))
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster\" is not an object");
    const char *key;
    json_t *val;
    json_object_foreach(cluster, key, val) {
        dp_job j;
        char q[80];
        if (spec_job_parse(key, &j) == DP_OK) continue;
        if (!strcmp(key, "chief"))
            return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster.chief\": the chief job is not "
                           "supported (worker 0 is the chief)");
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"cluster.%s\": unknown job (expected "
                       "\"ps\" or \"worker\")", printable(q, sizeof q, key));
    }
    int rc = tf_job_list(cluster, JOB_PS, SPEC_MAX_PS, &spec->ps, &spec->n_ps, err);
    if (rc) return rc;
    rc = tf_job_list(cluster, JOB_WORKER, SPEC_MAX_WORKERS, &spec->workers, &spec->n_workers,
                     err);
    if (rc) return rc;
    addr_ref a, b;
    char at[300];
    if (find_duplicate(spec, &a, &b))
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: duplicate address \"%s\": cluster.%s[%d] "
                       "and cluster.%s[%d]", spec_addr_format(at, sizeof at, b.a),
                       spec_job_name(a.job), a.index, spec_job_name(b.job), b.index);
    return DP_OK;
}

/* TF_CONFIG's "task" object, or NULL when absent (an error when present but not an
 * object: *rc gets it). */
static json_t *tf_task(json_t *root, int *rc, char *err)
{
    json_t *task = json_object_get(root, "task");
    *rc = DP_OK;
    if (task && !json_is_object(task)) {
        *rc = dp_fail(err, DP_EINVAL, "TF_CONFIG: \"task\" is not an object");
        return NULL;
    }
    return task;
}

/* Reads task.type into *job. */
static int tf_task_type(json_t *task, dp_job *job, char *err)
{
    json_t *type = task ? json_object_get(task, "type") : NULL;
    if (!task) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"task\"");
    if (!type) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"task.type\"");
    if (!json_is_string(type))
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"task.type\" is not a string");
    if (spec_job_parse(json_string_value(type), job) != DP_OK) {
        char q[80];
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"task.type\": unknown task type \"%s\" "
                       "(expected \"ps\" or \"worker\")",
                       printable(q, sizeof q, json_string_value(type)));
    }
    return DP_OK;
}

/* Reads task.index into *index: an integer, or a string of decimal digits ("1"), which
 * TensorFlow's resolver accepts too (it reads int(task["index"])). Range unchecked. */
static int tf_task_index(json_t *task, long long *index, char *err)
{
    json_t *idx = task ? json_object_get(task, "index") : NULL;
    if (!task) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"task\"");
    if (!idx) return dp_fail(err, DP_EINVAL, "TF_CONFIG: missing \"task.index\"");
    if (json_is_integer(idx)) {
        *index = (long long)json_integer_value(idx);
        return DP_OK;
    }
    if (json_is_string(idx)) {
        const char *t = json_string_value(idx);
        int digits = *t != '\0';
        for (const char *q = t; *q; q++)
            if (!isdigit((unsigned char)*q)) digits = 0;
        if (digits && dp_parse_int(t, index) == DP_OK) return DP_OK;
        char q[80];
        return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"task.index\" \"%s\" is not an integer",
                       printable(q, sizeof q, t));
    }
    return dp_fail(err, DP_EINVAL, "TF_CONFIG: \"task.index\" is not an integer");
}

/* Checks index against the job's task count; `what` names where it came from (a flag,
 * "--task_index", or a TF_CONFIG path). */
static int task_in_range(const cluster_spec *spec, dp_job job, long long index,
                         const char *what, char *err)
{
    int n_tasks = job == JOB_PS ? spec->n_ps : spec->n_workers;
    if (index >= 0 && index < n_tasks) return DP_OK;
    if (what[0] == '-')
        return dp_fail(err, DP_EINVAL, "%s %lld is outside the %d %s tasks of the cluster", what,
                       index, n_tasks, spec_job_name(job));
    return dp_fail(err, DP_EINVAL, "%s %lld out of range 0..%d for job \"%s\"", what, index,
                   n_tasks - 1, spec_job_name(job));
}

int spec_from_tf_config(const char *json, cluster_spec *spec, dp_job *job, int *index,
                        char *err)
{
    assert(((void)"spec_from_tf_config: NULL argument", spec && job && index));
    json_t *root = NULL;
    long long i = 0;
    int rc = tf_config_load(json, spec, &root, err);
    if (rc) goto fail;
    json_t *task = tf_task(root, &rc, err);
    if (rc) goto fail;
    if ((rc = tf_task_type(task, job, err)) || (rc = tf_task_index(task, &i, err)) ||
        (rc = task_in_range(spec, *job, i, "TF_CONFIG: \"task.index\"", err)))
        goto fail;
    *index = (int)i;
    json_decref(root);
    return DP_OK;
fail:
    json_decref(root);
    spec_release(spec);
    return rc;
}

/* The cluster from the two flags; TF_CONFIG, when set too, is not read (said in note). */
static int resolve_from_flags(const spec_task_args *a, cluster_spec *spec, dp_job *job,
                              int *index, char *note, size_t note_n, char *err)
{
    if (!a->job_name || !*a->job_name || a->task_index < 0 || !a->ps_hosts || !a->worker_hosts)
        return dp_fail(err, DP_EINVAL, "need --job_name, --task_index, --ps_hosts and "
                       "--worker_hosts (or TF_CONFIG); see --help");
    if (spec_job_parse(a->job_name, job)) {
        char q[80];
        return dp_fail(err, DP_EINVAL, "--job_name: \"%s\" is not ps or worker",
                       printable(q, sizeof q, a->job_name));
    }
    int rc = spec_from_flags(spec, a->ps_hosts, a->worker_hosts, err);
    if (rc) return rc;
    rc = task_in_range(spec, *job, a->task_index, "--task_index", err);
    if (rc) {
        spec_release(spec);
        return rc;
    }
    *index = (int)a->task_index;
    if (a->tf_config && *a->tf_config)
        snprintf(note, note_n, "--ps_hosts/--worker_hosts given: TF_CONFIG is not read");
    return DP_OK;
}

int spec_resolve(const spec_task_args *a, cluster_spec *spec, dp_job *job, int *index,
                 char *note, size_t note_n, char *err)
{
    assert(((void)"spec_resolve: NULL argument", a && spec && job && index && note && note_n));
    note[0] = '\0';
    memset(spec, 0, sizeof *spec);
    if (a->ps_hosts || a->worker_hosts || !a->tf_config || !*a->tf_config)
        return resolve_from_flags(a, spec, job, index, note, note_n, err);

    json_t *root = NULL;
    int rc = tf_config_load(a->tf_config, spec, &root, err);
    if (rc) goto fail;
    json_t *task = tf_task(root, &rc, err);
    if (rc) goto fail;
    /* Each of type and index comes from its flag when given (TFConfigClusterResolver's
     * task_type= / task_id= override TF_CONFIG's task), else from TF_CONFIG; a field a
     * flag replaces is not read, as TensorFlow does not read it. */
    dp_job tf_job = JOB_WORKER;
    long long tf_index = -1, i;
    int have_tf_job = task && json_object_get(task, "type") &&
                      tf_task_type(task, &tf_job, err) == DP_OK;
    int have_tf_index = task && json_object_get(task, "index") &&
                        tf_task_index(task, &tf_index, err) == DP_OK;
    if (a->job_name && *a->job_name) {
        if (spec_job_parse(a->job_name, job)) {
            char q[80];
            rc = dp_fail(err, DP_EINVAL, "--job_name: \"%s\" is not ps or worker",
                         printable(q, sizeof q, a->job_name));
            goto fail;
        }
    } else if ((rc = tf_task_type(task, job, err))) {
        goto fail;
    }
    if (a->task_index >= 0) i = a->task_index;
    else if ((rc = tf_task_index(task, &i, err))) goto fail;
    rc = task_in_range(spec, *job, i, a->task_index >= 0 ? "--task_index"
                       : "TF_CONFIG: \"task.index\"", err);
    if (rc) goto fail;
    *index = (int)i;

    /* An override that changes what TF_CONFIG said is never silent: one line in note. */
    int job_differs = a->job_name && *a->job_name && have_tf_job && tf_job != *job;
    int index_differs = a->task_index >= 0 && have_tf_index && tf_index != i;
    if (job_differs || index_differs) {
        char jtxt[128] = "", itxt[96] = "", mine[64];
        if (job_differs)
            snprintf(jtxt, sizeof jtxt, "--job_name=%s overrides TF_CONFIG's task.type \"%s\"%s",
                     spec_job_name(*job), spec_job_name(tf_job), index_differs ? "; " : "");
        if (index_differs)
            snprintf(itxt, sizeof itxt, "--task_index=%lld overrides TF_CONFIG's task.index %lld",
                     i, tf_index);
        snprintf(note, note_n, "%s%s: running as %s", jtxt, itxt,
                 spec_task_name(mine, sizeof mine, *job, *index));
    }
    json_decref(root);
    return DP_OK;
fail:
    json_decref(root);
    spec_release(spec);
    return rc;
}

void spec_release(cluster_spec *spec)
{
    if (!spec) return;
    free(spec->ps);
    free(spec->workers);
    memset(spec, 0, sizeof *spec);
}

const char *spec_job_name(dp_job job)
{
    assert(((void)"spec_job_name: unknown job", job == JOB_PS || job == JOB_WORKER));
    return job == JOB_PS ? "ps" : "worker";
}

int spec_job_parse(const char *s, dp_job *job)
{
    if (!s) return DP_EINVAL;
    if (!strcmp(s, "ps")) *job = JOB_PS;
    else if (!strcmp(s, "worker")) *job = JOB_WORKER;
    else return DP_EINVAL;
    return DP_OK;
}

char *spec_device_name(char *buf, size_t n, dp_job job, int task, const char *dev_type,
                       int dev_index)
{
    assert(((void)"spec_device_name: NULL buffer", buf && n > 0));
    snprintf(buf, n, "/job:%s/replica:0/task:%d/device:%s:%d", spec_job_name(job), task,
             dev_type ? dev_type : "CPU", dev_index);
    return buf;
}

char *spec_task_name(char *buf, size_t n, dp_job job, int task)
{
    assert(((void)"spec_task_name: NULL buffer", buf && n > 0));
    snprintf(buf, n, "/job:%s/replica:0/task:%d", spec_job_name(job), task);
    return buf;
}

char *spec_addr_format(char *buf, size_t n, const dp_addr *a)
{
    assert(((void)"spec_addr_format: NULL argument", buf && n > 0 && a));
    if (strchr(a->host, ':')) snprintf(buf, n, "[%s]:%d", a->host, a->port);
    else snprintf(buf, n, "%s:%d", a->host, a->port);
    return buf;
}
