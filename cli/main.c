/* main.c — the `downpour` command: git-style dispatch to subcommands, nothing else. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "runtime/blas.h"

#ifndef DP_GIT_REV
#define DP_GIT_REV "unknown"   /* built without the Makefile */
#endif

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"cluster", cmd_cluster, "run a real local cluster (ps and worker processes on loopback)"},
    {"local", cmd_local, "train in one task on several devices (job localhost): single, towers, split"},
    {"task", cmd_task, "run one task of a cluster, TensorFlow style (--job_name, --task_index)"},
    {"hub", cmd_hub, "collect events from tasks, record a trace, serve viewers"},
    {"trace", cmd_trace, "info | stats | validate | captions | export --chrome: work with traces"},
    {"checkpoint", cmd_checkpoint, "inspect or compare checkpoints (like inspect_checkpoint)"},
    {"view", cmd_view, "watch a run: replay a trace, or --connect to a live hub"},
    {"render", cmd_render, "draw frames of a trace to PNG / PDF / SVG without a display"},
    {"sim", cmd_sim, "simulate a large cluster in virtual time (same events, surrogate loss)"},
    {"run", cmd_run, "run a scenario file (scenarios/*.ini); --check validates files"},
    {"compare", cmd_compare, "run a scenario's variants and write a report folder"},
    {"keys", cmd_keys, "the run description's key table (scenario keys and flags)"},
    {"lessons", cmd_lessons, "list the lesson library (scenarios/lessons)"},
    {"fork", cmd_fork, "continue a recorded run from a step in the simulator, one key changed"},
    {"serve", cmd_serve, "serve a trace as a web page: the class follows in a browser"},
    {"completion", cmd_completion, "print the bash completion script (eval \"$(downpour completion bash)\")"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour <command> [flags]   (downpour <command> --help for its flags)\n\n"
               "Downpour re-creates TensorFlow's parameter-server training runtime so that you can\n"
               "watch distributed training happen.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\ndownpour --version names the build: its commit, its BLAS and whether CUDA is in.\n");
}

/* What a bug report needs: the commit, and the math this build and this CPU run. */
static void version(void)
{
    printf("downpour (git %s)\n", DP_GIT_REV);
    printf("BLAS: %s, core %s\n", openblas_get_config(), openblas_get_corename());
#if DP_HAVE_CUDA
    printf("CUDA: built (a GPU is used when one is present: docs/gpu.md)\n");
#else
    printf("CUDA: not built (make CUDA=0, or no nvcc: docs/gpu.md)\n");
#endif
}

int main(int argc, char **argv)
{
    /* OpenBLAS's kernel for this CPU, and one BLAS thread for a task (runtime/blas.c) */
    rt_blas_tune(argv, argc > 1 && !strcmp(argv[1], "task"));
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        version();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "downpour: unknown command \"%s\" (see downpour --help)\n", argv[1]);
    return 2;
}
