/* trace_stats.c — `downpour trace stats`: where each worker's time went, phase by phase,
 * as the viewer shows it (trace_tool.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"
#include "events/trace_tool.h"

static const int *const shown = trace_tool_phase_order;   /* the tables' phases, in order */
enum { N_SHOWN = TRACE_TOOL_PHASES, MAX_ROWS = 32, SLOW_ROWS = 8 };

typedef struct ts_worker {
    int seen, phase;
    int64_t since;                 /* when its phase last changed */
    double s[EVT_PHASE_COUNT];     /* seconds spent in each phase */
    int64_t steps;
    int64_t last_pushes;           /* sync: global steps it pushed last to */
    double wall_s, step_s;         /* its time until it stopped, and that (less any time
                                    * dead) per step */
} ts_worker;

/* Sync: per global step, the latest gradient push to end and its worker. */
typedef struct ts_last {
    int64_t t;
    int32_t w;                     /* -1: none */
} ts_last;

typedef struct ts_run {
    ts_worker *w;
    int n;                         /* workers[0 .. n) */
    evt_state st;
    char engine[16], mode[16];
    long long backup;              /* the metadata's backup_workers */
    ts_last *last;                 /* sync: by global step, [0 .. n_last) */
    int64_t n_last, last_steps;    /* its length; the steps any push ended in */
} ts_run;

/* Global steps past this are not followed for "last to push" (a file's step numbers
 * must not size an allocation beyond a few tens of MB). */
#define TS_MAX_LAST_STEPS (1 << 22)

/* Charges x's time from its phase's start to t to that phase (the reader keeps every
 * time within the trace's [t0, t1], whose span fits in int64). */
static void charge(ts_worker *x, int64_t t)
{
    if (t > x->since) x->s[x->phase] += (double)(t - x->since) / 1e9;
}

static void ts_free(ts_run *run)
{
    evt_state_release(&run->st);
    free(run->w);
    free(run->last);
}

/* Sync: worker k's push for global step s ended at t; the step's latest so far? */
static void note_push(ts_run *run, int k, int64_t s, int64_t t)
{
    if (s < 0 || s >= TS_MAX_LAST_STEPS) return;
    if (s >= run->n_last) {
        int64_t n = run->n_last ? run->n_last : 1024;
        while (n <= s) n *= 2;
        run->last = xrealloc(run->last, (size_t)n * sizeof *run->last);
        for (int64_t i = run->n_last; i < n; i++) run->last[i] = (ts_last){0, -1};
        run->n_last = n;
    }
    ts_last *l = &run->last[s];
    if (l->w < 0 || t >= l->t) *l = (ts_last){t, k};
}

/* The run's engine and mode from the metadata (a simulated run's are in its "config"). */
static void ts_describe(const trace_reader *r, ts_run *run)
{
    json_t *m = json_loads(trace_reader_metadata(r), 0, NULL);
    json_t *cfg = json_object_get(m, "config");
    const char *engine = json_string_value(json_object_get(m, "engine"));
    const char *mode = json_string_value(json_object_get(m, "mode"));
    if (!mode) mode = json_string_value(json_object_get(cfg, "mode"));
    json_t *backup = json_object_get(m, "backup_workers");
    if (!backup) backup = json_object_get(cfg, "backup_workers");
    run->backup = json_is_integer(backup) ? json_integer_value(backup) : 0;
    snprintf(run->engine, sizeof run->engine, "%s", engine ? engine : "?");
    snprintf(run->mode, sizeof run->mode, "%s", mode ? mode : "?");
    trace_tool_printable(run->engine);
    trace_tool_printable(run->mode);
    json_decref(m);
}

/* Fills run (release with ts_free) by replaying the trace, charging each worker's time
 * to the phase it was in (evt_state's: one phase at a time, by its precedence), from its
 * first event until it stopped or the trace ends; in sync, which worker's gradients came
 * last at each global step (its last PUSH_END for the step its pushes began in). */
