/* local.h — `downpour local`: one task (job localhost, no ps) training on several devices
 * of this machine, as the strategy says (runtime/towers.h): variables on /cpu:0, the
 * optimizer applied there once per step, the same events as the cluster runtime (a
 * trace, a live viewer) and the same summary JSON line (engine "local"). */
#ifndef RUNTIME_LOCAL_H
#define RUNTIME_LOCAL_H

#include "runtime/config.h"

/* Runs cfg's training (strategy, cpu_devices, device_for, ...) to cfg->steps. self is the
 * downpour binary, for --view's viewer (may be NULL: no viewer). Prints the summary line
 * on stdout. Returns 0, or a dp_err with err (placement errors in TensorFlow's words). */
int local_run(const rt_config *cfg, const char *self, char *err);

/* "single", "towers" or "split". */
const char *local_strategy_name(int strategy);

#endif
