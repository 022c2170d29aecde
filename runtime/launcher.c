/* launcher.c — the local-cluster launcher (see launcher.h). One libev loop watches the
 * children (ev_child), their stdout pipes (each task ends with one JSON statistics line)
 * and SIGINT/SIGTERM. Children inherit stderr, so their progress lines stream through.
 * `--fail`/`--kill` faults are carried out by launcher_faults.c: SIGKILL of a task at a
 * time or at a step (workers then print "@progress LOCAL GLOBAL" lines on stdout), and a
 * restart after a delay when asked; a task killed so does not stop the run. */
#include "runtime/launcher.h"
#include "runtime/launcher_internal.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>
#include <cblas.h>
#include <jansson.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "hub/hub.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/sock.h"
#include "runtime/blas.h"
#include "runtime/instr.h"
#include "runtime/netns.h"

/* Signals every task (and the viewer too when with_viewer). */
static void kill_tasks(launcher *l, int sig, int with_viewer)
{
    for (int i = 0; i < l->n_kids; i++)
        if (!l->kids[i].exited && l->kids[i].pid > 0 && (with_viewer || !l->kids[i].viewer)) {
            kill(l->kids[i].pid, sig);
            /* a worker held at a --fail step (SIGSTOP) takes the signal only once woken */
            if (l->cfg->n_faults) kill(l->kids[i].pid, SIGCONT);
        }
}

void launcher_kill_all(launcher *l, int sig) { kill_tasks(l, sig, 1); }

static void print_summary(launcher *l, double wall_s);

static double jnum(json_t *o, const char *key)
{
    json_t *v = o ? json_object_get(o, key) : NULL;
    return v && json_is_number(v) ? json_number_value(v) : 0.0;
}

/* Events the tasks sent and dropped, from their final statistics lines. */
static void count_events(launcher *l)
{
    l->events = l->events_dropped = 0;
    for (int i = 0; i < l->n_kids; i++) {
        l->events += (uint64_t)jnum(l->kids[i].stats, "events");
        l->events_dropped += (uint64_t)jnum(l->kids[i].stats, "events_dropped");
    }
}

/* Every task has exited: the run's wall time is known and CLUSTER_STOP goes out. */
static void run_finished(launcher *l)
{
    if (l->finished) return;
    l->finished = 1;
    l->wall_s = (double)(dp_now_ns() - l->t0) / 1e9;
    uint64_t irq1;
    l->irq_s = l->irq_known && !dp_host_irq_ns(&irq1) && irq1 >= l->irq0 ? (double)(irq1 - l->irq0) / 1e9 : -1;
    if (l->in) {
        evt_record e = rt_instr_record(l->in, EVT_CLUSTER_STOP);
        e.value = l->wall_s;
        e.value2 = l->irq_s > 0 ? l->irq_s : 0;
        rt_instr_emit(l->in, &e);
    }
}

void launcher_maybe_done(launcher *l)
{
    if (l->alive > 0 || l->open_pipes > 0 || l->restarts_pending > 0) return;
    run_finished(l);
    if (!l->viewer || l->viewer->exited) {
        ev_break(l->loop, EVBREAK_ALL);
        return;
    }
    /* The run is over but its viewer is open: report now, exit when it closes. */
    if (!l->told_viewer) {
        l->told_viewer = 1;
        if (!l->failure[0] && !l->interrupted) {
            count_events(l);
            print_summary(l, l->wall_s);
            l->summary_done = 1;
        }
        dp_log(DP_LOG_INFO, "cluster", "training finished; close the viewer window to exit");
    }
}

static void on_grace(struct ev_loop *loop, ev_timer *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    launcher *l = dp_container_of(w, launcher, grace_w);
    /* Tasks that outlive the run (a ps waiting for a lost worker) are told to go; the
     * viewer stays until its window is closed. */
    kill_tasks(l, SIGTERM, 0);
}

static void grace_start(launcher *l);

/* One worker fewer to wait for; the last one starts the ps tasks' grace. */
void launcher_worker_gone(launcher *l)
{
    --l->workers_left;
    if (l->workers_left > 0 && l->workers_left == l->restarts_pending) launcher_cancel_restarts(l);
    if (l->workers_left == 0 && !l->stopping) {
        /* Every worker is done; ps tasks exit on their own once all said DONE. */
        grace_start(l);
    }
}

