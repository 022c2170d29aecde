/* check.h — the tiny test harness every tests/test_<module>.c uses, after git's
 * t/unit-tests: CHECK(cond) records a pass or a failure with file:line; CHECK_DONE()
 * prints the closing "N passed, N failed" line and returns the exit status. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <math.h>

static int check_passed, check_failed;

#define CHECK_MSG(cond, ...) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", "")
#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), \
    "%.9g vs %.9g (tol %g)", (double)(a), (double)(b), (double)(tol))
#define CHECK_DONE() (printf("%d passed, %d failed\n", check_passed, check_failed), \
    check_failed ? 1 : 0)

#endif
