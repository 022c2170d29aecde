/* test_data.c — the IDX reader against small files written here (gzip and plain, good
 * and damaged), the real Fashion-MNIST when it is installed, the synthetic set's
 * determinism, and the shared batch order. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/dp.h"
#include "runtime/data.h"
#include "runtime/data_cache.h"
#include "tests/check.h"

static char tmpdir[256];

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes head (hlen bytes) then body (blen bytes) to tmpdir/name, gzip or plain;
 * returns the full path in a static buffer (overwritten by the next call). */
static const char *write_file(const char *name, int gz, const unsigned char *head,
                              size_t hlen, const unsigned char *body, size_t blen)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f) { perror(path); exit(2); }
        if (hlen) gzwrite(f, head, (unsigned)hlen);
        if (blen) gzwrite(f, body, (unsigned)blen);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) { perror(path); exit(2); }
        if (hlen) fwrite(head, 1, hlen, f);
        if (blen) fwrite(body, 1, blen, f);
        fclose(f);
    }
    return path;
}

/* An image file: magic, n, rows, cols, then `pixels` bytes of pattern. */
static const char *write_images(const char *name, int gz, uint32_t magic, uint32_t n,
                                uint32_t rows, uint32_t cols, size_t pixels)
{
    unsigned char h[16];
    put32(h, magic);
    put32(h + 4, n);
    put32(h + 8, rows);
    put32(h + 12, cols);
    unsigned char *body = malloc(pixels ? pixels : 1);
    for (size_t i = 0; i < pixels; i++) body[i] = (unsigned char)(i * 7 % 256);
    const char *p = write_file(name, gz, h, 16, body, pixels);
    free(body);
    return p;
}

static const char *write_labels(const char *name, int gz, uint32_t magic, uint32_t n,
                                const unsigned char *labels, size_t len)
{
    unsigned char h[8];
    put32(h, magic);
    put32(h + 4, n);
    return write_file(name, gz, h, 8, labels, len);
}

