/* data.c — training data: the IDX reader (zlib's gz* functions read gzip and plain files
 * alike), Fashion-MNIST loading, the seeded synthetic set, and the shared batch order.
 * Every IDX header field is checked before it is used, and memory grows with the bytes
 * actually read, so a lying header cannot make us allocate more than the file holds.
 * Errors are one line: "<file>: offset <byte>: <what>", offsets in the uncompressed
 * stream. Images keep their pixel bytes (decoded once, then mapped from the cache:
 * data_cache.c); floats are made a batch at a time. No global state; a batch_order
 * caches one permutation, so each thread owns its own. */
#include "runtime/data.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/dp.h"
#include "runtime/data_cache.h"

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
#define IDX_MAX_COUNT 10000000u
#define IDX_CHUNK (1u << 20) /* bytes read per gzread call */

/* An open IDX stream and how far into it we are. */
typedef struct idx_file {
    const char *path;
    gzFile gz;
    long long off;
} idx_file;

static int idx_open(idx_file *f, const char *path, char *err)
{
    f->path = path;
    f->off = 0;
    errno = 0;
    f->gz = gzopen(path, "rb");
    if (!f->gz)
        return dp_fail(err, DP_EIO, "%s: cannot open: %s", path,
                       errno ? strerror(errno) : "out of memory");
    gzbuffer(f->gz, 256 * 1024);
    return DP_OK;
}

static void idx_close(idx_file *f)
{
    if (f->gz) gzclose(f->gz);
    f->gz = NULL;
}

/* Reports zlib's error on f at uncompressed offset off. */
static int gz_fail(idx_file *f, long long off, char *err)
{
    int zerr = Z_OK;
    const char *msg = gzerror(f->gz, &zerr);
    if (zerr == Z_ERRNO)
        return dp_fail(err, DP_EIO, "%s: offset %lld: read failed: %s", f->path, off,
                       strerror(errno));
    if (zerr == Z_BUF_ERROR)
        return dp_fail(err, DP_ECORRUPT, "%s: offset %lld: truncated gzip stream", f->path,
                       off);
    /* zlib prefixes its message with the path; we already name the file */
    size_t pl = strlen(f->path);
    if (msg && strncmp(msg, f->path, pl) == 0 && strncmp(msg + pl, ": ", 2) == 0) msg += pl + 2;
    return dp_fail(err, DP_ECORRUPT, "%s: offset %lld: bad gzip data: %s", f->path, off,
                   msg && *msg ? msg : "unknown error");
}

/* Reads up to len bytes; returns the count read (short only at end of data) or a
 * negative code with the message in err (gzip damage). */
