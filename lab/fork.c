/* fork.c — "fork from here": at global step N of a recorded run, change one or more keys
 * and let the simulator continue from that moment. The simulator is calibrated from the
 * trace up to step N only (sim_calibrate_until), the changed keys win over the
 * calibration, and its events are written as the recorded run's continuation: global
 * step N + 1 onwards, from the time step N was reached, the surrogate's loss starting at
 * the recorded loss level (sim_config's fork fields). The fork's metadata names the run
 * it forks, the step and the keys changed; it is a simulation and says so (engine sim). */
#include "lab/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "common/dp.h"

static char *fork_meta(const char *trace, int64_t at_step, const lab_options *o)
{
    json_t *f = json_object(), *sets = json_array();
    json_object_set_new(f, "from", json_string(trace));
    json_object_set_new(f, "at_step", json_integer((json_int_t)at_step));
    for (int i = 0; i < o->n_sets; i++) json_array_append_new(sets, json_string(o->sets[i]));
    json_object_set_new(f, "set", sets);
    json_object_set_new(f, "note", json_string("simulated continuation of a recorded run"));
    char *s = json_dumps(f, JSON_COMPACT);
    json_decref(f);
    return s;
}

int lab_fork(const char *trace, int64_t at_step, const lab_options *o, const char *out_trace, char *err)
{
    struct stat in, out;
    if (!strcmp(trace, out_trace) ||
        (stat(trace, &in) == 0 && stat(out_trace, &out) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino))
        return dp_fail(err, DP_EINVAL, "--out %s: that is the recorded run itself; the fork needs a file of "
                       "its own", out_trace);
    sim_options *so = xmalloc(sizeof *so);
    sim_calibration cal;
    memset(&cal, 0, sizeof cal);
    char *meta = NULL;
    sim_options_init(so);
    int rc = DP_OK;
    /* the changed keys first: calibration fills only what was not given */
    rc = lab_apply_sets(o, RUN_SIM, so, err);
    if (rc) goto out;
    rc = sim_calibrate_until(trace, at_step, &cal, err);
    if (rc) goto out;
    if (cal.until_step < at_step) {
        rc = dp_fail(err, DP_EINVAL, "%s: the run never reached global step %lld (it ends at %lld)", trace,
                     (long long)at_step, (long long)cal.until_step);
        goto out;
    }
    sim_options_calibrate(so, &cal);
    sim_config *c = &so->c;
    int64_t last = c->steps;   /* the recorded run's, or --set steps=N's */
    if (last <= at_step) {
        if (last != cal.steps)
            rc = dp_fail(err, DP_EINVAL, "--set steps=%lld: the fork starts after global step %lld; give a "
                         "later step to continue to", (long long)last, (long long)at_step);
        else
            rc = dp_fail(err, DP_EINVAL, "%s: global step %lld is the run's last (steps = %d): nothing to "
                         "continue (--set steps=N continues further)", trace, (long long)at_step, cal.steps);
        goto out;
    }
    c->steps = (int)(last - at_step);
    c->step_offset = at_step;
    c->local_offset = c->mode == MODE_ASYNC ? at_step / (c->n_workers > 0 ? c->n_workers : 1) : at_step;
    c->time_offset_ns = cal.until_ns;
    c->loss_start = isfinite(cal.until_loss) ? cal.until_loss : 0;
    meta = fork_meta(trace, at_step, o);
    c->fork_json = meta;
    snprintf(c->trace, sizeof c->trace, "%s", out_trace);
    rc = sim_config_check(c, err);
    if (rc) goto out;
    fprintf(stderr, "downpour: fork: %s at global step %lld (t = %.3f s), continued by the simulator to "
                    "step %lld\n", trace, (long long)at_step, (double)cal.until_ns / 1e9, (long long)last);
    sim_result r;
    rc = sim_run(c, &r, err);
    if (!rc) {
        char *line = sim_summary_line(c, &r, 0);
        printf("%s\n", line);
        free(line);
        fprintf(stderr, "downpour: fork: wrote %s (simulated); side by side: downpour view %s --compare %s\n",
                out_trace, trace, out_trace);
    }
out:
    sim_calibration_release(&cal);
    free(meta);
    free(so);
    return rc;
}
