/* cmd_run.c — `downpour run`, `downpour compare` and `downpour keys`: dispatch to lab/
 * (scenario files) and cluster/run.h (the key table). Flag parsing only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cmds.h"
#include "common/dp.h"
#include "lab/lab.h"

static const char usage_compare[] =
    "usage: downpour compare FILE [--out DIR] [--set KEY=VALUE]... [--engine real|sim]\n\n"
    "Runs every variant of a scenario's [compare] section (vary = KEY: V1, V2, ...), one\n"
    "after another with the same seed and data, and writes DIR (default out/NAME/):\n"
    "  variants/LABEL/trace.dptrace, variants/LABEL/summary.json   each variant's run\n"
    "  report.md, summary.csv        one row per variant\n"
    "  loss_vs_step.png, loss_vs_time.png, accuracy_vs_time.png, throughput.png,\n"
    "  staleness.png, ps_traffic.png (each with a .csv of its plotted points)\n";

static const char usage_run[] =
    "usage: downpour run FILE [--out DIR] [--no-view] [--quiz] [--set KEY=VALUE]... [--engine real|sim]\n"
    "       downpour run --check FILE...\n\n"
    "Runs a scenario file (scenarios/*.ini) with the engine it names, or the one given (a\n"
    "real scenario can be scaled in the simulator). With a display the live viewer opens\n"
    "(--no-view: headless). DIR (default out/NAME/) gets trace.dptrace, summary.json and\n"
    "sheet.png; the summary line is printed on stdout.\n\n"
    "  --check FILE...   validate scenario files without running them (exit 0 only if all\n"
    "                    are valid; each error names file:line)\n"
    "  --set KEY=VALUE   override a key of the file (repeatable; see downpour keys)\n"
    "  --engine E        real | sim\n"
    "  --out DIR         output folder\n"
    "  --no-view         never open a window\n"
    "  --quiz            a lesson's questions on the terminal before the run, the answers\n"
    "                    after it\n";

static int check_files(int argc, char **argv, int from)
{
    for (int i = from; i < argc; i++)   /* files only: a flag here would be taken for one */
        if (argv[i][0] == '-' && argv[i][1]) return cli_unknown("run --check", argv[i], usage_run);
    int bad = 0, n = 0;
    for (int i = from; i < argc; i++) {
        char err[DP_ERRLEN];
        n++;
        if (lab_check(argv[i], err)) {
            fprintf(stderr, "downpour: run --check: %s\n", err);
            bad++;
        } else {
            printf("ok   %s\n", argv[i]);
        }
    }
    if (n == 0) {
        fprintf(stderr, "downpour: run --check: no files given\n");
        return 2;
    }
    return bad ? 1 : 0;
}

static int run_or_compare(int argc, char **argv)
{
    const char *cmd = argv[0];
    const char *help = strcmp(cmd, "compare") ? usage_run : usage_compare;
    lab_options o;
    lab_options_init(&o);
    const char *file = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(cmd, "run") && !strcmp(argv[i], "--check")) {
            if (i > 1) {   /* what came before would go unchecked */
                fprintf(stderr, "downpour: run: --check comes first and takes only files (\"%s\" is before "
                        "it; see --help)\n", argv[1]);
                return 2;
            }
            return check_files(argc, argv, i + 1);
        } else if ((v = cli_flag_value(cmd, argc, argv, &i, "--out", &bad))) {
            o.out_dir = v;
        } else if ((v = cli_flag_value(cmd, argc, argv, &i, "--set", &bad))) {
            if (o.n_sets == LAB_MAX_SETS) {
                fprintf(stderr, "downpour: %s: at most %d --set\n", cmd, LAB_MAX_SETS);
                return 2;
            }
            o.sets[o.n_sets++] = v;
        } else if ((v = cli_flag_value(cmd, argc, argv, &i, "--engine", &bad))) {
            if (!strcmp(v, "real")) o.engine = RUN_REAL;
            else if (!strcmp(v, "sim")) o.engine = RUN_SIM;
            else {
                fprintf(stderr, "downpour: %s: --engine: \"%s\" is not real or sim\n", cmd, v);
                return 2;
            }
        } else if (!strcmp(cmd, "run") && !strcmp(argv[i], "--no-view")) {
            o.no_view = 1;
        } else if (!strcmp(cmd, "run") && !strcmp(argv[i], "--quiz")) {
            o.quiz = 1;
        } else if (!bad && argv[i][0] == '-') {
            return cli_unknown(cmd, argv[i], help);
        } else if (!bad) {
            if (file) {
                fprintf(stderr, "downpour: %s: one scenario file at a time (\"%s\" and \"%s\")\n", cmd, file,
                        argv[i]);
                return 2;
            }
            file = argv[i];
        }
    }
    if (bad) return 2;
    if (!file) {
        fputs(help, stderr);
        return 2;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        o.self = self;
    }
    if (!strcmp(cmd, "compare")) o.no_view = 1;
    char err[DP_ERRLEN];
    int rc = !strcmp(cmd, "compare") ? lab_compare(file, &o, err) : lab_run(file, &o, err);
    if (rc) {
        fprintf(stderr, "downpour: %s: %s\n", cmd, err);
        return rc == DP_ECLOSED ? 130 : rc == DP_EINVAL ? 2 : 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    return run_or_compare(argc, argv);
}

int cmd_compare(int argc, char **argv)
{
    return run_or_compare(argc, argv);
}