static long long idx_read(idx_file *f, void *buf, size_t len, char *err)
{
    size_t got = 0;
    while (got < len) {
        size_t want = len - got;
        if (want > IDX_CHUNK) want = IDX_CHUNK;
        int r = gzread(f->gz, (unsigned char *)buf + got, (unsigned)want);
        if (r < 0) return gz_fail(f, f->off + (long long)got, err);
        if (r == 0) break;
        got += (size_t)r;
    }
    /* A gzip stream cut short reads as a clean end of data plus a sticky error. */
    if (got < len) {
        int zerr = Z_OK;
        gzerror(f->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) return gz_fail(f, f->off + (long long)got, err);
    }
    f->off += (long long)got;
    return (long long)got;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads and checks the magic and the dimension sizes (ndims of them) into dims. */
static int idx_header(idx_file *f, uint32_t magic, int ndims, uint32_t *dims, char *err)
{
    unsigned char h[4 * 4];
    size_t len = 4 * (size_t)(1 + ndims);
    long long r = idx_read(f, h, 4, err);
    if (r < 0) return (int)r;
    if (r < 4)
        return dp_fail(err, DP_ECORRUPT, "%s: offset %lld: truncated IDX header (file ends "
                       "after %lld bytes, expected %zu)", f->path, f->off, f->off, len);
    uint32_t m = be32(h);
    /* Bytes 0-1 are zero, byte 2 the type (0x08 = unsigned byte), byte 3 ndims. */
    if ((m & 0xffffff00u) != (magic & 0xffffff00u))
        return dp_fail(err, DP_EINVAL, "%s: offset 0: bad IDX magic 0x%08x, expected 0x%08x",
                       f->path, m, magic);
    if ((m & 0xffu) != (uint32_t)ndims)
        return dp_fail(err, DP_EINVAL, "%s: offset 3: bad IDX number of dimensions %u, "
                       "expected %d", f->path, m & 0xffu, ndims);
    r = idx_read(f, h + 4, len - 4, err);
    if (r < 0) return (int)r;
    if ((size_t)r < len - 4)
        return dp_fail(err, DP_ECORRUPT, "%s: offset %lld: truncated IDX header (file ends "
                       "after %lld bytes, expected %zu)", f->path, f->off, f->off, len);
    for (int i = 0; i < ndims; i++) dims[i] = be32(h + 4 + 4 * i);
    if (dims[0] == 0)
        return dp_fail(err, DP_EINVAL, "%s: offset 4: IDX item count is 0", f->path);
    if (dims[0] > IDX_MAX_COUNT)
        return dp_fail(err, DP_EINVAL, "%s: offset 4: IDX item count %u over the limit of %u",
                       f->path, dims[0], IDX_MAX_COUNT);
    return DP_OK;
}

/* After the payload the stream must end. */
static int idx_expect_end(idx_file *f, char *err)
{
    unsigned char c;
    long long end = f->off;
    long long r = idx_read(f, &c, 1, err);
    if (r < 0) return (int)r;
    if (r > 0)
        return dp_fail(err, DP_ECORRUPT, "%s: offset %lld: trailing bytes after the IDX data",
                       f->path, end);
    return DP_OK;
}

int idx_read_pixels(const char *path, uint8_t **px, int *n, char *err)
{
    idx_file f = {0};
    uint8_t *out = NULL;
    uint32_t dims[3];
    int rc = idx_open(&f, path, err);
    if (rc) return rc;
    if ((rc = idx_header(&f, IDX_MAGIC_IMAGES, 3, dims, err))) goto fail;
    if (dims[1] != 28 || dims[2] != 28) {
        rc = dp_fail(err, DP_EINVAL, "%s: offset 8: bad IDX image dimensions %ux%u, "
                     "expected 28x28", path, dims[1], dims[2]);
        goto fail;
    }
    size_t total = (size_t)dims[0] * DATA_FEATURES, done = 0, cap = 0;
    while (done < total) {
        size_t want = total - done < IDX_CHUNK ? total - done : IDX_CHUNK;
        if (done + want > cap) {
            /* Grow with the data, never to the header's claim up front. */
            cap = cap ? cap * 2 : 4 * (size_t)IDX_CHUNK;
            if (cap > total) cap = total;
            out = xrealloc(out, cap);
        }
        long long r = idx_read(&f, out + done, want, err);
        if (r < 0) { rc = (int)r; goto fail; }
        done += (size_t)r;
        if ((size_t)r < want) {
            rc = dp_fail(err, DP_ECORRUPT, "%s: offset %lld: truncated IDX image data: "
                         "header promises %u images (%zu bytes), file ends after %zu",
                         path, f.off, dims[0], total, done);
            goto fail;
        }
    }
    if ((rc = idx_expect_end(&f, err))) goto fail;
    idx_close(&f);
    *px = out;
    *n = (int)dims[0];
    return DP_OK;
fail:
    free(out);
    idx_close(&f);
    return rc;
}

/* x[i] = p[i] / 255 in float, correctly rounded: eight bytes at a time with AVX2 and FMA
 * where the CPU has them, else one by one. The vector path divides without a division:
 * q = v * (1/255), then one correction with the exact residual e = v - 255 q (an FMA
 * rounds it once), q + e * (1/255). A division instruction took ~5 us of a 64-row batch
 * here, this ~3 us; the bits equal the scalar division's for all 256 pixel values, which
 * tests/test_data.c checks. */
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static size_t px_to_float_avx2(const uint8_t *restrict p,
                                                                    float *restrict x, size_t count)
{
    const __m256 r = _mm256_set1_ps(1.0f / 255.0f), minus_d = _mm256_set1_ps(-255.0f);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p + i)));
        __m256 v = _mm256_cvtepi32_ps(b), q = _mm256_mul_ps(v, r);
        __m256 e = _mm256_fmadd_ps(q, minus_d, v);
        _mm256_storeu_ps(x + i, _mm256_fmadd_ps(e, r, q));
    }
    return i;
}