/* Expects an image read to fail with a message containing `want` and the path. */
static void expect_images_error(const char *path, const char *want)
{
    char err[DP_ERRLEN] = "";
    float *x = NULL;
    int n = -1;
    int rc = idx_read_images(path, &x, &n, err);
    CHECK_MSG(rc < 0, "%s: expected failure", path);
    CHECK_MSG(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    CHECK_MSG(strstr(err, path) != NULL, "message '%s' lacks the path", err);
    CHECK(x == NULL || rc == 0);
    if (rc == 0) free(x);
}

static void expect_labels_error(const char *path, const char *want)
{
    char err[DP_ERRLEN] = "";
    uint8_t *y = NULL;
    int n = -1;
    int rc = idx_read_labels(path, &y, &n, err);
    CHECK_MSG(rc < 0, "%s: expected failure", path);
    CHECK_MSG(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    CHECK_MSG(strstr(err, path) != NULL, "message '%s' lacks the path", err);
    if (rc == 0) free(y);
}

static void test_good_files(void)
{
    for (int gz = 0; gz <= 1; gz++) {
        char err[DP_ERRLEN] = "";
        const char *p = write_images(gz ? "ok-img.gz" : "ok-img", gz, 0x803, 3, 28, 28,
                                     3 * 784);
        float *x = NULL;
        int n = 0;
        CHECK_MSG(idx_read_images(p, &x, &n, err) == 0, "%s", err);
        CHECK(n == 3);
        int same = x != NULL;
        for (int i = 0; same && i < 3 * 784; i++)
            same = x[i] == (float)(i * 7 % 256) / 255.0f;
        CHECK_MSG(same, "pixel values (gz=%d)", gz);
        CHECK(x && x[1] > 0.0f && x[36] <= 1.0f);
        free(x);

        unsigned char lab[5] = {0, 9, 3, 3, 7};
        p = write_labels(gz ? "ok-lab.gz" : "ok-lab", gz, 0x801, 5, lab, 5);
        uint8_t *y = NULL;
        CHECK_MSG(idx_read_labels(p, &y, &n, err) == 0, "%s", err);
        CHECK(n == 5 && y && memcmp(y, lab, 5) == 0);
        free(y);
    }
}

static void test_bad_images(void)
{
    expect_images_error(write_images("trunc.gz", 1, 0x803, 3, 28, 28, 2 * 784 + 5),
                        "truncated IDX image data");
    expect_images_error(write_images("trunc", 0, 0x803, 3, 28, 28, 100), "truncated");
    unsigned char h[10] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0};
    expect_images_error(write_file("short-head", 0, h, sizeof h, NULL, 0),
                        "offset 10: truncated IDX header");
    expect_images_error(write_file("empty", 0, NULL, 0, NULL, 0), "truncated IDX header");
    expect_images_error(write_images("magic.gz", 1, 0x903, 1, 28, 28, 784),
                        "offset 0: bad IDX magic 0x00000903, expected 0x00000803");
    expect_images_error(write_images("magic2", 0, 0x08030000u, 1, 28, 28, 784), "bad IDX magic");
    expect_images_error(write_images("ndims.gz", 1, 0x802, 1, 28, 28, 784),
                        "number of dimensions 2, expected 3");
    expect_images_error(write_images("dims.gz", 1, 0x803, 1, 28, 27, 784),
                        "offset 8: bad IDX image dimensions 28x27, expected 28x28");
    expect_images_error(write_images("dims0", 0, 0x803, 1, 0, 28, 0), "dimensions 0x28");
    expect_images_error(write_images("zero.gz", 1, 0x803, 0, 28, 28, 0), "count is 0");
    expect_images_error(write_images("huge.gz", 1, 0x803, 0xffffffffu, 28, 28, 784),
                        "offset 4: IDX item count 4294967295 over the limit");
    expect_images_error(write_images("trail.gz", 1, 0x803, 2, 28, 28, 2 * 784 + 1),
                        "offset 1584: trailing bytes");
    expect_images_error(write_images("trail", 0, 0x803, 1, 28, 28, 784 + 3), "trailing bytes");
    /* a label file is not an image file */
    unsigned char lab[1] = {1};
    expect_images_error(write_labels("lab-as-img", 0, 0x801, 1, lab, 1), "bad IDX");

    char err[DP_ERRLEN] = "";
    float *x = NULL;
    int n;
    char missing[512];
    snprintf(missing, sizeof missing, "%s/does-not-exist.gz", tmpdir);
    CHECK(idx_read_images(missing, &x, &n, err) == DP_EIO);
    CHECK_MSG(strstr(err, missing) && strstr(err, "cannot open"), "%s", err);

    /* damaged gzip: valid header bytes, then garbage deflate data */
    unsigned char junk[64] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    for (int i = 10; i < 64; i++) junk[i] = (unsigned char)(0xff - i);
    expect_images_error(write_file("junk.gz", 0, junk, sizeof junk, NULL, 0), "bad gzip");

    /* a good gzip file cut in half */
    const char *p = write_images("cut.gz", 1, 0x803, 40, 28, 28, 40 * 784);
    FILE *f = fopen(p, "rb");
    static unsigned char buf[1 << 16];
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(len > 100);
    expect_images_error(write_file("cut.gz", 0, buf, len / 2, NULL, 0), "truncated gzip stream");
}

static void test_bad_labels(void)
{
    unsigned char lab[6] = {0, 1, 2, 10, 4, 5};
    expect_labels_error(write_labels("lab-range.gz", 1, 0x801, 6, lab, 6),
                        "offset 11: label 10 at index 3 out of range 0..9");
    expect_labels_error(write_labels("lab-trunc.gz", 1, 0x801, 9, lab, 3),
                        "truncated IDX label data");
    expect_labels_error(write_labels("lab-trail", 0, 0x801, 2, lab, 3), "offset 10: trailing");
    expect_labels_error(write_labels("lab-magic.gz", 1, 0x901, 2, lab, 2), "bad IDX magic");
    expect_labels_error(write_labels("lab-img.gz", 1, 0x803, 2, lab, 2),
                        "offset 3: bad IDX number of dimensions 3, expected 1");
    expect_labels_error(write_labels("lab-big", 0, 0x801, 10000001, lab, 2), "over the limit");
}

/* dataset_load over a directory of small files, and an image/label count mismatch. */
static void test_dataset_load(void)
{
    char dir[512], err[DP_ERRLEN] = "";
    dataset ds;
    unsigned char lab[4] = {1, 2, 3, 4};
    snprintf(dir, sizeof dir, "%s/ds", tmpdir);
    CHECK(mkdir(dir, 0700) == 0);
    /* train pair gzip, t10k pair plain (the names without .gz) */
    write_images("ds/train-images-idx3-ubyte.gz", 1, 0x803, 4, 28, 28, 4 * 784);
    write_labels("ds/train-labels-idx1-ubyte.gz", 1, 0x801, 4, lab, 4);
    write_images("ds/t10k-images-idx3-ubyte", 0, 0x803, 2, 28, 28, 2 * 784);
    write_labels("ds/t10k-labels-idx1-ubyte", 0, 0x801, 3, lab, 3);
    CHECK_MSG(dataset_load(&ds, dir, 1, err) == 0, "%s", err);
    CHECK(ds.n == 4 && ds.y[3] == 4 && dataset_x(&ds)[784 + 1] == (float)((784 + 1) * 7 % 256) / 255.0f);
    dataset_release(&ds);
    CHECK(ds.x == NULL && ds.px == NULL && ds.n == 0);
    CHECK(dataset_load(&ds, dir, 0, err) == DP_EINVAL);
    CHECK_MSG(strstr(err, "t10k-labels-idx1-ubyte: offset 4: 3 labels, but") &&
              strstr(err, "holds 2 images"), "%s", err);
    CHECK(ds.x == NULL && ds.px == NULL && ds.y == NULL);

    snprintf(dir, sizeof dir, "%s/nowhere", tmpdir);
    CHECK(dataset_load(&ds, dir, 1, err) == DP_EIO);
    CHECK_MSG(strstr(err, "nowhere/train-images-idx3-ubyte.gz: cannot open"), "%s", err);
}

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

/* The one cache file in dir (path into out); 0 when there is not exactly one. */
static int cache_file(const char *dir, char *out, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "idx-", 4) && ++n == 1) snprintf(out, len, "%s/%s", dir, e->d_name);
    closedir(d);
    return n == 1;
}

