/* netns.c — tasks on separate "hosts" (see netns.h): anonymous network namespaces, a
 * bridge in a private switch namespace, veth links and tc shaping. Links and addresses
 * are set with iproute2 (`ip`, `tc`) run as children: each one forked from this thread
 * (so it starts in the switch namespace) and, for a task's side, setns()ed into the
 * task's namespace before exec. Commands run only while the launcher's loop is not
 * running, so that its SIGCHLD handling never reaps them. */
#define _GNU_SOURCE
#include "runtime/netns.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "common/units.h"
#include "net/conn.h"
#include "net/sock.h"

#define NETNS_BRIDGE "dpbr0"
#define NETNS_PREFIX "10.213.0."

struct netns_net {
    int home_fd;             /* the namespace the thread was in before */
    int sw_fd;               /* the switch namespace (bridge, hub) */
    int n_tasks;
    int *task_fd;            /* per slot, -1 until added */
    char (*addr)[16];
    const netns_shape *shapes;   /* borrowed (the launcher's config) */
    int n_shapes;
    char hub_addr[16];
};

/* --- --net values ---------------------------------------------------------------- */

/* A rate in tc's spelling ("10mbit", any case) or ours ("10Mbit", "1.5MB/s"): tc's bit
 * units have their case mended for common/units.h; anything else is left as written.
 * Returns 1 for a "bps" unit, which tc reads as bytes per second ("kbps": kilobytes) and
 * common/units.h as bits: ambiguous, so refused. */
static int rate_units(const char *v, char *out, size_t n)
{
    snprintf(out, n, "%s", v);
    char *u = out;
    while (*u && (strchr("0123456789.", *u) || *u == ' ')) u++;
    size_t len = strlen(u);
    if (len >= 3 && !strcasecmp(u + len - 3, "bps")) return 1;
    char *bit = u[0] && strchr("kKmMgGtT", u[0]) ? u + 1 : u;
    if (strcasecmp(bit, "bit") && strcasecmp(bit, "bit/s")) return 0;
    if (bit != u) u[0] = (char)(u[0] == 'k' ? 'K' : toupper((unsigned char)u[0]));
    for (char *p = bit; *p; p++) *p = (char)tolower((unsigned char)*p);
    return 0;
}

int netns_shape_parse(const char *s, const char *what, netns_shape *out, char *err)
{
    const char *usage = "JOB:I:KEY=V[,KEY=V...] with keys delay=T, loss=P%, rate=BW; e.g. "
                        "worker:1:delay=20ms,loss=1%,rate=10mbit";
    memset(out, 0, sizeof *out);
    const char *c1 = s ? strchr(s, ':') : NULL;
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char job[16], buf[256];
    long long task;
    if (!c1 || !c2 || (size_t)(c1 - s) >= sizeof job || strlen(s) >= sizeof buf)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not %s", what, s ? s : "", usage);
    snprintf(job, sizeof job, "%.*s", (int)(c1 - s), s);
    snprintf(buf, sizeof buf, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
    dp_job j;
    if (spec_job_parse(job, &j))
        return dp_fail(err, DP_EINVAL, "%s: job \"%s\" in \"%s\" is not ps or worker", what, job, s);
    if (dp_parse_int(buf, &task) || task < 0 || task > 1000000)
        return dp_fail(err, DP_EINVAL, "%s: task \"%s\" in \"%s\" is not a task index in 0..1000000", what, buf, s);
    out->job = (int)j;
    out->task = (int)task;
    snprintf(buf, sizeof buf, "%s", c2 + 1);
    if (!buf[0]) return dp_fail(err, DP_EINVAL, "%s: \"%s\" has no KEY=V; expected %s", what, s, usage);
    int seen = 0;
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) return dp_fail(err, DP_EINVAL, "%s: \"%s\" in \"%s\" is not KEY=V; expected %s", what, kv, s, usage);
        *eq = 0;
        const char *v = eq + 1;
        char w2[96];
        snprintf(w2, sizeof w2, "%s %s", what, kv);
        int rc = DP_OK;
        if (!strcmp(kv, "delay")) {
            rc = dp_parse_time(v, w2, &out->delay_s, err);
            if (!rc && out->delay_s > 60)
                rc = dp_fail(err, DP_EINVAL, "%s: \"%s\" is outside 0s..60s", w2, v);
            seen |= 1;
        } else if (!strcmp(kv, "loss")) {
            char num[64];
            size_t len = strlen(v);
            snprintf(num, sizeof num, "%s", v);
            if (len && len < sizeof num && num[len - 1] == '%') num[len - 1] = 0;
            if (dp_parse_double(num, &out->loss_pct) || !(out->loss_pct >= 0 && out->loss_pct <= 100))
                rc = dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a percentage in 0..100 (e.g. 1%%)", w2, v);
            seen |= 2;
        } else if (!strcmp(kv, "rate")) {
            char bw[64];
            if (rate_units(v, bw, sizeof bw))
                rc = dp_fail(err, DP_EINVAL, "%s: \"%s\" is ambiguous: tc reads bps as bytes per second, others "
                             "as bits; write bit (10mbit) or B/s (1.25MB/s)", w2, v);
            else if ((rc = dp_parse_bandwidth(bw, w2, &out->rate_Bps, err)))
                rc = dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a rate (e.g. 10mbit, 100Mbit, 1Gbit, 1.25MB/s)", w2,
                             v);
            if (!rc && out->rate_Bps < 1000)
                rc = dp_fail(err, DP_EINVAL, "%s: \"%s\" is below 8kbit", w2, v);
            seen |= 4;
        } else {
            rc = dp_fail(err, DP_EINVAL, "%s: unknown key \"%s\" in \"%s\"; keys: delay, loss, rate", what, kv, s);
        }
        if (rc) return rc;
    }
    if (!seen) return dp_fail(err, DP_EINVAL, "%s: \"%s\" has no KEY=V; expected %s", what, s, usage);
    return DP_OK;
}

