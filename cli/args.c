/* args.c — shared argv helpers for the subcommands (see args.h). */
#include "cli/args.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "net/sock.h"

const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, int *bad)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n]) return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "downpour: %s: %s needs a value\n", cmd, name);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}

int cli_addr(const char *cmd, const char *flag, const char *addr, int listen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char err[DP_ERRLEN];
    if (!net_parse_addr(addr, listen, &ss, &len, err)) return 0;
    fprintf(stderr, "downpour: %s: %s: %s\n", cmd, flag, err);
    return 2;
}

int cli_size(const char *cmd, const char *flag, const char *v, int min_w, int min_h, int max, int *w, int *h)
{
    char tail;
    if (sscanf(v, "%dx%d%c", w, h, &tail) == 2 && *w >= min_w && *h >= min_h && *w <= max && *h <= max) return 0;
    if (min_w == min_h)
        fprintf(stderr, "downpour: %s: %s \"%s\" is not WxH (%d..%d each)\n", cmd, flag, v, min_w, max);
    else
        fprintf(stderr, "downpour: %s: %s \"%s\" is not WxH (W %d..%d, H %d..%d)\n", cmd, flag, v, min_w, max, min_h,
                max);
    return 2;
}

int cli_long(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    long long x;
    if (!dp_parse_int(v, &x) && x >= lo && x <= hi) {
        *out = x;
        return 0;
    }
    if (hi == LLONG_MAX)
        fprintf(stderr, "downpour: %s: %s \"%s\" must be an integer >= %lld\n", cmd, flag, v, lo);
    else
        fprintf(stderr, "downpour: %s: %s \"%s\" must be an integer in %lld..%lld\n", cmd, flag, v, lo, hi);
    return 2;
}

int cli_int(const char *cmd, const char *flag, const char *v, int lo, int hi, int *out)
{
    long long x;
    if (cli_long(cmd, flag, v, lo, hi, &x)) return 2;
    *out = (int)x;
    return 0;
}

int cli_num(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out)
{
    double x;
    if (!dp_parse_double(v, &x) && isfinite(x) && x >= lo && x <= hi) {
        *out = x;
        return 0;
    }
    if (isinf(hi))
        fprintf(stderr, "downpour: %s: %s \"%s\" must be a number >= %g\n", cmd, flag, v, lo);
    else
        fprintf(stderr, "downpour: %s: %s \"%s\" must be a number in %g..%g\n", cmd, flag, v, lo, hi);
    return 2;
}

/* The flag HELP names nearest to NAME ("--x", without "=value"), copied into best; empty
 * when none is close enough (dp_suggest_edits), and never NAME itself (a help shared by
 * subcommands names flags some of them do not take). */
static void nearest_flag(const char *help, const char *name, char *best, size_t n)
{
    size_t best_d = dp_suggest_edits(name) + 1;
    best[0] = 0;
    for (const char *p = help; (p = strstr(p, "--")); ) {
        int starts = p == help || !(isalnum((unsigned char)p[-1]) || p[-1] == '-');
        size_t len = 2;
        while (isalnum((unsigned char)p[len]) || p[len] == '-') len++;
        if (starts && len > 2 && len < n && len < 64) {
            char flag[64];
            memcpy(flag, p, len);
            flag[len] = 0;
            size_t d = dp_edit_distance(name, flag);
            if (d > 0 && d < best_d) {   /* itself: named in the help, but not here */
                best_d = d;
                memcpy(best, flag, len + 1);
            }
        }
        p += len;
    }
}

int cli_unknown(const char *cmd, const char *arg, const char *help)
{
    if (arg[0] != '-' || !arg[1]) {
        fprintf(stderr, "downpour: %s: unexpected argument \"%s\" (see --help)\n", cmd, arg);
        return 2;
    }
    char name[64] = "", near[64] = "";
    size_t len = strcspn(arg, "=");
    if (len < sizeof name) {
        memcpy(name, arg, len);
        name[len] = 0;
        if (help) nearest_flag(help, name, near, sizeof near);
    }
    if (near[0])
        fprintf(stderr, "downpour: %s: unknown flag \"%s\" (did you mean \"%s\"? see --help)\n", cmd, arg,
                near);
    else
        fprintf(stderr, "downpour: %s: unknown flag \"%s\" (see --help)\n", cmd, arg);
    return 2;
}

int cli_unknown_usage(const char *cmd, const char *arg, void (*usage)(FILE *f))
{
    char *help = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&help, &n);
    if (f) {
        usage(f);
        fclose(f);
    }
    int rc = cli_unknown(cmd, arg, help);
    free(help);
    return rc;
}
