/* task.h — the two kinds of task a Downpour cluster runs, each one process:
 *   ps:     serves its shard of the variables on one libev loop, applies updates with the
 *           configured optimizer and update rule (cluster/update.h), until every worker
 *           says DONE (or SIGTERM);
 *   worker: connects to every ps (retrying with backoff), pulls, computes on its data
 *           shard, pushes, until the global step reaches --steps; worker 0 is the chief
 *           (initialises or restores variables, evaluates, writes checkpoints).
 * Both print one JSON line of statistics on stdout when they finish, which the
 * launcher (`downpour cluster`) aggregates into the run summary. */
#ifndef RUNTIME_TASK_H
#define RUNTIME_TASK_H

#include "cluster/spec.h"
#include "runtime/config.h"

/* Runs ps task `index` of spec until done. Returns 0, or a dp_err with err filled. */
int ps_run(const rt_config *cfg, const cluster_spec *spec, int index, char *err);

/* Runs worker task `index` of spec until the global step reaches cfg->steps. */
int worker_run(const rt_config *cfg, const cluster_spec *spec, int index, char *err);

/* Set by SIGINT/SIGTERM handlers: tasks stop at the next safe point. */
extern volatile int rt_stop_requested;

#endif