void netns_shape_label(const netns_shape *s, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    if (s->delay_s > 0)
        off += (size_t)snprintf(buf + off, n - off, "%g ms", s->delay_s * 1e3);
    if (s->loss_pct > 0 && off < n)
        off += (size_t)snprintf(buf + off, n - off, "%s%g%% loss", off ? ", " : "", s->loss_pct);
    if (s->rate_Bps > 0 && off < n) {
        double bit = s->rate_Bps * 8;
        if (bit >= 1e9) snprintf(buf + off, n - off, "%s%g Gbit/s", off ? ", " : "", bit / 1e9);
        else if (bit >= 1e6) snprintf(buf + off, n - off, "%s%g Mbit/s", off ? ", " : "", bit / 1e6);
        else snprintf(buf + off, n - off, "%s%g kbit/s", off ? ", " : "", bit / 1e3);
    }
}

void netns_shape_format(const netns_shape *s, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "%s:%d:", spec_job_name((dp_job)s->job), s->task);
    const char *sep = "";
    if (s->delay_s > 0 && off < n) {
        off += (size_t)snprintf(buf + off, n - off, "delay=%gms", s->delay_s * 1e3);
        sep = ",";
    }
    if (s->loss_pct > 0 && off < n) {
        off += (size_t)snprintf(buf + off, n - off, "%sloss=%g%%", sep, s->loss_pct);
        sep = ",";
    }
    if (s->rate_Bps > 0 && off < n) snprintf(buf + off, n - off, "%srate=%.0fbit", sep, s->rate_Bps * 8);
}

/* --- iproute2 -------------------------------------------------------------------- */

/* Runs argv (a NULL-terminated list) in namespace ns_fd (-1: this thread's), its output
 * collected. Returns 0, or DP_EIO with "CMD...: its output" in err. */
static int run_cmd(int ns_fd, char *const argv[], char *err)
{
    int fds[2];
    if (pipe(fds) < 0) return dp_fail(err, DP_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return dp_fail(err, DP_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[1]);
        if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNET) < 0) {
            fprintf(stderr, "setns: %s", strerror(errno));
            _exit(126);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char out[300];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) len += (size_t)r;
    close(fds[0]);
    out[len] = 0;
    while (len && (out[len - 1] == '\n' || out[len - 1] == ' ')) out[--len] = 0;
    for (char *p = out; *p; p++)
        if (*p == '\n') *p = ' ';
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return DP_OK;
    char cmd[200];
    size_t off = 0;
    cmd[0] = 0;
    for (int i = 0; argv[i] && off < sizeof cmd; i++)
        off += (size_t)snprintf(cmd + off, sizeof cmd - off, "%s%s", i ? " " : "", argv[i]);
    return dp_fail(err, DP_EIO, "`%s`: %s", cmd, out[0] ? out : "failed");
}

#define CMD(fd, ...) run_cmd((fd), (char *const[]){__VA_ARGS__, NULL}, err)

/* tc qdiscs for shape s on dev (in namespace ns_fd): netem (delay, loss) at the root with
 * tbf (rate) under it, or tbf alone. */