#endif

static void px_to_float(const uint8_t *restrict p, float *restrict x, size_t count)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) i = px_to_float_avx2(p, x, count);
#endif
    for (; i < count; i++) x[i] = (float)p[i] / 255.0f;
}

int idx_read_images(const char *path, float **x, int *n, char *err)
{
    uint8_t *px = NULL;
    int rc = idx_read_pixels(path, &px, n, err);
    if (rc) return rc;
    size_t count = (size_t)*n * DATA_FEATURES;
    *x = xmalloc(count * sizeof **x);
    px_to_float(px, *x, count);
    free(px);
    return DP_OK;
}

int idx_read_labels(const char *path, uint8_t **y, int *n, char *err)
{
    idx_file f = {0};
    uint8_t *out = NULL;
    uint32_t dims[1];
    int rc = idx_open(&f, path, err);
    if (rc) return rc;
    if ((rc = idx_header(&f, IDX_MAGIC_LABELS, 1, dims, err))) goto fail;
    size_t total = dims[0], done = 0, cap = 0;
    while (done < total) {
        size_t want = total - done < IDX_CHUNK ? total - done : IDX_CHUNK;
        if (done + want > cap) {
            cap = cap ? cap * 2 : IDX_CHUNK;
            if (cap > total) cap = total;
            out = xrealloc(out, cap);
        }
        long long start = f.off;
        long long r = idx_read(&f, out + done, want, err);
        if (r < 0) { rc = (int)r; goto fail; }
        for (long long i = 0; i < r; i++) {
            if (out[done + (size_t)i] >= DATA_CLASSES) {
                rc = dp_fail(err, DP_EINVAL, "%s: offset %lld: label %u at index %zu out of "
                             "range 0..%d", path, start + i, out[done + (size_t)i],
                             done + (size_t)i, DATA_CLASSES - 1);
                goto fail;
            }
        }
        done += (size_t)r;
        if ((size_t)r < want) {
            rc = dp_fail(err, DP_ECORRUPT, "%s: offset %lld: truncated IDX label data: "
                         "header promises %u labels, file ends after %zu", path, f.off,
                         dims[0], done);
            goto fail;
        }
    }
    if ((rc = idx_expect_end(&f, err))) goto fail;
    idx_close(&f);
    *y = out;
    *n = (int)dims[0];
    return DP_OK;
fail:
    free(out);
    idx_close(&f);
    return rc;
}

/* dir/name.gz when it exists, else dir/name when that exists, else dir/name.gz (so the
 * open error names the canonical file). */
static void data_path(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
    if (access(out, F_OK) == 0) return;
    size_t l = strlen(out);
    if (l > 3 && strcmp(out + l - 3, ".gz") == 0) {
        out[l - 3] = '\0';
        if (access(out, F_OK) == 0) return;
        out[l - 3] = '.';
    }
}

int dataset_check(const char *dir, char *err)
{
    if (!strcmp(dir, "synthetic")) return DP_OK;
    static const char *const names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (size_t i = 0; i < DP_ARRAY_LEN(names); i++) {
        char path[4096];
        data_path(path, sizeof path, dir, names[i]);
        if (access(path, R_OK))
            return dp_fail(err, DP_EINVAL, "--data %s: %s: %s (Fashion-MNIST's four IDX files: Debian's "
                           "dataset-fashion-mnist puts them in /usr/share/datasets/fashion-mnist; or --data "
                           "synthetic)", dir, path, strerror(errno));
    }
    return DP_OK;
}

