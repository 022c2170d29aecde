/* hub.h — the instrumentation hub behind `downpour hub`: one libev loop that accepts task
 * streams and viewer subscriptions on the same port (the first frame says which),
 * estimates each task's clock offset from round trips at connect time, remaps each
 * task's string ids into one global table, merges everything into one time-ordered
 * stream (events are held for a small reorder window), records it to a trace file and
 * fans it out to any number of subscribers. A subscriber attaching mid-run first gets
 * the state needed to draw, then the live stream; a slow one has events dropped and
 * counted, never slowing the hub. Bad frames close only the offending connection.
 * Threading: evt_hub_run() runs the loop on the calling thread; evt_hub_stop(),
 * evt_hub_get_stats() and evt_hub_task_offset() may be called from any thread while it
 * runs. */
#ifndef HUB_HUB_H
#define HUB_HUB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EVT_HUB_DEFAULT_ADDR "127.0.0.1:7411"

typedef struct evt_hub evt_hub;

typedef struct evt_hub_options {
    const char *listen;        /* "host:port" (port 0 = ephemeral); NULL = EVT_HUB_DEFAULT_ADDR */
    const char *trace_path;    /* record here; NULL = no recording */
    const char *metadata_json; /* trace header metadata; NULL = {"engine":"real","source":"hub"} */
    int reorder_ms;            /* hold events this long to merge in time order (default 50) */
    int probes;                /* clock probes per task at connect (default 8) */
    size_t sub_queue_bytes;    /* per-subscriber output bound (default 8 MiB) */
    size_t subs_total_bytes;   /* every subscriber's queues together (default 64 MiB): with
                                * many subscribers each gets its share of it, so stalled
                                * ones cost at most this much however many there are */
    int max_subscribers;       /* at once (default 64); more are refused */
    int max_conns;             /* connections at once, tasks included (default 4096); more
                                * are closed at accept */
    int sub_stall_s;           /* a subscriber dropping events this long is disconnected
                                * (default 30) */
    int sub_sndbuf;            /* SO_SNDBUF for subscriber sockets; 0 = kernel default */
    int exit_when_idle_ms;     /* > 0: stop once tasks have come and all have been gone
                                * this long (for launchers) */
    int handle_signals;        /* stop on SIGINT / SIGTERM (watched in the hub's loop) */
    int progress_ms;           /* > 0: a stats line on stderr this often */
    int quiet;                 /* connection and stop lines at debug level (for launchers
                                * whose own output tells the story); warnings stay */
    /* evt_hub_serve() only: called once the hub is bound, before "hub listening on" is
     * printed and before its loop runs, with the bound address (`downpour hub --http`
     * starts its web page here, subscribed to the hub: web/web.h). Non-zero, with err
     * filled, stops the hub before it starts. NULL: nothing. */
    int (*on_bound)(void *ctx, const char *addr, char *err);
    void *on_bound_ctx;
} evt_hub_options;

/* Fills o with the defaults above. */
void evt_hub_options_init(evt_hub_options *o);

/* Binds and listens (so the port is known before evt_hub_run) and opens the trace.
 * opt is copied. Returns NULL with err filled on failure. Free with evt_hub_free(). */
evt_hub *evt_hub_new(const evt_hub_options *opt, char *err);

/* Frees the hub; it must not be running. NULL is a no-op. */
void evt_hub_free(evt_hub *h);

/* The bound address, "127.0.0.1:40123"; borrowed until evt_hub_free(). */
const char *evt_hub_address(const evt_hub *h);
int evt_hub_port(const evt_hub *h);

/* With a secret ($DOWNPOUR_HUB_SECRET, else $DOWNPOUR_SECRET: net/auth.h) every
 * connection authenticates before its hello; a subscriber may use this read-only token
 * (derived from the secret) as its secret instead. NULL without a secret; borrowed until
 * evt_hub_free(). */
const char *evt_hub_viewer_token(const evt_hub *h);

/* Runs the loop on the calling thread until evt_hub_stop(), a signal (with
 * handle_signals) or the idle rule. On the way out it flushes the reorder window to the
 * trace and to subscribers, closes every connection and closes the trace properly.
 * Returns 0, or a dp_err with err filled when closing the trace failed. Runs once. */
int evt_hub_run(evt_hub *h, char *err);

/* Asks a running (or about to run) hub to stop; returns at once. Any thread, and
 * async-signal-safe. */
void evt_hub_stop(evt_hub *h);

/* Convenience for launchers and tests: evt_hub_run() on a new thread / stop it and
 * wait for it (returns evt_hub_run's result, message in err). */
int evt_hub_start_thread(evt_hub *h, char *err);
int evt_hub_join(evt_hub *h, char *err);

typedef struct evt_hub_stats {
    uint64_t tasks_now, tasks_total;   /* task streams: connected now / ever */
    uint64_t subs_now, subs_total;     /* subscribers */
    uint64_t events_in;                /* records received from tasks */
    uint64_t events_out;               /* records merged (recorded and fanned out) */
    uint64_t events_late;              /* merged after a later one had gone out */
    uint64_t sub_dropped;              /* records dropped for slow subscribers, total */
    uint64_t task_dropped;             /* latest EVENTS_DROPPED counts of tasks, summed */
    uint64_t bad_conns;                /* connections closed for protocol errors */
    uint64_t conns_refused;            /* over max_conns, closed at accept */
    uint64_t subs_refused;             /* over max_subscribers */
    uint64_t subs_cut;                 /* disconnected after sub_stall_s of dropping */
    uint64_t bytes_in;
} evt_hub_stats;

/* A snapshot of the counters (refreshed every loop tick, ~10 ms). */
void evt_hub_get_stats(evt_hub *h, evt_hub_stats *st);

/* The clock offset estimated for task (job, task) at its last connect: task clock
 * minus hub clock, ns, and the round trip of the sample used. Returns 0, or
 * DP_ENOTFOUND when that task has not synchronised yet. */
int evt_hub_task_offset(evt_hub *h, int job, int task, int64_t *offset_ns, int64_t *rtt_ns);

/* `downpour hub` in one call, on the calling thread: ignores SIGPIPE (process-wide: a
 * peer that goes away must not kill the hub), creates the hub from opt, prints "hub
 * listening on HOST:PORT" on out and flushes it (launchers read the port from it), notes
 * "hub: recording to FILE" on stderr, runs it (evt_hub_run) until it stops, prints the
 * closing statistics on stderr ("hub: done: N tasks, N viewers, ...") and frees it.
 * Returns 0, or a dp_err with err filled: the hub could not start (nothing printed), or
 * the trace could not be closed (reported after the statistics). opt and out are
 * borrowed for the call. */
int evt_hub_serve(const evt_hub_options *opt, FILE *out, char *err);

#endif