static int shape_dev(int ns_fd, const char *dev, const netns_shape *s, char *err)
{
    char rate[32], burst[32], delay[32], loss[32];
    /* tbf's bucket: 10 ms of the rate, at least a few full-size packets */
    snprintf(rate, sizeof rate, "%.0fbit", s->rate_Bps * 8);
    snprintf(burst, sizeof burst, "%.0f", fmax(16384, s->rate_Bps * 0.01));
    snprintf(delay, sizeof delay, "%.0fus", s->delay_s * 1e6);
    snprintf(loss, sizeof loss, "%g%%", s->loss_pct);
    int rc = DP_OK;
    if (s->delay_s > 0 || s->loss_pct > 0) {
        rc = CMD(ns_fd, "tc", "qdisc", "add", "dev", (char *)dev, "root", "handle", "1:", "netem",
                 "delay", delay, "loss", loss);
        if (!rc && s->rate_Bps > 0)
            rc = CMD(ns_fd, "tc", "qdisc", "add", "dev", (char *)dev, "parent", "1:1", "handle", "10:",
                     "tbf", "rate", rate, "burst", burst, "latency", "1s");
    } else if (s->rate_Bps > 0) {
        rc = CMD(ns_fd, "tc", "qdisc", "add", "dev", (char *)dev, "root", "tbf", "rate", rate, "burst",
                 burst, "latency", "1s");
    }
    return rc;
}

/* Delay or loss asked for: the kernel must have netem; tried once on a scratch veth
 * pair in the switch namespace. */
static int check_netem(const netns_shape *shapes, int n_shapes, char *err)
{
    const netns_shape *need = NULL;
    for (int i = 0; i < n_shapes && !need; i++)
        if (shapes[i].delay_s > 0 || shapes[i].loss_pct > 0) need = &shapes[i];
    if (!need) return DP_OK;
    char e2[DP_ERRLEN];
    int rc = run_cmd(-1, (char *const[]){"ip", "link", "add", "dpprobe0", "type", "veth", "peer", "name",
                                         "dpprobe1", NULL}, e2);
    if (!rc) rc = run_cmd(-1, (char *const[]){"tc", "qdisc", "add", "dev", "dpprobe0", "root", "netem",
                                               "delay", "1ms", NULL}, e2);
    run_cmd(-1, (char *const[]){"ip", "link", "del", "dpprobe0", NULL}, (char[DP_ERRLEN]){0});
    if (rc) {
        char text[160];
        netns_shape_format(need, text, sizeof text);
        const char *why = strstr(e2, "unknown") ? "this kernel has no netem qdisc (sch_netem)" : e2;
        return dp_fail(err, DP_EINVAL, "--net %s: delay and loss need tc netem, and %s; rate alone "
                       "works (tbf)", text, why);
    }
    return DP_OK;
}

/* --- namespaces ------------------------------------------------------------------ */

/* A new namespace for this thread, its fd in *fd (close-on-exec). */
static int new_ns(int *fd, char *err)
{
    if (unshare(CLONE_NEWNET) < 0)
        return dp_fail(err, DP_EIO, "--netns: cannot create a network namespace: unshare: %s%s",
                       strerror(errno), errno == EPERM ? " (needs root, CAP_NET_ADMIN)" : "");
    *fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return dp_fail(err, DP_EIO, "--netns: /proc/thread-self/ns/net: %s", strerror(errno));
    return DP_OK;
}

static int add_task(netns_net *n, int slot, int job, int index, char *err);

netns_net *netns_new(int n_ps, int n_workers, const netns_shape *shapes, int n_shapes, char *err)
{
    int n_tasks = n_ps + n_workers;
    dp_assert("netns: task addresses fit the /24", n_tasks >= 0 && n_tasks <= 250);
    netns_net *n = xcalloc(1, sizeof *n);
    n->sw_fd = -1;
    n->n_tasks = n_tasks;
    n->shapes = shapes;
    n->n_shapes = n_shapes;
    n->task_fd = xmalloc((size_t)(n_tasks + 1) * sizeof *n->task_fd);
    n->addr = xcalloc((size_t)n_tasks + 1, sizeof *n->addr);
    for (int i = 0; i < n_tasks; i++) {
        n->task_fd[i] = -1;
        snprintf(n->addr[i], sizeof n->addr[i], NETNS_PREFIX "%d", i + 2);
    }
    snprintf(n->hub_addr, sizeof n->hub_addr, NETNS_PREFIX "1");
    char e2[DP_ERRLEN];
    n->home_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (n->home_fd < 0) {
        dp_fail(err, DP_EIO, "--netns: /proc/thread-self/ns/net: %s", strerror(errno));
        goto fail;
    }
    if (run_cmd(-1, (char *const[]){"ip", "-V", NULL}, e2)) {
        dp_fail(err, DP_EIO, "--netns: needs iproute2's `ip` and `tc`: %s", e2);
        goto fail;
    }
    if (new_ns(&n->sw_fd, err)) goto fail;
    if (CMD(-1, "ip", "link", "set", "lo", "up") ||
        CMD(-1, "ip", "link", "add", NETNS_BRIDGE, "type", "bridge") ||
        CMD(-1, "ip", "addr", "add", NETNS_PREFIX "1/24", "dev", NETNS_BRIDGE) ||
        CMD(-1, "ip", "link", "set", NETNS_BRIDGE, "up")) {
        snprintf(e2, sizeof e2, "%s", err);
        dp_fail(err, DP_EIO, "--netns: cannot set up the bridge: %s", e2);
        goto fail;
    }
    if (check_netem(shapes, n_shapes, err)) goto fail;
    for (int i = 0; i < n_tasks; i++)
        if (add_task(n, i, i < n_ps ? JOB_PS : JOB_WORKER, i < n_ps ? i : i - n_ps, err)) goto fail;
    return n;
fail:
    netns_free(n);
    return NULL;
}

