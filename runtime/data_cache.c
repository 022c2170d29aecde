/* data_cache.c — decoded IDX images on disk (data_cache.h). File layout, little-endian:
 * magic "DPIDXPX1" (8), version u32, n u32, the source's st_dev, st_ino, st_size,
 * st_mtim (seconds, nanoseconds) as u64 each (48), then n x 784 pixel bytes from byte
 * 64. The file's name is "idx-<FNV-1a 64 of the source's real path>.px". */
#include "runtime/data_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dp.h"
#include "runtime/data.h"

#define DC_MAGIC "DPIDXPX1"
#define DC_VERSION 1u
#define DC_HDR 64
#define DC_MAX_N 10000000u

int dcache_dir(char *out, size_t len)
{
    const char *env = getenv("DOWNPOUR_DATA_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (env && !strcmp(env, "off")) return 0;
    if (env && *env) w = snprintf(out, len, "%s", env);
    else if (xdg && *xdg == '/') w = snprintf(out, len, "%s/downpour", xdg);
    else if (home && *home == '/') w = snprintf(out, len, "%s/.cache/downpour", home);
    else return 0;
    return w > 0 && (size_t)w < len;
}

/* What a cache file records of its source. */
static void source_id(const struct stat *st, uint8_t out[48])
{
    dp_put_u64(out, (uint64_t)st->st_dev);
    dp_put_u64(out + 8, (uint64_t)st->st_ino);
    dp_put_u64(out + 16, (uint64_t)st->st_size);
    dp_put_u64(out + 24, (uint64_t)st->st_mtim.tv_sec);
    dp_put_u64(out + 32, (uint64_t)st->st_mtim.tv_nsec);
    dp_put_u64(out + 40, 0);
}

/* The cache file's path for src, and src's stat; 0 when there is none. */
static int cache_path(const char *src, char *path, size_t len, struct stat *st)
{
    char dir[PATH_MAX], real[PATH_MAX];
    if (!dcache_dir(dir, sizeof dir) || !realpath(src, real) || stat(real, st) < 0) return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = real; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    int w = snprintf(path, len, "%s/idx-%016llx.px", dir, (unsigned long long)h);
    return w > 0 && (size_t)w < len;
}

int dcache_open(const char *src, dcache_map *m)
{
    char path[PATH_MAX + 64];
    struct stat st, cst;
    uint8_t want[48], hdr[DC_HDR];
    if (!cache_path(src, path, sizeof path, &st)) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    source_id(&st, want);
    int ok = fstat(fd, &cst) == 0 && S_ISREG(cst.st_mode) && cst.st_size >= DC_HDR &&
             pread(fd, hdr, DC_HDR, 0) == DC_HDR && !memcmp(hdr, DC_MAGIC, 8) && dp_get_u32(hdr + 8) == DC_VERSION &&
             !memcmp(hdr + 16, want, sizeof want);
    uint32_t n = ok ? dp_get_u32(hdr + 12) : 0;
    /* the count, from a file: bounded, and it must be what the file holds */
    ok = ok && n >= 1 && n <= DC_MAX_N && (uint64_t)cst.st_size == DC_HDR + (uint64_t)n * DATA_FEATURES;
    void *map = ok ? mmap(NULL, (size_t)cst.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) return 0;
    m->map = map;
    m->map_len = (size_t)cst.st_size;
    m->px = (const uint8_t *)map + DC_HDR;
    m->n = (int)n;
    return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* mkdir -p of dir (mode 0700 for what it makes). */
static int make_dirs(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return -1;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        if (mkdir(p, 0700) < 0 && errno != EEXIST) return -1;
        *c = '/';
    }
    return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

void dcache_store(const char *src, const uint8_t *px, int n)
{
    char path[PATH_MAX + 64], dir[PATH_MAX], tmp[PATH_MAX + 64];
    struct stat st;
    uint8_t hdr[DC_HDR] = {0};
    if (n < 1 || (uint32_t)n > DC_MAX_N || !cache_path(src, path, sizeof path, &st)) return;
    if (!dcache_dir(dir, sizeof dir) || make_dirs(dir) < 0) return;
    snprintf(tmp, sizeof tmp, "%s/.idx-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    memcpy(hdr, DC_MAGIC, 8);
    dp_put_u32(hdr + 8, DC_VERSION);
    dp_put_u32(hdr + 12, (uint32_t)n);
    source_id(&st, hdr + 16);
    int ok = write_all(fd, hdr, sizeof hdr) == 0 && write_all(fd, px, (size_t)n * DATA_FEATURES) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) unlink(tmp);
}