int dataset_load(dataset *ds, const char *dir, int train, char *err)
{
    char ipath[4096], lpath[4096];
    uint8_t *px = NULL, *y = NULL;
    int nx = 0, ny = 0, rc;
    const char *pre = train ? "train" : "t10k";
    char name[64];
    memset(ds, 0, sizeof *ds);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", pre);
    data_path(ipath, sizeof ipath, dir, name);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", pre);
    data_path(lpath, sizeof lpath, dir, name);
    dcache_map map = {0};
    if (dcache_open(ipath, &map)) {
        ds->px = map.px;
        ds->px_map = map.map;
        ds->px_map_len = map.map_len;
        ds->cached = 1;
        nx = map.n;
    } else {
        if ((rc = idx_read_pixels(ipath, &px, &nx, err))) goto fail;
        dcache_store(ipath, px, nx);
        ds->px = ds->px_own = px;
    }
    if ((rc = idx_read_labels(lpath, &y, &ny, err))) goto fail;
    if (nx != ny) {
        rc = dp_fail(err, DP_EINVAL, "%s: offset 4: %d labels, but %s holds %d images",
                     lpath, ny, ipath, nx);
        goto fail;
    }
    ds->n = nx;
    ds->y = y;
    return DP_OK;
fail:
    free(y);
    dataset_release(ds);
    return rc;
}

const float *dataset_x(dataset *ds)
{
    if (!ds->x && ds->px) {
        size_t count = (size_t)ds->n * DATA_FEATURES;
        ds->x = xmalloc(count * sizeof *ds->x);
        px_to_float(ds->px, ds->x, count);
    }
    return ds->x;
}

void dataset_rows(const dataset *ds, int first, int count, float *x)
{
    dp_assert("dataset_rows: rows within the set", first >= 0 && count >= 0 && first + count <= ds->n);
    size_t off = (size_t)first * DATA_FEATURES, len = (size_t)count * DATA_FEATURES;
    if (ds->px) px_to_float(ds->px + off, x, len);
    else memcpy(x, ds->x + off, len * sizeof *x);
}

void dataset_rows_fn(void *ctx, int first, int count, float *x)
{
    dataset_rows(ctx, first, count, x);
}

/* Approximately standard normal from one 64-bit draw: the sum of four 16-bit uniforms
 * (Irwin-Hall), rescaled. Cheap, and bit-for-bit the same on every platform. */
static float cheap_normal(dp_rng *r)
{
    uint64_t v = dp_rng_next(r);
    uint32_t s = (uint32_t)(v & 0xffff) + (uint32_t)(v >> 16 & 0xffff) +
                 (uint32_t)(v >> 32 & 0xffff) + (uint32_t)(v >> 48);
    /* mean 2 * 65535, variance 4 * 65536^2 / 12 */
    return ((float)s - 131070.0f) * (1.7320508f / 65536.0f);
}

void dataset_synthetic(dataset *ds, int n, uint64_t seed, int train)
{
    assert(((void)"data: synthetic set needs n >= 1", n >= 1));
    memset(ds, 0, sizeof *ds);
    enum { C = DATA_CLASSES, F = DATA_FEATURES };
    /* Prototype pixels uniform in [0, 0.35), noise sd 0.5, clamped to [0, 1]: classes
     * overlap enough that the loss falls gradually (softmax ~99% held-out accuracy after
     * 300 SGD steps of 32), not in one step. */
    static const float contrast = 0.35f, noise = 0.5f;
    float *proto = xmalloc((size_t)C * F * sizeof *proto);
    dp_rng r;
    dp_rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)C * F; i++) proto[i] = contrast * (float)dp_rng_uniform(&r);

    ds->n = n;
    ds->x = xmalloc((size_t)n * F * sizeof *ds->x);
    ds->y = xmalloc((size_t)n);
    dp_rng_seed(&r, seed ^ (train ? 0x747261696e5f5f5full : 0x746573745f5f5f5full));
    for (int s = 0; s < n; s++) {
        int c = (int)dp_rng_below(&r, C);
        ds->y[s] = (uint8_t)c;
        float *row = ds->x + (size_t)s * F;
        const float *p = proto + (size_t)c * F;
        for (int j = 0; j < F; j++) {
            float v = p[j] + noise * cheap_normal(&r);
            row[j] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        }
    }
    free(proto);
}

