/* blas.c — OpenBLAS's kernel for this CPU. Debian 12's OpenBLAS (0.3.21) picks its
 * kernel from the CPUID model, and on a model it does not know it falls back to Prescott
 * (SSE3) whatever the CPU supports: on this project's Xeon VMs (AVX-512, reported as
 * "Intel(R) Xeon(R) Processor") a training step ran 3x slower than with the SkylakeX
 * kernel (docs/runtime.md, "BLAS kernel"). OPENBLAS_CORETYPE selects the kernel, but the
 * library reads it when it is loaded, before main: a process that finds the fallback
 * sets it and runs itself again, once. A process that runs BLAS on one thread (a task)
 * sets OPENBLAS_NUM_THREADS=1 the same way, so that the library starts no thread. */
#include "runtime/blas.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

const char *rt_blas_better_core(void)
{
    static const char *const weak[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                       "Atom", "Katmai", "Coppermine", "Northwood", "Banias"};
    const char *core = openblas_get_corename();
    int fallback = 0;
    for (size_t i = 0; core && i < sizeof weak / sizeof weak[0]; i++) fallback |= !strcasecmp(core, weak[i]);
    if (!fallback) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}

int rt_blas_one_thread_env(void)
{
    if (getenv("OPENBLAS_NUM_THREADS")) return 0;  /* the user's (or ours, inherited) */
    return setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
}

void rt_blas_tune(char **argv, int one_thread)
{
    int again = 0;
    /* A library loaded for several threads starts a helper thread that spins for about
     * 0.2 s of a core before it sleeps, although a task never gives it work. */
    if (one_thread && openblas_get_num_threads() > 1) again |= rt_blas_one_thread_env();
    const char *core = getenv("OPENBLAS_CORETYPE") ? NULL : rt_blas_better_core();
    if (core && !setenv("OPENBLAS_CORETYPE", core, 1)) again = 1;
    if (!again) return;  /* chosen already (by us, or by the user) */
    execv("/proc/self/exe", argv);
    /* no exec: the library's own choices stand */
    if (core) unsetenv("OPENBLAS_CORETYPE");
}
