/* dp.c — shared helpers: allocation, error messages, logging, clocks, RNG, number parsing. */
#define _POSIX_C_SOURCE 200809L
#include "dp.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int dp_log_level = DP_LOG_INFO;

static void oom(size_t n)
{
    fprintf(stderr, "downpour: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

int dp_fail(char *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, DP_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return code;
}

void dp_log(int level, const char *prefix, const char *fmt, ...)
{
    if (level > dp_log_level) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "downpour: %s%s%s\n", prefix ? prefix : "", prefix ? ": " : "", buf);
}

uint64_t dp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dp_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dp_thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int dp_host_irq_ns(uint64_t *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[7];
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (n != 7 || hz <= 0) return -1;
    *out = (v[5] + v[6]) * (1000000000ull / (uint64_t)hz);  /* irq + softirq, in ticks */
    return 0;
}

uint64_t dp_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void dp_rng_seed(dp_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dp_rng_next(dp_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double dp_rng_uniform(dp_rng *r)
{
    return (double)(dp_rng_next(r) >> 11) * 0x1.0p-53;
}

double dp_rng_normal(dp_rng *r)
{
    double u1 = dp_rng_uniform(r), u2 = dp_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t dp_rng_below(dp_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = dp_rng_next(r); while (x >= limit);
    return x % n;
}

int dp_parse_int(const char *s, long long *out)
{
    if (!s || !*s || isspace((unsigned char)*s)) return DP_EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return DP_EINVAL;
    *out = v;
    return DP_OK;
}

/* Decimal only: [+-] digits [. digits] [e [+-] digits] — not strtod's hex ("0x10"), inf,
 * nan or leading blanks. */
static int decimal_number(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    int digits = 0;
    while (isdigit((unsigned char)*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p)) p++;
    }
    return *p == 0;
}

int dp_parse_double(const char *s, double *out)
{
    if (!s || !*s || !decimal_number(s)) return DP_EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return DP_EINVAL;
    *out = v;
    return DP_OK;
}

static int same_letter(char a, char b)
{
    return a == b || (a == '-' && b == '_');
}

size_t dp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    unsigned char d[64][64];   /* d[i][j]: a's first i letters against b's first j */
    for (size_t i = 0; i <= la; i++) d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            unsigned best = d[i - 1][j - 1] + !same_letter(a[i - 1], b[j - 1]);
            if (d[i - 1][j] + 1u < best) best = d[i - 1][j] + 1u;
            if (d[i][j - 1] + 1u < best) best = d[i][j - 1] + 1u;
            if (i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) && same_letter(a[i - 2], b[j - 1]) &&
                d[i - 2][j - 2] + 1u < best)
                best = d[i - 2][j - 2] + 1u;   /* two neighbours swapped: one edit */
            d[i][j] = (unsigned char)best;
        }
    return d[la][lb];
}

size_t dp_suggest_edits(const char *typed)
{
    size_t letters = strlen(typed + strspn(typed, "-"));
    return letters <= 4 ? 1 : letters <= 8 ? 2 : 3;
}

char *dp_read_file(const char *path, size_t max, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                fclose(f);
                free(buf);
                dp_fail(err, DP_EINVAL, "%s: larger than %zu bytes", path, max);
                return NULL;
            }
            cap = cap * 2 > max ? max : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        dp_fail(err, DP_EIO, "%s: read error", path);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int dp_mkdirs(const char *path, char *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)   /* the reason fits in err */
        return dp_fail(err, DP_EINVAL, "%.200s...: path too long (%zu characters, at most %zu)", path, strlen(path),
                       sizeof buf - 1);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return dp_fail(err, DP_EIO, "%s: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return DP_OK;
}

int dp_have_display(void)
{
    static const char *const vars[] = {"DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"};
    for (size_t i = 0; i < DP_ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return 1;
    }
    return 0;
}
