/* launcher_faults.c — `--fail` / `--kill` in the launcher (see launcher_internal.h):
 * SIGKILL of a task at a time (a timer) or at a step (from the workers' "@progress"
 * lines), a restart after a delay when asked, and whether the run goes on without it. */
#include "runtime/launcher_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cluster/run.h"

static child *find_task(launcher *l, int job, int index)
{
    for (int i = 0; i < l->n_kids; i++)
        if (!l->kids[i].viewer && (int)l->kids[i].job == job && l->kids[i].index == index) return &l->kids[i];
    return NULL;
}

/* Carries out fault i: SIGKILL of its task (once; a task not running is left alone). */
static void inject(launcher *l, int i)
{
    const run_fault *f = &l->cfg->faults[i];
    if (l->fault_fired[i] || l->stopping) return;
    l->fault_fired[i] = 1;
    char text[96];
    run_fault_format(f, text, sizeof text);
    child *c = find_task(l, f->job, f->task);
    if (!c || c->exited || c->pid <= 0) {
        dp_log(DP_LOG_WARN, "cluster", "--fail %s: the task is not running; nothing to kill", text);
        return;
    }
    if (c->job == JOB_PS)   /* a ps has no steps of its own */
        dp_log(DP_LOG_WARN, "cluster", "--fail %s: killing %s (SIGKILL) at global step %lld", text, c->name,
               (long long)l->gs_seen);
    else
        dp_log(DP_LOG_WARN, "cluster", "--fail %s: killing %s (SIGKILL) at its step %lld, global step %lld",
               text, c->name, (long long)c->local_step, (long long)l->gs_seen);
    c->fault = i + 1;
    l->faults_injected++;
    kill(c->pid, SIGKILL);
}

void launcher_on_fault_time(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    fault_timer *ft = dp_container_of(w, fault_timer, w);
    inject(ft->l, ft->index);
}

/* A worker's "@progress LOCAL GLOBAL": the faults at a step that it reached. */
void launcher_fault_progress(launcher *l, child *c, const char *text)
{
    long long local = 0, gs = 0;
    if (sscanf(text, "%lld %lld", &local, &gs) != 2) return;
    c->local_step = local;
    if (gs > l->gs_seen) l->gs_seen = gs;
    for (int i = 0; i < l->cfg->n_faults; i++) {
        const run_fault *f = &l->cfg->faults[i];
        if (l->fault_fired[i] || f->at_step < 0) continue;
        if ((f->job == JOB_WORKER && c->job == JOB_WORKER && f->task == c->index && local >= f->at_step) ||
            (f->job == JOB_PS && l->gs_seen >= f->at_step))
            inject(l, i);
    }
}

/* Restarts for tasks killed by --fail are moot once every other worker is done. */
void launcher_cancel_restarts(launcher *l)
{
    for (int i = 0; i < l->n_kids; i++) {
        child *c = &l->kids[i];
        if (!c->restart_pending) continue;
        ev_timer_stop(l->loop, &c->restart_w);
        c->restart_pending = 0;
        l->restarts_pending--;
        if (c->job == JOB_WORKER) {
            l->workers_left--;
            dp_log(DP_LOG_INFO, "cluster", "training is over: %s is not restarted", c->name);
        }
    }
}

/* A ps ends once every worker is done or lost. A worker restarted just before that (its
 * restart fired while the last ones finished) and not yet connected would find the ps
 * gone and wait --connect-timeout for it: training is over, so it is stopped. One that
 * joined has said DONE to the ps, and is left to exit on its own. */
void launcher_stop_unjoined(launcher *l)
{
    for (int i = 0; i < l->n_kids; i++) {
        child *c = &l->kids[i];
        if (c->job != JOB_WORKER || c->viewer || !c->restarts || c->joined || c->exited || c->moot) continue;
        c->moot = 1;
        dp_log(DP_LOG_INFO, "cluster", "training is over: %s, restarted as it ended, finds no ps; stopping it",
               c->name);
        kill(c->pid, SIGTERM);
    }
}

