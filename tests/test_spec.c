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
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":\"1\"}}",
           "TF_CONFIG: \"task.index\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":1.5}}",
           "TF_CONFIG: \"task.index\" is not an integer");
    bad_tf("{" CL ",\"task\":{\"type\":\"worker\",\"index\":2}}",
           "TF_CONFIG: \"task.index\" 2 out of range 0..1 for job \"worker\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"ps\",\"index\":-1}}",
           "TF_CONFIG: \"task.index\" -1 out of range 0..0 for job \"ps\"");
    bad_tf("{" CL ",\"task\":{\"type\":\"ps\",\"index\":0},\"task\":{}}", "duplicate");
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
    test_names();
    return CHECK_DONE();
}
