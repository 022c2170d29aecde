/* check.h — the tiny test harness every tests/test_<module>.c uses, after git's
 * t/unit-tests: CHECK(cond) records a pass or a failure with file:line; CHECK_SKIP(why)
 * records a skip and prints "skipped: why" (a skip is never a pass); CHECK_DONE() prints
 * the closing "N passed, N failed, N skipped" line and returns the exit status;
 * check_path(dir, name) names a scratch file.
 * The habit (tests/README.md): break the line a check guards once and watch it fail. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <math.h>

static int check_passed, check_failed, check_skipped;

#define CHECK_MSG(cond, ...) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", "")
#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), \
    "%.9g vs %.9g (tol %g)", (double)(a), (double)(b), (double)(tol))
/* CHECK_SKIP("fmt", ...): one skipped group of checks, with the reason on its own line. */
#define CHECK_SKIP(...) do { check_skipped++; printf("skipped: "); printf(__VA_ARGS__); \
    putchar('\n'); } while (0)
#define CHECK_DONE() (printf("%d passed, %d failed, %d skipped\n", check_passed, check_failed, \
    check_skipped), check_failed ? 1 : 0)

/* check_path(dir, name): "dir/name", a scratch file in the test's own folder (made with
 * mkdtemp, removed on exit: tests/README.md). The string lives in one of four static
 * buffers used in turn, so up to four paths are valid at once (a copy's source and
 * destination); not thread-safe. */
static inline const char *check_path(const char *dir, const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

#endif