/* Loads dir's training pair; checks every pixel against the files' pattern (pixel k of
 * the set is k * 7 % 256, as write_images writes them) through dataset_x and through a
 * gather of rows in another order; returns ds.cached (-1 on a failed load). */
static int load_checked(const char *dir, int n)
{
    char err[DP_ERRLEN] = "";
    dataset ds;
    if (dataset_load(&ds, dir, 1, err)) {
        CHECK_MSG(0, "%s", err);
        return -1;
    }
    int ok = ds.n == n, cached = ds.cached;
    const float *x = dataset_x(&ds);
    for (size_t k = 0; ok && k < (size_t)n * DATA_FEATURES; k++) ok = x[k] == (float)(k * 7 % 256) / 255.0f;
    float *g = malloc((size_t)n * DATA_FEATURES * sizeof *g);
    int idx[8];
    for (int i = 0; i < n; i++) idx[i] = n - 1 - i;
    dataset x_only = {.n = ds.n, .x = ds.x, .y = ds.y};   /* the floats, gathered as a float set */
    float *h = malloc((size_t)n * DATA_FEATURES * sizeof *h);
    dataset_prefetch(&ds, idx, n);
    dataset_gather(&ds, idx, n, g, NULL);
    dataset_gather(&x_only, idx, n, h, NULL);
    ok = ok && memcmp(g, h, (size_t)n * DATA_FEATURES * sizeof *g) == 0;
    CHECK_MSG(ok, "the pixels of %s (%d images, cached %d)", dir, n, cached);
    free(g);
    free(h);
    dataset_release(&ds);
    return cached;
}

/* The decoded cache (runtime/data_cache.h): the first load decodes and stores, the next
 * maps; a changed source, a damaged or lying cache file, or the cache turned off reads
 * the source; an unwritable cache folder only means no cache. */
