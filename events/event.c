/* event.c — the event vocabulary: kind names, record initialisation, the string table
 * (an open-addressing hash map from bytes to ids 1..n) and the compact record codec.
 *
 * Codec layout of one record (all integers LEB128 varints, signed ones zig-zagged):
 *   kind | presence mask | t - prev_t (signed) | present fields in mask-bit order
 * Fields equal to their evt_init() default (0, or -1 for peer) are left out; doubles are
 * 8 raw little-endian bytes and count as present when their bit pattern is non-zero.
 * evt_decode never reads past len and rejects unknown kinds, unknown mask bits,
 * over-long varints and out-of-range values. No global state; the table is not
 * thread-safe (callers lock). */
#include "events/event.h"

#include <stdlib.h>
#include <string.h>

#include "common/dp.h"

static const char *const kind_names[EVT_KIND_COUNT] = {
    [0] = "unknown",
    [EVT_CLUSTER_START] = "cluster_start",
    [EVT_CLUSTER_STOP] = "cluster_stop",
    [EVT_TASK_START] = "task_start",
    [EVT_TASK_STOP] = "task_stop",
    [EVT_DEVICE] = "device",
    [EVT_VAR_DEFINE] = "var_define",
    [EVT_VAR_PLACE] = "var_place",
    [EVT_OP_PLACE] = "op_place",
    [EVT_PULL_BEGIN] = "pull_begin",
    [EVT_PULL_END] = "pull_end",
    [EVT_PUSH_BEGIN] = "push_begin",
    [EVT_PUSH_END] = "push_end",
    [EVT_APPLY] = "apply",
    [EVT_DROP] = "drop",
    [EVT_COMPUTE_BEGIN] = "compute_begin",
    [EVT_COMPUTE_END] = "compute_end",
    [EVT_STEP_END] = "step_end",
    [EVT_BARRIER_WAIT] = "barrier_wait",
    [EVT_BARRIER_RELEASE] = "barrier_release",
    [EVT_SSP_WAIT] = "ssp_wait",
    [EVT_SSP_RELEASE] = "ssp_release",
    [EVT_GLOBAL_STEP] = "global_step",
    [EVT_EVAL] = "eval",
    [EVT_CHECKPOINT_WRITE] = "checkpoint_write",
    [EVT_CHECKPOINT_RESTORE] = "checkpoint_restore",
    [EVT_FAILURE] = "failure",
    [EVT_RECOVERY] = "recovery",
    [EVT_LOG] = "log",
    [EVT_EVENTS_DROPPED] = "events_dropped",
    [EVT_CLOCK_SYNC] = "clock_sync",
    [EVT_PACED_BEGIN] = "paced_begin",
    [EVT_PACED_END] = "paced_end",
    [EVT_BARRIER_TIMEOUT] = "barrier_timeout",
    [EVT_PS_RETRY] = "ps_retry",
    [EVT_GRAD_REJECTED] = "grad_rejected",
};

void evt_init(evt_record *e, evt_kind kind, int job, int task)
{
    memset(e, 0, sizeof *e);
    e->kind = (uint16_t)kind;
    e->job = (uint8_t)job;
    e->task = task;
    e->peer = -1;
}

const char *evt_kind_name(int kind)
{
    if (kind <= 0 || kind >= EVT_KIND_COUNT) return "unknown";
    return kind_names[kind];
}

int evt_kind_from_name(const char *name)
{
    if (!name) return -1;
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        if (strcmp(kind_names[k], name) == 0) return k;
    return -1;
}

/* ---- string table ------------------------------------------------------------------ */

struct evt_strtab {
    char **str;        /* str[id], id 1..n; str[0] unused */
    uint32_t *len;     /* byte length of each (strings may hold NULs when defined) */
    uint32_t n, cap;   /* n = last id */
    uint32_t *slots;   /* hash slots holding ids, 0 = empty; size nslots (power of 2) */
    uint32_t nslots;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = dp_fnv1a(DP_FNV1A_INIT, s, len);
    return h ^ (h >> 29);
}

evt_strtab *evt_strtab_new(void)
{
    evt_strtab *t = xcalloc(1, sizeof *t);
    t->cap = 16;
    t->str = xcalloc(t->cap, sizeof *t->str);
    t->len = xcalloc(t->cap, sizeof *t->len);
    t->nslots = 32;
    t->slots = xcalloc(t->nslots, sizeof *t->slots);
    return t;
}

void evt_strtab_free(evt_strtab *t)
{
    if (!t) return;
    for (uint32_t i = 1; i <= t->n; i++) free(t->str[i]);
    free(t->str);
    free(t->len);
    free(t->slots);
    free(t);
}

