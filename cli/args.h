/* args.h — the small argv helpers the hand-parsed subcommands share (cluster, task, local
 * and sim use cluster/run.h's key table instead). */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdio.h>

/* If argv[*i] is "NAME VALUE" or "NAME=VALUE", returns VALUE (advancing *i past a
 * separate value); otherwise NULL. A NAME with no value left prints
 * "downpour: CMD: NAME needs a value" and sets *bad. */
const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, int *bad);

/* Checks the address FLAG of CMD gives (host:port, [v6]:port, :port; listen: port 0
 * picks one) before anything starts: 0, or 2 after one line naming the flag, as every
 * other bad value gets. */
int cli_addr(const char *cmd, const char *flag, const char *addr, int listen);

/* Parses FLAG's "WxH" into *w and *h, each within [min_w or min_h, max]: 0, or 2 after
 * one line naming the flag, the value and the range (*w, *h then unspecified). */
int cli_size(const char *cmd, const char *flag, const char *v, int min_w, int min_h, int max, int *w, int *h);

/* Parses FLAG's integer V within [lo, hi] into *out: 0, or 2 after one line naming the
 * flag, the value and the range, as every bad flag value gets:
 *   downpour: serve: --max-conns "0" must be an integer in 1..10000
 * (cli_long with hi LLONG_MAX: "must be an integer >= LO"). */
int cli_long(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out);
int cli_int(const char *cmd, const char *flag, const char *v, int lo, int hi, int *out);

/* The same for a finite number (hi INFINITY: "must be a number >= LO"). */
int cli_num(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);

/* An argument CMD does not take: one line on stderr, and returns 2 (a usage error's exit
 * status). An argument starting with '-' is an unknown flag; the flag of HELP (the
 * command's --help text) nearest to it is suggested when it is close:
 *   downpour: view: unknown flag "--sped" (did you mean "--speed"? see --help)
 * Anything else is an unexpected argument. */
int cli_unknown(const char *cmd, const char *arg, const char *help);

/* cli_unknown with the help that USAGE writes. */
int cli_unknown_usage(const char *cmd, const char *arg, void (*usage)(FILE *f));

#endif
