/* chrome.c — Chrome / Perfetto JSON export of a trace (rules in chrome.h). One pass over
 * the events writes metadata, async pairs, counters and instants as it goes; X slices
 * (and the flow events bound to them) are collected, sorted per process and thread
 * group, assigned to non-overlapping lanes, and written at the end. Matching state
 * (open pulls/pushes/computes/waits, pushes awaiting their apply) lives in one hash
 * map keyed by (class, job, task, a, b). Single-threaded. */
#include "events/chrome.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/event.h"

enum cls { C_PULL, C_PUSH, C_FLOW, C_COMPUTE, C_BARRIER, C_SSP, C_TASK_PID, C_DEV_PID,
           C_THREAD, C_PACED };

/* thread groups; lanes of a group are tids group * 1000 + lane */
enum grp { G_EVENTS = 1, G_PULLS = 2, G_PUSHES = 3, G_WAIT = 10, G_SEND = 20, G_APPLY = 30,
           G_COMPUTE = 40, G_PACED = 50, G_EVAL = 60 };

#define MARK_NS 1000            /* width of send / apply marker slices */

typedef struct key {
    uint8_t cls, job;
    int32_t task;
    uint64_t a;
    uint32_t b;
} key;

typedef struct entry {
    key k;
    int used, dead;
    uint64_t v;                 /* async id, slice index, pid, ... */
    int64_t t;                  /* begin time */
    uint32_t var;
} entry;

typedef struct map {
    entry *e;
    size_t cap, used;           /* used counts dead entries too */
} map;

typedef struct slice {
    int64_t start, dur;
    uint32_t pid;
    uint16_t grp;
    uint16_t kind;              /* evt_kind that made it */
    uint32_t var;
    int32_t peer;
    int64_t step;
    double value;
    uint64_t flow_out, flow_in;
    size_t seq;
    int tid;
} slice;

typedef struct cx {
    FILE *out;
    trace_reader *r;
    int first;
    map m;
    slice *s;
    size_t ns, scap;
    uint32_t next_pid;
    uint64_t next_async, next_flow;
    int64_t t_end;
} cx;

/* ---- map ------------------------------------------------------------------------------ */

static uint64_t key_hash(const key *k)
{
    uint64_t h = (uint64_t)k->cls * 0x9e3779b97f4a7c15ull ^ (uint64_t)k->job << 56 ^
                 (uint64_t)(uint32_t)k->task * 0xbf58476d1ce4e5b9ull ^ k->a * 0x94d049bb133111ebull ^
                 (uint64_t)k->b * 0x2545f4914f6cdd1dull;
    h ^= h >> 31;
    h *= 0xd6e8feb86659fd93ull;
    return h ^ (h >> 32);
}

static int key_eq(const key *x, const key *y)
{
    return x->cls == y->cls && x->job == y->job && x->task == y->task && x->a == y->a &&
           x->b == y->b;
}

static entry *map_find(map *m, const key *k)
{
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
        entry *e = &m->e[i];
        if (!e->used) return NULL;
        if (!e->dead && key_eq(&e->k, k)) return e;
    }
}

static entry *map_put(map *m, const key *k);

static void map_grow(map *m)
{
    map old = *m;
    size_t live = 0;
    for (size_t i = 0; i < old.cap; i++) live += old.e[i].used && !old.e[i].dead;
    m->cap = old.cap ? old.cap : 1024;
    while (live * 2 >= m->cap) m->cap *= 2;
    m->e = xcalloc(m->cap, sizeof *m->e);
    m->used = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.e[i].used && !old.e[i].dead) *map_put(m, &old.e[i].k) = old.e[i];
    free(old.e);
}

/* The live entry for k, created (zeroed but for the key) when absent. */
static entry *map_put(map *m, const key *k)
{
    entry *e = map_find(m, k);
    if (e) return e;
    if ((m->used + 1) * 4 >= m->cap * 3) map_grow(m);
    size_t mask = m->cap - 1;
    size_t i = key_hash(k) & mask;
    while (m->e[i].used) i = (i + 1) & mask;
    e = &m->e[i];
    memset(e, 0, sizeof *e);
    e->k = *k;
    e->used = 1;
    m->used++;
    return e;
}

