/* cmd_cluster.c — `downpour cluster`: a whole local cluster in one command. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "common/dp.h"
#include "runtime/ckpt.h"
#include "runtime/config.h"
#include "runtime/data.h"
#include "runtime/launcher.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour cluster --ps N --workers N --mode sync|async|ssp [flags]\n\n"
               "Runs a real ps/worker cluster on this machine: every task is a separate\n"
               "`downpour task` process on a free loopback port (with --netns or --net: in a network\n"
               "namespace of its own, as on a separate host). Prints progress, then one JSON\n"
               "summary line on stdout. Ctrl-C stops every task.\n\nflags:\n");
    rt_config_usage(f, RT_FLAG_TRAIN | RT_FLAG_CLUSTER);
}

int cmd_cluster(int argc, char **argv)
{
    rt_config cfg;
    rt_config_init(&cfg);
    char err[DP_ERRLEN];
    int rc = rt_parse_args(&cfg, RT_FLAG_TRAIN | RT_FLAG_CLUSTER, argc, argv, NULL, NULL, err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc == 0) rc = rt_config_check(&cfg, err);
    if (rc == 0) rc = rt_config_check_saves(&cfg, err);
    if (rc == 0) rc = dataset_check(cfg.data, err);   /* before any task starts */
    if (rc == 0) rt_config_warn_unread(&cfg, "cluster");
    if (rc == 0) rc = rt_config_apply_secret(&cfg, err);
    if (rc == 0 && cfg.checkpoint_dir[0]) rc = ckpt_dir_check(cfg.checkpoint_dir, err);
    if (rc < 0) {
        fprintf(stderr, "downpour: cluster: %s\n", err);
        return 2;
    }
    if (cfg.trace[0] && cfg.hub[0]) {
        fprintf(stderr, "downpour: cluster: give --trace (start our own hub) or --hub (use one), not both\n");
        return 2;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "downpour: cluster: cannot find the downpour binary (/proc/self/exe)\n");
        return 1;
    }
    self[n] = 0;
    rc = launcher_run(&cfg, self, err);
    if (rc) {
        fprintf(stderr, "downpour: cluster: %s\n", err);
        return rc == DP_ECLOSED ? 130 : 1;
    }
    return 0;
}
