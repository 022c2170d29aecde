/* fuzz_spec.c — libFuzzer target: the TF_CONFIG / cluster-spec parser (cluster/spec.c).
 * The input (up to its first NUL) is tried as TF_CONFIG JSON, through spec_resolve with
 * and without --job_name/--task_index overrides, as a --ps_hosts/--worker_hosts list and
 * as one host:port address; every accepted address must format and parse back to
 * itself (a mismatch aborts: a real finding). */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#include "cluster/spec.h"

static void check_addr_roundtrip(const dp_addr *a)
{
    char buf[300], err[DP_ERRLEN];
    dp_addr b;
    spec_addr_format(buf, sizeof buf, a);
    if (spec_addr_parse(buf, &b, err) != 0 || strcmp(a->host, b.host) || a->port != b.port) {
        fprintf(stderr, "spec: address \"%s\":%d formats as \"%s\", which does not parse back\n",
                a->host, a->port, buf);
        abort();
    }
}

static void check_spec(const cluster_spec *s)
{
    for (int i = 0; i < s->n_ps; i++) check_addr_roundtrip(&s->ps[i]);
    for (int i = 0; i < s->n_workers; i++) check_addr_roundtrip(&s->workers[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    char err[DP_ERRLEN], note[DP_ERRLEN];
    cluster_spec spec = {0};
    dp_job job;
    int index;

    if (spec_from_tf_config(text, &spec, &job, &index, err) == 0) {
        check_spec(&spec);
        if (index < 0 || index >= (job == JOB_PS ? spec.n_ps : spec.n_workers)) {
            fprintf(stderr, "spec: TF_CONFIG accepted with task index %d out of range\n", index);
            abort();
        }
    }
    spec_release(&spec);

    spec_task_args a = { NULL, -1, NULL, NULL, text };
    if (spec_resolve(&a, &spec, &job, &index, note, sizeof note, err) == 0) check_spec(&spec);
    spec_release(&spec);
    a.job_name = "worker";
    a.task_index = 1;
    if (spec_resolve(&a, &spec, &job, &index, note, sizeof note, err) == 0) check_spec(&spec);
    spec_release(&spec);

    dp_addr *hosts = NULL;
    int n = 0;
    if (spec_parse_hosts(text, "--ps_hosts", SPEC_MAX_PS, &hosts, &n, err) == 0)
        for (int i = 0; i < n; i++) check_addr_roundtrip(&hosts[i]);
    free(hosts);
    if (spec_from_flags(&spec, text, "localhost:2223", err) == 0) check_spec(&spec);
    spec_release(&spec);

    dp_addr one;
    if (spec_addr_parse(text, &one, err) == 0) check_addr_roundtrip(&one);
    free(text);
    return 0;
}
