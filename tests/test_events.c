/* test_events.c — the event vocabulary: kind names, the record codec (round trip of every
 * kind with ordinary and extreme values; every truncated prefix and malformed input
 * fails cleanly; random bytes never crash) and the string table. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "events/event.h"
#include "tests/check.h"
#include "tests/record_check.h"

/* Encodes e, decodes it back, and checks every truncated prefix is refused. */
static void round_trip(const evt_record *e, int64_t prev_t)
{
    uint8_t buf[EVT_MAX_ENCODED + 8];
    memset(buf, 0xAA, sizeof buf);
    size_t n = evt_encode(e, prev_t, buf);
    CHECK_MSG(n > 0 && n <= EVT_MAX_ENCODED, "kind %s encoded to %zu bytes",
              evt_kind_name(e->kind), n);
    CHECK(buf[n] == 0xAA);                  /* wrote nothing past what it reported */
    evt_record d;
    int used = evt_decode(buf, n, prev_t, &d);
    CHECK_MSG(used == (int)n, "kind %s: decode used %d of %zu", evt_kind_name(e->kind),
              used, n);
    CHECK_MSG(same_record(e, &d), "kind %s round trip", evt_kind_name(e->kind));
    int prefix_ok = 1;
    for (size_t k = 0; k < n; k++) {
        /* copy the prefix to a heap block of exactly k bytes so ASan sees over-reads */
        uint8_t *p = xmalloc(k);
        memcpy(p, buf, k);
        evt_record junk;
        if (evt_decode(k ? p : NULL, k, prev_t, &junk) >= 0) prefix_ok = 0;
        free(p);
    }
    CHECK_MSG(prefix_ok, "kind %s: some truncated prefix decoded", evt_kind_name(e->kind));
}

static void test_kind_names(void)
{
    const char *expect[] = {
        "cluster_start", "task_start", "pull_begin", "pull_end", "push_begin", "push_end",
        "apply", "drop", "compute_begin", "compute_end", "step_end", "barrier_wait",
        "barrier_release", "ssp_wait", "ssp_release", "global_step", "eval",
        "checkpoint_write", "checkpoint_restore", "failure", "recovery", "log",
        "events_dropped", "clock_sync", "device", "var_define", "var_place", "op_place",
        "task_stop", "cluster_stop", "paced_begin", "paced_end", "barrier_timeout",
        "ps_retry", "grad_rejected",
    };
    CHECK(DP_ARRAY_LEN(expect) == EVT_KIND_COUNT - 1);
    for (size_t i = 0; i < DP_ARRAY_LEN(expect); i++) {
        int k = evt_kind_from_name(expect[i]);
        CHECK_MSG(k > 0 && k < EVT_KIND_COUNT, "%s", expect[i]);
        CHECK(strcmp(evt_kind_name(k), expect[i]) == 0);
    }
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        CHECK(evt_kind_from_name(evt_kind_name(k)) == k);
    CHECK(strcmp(evt_kind_name(0), "unknown") == 0);
    CHECK(strcmp(evt_kind_name(EVT_KIND_COUNT), "unknown") == 0);
    CHECK(strcmp(evt_kind_name(-5), "unknown") == 0);
    CHECK(evt_kind_from_name("nope") == -1);
    CHECK(evt_kind_from_name(NULL) == -1);
    CHECK(strcmp(evt_kind_name(EVT_PULL_END), "pull_end") == 0);
    CHECK(strcmp(evt_kind_name(EVT_APPLY), "apply") == 0);
}