/* The failure text of a task that died: its own error when it printed one. */
static void describe_death(const child *c, char *buf, size_t n)
{
    json_t *er = c->stats ? json_object_get(c->stats, "error") : NULL;
    if (er && json_is_string(er))
        snprintf(buf, n, "task %s stopped the run: %s", c->name, json_string_value(er));
    else if (WIFSIGNALED(c->status))
        snprintf(buf, n, "task %s died: killed by signal %d (%s)", c->name, WTERMSIG(c->status),
                 strsignal(WTERMSIG(c->status)));
    else
        snprintf(buf, n, "task %s died: exit status %d", c->name, WEXITSTATUS(c->status));
}

static void on_child(struct ev_loop *loop, ev_child *w, int revents)
{
    DP_UNUSED(revents);
    child *c = dp_container_of(w, child, cw);
    launcher *l = c->l;
    ev_child_stop(loop, w);
    c->exited = 1;
    c->status = w->rstatus;
    if (c->viewer) {
        if (l->alive > 0) dp_log(DP_LOG_INFO, "cluster", "viewer closed; training goes on");
        launcher_maybe_done(l);
        return;
    }
    l->alive--;
    if (c->fault && !l->interrupted && !l->failure[0] && launcher_fault_death(l, c)) {
        c->fault = 0;
        launcher_maybe_done(l);
        return;
    }
    int clean = WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
    int by_us = l->stopping && WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGTERM;
    int ps_after_run = c->job == JOB_PS && l->workers_left == 0;
    if (!clean && !by_us && !ps_after_run && !c->moot && !l->interrupted && (!l->failure[0] || c->fault)) {
        if (!c->fault) describe_death(c, l->failure, sizeof l->failure);
        c->fault = 0;
        dp_log(DP_LOG_ERROR, "cluster", "%s; stopping the other tasks", l->failure);
        if (l->in) {
            evt_record e = rt_instr_record(l->in, EVT_FAILURE);
            e.job = c->job == JOB_PS ? EVT_JOB_PS : EVT_JOB_WORKER;
            e.task = c->index;
            e.str = rt_instr_str(l->in, l->failure);
            rt_instr_emit(l->in, &e);
        }
        l->stopping = 1;
        launcher_kill_all(l, SIGTERM);
    }
    if (clean && (c->job == JOB_PS || c->index == 0)) launcher_training_over(l);
    if (clean && c->job == JOB_PS) launcher_stop_unjoined(l);
    if (c->job == JOB_WORKER && c->index >= 0) launcher_worker_gone(l);
    launcher_maybe_done(l);
}

static void grace_start(launcher *l)
{
    l->stopping = 1;
    ev_timer_start(l->loop, &l->grace_w);
}

/* The chief's statistics come after the final global step (every other worker done or
 * lost), a ps's once every worker is done or lost: training is over, and a restart still
 * pending would find no ps. Said by the line, not the exit: a task's exit waits for its
 * events to be acknowledged by the hub. */
void launcher_training_over(launcher *l)
{
    l->training_over = 1;
    if (l->restarts_pending) launcher_cancel_restarts(l);
}

static void take_line(child *c)
{
    c->line[c->line_len] = 0;
    if (!strncmp(c->line, "@progress ", 10)) {
        launcher_fault_progress(c->l, c, c->line + 10);
    } else if (!strcmp(c->line, "@joined")) {
        c->joined = 1;
    } else if (c->line[0] == '{') {
        json_error_t je;
        json_t *j = json_loads(c->line, 0, &je);
        if (j) {
            json_decref(c->stats);
            c->stats = j;
            int final = json_object_get(j, c->job == JOB_PS ? "applies" : "local_steps") != NULL;
            if (final && (c->job == JOB_PS || c->index == 0)) launcher_training_over(c->l);
            if (final && c->job == JOB_PS) launcher_stop_unjoined(c->l);
        }
    } else if (c->line_len) {
        fprintf(stdout, "%s\n", c->line); /* pass through anything else */
    }
    c->line_len = 0;
}

