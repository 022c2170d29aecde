/* ckpt.c — atomic checkpoint files (see ckpt.h). */
#include "runtime/ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "common/dp.h"

#define CKPT_MAGIC "DPCKPT01"
#define CKPT_VERSION 1u
#define CKPT_MAX_FLOATS (1ull << 28)

typedef struct wbuf { FILE *f; uLong crc; int bad; } wbuf;

static void put(wbuf *w, const void *p, size_t n)
{
    if (!n) return;
    if (fwrite(p, 1, n, w->f) != n) w->bad = 1;
    w->crc = crc32(w->crc, p, (uInt)n);
}

int ckpt_save(const char *dir, int64_t global_step, const ckpt_tensor *t, int n, char *path_out,
              char *err)
{
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return dp_fail(err, DP_EIO, "%s: cannot create checkpoint directory: %s", dir, strerror(errno));
    char path[1024], tmp[1100], name[64];
    snprintf(name, sizeof name, "model.ckpt-%lld", (long long)global_step);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    wbuf w = {fopen(tmp, "wb"), crc32(0, NULL, 0), 0};
    if (!w.f) return dp_fail(err, DP_EIO, "%s: %s", tmp, strerror(errno));
    uint32_t ver = CKPT_VERSION, cnt = (uint32_t)n;
    put(&w, CKPT_MAGIC, 8);
    put(&w, &ver, 4);
    put(&w, &global_step, 8);
    put(&w, &cnt, 4);
    for (int i = 0; i < n; i++) {
        uint16_t len = (uint16_t)strlen(t[i].name);
        uint64_t c = t[i].count;
        put(&w, &len, 2);
        put(&w, t[i].name, len);
        put(&w, &c, 8);
        put(&w, t[i].data, t[i].count * sizeof(float));
    }
    uint32_t crc = (uint32_t)w.crc;
    if (fwrite(&crc, 4, 1, w.f) != 1) w.bad = 1;
    if (fflush(w.f) || fsync(fileno(w.f))) w.bad = 1;
    if (fclose(w.f) || w.bad) {
        unlink(tmp);
        return dp_fail(err, DP_EIO, "%s: write failed: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) < 0) {
        unlink(tmp);
        return dp_fail(err, DP_EIO, "%s: rename failed: %s", path, strerror(errno));
    }
    /* The "checkpoint" index file, TensorFlow style, also replaced atomically. */
    char idx[1100], idx_tmp[1200];
    snprintf(idx, sizeof idx, "%s/checkpoint", dir);
    snprintf(idx_tmp, sizeof idx_tmp, "%s.tmp.%d", idx, (int)getpid());
    FILE *f = fopen(idx_tmp, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", idx_tmp, strerror(errno));
    fprintf(f, "model_checkpoint_path: \"%s\"\n", name);
    int bad = fflush(f) || fsync(fileno(f));
    if (fclose(f) || bad || rename(idx_tmp, idx) < 0) {
        unlink(idx_tmp);
        return dp_fail(err, DP_EIO, "%s: write failed: %s", idx, strerror(errno));
    }
    if (path_out) snprintf(path_out, 1024, "%s", path);
    return DP_OK;
}

int ckpt_latest(const char *dir, char *path_out, char *err)
{
    char idx[1100];
    snprintf(idx, sizeof idx, "%s/checkpoint", dir);
    FILE *f = fopen(idx, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        return dp_fail(err, DP_EIO, "%s: %s", idx, strerror(errno));
    }
    char line[512], name[256];
    int ok = fgets(line, sizeof line, f) && sscanf(line, "model_checkpoint_path: \"%255[^\"]\"", name) == 1;
    fclose(f);
    if (!ok || strchr(name, '/'))
        return dp_fail(err, DP_ECORRUPT, "%s: line 1: expected model_checkpoint_path: \"model.ckpt-N\"", idx);
    snprintf(path_out, 1024, "%s/%s", dir, name);
    return 1;
}

typedef struct rbuf { const uint8_t *p; size_t len, off; } rbuf;

static int take(rbuf *r, void *dst, size_t n)
{
    if (r->len - r->off < n) return -1;
    memcpy(dst, r->p + r->off, n);
    r->off += n;
    return 0;
}

int ckpt_read(const char *path, ckpt_loaded *out, char *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 28 || (unsigned long)size > CKPT_MAX_FLOATS * 4 + 65536) {
        fclose(f);
        return dp_fail(err, DP_ECORRUPT, "%s: size %ld is not a checkpoint", path, size);
    }
    uint8_t *buf = xmalloc((size_t)size);
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    int rc = DP_ECORRUPT;
    rbuf r = {buf, got - 4, 0};
    uint32_t stored, ver, cnt;
    char magic[8];
    if (got != (size_t)size) {
        rc = dp_fail(err, DP_EIO, "%s: short read", path);
        goto fail;
    }
    memcpy(&stored, buf + got - 4, 4);
    if ((uint32_t)crc32(crc32(0, NULL, 0), buf, (uInt)(got - 4)) != stored) {
        dp_fail(err, rc, "%s: checksum mismatch (file damaged)", path);
        goto fail;
    }
    if (take(&r, magic, 8) || memcmp(magic, CKPT_MAGIC, 8)) {
        dp_fail(err, rc, "%s: offset 0: not a Downpour checkpoint", path);
        goto fail;
    }
    if (take(&r, &ver, 4) || ver != CKPT_VERSION || take(&r, &out->global_step, 8) ||
        take(&r, &cnt, 4) || cnt > CKPT_MAX_TENSORS) {
        dp_fail(err, rc, "%s: offset 8: bad header", path);
        goto fail;
    }
    for (uint32_t i = 0; i < cnt; i++) {
        uint16_t len;
        uint64_t c;
        size_t at = r.off;
        if (take(&r, &len, 2) || r.len - r.off < len) {
            dp_fail(err, rc, "%s: offset %zu: truncated tensor name", path, at);
            goto fail;
        }
        out->names[i] = xmalloc((size_t)len + 1);
        take(&r, out->names[i], len);
        out->names[i][len] = 0;
        out->n = (int)i + 1;
        if (take(&r, &c, 8) || c > CKPT_MAX_FLOATS || r.len - r.off < c * 4) {
            dp_fail(err, rc, "%s: offset %zu: bad size for tensor %s", path, at, out->names[i]);
            goto fail;
        }
        out->count[i] = (size_t)c;
        out->data[i] = xmalloc(c ? c * 4 : 1);
        take(&r, out->data[i], c * 4);
    }
    if (r.off != r.len) {
        dp_fail(err, rc, "%s: offset %zu: trailing bytes", path, r.off);
        goto fail;
    }
    free(buf);
    return DP_OK;
fail:
    free(buf);
    ckpt_free_loaded(out);
    return rc;
}

void ckpt_free_loaded(ckpt_loaded *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->names[i]);
        free(l->data[i]);
    }
    l->n = 0;
}

