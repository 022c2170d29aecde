/* hub_internal.h — the hub's private structures, shared by hub.c (loop, connections),
 * hub_frame.c (what connections say: handshake, hello, clock sync, resume, events) and
 * hub_merge.c (reorder window, recording, late-subscriber state, fan-out). Not for use
 * outside hub/. All of it belongs to the hub's loop thread, except the fields marked
 * "under mu". */
#ifndef HUB_HUB_INTERNAL_H
#define HUB_HUB_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <ev.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/hub.h"
#include "events/trace.h"
#include "hub/wire.h"
#include "net/auth.h"
#include "net/conn.h"

enum { HC_NEW, HC_TASK, HC_SUB };

/* Where a task's EVENTS frame ended: once every held event that arrived before `arrival`
 * has left the reorder window (and the trace is flushed), the task's records 1..seq
 * are acknowledged. */
typedef struct hub_ackmark { uint64_t arrival, seq; } hub_ackmark;
#define HUB_MARKS_MAX 1024

typedef struct hub_conn {
    net_conn *conn;                 /* NULL once closed */
    struct evt_hub *hub;
    struct hub_conn *prev, *next;   /* live list; `next` links the dead list after close */
    int role, dead;
    int64_t born;                   /* hub time of accept */
    char peer[96], name[32];
    /* task */
    int job, task, synced;
    uint64_t probe_seq;
    int64_t best_rtt, offset;       /* offset = task clock - hub clock */
    uint32_t *map;                  /* task string id i+1 -> global id */
    uint32_t map_len, map_cap;
    int resumed;                    /* RESUME received (or events began without one) */
    uint64_t seq_recv, seq_acked;   /* the task's records received / acknowledged */
    uint32_t copies_left;           /* unsequenced definition copies still to come */
    int copies_known;               /* this hub has those definitions: do not record */
    uint64_t seq_seen;              /* records up to here came on an earlier connection */
    hub_ackmark marks[HUB_MARKS_MAX];  /* frames received, not yet acknowledged, in order */
    size_t nmarks;
    /* subscriber */
    uint32_t defs_sent;             /* global ids 1..defs_sent already sent */
    uint64_t dropped, dropped_sent;
    int64_t stalled_since;          /* subscriber: first drop of its current full spell, 0 none */
} hub_conn;

typedef struct hub_offset {
    int job, task, synced;
    int64_t offset, rtt;
    uint64_t dropped;               /* the task's latest EVENTS_DROPPED count */
    int sequenced;                  /* the fields below are known (the task sent RESUME) */
    uint64_t incarnation;           /* ... for this process of the task (a restarted task
                                     * numbers its records from 1 again) */
    uint64_t first;                 /* the task's records 1..first came before this hub */
    uint64_t received;              /* ... 1..received have reached this hub */
    uint64_t recorded;              /* ... 1..recorded are acknowledged (in the trace) */
    uint64_t defs_through;          /* this hub has every definition up to this record */
} hub_offset;

typedef struct hub_item {
    evt_record e;
    uint64_t seq;                   /* arrival order, breaks time ties */
} hub_item;

struct evt_hub {
    evt_hub_options opt;            /* string fields cleared: not kept */
    char address[128];
    int port, ran, running, has_thread, thread_rc, had_tasks, trace_failed;
    auth_key key, viewer_key;       /* the secret's key, the viewer token's (key.set == 0:
                                     * no handshake) */
    char viewer_token[AUTH_TOKEN_CHARS + 1];
    pthread_t thread;
    char thread_err[DP_ERRLEN];
    struct ev_loop *loop;
    net_listener *listener;         /* the connection cap (max_conns) */
    ev_async stop_w;
    ev_timer tick;
    ev_signal sigint_w, sigterm_w;
    int64_t t0;                     /* hub monotonic ns at start = trace time 0 */
    int64_t idle_since, last_progress, last_ack;
    uint64_t last_progress_events;
    hub_conn *conns, *dead;
    evt_strtab *strings;            /* global table */
    trace_writer *trace;
    uint32_t *trace_ids;            /* global id -> trace id */
    uint32_t ntrace_ids, trace_ids_cap;
    evt_record *scratch;            /* decode buffer */
    size_t nscratch, scratch_cap;
    /* merge */
    hub_item *heap;
    size_t nheap, heap_cap;
    uint64_t seq;
    int64_t last_out_t;
    evt_record out[EVT_WIRE_MAX_BATCH];
    size_t nout;
    dp_buf frame;
    evt_record *state;              /* what a late subscriber needs to draw */
    size_t nstate, state_cap;
    evt_record gstep;
    int have_gstep;
    evt_hub_stats st;
    /* under mu */
    pthread_mutex_t mu;
    evt_hub_stats snap;
    hub_offset *offsets;
    size_t noffsets, offsets_cap;
};

int64_t hub_now(const evt_hub *h);
void hub_conn_close(evt_hub *h, hub_conn *c, const char *why, int bad);
/* Where c's frames are built (net_conn_stage), and sending what was built. */
static inline dp_buf *hub_out(hub_conn *c) { return net_conn_stage(c->conn); }
int hub_conn_flush(evt_hub *h, hub_conn *c);

/* hub_frame.c */
/* The clock and delivery bookkeeping of task (job, task), made on first use. Under mu. */
hub_offset *hub_offset_slot(evt_hub *h, int job, int task);
/* Handles one frame of c; returns 0, or a negative code with why filled (the caller
 * closes the connection). */
int hub_handle_frame(evt_hub *h, hub_conn *c, const net_frame *fh, const uint8_t *p, char *why);

/* hub_merge.c */
uint32_t hub_intern(evt_hub *h, const char *s);
/* Takes a copy of e (aligned hub time, global string ids) into the reorder window. */
void hub_merge_push(evt_hub *h, const evt_record *e);
/* Emits, in time order, every held event with t <= cutoff: recorded, remembered as
 * state where it matters, and fanned out. */
void hub_merge_emit(evt_hub *h, int64_t cutoff);
/* Sends merged-but-unsent output to the subscribers now. */
void hub_merge_fan_out(evt_hub *h);
/* Queues the state snapshot for a new subscriber c and flushes. */
void hub_merge_send_state(evt_hub *h, hub_conn *c);
void hub_merge_release(evt_hub *h);

#endif