/* Task `slot`: its namespace, veth pair, address and tc shaping. */
static int add_task(netns_net *n, int slot, int job, int index, char *err)
{
    dp_assert("netns: slot in range", slot >= 0 && slot < n->n_tasks);
    int fd = -1;
    int rc = new_ns(&fd, err);
    if (rc) return rc;
    if (setns(n->sw_fd, CLONE_NEWNET) < 0) {
        /* cannot happen short of a kernel refusal; the thread must not stay there */
        dp_assert("netns: back to the switch namespace", 0);
    }
    n->task_fd[slot] = fd;
    char port[16], nspath[64], addr[24], name[64];
    snprintf(port, sizeof port, "dpv%d", slot);
    snprintf(nspath, sizeof nspath, "/proc/%d/fd/%d", (int)getpid(), fd);
    snprintf(addr, sizeof addr, "%s/24", n->addr[slot]);
    rc = CMD(-1, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", nspath);
    if (!rc) rc = CMD(-1, "ip", "link", "set", port, "master", NETNS_BRIDGE, "up");
    if (!rc) rc = CMD(fd, "ip", "link", "set", "lo", "up");
    if (!rc) rc = CMD(fd, "ip", "addr", "add", addr, "dev", "eth0");
    if (!rc) rc = CMD(fd, "ip", "link", "set", "eth0", "up");
    for (int i = 0; i < n->n_shapes && !rc; i++) {
        const netns_shape *s = &n->shapes[i];
        if (s->job != job || s->task != index) continue;
        /* both directions: out of the task (its eth0) and into it (the bridge's port) */
        rc = shape_dev(fd, "eth0", s, err);
        if (!rc) rc = shape_dev(-1, port, s, err);
    }
    if (rc) {
        char e2[DP_ERRLEN];
        snprintf(e2, sizeof e2, "%s", err);
        dp_fail(err, DP_EIO, "--netns: task %s: %s", spec_task_name(name, sizeof name, (dp_job)job, index), e2);
    }
    return rc;
}

int netns_listen(netns_net *n, int slot, int *port, char *err)
{
    if (setns(n->task_fd[slot], CLONE_NEWNET) < 0)
        return dp_fail(err, DP_EIO, "--netns: setns: %s", strerror(errno));
    int fd = net_listen(n->addr[slot], 0, port, err);
    if (setns(n->sw_fd, CLONE_NEWNET) < 0) dp_assert("netns: back to the switch namespace", 0);
    return fd;
}

int netns_task_fd(const netns_net *n, int slot)
{
    return n && slot >= 0 && slot < n->n_tasks ? n->task_fd[slot] : -1;
}

const char *netns_task_addr(const netns_net *n, int slot) { return n->addr[slot]; }
const char *netns_hub_addr(const netns_net *n) { return n->hub_addr; }

int netns_enter(int fd) { return setns(fd, CLONE_NEWNET); }

void netns_free(netns_net *n)
{
    if (!n) return;
    if (n->home_fd >= 0) {
        if (setns(n->home_fd, CLONE_NEWNET) < 0)
            dp_log(DP_LOG_WARN, "cluster", "--netns: cannot return to the first namespace: %s", strerror(errno));
        close(n->home_fd);
    }
    if (n->sw_fd >= 0) close(n->sw_fd);
    for (int i = 0; i < n->n_tasks; i++)
        if (n->task_fd[i] >= 0) close(n->task_fd[i]);
    free(n->task_fd);
    free(n->addr);
    free(n);
}
