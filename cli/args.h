/* args.h — the small argv helper the hand-parsed subcommands share (cluster and task use
 * runtime/config.h's table instead). */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

/* If argv[*i] is "NAME VALUE" or "NAME=VALUE", returns VALUE (advancing *i past a
 * separate value); otherwise NULL. A NAME with no value left prints
 * "downpour: CMD: NAME needs a value" and sets *bad. */
const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, int *bad);

#endif
