/* event.h — Downpour's one event vocabulary: the in-memory event record, the kinds and
 * their snake_case names, and the string table that interns names (tasks' hosts,
 * devices, variables, op types, log text) once. Shared by runtime/, sim/ (producers)
 * and viz/ (consumer). Depends on nothing of ours but common/. */
#ifndef EVENTS_EVENT_H
#define EVENTS_EVENT_H

#include <stddef.h>
#include <stdint.h>

/* Jobs as they appear in events. */
enum evt_job { EVT_JOB_PS = 0, EVT_JOB_WORKER = 1, EVT_JOB_CLIENT = 2, EVT_JOB_HUB = 3 };

/* Event kinds. Field use per kind (fields not named are zero / -1):
 *   CLUSTER_START   str=config JSON                      CLUSTER_STOP  value=wall seconds,
 *                   value2=the host's CPU seconds in irq and softirq handling during the run
 *                   (/proc/stat, all cores: on loopback mostly receiving what tasks sent,
 *                   which no task's CPU counts; a real run's launcher; 0 unknown)
 *   TASK_START      str=host, bytes=pid                  TASK_STOP     value=exit status,
 *                   value2=CPU seconds the task's work used (a real worker's training loop,
 *                   with a straggler's extra time as in COMPUTE_END; a real ps's serving;
 *                   0 unknown)
 *   DEVICE          device=device name
 *   VAR_DEFINE      var, str=shape ("784x128"), bytes
 *   VAR_PLACE       var, peer=ps task, device            OP_PLACE      var=op name, str=op type, device
 *   PULL_BEGIN/END  worker task, peer=ps, var, bytes, step=worker local step, id=message id
 *                   (PULL_END: value=version read, dur=ns since begin)
 *   PUSH_BEGIN/END  as pulls (PUSH_END: dur)
 *   APPLY           ps task, peer=worker, var, step=global step after, value=staleness, id=push id
 *   DROP            ps task, peer=worker, var, step=current step, value=staleness, id=push id
 *   COMPUTE_BEGIN/END worker, device, step (END: dur, value2=the span's work in seconds:
 *                   the CPU it used, plus a straggler's extra time; the simulator's its
 *                   draw; 0 unknown. On a shared host dur is longer than the work.
 *                   value=the CPU seconds a real worker spent between its ops sending
 *                   early gradients and reading what came, left out of value2; 0 none)
 *   STEP_END        worker, step=local step, value=loss, value2=global step read
 *   BARRIER_WAIT/RELEASE  worker, step (RELEASE: dur waited)
 *   SSP_WAIT/RELEASE      worker, step, value=min clock of the others
 *   GLOBAL_STEP     step=new global step
 *   EVAL            step, value=accuracy, value2=loss, dur=ns it took (0 unknown)
 *   CHECKPOINT_WRITE/RESTORE  step, str=path
 *   FAILURE/RECOVERY  task that failed (peer=-1), str=reason
 *   LOG             str=text, value=level
 *   EVENTS_DROPPED  bytes=number of events this task dropped so far (cumulative). The first
 *                   one after a reconnect: value=1, step=the resume point (the task's
 *                   events 1..step were acknowledged by an earlier connection), id=the
 *                   definition copies re-sent right after it. Written by the hub for each
 *                   task still streaming when it stops: peer_job=hub, value=2, step=the
 *                   task's events 1..step this hub recorded, id=its resume point there
 *                   (docs/stream-protocol.md, "Delivery")
 *   CLOCK_SYNC      value=estimated offset ns (hub-side bookkeeping)
 *   PACED_BEGIN/END worker, device, step (BEGIN: value=--pace in seconds; END: dur):
 *                   the wait --pace adds after compute, before the push (appended last,
 *                   so the kinds above keep their numbers in existing traces)
 *   BARRIER_TIMEOUT worker that gave up, step=the global step it waited at, peer=the
 *                   worker it waited for (peer_job worker), value=seconds waited,
 *                   str=the error (`--barrier-timeout`; the run stops)
 *   GRAD_REJECTED   ps that refused a gradient holding NaN or Inf (TensorFlow's
 *                   check_numerics): peer=the worker, var, step=the variable's version,
 *                   value=the index of the first bad element, str=what it was
 *   PS_RETRY        worker that lost a ps and reconnects: peer=the ps (peer_job ps),
 *                   value=the attempt (1 = the loss itself), dur=ns since the loss,
 *                   str=why the connection was lost or the attempt failed
 */