int ckpt_load(const char *path, int64_t *global_step, const ckpt_tensor *t, int n, char *err)
{
    ckpt_loaded l;
    int rc = ckpt_read(path, &l, err);
    if (rc) return rc;
    rc = DP_EINVAL;
    if (l.n != n) {
        dp_fail(err, rc, "%s: holds %d tensors, the model has %d", path, l.n, n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(l.names[i], t[i].name) || l.count[i] != t[i].count) {
            dp_fail(err, rc, "%s: tensor %d is %s with %zu floats, the model wants %s with %zu", path,
                    i, l.names[i], l.count[i], t[i].name, t[i].count);
            goto out;
        }
    }
    for (int i = 0; i < n; i++) memcpy(t[i].data, l.data[i], t[i].count * sizeof(float));
    *global_step = l.global_step;
    rc = DP_OK;
out:
    ckpt_free_loaded(&l);
    return rc;
}

/* ---- inspection: `downpour checkpoint info|diff` ------------------------------------ */

int ckpt_read_any(const char *path_or_dir, ckpt_loaded *out, char *err)
{
    char path[1024];
    int rc = ckpt_latest(path_or_dir, path, err);
    if (rc < 0) return rc;
    return ckpt_read(rc == 1 ? path : path_or_dir, out, err);
}

int ckpt_info(FILE *out, const char *path_or_dir, char *err)
{
    ckpt_loaded l;
    int rc = ckpt_read_any(path_or_dir, &l, err);
    if (rc) return rc;
    fprintf(out, "global_step: %lld\n", (long long)l.global_step);
    for (int i = 0; i < l.n; i++) {
        double s = 0, mn = INFINITY, mx = -INFINITY;
        for (size_t k = 0; k < l.count[i]; k++) {
            s += l.data[i][k];
            if (l.data[i][k] < mn) mn = l.data[i][k];
            if (l.data[i][k] > mx) mx = l.data[i][k];
        }
        fprintf(out, "tensor_name: %-18s floats: %8zu  sum: %.6g  min: %.6g  max: %.6g\n",
                l.names[i], l.count[i], s, mn, mx);
    }
    ckpt_free_loaded(&l);
    return 0;
}

/* Largest |x - y| over n floats; a NaN difference counts as infinite. */
static double max_abs_diff(const float *x, const float *y, size_t n)
{
    double md = 0;
    for (size_t k = 0; k < n; k++) {
        double d = fabs((double)x[k] - (double)y[k]);
        if (d > md || isnan(d)) md = isnan(d) ? INFINITY : d;
    }
    return md;
}

int ckpt_diff(FILE *out, const char *a_path, const char *b_path, double tol, int *match, char *err)
{
    ckpt_loaded a, b;
    int rc = ckpt_read_any(a_path, &a, err);
    if (rc) return rc;
    rc = ckpt_read_any(b_path, &b, err);
    if (rc) {
        ckpt_free_loaded(&a);
        return rc;
    }
    int same = a.n == b.n && a.global_step == b.global_step;
    if (a.global_step != b.global_step)
        fprintf(out, "global_step differs: %lld vs %lld\n", (long long)a.global_step,
                (long long)b.global_step);
    for (int i = 0; i < a.n && i < b.n; i++) {
        if (strcmp(a.names[i], b.names[i]) || a.count[i] != b.count[i]) {
            fprintf(out, "%s: shape or name differs from %s\n", a.names[i], b.names[i]);
            same = 0;
            continue;
        }
        double md = max_abs_diff(a.data[i], b.data[i], a.count[i]);
        fprintf(out, "%-18s max |diff| %.3g%s\n", a.names[i], md, md > tol ? "  (over tolerance)" : "");
        if (md > tol) same = 0;
    }
    fprintf(out, "%s\n", same ? "checkpoints match" : "checkpoints differ");
    ckpt_free_loaded(&a);
    ckpt_free_loaded(&b);
    *match = same;
    return 0;
}
