/* test_common.c — common/: the byte buffer, number and unit parsing, the random number
 * generator against the published algorithms' values, the clocks against the kernel's,
 * whole-file reads and folder making. Expectations come from outside the code: the
 * splitmix64 and xoshiro256** reference values (computed from the published algorithms),
 * clock_gettime itself, files written here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/buf.h"
#include "common/dp.h"
#include "common/units.h"

static char tmpdir[256];

/* Bytes appended, partly consumed, then more reserved: what is pending stays, in order. */
static void test_buf(void)
{
    dp_buf b = {0};
    dp_buf_append(&b, "abcdefghij", 10);
    dp_buf_consume(&b, 3);
    dp_buf_reserve(&b, 16);
    CHECK_MSG(b.len - b.off == 7 && !memcmp(b.data + b.off, "defghij", 7),
              "pending bytes survive a reserve after a partial consume (%zu pending)", b.len - b.off);
    dp_buf_append(&b, "klm", 3);
    CHECK_MSG(b.len - b.off == 10 && !memcmp(b.data + b.off, "defghijklm", 10), "... and new bytes follow them");
    dp_buf_consume(&b, 10);
    CHECK_MSG(b.off == 0 && b.len == 0, "all consumed: the buffer starts over at 0");
    /* growing past the first capacity with a consumed prefix: compacted, nothing lost */
    char big[5000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    dp_buf_append(&b, big, 100);
    dp_buf_consume(&b, 40);
    dp_buf_append(&b, big + 100, sizeof big - 100);
    CHECK_MSG(b.len - b.off == sizeof big - 40 && !memcmp(b.data + b.off, big + 40, sizeof big - 40),
              "a grown buffer keeps the pending bytes in order");
    dp_buf_release(&b);
}

static void test_numbers(void)
{
    static const struct { const char *text; double want; } good[] = {
        {"-1.5", -1.5}, {"+2", 2}, {"0.25", 0.25}, {"1e3", 1000}, {"2E-2", 0.02}, {"-3e+1", -30}, {".5", 0.5},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -99;
        CHECK_MSG(dp_parse_double(good[i].text, &v) == DP_OK && v == good[i].want, "\"%s\" is %g (got %g)",
                  good[i].text, good[i].want, v);
    }
    static const char *const bad[] = {"", "-", "+", "e3", "1e", "1e+", "0x10", "inf", "nan", " 1", "1 ", "1.2.3", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        CHECK_MSG(dp_parse_double(bad[i], &v) != DP_OK, "\"%s\" is not a number", bad[i]);
    }
    char err[DP_ERRLEN];
    double bps;
    CHECK_MSG(dp_parse_bandwidth("0Gbit", "--bandwidth", &bps, err) == DP_EINVAL && strstr(err, "must be positive"),
              "a bandwidth of 0 is refused");
    CHECK_MSG(dp_parse_bandwidth("1Mbit", "--bandwidth", &bps, err) == DP_OK && bps == 125000,
              "1 Mbit/s is 125,000 bytes a second (got %g)", bps);
}

/* Edit distances worked by hand: each edit counted once, a swap of neighbours one edit. */
static void test_edit_distance(void)
{
    static const struct { const char *a, *b; size_t want; } cases[] = {
        {"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"steps", "steps", 0},
        {"kitten", "sitting", 3},            /* k->s, e->i, +g */
        {"stpes", "steps", 1},               /* p and e swapped */
        {"ca", "abc", 3},                    /* a swap cannot be edited again: OSA's 3, not 2 */
        {"wrokers", "workers", 1}, {"wokers", "workers", 1}, {"workers", "wokers", 1},
        {"backup-workers", "backup_workers", 0},   /* a flag's dash against a key's underscore */
        {"backup_workers", "backup-workers", 1},   /* ... one way only */
        {"--sped", "--speed", 1}, {"--bogus", "--hosts", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(dp_edit_distance(cases[i].a, cases[i].b) == cases[i].want, "\"%s\" to \"%s\": %zu edits (got %zu)",
                  cases[i].a, cases[i].b, cases[i].want, dp_edit_distance(cases[i].a, cases[i].b));
    char long_name[80];
    memset(long_name, 'x', 64);
    long_name[64] = 0;
    CHECK_MSG(dp_edit_distance(long_name, "x") == 99, "a name over 63 bytes is never near");
    static const struct { const char *typed; size_t want; } limits[] = {
        {"--dir", 1}, {"dir", 1}, {"--sped", 1}, {"--bogus", 2}, {"hiddenwx", 2}, {"hiddenwxy", 3}, {"--", 1},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        CHECK_MSG(dp_suggest_edits(limits[i].typed) == limits[i].want, "\"%s\" may be %zu edits from a suggestion",
                  limits[i].typed, limits[i].want);
}

/* xoshiro256** seeded through splitmix64, as the algorithms' authors publish them: seed 0
 * gives splitmix64's 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f,
 * 0xf88bb8a8724c81ec as the state, then these outputs. */
static void test_rng(void)
{
    static const uint64_t state[4] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full,
                                      0xf88bb8a8724c81ecull};
    static const uint64_t out[3] = {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull, 0x1a5f849d4933e6e0ull};
    dp_rng r;
    dp_rng_seed(&r, 0);
    CHECK_MSG(!memcmp(r.s, state, sizeof state), "seed 0: splitmix64's first four values as the state");
    for (int i = 0; i < 3; i++) {
        uint64_t v = dp_rng_next(&r);
        CHECK_MSG(v == out[i], "xoshiro256** output %d: %016llx (want %016llx)", i, (unsigned long long)v,
                  (unsigned long long)out[i]);
    }
}

static uint64_t kernel_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Each clock read between two of the kernel's own readings of it. */
static void test_clocks(void)
{
    volatile double burn = 0;
    for (int i = 0; i < 2000000; i++) burn += i * 0.5;   /* some CPU time of this thread */
    static const struct { const char *name; clockid_t id; uint64_t (*fn)(void); } clocks[] = {
        {"dp_now_ns", CLOCK_MONOTONIC, dp_now_ns},
        {"dp_wall_ns", CLOCK_REALTIME, dp_wall_ns},
        {"dp_cpu_ns", CLOCK_PROCESS_CPUTIME_ID, dp_cpu_ns},
        {"dp_thread_cpu_ns", CLOCK_THREAD_CPUTIME_ID, dp_thread_cpu_ns},
    };
    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        uint64_t a = kernel_ns(clocks[i].id), v = clocks[i].fn(), b = kernel_ns(clocks[i].id);
        CHECK_MSG(a <= v && v <= b, "%s between the kernel's readings (%llu <= %llu <= %llu)", clocks[i].name,
                  (unsigned long long)a, (unsigned long long)v, (unsigned long long)b);
    }
}

static void test_files(void)
{
    char path[512], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/big", tmpdir);
    size_t n = 10000, len = 0;
    char *want = malloc(n);
    for (size_t i = 0; i < n; i++) want[i] = (char)('A' + i % 23);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(want, 1, n, f) == n);
    if (f) fclose(f);
    char *got = dp_read_file(path, 1 << 20, &len, err);
    CHECK_MSG(got && len == n && !memcmp(got, want, n) && got[n] == 0,
              "a 10,000-byte file is read whole, past the first 4 KB, and ends in a NUL (%zu bytes)", len);
    free(got);
    got = dp_read_file(path, 8192, &len, err);
    CHECK_MSG(!got && strstr(err, "larger than 8192 bytes"), "a file over the limit is refused: %s", err);
    /* exactly the first capacity, 4,096 bytes: the buffer grows once more to find the end */
    f = fopen(path, "wb");
    CHECK(f && fwrite(want, 1, 4096, f) == 4096);
    if (f) fclose(f);
    got = dp_read_file(path, 1 << 20, &len, err);
    CHECK_MSG(got && len == 4096 && !memcmp(got, want, 4096) && got[4096] == 0, "a 4,096-byte file is read whole");
    free(got);
    free(want);
    /* folders: made all the way down; a path of 4,096 characters does not fit */
    snprintf(path, sizeof path, "%s/a/b/c", tmpdir);
    struct stat st;
    CHECK_MSG(dp_mkdirs(path, err) == DP_OK && stat(path, &st) == 0 && S_ISDIR(st.st_mode), "mkdirs %s", path);
    char *deep = malloc(4097);
    memset(deep, 'd', 4096);
    memcpy(deep, tmpdir, strlen(tmpdir));
    deep[strlen(tmpdir)] = '/';
    deep[4096] = 0;
    CHECK_MSG(dp_mkdirs(deep, err) == DP_EINVAL && strstr(err, "path too long (4096 characters, at most 4095)"),
              "a 4,096-character path is refused, the reason in the message: %s", err);
    free(deep);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/dp-test-common-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_buf();
    test_numbers();
    test_edit_distance();
    test_rng();
    test_clocks();
    test_files();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "test_common: could not remove %s\n", tmpdir);
    return CHECK_DONE();
}
