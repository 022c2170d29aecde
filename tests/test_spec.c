/* test_spec.c — cluster specs from flag lists and TF_CONFIG, their error messages, and
 * TensorFlow task/device names. */
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "tests/check.h"

/* Expects spec_from_flags to fail with a message containing `want`. */
static void bad_flags(const char *ps, const char *workers, const char *want)
{
    cluster_spec s;
    char err[DP_ERRLEN] = "";
    int rc = spec_from_flags(&s, ps, workers, err);
    CHECK_MSG(rc == DP_EINVAL && strstr(err, want), "ps=%s workers=%s: rc %d, err \"%s\", want \"%s\"",
              ps ? ps : "(null)", workers ? workers : "(null)", rc, err, want);
    CHECK(s.n_ps == 0 && s.ps == NULL && s.n_workers == 0 && s.workers == NULL);
    spec_release(&s);
}

/* Expects spec_from_tf_config to fail with a message containing `want`. */
static void bad_tf(const char *json, const char *want)
{
    cluster_spec s;
    dp_job job;
    int idx;
    char err[DP_ERRLEN] = "";
    int rc = spec_from_tf_config(json, &s, &job, &idx, err);
    CHECK_MSG(rc == DP_EINVAL && strstr(err, want), "%s: rc %d, err \"%s\", want \"%s\"",
              json ? json : "(null)", rc, err, want);
    CHECK(s.n_ps == 0 && s.ps == NULL && s.n_workers == 0 && s.workers == NULL);
    spec_release(&s);
}

static void test_addr(void)
{
    dp_addr a;
    char err[DP_ERRLEN];
    CHECK(spec_addr_parse("localhost:2222", &a, err) == 0);
    CHECK(!strcmp(a.host, "localhost") && a.port == 2222);
    CHECK(spec_addr_parse("10.0.0.7:65535", &a, err) == 0);
    CHECK(!strcmp(a.host, "10.0.0.7") && a.port == 65535);
    CHECK(spec_addr_parse("h:1", &a, err) == 0 && a.port == 1);
    CHECK(spec_addr_parse("", &a, err) == DP_EINVAL && strstr(err, "empty"));
    CHECK(spec_addr_parse(":80", &a, err) == DP_EINVAL && strstr(err, "empty host"));
    CHECK(spec_addr_parse("host:", &a, err) == DP_EINVAL && strstr(err, "missing port"));
    CHECK(spec_addr_parse("host:+80", &a, err) == DP_EINVAL && strstr(err, "not a number"));
    CHECK(spec_addr_parse("host:-1", &a, err) == DP_EINVAL && strstr(err, "not a number"));
    CHECK(spec_addr_parse("ho st:1", &a, err) == DP_EINVAL && strstr(err, "invalid character"));
    CHECK(spec_addr_parse("host:99999999999999999999999", &a, err) == DP_EINVAL &&
          strstr(err, "out of range"));
    char longhost[300];
    memset(longhost, 'a', 260);
    strcpy(longhost + 260, ":1");
    CHECK(spec_addr_parse(longhost, &a, err) == DP_EINVAL && strstr(err, "longer than 255"));
}

static void test_flags_good(void)
{
    cluster_spec s;
    char err[DP_ERRLEN] = "";
    int rc = spec_from_flags(&s, "ps0.example.com:2222,ps1.example.com:2222",
                             "localhost:2223,localhost:2224,10.1.2.3:7000", err);
    CHECK_MSG(rc == 0, "%s", err);
    CHECK(s.n_ps == 2 && s.n_workers == 3);
    CHECK(!strcmp(s.ps[1].host, "ps1.example.com") && s.ps[1].port == 2222);
    CHECK(!strcmp(s.workers[2].host, "10.1.2.3") && s.workers[2].port == 7000);
    CHECK(!strcmp(s.workers[0].host, "localhost") && s.workers[0].port == 2223);
    spec_release(&s);
    CHECK(s.n_ps == 0 && s.ps == NULL);
    spec_release(&s); /* twice is a no-op */

    dp_addr *v;
    int n;
    CHECK(spec_parse_hosts("a:1,b:2,c:3", "--x", 2, &v, &n, err) == DP_EINVAL &&
          strstr(err, "--x: 3 entries, at most 2"));
    CHECK(spec_parse_hosts("a:1", "--x", 2, &v, &n, err) == 0 && n == 1 && v[0].port == 1);
    free(v);
}

