/* cmd_local.c — `downpour local`: one task, several devices (job localhost, no ps). */
#include <stdio.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "common/dp.h"
#include "runtime/ckpt.h"
#include "runtime/config.h"
#include "runtime/data.h"
#include "runtime/local.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour local [--strategy single|towers|split] [--cpu-devices N] [flags]\n\n"
               "Trains in this one process (job localhost) on its devices: the GPUs when there\n"
               "are some, else N virtual CPU devices, each with its own thread. Prints progress,\n"
               "then one JSON summary line on stdout.\n\nflags:\n");
    rt_config_usage(f, RT_FLAG_LOCAL);
}

int cmd_local(int argc, char **argv)
{
    rt_config cfg;
    rt_config_init(&cfg);
    char err[DP_ERRLEN];
    int rc = rt_parse_args(&cfg, RT_FLAG_LOCAL, argc, argv, NULL, NULL, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc == 0) rc = rt_config_check_saves(&cfg, err);
    if (rc == 0) rc = dataset_check(cfg.data, err);
    if (rc == 0) rt_config_warn_unread(&cfg, "local");
    if (rc == 0 && cfg.checkpoint_dir[0]) rc = ckpt_dir_check(cfg.checkpoint_dir, err);   /* as cluster's */
    if (rc < 0) {
        fprintf(stderr, "downpour: local: %s\n", err);
        return 2;
    }
    if (cfg.trace[0] && cfg.hub[0]) {
        fprintf(stderr, "downpour: local: give --trace (start our own hub) or --hub (use one), not both\n");
        return 2;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) self[n] = 0;
    rc = local_run(&cfg, n > 0 ? self : NULL, err);
    if (rc) {
        fprintf(stderr, "downpour: local: %s\n", err);
        return rc == DP_EINVAL ? 2 : rc == DP_ECLOSED ? 130 : 1;
    }
    return 0;
}
