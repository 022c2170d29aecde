/* units.c — the simulator's flag values: compute distributions, stragglers, failures,
 * trace levels and hosts (sizes, bandwidths and times are common/units.c's). Every
 * parser accepts the whole string or fails with one line naming the flag, the text and
 * what was expected; nothing here has state. */
#include "sim/sim.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "common/units.h"

/* Finds "key=value" among comma-separated params; copies value into out. */
static int param(const char *params, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    const char *p = params;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            size_t vl = len - klen - 1;
            if (vl >= n) vl = n - 1;
            memcpy(out, p + klen + 1, vl);
            out[vl] = 0;
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* Rejects params other than the allowed keys. */
static int check_params(const char *params, const char *const *keys, const char *s, char *err)
{
    const char *p = params;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        int ok = 0;
        for (int i = 0; eq && keys[i]; i++)
            if ((size_t)(eq - p) == strlen(keys[i]) && !strncmp(p, keys[i], (size_t)(eq - p))) ok = 1;
        if (!ok)
            return dp_fail(err, DP_EINVAL, "--compute: unexpected \"%.*s\" in \"%s\"", (int)len, p, s);
        p = end ? end + 1 : NULL;
    }
    return DP_OK;
}

int sim_parse_dist(const char *s, sim_dist *d, char *err)
{
    static const char *const k_const[] = {"mean", NULL};
    static const char *const k_norm[] = {"mean", "sd", NULL};
    static const char *const k_logn[] = {"mean", "sigma", NULL};
    const char *usage = "(constant:mean=T, normal:mean=T,sd=T, lognormal:mean=T,sigma=X, "
                        "exponential:mean=T)";
    if (!s || !*s) return dp_fail(err, DP_EINVAL, "--compute: empty distribution %s", usage);
    const char *colon = strchr(s, ':');
    if (!colon) return dp_fail(err, DP_EINVAL, "--compute: \"%s\" lacks parameters %s", s, usage);
    size_t nl = (size_t)(colon - s);
    const char *params = colon + 1;
    memset(d, 0, sizeof *d);
    const char *const *keys;
    if (nl == 8 && !strncmp(s, "constant", 8)) { d->kind = SIM_DIST_CONSTANT; keys = k_const; }
    else if (nl == 6 && !strncmp(s, "normal", 6)) { d->kind = SIM_DIST_NORMAL; keys = k_norm; }
    else if (nl == 9 && !strncmp(s, "lognormal", 9)) { d->kind = SIM_DIST_LOGNORMAL; keys = k_logn; }
    else if (nl == 11 && !strncmp(s, "exponential", 11)) { d->kind = SIM_DIST_EXPONENTIAL; keys = k_const; }
    else return dp_fail(err, DP_EINVAL, "--compute: unknown distribution \"%.*s\" %s", (int)nl, s, usage);
    int rc = check_params(params, keys, s, err);
    if (rc) return rc;
    char v[64];
    if (!param(params, "mean", v, sizeof v))
        return dp_fail(err, DP_EINVAL, "--compute: \"%s\" needs mean=T %s", s, usage);
    rc = dp_parse_time(v, "--compute mean", &d->mean, err);
    if (rc) return rc;
    /* zero compute is a legitimate pure-network experiment */
    if (d->mean < 0) return dp_fail(err, DP_EINVAL, "--compute: mean must not be negative in \"%s\"", s);
    if (d->kind == SIM_DIST_NORMAL) {
        if (!param(params, "sd", v, sizeof v))
            return dp_fail(err, DP_EINVAL, "--compute: \"%s\" needs sd=T", s);
        if ((rc = dp_parse_time(v, "--compute sd", &d->sd, err))) return rc;
    }
    if (d->kind == SIM_DIST_LOGNORMAL) {
        if (!param(params, "sigma", v, sizeof v))
            return dp_fail(err, DP_EINVAL, "--compute: \"%s\" needs sigma=X", s);
        if (dp_parse_double(v, &d->sigma) || d->sigma < 0 || d->sigma > 10)
            return dp_fail(err, DP_EINVAL, "--compute: sigma \"%s\" is not a number in 0..10", v);
    }
    return DP_OK;
}