static void test_cache(void)
{
    char dir[512], cache[600], file[1200], blocked[600];
    unsigned char lab[5] = {1, 2, 3, 4, 5};
    const char *before = getenv("DOWNPOUR_DATA_CACHE");
    char *saved = before ? strdup(before) : NULL;
    snprintf(dir, sizeof dir, "%s/dc", tmpdir);
    snprintf(cache, sizeof cache, "%s/cache/deeper", tmpdir);
    CHECK(mkdir(dir, 0700) == 0);
    setenv("DOWNPOUR_DATA_CACHE", cache, 1);
    write_images("dc/train-images-idx3-ubyte.gz", 1, 0x803, 4, 28, 28, 4 * 784);
    write_labels("dc/train-labels-idx1-ubyte.gz", 1, 0x801, 4, lab, 4);
    CHECK_MSG(load_checked(dir, 4) == 0, "the first load decodes the file");
    CHECK_MSG(cache_file(cache, file, sizeof file), "... and stores one cache file in %s (folders made)", cache);
    struct stat st;
    CHECK(stat(file, &st) == 0 && st.st_size == 64 + 4 * 784);
    CHECK_MSG(load_checked(dir, 4) == 1, "the second load maps the cache");
    CHECK_MSG(count_files(cache, ".idx-") == 0, "no temporary file is left behind");

    /* the source changes (another size): decoded again, and the cache follows */
    write_images("dc/train-images-idx3-ubyte.gz", 1, 0x803, 5, 28, 28, 5 * 784);
    write_labels("dc/train-labels-idx1-ubyte.gz", 1, 0x801, 5, lab, 5);
    CHECK_MSG(load_checked(dir, 5) == 0, "a changed source is decoded again, not read from the cache");
    CHECK_MSG(load_checked(dir, 5) == 1, "... and cached anew");

    /* a cache file one byte short, then one whose count lies: the source is read */
    CHECK(truncate(file, 64 + 5 * 784 - 1) == 0);
    CHECK_MSG(load_checked(dir, 5) == 0, "a truncated cache file is not used");
    CHECK_MSG(load_checked(dir, 5) == 1, "... and is replaced");
    FILE *f = fopen(file, "r+b");
    unsigned char big[4] = {0xff, 0xff, 0x0f, 0};   /* n = 1048575, little-endian */
    CHECK(f && fseek(f, 12, SEEK_SET) == 0 && fwrite(big, 1, 4, f) == 4);
    if (f) fclose(f);
    CHECK_MSG(load_checked(dir, 5) == 0, "a cache file whose count is not its size is not used");

    /* off: the source, and nothing written */
    setenv("DOWNPOUR_DATA_CACHE", "off", 1);
    unlink(file);
    CHECK_MSG(load_checked(dir, 5) == 0, "DOWNPOUR_DATA_CACHE=off reads the source");
    CHECK_MSG(count_files(cache, "idx-") == 0, "... and writes no cache file");

    /* a cache folder that cannot be made (under a regular file): loads all the same */
    snprintf(blocked, sizeof blocked, "%s/dc/train-labels-idx1-ubyte.gz/cache", tmpdir);
    setenv("DOWNPOUR_DATA_CACHE", blocked, 1);
    CHECK_MSG(load_checked(dir, 5) == 0, "an unwritable cache folder only means no cache");

    if (saved) setenv("DOWNPOUR_DATA_CACHE", saved, 1);
    else unsetenv("DOWNPOUR_DATA_CACHE");
    free(saved);
}

/* Where the cache lives, by the environment: DOWNPOUR_DATA_CACHE (off: none), else
 * $XDG_CACHE_HOME/downpour, else $HOME/.cache/downpour; a relative XDG or HOME is not used. */
static void test_cache_dir(void)
{
    static const char *const vars[3] = {"DOWNPOUR_DATA_CACHE", "XDG_CACHE_HOME", "HOME"};
    static const struct { const char *env[3]; const char *want; } cases[] = {
        {{"/a/b", "/x", "/h"}, "/a/b"},
        {{"off", "/x", "/h"}, NULL},
        {{NULL, "/x", "/h"}, "/x/downpour"},
        {{NULL, "x", "/h"}, "/h/.cache/downpour"},
        {{NULL, NULL, "/h"}, "/h/.cache/downpour"},
        {{NULL, NULL, "h"}, NULL},
        {{NULL, NULL, NULL}, NULL},
    };
    char *saved[3];
    for (int v = 0; v < 3; v++) saved[v] = getenv(vars[v]) ? strdup(getenv(vars[v])) : NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int v = 0; v < 3; v++) {
            if (cases[i].env[v]) setenv(vars[v], cases[i].env[v], 1);
            else unsetenv(vars[v]);
        }
        char out[256] = "";
        int ok = dcache_dir(out, sizeof out);
        CHECK_MSG(cases[i].want ? ok && !strcmp(out, cases[i].want) : !ok, "cache folder for (%s, %s, %s): %s (got %s)",
                  cases[i].env[0] ? cases[i].env[0] : "-", cases[i].env[1] ? cases[i].env[1] : "-",
                  cases[i].env[2] ? cases[i].env[2] : "-", cases[i].want ? cases[i].want : "none", ok ? out : "none");
    }
    for (int v = 0; v < 3; v++) {
        if (saved[v]) setenv(vars[v], saved[v], 1);
        else unsetenv(vars[v]);
        free(saved[v]);
    }
}

