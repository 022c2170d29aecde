/* bench_data.c — loading the training set: decoded from its gzip file (the cache off:
 * the baseline), decoded and stored into an empty cache, then mapped from it
 * (runtime/data_cache.h). Prints "<case>_ms <wall> <cpu>" lines for bench/run.sh.
 *   bench_data DATA_DIR CACHE_DIR (CACHE_DIR: an empty folder of the bench's own) */
#include <stdio.h>
#include <stdlib.h>

#include "common/dp.h"
#include "runtime/data.h"

static int load(const char *name, const char *dir)
{
    char err[DP_ERRLEN];
    dataset ds;
    uint64_t t0 = dp_now_ns(), c0 = dp_cpu_ns();
    if (dataset_load(&ds, dir, 1, err)) {
        fprintf(stderr, "bench_data: %s\n", err);
        return 1;
    }
    printf("%s_ms %.2f %.2f cached=%d n=%d\n", name, (double)(dp_now_ns() - t0) / 1e6,
           (double)(dp_cpu_ns() - c0) / 1e6, ds.cached, ds.n);
    dataset_release(&ds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_data DATA_DIR CACHE_DIR\n");
        return 2;
    }
    setenv("DOWNPOUR_DATA_CACHE", "off", 1);
    if (load("decode", argv[1])) return 1;
    setenv("DOWNPOUR_DATA_CACHE", argv[2], 1);
    if (load("decode_store", argv[1])) return 1;
    return load("mapped", argv[1]);
}