static void on_out(struct ev_loop *loop, ev_io *w, int revents)
{
    DP_UNUSED(revents);
    child *c = dp_container_of(w, child, out_w);
    char buf[4096];
    ssize_t r = read(c->out_fd, buf, sizeof buf);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r <= 0) {
        if (c->line_len) take_line(c);
        ev_io_stop(loop, w);
        close(c->out_fd);
        c->out_fd = -1;
        if (!c->viewer) c->l->open_pipes--;
        launcher_maybe_done(c->l);
        return;
    }
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == '\n') take_line(c);
        else if (c->line_len < sizeof c->line - 1) c->line[c->line_len++] = buf[i];
    }
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    DP_UNUSED(loop);
    DP_UNUSED(revents);
    launcher *l = dp_container_of(w, launcher, sigint_w);
    if (w->signum == SIGTERM) l = dp_container_of(w, launcher, sigterm_w);
    if (!l->interrupted) dp_log(DP_LOG_WARN, "cluster", "interrupted; stopping every task");
    l->interrupted = 1;
    l->stopping = 1;
    launcher_kill_all(l, SIGTERM);
}

/* --netns: the task's slot (ps tasks first, then the workers), -1 for the viewer. */
static int netns_slot(const launcher *l, const child *c)
{
    return c->viewer || c->index < 0 ? -1 : c->job == JOB_PS ? c->index : l->cfg->n_ps + c->index;
}