static void ts_replay(trace_reader *r, ts_run *run)
{
    memset(run, 0, sizeof *run);
    evt_state_init(&run->st);
    ts_describe(r, run);
    int sync = !strcmp(run->mode, "sync");
    evt_record e;
    int64_t t_end = 0;
    int cap = 0;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) {
        evt_state_apply(&run->st, &e);
        if (e.t > t_end) t_end = e.t;
        if (e.job != EVT_JOB_WORKER || e.task < 0 || e.task >= EVT_STATE_MAX_TASKS) continue;
        const evt_task_state *tk = evt_state_task(&run->st, e.job, e.task);
        if (!tk) continue;
        if (e.task >= cap) {
            int ncap = cap ? cap : 16;
            while (ncap <= e.task) ncap *= 2;
            run->w = xrealloc(run->w, (size_t)ncap * sizeof *run->w);
            memset(run->w + cap, 0, (size_t)(ncap - cap) * sizeof *run->w);
            cap = ncap;
        }
        if (e.task >= run->n) run->n = e.task + 1;
        if (sync && e.kind == EVT_PUSH_END) note_push(run, e.task, tk->step, e.t);
        ts_worker *x = &run->w[e.task];
        if (!x->seen) {
            x->seen = 1;
            x->phase = tk->phase;
            x->since = e.t;
        } else if (tk->phase != x->phase) {
            charge(x, e.t);
            x->phase = tk->phase;
            x->since = e.t;
        }
    }
    for (int i = 0; i < run->n; i++) {
        ts_worker *x = &run->w[i];
        if (!x->seen) continue;
        if (x->phase != EVT_PHASE_STOPPED) charge(x, t_end);
        const evt_task_state *tk = evt_state_task(&run->st, EVT_JOB_WORKER, i);
        x->steps = tk ? tk->steps_done : 0;
        for (int k = 0; k < N_SHOWN; k++) x->wall_s += x->s[shown[k]];
        x->step_s = x->steps ? (x->wall_s - x->s[EVT_PHASE_DEAD]) / (double)x->steps : 0;
    }
    for (int64_t s = 0; s < run->n_last; s++)
        if (run->last[s].w >= 0) {
            run->w[run->last[s].w].last_pushes++;
            run->last_steps++;
        }
}

static int by_step(const void *a, const void *b)
{
    double x = (*(ts_worker *const *)a)->step_s, y = (*(ts_worker *const *)b)->step_s;
    return (x < y) - (x > y);   /* slowest first */
}

/* The workers that stepped, slowest first; *n of them. */
static ts_worker **ts_ranked(const ts_run *run, int *n)
{
    ts_worker **v = xmalloc(((size_t)run->n + 1) * sizeof *v);
    *n = 0;
    for (int i = 0; i < run->n; i++)
        if (run->w[i].seen && run->w[i].steps > 0) v[(*n)++] = &run->w[i];
    qsort(v, (size_t)*n, sizeof *v, by_step);
    return v;
}

/* The median of the ranked workers' step times. */
static double ts_median(ts_worker **v, int n)
{
    return n % 2 ? v[n / 2]->step_s : (v[n / 2 - 1]->step_s + v[n / 2]->step_s) / 2;
}

static double ts_compute_share(const ts_worker *x)
{
    return x->wall_s > 0 ? x->s[EVT_PHASE_COMPUTING] / x->wall_s : 0;
}

static int by_compute(const void *a, const void *b)
{
    double x = ts_compute_share(*(ts_worker *const *)a), y = ts_compute_share(*(ts_worker *const *)b);
    return (x < y) - (x > y);   /* busiest first */
}

/* The worker computing the largest share of its time, and the median share: in sync the
 * one the barrier waits for (every step takes as long, so the step time cannot say). */
static ts_worker *ts_busiest(ts_worker **ranked, int n, double *median_share)
{
    ts_worker **v = xmalloc((size_t)n * sizeof *v);
    memcpy(v, ranked, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, by_compute);
    ts_worker *top = v[0];
    *median_share = n % 2 ? ts_compute_share(v[n / 2])
                          : (ts_compute_share(v[n / 2 - 1]) + ts_compute_share(v[n / 2])) / 2;
    free(v);
    return top;
}

/* All workers together into *p; returns their steps, summed. */
static int64_t ts_totals(const ts_run *run, trace_tool_phases *p)
{
    int64_t steps = 0;
    memset(p, 0, sizeof *p);
    p->most_computing = p->last_to_push = -1;
    p->push_steps = run->last_steps;
    for (int i = 0; i < run->n; i++) {
        const ts_worker *x = &run->w[i];
        if (!x->seen) continue;
        if (x->last_pushes > p->last_to_push_steps) {
            p->last_to_push = i;
            p->last_to_push_steps = x->last_pushes;
        }
        p->workers++;
        p->time_s += x->wall_s;
        steps += x->steps;
        for (int k = 0; k < N_SHOWN; k++) p->phase_s[shown[k]] += x->s[shown[k]];
    }
    int nr;
    ts_worker **ranked = ts_ranked(run, &nr);
    if (nr >= 2) {
        ts_worker *busy = ts_busiest(ranked, nr, &p->median_computing_share);
        p->most_computing = (int)(busy - run->w);
        p->most_computing_share = ts_compute_share(busy);
    }
    free(ranked);
    return steps;
}

