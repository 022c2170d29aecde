/* units.c — the simulator's flag values with units: sizes (SI and binary), bandwidths
 * (bits/s), times, compute distributions, stragglers, failures and trace levels. Every
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

typedef struct unit { const char *name; double mult; } unit;

/* Splits s into a finite non-negative number and a unit suffix (spaces allowed between).
 * Returns 0, or DP_EINVAL when there is no leading number. */
static int split_number(const char *s, double *num, const char **suffix)
{
    if (!s) return DP_EINVAL;
    while (isspace((unsigned char)*s)) s++;
    if (!*s || *s == '-' || *s == '+') return DP_EINVAL;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return DP_EINVAL;
    /* strtod accepts "inf", "nan" and hex; refuse anything not plain decimal */
    for (const char *p = s; p < end; p++)
        if (!isdigit((unsigned char)*p) && *p != '.' && *p != 'e' && *p != 'E' && *p != '-' && *p != '+')
            return DP_EINVAL;
    while (isspace((unsigned char)*end)) end++;
    *num = v;
    *suffix = end;
    return DP_OK;
}

static int lookup(const unit *u, size_t n, const char *suffix, double *mult)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(u[i].name, suffix)) {
            *mult = u[i].mult;
            return 1;
        }
    return 0;
}

int sim_parse_bytes(const char *s, const char *what, double *bytes, char *err)
{
    static const unit u[] = {
        {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    double v, m;
    const char *suf;
    if (split_number(s, &v, &suf))
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a size (e.g. 100MB, 4KiB)", what, s ? s : "");
    if (!lookup(u, DP_ARRAY_LEN(u), suf, &m))
        return dp_fail(err, DP_EINVAL, "%s: unknown size unit \"%s\" in \"%s\" (use B KB MB GB or KiB MiB GiB)",
                       what, suf, s);
    *bytes = v * m;
    return DP_OK;
}

int sim_parse_bandwidth(const char *s, const char *what, double *bytes_per_s, char *err)
{
    static const unit u[] = {
        {"bit", 1 / 8.0}, {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8}, {"Tbit", 1e12 / 8},
        {"bit/s", 1 / 8.0}, {"Kbit/s", 1e3 / 8}, {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},
        {"Tbit/s", 1e12 / 8}, {"bps", 1 / 8.0}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8},
        {"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9},
        {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
    };
    double v, m;
    const char *suf;
    if (split_number(s, &v, &suf))
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a bandwidth (e.g. 10Gbit, 100Mbit)", what,
                       s ? s : "");
    if (!*suf)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" needs a unit (Kbit Mbit Gbit, or MB/s)", what, s);
    if (!lookup(u, DP_ARRAY_LEN(u), suf, &m))
        return dp_fail(err, DP_EINVAL, "%s: unknown bandwidth unit \"%s\" in \"%s\" (use Kbit Mbit Gbit)",
                       what, suf, s);
    if (v * m <= 0)
        return dp_fail(err, DP_EINVAL, "%s: bandwidth must be positive, got \"%s\"", what, s);
    *bytes_per_s = v * m;
    return DP_OK;
}

int sim_parse_time(const char *s, const char *what, double *seconds, char *err)
{
    static const unit u[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60},
    };
    double v, m;
    const char *suf;
    if (split_number(s, &v, &suf))
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a time (e.g. 50us, 100ms, 2s)", what,
                       s ? s : "");
    if (!*suf) {
        if (v == 0) {
            *seconds = 0;
            return DP_OK;
        }
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" needs a unit (ns us ms s)", what, s);
    }
    if (!lookup(u, DP_ARRAY_LEN(u), suf, &m))
        return dp_fail(err, DP_EINVAL, "%s: unknown time unit \"%s\" in \"%s\" (use ns us ms s)", what,
                       suf, s);
    *seconds = v * m;
    return DP_OK;
}

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
    rc = sim_parse_time(v, "--compute mean", &d->mean, err);
    if (rc) return rc;
    if (d->mean <= 0) return dp_fail(err, DP_EINVAL, "--compute: mean must be positive in \"%s\"", s);
    if (d->kind == SIM_DIST_NORMAL) {
        if (!param(params, "sd", v, sizeof v))
            return dp_fail(err, DP_EINVAL, "--compute: \"%s\" needs sd=T", s);
        if ((rc = sim_parse_time(v, "--compute sd", &d->sd, err))) return rc;
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

/* Parses "worker:7" / "ps:0" prefix; returns characters consumed or -1. */
static int parse_task(const char *s, int *job, int *task)
{
    int off;
    if (!strncmp(s, "worker:", 7)) { *job = JOB_WORKER; off = 7; }
    else if (!strncmp(s, "ps:", 3)) { *job = JOB_PS; off = 3; }
    else return -1;
    if (!isdigit((unsigned char)s[off])) return -1;
    long v = 0;
    int i = off;
    while (isdigit((unsigned char)s[i])) {
        v = v * 10 + (s[i] - '0');
        if (v > 1000000) return -1;
        i++;
    }
    *task = (int)v;
    return i;
}

int sim_parse_straggler(const char *s, sim_straggler *out, char *err)
{
    int job, task;
    int n = s ? parse_task(s, &job, &task) : -1;
    if (n < 0 || job != JOB_WORKER || s[n] != 'x')
        return dp_fail(err, DP_EINVAL, "--straggler: \"%s\" is not worker:IxF (e.g. worker:3x4)",
                       s ? s : "");
    double f;
    if (dp_parse_double(s + n + 1, &f) || !(f >= 1.0 / 1000) || f > 1000)
        return dp_fail(err, DP_EINVAL, "--straggler: factor \"%s\" is not a number in 0.001..1000",
                       s + n + 1);
    out->worker = task;
    out->factor = f;
    return DP_OK;
}

int sim_parse_failure(const char *s, sim_failure *out, char *err)
{
    const char *usage = "(JOB:I@step=N or JOB:I@t=T, optionally ,restart=T; e.g. worker:7@step=50)";
    int job, task;
    int n = s ? parse_task(s, &job, &task) : -1;
    if (n < 0 || s[n] != '@') return dp_fail(err, DP_EINVAL, "--fail: \"%s\" is not %s", s ? s : "", usage);
    memset(out, 0, sizeof *out);
    out->job = job;
    out->task = task;
    out->at_step = -1;
    out->at_s = -1;
    out->restart_s = -1;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s + n + 1);
    char *restart = strstr(buf, ",restart=");
    if (restart) {
        *restart = 0;
        int rc = sim_parse_time(restart + 9, "--fail restart", &out->restart_s, err);
        if (rc) return rc;
    }
    if (!strncmp(buf, "step=", 5)) {
        long long v;
        if (dp_parse_int(buf + 5, &v) || v < 0)
            return dp_fail(err, DP_EINVAL, "--fail: step \"%s\" is not a non-negative integer", buf + 5);
        out->at_step = v;
    } else if (!strncmp(buf, "t=", 2)) {
        int rc = sim_parse_time(buf + 2, "--fail t", &out->at_s, err);
        if (rc) return rc;
    } else {
        return dp_fail(err, DP_EINVAL, "--fail: \"%s\" is not %s", s, usage);
    }
    return DP_OK;
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