typedef enum evt_kind {
    EVT_CLUSTER_START = 1, EVT_CLUSTER_STOP, EVT_TASK_START, EVT_TASK_STOP, EVT_DEVICE,
    EVT_VAR_DEFINE, EVT_VAR_PLACE, EVT_OP_PLACE,
    EVT_PULL_BEGIN, EVT_PULL_END, EVT_PUSH_BEGIN, EVT_PUSH_END,
    EVT_APPLY, EVT_DROP, EVT_COMPUTE_BEGIN, EVT_COMPUTE_END, EVT_STEP_END,
    EVT_BARRIER_WAIT, EVT_BARRIER_RELEASE, EVT_SSP_WAIT, EVT_SSP_RELEASE,
    EVT_GLOBAL_STEP, EVT_EVAL, EVT_CHECKPOINT_WRITE, EVT_CHECKPOINT_RESTORE,
    EVT_FAILURE, EVT_RECOVERY, EVT_LOG, EVT_EVENTS_DROPPED, EVT_CLOCK_SYNC,
    EVT_PACED_BEGIN, EVT_PACED_END, EVT_BARRIER_TIMEOUT, EVT_PS_RETRY,
    EVT_GRAD_REJECTED,
    EVT_KIND_COUNT
} evt_kind;

/* One event. Strings are ids into the string table of the stream/trace it belongs to
 * (0 = none). */
typedef struct evt_record {
    int64_t t;          /* ns since trace start, on the aligned clock */
    uint16_t kind;      /* evt_kind */
    uint8_t job;        /* source job (evt_job) */
    uint8_t peer_job;   /* job of peer (evt_job) */
    int32_t task;       /* source task index */
    int32_t peer;       /* peer task index, -1 none */
    uint32_t device;    /* string id */
    uint32_t var;       /* string id */
    uint32_t str;       /* string id: host, shape, op type, text, path, config */
    int64_t step;
    int64_t bytes;
    int64_t dur;        /* ns */
    uint64_t id;        /* message / flow id, unique per source task */
    double value;
    double value2;
} evt_record;

/* Zeroed record with peer = -1. */
void evt_init(evt_record *e, evt_kind kind, int job, int task);

/* "pull_end", "apply", ...; "unknown" for an out-of-range kind. */
const char *evt_kind_name(int kind);
/* Kind from its snake_case name, or -1. */
int evt_kind_from_name(const char *name);

/* ---- string table: interns strings, ids 1..n (0 = none). -------------------------- */
typedef struct evt_strtab evt_strtab;

evt_strtab *evt_strtab_new(void);
void evt_strtab_free(evt_strtab *t);
/* Returns the id of s, adding it if new (copied). O(1) expected. */
uint32_t evt_strtab_intern(evt_strtab *t, const char *s);
/* Adds s under a given id (used by readers replaying definitions); DP_EINVAL if the
 * id is not the next one. */
int evt_strtab_define(evt_strtab *t, uint32_t id, const char *s, size_t len);
/* The string for id, or "" for 0 / unknown ids. Borrowed until the table is freed. */
const char *evt_strtab_get(const evt_strtab *t, uint32_t id);
uint32_t evt_strtab_count(const evt_strtab *t);

/* ---- compact binary codec (varints, zig-zag, delta time against `prev_t`). --------
 * evt_encode writes at most EVT_MAX_ENCODED bytes to buf and returns the count.
 * evt_decode reads one record from (buf, len); returns bytes consumed, or a negative
 * dp_err on a truncated or malformed record (never reads past len). */
#define EVT_MAX_ENCODED 128
size_t evt_encode(const evt_record *e, int64_t prev_t, uint8_t *buf);
int evt_decode(const uint8_t *buf, size_t len, int64_t prev_t, evt_record *e);

/* The varint (LEB128) and zig-zag codec of records and trace files alike: the one
 * copy. evt_varint_put writes at most 10 bytes at p and returns the end;
 * evt_varint_get reads at *pos, never past len, and fails (DP_ECORRUPT) on truncation
 * or more than 64 bits. */
static inline uint8_t *evt_varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}
static inline int evt_varint_get(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len) return -7;   /* DP_ECORRUPT */
        uint8_t b = buf[(*pos)++];
        if (shift == 63 && b > 1) return -7;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -7;
}
static inline uint64_t evt_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t evt_unzigzag(uint64_t v) { return (int64_t)((v >> 1) ^ (~(v & 1) + 1)); }

#endif