static void ts_row(FILE *out, const char *name, int64_t steps, double wall_s, const double *phase_s,
                   const int *cols)
{
    fprintf(out, "%-8s %7lld  ", name, (long long)steps);
    if (steps) fprintf(out, "%8.2f ms", (wall_s - phase_s[EVT_PHASE_DEAD]) / (double)steps * 1e3);
    else fprintf(out, "%11s", "-");
    for (int k = 0; k < N_SHOWN; k++)
        if (cols[k]) fprintf(out, "  %10.1f %%", wall_s > 0 ? phase_s[shown[k]] / wall_s * 100 : 0.0);
    fputc('\n', out);
}

static void ts_worker_row(FILE *out, const ts_run *run, const ts_worker *x, const int *cols)
{
    char name[32];
    snprintf(name, sizeof name, "%d", (int)(x - run->w));
    ts_row(out, name, x->steps, x->wall_s, x->s, cols);
}

static void ts_text(FILE *out, const ts_run *run, const char *path, const trace_tool_report *rep)
{
    trace_tool_phases all;
    int64_t all_steps = ts_totals(run, &all);
    int cols[N_SHOWN], nr;
    for (int k = 0; k < N_SHOWN; k++) cols[k] = all.phase_s[shown[k]] > 0;
    fprintf(out, "trace:    %s\n", path);
    fprintf(out, "run:      %s, %s, %d ps, %d workers; global step %lld in %.3f s\n", run->engine,
            run->mode, run->st.n_ps, run->st.n_workers, (long long)run->st.global_step, rep->duration_s);
    if (!all.workers) {
        fprintf(out, "no worker events: nothing to break down\n");
        return;
    }
    fprintf(out, "\nEach worker's time from its first event until it stopped, by what the viewer shows\n"
                 "it doing: one phase at a time (barrier, ssp wait, paced, computing, pushing,\n"
                 "pulling, idle, in that precedence), so a push during the compute counts as\n"
                 "computing; idle is the rest, start-up included. A mean step is that time, less\n"
                 "any time dead, over the worker's steps.\n\n");
    fprintf(out, "%-8s %7s  %11s", "worker", "steps", "mean step");
    for (int k = 0; k < N_SHOWN; k++)
        if (cols[k]) fprintf(out, "  %12s", trace_tool_phase_label(shown[k]));
    fputc('\n', out);
    ts_worker **ranked = ts_ranked(run, &nr);
    if (run->n <= MAX_ROWS) {
        for (int i = 0; i < run->n; i++)
            if (run->w[i].seen) ts_worker_row(out, run, &run->w[i], cols);
    } else {
        for (int i = 0; i < nr && i < SLOW_ROWS; i++) ts_worker_row(out, run, ranked[i], cols);
        fprintf(out, "... the %d slowest of %d workers (--json lists every one)\n",
                nr < SLOW_ROWS ? nr : SLOW_ROWS, run->st.n_workers);
    }
    ts_row(out, "all", all_steps, all.time_s, all.phase_s, cols);
    if (nr >= 2) {
        double med = ts_median(ranked, nr);
        fprintf(out, "\nslowest step:    worker %d, %.2f ms, %.2fx the median worker's %.2f ms\n",
                (int)(ranked[0] - run->w), ranked[0]->step_s * 1e3, med > 0 ? ranked[0]->step_s / med : 0,
                med * 1e3);
        fprintf(out, "most computing:  worker %d, %.1f %% of its time against the median worker's %.1f %%\n",
                all.most_computing, all.most_computing_share * 100, all.median_computing_share * 100);
    }
    if (all.last_to_push >= 0 && run->backup > 0)
        fprintf(out, "last to push:    worker %d at %lld of %lld global steps (with %lld backup worker%s the "
                     "barrier did not wait for the last)\n",
                all.last_to_push, (long long)all.last_to_push_steps, (long long)all.push_steps, run->backup,
                run->backup == 1 ? "" : "s");
    else if (all.last_to_push >= 0)
        fprintf(out, "last to push:    worker %d at %lld of %lld global steps (the gradients the barrier "
                     "waited for)\n",
                all.last_to_push, (long long)all.last_to_push_steps, (long long)all.push_steps);
    free(ranked);
}

