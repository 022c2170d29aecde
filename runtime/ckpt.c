/* ckpt.c — atomic checkpoint files (see ckpt.h). */
#include "runtime/ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
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

int ckpt_due(int64_t gs, int64_t saved_step, uint64_t saved_ns, uint64_t now_ns, int every_steps,
             int every_secs)
{
    if (gs <= saved_step) return 0;
    return (every_steps > 0 && gs / every_steps > saved_step / every_steps) ||
           (every_secs > 0 && now_ns - saved_ns >= (uint64_t)every_secs * 1000000000ull);
}

int ckpt_dir_check(const char *dir, char *err)
{
    char why[DP_ERRLEN];
    if (dp_mkdirs(dir, why))   /* with its parents, as TensorFlow's Saver makes it */
        return dp_fail(err, DP_EIO, "--checkpoint-dir %s: cannot create it (%s)", dir, why);
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return dp_fail(err, DP_EIO, "--checkpoint-dir %s: not a directory", dir);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/.write-test.%d", dir, (int)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) return dp_fail(err, DP_EIO, "--checkpoint-dir %s: cannot write there: %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return DP_OK;
}

/* fsync of the directory, so that a rename in it survives a crash. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

/* The names the index lists (all_model_checkpoint_paths, oldest first), without `skip`;
 * returns their count (at most max). A missing or foreign index lists none. */
static int index_names(const char *dir, const char *skip, char names[][64], int max)
{
    char idx[1100], line[512], name[256];
    snprintf(idx, sizeof idx, "%s/checkpoint", dir);
    FILE *f = fopen(idx, "r");
    if (!f) return 0;
    int n = 0;
    char latest[64] = "";
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "model_checkpoint_path: \"%255[^\"]\"", name) == 1 && strlen(name) < 64)
            snprintf(latest, sizeof latest, "%s", name);
        if (sscanf(line, "all_model_checkpoint_paths: \"%255[^\"]\"", name) != 1) continue;
        if (strchr(name, '/') || strncmp(name, "model.ckpt-", 11) || strlen(name) >= 64 || !strcmp(name, skip))
            continue;
        if (n == max) {   /* keep the newest max */
            memmove(names[0], names[1], (size_t)(max - 1) * sizeof names[0]);
            n--;
        }
        snprintf(names[n++], 64, "%s", name);
    }
    fclose(f);
    /* An index of one line (before the list was kept) names only its latest. */
    if (!n && latest[0] && !strchr(latest, '/') && !strncmp(latest, "model.ckpt-", 11) && strcmp(latest, skip))
        snprintf(names[n++], 64, "%s", latest);
    return n;
}

int ckpt_save(const char *dir, int64_t global_step, const ckpt_tensor *t, int n, char *path_out,
              char *err)
{
    char why[DP_ERRLEN];
    if (dp_mkdirs(dir, why)) return dp_fail(err, DP_EIO, "cannot create checkpoint directory %s", why);
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
    /* The "checkpoint" index file, TensorFlow style, also replaced atomically: the latest,
     * then every kept one, oldest first. Checkpoints beyond the last CKPT_KEEP go once
     * the index no longer names them. */
    char keep[CKPT_KEEP + 1][64];
    int nk = index_names(dir, name, keep, CKPT_KEEP + 1);
    snprintf(keep[nk++], 64, "%s", name);
    int first = nk > CKPT_KEEP ? nk - CKPT_KEEP : 0;
    char idx[1100], idx_tmp[1200];
    snprintf(idx, sizeof idx, "%s/checkpoint", dir);
    snprintf(idx_tmp, sizeof idx_tmp, "%s.tmp.%d", idx, (int)getpid());
    FILE *f = fopen(idx_tmp, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", idx_tmp, strerror(errno));
    fprintf(f, "model_checkpoint_path: \"%s\"\n", name);
    for (int i = first; i < nk; i++) fprintf(f, "all_model_checkpoint_paths: \"%s\"\n", keep[i]);
    int bad = fflush(f) || fsync(fileno(f));
    if (fclose(f) || bad || rename(idx_tmp, idx) < 0) {
        unlink(idx_tmp);
        return dp_fail(err, DP_EIO, "%s: write failed: %s", idx, strerror(errno));
    }
    sync_dir(dir);
    for (int i = 0; i < first; i++) {
        char old[1100];
        snprintf(old, sizeof old, "%s/%s", dir, keep[i]);
        unlink(old);
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
        /* ENOTDIR: dir is a file (a checkpoint itself), so it has no index. */
        if (errno == ENOENT || errno == ENOTDIR) return 0;
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
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return dp_fail(err, DP_EIO, "%s: a directory without a \"checkpoint\" index file: no checkpoint "
                       "saved there", path);
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
    /* the magic first: another kind of file is not "damaged" */
    if (take(&r, magic, 8) || memcmp(magic, CKPT_MAGIC, 8)) {
        dp_fail(err, rc, "%s: offset 0: not a Downpour checkpoint", path);
        goto fail;
    }
    memcpy(&stored, buf + got - 4, 4);
    if ((uint32_t)crc32(crc32(0, NULL, 0), buf, (uInt)(got - 4)) != stored) {
        dp_fail(err, rc, "%s: checksum mismatch (file damaged)", path);
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
    int at[CKPT_MAX_TENSORS];
    for (int i = 0; i < n; i++) {
        at[i] = -1;
        for (int k = 0; k < l.n && at[i] < 0; k++)
            if (!strcmp(l.names[k], t[i].name)) at[i] = k;
        if (at[i] < 0) {
            /* An optimizer slot ("hidden/weights/Momentum") is missing when the checkpoint
             * was written with another optimizer. */
            dp_fail(err, rc, "%s: has no tensor %s%s", path, t[i].name,
                    strchr(t[i].name, '/') && (strstr(t[i].name, "/Momentum") || strstr(t[i].name, "/Adagrad"))
                        ? " (an optimizer slot: was it saved with another --optimizer?)" : "");
            goto out;
        }
        if (l.count[at[i]] != t[i].count) {
            dp_fail(err, rc, "%s: tensor %s has %zu floats, the model wants %zu", path, t[i].name,
                    l.count[at[i]], t[i].count);
            goto out;
        }
    }
    if (l.n != n) {
        dp_fail(err, rc, "%s: holds %d tensors, the model has %d (saved with another --optimizer?)", path,
                l.n, n);
        goto out;
    }
    for (int i = 0; i < n; i++) memcpy(t[i].data, l.data[at[i]], t[i].count * sizeof(float));
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
