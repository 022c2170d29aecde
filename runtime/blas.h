/* blas.h — OpenBLAS's kernel for this CPU (runtime/blas.c). */
#ifndef RUNTIME_BLAS_H
#define RUNTIME_BLAS_H

/* The OpenBLAS core type this CPU should run ("SkylakeX", "Haswell") when the library
 * fell back to a pre-AVX2 one (Prescott: it did not know the CPU's model) on a CPU that
 * has more; NULL when its own choice stands. */
const char *rt_blas_better_core(void);

/* At the start of main: when rt_blas_better_core() names one and OPENBLAS_CORETYPE is
 * unset, sets it and runs this program again with the same arguments (the library reads
 * it only when it loads); children inherit it. Returns when nothing was done (or the
 * exec failed, which leaves the library's choice). */
void rt_blas_tune(char **argv);

#endif