static void test_flags_bad(void)
{
    bad_flags("", "w:1", "--ps_hosts: empty list");
    bad_flags(NULL, "w:1", "--ps_hosts: empty list");
    bad_flags("p:1", "", "--worker_hosts: empty list");
    bad_flags("p:1,foo", "w:2", "--ps_hosts: entry 1 \"foo\": missing ':port'");
    bad_flags("p:0", "w:2", "--ps_hosts: entry 0 \"p:0\": port 0 out of range 1..65535");
    bad_flags("p:1", "w:2,w:70000", "--worker_hosts: entry 1 \"w:70000\": port 70000 out of range 1..65535");
    bad_flags("p:http", "w:2", "--ps_hosts: entry 0 \"p:http\": port \"http\" is not a number");
    bad_flags("a:1,,b:2", "w:2", "--ps_hosts: entry 1 is empty");
    bad_flags("a:1,", "w:2", "--ps_hosts: entry 1 is empty");
    bad_flags("p:1", ",w:2", "--worker_hosts: entry 0 is empty");
    bad_flags("p:1", "w:2,:3", "--worker_hosts: entry 1 \":3\": empty host");
    bad_flags("p\n:1", "w:2", "--ps_hosts: entry 0 \"p\\x0a:1\": host has invalid character 0x0a");
    bad_flags("p:1", "w:1\"x", "port \"1\\x22x\" is not a number");
    bad_flags("p:1,p:1", "w:2", "duplicate address \"p:1\": --ps_hosts entry 0 and --ps_hosts entry 1");
    bad_flags("p:1", "w:2,localhost:5,P:1", "duplicate address \"P:1\": --ps_hosts entry 0 and --worker_hosts entry 2");
}

static void test_tf_good(void)
{
    const char *json =
        "{\"cluster\": {\"ps\": [\"host0:2222\", \"host1:2222\"],"
        "              \"worker\": [\"host2:2222\", \"host3:2222\", \"host4:2223\"]},"
        " \"task\": {\"type\": \"worker\", \"index\": 1}, \"environment\": \"cloud\"}";
    cluster_spec s;
    dp_job job = JOB_PS;
    int idx = -1;
    char err[DP_ERRLEN] = "";
    int rc = spec_from_tf_config(json, &s, &job, &idx, err);
    CHECK_MSG(rc == 0, "%s", err);
    CHECK(job == JOB_WORKER && idx == 1);
    CHECK(s.n_ps == 2 && s.n_workers == 3);
    CHECK(!strcmp(s.ps[0].host, "host0") && s.ps[0].port == 2222);
    CHECK(!strcmp(s.workers[2].host, "host4") && s.workers[2].port == 2223);
    spec_release(&s);

    rc = spec_from_tf_config("{\"task\":{\"index\":0,\"type\":\"ps\"},"
                             "\"cluster\":{\"worker\":[\"w:1\"],\"ps\":[\"p:2\"]}}",
                             &s, &job, &idx, err);
    CHECK_MSG(rc == 0, "%s", err);
    CHECK(job == JOB_PS && idx == 0 && s.n_ps == 1 && s.n_workers == 1);
    spec_release(&s);
}

#define CL "\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"w:2\"]}"