static void test_fashion_mnist(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", DATA_DEFAULT_DIR);
    if (access(path, R_OK) != 0) {
        CHECK_SKIP("Fashion-MNIST is not installed in %s (apt-get install dataset-fashion-mnist)",
                   DATA_DEFAULT_DIR);
        return;
    }
    for (int train = 1; train >= 0; train--) {
        char err[DP_ERRLEN] = "";
        dataset ds;
        int rc = dataset_load(&ds, DATA_DEFAULT_DIR, train, err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc) continue;
        CHECK(ds.n == (train ? 60000 : 10000));
        int count[DATA_CLASSES] = {0}, bad = 0;
        for (int i = 0; i < ds.n; i++) {
            if (ds.y[i] < DATA_CLASSES) count[ds.y[i]]++;
            else bad++;
        }
        CHECK(bad == 0);
        /* Fashion-MNIST is balanced: 6000 / 1000 per class */
        for (int c = 0; c < DATA_CLASSES; c++) CHECK(count[c] == ds.n / 10);
        float lo = 1.0f, hi = 0.0f;
        const float *x = dataset_x(&ds);
        for (size_t i = 0; i < (size_t)ds.n * DATA_FEATURES; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        CHECK(lo == 0.0f && hi == 1.0f);
        dataset_release(&ds);
    }
}

static void test_synthetic(void)
{
    dataset a, b, c, t;
    dataset_synthetic(&a, 500, 42, 1);
    dataset_synthetic(&b, 500, 42, 1);
    dataset_synthetic(&c, 500, 43, 1);
    dataset_synthetic(&t, 500, 42, 0);
    CHECK(a.n == 500);
    CHECK(memcmp(a.x, b.x, 500 * 784 * sizeof(float)) == 0);
    CHECK(memcmp(a.y, b.y, 500) == 0);
    CHECK(memcmp(a.x, c.x, 500 * 784 * sizeof(float)) != 0);
    CHECK(memcmp(a.x, t.x, 500 * 784 * sizeof(float)) != 0);
    int in_range = 1, seen[DATA_CLASSES] = {0};
    for (size_t i = 0; i < 500 * 784; i++) in_range &= a.x[i] >= 0.0f && a.x[i] <= 1.0f;
    for (int i = 0; i < 500; i++) {
        in_range &= a.y[i] < DATA_CLASSES;
        if (a.y[i] < DATA_CLASSES) seen[a.y[i]] = 1;
    }
    CHECK(in_range);
    for (int k = 0; k < DATA_CLASSES; k++) CHECK(seen[k]);
    /* train and test share prototypes: class means are close */
    double diff = 0.0;
    for (int k = 0; k < DATA_CLASSES; k++) {
        for (int j = 0; j < 784; j += 7) {
            double ma = 0, mt = 0;
            int na = 0, nt = 0;
            for (int i = 0; i < 500; i++) {
                if (a.y[i] == k) { ma += a.x[(size_t)i * 784 + j]; na++; }
                if (t.y[i] == k) { mt += t.x[(size_t)i * 784 + j]; nt++; }
            }
            diff += fabs(ma / na - mt / nt);
        }
    }
    CHECK_MSG(diff / (10 * 112) < 0.15, "mean class-mean difference %g", diff / 1120);
    /* the pixels' mean against its closed form: prototype p uniform in [0, 0.35), noise
     * normal with sd 0.5, clamped to [0, 1]: E = mean over p of the integral over t in [0, 1]
     * of P(p + noise > t) (the sum of 4 uniforms the generator uses is close to normal) */
    double want = 0, got = 0;
    for (int i = 0; i < 350; i++) {
        double pp = 0.35 * (i + 0.5) / 350, integral = 0;
        for (int k = 0; k < 1000; k++) integral += 0.5 * erfc(((k + 0.5) / 1000 - pp) / (0.5 * sqrt(2.0))) / 1000;
        want += integral / 350;
    }
    for (size_t i = 0; i < 500 * 784; i++) got += a.x[i];
    got /= 500 * 784;
    CHECK_MSG(fabs(got - want) < 0.01, "synthetic pixels' mean %.4f, closed form %.4f", got, want);
    dataset_release(&a);
    dataset_release(&b);
    dataset_release(&c);
    dataset_release(&t);
}

static void test_batch_order(void)
{
    char err[DP_ERRLEN] = "";
    batch_order two, one, again;
    const int n = 100;
    CHECK(batch_order_init(&two, n, 2, 4, 7, err) == 0);
    CHECK(batch_order_init(&one, n, 1, 8, 7, err) == 0);
    CHECK(batch_order_init(&again, n, 2, 4, 7, err) == 0);
    /* 12 global batches of 8 per epoch; 4 samples of each permutation skipped */
    int ok_concat = 1, ok_range = 1, ok_distinct = 1, ok_again = 1;
    int a[4], b[4], w[8], seen[3][100];
    memset(seen, 0, sizeof seen);
    for (int64_t step = 0; step < 36; step++) {
        batch_order_indices(&two, 0, step, a);
        batch_order_indices(&two, 1, step, b);
        batch_order_indices(&one, 0, step, w);
        ok_concat &= memcmp(a, w, sizeof a) == 0 && memcmp(b, w + 4, sizeof b) == 0;
        for (int j = 0; j < 8; j++) {
            ok_range &= w[j] >= 0 && w[j] < n;
            if (w[j] >= 0 && w[j] < n) ok_distinct &= seen[step / 12][w[j]]++ == 0;
        }
    }
    CHECK(ok_concat);
    CHECK(ok_range);
    CHECK(ok_distinct);
    /* going back to an earlier epoch recomputes the same permutation */
    for (int64_t step = 35; step >= 0; step -= 5) {
        batch_order_indices(&two, 1, step, a);
        batch_order_indices(&again, 1, step, b);
        ok_again &= memcmp(a, b, sizeof a) == 0;
    }
    CHECK(ok_again);
    /* each epoch is a new order */
    int e0[8], e1[8];
    batch_order_indices(&one, 0, 0, e0);
    batch_order_indices(&one, 0, 12, e1);
    CHECK(memcmp(e0, e1, sizeof e0) != 0);
    int overlap = 0;
    for (int i = 0; i < 100; i++) overlap += seen[0][i] == seen[1][i];
    CHECK(overlap < 100);
    /* a different seed, a different order */
    batch_order other;
    CHECK(batch_order_init(&other, n, 1, 8, 8, err) == 0);
    batch_order_indices(&other, 0, 0, e1);
    CHECK(memcmp(e0, e1, sizeof e0) != 0);
    batch_order_release(&other);

    CHECK(batch_order_init(&other, 10, 3, 4, 1, err) == DP_EINVAL);
    CHECK_MSG(strstr(err, "more than the 10"), "%s", err);
    batch_order_release(&other);
    CHECK(batch_order_init(&other, 10, 0, 4, 1, err) == DP_EINVAL);
    batch_order_release(&other);
    /* the whole set as one batch is allowed */
    CHECK(batch_order_init(&other, 10, 2, 5, 1, err) == 0);
    int all[5];
    batch_order_indices(&other, 1, 3, all);
    CHECK(all[0] >= 0 && all[4] < 10);
    batch_order_release(&other);

    batch_order_release(&two);
    batch_order_release(&one);
    batch_order_release(&again);

    /* gather copies rows and labels */
    dataset ds;
    dataset_synthetic(&ds, 20, 3, 1);
    int idx[3] = {19, 0, 7};
    float x[3 * 784];
    uint8_t y[3];
    dataset_gather(&ds, idx, 3, x, y);
    int same = 1;
    for (int i = 0; i < 3; i++) {
        same &= memcmp(x + i * 784, ds.x + (size_t)idx[i] * 784, 784 * sizeof(float)) == 0;
        same &= y[i] == ds.y[idx[i]];
    }
    CHECK(same);
    dataset_release(&ds);
}

/* Removes dir and everything under it (only what this test wrote there). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/dp-test-data-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    test_good_files();
    test_bad_images();
    test_bad_labels();
    test_dataset_load();
    test_cache();
    test_fashion_mnist();
    test_cache_dir();
    test_synthetic();
    test_batch_order();
    remove_tree(tmpdir);
    return CHECK_DONE();
}
