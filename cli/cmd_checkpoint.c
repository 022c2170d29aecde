/* cmd_checkpoint.c — `downpour checkpoint`: list a checkpoint's tensors (TensorFlow's
 * inspect_checkpoint) or compare two checkpoints within a tolerance. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "common/dp.h"
#include "runtime/ckpt.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour checkpoint info DIR|FILE\n"
               "       downpour checkpoint diff A B [--tol X]   (A, B: checkpoint dirs or files)\n\n"
               "info lists the global step and every tensor (name, size, checksum, min/max).\n"
               "diff exits 0 when every tensor matches within --tol (max absolute difference,\n"
               "default 1e-5), 1 otherwise, and prints the largest difference per tensor.\n");
}

/* A directory resolves through its "checkpoint" file to the latest checkpoint. */
static int open_ckpt(const char *arg, ckpt_loaded *l, char *err)
{
    char path[1024];
    int rc = ckpt_latest(arg, path, err);
    if (rc < 0) return rc;
    return ckpt_read(rc == 1 ? path : arg, l, err);
}

int cmd_checkpoint(int argc, char **argv)
{
    char err[DP_ERRLEN];
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "info") && argc == 3) {
        ckpt_loaded l;
        if (open_ckpt(argv[2], &l, err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            return 1;
        }
        printf("global_step: %lld\n", (long long)l.global_step);
        for (int i = 0; i < l.n; i++) {
            double s = 0, mn = INFINITY, mx = -INFINITY;
            for (size_t k = 0; k < l.count[i]; k++) {
                s += l.data[i][k];
                if (l.data[i][k] < mn) mn = l.data[i][k];
                if (l.data[i][k] > mx) mx = l.data[i][k];
            }
            printf("tensor_name: %-18s floats: %8zu  sum: %.6g  min: %.6g  max: %.6g\n", l.names[i],
                   l.count[i], s, mn, mx);
        }
        ckpt_free_loaded(&l);
        return 0;
    }
    if (!strcmp(argv[1], "diff") && (argc == 4 || argc == 6)) {
        double tol = 1e-5;
        if (argc == 6 && (strcmp(argv[4], "--tol") || dp_parse_double(argv[5], &tol) || tol < 0)) {
            fprintf(stderr, "downpour: checkpoint diff: expected --tol X (X >= 0)\n");
            return 2;
        }
        ckpt_loaded a, b;
        if (open_ckpt(argv[2], &a, err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            return 1;
        }
        if (open_ckpt(argv[3], &b, err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            ckpt_free_loaded(&a);
            return 1;
        }
        int same = a.n == b.n && a.global_step == b.global_step;
        if (a.global_step != b.global_step)
            printf("global_step differs: %lld vs %lld\n", (long long)a.global_step, (long long)b.global_step);
        for (int i = 0; i < a.n && i < b.n; i++) {
            if (strcmp(a.names[i], b.names[i]) || a.count[i] != b.count[i]) {
                printf("%s: shape or name differs from %s\n", a.names[i], b.names[i]);
                same = 0;
                continue;
            }
            double md = 0;
            for (size_t k = 0; k < a.count[i]; k++) {
                double d = fabs((double)a.data[i][k] - (double)b.data[i][k]);
                if (d > md || isnan(d)) md = isnan(d) ? INFINITY : d;
            }
            printf("%-18s max |diff| %.3g%s\n", a.names[i], md, md > tol ? "  (over tolerance)" : "");
            if (md > tol) same = 0;
        }
        printf("%s\n", same ? "checkpoints match" : "checkpoints differ");
        ckpt_free_loaded(&a);
        ckpt_free_loaded(&b);
        return same ? 0 : 1;
    }
    usage(stderr);
    return 2;
}
