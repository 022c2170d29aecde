/* fuzz_idx.c — libFuzzer target: the Fashion-MNIST IDX reader (runtime/data.c). The
 * input is one file (plain or gzip; zlib reads both) handed to idx_read_images and
 * idx_read_labels through a memfd. An accepted file must hold what it claims: n >= 1,
 * pixels in [0,1], labels 0..9 (otherwise abort: a real finding). */
#include "tests/fuzz/fuzz_util.h"

#include "runtime/data.h"

static fuzz_file file;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    const char *path = fuzz_file_put(&file, data, size);
    char err[DP_ERRLEN];
    float *x = NULL;
    uint8_t *y = NULL;
    int n = 0;
    if (idx_read_images(path, &x, &n, err) == 0) {
        if (n < 1) abort();
        for (size_t i = 0; i < (size_t)n * DATA_FEATURES; i++)
            if (!(x[i] >= 0.0f && x[i] <= 1.0f)) abort();
        free(x);
    }
    if (idx_read_labels(path, &y, &n, err) == 0) {
        if (n < 1) abort();
        for (int i = 0; i < n; i++)
            if (y[i] >= DATA_CLASSES) abort();
        free(y);
    }
    return 0;
}
