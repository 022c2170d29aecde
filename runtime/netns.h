/* netns.h — `cluster --netns` / `--net`: every task in its own network namespace, as on
 * separate hosts. The launcher's thread moves into a private "switch" namespace holding a
 * bridge (10.213.0.1/24, where the hub listens); each task gets a namespace of its own and
 * a veth pair, eth0 (10.213.0.2, .3, ...) inside it, the other end a port of the bridge.
 * Every namespace is anonymous: held only by the launcher's fds and the task itself, so
 * it and its links vanish with them, even when the launcher is killed with SIGKILL;
 * nothing is created in the namespace the launcher started in. A `--net` shape is put on
 * both directions of a task's link with tc: netem for delay/loss (refused where the
 * kernel has no sch_netem), tbf for rate. Linux only; needs root (CAP_NET_ADMIN) and
 * iproute2 (`ip`, `tc`). Not thread-safe: one netns_net per launcher, used by the thread
 * that created it (namespaces are per thread: threads it starts later inherit the
 * switch namespace, which is how the hub thread comes to listen there). */
#ifndef RUNTIME_NETNS_H
#define RUNTIME_NETNS_H

#include <stddef.h>

/* One `--net JOB:I:delay=T,loss=P%,rate=BW` (keys optional, at least one). */
typedef struct netns_shape {
    int job;            /* JOB_PS or JOB_WORKER (cluster/spec.h) */
    int task;
    double delay_s;     /* one-way, each direction (0: none) */
    double loss_pct;    /* each direction, 0..100 (0: none) */
    double rate_Bps;    /* bytes/s, each direction (0: unlimited) */
} netns_shape;
#define NETNS_MAX_SHAPES 64

/* Parses one --net value; `what` names the flag or key in messages ("--net"). Returns 0,
 * or DP_EINVAL with one line naming `what`, the bad part and the syntax. */
int netns_shape_parse(const char *s, const char *what, netns_shape *out, char *err);
/* Writes s as the viewer's label: "20 ms, 1% loss, 10 Mbit/s". */
void netns_shape_label(const netns_shape *s, char *buf, size_t n);
/* Writes s back in the syntax netns_shape_parse reads ("worker:1:delay=20ms,rate=10mbit"). */
void netns_shape_format(const netns_shape *s, char *buf, size_t n);

typedef struct netns_net netns_net;

/* The network of n_ps ps and n_workers worker tasks: moves the calling thread into a new
 * switch namespace and brings up the bridge; when a shape asks for delay or loss, checks
 * once that the kernel has netem (a scratch veth pair there); then gives each task a
 * namespace, a veth link, an address and its shape (borrowed until netns_free). Task
 * slots: the ps tasks 0..n_ps-1, then the workers; slot i's address is 10.213.0.(i+2).
 * Returns the handle (free with netns_free), or NULL with one line in err naming
 * --netns/--net and why (not root, no `ip`, no netem); the thread is then back where it
 * was and nothing is left behind. */
netns_net *netns_new(int n_ps, int n_workers, const netns_shape *shapes, int n_shapes, char *err);

/* A listening socket on the task's address, port from the OS, made inside its namespace
 * (a socket belongs to the namespace it was created in). Returns the fd (the caller owns
 * it) and *port, or a negative code. */
int netns_listen(netns_net *n, int slot, int *port, char *err);

/* The task's namespace fd (borrowed until netns_free; a child setns()es into it before
 * exec), or -1. */
int netns_task_fd(const netns_net *n, int slot);
/* "10.213.0.5": the task's address (borrowed until netns_free). */
const char *netns_task_addr(const netns_net *n, int slot);
/* "10.213.0.1": the bridge's address, where the launcher's hub listens. */
const char *netns_hub_addr(const netns_net *n);

/* In a forked child before exec: setns() into fd. Returns 0, or -1 with errno. */
int netns_enter(int fd);

/* Returns the calling thread to the namespace it was in before netns_new and closes every
 * namespace fd: the namespaces die as soon as no task is left in them. NULL: a no-op. */
void netns_free(netns_net *n);

#endif
