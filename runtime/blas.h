/* blas.h — OpenBLAS's kernel for this CPU (runtime/blas.c). */
#ifndef RUNTIME_BLAS_H
#define RUNTIME_BLAS_H

/* The OpenBLAS core type this CPU should run ("SkylakeX", "Haswell") when the library
 * fell back to a pre-AVX2 one (Prescott: it did not know the CPU's model) on a CPU that
 * has more; NULL when its own choice stands. */
const char *rt_blas_better_core(void);

/* Sets OPENBLAS_NUM_THREADS=1 in this process's environment, for a process about to
 * run one BLAS thread (a task: the launcher sets it before it runs one), unless it is
 * set already. Returns 1 when it set it. */
int rt_blas_one_thread_env(void);

/* At the start of main: when rt_blas_better_core() names one and OPENBLAS_CORETYPE is
 * unset, sets it; when one_thread (the process will run BLAS on one thread) and the
 * library was loaded for more with OPENBLAS_NUM_THREADS unset, sets that to 1. Then, if
 * it set either, runs this program again with the same arguments (the library reads
 * them only when it loads); children inherit them. Returns when nothing was done (or
 * the exec failed, which leaves the library's choices). */
void rt_blas_tune(char **argv, int one_thread);

#endif