/* Whether the run can go on without worker c, said in the launcher's words. */
static void say_going_on(launcher *l, const child *c)
{
    const rt_config *cfg = l->cfg;
    if (cfg->mode != MODE_SYNC)
        dp_log(DP_LOG_WARN, "cluster", "training goes on without %s (%s: the others keep pushing)", c->name,
               update_mode_name(cfg->mode));
    else if (l->workers_lost <= cfg->backup_workers)
        dp_log(DP_LOG_WARN, "cluster", "training goes on without %s (sync: %d backup worker%s cover%s it)",
               c->name, cfg->backup_workers, cfg->backup_workers == 1 ? "" : "s",
               cfg->backup_workers == 1 ? "s" : "");
    else
        dp_log(DP_LOG_WARN, "cluster", "%s is lost and sync has no backup worker to cover it: the others "
               "wait for it up to --barrier-timeout %gs", c->name, cfg->barrier_timeout_s);
    if (c->index == 0) {
        l->chief_lost = 1;
        dp_log(DP_LOG_WARN, "cluster", "%s was the chief: from now on nobody writes checkpoints or evaluates, so "
               "the run ends without a final evaluation or checkpoint (restart it: --kill worker:0@...,restart=T)",
               c->name);
    }
}

static void fault_event(launcher *l, const child *c, evt_kind kind, const char *text)
{
    if (!l->in) return;
    evt_record e = rt_instr_record(l->in, kind);
    e.job = c->job == JOB_PS ? EVT_JOB_PS : EVT_JOB_WORKER;
    e.task = c->index;
    e.str = rt_instr_str(l->in, text);
    rt_instr_emit(l->in, &e);
}

static void on_restart(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(revents);
    child *c = dp_container_of(w, child, restart_w);
    launcher *l = c->l;
    if (c->out_fd >= 0 && !l->stopping) {
        /* its old stdout has not reached its end yet: the pipe's watcher is still ours */
        ev_timer_set(w, 0.05, 0.);
        ev_timer_start(loop, w);
        return;
    }
    c->restart_pending = 0;
    l->restarts_pending--;
    if (l->stopping) {
        if (c->job == JOB_WORKER) l->workers_left--;
        launcher_maybe_done(l);
        return;
    }
    char err[DP_ERRLEN], text[160];
    c->restarts++;
    c->exited = 0;
    c->fault = 0;
    c->local_step = 0;
    c->joined = 0;
    json_decref(c->stats);
    c->stats = NULL;
    if (launcher_spawn(l, c, c->argv, err)) {
        snprintf(l->failure, sizeof l->failure, "cannot restart %s: %.400s", c->name, err);
        dp_log(DP_LOG_ERROR, "cluster", "%s; stopping the other tasks", l->failure);
        l->stopping = 1;
        launcher_kill_all(l, SIGTERM);
        if (c->job == JOB_WORKER) l->workers_left--;
        launcher_maybe_done(l);
        return;
    }
    l->tasks_restarted++;
    snprintf(text, sizeof text, "restarted by the launcher (restart %d, pid %d)", c->restarts, (int)c->pid);
    dp_log(DP_LOG_WARN, "cluster", "%s %s", c->name, text);
    fault_event(l, c, EVT_RECOVERY, text);
}

/* c died of a --fail: an event, then a restart, the run going on without it, or (a ps
 * that is not restarted) the run's end. Returns 1 when the run goes on. */
int launcher_fault_death(launcher *l, child *c)
{
    const run_fault *f = &l->cfg->faults[c->fault - 1];
    char text[96], msg[256];
    run_fault_format(f, text, sizeof text);
    snprintf(msg, sizeof msg, "task %s died: killed by signal 9 (injected by --fail %s)", c->name, text);
    if (c->job == JOB_PS && f->restart_s < 0) {
        /* on_child reports it as the run's failure (and its event) */
        snprintf(l->failure, sizeof l->failure, "%s; no restart= was asked, and the run needs its variables", msg);
        return 0;
    }
    fault_event(l, c, EVT_FAILURE, msg);
    if (f->restart_s >= 0 && !l->stopping && !l->training_over) {
        dp_log(DP_LOG_WARN, "cluster", "%s killed (--fail %s); restarting it in %g s", c->name, text,
               f->restart_s);
        c->restart_pending = 1;
        l->restarts_pending++;
        ev_timer_init(&c->restart_w, on_restart, f->restart_s, 0.);
        ev_timer_start(l->loop, &c->restart_w);
        return 1;
    }
    l->workers_lost++;
    say_going_on(l, c);
    launcher_worker_gone(l);
    return 1;
}
