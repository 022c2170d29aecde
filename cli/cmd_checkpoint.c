/* cmd_checkpoint.c — `downpour checkpoint`: list a checkpoint's tensors (TensorFlow's
 * inspect_checkpoint) or compare two checkpoints within a tolerance. Argument parsing
 * only; the work is runtime/ckpt.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "runtime/ckpt.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour checkpoint info DIR|FILE\n"
               "       downpour checkpoint diff A B [--tol X]   (A, B: checkpoint dirs or files)\n\n"
               "info lists the global step and every tensor (name, size, checksum, min/max).\n"
               "diff prints the largest difference per tensor; it exits 0 when both are at the\n"
               "same global step and every tensor matches within --tol (max absolute\n"
               "difference, default 1e-5), 1 otherwise.\n");
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
    const char *sub = argv[1];
    if (strcmp(sub, "info") && strcmp(sub, "diff")) {
        fprintf(stderr, "downpour: checkpoint: unknown command '%s' (see downpour checkpoint --help)\n", sub);
        return 2;
    }
    const char *cmd = !strcmp(sub, "info") ? "checkpoint info" : "checkpoint diff";
    const char *paths[2];
    int n = 0, want = !strcmp(sub, "info") ? 1 : 2;
    double tol = 1e-5;
    for (int i = 2; i < argc; i++) {
        int bad = 0;
        const char *v;
        if (want == 2 && (v = cli_flag_value(cmd, argc, argv, &i, "--tol", &bad))) {
            if (cli_num(cmd, "--tol", v, 0, INFINITY, &tol)) return 2;
        } else if (bad) {
            return 2;
        } else if ((argv[i][0] == '-' && argv[i][1]) || n == want) {
            return cli_unknown_usage(cmd, argv[i], usage);
        } else {
            paths[n++] = argv[i];
        }
    }
    if (n < want) {
        fprintf(stderr, "downpour: %s: expected %s (see downpour checkpoint --help)\n", cmd,
                want == 1 ? "one DIR|FILE" : "A B [--tol X]");
        return 2;
    }
    if (want == 1) {
        if (ckpt_info(stdout, paths[0], err)) {
            fprintf(stderr, "downpour: checkpoint: %s\n", err);
            return 1;
        }
        return 0;
    }
    int match;
    if (ckpt_diff(stdout, paths[0], paths[1], tol, &match, err)) {
        fprintf(stderr, "downpour: checkpoint: %s\n", err);
        return 1;
    }
    return match ? 0 : 1;
}