static const char usage_keys[] =
    "usage: downpour keys [--json]\n\n"
    "Prints the run description's key table: every key of scenario files (with its\n"
    "[section]) and every flag of cluster, task and sim, with defaults, ranges, the\n"
    "engines that use it, and help. A key is spelt with underscores in files\n"
    "(backup_workers) and with dashes as a flag (--backup-workers).\n"
    "\n"
    "  --json    the table as JSON\n";

int cmd_keys(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(usage_keys, stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--json")) {
        run_print_keys_json(stdout);
        return 0;
    }
    if (argc > 1) return cli_unknown("keys", argv[argc > 2 && !strcmp(argv[1], "--json") ? 2 : 1], usage_keys);
    run_print_keys(stdout);
    return 0;
}

static const char usage_lessons[] =
    "usage: downpour lessons [--dir DIR]\n\n"
    "Lists the lesson library (scenarios/lessons/NN-name.ini, or DIR, or\n"
    "$DOWNPOUR_LESSONS): number, title, planned duration, and the command that runs\n"
    "it. Notes for each lesson are in docs/lessons/.\n";

/* The library beside the binary (build/downpour of a checkout: its scenarios/lessons),
 * into buf; NULL when there is none. */
static const char *lessons_beside_binary(char *buf, size_t n)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return NULL;
    self[len] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return NULL;
    *slash = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/../scenarios/lessons", self);
    struct stat st;
    if (!realpath(path, buf) || strlen(buf) >= n || stat(buf, &st) || !S_ISDIR(st.st_mode)) return NULL;
    return buf;
}

int cmd_lessons(int argc, char **argv)
{
    const char *dir = getenv("DOWNPOUR_LESSONS") ? getenv("DOWNPOUR_LESSONS") : NULL;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_lessons, stdout);
            return 0;
        } else if ((v = cli_flag_value("lessons", argc, argv, &i, "--dir", &bad))) {
            dir = v;
        } else {
            return bad ? 2 : cli_unknown("lessons", argv[i], usage_lessons);
        }
    }
    char beside[PATH_MAX];
    struct stat st;
    if (!dir) {   /* the checkout's folder when here, else the one beside the binary */
        dir = "scenarios/lessons";
        if (stat(dir, &st) && lessons_beside_binary(beside, sizeof beside)) dir = beside;
    }
    char err[DP_ERRLEN];
    if (lab_lessons(stdout, dir, err)) {
        fprintf(stderr, "downpour: lessons: %s%s\n", err,
                stat(dir, &st) ? " (run it in the Downpour folder, or give --dir DIR or $DOWNPOUR_LESSONS)" : "");
        return 1;
    }
    return 0;
}

static const char usage_fork[] =
    "usage: downpour fork TRACE --at-step N [--set KEY=VALUE]... [--out FORK.dptrace]\n\n"
    "Fork from here: the recorded run TRACE continues from global step N in the\n"
    "simulator with KEY changed (add a backup worker, switch to async, slow a worker,\n"
    "add a ps). The simulator is calibrated from the trace up to step N; the fork's\n"
    "events start at global step N + 1 on the recorded run's clock, so\n"
    "`downpour view TRACE --compare FORK` shows both from the same instant (the fork\n"
    "is labelled simulated). Default output: TRACE without .dptrace + -fork-N.dptrace.\n"
    "It runs to the recorded run's last step, or to --set steps=N; without --set it is\n"
    "the simulator's own continuation of the run as recorded.\n";

int cmd_fork(int argc, char **argv)
{
    lab_options o;
    lab_options_init(&o);
    const char *trace = NULL, *out = NULL, *v;
    long long at = -1;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_fork, stdout);
            return 0;
        } else if ((v = cli_flag_value("fork", argc, argv, &i, "--at-step", &bad))) {
            if (cli_long("fork", "--at-step", v, 1, LLONG_MAX, &at)) return 2;
        } else if ((v = cli_flag_value("fork", argc, argv, &i, "--set", &bad))) {
            if (o.n_sets == LAB_MAX_SETS) {
                fprintf(stderr, "downpour: fork: at most %d --set\n", LAB_MAX_SETS);
                return 2;
            }
            o.sets[o.n_sets++] = v;
        } else if ((v = cli_flag_value("fork", argc, argv, &i, "--out", &bad))) {
            out = v;
        } else if (bad) {
            return 2;
        } else if (argv[i][0] == '-') {
            return cli_unknown("fork", argv[i], usage_fork);
        } else if (trace) {
            fprintf(stderr, "downpour: fork: one trace at a time\n");
            return 2;
        } else {
            trace = argv[i];
        }
    }
    if (!trace || at < 1) {
        fprintf(stderr, "downpour: fork: needs TRACE and --at-step N (see --help)\n");
        return 2;
    }
    char def[4200];
    if (!out) {
        size_t l = strlen(trace);
        int cut = l > 8 && !strcmp(trace + l - 8, ".dptrace") ? (int)(l - 8) : (int)l;
        snprintf(def, sizeof def, "%.*s-fork-%lld.dptrace", cut, trace, at);
        out = def;
    }
    char err[DP_ERRLEN];
    int rc = lab_fork(trace, at, &o, out, err);
    if (rc) {
        fprintf(stderr, "downpour: fork: %s\n", err);
        return rc == DP_EINVAL ? 2 : 1;
    }
    return 0;
}