/* Slot where (s, len) lives, or the empty slot where it would go. */
static uint32_t find_slot(const evt_strtab *t, const char *s, size_t len)
{
    uint32_t mask = t->nslots - 1;
    uint32_t i = (uint32_t)hash_bytes(s, len) & mask;
    for (;;) {
        uint32_t id = t->slots[i];
        if (id == 0) return i;
        if (t->len[id] == len && memcmp(t->str[id], s, len) == 0) return i;
        i = (i + 1) & mask;
    }
}

static void rehash(evt_strtab *t)
{
    free(t->slots);
    t->nslots *= 2;
    t->slots = xcalloc(t->nslots, sizeof *t->slots);
    for (uint32_t id = 1; id <= t->n; id++) {
        uint32_t i = find_slot(t, t->str[id], t->len[id]);
        if (t->slots[i] == 0) t->slots[i] = id;   /* duplicates keep the first id */
    }
}

/* Appends (s, len) as id n+1 and indexes it unless equal bytes are indexed already. */
static uint32_t append(evt_strtab *t, const char *s, size_t len)
{
    if (t->n >= UINT32_MAX / 4) {       /* far beyond any real run; keeps cap math safe */
        dp_log(DP_LOG_ERROR, "strtab", "string table full");
        return 0;
    }
    if (t->n + 1 >= t->cap) {
        t->cap *= 2;
        t->str = xrealloc(t->str, (size_t)t->cap * sizeof *t->str);
        t->len = xrealloc(t->len, (size_t)t->cap * sizeof *t->len);
    }
    uint32_t id = ++t->n;
    t->str[id] = xmalloc(len + 1);
    memcpy(t->str[id], s, len);
    t->str[id][len] = '\0';
    t->len[id] = (uint32_t)len;
    if ((uint64_t)t->n * 4 >= (uint64_t)t->nslots * 3) rehash(t);
    uint32_t i = find_slot(t, s, len);
    if (t->slots[i] == 0) t->slots[i] = id;
    return id;
}

uint32_t evt_strtab_intern(evt_strtab *t, const char *s)
{
    if (!s || !*s) return 0;            /* "" is "none": get(0) == "" keeps round trips exact */
    size_t len = strlen(s);
    if (len > UINT32_MAX) return 0;
    uint32_t i = find_slot(t, s, len);
    if (t->slots[i]) return t->slots[i];
    return append(t, s, len);
}

int evt_strtab_define(evt_strtab *t, uint32_t id, const char *s, size_t len)
{
    if (id == 0 || id != t->n + 1 || len > UINT32_MAX || (len && !s)) return DP_EINVAL;
    return append(t, s ? s : "", len) == id ? DP_OK : DP_EINVAL;
}

const char *evt_strtab_get(const evt_strtab *t, uint32_t id)
{
    if (!t || id == 0 || id > t->n) return "";
    return t->str[id];
}

uint32_t evt_strtab_count(const evt_strtab *t)
{
    return t ? t->n : 0;
}

/* ---- codec ------------------------------------------------------------------------- */

enum {
    F_JOB = 1 << 0, F_PEER_JOB = 1 << 1, F_TASK = 1 << 2, F_PEER = 1 << 3,
    F_DEVICE = 1 << 4, F_VAR = 1 << 5, F_STR = 1 << 6, F_STEP = 1 << 7,
    F_BYTES = 1 << 8, F_DUR = 1 << 9, F_ID = 1 << 10, F_VALUE = 1 << 11,
    F_VALUE2 = 1 << 12, F_ALL = (1 << 13) - 1
};

static uint8_t *put_double(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    dp_put_u64(p, u);
    return p + 8;
}

static int double_present(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u != 0;
}

size_t evt_encode(const evt_record *e, int64_t prev_t, uint8_t *buf)
{
    unsigned mask = 0;
    if (e->job) mask |= F_JOB;
    if (e->peer_job) mask |= F_PEER_JOB;
    if (e->task) mask |= F_TASK;
    if (e->peer != -1) mask |= F_PEER;
    if (e->device) mask |= F_DEVICE;
    if (e->var) mask |= F_VAR;
    if (e->str) mask |= F_STR;
    if (e->step) mask |= F_STEP;
    if (e->bytes) mask |= F_BYTES;
    if (e->dur) mask |= F_DUR;
    if (e->id) mask |= F_ID;
    if (double_present(e->value)) mask |= F_VALUE;
    if (double_present(e->value2)) mask |= F_VALUE2;

    uint8_t *p = buf;
    p = evt_varint_put(p, e->kind);
    p = evt_varint_put(p, mask);
    /* Wrapping subtraction: any (t, prev_t) pair round-trips, even at the int64 ends. */
    p = evt_varint_put(p, evt_zigzag((int64_t)((uint64_t)e->t - (uint64_t)prev_t)));
    if (mask & F_JOB) p = evt_varint_put(p, e->job);
    if (mask & F_PEER_JOB) p = evt_varint_put(p, e->peer_job);
    if (mask & F_TASK) p = evt_varint_put(p, evt_zigzag(e->task));
    if (mask & F_PEER) p = evt_varint_put(p, evt_zigzag(e->peer));
    if (mask & F_DEVICE) p = evt_varint_put(p, e->device);
    if (mask & F_VAR) p = evt_varint_put(p, e->var);
    if (mask & F_STR) p = evt_varint_put(p, e->str);
    if (mask & F_STEP) p = evt_varint_put(p, evt_zigzag(e->step));
    if (mask & F_BYTES) p = evt_varint_put(p, evt_zigzag(e->bytes));
    if (mask & F_DUR) p = evt_varint_put(p, evt_zigzag(e->dur));
    if (mask & F_ID) p = evt_varint_put(p, e->id);
    if (mask & F_VALUE) p = put_double(p, e->value);
    if (mask & F_VALUE2) p = put_double(p, e->value2);
    return (size_t)(p - buf);
}