static void test_tf_bad(void)
{
    bad_tf("", "TF_CONFIG: empty");
    bad_tf(NULL, "TF_CONFIG: empty");
    bad_tf("{\"cluster\": ", "TF_CONFIG: invalid JSON at line 1 column");
    bad_tf("{\"cluster\":{}\n,,}", "TF_CONFIG: invalid JSON at line 2 column");
    bad_tf("[1,2]", "TF_CONFIG: top level is not an object");
    bad_tf("{\"task\":{\"type\":\"worker\",\"index\":0}}", "TF_CONFIG: missing \"cluster\"");
    bad_tf("{\"cluster\":[]}", "TF_CONFIG: \"cluster\" is not an object");
    bad_tf("{\"cluster\":{\"ps\":\"p:1\",\"worker\":[\"w:1\"]}}",
           "TF_CONFIG: \"cluster.ps\" is not an array of strings");
    bad_tf("{\"cluster\":{\"worker\":[\"w:1\"]}}", "TF_CONFIG: missing \"cluster.ps\"");
    bad_tf("{\"cluster\":{\"ps\":[],\"worker\":[\"w:1\"]}}", "TF_CONFIG: \"cluster.ps\" is empty");
    bad_tf("{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",5]}}",
           "TF_CONFIG: cluster.worker[1] is not a string");
    bad_tf("{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"w:99999\"]}}",
           "TF_CONFIG: cluster.worker[1]: port 99999 out of range 1..65535");
    bad_tf("{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\",\"w:2\",\"nocolon\"]}}",
           "TF_CONFIG: cluster.worker[2]: missing ':port'");
    bad_tf("{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"p:1\"]}}",
           "TF_CONFIG: duplicate address \"p:1\": cluster.ps[0] and cluster.worker[0]");
    bad_tf("{\"cluster\":{\"chief\":[\"c:1\"],\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]}}",
           "\"cluster.chief\": the chief job is not supported");
    bad_tf("{\"cluster\":{\"evaluator\":[\"c:1\"],\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]}}",
           "\"cluster.evaluator\": unknown job");
    bad_tf("{" CL "}", "TF_CONFIG: missing \"task\"");
    bad_tf("{" CL ",\"task\":{\"index\":0}}", "TF_CONFIG: missing \"task.type\"");
    bad_tf("{" CL ",\"task\":{\"type\":3,\"index\":0}}", "TF_CONFIG: \"task.type\" is not a string");
    bad_tf("{" CL ",\"task\":{\"type\":\"chief\",\"index\":0}}",
           "TF_CONFIG: \"task.type\": unknown task type \"chief\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\"}}", "TF_CONFIG: missing \"task.index\"");
    /* a string index is read as TensorFlow's int() reads it: digits only here */
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":\"one\"}}",
           "TF_CONFIG: \"task.index\" \"one\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":\"\"}}",
           "TF_CONFIG: \"task.index\" \"\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":\"-1\"}}",
           "TF_CONFIG: \"task.index\" \"-1\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":\"2\"}}",
           "TF_CONFIG: \"task.index\" 2 out of range 0..1 for job \"worker\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":true}}",
           "TF_CONFIG: \"task.index\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":1.5}}",
           "TF_CONFIG: \"task.index\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":2}}",
           "TF_CONFIG: \"task.index\" 2 out of range 0..1 for job \"worker\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"ps\",\"index\":-1}}",
           "TF_CONFIG: \"task.index\" -1 out of range 0..0 for job \"ps\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"ps\",\"index\":0},\"task\":{}}", "duplicate");
}

/* IPv6 literals in brackets, as gRPC and TensorFlow's cluster specs write them. */
static void test_ipv6(void)
{
    dp_addr a;
    char err[DP_ERRLEN], buf[300];
    CHECK_MSG(spec_addr_parse("[::1]:2222", &a, err) == 0, "%s", err);
    CHECK(!strcmp(a.host, "::1") && a.port == 2222);
    CHECK(!strcmp(spec_addr_format(buf, sizeof buf, &a), "[::1]:2222"));
    CHECK(spec_addr_parse("[fe80::1:2]:80", &a, err) == 0 && !strcmp(a.host, "fe80::1:2") &&
          a.port == 80);
    CHECK(spec_addr_parse("[0:0::1]:7", &a, err) == 0 && !strcmp(a.host, "::1"));
    CHECK(spec_addr_parse("[::ffff:10.0.0.1]:9", &a, err) == 0);
    CHECK(spec_addr_parse("10.0.0.1:9", &a, err) == 0 &&
          !strcmp(spec_addr_format(buf, sizeof buf, &a), "10.0.0.1:9"));
    CHECK(spec_addr_parse("::1:2222", &a, err) == DP_EINVAL &&
          strstr(err, "an IPv6 address needs brackets, e.g. \"[::1]:2222\""));
    CHECK(spec_addr_parse("[::1]", &a, err) == DP_EINVAL && strstr(err, "missing ':port' after ']'"));
    CHECK(spec_addr_parse("[::1:2222", &a, err) == DP_EINVAL && strstr(err, "'[' without ']'"));
    CHECK(spec_addr_parse("[]:1", &a, err) == DP_EINVAL && strstr(err, "empty IPv6 address"));
    CHECK(spec_addr_parse("[localhost]:1", &a, err) == DP_EINVAL &&
          strstr(err, "\"localhost\" is not an IPv6 address"));
    CHECK(spec_addr_parse("[::1]:0", &a, err) == DP_EINVAL && strstr(err, "out of range"));
    CHECK(spec_addr_parse("[::1]:x", &a, err) == DP_EINVAL && strstr(err, "not a number"));

    cluster_spec s;
    CHECK_MSG(spec_from_flags(&s, "[::1]:2222", "[::1]:2223,127.0.0.1:2224", err) == 0, "%s", err);
    CHECK(s.n_ps == 1 && s.n_workers == 2 && !strcmp(s.ps[0].host, "::1") &&
          s.workers[0].port == 2223);
    spec_release(&s);
    /* one address in two spellings is a duplicate */
    bad_flags("[::1]:2222", "[0::1]:2222", "duplicate address \"[::1]:2222\": --ps_hosts entry 0 "
              "and --worker_hosts entry 0");
    bad_tf("{\"cluster\":{\"ps\":[\"[::1]:5\"],\"worker\":[\"[::1]:5\"]},"
           "\"task\":{\"type\":\"ps\",\"index\":0}}",
           "TF_CONFIG: duplicate address \"[::1]:5\": cluster.ps[0] and cluster.worker[0]");
    dp_job job;
    int idx;
    CHECK(spec_from_tf_config("{\"cluster\":{\"ps\":[\"[::1]:5\"],\"worker\":[\"[::1]:6\"]},"
                              "\"task\":{\"type\":\"worker\",\"index\":0}}", &s, &job, &idx,
                              err) == 0 && !strcmp(s.workers[0].host, "::1"));
    spec_release(&s);
}