void sim_dist_format(const sim_dist *d, char *buf, size_t n)
{
    switch (d->kind) {
    case SIM_DIST_NORMAL:
        snprintf(buf, n, "normal:mean=%.6gms,sd=%.6gms", d->mean * 1e3, d->sd * 1e3);
        return;
    case SIM_DIST_LOGNORMAL:
        snprintf(buf, n, "lognormal:mean=%.6gms,sigma=%.4g", d->mean * 1e3, d->sigma);
        return;
    case SIM_DIST_EXPONENTIAL:
        snprintf(buf, n, "exponential:mean=%.6gms", d->mean * 1e3);
        return;
    case SIM_DIST_CONSTANT:
        break;
    }
    snprintf(buf, n, "constant:mean=%.6gms", d->mean * 1e3);
}

int sim_parse_straggler(const char *s, run_straggler *out, char *err)
{
    run_value v;
    int rc = run_value_parse(run_key_find("straggler"), s ? s : "", "--straggler", &v, err);
    if (rc) return rc;
    if (v.n_st != 1) return dp_fail(err, DP_EINVAL, "--straggler: \"%s\" names %d stragglers, not one", s, v.n_st);
    *out = v.st[0];
    return DP_OK;
}

int sim_parse_failure(const char *s, sim_failure *out, char *err)
{
    return run_fault_parse(s, "--fail", out, err);
}

int sim_parse_trace_level(const char *s, int *level, int *sample, char *err)
{
    if (!s) s = "";
    if (!strcmp(s, "auto")) *level = SIM_TRACE_AUTO;
    else if (!strcmp(s, "full")) *level = SIM_TRACE_FULL;
    else if (!strcmp(s, "steps")) *level = SIM_TRACE_STEPS;
    else if (!strcmp(s, "sample")) { *level = SIM_TRACE_SAMPLE; *sample = 16; }
    else if (!strncmp(s, "sample:", 7)) {
        long long k;
        if (dp_parse_int(s + 7, &k) || k < 1 || k > 65536)
            return dp_fail(err, DP_EINVAL, "--trace-level: sample count \"%s\" is not in 1..65536", s + 7);
        *level = SIM_TRACE_SAMPLE;
        *sample = (int)k;
    } else {
        return dp_fail(err, DP_EINVAL, "--trace-level: \"%s\" is not full, sample[:K], steps or auto", s);
    }
    return DP_OK;
}

/* One "JOB:I[-J]=H" of --hosts into r; the message names the piece. */
static int parse_host_rule(const char *piece, int n_hosts, sim_host_rule *r, char *err)
{
    char job[16];
    long long a, b, h;
    const char *colon = strchr(piece, ':'), *eq = strchr(piece, '=');
    if (!colon || !eq || eq < colon || (size_t)(colon - piece) >= sizeof job) goto bad;
    memcpy(job, piece, (size_t)(colon - piece));
    job[colon - piece] = 0;
    dp_job j;
    if (spec_job_parse(job, &j)) goto bad;
    char range[48];
    size_t rl = (size_t)(eq - colon - 1);
    if (rl == 0 || rl >= sizeof range) goto bad;
    memcpy(range, colon + 1, rl);
    range[rl] = 0;
    char *dash = strchr(range, '-');
    if (dash) *dash = 0;
    if (dp_parse_int(range, &a) || a < 0 || a >= SPEC_MAX_WORKERS) goto bad;
    b = a;
    if (dash && (dp_parse_int(dash + 1, &b) || b < a || b >= SPEC_MAX_WORKERS)) goto bad;
    if (dp_parse_int(eq + 1, &h) || h < 0) goto bad;
    if (h >= n_hosts)
        return dp_fail(err, DP_EINVAL, "--hosts: \"%s\" names host %lld of %d (hosts are 0..%d)", piece, h,
                       n_hosts, n_hosts - 1);
    *r = (sim_host_rule){(int)j, (int)a, (int)b, (int)h};
    return DP_OK;
bad:
    return dp_fail(err, DP_EINVAL, "--hosts: \"%s\" is not JOB:I=H or JOB:I-J=H (e.g. worker:0-3=1)", piece);
}