void dataset_release(dataset *ds)
{
    if (!ds) return;
    free(ds->x);
    free(ds->y);
    free(ds->px_own);
    if (ds->px_map) munmap(ds->px_map, ds->px_map_len);
    memset(ds, 0, sizeof *ds);
}

int batch_order_init(batch_order *o, int n, int n_workers, int batch, uint64_t seed, char *err)
{
    memset(o, 0, sizeof *o);
    o->epoch = -1;
    if (n < 1 || n_workers < 1 || batch < 1)
        return dp_fail(err, DP_EINVAL, "batch order: need n, workers and batch >= 1 "
                       "(got %d, %d, %d)", n, n_workers, batch);
    if ((long long)n_workers * batch > n)
        return dp_fail(err, DP_EINVAL, "batch order: %d workers x batch %d = %lld samples "
                       "per global batch, more than the %d in the data set", n_workers, batch,
                       (long long)n_workers * batch, n);
    o->n = n;
    o->n_workers = n_workers;
    o->batch = batch;
    o->seed = seed;
    o->perm = xmalloc((size_t)n * sizeof *o->perm);
    return DP_OK;
}

void batch_order_release(batch_order *o)
{
    if (!o) return;
    free(o->perm);
    o->perm = NULL;
    o->epoch = -1;
}

/* The permutation of epoch e depends only on (seed, e, n): Fisher-Yates from an RNG
 * seeded with the seed and the epoch, so any worker can compute any epoch alone. */
static void batch_order_shuffle(batch_order *o, int epoch)
{
    dp_rng r;
    dp_rng_seed(&r, o->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(epoch + 1)));
    for (int i = 0; i < o->n; i++) o->perm[i] = i;
    for (int i = o->n - 1; i > 0; i--) {
        int j = (int)dp_rng_below(&r, (uint64_t)i + 1);
        int t = o->perm[i];
        o->perm[i] = o->perm[j];
        o->perm[j] = t;
    }
    o->epoch = epoch;
}

void batch_order_indices(batch_order *o, int worker, int64_t step, int *idx)
{
    assert(((void)"data: batch order not initialised", o->perm != NULL));
    assert(((void)"data: worker out of range", worker >= 0 && worker < o->n_workers));
    assert(((void)"data: negative step", step >= 0));
    int global = o->n_workers * o->batch;
    int64_t per_epoch = o->n / global;
    int epoch = (int)(step / per_epoch);
    int64_t k = step % per_epoch;
    if (epoch != o->epoch) batch_order_shuffle(o, epoch);
    const int *p = o->perm + k * global + (int64_t)worker * o->batch;
    memcpy(idx, p, (size_t)o->batch * sizeof *idx);
}

void dataset_gather(const dataset *ds, const int *idx, int count, float *x, uint8_t *y)
{
    for (int i = 0; i < count; i++) {
        assert(((void)"data: gather index out of range", idx[i] >= 0 && idx[i] < ds->n));
        size_t at = (size_t)idx[i] * DATA_FEATURES;
        if (ds->px) px_to_float(ds->px + at, x + (size_t)i * DATA_FEATURES, DATA_FEATURES);
        else memcpy(x + (size_t)i * DATA_FEATURES, ds->x + at, DATA_FEATURES * sizeof *x);
        if (y) y[i] = ds->y[idx[i]];
    }
}

void dataset_prefetch(const dataset *ds, const int *idx, int count)
{
    size_t row = ds->px ? DATA_FEATURES : DATA_FEATURES * sizeof(float);
    const char *base = ds->px ? (const char *)ds->px : (const char *)ds->x;
    for (int i = 0; i < count; i++) {
        if (idx[i] < 0 || idx[i] >= ds->n) continue;
        const char *p = base + (size_t)idx[i] * row;
        for (size_t k = 0; k < row; k += 64) __builtin_prefetch(p + k);
    }
}