#define TFC "{\"cluster\":{\"ps\":[\"p:1\",\"p:2\"],\"worker\":[\"w:1\",\"w:2\",\"w:3\"]}"
#define TFC_W1 TFC ",\"task\":{\"type\":\"worker\",\"index\":1}}"

/* Resolves with spec_resolve and checks the task and the note (want_note "" for none, or
 * a text the note must equal). */
static void resolve_ok(const char *tf, const char *job_name, long long task_index,
                       dp_job want_job, int want_index, const char *want_note)
{
    spec_task_args a = {.job_name = job_name, .task_index = task_index, .tf_config = tf};
    cluster_spec s;
    dp_job job = (dp_job)-1;
    int idx = -1;
    char note[DP_ERRLEN], err[DP_ERRLEN] = "";
    int rc = spec_resolve(&a, &s, &job, &idx, note, sizeof note, err);
    CHECK_MSG(rc == 0 && job == want_job && idx == want_index && !strcmp(note, want_note),
              "TF_CONFIG %s, --job_name=%s --task_index=%lld: rc %d (%s), %s:%d, note \"%s\", "
              "want %s:%d, note \"%s\"", tf, job_name ? job_name : "-", task_index, rc, err,
              rc ? "?" : spec_job_name(job), idx, note, spec_job_name(want_job), want_index,
              want_note);
    if (!rc) CHECK(s.n_ps == 2 && s.n_workers == 3);
    spec_release(&s);
}

static void resolve_bad(const char *tf, const char *job_name, long long task_index,
                        const char *want)
{
    spec_task_args a = {.job_name = job_name, .task_index = task_index, .tf_config = tf};
    cluster_spec s;
    dp_job job;
    int idx;
    char note[DP_ERRLEN], err[DP_ERRLEN] = "";
    int rc = spec_resolve(&a, &s, &job, &idx, note, sizeof note, err);
    CHECK_MSG(rc == DP_EINVAL && !strcmp(err, want), "TF_CONFIG %s, --job_name=%s "
              "--task_index=%lld: rc %d, err \"%s\", want \"%s\"", tf, job_name ? job_name : "-",
              task_index, rc, err, want);
    CHECK(s.n_ps == 0 && s.ps == NULL && s.n_workers == 0 && s.workers == NULL);
}

/* TensorFlow's precedence: TFConfigClusterResolver(task_type=, task_id=) override
 * TF_CONFIG's task, each on its own; the host flags replace TF_CONFIG entirely. */
