/* internal.h — what lab/run.c and lab/compare.c share: building an engine's
 * configuration from a scenario variant, running one variant into a folder, and the
 * summary sheet. Not for other modules. */
#ifndef LAB_INTERNAL_H
#define LAB_INTERNAL_H

#include <stddef.h>

#include "lab/lab.h"
#include "runtime/config.h"
#include "sim/sim.h"

/* The real runtime's / the simulator's configuration of variant `variant`: defaults,
 * the file's keys, the variant, then o's --set overrides (o may be NULL), then the
 * engine's checks. Keys the engine does not use are listed in skipped (n bytes). */
int lab_config_real(const scenario *s, int variant, const lab_options *o, rt_config *cfg, char *skipped,
                    size_t n, char *err);
int lab_config_sim(const scenario *s, int variant, const lab_options *o, sim_options *so, char *skipped,
                   size_t n, char *err);

/* o's --set KEY=VALUE overrides into an rt_config (engine RUN_REAL) or sim_options
 * (RUN_SIM), through the setter the file's keys go through; an unknown key is refused with
 * the nearest one, and so are the keys of where the output goes (trace, summary, hub,
 * view: --out's). 0 or DP_EINVAL naming the --set. */
int lab_apply_sets(const lab_options *o, int engine, void *ctx, char *err);

/* Only the check of variant `variant`'s configuration for `engine`, as above. */
int lab_config_ok(const scenario *s, int engine, int variant, const lab_options *o, char *err);

/* Runs variant `variant` with `engine` into dir (created): dir/trace.dptrace and
 * dir/summary.json; the summary line goes to stdout. view: the real runtime's live viewer. */
int lab_run_variant(const scenario *s, int engine, int variant, const lab_options *o, const char *dir,
                    int view, char *err);

/* Draws the one-page summary sheet of a trace. */
int lab_sheet(const char *trace, const char *png, const char *title, char *err);

#endif