static json_t *ts_phases_json(const double *phase_s)
{
    json_t *o = json_object();
    for (int k = 0; k < N_SHOWN; k++)
        json_object_set_new(o, evt_phase_name(shown[k]), json_real(phase_s[shown[k]]));
    return o;
}

static int ts_json(FILE *out, const ts_run *run, const char *path, const trace_tool_report *rep,
                   char *err)
{
    json_t *o = json_object(), *a = json_array();
    json_t *file = json_string(path);
    json_object_set_new(o, "file", file ? file : json_null());
    json_object_set_new(o, "engine", json_string(run->engine));
    json_object_set_new(o, "mode", json_string(run->mode));
    json_object_set_new(o, "ps", json_integer(run->st.n_ps));
    json_object_set_new(o, "workers", json_integer(run->st.n_workers));
    json_object_set_new(o, "global_step", json_integer((json_int_t)run->st.global_step));
    json_object_set_new(o, "duration_s", json_real(rep->duration_s));
    for (int i = 0; i < run->n; i++) {
        const ts_worker *x = &run->w[i];
        if (!x->seen) continue;
        json_t *wj = json_object();
        json_object_set_new(wj, "task", json_integer(i));
        json_object_set_new(wj, "steps", json_integer((json_int_t)x->steps));
        json_object_set_new(wj, "time_s", json_real(x->wall_s));
        json_object_set_new(wj, "mean_step_s", x->steps ? json_real(x->step_s) : json_null());
        json_object_set_new(wj, "phase_s", ts_phases_json(x->s));
        json_array_append_new(a, wj);
    }
    json_object_set_new(o, "per_worker", a);
    trace_tool_phases all;
    ts_totals(run, &all);
    int nr;
    ts_worker **ranked = ts_ranked(run, &nr);
    if (nr >= 2) {
        json_t *s = json_object();
        double med = ts_median(ranked, nr);
        json_object_set_new(s, "task", json_integer(ranked[0] - run->w));
        json_object_set_new(s, "mean_step_s", json_real(ranked[0]->step_s));
        json_object_set_new(s, "median_step_s", json_real(med));
        json_object_set_new(o, "slowest", s);
        json_t *b = json_object();
        json_object_set_new(b, "task", json_integer(all.most_computing));
        json_object_set_new(b, "computing_share", json_real(all.most_computing_share));
        json_object_set_new(b, "median_computing_share", json_real(all.median_computing_share));
        json_object_set_new(o, "most_computing", b);
    } else {
        json_object_set_new(o, "slowest", json_null());
        json_object_set_new(o, "most_computing", json_null());
    }
    if (all.last_to_push >= 0) {
        json_t *l = json_object();
        json_object_set_new(l, "task", json_integer(all.last_to_push));
        json_object_set_new(l, "steps", json_integer((json_int_t)all.last_to_push_steps));
        json_object_set_new(l, "of", json_integer((json_int_t)all.push_steps));
        json_object_set_new(o, "last_to_push", l);
    } else {
        json_object_set_new(o, "last_to_push", json_null());
    }
    free(ranked);
    json_object_set_new(o, "damage", rep->damage[0] ? json_string(rep->damage) : json_null());
    return trace_tool_json_line(out, o, err);
}

int trace_tool_stats(FILE *out, const char *path, int json, trace_tool_report *rep, char *err)
{
    trace_tool_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    ts_run run;
    ts_replay(r, &run);
    trace_tool_report_fill(r, rep);
    int rc = 0;
    if (json) rc = ts_json(out, &run, path, rep, err);
    else ts_text(out, &run, path, rep);
    ts_free(&run);
    trace_reader_close(r);
    return rc;
}

int trace_tool_phases_read(const char *path, trace_tool_phases *p, char *err)
{
    memset(p, 0, sizeof *p);
    p->most_computing = -1;
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    ts_run run;
    ts_replay(r, &run);
    ts_totals(&run, p);
    ts_free(&run);
    trace_reader_close(r);
    return 0;
}