static void test_resolve(void)
{
    resolve_ok(TFC_W1, NULL, -1, JOB_WORKER, 1, "");
    resolve_ok(TFC ",\"task\":{\"type\":\"worker\",\"index\":\"2\"}}", NULL, -1, JOB_WORKER, 2, "");
    resolve_ok(TFC_W1, NULL, 2, JOB_WORKER, 2, "--task_index=2 overrides TF_CONFIG's "
               "task.index 1: running as /job:worker/replica:0/task:2");
    resolve_ok(TFC_W1, "ps", -1, JOB_PS, 1, "--job_name=ps overrides TF_CONFIG's task.type "
               "\"worker\": running as /job:ps/replica:0/task:1");
    resolve_ok(TFC_W1, "ps", 0, JOB_PS, 0, "--job_name=ps overrides TF_CONFIG's task.type "
               "\"worker\"; --task_index=0 overrides TF_CONFIG's task.index 1: running as "
               "/job:ps/replica:0/task:0");
    resolve_ok(TFC_W1, "worker", 1, JOB_WORKER, 1, "");      /* flags agree: nothing to say */
    /* a TF_CONFIG without "task" (or with part of it) is completed by the flags */
    resolve_ok(TFC "}", "worker", 2, JOB_WORKER, 2, "");
    resolve_ok(TFC ",\"task\":{\"type\":\"ps\"}}", NULL, 1, JOB_PS, 1, "");
    resolve_ok(TFC ",\"task\":{\"index\":2}}", "worker", -1, JOB_WORKER, 2, "");
    /* a field a flag replaces is not read, as TensorFlow does not read it */
    resolve_ok(TFC ",\"task\":{\"type\":\"chief\",\"index\":\"x\"}}", "worker", 0, JOB_WORKER, 0,
               "");

    resolve_bad(TFC "}", "worker", -1, "TF_CONFIG: missing \"task\"");
    resolve_bad(TFC ",\"task\":{\"type\":\"ps\"}}", NULL, -1, "TF_CONFIG: missing \"task.index\"");
    resolve_bad(TFC_W1, NULL, 3, "--task_index 3 is outside the 3 worker tasks of the cluster");
    resolve_bad(TFC ",\"task\":{\"type\":\"worker\",\"index\":2}}", "ps", -1,
                "TF_CONFIG: \"task.index\" 2 out of range 0..1 for job \"ps\"");
    resolve_bad(TFC_W1, "chief", -1, "--job_name: \"chief\" is not ps or worker");
    resolve_bad(TFC ",\"task\":[]}", "worker", 0, "TF_CONFIG: \"task\" is not an object");

    /* no TF_CONFIG, or the host flags given: the four flags */
    spec_task_args a = {.job_name = "worker", .task_index = 1, .ps_hosts = "[::1]:1",
                        .worker_hosts = "[::1]:2,[::1]:3", .tf_config = TFC_W1};
    cluster_spec s;
    dp_job job;
    int idx;
    char note[DP_ERRLEN], err[DP_ERRLEN];
    CHECK_MSG(spec_resolve(&a, &s, &job, &idx, note, sizeof note, err) == 0, "%s", err);
    CHECK(job == JOB_WORKER && idx == 1 && s.n_workers == 2 && s.workers[1].port == 3);
    CHECK_MSG(!strcmp(note, "--ps_hosts/--worker_hosts given: TF_CONFIG is not read"), "%s", note);
    spec_release(&s);
    a.tf_config = NULL;
    CHECK(spec_resolve(&a, &s, &job, &idx, note, sizeof note, err) == 0 && note[0] == '\0');
    spec_release(&s);
    a.worker_hosts = NULL;
    CHECK(spec_resolve(&a, &s, &job, &idx, note, sizeof note, err) == DP_EINVAL &&
          !strcmp(err, "need --job_name, --task_index, --ps_hosts and --worker_hosts (or "
                  "TF_CONFIG); see --help"));
    a = (spec_task_args){.job_name = "worker", .task_index = -1, .tf_config = ""};
    CHECK(spec_resolve(&a, &s, &job, &idx, note, sizeof note, err) == DP_EINVAL &&
          strstr(err, "need --job_name"));
}

static void test_names(void)
{
    char buf[128];
    CHECK(!strcmp(spec_device_name(buf, sizeof buf, JOB_WORKER, 1, "CPU", 0),
                  "/job:worker/replica:0/task:1/device:CPU:0"));
    CHECK(!strcmp(spec_device_name(buf, sizeof buf, JOB_PS, 12, "GPU", 3),
                  "/job:ps/replica:0/task:12/device:GPU:3"));
    CHECK(!strcmp(spec_task_name(buf, sizeof buf, JOB_PS, 0), "/job:ps/replica:0/task:0"));
    char small[8];
    CHECK(strlen(spec_task_name(small, sizeof small, JOB_WORKER, 3)) == 7);
    dp_job j;
    CHECK(spec_job_parse("ps", &j) == 0 && j == JOB_PS);
    CHECK(spec_job_parse("worker", &j) == 0 && j == JOB_WORKER);
    CHECK(spec_job_parse("chief", &j) == DP_EINVAL);
    CHECK(!strcmp(spec_job_name(JOB_PS), "ps") && !strcmp(spec_job_name(JOB_WORKER), "worker"));
}

int main(void)
{
    test_addr();
    test_flags_good();
    test_flags_bad();
    test_tf_good();
    test_tf_bad();
    test_ipv6();
    test_resolve();
    test_names();
    return CHECK_DONE();
}