static int get_u32(const uint8_t *buf, size_t len, size_t *pos, uint32_t *out)
{
    uint64_t v;
    if (evt_varint_get(buf, len, pos, &v) || v > UINT32_MAX) return DP_ECORRUPT;
    *out = (uint32_t)v;
    return DP_OK;
}

static int get_i32(const uint8_t *buf, size_t len, size_t *pos, int32_t *out)
{
    uint64_t v;
    if (evt_varint_get(buf, len, pos, &v)) return DP_ECORRUPT;
    int64_t s = evt_unzigzag(v);
    if (s < INT32_MIN || s > INT32_MAX) return DP_ECORRUPT;
    *out = (int32_t)s;
    return DP_OK;
}

static int get_i64(const uint8_t *buf, size_t len, size_t *pos, int64_t *out)
{
    uint64_t v;
    if (evt_varint_get(buf, len, pos, &v)) return DP_ECORRUPT;
    *out = evt_unzigzag(v);
    return DP_OK;
}

static int get_u8(const uint8_t *buf, size_t len, size_t *pos, uint8_t *out)
{
    uint64_t v;
    if (evt_varint_get(buf, len, pos, &v) || v > UINT8_MAX) return DP_ECORRUPT;
    *out = (uint8_t)v;
    return DP_OK;
}

static int get_double(const uint8_t *buf, size_t len, size_t *pos, double *out)
{
    if (len - *pos < 8) return DP_ECORRUPT;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)buf[*pos + (size_t)i] << (8 * i);
    *pos += 8;
    memcpy(out, &u, sizeof u);
    return DP_OK;
}

int evt_decode(const uint8_t *buf, size_t len, int64_t prev_t, evt_record *e)
{
    size_t pos = 0;
    uint64_t kind, mask, dt;
    evt_record r;
    if (!buf && len) return DP_EINVAL;
    if (evt_varint_get(buf, len, &pos, &kind) || kind == 0 || kind >= EVT_KIND_COUNT)
        return DP_ECORRUPT;
    if (evt_varint_get(buf, len, &pos, &mask) || (mask & ~(uint64_t)F_ALL)) return DP_ECORRUPT;
    if (evt_varint_get(buf, len, &pos, &dt)) return DP_ECORRUPT;
    evt_init(&r, (evt_kind)kind, 0, 0);
    r.t = (int64_t)((uint64_t)prev_t + (uint64_t)evt_unzigzag(dt));
    int rc = 0;
    if (mask & F_JOB) rc |= get_u8(buf, len, &pos, &r.job);
    if (!rc && (mask & F_PEER_JOB)) rc |= get_u8(buf, len, &pos, &r.peer_job);
    if (!rc && (mask & F_TASK)) rc |= get_i32(buf, len, &pos, &r.task);
    if (!rc && (mask & F_PEER)) rc |= get_i32(buf, len, &pos, &r.peer);
    if (!rc && (mask & F_DEVICE)) rc |= get_u32(buf, len, &pos, &r.device);
    if (!rc && (mask & F_VAR)) rc |= get_u32(buf, len, &pos, &r.var);
    if (!rc && (mask & F_STR)) rc |= get_u32(buf, len, &pos, &r.str);
    if (!rc && (mask & F_STEP)) rc |= get_i64(buf, len, &pos, &r.step);
    if (!rc && (mask & F_BYTES)) rc |= get_i64(buf, len, &pos, &r.bytes);
    if (!rc && (mask & F_DUR)) rc |= get_i64(buf, len, &pos, &r.dur);
    if (!rc && (mask & F_ID)) rc |= evt_varint_get(buf, len, &pos, &r.id);
    if (!rc && (mask & F_VALUE)) rc |= get_double(buf, len, &pos, &r.value);
    if (!rc && (mask & F_VALUE2)) rc |= get_double(buf, len, &pos, &r.value2);
    if (rc) return DP_ECORRUPT;
    *e = r;
    return (int)pos;
}
