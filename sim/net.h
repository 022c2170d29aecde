/* net.h — the simulator's flow-level network. Links have capacities (bytes/s); a flow
 * group is g.k identical flows that cross a few links (a link may be crossed by several
 * of the group's flows: weight w = how many). All flows of a group always get the same
 * rate, the max-min fair one, computed by progressive filling (water-filling) and
 * recomputed only when groups start or finish (lazily: once per instant, however many
 * start or finish then). A group finishes when its bytes per flow are sent.
 * Grouping is how 10,000 workers stay cheap: workers that start the same phase at the
 * same instant form one group per ps (weight k on the ps link, weight 1 on a stand-in
 * link for their identical NICs); by symmetry max-min gives them equal rates, so the
 * grouped answer is exact. Single-threaded. Times are seconds (double). */
#ifndef SIM_NET_H
#define SIM_NET_H

#include <stdint.h>

#define SIM_NET_MAX_LINKS 4

typedef struct sim_net sim_net;

typedef struct sim_net_done {
    int group;
    int64_t cookie;
} sim_net_done;

/* A network at time 0 with no links. Free with sim_net_free(). */
sim_net *sim_net_new(void);
void sim_net_free(sim_net *n);

/* Adds a link of capacity cap bytes/s (> 0). A temporary link is freed by itself when
 * its last group finishes. Returns the link id. */
int sim_net_link_add(sim_net *n, double cap, int temporary);

/* Starts a group at the network's current time (call sim_net_advance first): flows crossing
 * links[0..nl) with weights w (NULL: all 1), each flow sending `bytes` (> 0). The
 * cookie comes back on completion. Returns the group id. */
int sim_net_group_add(sim_net *n, const int *links, const double *w, int nl, double bytes,
                      int64_t cookie);

/* Declares permanent link `link` a twin of `rep` (same capacity; call before any group
 * starts). The caller promises that twins stay interchangeable: every group on them is
 * started by sim_net_cohort_add, which always includes every link of a class, with
 * equal bytes. Then all links of a class carry the same flows, get the same rate and
 * finish them together, so one group on the class's rep stands for all of them. */
void sim_net_twin(sim_net *n, int link, int rep);

/* Starts, on the fresh temporary link nic, one flow to each of links[0..np) (permanent,
 * increasing ids), of bytes[i], weight w on links[i] and 1 on nic, reporting cookies[i]:
 * the same rates, completion times and reports (same order) as np calls of
 * sim_net_group_add({links[i], nic}, {w, 1}, 2, bytes[i], cookies[i]), but twins share
 * one group (weight class size on nic). Needs the fast path; every group on nic must come
 * from this call. Returns the number of groups made (a done report's group is the id of
 * the member's shared group). */
int sim_net_cohort_add(sim_net *n, int nic, const int *links, const double *bytes,
                       const int64_t *cookies, int np, double w);

/* A cohort plan: a fixed list of permanent links links[0..np) (increasing ids) with the
 * bytes and cookies of their flows, whose twin classes are worked out once, for callers
 * that start many cohorts on the same links. Returns the plan id. */
int sim_net_plan_add(sim_net *n, const int *links, const double *bytes, const int64_t *cookies, int np);

/* sim_net_cohort_add(n, nic, links, bytes, cookies + cookie_base, np, w) for a plan's
 * links, bytes and cookies (each cookie plus cookie_base). */
int sim_net_cohort_add_plan(sim_net *n, int nic, int plan, int64_t cookie_base, double w);

/* Time at which the next group finishes (recomputing rates first if groups started or
 * finished since the last call), or INFINITY when nothing is in flight. */
double sim_net_next(sim_net *n);

/* Moves the network to time t (>= its current time, <= sim_net_next()), draining every
 * group at its rate, and returns the groups that finished (their bytes all sent, to
 * within a nanosecond's worth) in *done (borrowed until the next call; in group start
 * order). Returns their count. */
int sim_net_advance(sim_net *n, double t, const sim_net_done **done);

/* Per-flow rate of an in-flight group (bytes/s), after sim_net_next(). */
double sim_net_rate(sim_net *n, int group);
/* Bytes left per flow of an in-flight group at the network's current time. */
double sim_net_remaining(const sim_net *n, int group);
double sim_net_time(const sim_net *n);
int sim_net_active(const sim_net *n);
/* Turns the fast path (net_fast.c) on (the default) or off, so that every solve is the
 * general progressive filling; the allocation is the same either way (tests compare). */
void sim_net_fast_enable(sim_net *n, int on);
/* Number of rate recomputations so far. */
uint64_t sim_net_solves(const sim_net *n);
/* Number of times a NIC joined the fast path's saturated set S so far (net_sat.c: its
 * rate fixed until its groups change; for tests that must reach it, and the bench). */
uint64_t sim_net_sat_joins(const sim_net *n);

#endif
