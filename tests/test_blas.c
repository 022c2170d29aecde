/* test_blas.c — runtime/blas.c: the kernel downpour asks OpenBLAS for when the library
 * falls back to an SSE3 one, and the one-thread setting of a task. OpenBLAS reads
 * OPENBLAS_CORETYPE as it is loaded, so the test runs itself again with
 * OPENBLAS_CORETYPE=Prescott (the fallback's kernel) and, in that process, checks that
 * rt_blas_better_core picks what this CPU's flags in /proc/cpuinfo allow (read here, not
 * by the code under test): SkylakeX with AVX-512 (F, BW, VL, DQ), else Haswell with AVX2
 * and FMA, else none. A user's OPENBLAS_NUM_THREADS stands; without one, a task's is 1. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "check.h"
#include "runtime/blas.h"

/* Whether /proc/cpuinfo's first "flags" line lists flag (a whole word). */
static int cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5)) continue;
        for (char *tok = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n"); tok;
             tok = strtok(NULL, " \t\n"))
            found |= !strcmp(tok, flag);
        break;
    }
    fclose(f);
    return found;
}

/* In the process started with OPENBLAS_CORETYPE=Prescott. */
static void test_fallback(void)
{
    const char *core = openblas_get_corename();
    if (!core || strcasecmp(core, "Prescott")) {
        CHECK_SKIP("rt_blas_better_core: this OpenBLAS ignores OPENBLAS_CORETYPE (its kernel: %s)",
                   core ? core : "?");
        return;
    }
    const char *want = cpu_flag("avx512f") && cpu_flag("avx512bw") && cpu_flag("avx512vl") &&
                               cpu_flag("avx512dq") ? "SkylakeX"
                       : cpu_flag("avx2") && cpu_flag("fma") ? "Haswell"
                                                               : NULL;
    const char *got = rt_blas_better_core();
    CHECK_MSG(want ? got && !strcmp(got, want) : got == NULL,
              "rt_blas_better_core on the Prescott fallback: %s, want %s (from /proc/cpuinfo's flags)", got ? got : "none",
              want ? want : "none");
}

/* In the first process: OpenBLAS picked its own kernel. */
static void test_own_choice(void)
{
    const char *core = openblas_get_corename();
    static const char *const weak[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                       "Atom", "Katmai", "Coppermine", "Northwood", "Banias"};
    int is_weak = 0;
    for (size_t i = 0; core && i < sizeof weak / sizeof weak[0]; i++) is_weak |= !strcasecmp(core, weak[i]);
    if (is_weak) {
        CHECK_SKIP("OpenBLAS chose the fallback %s itself here: covered by the Prescott run", core);
        return;
    }
    CHECK_MSG(rt_blas_better_core() == NULL, "OpenBLAS's own %s is kept (no better core asked for)",
              core ? core : "?");
}

static void test_one_thread(void)
{
    unsetenv("OPENBLAS_NUM_THREADS");
    CHECK_MSG(rt_blas_one_thread_env() == 1, "without OPENBLAS_NUM_THREADS a task asks for one thread");
    const char *v = getenv("OPENBLAS_NUM_THREADS");
    CHECK_MSG(v && !strcmp(v, "1"), "OPENBLAS_NUM_THREADS=%s", v ? v : "(unset)");
    setenv("OPENBLAS_NUM_THREADS", "3", 1);
    CHECK_MSG(rt_blas_one_thread_env() == 0, "a user's OPENBLAS_NUM_THREADS is not replaced");
    v = getenv("OPENBLAS_NUM_THREADS");
    CHECK_MSG(v && !strcmp(v, "3"), "the user's 3 stands: %s", v ? v : "(unset)");
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *counts = getenv("DP_TEST_BLAS_COUNTS");
    if (counts) {   /* the second process: the first one's counts, then its own checks */
        if (sscanf(counts, "%d %d %d", &check_passed, &check_failed, &check_skipped) != 3) check_failed++;
        test_fallback();
        return CHECK_DONE();
    }
    test_own_choice();
    test_one_thread();
    char v[64];
    snprintf(v, sizeof v, "%d %d %d", check_passed, check_failed, check_skipped);
    setenv("DP_TEST_BLAS_COUNTS", v, 1);
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    CHECK_MSG(0, "execv /proc/self/exe failed: the Prescott case did not run");
    return CHECK_DONE();
}
