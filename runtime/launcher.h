/* launcher.h — `downpour cluster`: runs a whole cluster on this machine as separate
 * processes (`downpour task` children on free loopback ports, and a hub when a trace is
 * asked for), lets their progress through, forwards Ctrl-C, reaps every child, names the
 * task that died if one does, and prints the run's summary JSON line. */
#ifndef RUNTIME_LAUNCHER_H
#define RUNTIME_LAUNCHER_H

#include "runtime/config.h"

/* Runs the cluster described by cfg; self is the path of the downpour binary to exec
 * for the children. Returns 0 when every task finished cleanly, else a dp_err with err
 * naming the failing task. */
int launcher_run(const rt_config *cfg, const char *self, char *err);

#endif