static void test_codec(void)
{
    evt_record e;
    evt_init(&e, EVT_APPLY, EVT_JOB_PS, 3);
    CHECK(e.peer == -1 && e.kind == EVT_APPLY && e.job == EVT_JOB_PS && e.task == 3 &&
          e.step == 0 && e.value == 0.0);

    /* every kind: a default record, a typical one and one at the extremes */
    for (int k = 1; k < EVT_KIND_COUNT; k++) {
        evt_init(&e, (evt_kind)k, EVT_JOB_WORKER, 0);
        round_trip(&e, 0);
        evt_init(&e, (evt_kind)k, EVT_JOB_WORKER, 7);
        e.t = 123456789;
        e.peer_job = EVT_JOB_PS;
        e.peer = 2;
        e.device = 4;
        e.var = 9;
        e.str = 11;
        e.step = 1000;
        e.bytes = 401920;
        e.dur = 35000;
        e.id = 77;
        e.value = 0.6931;
        e.value2 = 12.0;
        round_trip(&e, 123000000);
        round_trip(&e, 200000000);        /* negative delta */

        evt_init(&e, (evt_kind)k, 255, INT32_MAX);
        e.t = INT64_MAX;
        e.peer_job = 255;
        e.peer = INT32_MIN;
        e.device = e.var = e.str = UINT32_MAX;
        e.step = INT64_MIN;
        e.bytes = INT64_MAX;
        e.dur = INT64_MIN;
        e.id = UINT64_MAX;
        e.value = -0.0;
        e.value2 = NAN;
        round_trip(&e, INT64_MIN);        /* largest possible delta */
        e.t = INT64_MIN;
        e.task = INT32_MIN;
        e.peer = INT32_MAX;
        e.value = INFINITY;
        e.value2 = -1.7976931348623157e308;
        round_trip(&e, INT64_MAX);
        e.value = 5e-324;                 /* denormal */
        e.value2 = -INFINITY;
        round_trip(&e, 0);
    }

    /* compactness: a typical pull_end is small */
    evt_init(&e, EVT_PULL_END, EVT_JOB_WORKER, 1);
    e.t = 1000000;
    e.peer = 0;
    e.var = 3;
    e.bytes = 4000;
    e.step = 20;
    e.dur = 50000;
    uint8_t buf[EVT_MAX_ENCODED];
    size_t n = evt_encode(&e, 990000, buf);
    CHECK_MSG(n <= 16, "pull_end takes %zu bytes", n);

    /* malformed input */
    evt_record d;
    uint8_t bad_kind0[] = {0x00, 0x00, 0x00};
    CHECK(evt_decode(bad_kind0, sizeof bad_kind0, 0, &d) < 0);
    uint8_t bad_kind[] = {EVT_KIND_COUNT, 0x00, 0x00};
    CHECK(evt_decode(bad_kind, sizeof bad_kind, 0, &d) < 0);
    uint8_t bad_mask[] = {EVT_APPLY, 0x80, 0x40, 0x00};   /* bit 13 set */
    CHECK(evt_decode(bad_mask, sizeof bad_mask, 0, &d) < 0);
    uint8_t overlong[] = {EVT_APPLY, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                          0xff, 0xff, 0x01};
    CHECK(evt_decode(overlong, sizeof overlong, 0, &d) < 0);
    uint8_t over64[] = {EVT_APPLY, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                        0xff, 0x02};
    CHECK(evt_decode(over64, sizeof over64, 0, &d) < 0);
    uint8_t big_job[] = {EVT_APPLY, 0x01, 0x00, 0x80, 0x02};  /* job = 256 */
    CHECK(evt_decode(big_job, sizeof big_job, 0, &d) < 0);
    uint8_t big_task[] = {EVT_APPLY, 0x04, 0x00, 0x80, 0x80, 0x80, 0x80, 0x20}; /* > int32 */
    CHECK(evt_decode(big_task, sizeof big_task, 0, &d) < 0);
    uint8_t big_str[] = {EVT_LOG, 0x40, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10}; /* 2^32 */
    CHECK(evt_decode(big_str, sizeof big_str, 0, &d) < 0);
    CHECK(evt_decode(NULL, 0, 0, &d) < 0);
    uint8_t ok[] = {EVT_LOG, 0x00, 0x02};
    CHECK(evt_decode(ok, sizeof ok, 10, &d) == 3 && d.t == 11 && d.kind == EVT_LOG &&
          d.peer == -1);

    /* random bytes: decode returns cleanly, never past len (ASan watches) */
    dp_rng rng;
    dp_rng_seed(&rng, 42);
    int sane = 1;
    for (int i = 0; i < 200000; i++) {
        size_t len = (size_t)dp_rng_below(&rng, 40);
        uint8_t *p = xmalloc(len);
        for (size_t j = 0; j < len; j++) p[j] = (uint8_t)dp_rng_next(&rng);
        if (len) p[0] = (uint8_t)dp_rng_below(&rng, EVT_KIND_COUNT + 2);
        int rc = evt_decode(p, len, 0, &d);
        if (rc > (int)len || rc == 0) sane = 0;
        if (rc > 0 && (d.kind == 0 || d.kind >= EVT_KIND_COUNT)) sane = 0;
        free(p);
    }
    CHECK(sane);
}