/* Starts argv as a child with stdout on a pipe we read. */
int launcher_spawn(launcher *l, child *c, char **argv, char *err)
{
    int fds[2];
    if (pipe(fds) < 0) return dp_fail(err, DP_EIO, "pipe: %s", strerror(errno));
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return dp_fail(err, DP_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* A task never outlives its launcher, even one killed with SIGKILL. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        close(fds[0]);
        dup2(fds[1], 1);
        close(fds[1]);
        if (c->listen_fd >= 0) {
            if (c->listen_fd == NET_LISTEN_FD) fcntl(NET_LISTEN_FD, F_SETFD, 0);
            else dup2(c->listen_fd, NET_LISTEN_FD);
            char v[16];
            snprintf(v, sizeof v, "%d", NET_LISTEN_FD);
            setenv(NET_LISTEN_ENV, v, 1);
        }
        if (l->cfg->n_faults && !c->viewer) setenv("DOWNPOUR_PROGRESS", "1", 1);
        long long hold = -1;   /* the worker's next --fail at a step: it waits there for us */
        for (int i = 0; i < l->cfg->n_faults; i++) {
            const run_fault *f = &l->cfg->faults[i];
            if (!l->fault_fired[i] && f->job == JOB_WORKER && (int)c->job == JOB_WORKER &&
                f->task == c->index && f->at_step >= 0 && (hold < 0 || f->at_step < hold))
                hold = f->at_step;
        }
        if (hold >= 0) {
            char v[32];
            snprintf(v, sizeof v, "%lld", hold);
            setenv("DOWNPOUR_HOLD_AT", v, 1);
        } else {
            unsetenv("DOWNPOUR_HOLD_AT");
        }
        if (c->restarts) {
            char v[16];
            snprintf(v, sizeof v, "%d", c->restarts);
            setenv("DOWNPOUR_RESTART", v, 1);
        }
        rt_blas_one_thread_env();   /* a task runs BLAS on one thread (runtime/blas.c) */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (l->nn && netns_slot(l, c) >= 0 && netns_enter(netns_task_fd(l->nn, netns_slot(l, c))) < 0) {
            fprintf(stderr, "downpour: cluster: --netns: setns: %s\n", strerror(errno));
            _exit(127);
        }
        execv(argv[0], argv);
        fprintf(stderr, "downpour: cluster: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    c->l = l;
    c->pid = pid;
    c->out_fd = fds[0];
    ev_child_init(&c->cw, on_child, pid, 0);
    ev_child_start(l->loop, &c->cw);
    ev_io_init(&c->out_w, on_out, fds[0], EV_READ);
    ev_io_start(l->loop, &c->out_w);
    if (!c->viewer) {
        l->alive++;
        l->open_pipes++;
    }
    return DP_OK;
}

/* "HOST:PORT,..." for slots first..first+n-1: 127.0.0.1, or each task's own address. */
static char *hosts_list(const launcher *l, int first, int n, const int *ports)
{
    char *s = xmalloc((size_t)n * 24 + 1);
    s[0] = 0;
    size_t off = 0;
    for (int i = 0; i < n; i++)
        off += (size_t)sprintf(s + off, "%s%s:%d", i ? "," : "",
                               l->nn ? netns_task_addr(l->nn, first + i) : "127.0.0.1", ports[first + i]);
    return s;
}

/* The run's configuration as JSON: the trace's metadata and CLUSTER_START's text. */
static char *config_json(const rt_config *cfg)
{
    json_t *o = run_desc_json(&cfg->run, "real");
    json_object_set_new(o, "data", json_string(cfg->data));
    json_object_set_new(o, "eval_every", json_integer(cfg->eval_every));   /* for --calibrate-from */
    json_t *lesson = cfg->lesson_json ? json_loads(cfg->lesson_json, 0, NULL) : NULL;
    if (lesson) json_object_set_new(o, "lesson", lesson);
    if (cfg->netns) {
        /* --net: the shaped links, for the viewer's labels */
        json_t *links = json_array();
        for (int i = 0; i < cfg->n_nets; i++) {
            char label[96], spec[160];
            netns_shape_label(&cfg->nets[i], label, sizeof label);
            netns_shape_format(&cfg->nets[i], spec, sizeof spec);
            json_array_append_new(links, json_pack("{s:s,s:i,s:s,s:s,s:f,s:f,s:f}", "job",
                spec_job_name((dp_job)cfg->nets[i].job), "task", cfg->nets[i].task, "label", label,
                "net", spec, "delay_s", cfg->nets[i].delay_s, "loss_pct", cfg->nets[i].loss_pct,
                "rate_bytes_per_s", cfg->nets[i].rate_Bps));
        }
        json_object_set_new(o, "netns", json_true());
        json_object_set_new(o, "net", links);
    }
    /* where the tasks ran, for --calibrate-from: every task of a launched cluster shares
     * this machine's cores (with --netns too: namespaces share the CPUs) */
    char host[256];
    if (gethostname(host, sizeof host)) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    json_object_set_new(o, "hosts", json_pack("[{s:s,s:i}]", "name", host, "cores", (int)(cores > 0 ? cores : 0)));
    json_object_set_new(o, "task_hosts", json_string("1"));
    json_object_set_new(o, "start_unix_ns", json_integer((json_int_t)dp_wall_ns()));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* The run's final global step for the summary: what the ps holding global_step reported
 * when it exited (its line's "global_step", ps_gs), which counts every applied step — in
 * async, workers that pulled just before --steps was reached push once more, after the
 * chief's last read (chief_gs). The larger of the two, so the chief's read stands in when
 * that ps reported nothing (ps_gs < 0: it died, or was restarted). */
static double final_global_step(double chief_gs, double ps_gs)
{
    return ps_gs > chief_gs ? ps_gs : chief_gs;
}

static void print_summary(launcher *l, double wall_s)
{
    const rt_config *cfg = l->cfg;
    double samples = 0, train_s = 0, pulled = 0, pushed = 0, loss_sum = 0, mean_step = 0;
    double stale_n = 0, stale_sum = 0, stale_max = 0, drops = 0, gs = 0, acc = -1, var_min = -1;
    double paced_max = 0, unpaced_s = 0;   /* --pace: largest paced_s, largest train_s - paced_s */
    double ps_gs = -1;                     /* the global step the ps holding it reported */
    double reconnects = 0;                 /* workers' reconnections after a lost ps */
    double rejected = 0;                   /* gradients holding NaN or Inf, refused by the ps */
    double in_place = 0;                   /* pushes applied where they lay in a shm ring */
    const char *checksum = NULL;           /* the chief's, of the parameters it read last */
    int n_loss = 0;
    for (int i = 0; i < l->n_kids; i++) {
        child *c = &l->kids[i];
        json_t *s = c->stats;
        if (!s || c->index < 0) continue;
        if (c->job == JOB_WORKER) {
            samples += jnum(s, "samples");
            if (jnum(s, "train_s") > train_s) train_s = jnum(s, "train_s");
            pulled += jnum(s, "bytes_pulled");
            pushed += jnum(s, "bytes_pushed");
            reconnects += jnum(s, "ps_reconnects");
            double paced = jnum(s, "paced_s"), unpaced = jnum(s, "train_s") - paced;
            if (paced > paced_max) paced_max = paced;
            if (unpaced > unpaced_s) unpaced_s = unpaced;
            json_t *fl = json_object_get(s, "final_loss");
            if (fl && json_is_number(fl) && jnum(s, "local_steps") > 0) {
                loss_sum += json_number_value(fl);
                n_loss++;
            }
            if (c->index == 0) {
                gs = jnum(s, "global_step");
                if (json_object_get(s, "test_accuracy")) acc = jnum(s, "test_accuracy");
                checksum = json_string_value(json_object_get(s, "param_checksum"));
            }
        } else {
            stale_n += jnum(s, "stale_n");
            stale_sum += jnum(s, "stale_sum");
            if (jnum(s, "stale_max") > stale_max) stale_max = jnum(s, "stale_max");
            drops += jnum(s, "drops");
            rejected += jnum(s, "rejected");
            in_place += jnum(s, "pushes_in_place");
            json_t *vm = json_object_get(s, "var_step_min");
            if (vm && json_is_integer(vm) && json_integer_value(vm) >= 0 &&
                (var_min < 0 || json_integer_value(vm) < var_min))
                var_min = (double)json_integer_value(vm);
            if (jnum(s, "holds_step") != 0) {
                mean_step = jnum(s, "mean_step_s");
                if (json_is_integer(json_object_get(s, "global_step"))) ps_gs = jnum(s, "global_step");
            }
        }
    }
    gs = final_global_step(gs, ps_gs);
    run_result rr = {
        .engine = "real", .global_step = (int64_t)gs, .wall_s = wall_s, .mean_step_s = mean_step,
        .samples_per_s = train_s > 0 ? samples / train_s : 0,
        .final_loss = n_loss ? loss_sum / n_loss : NAN, .test_accuracy = acc >= 0 ? acc : NAN,
        .mean_staleness = stale_n > 0 ? stale_sum / stale_n : 0, .max_staleness = (int64_t)stale_max,
        .dropped_gradients = (int64_t)drops, .min_variable_step = (int64_t)var_min,
        .bytes_pulled = (int64_t)pulled, .bytes_pushed = (int64_t)pushed, .events = l->events,
        .events_dropped = l->events_dropped, .trace = cfg->trace,
    };
    json_t *o = run_summary_json(&cfg->run, &rr);
    json_object_set_new(o, "blas_core", json_string(openblas_get_corename()));  /* the tasks' too */
    if (l->irq_s >= 0) json_object_set_new(o, "host_irq_s", json_real(l->irq_s));
    if (rejected > 0) json_object_set_new(o, "gradients_rejected", json_integer((json_int_t)rejected));
    if (in_place > 0) json_object_set_new(o, "pushes_in_place", json_integer((json_int_t)in_place));
    if (checksum) json_object_set_new(o, "param_checksum", json_string(checksum));
    if (cfg->n_faults) {
        /* --fail: what was injected and what became of it */
        json_object_set_new(o, "faults_injected", json_integer(l->faults_injected));
        json_object_set_new(o, "tasks_restarted", json_integer(l->tasks_restarted));
        json_object_set_new(o, "workers_lost", json_integer(l->workers_lost));
        json_object_set_new(o, "ps_reconnects", json_integer((json_int_t)reconnects));
        if (l->chief_lost) json_object_set_new(o, "chief_lost", json_true());
    }
    if (cfg->pace_s > 0) {
        /* samples_per_s above is what happened, the pace included; this is the run with
         * every worker's paced wait taken out, combined as samples_per_s is (all samples
         * over the slowest worker's time). paced_s: the most any one worker waited. */
        json_object_set_new(o, "pace_s", json_real(cfg->pace_s));
        json_object_set_new(o, "paced_s", json_real(paced_max));
        json_object_set_new(o, "samples_per_s_unpaced", json_real(unpaced_s > 0 ? samples / unpaced_s : 0));
    }
    run_summary_emit(o, cfg->summary, "cluster");
}


/* A launched cluster always authenticates (docs/security.md): without a secret of the
 * user's ($DOWNPOUR_SECRET, or --secret-file, which put it there), a random one for this
 * run, passed to every task, our hub thread and the viewer through the environment, so
 * that a stranger on the machine cannot join. A hub we did not start (--hub ADDR) cannot
 * know it: the tasks reach that one as before, without a secret. Called before any
 * thread starts (setenv). */
static void launcher_secret(const rt_config *cfg)
{
    if (getenv(AUTH_ENV)) return;
    /* For measurements only (make bench: authentication on vs off). */
    const char *off = getenv("DOWNPOUR_AUTH");
    if (off && !strcmp(off, "off")) {
        dp_log(DP_LOG_WARN, "cluster", "DOWNPOUR_AUTH=off: no secret, anyone on this machine can join this run");
        return;
    }
    char secret[2 * AUTH_KEY_BYTES + 1];
    auth_generate_secret(secret, sizeof secret);
    setenv(AUTH_ENV, secret, 1);
    auth_memzero(secret, sizeof secret);
    if (cfg->hub[0] && !getenv(AUTH_HUB_ENV)) setenv(AUTH_HUB_ENV, "", 1);
    dp_log(DP_LOG_DEBUG, "cluster", "no secret given: generated one for this run's connections");
}

int launcher_run(const rt_config *cfg, const char *self, char *err)
{
    launcher l;
    memset(&l, 0, sizeof l);
    l.cfg = cfg;
    launcher_secret(cfg);
    int view = cfg->view;
    if (view && !dp_have_display()) {
        view = 0;
        if (cfg->trace[0])
            dp_log(DP_LOG_WARN, "cluster", "no display for --view: running headless (replay with "
                   "`downpour view %s`)", cfg->trace);
        else
            dp_log(DP_LOG_WARN, "cluster", "no display for --view: running headless (add --trace "
                   "FILE to replay it)");
    }
    int n_tasks = cfg->n_ps + cfg->n_workers;
    int *ports = xmalloc((size_t)n_tasks * sizeof *ports);
    int *listen_fds = xmalloc((size_t)n_tasks * sizeof *listen_fds);
    char *ps_hosts = NULL, *worker_hosts = NULL;
    int rc = DP_OK;
    /* --netns: from here on this thread (and the hub's, started below) lives in the
     * switch namespace; each task gets its own (runtime/netns.h). */
    if (cfg->netns && !(l.nn = netns_new(cfg->n_ps, cfg->n_workers, cfg->nets, cfg->n_nets, err))) {
        free(listen_fds);
        free(ports);
        return DP_EIO;
    }
    /* Every port comes from the OS, bound here (--netns: inside the task's namespace, on
     * its address): a ps's stays bound until the ps takes its socket over; a worker's
     * (only a name in the spec: workers listen on nothing) until all are chosen, so that
     * no two tasks are given the same one. */
    for (int i = 0; i < n_tasks; i++) {
        rc = listen_fds[i] = l.nn ? netns_listen(l.nn, i, &ports[i], err)
                                  : net_listen("127.0.0.1", 0, &ports[i], err);
        if (rc < 0) {
            for (int k = 0; k < i; k++) close(listen_fds[k]);
            free(listen_fds);
            free(ports);
            netns_free(l.nn);
            return rc;
        }
    }
    for (int i = cfg->n_ps; i < n_tasks; i++) close(listen_fds[i]);
    rc = DP_OK;
    ps_hosts = hosts_list(&l, 0, cfg->n_ps, ports);
    worker_hosts = hosts_list(&l, cfg->n_ps, cfg->n_workers, ports);
    signal(SIGPIPE, SIG_IGN);
    l.loop = ev_default_loop(EVFLAG_AUTO);
    l.kids = xcalloc((size_t)n_tasks + 1, sizeof *l.kids);
    l.workers_left = cfg->n_workers;
    ev_signal_init(&l.sigint_w, on_signal, SIGINT);
    ev_signal_init(&l.sigterm_w, on_signal, SIGTERM);
    ev_signal_start(l.loop, &l.sigint_w);
    ev_signal_start(l.loop, &l.sigterm_w);
    ev_timer_init(&l.grace_w, on_grace, 10.0, 0.);
    l.fault_w = xcalloc((size_t)cfg->n_faults + 1, sizeof *l.fault_w);
    l.fault_fired = xcalloc((size_t)cfg->n_faults + 1, 1);

    /* --trace: our own hub, on a thread of this process, recording the run. */
    rt_config task_cfg = *cfg;
    char *meta = config_json(cfg);
    if (cfg->trace[0] || (view && !cfg->hub[0])) {
        evt_hub_options ho;
        evt_hub_options_init(&ho);
        char hub_listen[32];
        snprintf(hub_listen, sizeof hub_listen, "%s:0", l.nn ? netns_hub_addr(l.nn) : "127.0.0.1");
        ho.listen = hub_listen;
        ho.quiet = 1;
        ho.trace_path = cfg->trace[0] ? cfg->trace : NULL;
        ho.metadata_json = meta;
        l.hub = evt_hub_new(&ho, err);
        if (!l.hub || evt_hub_start_thread(l.hub, err)) {
            evt_hub_free(l.hub);
            for (int i = 0; i < cfg->n_ps; i++) close(listen_fds[i]);
            free(listen_fds);
            free(meta);
            free(ports);
            free(ps_hosts);
            free(worker_hosts);
            free(l.kids);
            netns_free(l.nn);
            return DP_EIO;
        }
        snprintf(task_cfg.hub, sizeof task_cfg.hub, "%s", evt_hub_address(l.hub));
        if (cfg->trace[0])
            dp_log(DP_LOG_INFO, "cluster", "recording events to %s (hub on %s)", cfg->trace, task_cfg.hub);
    }
    l.in = rt_instr_new(task_cfg.hub, EVT_JOB_CLIENT, 0, NULL);
    if (l.in) {
        evt_record e = rt_instr_record(l.in, EVT_CLUSTER_START);
        e.str = rt_instr_str(l.in, meta);
        rt_instr_emit(l.in, &e);
    }
    char *train_argv[RT_CONFIG_MAX_ARGS];
    int n_train = rt_config_to_argv(&task_cfg, train_argv);
    dp_log(DP_LOG_INFO, "cluster", "starting %d ps and %d workers on %s (%s mode)", cfg->n_ps,
           cfg->n_workers, l.nn ? "their own network namespaces, 10.213.0.0/24" : "127.0.0.1",
           update_mode_name(cfg->mode));
    uint64_t t0 = dp_now_ns();
    l.t0 = t0;
    l.irq_known = !dp_host_irq_ns(&l.irq0);
    for (int t = 0; t < n_tasks && !rc; t++) {
        child *c = &l.kids[l.n_kids];
        c->job = t < cfg->n_ps ? JOB_PS : JOB_WORKER;
        c->index = t < cfg->n_ps ? t : t - cfg->n_ps;
        c->out_fd = -1;
        c->listen_fd = t < cfg->n_ps ? listen_fds[t] : -1;
        spec_task_name(c->name, sizeof c->name, c->job, c->index);
        char a_job[64], a_idx[64];
        char *a_ps = xmalloc(strlen(ps_hosts) + 16), *a_wk = xmalloc(strlen(worker_hosts) + 20);
        snprintf(a_job, sizeof a_job, "--job_name=%s", spec_job_name(c->job));
        snprintf(a_idx, sizeof a_idx, "--task_index=%d", c->index);
        sprintf(a_ps, "--ps_hosts=%s", ps_hosts);
        sprintf(a_wk, "--worker_hosts=%s", worker_hosts);
        char *argv[RT_CONFIG_MAX_ARGS + 8];
        int n = 0;
        argv[n++] = (char *)self;
        argv[n++] = "task";
        argv[n++] = a_job;
        argv[n++] = a_idx;
        argv[n++] = a_ps;
        argv[n++] = a_wk;
        for (int i = 0; i < n_train; i++) argv[n++] = train_argv[i];
        argv[n] = NULL;
        rc = launcher_spawn(&l, c, argv, err);
        if (cfg->n_faults) {
            /* kept for a restart */
            c->argv = xcalloc((size_t)n + 1, sizeof *c->argv);
            for (int i = 0; i < n; i++) c->argv[i] = xstrdup(argv[i]);
        }
        free(a_ps);
        free(a_wk);
        if (!rc && l.nn)
            dp_log(DP_LOG_INFO, "cluster", "task %s: pid %d, network namespace %s", c->name, (int)c->pid,
                   netns_task_addr(l.nn, t));
        if (!rc) l.n_kids++;
    }
    for (int i = 0; i < n_train; i++) free(train_argv[i]);
    /* A ps that a --fail restarts gets its listening socket again: the launcher keeps it
     * (workers that reconnect meanwhile wait in its backlog). */
    for (int i = 0; i < cfg->n_ps; i++) {
        int keep = 0;
        for (int k = 0; k < cfg->n_faults; k++)
            keep |= cfg->faults[k].job == JOB_PS && cfg->faults[k].task == i && cfg->faults[k].restart_s >= 0;
        if (keep && i < l.n_kids) continue;
        close(listen_fds[i]);
        if (i < l.n_kids) l.kids[i].listen_fd = -1;
    }
    free(listen_fds);
    for (int i = 0; i < cfg->n_faults && !rc; i++) {
        if (cfg->faults[i].at_s < 0) continue;
        l.fault_w[i].l = &l;
        l.fault_w[i].index = i;
        ev_timer_init(&l.fault_w[i].w, launcher_on_fault_time, cfg->faults[i].at_s, 0.);
        ev_timer_start(l.loop, &l.fault_w[i].w);
    }
    if (!rc && view) {
        /* The viewer watches through the hub; closing it never disturbs the run. */
        child *c = &l.kids[l.n_kids];
        c->viewer = 1;
        c->index = -1;
        c->out_fd = -1;
        c->listen_fd = -1;
        snprintf(c->name, sizeof c->name, "viewer");
        char *argv[] = {(char *)self, "view", "--connect", task_cfg.hub, NULL};
        if (launcher_spawn(&l, c, argv, err) == DP_OK) {
            l.viewer = c;
            l.n_kids++;
        } else {
            dp_log(DP_LOG_WARN, "cluster", "cannot start the viewer: %s; training goes on", err);
            rc = DP_OK;
        }
    }
    if (rc) {
        l.stopping = 1;
        launcher_kill_all(&l, SIGTERM);
    }
    ev_run(l.loop, 0);
    /* The loop is the process's default one and outlives this run (`downpour compare`
     * runs several in one process): no watcher of this stack frame may stay on it. */
    ev_timer_stop(l.loop, &l.grace_w);
    ev_signal_stop(l.loop, &l.sigint_w);
    ev_signal_stop(l.loop, &l.sigterm_w);
    for (int i = 0; i < l.n_kids; i++) {
        ev_child_stop(l.loop, &l.kids[i].cw);
        ev_io_stop(l.loop, &l.kids[i].out_w);
        ev_timer_stop(l.loop, &l.kids[i].restart_w);
        if (l.kids[i].listen_fd >= 0) close(l.kids[i].listen_fd);
    }
    for (int i = 0; i < cfg->n_faults; i++) ev_timer_stop(l.loop, &l.fault_w[i].w);
    run_finished(&l);
    double wall_s = l.wall_s;
    rt_instr_free(l.in);
    if (!l.summary_done) count_events(&l);
    if (l.hub) {
        /* Every task has flushed its emitter before exiting; let the hub's reorder
         * window drain, then close the trace. */
        char herr[DP_ERRLEN];
        evt_hub_stats hs;
        evt_hub_get_stats(l.hub, &hs);
        evt_hub_stop(l.hub);
        if (evt_hub_join(l.hub, herr))
            dp_log(DP_LOG_ERROR, "cluster", "trace %s: %s", cfg->trace, herr);
        evt_hub_get_stats(l.hub, &hs);
        l.events = hs.events_out;
        evt_hub_free(l.hub);
    }
    free(meta);
    netns_free(l.nn);   /* every task is gone: their namespaces and links go with them */
    if (!rc && l.failure[0]) rc = dp_fail(err, DP_ERR, "%s", l.failure);
    else if (!rc && l.interrupted) rc = dp_fail(err, DP_ECLOSED, "interrupted");
    if (!rc && !l.summary_done) print_summary(&l, wall_s);
    for (int i = 0; i < l.n_kids; i++) {
        json_decref(l.kids[i].stats);
        for (char **a = l.kids[i].argv; a && *a; a++) free(*a);
        free(l.kids[i].argv);
    }
    free(l.kids);
    free(l.fault_w);
    free(l.fault_fired);
    free(ports);
    free(ps_hosts);
    free(worker_hosts);
    return rc;
}
