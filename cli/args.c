/* args.c — shared argv helper for the subcommands (see args.h). */
#include "cli/args.h"

#include <stdio.h>
#include <string.h>

const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, int *bad)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n]) return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "downpour: %s: %s needs a value\n", cmd, name);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}