static key mk(int cls, int job, int32_t task, uint64_t a, uint32_t b)
{
    key k;
    memset(&k, 0, sizeof k);
    k.cls = (uint8_t)cls;
    k.job = (uint8_t)job;
    k.task = task;
    k.a = a;
    k.b = b;
    return k;
}

/* ---- JSON output ---------------------------------------------------------------------- */

/* Writes s as a JSON string: escapes quotes, backslashes and control characters and
 * replaces bytes that are not valid UTF-8 with U+FFFD. */
static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            p++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            p++;
        } else {
            int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
            if (c > 0xf4) n = -1;
            uint32_t cp = n == 3 ? c & 7 : n == 2 ? c & 15 : c & 31;
            int ok = n > 0;
            for (int i = 1; ok && i <= n; i++) {
                if ((p[i] & 0xc0) != 0x80) ok = 0;
                else cp = cp << 6 | (p[i] & 0x3f);
            }
            if (ok && ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
                       (n == 3 && (cp < 0x10000 || cp > 0x10ffff))))
                ok = 0;
            if (ok) {
                fwrite(p, 1, (size_t)n + 1, f);
                p += n + 1;
            } else {
                fputs("\\ufffd", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

/* Nanoseconds as microseconds with three exact decimals. */
static void json_us(FILE *f, int64_t ns)
{
    uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", u / 1000, (unsigned)(u % 1000));
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

/* Starts one trace event object: {"ph":"X","pid":P,"tid":T,"ts":... */
static void ev_open(cx *c, const char *ph, uint32_t pid, int tid, int64_t t)
{
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = 0;
    fprintf(c->out, "{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%d,\"ts\":", ph, pid, tid);
    json_us(c->out, t);
}

static const char *job_name(int job)
{
    switch (job) {
    case EVT_JOB_PS: return "ps";
    case EVT_JOB_WORKER: return "worker";
    case EVT_JOB_CLIENT: return "client";
    case EVT_JOB_HUB: return "hub";
    default: return "unknown";
    }
}

static void meta_event(cx *c, const char *what, uint32_t pid, int tid, const char *name)
{
    ev_open(c, "M", pid, tid, 0);
    fprintf(c->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
    json_str(c->out, name);
    fputs("}}", c->out);
}

static void sort_index(cx *c, uint32_t pid, long idx)
{
    ev_open(c, "M", pid, 0, 0);
    fprintf(c->out, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%ld}}", idx);
}

/* Names (pid, tid) once. */
static void name_thread(cx *c, uint32_t pid, int tid, const char *name)
{
    key k = mk(C_THREAD, 0, (int32_t)pid, (uint64_t)(uint32_t)tid, 0);
    entry *e = map_put(&c->m, &k);
    if (e->v) return;
    e->v = 1;
    meta_event(c, "thread_name", pid, tid, name);
}

/* The process for a task (job, task); pid 1 is the cluster itself. */
static uint32_t task_pid(cx *c, int job, int32_t task)
{
    key k = mk(C_TASK_PID, job, task, 0, 0);
    entry *e = map_put(&c->m, &k);
    if (!e->v) {
        e->v = c->next_pid++;
        char name[96];
        snprintf(name, sizeof name, "/job:%s/replica:0/task:%" PRId32, job_name(job), task);
        meta_event(c, "process_name", (uint32_t)e->v, 0, name);
        sort_index(c, (uint32_t)e->v, (long)job * 100000 + (task >= 0 ? task : 0) * 2);
    }
    return (uint32_t)e->v;
}

static uint32_t device_pid(cx *c, int job, int32_t task, uint32_t device)
{
    key k = mk(C_DEV_PID, job, task, 0, device);
    entry *e = map_put(&c->m, &k);
    if (!e->v) {
        e->v = c->next_pid++;
        char name[600];
        snprintf(name, sizeof name, "%.500s Compute", trace_reader_string(c->r, device));
        meta_event(c, "process_name", (uint32_t)e->v, 0, name);
        sort_index(c, (uint32_t)e->v, (long)job * 100000 + (task >= 0 ? task : 0) * 2 + 1);
    }
    return (uint32_t)e->v;
}

static slice *add_slice(cx *c, int64_t start, int64_t dur, uint32_t pid, int grp,
                        const evt_record *e)
{
    if (c->ns == c->scap) {
        c->scap = c->scap ? 2 * c->scap : 4096;
        c->s = xrealloc(c->s, c->scap * sizeof *c->s);
    }
    slice *s = &c->s[c->ns];
    memset(s, 0, sizeof *s);
    s->start = start;
    s->dur = dur > 0 ? dur : 0;
    s->pid = pid;
    s->grp = (uint16_t)grp;
    s->kind = e->kind;
    s->var = e->var;
    s->peer = e->peer;
    s->step = e->step;
    s->value = e->value;
    s->seq = c->ns++;
    return s;
}

static void instant(cx *c, const evt_record *e, uint32_t pid)
{
    name_thread(c, pid, G_EVENTS, "events");
    ev_open(c, "i", pid, G_EVENTS, e->t);
    fputs(",\"s\":\"t\",\"cat\":\"event\",\"name\":", c->out);
    json_str(c->out, evt_kind_name(e->kind));
    fprintf(c->out, ",\"args\":{\"step\":%" PRId64, e->step);
    if (e->var) {
        fputs(",\"var\":", c->out);
        json_str(c->out, trace_reader_string(c->r, e->var));
    }
    if (e->device) {
        fputs(",\"device\":", c->out);
        json_str(c->out, trace_reader_string(c->r, e->device));
    }
    if (e->str) {
        fputs(",\"text\":", c->out);
        json_str(c->out, trace_reader_string(c->r, e->str));
    }
    if (e->peer >= 0) fprintf(c->out, ",\"peer\":%" PRId32, e->peer);
    if (e->bytes) fprintf(c->out, ",\"bytes\":%" PRId64, e->bytes);
    fputs(",\"value\":", c->out);
    json_num(c->out, e->value);
    fputs(",\"value2\":", c->out);
    json_num(c->out, e->value2);
    fputs("}}", c->out);
}

static void counter(cx *c, uint32_t pid, int64_t t, const char *name, double v)
{
    if (!isfinite(v)) return;               /* a NaN loss would make the JSON invalid */
    ev_open(c, "C", pid, 0, t);
    fprintf(c->out, ",\"name\":\"%s\",\"args\":{\"%s\":", name, name);
    json_num(c->out, v);
    fputs("}}", c->out);
}

static void async_ev(cx *c, const char *ph, int is_push, uint32_t pid, int64_t t, uint64_t id,
                     const evt_record *e)
{
    name_thread(c, pid, is_push ? G_PUSHES : G_PULLS, is_push ? "pushes" : "pulls");
    ev_open(c, ph, pid, is_push ? G_PUSHES : G_PULLS, t);
    fprintf(c->out, ",\"cat\":\"%s\",\"name\":\"%s\",\"id\":%" PRIu64, is_push ? "push" : "pull",
            is_push ? "push" : "pull", id);
    if (e) {
        fputs(",\"args\":{\"var\":", c->out);
        json_str(c->out, trace_reader_string(c->r, e->var));
        fprintf(c->out, ",\"ps\":%" PRId32 ",\"step\":%" PRId64 ",\"bytes\":%" PRId64 "}",
                e->peer, e->step, e->bytes);
    }
    fputs("}", c->out);
}

/* t - dur for an end event, clamped to t when dur is negative or the difference would
 * not fit (hostile files). */
static int64_t start_of(const evt_record *e)
{
    if (e->dur <= 0) return e->t;
    int64_t b = (int64_t)((uint64_t)e->t - (uint64_t)e->dur);
    return b > e->t ? e->t : b;
}

/* PULL/PUSH begin and end as balanced async pairs. */
static void on_transfer(cx *c, const evt_record *e, int is_push, int is_end)
{
    uint32_t pid = task_pid(c, e->job, e->task);
    key k = mk(is_push ? C_PUSH : C_PULL, e->job, e->task, e->id, e->id ? 0 : e->var);
    if (!e->id) k.b = e->var ^ (uint32_t)e->peer << 20;
    entry *en = map_find(&c->m, &k);
    if (!is_end) {
        if (en) async_ev(c, "e", is_push, pid, e->t > en->t ? e->t : en->t, en->v, NULL);
        en = map_put(&c->m, &k);
        en->v = ++c->next_async;
        en->t = e->t;
        async_ev(c, "b", is_push, pid, e->t, en->v, e);
        if (is_push) {
            /* a short send marker on the worker: the flow to the ps apply starts here */
            slice *s = add_slice(c, e->t, MARK_NS, pid, G_SEND, e);
            if (e->id) {
                key fk = mk(C_FLOW, e->job, e->task, e->id, 0);
                map_put(&c->m, &fk)->v = s->seq + 1;
            }
        }
        return;
    }
    if (en) {
        async_ev(c, "e", is_push, pid, e->t > en->t ? e->t : en->t, en->v, NULL);
        en->dead = 1;
    } else {
        uint64_t id = ++c->next_async;
        int64_t b = start_of(e);
        async_ev(c, "b", is_push, pid, b, id, e);
        async_ev(c, "e", is_push, pid, e->t, id, NULL);
    }
}

static void on_apply(cx *c, const evt_record *e)
{
    uint32_t pid = task_pid(c, e->job, e->task);
    slice *s = add_slice(c, e->t, e->dur > MARK_NS ? e->dur : MARK_NS, pid, G_APPLY, e);
    size_t me = s->seq;
    key k = mk(C_FLOW, e->peer_job, e->peer, e->id, 0);
    entry *fl = e->id ? map_find(&c->m, &k) : NULL;
    if (fl && fl->v) {
        uint64_t id = ++c->next_flow;
        c->s[fl->v - 1].flow_out = id;
        c->s[me].flow_in = id;
        fl->dead = 1;
    }
    if (e->kind == EVT_APPLY) counter(c, pid, e->t, "staleness", e->value);
}

/* Waits (barrier, SSP) and computes: begin remembered, X slice made at the end. */
static void on_span(cx *c, const evt_record *e, int cls, int is_end, uint32_t pid, int grp)
{
    key k = mk(cls, e->job, e->task, cls == C_COMPUTE ? (uint64_t)e->step : 0,
               cls == C_COMPUTE ? e->device : 0);
    if (!is_end) {
        entry *en = map_put(&c->m, &k);
        en->t = e->t;
        en->v = pid;
        en->var = (uint32_t)grp;
        return;
    }
    entry *en = map_find(&c->m, &k);
    int64_t start = e->t;
    if (en) {
        start = en->t;
        en->dead = 1;
    } else {
        start = start_of(e);
    }
    if (start > e->t) start = e->t;
    add_slice(c, start, (int64_t)((uint64_t)e->t - (uint64_t)start), pid, grp, e);
}

static void on_event(cx *c, const evt_record *e)
{
    if (e->t > c->t_end) c->t_end = e->t;
    switch ((evt_kind)e->kind) {
    case EVT_PULL_BEGIN: on_transfer(c, e, 0, 0); break;
    case EVT_PULL_END: on_transfer(c, e, 0, 1); break;
    case EVT_PUSH_BEGIN: on_transfer(c, e, 1, 0); break;
    case EVT_PUSH_END: on_transfer(c, e, 1, 1); break;
    case EVT_APPLY:
    case EVT_DROP: on_apply(c, e); break;
    case EVT_COMPUTE_BEGIN:
    case EVT_COMPUTE_END: {
        uint32_t pid = e->device ? device_pid(c, e->job, e->task, e->device)
                                 : task_pid(c, e->job, e->task);
        on_span(c, e, C_COMPUTE, e->kind == EVT_COMPUTE_END, pid, G_COMPUTE);
        break;
    }
    case EVT_BARRIER_WAIT:
    case EVT_BARRIER_RELEASE:
        on_span(c, e, C_BARRIER, e->kind == EVT_BARRIER_RELEASE, task_pid(c, e->job, e->task),
                G_WAIT);
        break;
    case EVT_SSP_WAIT:
    case EVT_SSP_RELEASE:
        on_span(c, e, C_SSP, e->kind == EVT_SSP_RELEASE, task_pid(c, e->job, e->task), G_WAIT);
        break;
    case EVT_PACED_BEGIN:
    case EVT_PACED_END:
        on_span(c, e, C_PACED, e->kind == EVT_PACED_END, task_pid(c, e->job, e->task), G_PACED);
        break;
    case EVT_GLOBAL_STEP:
        counter(c, 1, e->t, "global_step", (double)e->step);
        break;
    case EVT_STEP_END: {
        uint32_t pid = task_pid(c, e->job, e->task);
        instant(c, e, pid);
        counter(c, pid, e->t, "loss", e->value);
        break;
    }
    case EVT_EVAL:
        instant(c, e, task_pid(c, e->job, e->task));
        counter(c, 1, e->t, "accuracy", e->value);   /* none for the simulator's (NaN) */
        if (e->dur > 0 && e->dur <= e->t)   /* how long the chief evaluated, as a slice */
            add_slice(c, e->t - e->dur, e->dur, task_pid(c, e->job, e->task), G_EVAL, e);
        break;
    case EVT_DEVICE:
        if (e->device) device_pid(c, e->job, e->task, e->device);
        instant(c, e, task_pid(c, e->job, e->task));
        break;
    case EVT_CLUSTER_START:
    case EVT_CLUSTER_STOP:
    case EVT_CLOCK_SYNC:
        instant(c, e, 1);
        break;
    default:
        instant(c, e, task_pid(c, e->job, e->task));
        break;
    }
}

/* ---- X slices ------------------------------------------------------------------------- */

static int slice_cmp(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->grp != y->grp) return x->grp < y->grp ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *grp_name(int grp)
{
    switch (grp) {
    case G_WAIT: return "waits";
    case G_SEND: return "sends";
    case G_APPLY: return "applies";
    case G_PACED: return "paced";
    case G_EVAL: return "evaluations";
    default: return "compute";
    }
}

static const char *slice_name(const slice *s)
{
    switch (s->kind) {
    case EVT_COMPUTE_BEGIN:
    case EVT_COMPUTE_END: return "compute";
    case EVT_EVAL: return "evaluation";
    case EVT_BARRIER_WAIT:
    case EVT_BARRIER_RELEASE: return "barrier_wait";
    case EVT_SSP_WAIT:
    case EVT_SSP_RELEASE: return "ssp_wait";
    case EVT_PACED_BEGIN:
    case EVT_PACED_END: return "paced";
    case EVT_PUSH_BEGIN: return "send";
    case EVT_DROP: return "drop";
    default: return "apply";
    }
}

static void write_slice(cx *c, const slice *s)
{
    ev_open(c, "X", s->pid, s->tid, s->start);
    fputs(",\"dur\":", c->out);
    json_us(c->out, s->dur);
    fprintf(c->out, ",\"cat\":\"%s\",\"name\":\"%s\",\"args\":{\"step\":%" PRId64,
            grp_name(s->grp), slice_name(s), s->step);
    if (s->var) {
        fputs(",\"var\":", c->out);
        json_str(c->out, trace_reader_string(c->r, s->var));
    }
    if (s->grp == G_SEND) fprintf(c->out, ",\"ps\":%" PRId32, s->peer);
    if (s->grp == G_APPLY) {
        fprintf(c->out, ",\"worker\":%" PRId32 ",\"staleness\":", s->peer);
        json_num(c->out, s->value);
    }
    if (s->grp == G_COMPUTE && s->kind == EVT_COMPUTE_END && s->value > 0) {
        /* a real worker's CPU between its ops, sending early gradients and reading */
        fputs(",\"between_ops_s\":", c->out);
        json_num(c->out, s->value);
    }
    fputs("}}", c->out);
    if (s->flow_out) {
        ev_open(c, "s", s->pid, s->tid, s->start);
        fprintf(c->out, ",\"cat\":\"gradient\",\"name\":\"gradient\",\"id\":%" PRIu64 "}",
                s->flow_out);
    }
    if (s->flow_in) {
        ev_open(c, "f", s->pid, s->tid, s->start);
        fprintf(c->out, ",\"bp\":\"e\",\"cat\":\"gradient\",\"name\":\"gradient\",\"id\":%"
                PRIu64 "}", s->flow_in);
    }
}

/* Sorts slices per (pid, group) and gives each the first lane whose last slice has
 * ended: within one lane slices never overlap at all. */
static void write_slices(cx *c)
{
    if (c->ns == 0) return;
    /* flow ids were stored in the slices themselves, so sorting loses nothing */
    qsort(c->s, c->ns, sizeof *c->s, slice_cmp);
    int64_t *lane_end = NULL;
    size_t nl = 0, lcap = 0;
    for (size_t i = 0; i < c->ns; i++) {
        slice *s = &c->s[i];
        if (i == 0 || s->pid != c->s[i - 1].pid || s->grp != c->s[i - 1].grp) nl = 0;
        size_t l = 0;
        while (l < nl && lane_end[l] > s->start) l++;
        if (l == nl) {
            if (nl == lcap) {
                lcap = lcap ? 2 * lcap : 8;
                lane_end = xrealloc(lane_end, lcap * sizeof *lane_end);
            }
            nl++;
        }
        lane_end[l] = s->start + s->dur;
        s->tid = s->grp * 1000 + (int)l;
        char name[64];
        if (l == 0) snprintf(name, sizeof name, "%s", grp_name(s->grp));
        else snprintf(name, sizeof name, "%s #%zu", grp_name(s->grp), l + 1);
        name_thread(c, s->pid, s->tid, name);
        write_slice(c, s);
    }
    free(lane_end);
}

/* Closes whatever is still open at the end of the trace. */
static void close_open(cx *c)
{
    for (size_t i = 0; i < c->m.cap; i++) {
        entry *en = &c->m.e[i];
        if (!en->used || en->dead) continue;
        int64_t end = c->t_end > en->t ? c->t_end : en->t;
        if (en->k.cls == C_PULL || en->k.cls == C_PUSH) {
            uint32_t pid = task_pid(c, en->k.job, en->k.task);
            async_ev(c, "e", en->k.cls == C_PUSH, pid, end, en->v, NULL);
            en->dead = 1;
        } else if (en->k.cls == C_COMPUTE || en->k.cls == C_BARRIER || en->k.cls == C_SSP ||
                   en->k.cls == C_PACED) {
            evt_record e;
            evt_init(&e, en->k.cls == C_COMPUTE ? EVT_COMPUTE_END
                         : en->k.cls == C_BARRIER ? EVT_BARRIER_RELEASE
                         : en->k.cls == C_SSP ? EVT_SSP_RELEASE : EVT_PACED_END,
                     en->k.job, en->k.task);
            e.step = (int64_t)en->k.a;
            add_slice(c, en->t, end - en->t, (uint32_t)en->v, (int)en->var, &e);
            en->dead = 1;
        }
    }
}

static void write_other_data(cx *c)
{
    const char *meta = trace_reader_metadata(c->r);
    fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"downpour\"", c->out);
    fputs(",\"metadata\":", c->out);
    json_error_t jerr;
    json_t *j = json_loads(meta, 0, &jerr);
    if (j) {
        json_dumpf(j, c->out, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(j);
    } else {
        json_str(c->out, meta);
    }
    const char *dmg = trace_reader_damage(c->r);
    if (dmg) {
        fputs(",\"damage\":", c->out);
        json_str(c->out, dmg);
    }
    fputs("}}\n", c->out);
}

int chrome_export(trace_reader *r, FILE *out, char *err)
{
    cx c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.r = r;
    c.first = 1;
    c.next_pid = 2;
    c.t_end = INT64_MIN;
    fputs("{\"traceEvents\":[", out);
    meta_event(&c, "process_name", 1, 0, "cluster");
    sort_index(&c, 1, -1);
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) on_event(&c, &e);
    close_open(&c);
    write_slices(&c);
    write_other_data(&c);
    free(c.m.e);
    free(c.s);
    if (fflush(out) != 0 || ferror(out))
        return dp_fail(err, DP_EIO, "writing chrome trace: %s", strerror(errno));
    return DP_OK;
}

int chrome_export_file(trace_reader *r, const char *path, char *err)
{
    if (strcmp(path, "-") == 0) return chrome_export(r, stdout, err);
    FILE *f = fopen(path, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    char sub[DP_ERRLEN];
    int rc = chrome_export(r, f, sub);
    if (fclose(f) != 0 && rc == DP_OK)
        rc = dp_fail(sub, DP_EIO, "close: %s", strerror(errno));
    if (rc) dp_fail(err, rc, "%s: %s", path, sub);
    return rc;
}
