/* cmd_checkpoint.c — `downpour checkpoint`: list a checkpoint's tensors (TensorFlow's
 * inspect_checkpoint) or compare two checkpoints within a tolerance. Argument parsing
 * only; the work is runtime/ckpt.c. */
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

int cmd_checkpoint(int argc, char **argv)
{
    char err[DP_ERRLEN];
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++)   /* `checkpoint info --help` too, never a file named so */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (strcmp(argv[1], "info") && strcmp(argv[1], "diff")) {
        fprintf(stderr, "downpour: checkpoint: unknown command '%s' (see downpour checkpoint --help)\n", argv[1]);
        return 2;
    }
    if (!strcmp(argv[1], "info") && argc == 3) {
        if (ckpt_info(stdout, argv[2], err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (!strcmp(argv[1], "diff") && (argc == 4 || argc == 6)) {
        double tol = 1e-5;
        int match;
        if (argc == 6 && (strcmp(argv[4], "--tol") || dp_parse_double(argv[5], &tol) || tol < 0)) {
            fprintf(stderr, "downpour: checkpoint diff: expected --tol X (X >= 0)\n");
            return 2;
        }
        if (ckpt_diff(stdout, argv[2], argv[3], tol, &match, err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            return 1;
        }
        return match ? 0 : 1;
    }
    fprintf(stderr, "downpour: checkpoint %s: expected %s (see downpour checkpoint --help)\n", argv[1],
            !strcmp(argv[1], "info") ? "one DIR|FILE" : "A B [--tol X]");
    return 2;
}
