/* units.c — values with units, for flags and scenario files: sizes (SI and binary),
 * bandwidths (bits/s) and times. Every parser accepts the whole string or fails with one
 * line naming `what` (the flag or key), the text and what was expected; no state. */
#include "common/units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int dp_parse_bytes(const char *s, const char *what, double *bytes, char *err)
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

int dp_parse_bandwidth(const char *s, const char *what, double *bytes_per_s, char *err)
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

int dp_parse_time(const char *s, const char *what, double *seconds, char *err)
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