static void test_strtab(void)
{
    evt_strtab *t = evt_strtab_new();
    CHECK(evt_strtab_count(t) == 0);
    CHECK(evt_strtab_intern(t, "") == 0);
    CHECK(evt_strtab_intern(t, NULL) == 0);
    uint32_t a = evt_strtab_intern(t, "/job:worker/replica:0/task:0/device:CPU:0");
    uint32_t b = evt_strtab_intern(t, "hidden/weights");
    CHECK(a == 1 && b == 2);
    CHECK(evt_strtab_intern(t, "hidden/weights") == 2);
    CHECK(strcmp(evt_strtab_get(t, 1), "/job:worker/replica:0/task:0/device:CPU:0") == 0);
    CHECK(strcmp(evt_strtab_get(t, 0), "") == 0);
    CHECK(strcmp(evt_strtab_get(t, 99), "") == 0);
    CHECK(strcmp(evt_strtab_get(NULL, 1), "") == 0);
    CHECK(evt_strtab_count(t) == 2);
    /* many strings: ids stay stable through rehashes */
    char s[64];
    int ok = 1;
    for (int i = 0; i < 100000; i++) {
        snprintf(s, sizeof s, "var/%d", i);
        if (evt_strtab_intern(t, s) != (uint32_t)(3 + i)) ok = 0;
    }
    CHECK(ok);
    for (int i = 0; i < 100000; i += 997) {
        snprintf(s, sizeof s, "var/%d", i);
        CHECK(evt_strtab_intern(t, s) == (uint32_t)(3 + i));
        CHECK(strcmp(evt_strtab_get(t, (uint32_t)(3 + i)), s) == 0);
    }
    CHECK(evt_strtab_count(t) == 100002);
    evt_strtab_free(t);
    evt_strtab_free(NULL);

    /* define: only the next id; strings are copied */
    t = evt_strtab_new();
    char tmp[] = "ps0";
    CHECK(evt_strtab_define(t, 2, "x", 1) == DP_EINVAL);
    CHECK(evt_strtab_define(t, 0, "x", 1) == DP_EINVAL);
    CHECK(evt_strtab_define(t, 1, tmp, 3) == DP_OK);
    tmp[0] = 'X';
    CHECK(strcmp(evt_strtab_get(t, 1), "ps0") == 0);
    CHECK(evt_strtab_define(t, 1, "again", 5) == DP_EINVAL);
    CHECK(evt_strtab_define(t, 2, "abcdef", 3) == DP_OK);   /* (ptr, len) */
    CHECK(strcmp(evt_strtab_get(t, 2), "abc") == 0);
    CHECK(evt_strtab_intern(t, "abc") == 2);                 /* defined strings intern */
    CHECK(evt_strtab_define(t, 3, "", 0) == DP_OK);          /* placeholders allowed */
    CHECK(evt_strtab_intern(t, "new") == 4);
    evt_strtab_free(t);
}

int main(void)
{
    test_kind_names();
    test_codec();
    test_strtab();
    return CHECK_DONE();
}