int sim_parse_hosts(const char *s, sim_hosts *out, char *err)
{
    if (!s) s = "";
    char buf[4096];
    if (strlen(s) >= sizeof buf) return dp_fail(err, DP_EINVAL, "--hosts: longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", s);
    sim_hosts h = {0};
    char *save = NULL, *piece = strtok_r(buf, ",", &save);
    long long n;
    if (!piece || dp_parse_int(piece, &n) || n < 0 || n > SPEC_MAX_PS + SPEC_MAX_WORKERS)
        return dp_fail(err, DP_EINVAL, "--hosts: \"%s\" is not N[,JOB:I-J=H,...] with N in 0..%d (e.g. 2,worker:0-3=1)",
                       s, SPEC_MAX_PS + SPEC_MAX_WORKERS);
    h.n = (int)n;
    while ((piece = strtok_r(NULL, ",", &save))) {
        if (h.n == 0) return dp_fail(err, DP_EINVAL, "--hosts: \"%s\": placing tasks needs at least one host", s);
        if (h.n_rules == SIM_MAX_HOST_RULES)
            return dp_fail(err, DP_EINVAL, "--hosts: at most %d placements", SIM_MAX_HOST_RULES);
        int rc = parse_host_rule(piece, h.n, &h.rule[h.n_rules], err);
        if (rc) return rc;
        h.n_rules++;
    }
    *out = h;
    return DP_OK;
}

void sim_hosts_format(const sim_hosts *h, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "%d", h->n);
    for (int i = 0; i < h->n_rules && off < n; i++) {
        const sim_host_rule *r = &h->rule[i];
        if (r->first == r->last)
            off += (size_t)snprintf(buf + off, n - off, ",%s:%d=%d", spec_job_name((dp_job)r->job), r->first, r->host);
        else
            off += (size_t)snprintf(buf + off, n - off, ",%s:%d-%d=%d", spec_job_name((dp_job)r->job), r->first,
                                    r->last, r->host);
    }
}

int sim_host_of(const sim_hosts *h, int n_ps, int job, int task)
{
    if (h->n <= 0) return -1;
    for (int i = h->n_rules - 1; i >= 0; i--) {
        const sim_host_rule *r = &h->rule[i];
        if (r->job == job && task >= r->first && task <= r->last) return r->host;
    }
    return (int)(((int64_t)(job == JOB_PS ? 0 : n_ps) + task) % h->n);
}

int sim_parse_ps_cost(const char *s, const char *what, sim_ps_cost *out, char *err)
{
    sim_ps_cost c = {0, 0, 0};
    if (!strcmp(s, "fit")) {
        c.fit = 1;
        *out = c;
        return DP_OK;
    }
    char head[64];
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    if (n == 0 || n >= sizeof head)
        return dp_fail(err, DP_EINVAL, "%s: expected T[,BW] (a time per message, then a rate for the "
                       "bytes, e.g. 20us,2GB/s) or fit, got \"%s\"", what, s);
    memcpy(head, s, n);
    head[n] = 0;
    int rc = dp_parse_time(head, what, &c.msg_s, err);
    if (rc) return rc;
    if (comma && (rc = dp_parse_bandwidth(comma + 1, what, &c.rate, err))) return rc;
    *out = c;
    return DP_OK;
}

void sim_ps_cost_format(const sim_ps_cost *c, char *buf, size_t n)
{
    if (c->fit) snprintf(buf, n, "fit");
    else if (c->rate > 0) snprintf(buf, n, "%.6gus,%.6gMB/s", c->msg_s * 1e6, c->rate / 1e6);
    else if (c->msg_s > 0) snprintf(buf, n, "%.6gus", c->msg_s * 1e6);
    else snprintf(buf, n, "0");
}

double sim_ps_cost_s(const sim_ps_cost *c, int msgs, double bytes)
{
    return (double)msgs * c->msg_s + (c->rate > 0 ? bytes / c->rate : 0);
}
