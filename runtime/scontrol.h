/* scontrol.h — a Slurm node list expanded by Slurm itself: `scontrol show hostnames LIST`
 * (hostlist syntax has corners — zero padding, nested ranges, several bracket groups —
 * that only Slurm's own parser gets right). The one I/O half of the Slurm resolver
 * (cluster/resolver.h); a resolver_hostnames_fn. Spawns a process and waits for it:
 * call before any thread starts. */
#ifndef RUNTIME_SCONTROL_H
#define RUNTIME_SCONTROL_H

/* Runs `PROGRAM show hostnames nodelist` (no shell: the list is one argument), where
 * PROGRAM is ctx (a const char *: a path, or a name looked up on PATH) or "scontrol" when
 * ctx is NULL or "". Its standard error passes through. Fills *hosts with a new array of
 * *n new strings, one per non-empty output line (the caller frees with
 * resolver_hosts_free). Errors, one line in err: the program not found (naming it and
 * $DOWNPOUR_SCONTROL), not executable, exiting non-zero or killed, printing nothing or
 * more than 16 MiB. Returns 0, DP_ENOTFOUND (no such program) or DP_ERR. */
int scontrol_hostnames(void *ctx, const char *nodelist, char ***hosts, int *n, char *err);

#endif
