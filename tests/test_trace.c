/* test_trace.c — trace files as the writer leaves them: write -> read gives identical
 * events and strings; slightly late events read back ordered by (t, arrival); seek on a
 * 1M-event trace; evt_state's rules, and state_at equals replay from the start. Damaged
 * and bad files are test_trace_damage.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"
#include "tests/check.h"
#include "tests/evgen.h"
#include "tests/trace_check.h"

static char dir[256];

/* ---- round trip --------------------------------------------------------------------- */

static evgen gen;
static evt_record *written;

static void test_round_trip(void)
{
    const char *path = check_path(dir, "rt.dptrace");
    write_rt(path, &gen, &written);
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    CHECK_MSG(r != NULL, "%s", err);
    if (!r) return;
    CHECK(trace_reader_damage(r) == NULL);
    CHECK(trace_reader_damage_offset(r) == -1);
    CHECK(trace_reader_count(r) == gen.n);
    CHECK(strcmp(trace_reader_metadata(r), "{\"engine\":\"sim\",\"final_loss\":0.3}") == 0);
    CHECK(trace_reader_t0(r) == gen.ev[0].t);
    CHECK(trace_reader_t1(r) == gen.ev[gen.n - 1].t);
    CHECK_MSG(trace_reader_block_count(r) >= 10, "%zu blocks", trace_reader_block_count(r));
    evt_record *got = xmalloc(gen.n * sizeof *got);
    size_t n = read_all(r, got, gen.n);
    CHECK(n == gen.n);
    int same = 1, strings = 1;
    for (size_t i = 0; i < n && i < gen.n; i++) {
        if (!same_record(&got[i], &written[i])) same = 0;
        if (strcmp(trace_reader_string(r, got[i].var), evt_strtab_get(gen.strs, gen.ev[i].var)) ||
            strcmp(trace_reader_string(r, got[i].str), evt_strtab_get(gen.strs, gen.ev[i].str)) ||
            strcmp(trace_reader_string(r, got[i].device),
                   evt_strtab_get(gen.strs, gen.ev[i].device)))
            strings = 0;
    }
    CHECK_MSG(same, "events differ after round trip");
    CHECK_MSG(strings, "strings differ after round trip");
    CHECK(strcmp(trace_reader_string(r, 0), "") == 0);
    CHECK(strcmp(trace_reader_string(r, 999999), "") == 0);
    evt_record e;
    CHECK(trace_reader_next(r, &e) == 0);      /* stays at the end */
    CHECK(trace_reader_damage(r) == NULL);
    /* block infos tile the data region in order */
    trace_block_info a, b;
    int tiled = 1;
    uint64_t total = 0;
    for (size_t i = 0; i < trace_reader_block_count(r); i++) {
        trace_reader_block_info(r, i, &a);
        total += a.events;
        if (i > 0) {
            trace_reader_block_info(r, i - 1, &b);
            if (b.offset + b.bytes != a.offset) tiled = 0;
        }
    }
    CHECK(tiled && total == gen.n);
    CHECK(trace_reader_block_info(r, trace_reader_block_count(r), &a) == DP_EINVAL);
    free(got);
    trace_reader_close(r);
    trace_reader_close(NULL);
    CHECK(trace_writer_close(NULL, err) == 0);

    /* an empty trace, metadata NULL -> "{}" */
    path = check_path(dir, "empty.dptrace");
    trace_writer *w = trace_writer_open(path, NULL, err);
    CHECK(w && trace_writer_close(w, err) == 0);
    r = trace_reader_open(path, err);
    CHECK_MSG(r && trace_reader_count(r) == 0 && !trace_reader_damage(r) &&
              strcmp(trace_reader_metadata(r), "{}") == 0, "%s", r ? "" : err);
    CHECK(r && trace_reader_next(r, &e) == 0 && trace_reader_seek(r, 5) == 0 &&
          trace_reader_next(r, &e) == 0);
    trace_reader_close(r);
    CHECK(trace_writer_open("/nonexistent-dir/x.dptrace", "{}", err) == NULL &&
          strstr(err, "/nonexistent-dir/x.dptrace"));
}

/* Slightly late events are accepted and read back ordered by (t, arrival). */
static void test_out_of_order(void)
{
    const char *path = check_path(dir, "ooo.dptrace");
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(path, "{}", err);
    int64_t ts[] = {100, 200, 150, 300, 300, 250, 400, 90};
    evt_record e;
    for (size_t i = 0; i < DP_ARRAY_LEN(ts); i++) {
        evt_init(&e, EVT_LOG, EVT_JOB_WORKER, 0);
        e.t = ts[i];
        e.id = i;
        trace_writer_add(w, &e);
    }
    trace_writer_close(w, err);
    trace_reader *r = trace_reader_open(path, err);
    int64_t want_t[] = {90, 100, 150, 200, 250, 300, 300, 400};
    uint64_t want_id[] = {7, 0, 2, 1, 5, 3, 4, 6};
    int ok = r != NULL;
    for (size_t i = 0; r && i < DP_ARRAY_LEN(want_t); i++)
        if (trace_reader_next(r, &e) != 1 || e.t != want_t[i] || e.id != want_id[i]) ok = 0;
    CHECK(ok);
    CHECK(r && trace_reader_t0(r) == 90 && trace_reader_t1(r) == 400);
    CHECK(r && trace_reader_seek(r, 260) == 0 && trace_reader_next(r, &e) == 1 && e.id == 3);
    trace_reader_close(r);
}

/* ---- seek on 1M events -------------------------------------------------------------- */

#define BIG 1000000
static int64_t big_t(size_t i) { return (int64_t)(i / 3) * 1000 + 5000; }

static void big_event(size_t i, evt_record *e)
{
    evt_init(e, (evt_kind)(1 + i % (EVT_KIND_COUNT - 1)), (int)(i % 2), (int)(i % 5));
    e->t = big_t(i);
    e->step = (int64_t)i;
    e->id = i * 7;
    e->value = (double)i * 0.5;
}

static size_t big_lower_bound(int64_t t)
{
    if (t <= 5000) return 0;
    int64_t q = (t - 5000 + 999) / 1000;         /* first group with time >= t */
    size_t i = (size_t)q * 3;
    return i > BIG ? BIG : i;
}

static void test_seek_big(void)
{
    const char *path = check_path(dir, "big.dptrace");
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(path, "{\"engine\":\"sim\"}", err);
    evt_record e, x;
    for (size_t i = 0; i < BIG; i++) {
        big_event(i, &e);
        trace_writer_add(w, &e);
    }
    CHECK(trace_writer_close(w, err) == 0);
    uint64_t t0 = dp_now_ns();
    trace_reader *r = trace_reader_open(path, err);
    uint64_t t1 = dp_now_ns();
    CHECK_MSG(r != NULL, "%s", err);
    if (!r) return;
    printf("1M events: %ld bytes (%.2f bytes/event), %zu blocks, open %.1f ms\n",
           file_size(path), (double)file_size(path) / BIG, trace_reader_block_count(r),
           (double)(t1 - t0) / 1e6);
    CHECK(trace_reader_count(r) == BIG);
    dp_rng rng;
    dp_rng_seed(&rng, 9);
    int ok = 1;
    uint64_t s0 = dp_now_ns();
    for (int k = 0; k < 2000; k++) {
        int64_t t = (int64_t)dp_rng_below(&rng, (uint64_t)big_t(BIG - 1) + 10000) - 2000;
        size_t want = big_lower_bound(t);
        if (trace_reader_seek(r, t) != 0) ok = 0;
        for (size_t j = want; j < want + 5; j++) {
            int rc = trace_reader_next(r, &e);
            if (j >= BIG) {
                if (rc != 0) ok = 0;
                break;
            }
            big_event(j, &x);
            if (rc != 1 || !same_record(&e, &x)) {
                if (ok) fprintf(stderr, "seek %lld: want event %zu\n", (long long)t, j);
                ok = 0;
            }
        }
    }
    uint64_t s1 = dp_now_ns();
    printf("2000 seeks: %.1f us each\n", (double)(s1 - s0) / 2000 / 1e3);
    CHECK_MSG(ok, "seek results differ from lower_bound");
    /* exact boundaries: each block's first event */
    trace_block_info bi;
    ok = 1;
    for (size_t b = 0; b < trace_reader_block_count(r); b += 17) {
        trace_reader_block_info(r, b, &bi);
        trace_reader_seek(r, bi.t_min);
        big_event(big_lower_bound(bi.t_min), &x);
        if (trace_reader_next(r, &e) != 1 || !same_record(&e, &x)) ok = 0;
    }
    CHECK(ok);
    CHECK(trace_reader_seek(r, INT64_MIN) == 0 && trace_reader_next(r, &e) == 1 && e.step == 0);
    CHECK(trace_reader_seek(r, INT64_MAX) == 0 && trace_reader_next(r, &e) == 0);
    CHECK(trace_reader_rewind(r) == 0 && trace_reader_next(r, &e) == 1 && e.step == 0);
    trace_reader_close(r);
    unlink(path);
}

/* ---- state_at ----------------------------------------------------------------------- */

static void replay_to(trace_reader *r, int64_t t, evt_state *st)
{
    evt_record e;
    evt_state_reset(st);
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1 && e.t <= t) evt_state_apply(st, &e);
}

/* state_at at 60 times (random, playing forward, past both ends, at some of the n
 * records written) equals a replay from the start; 1 when every one does. */
static int state_at_replays(trace_reader *r, const evt_record *wr, size_t n)
{
    evt_state a, b;
    evt_state_init(&a);
    evt_state_init(&b);
    dp_rng rng;
    dp_rng_seed(&rng, 11);
    int64_t t0 = trace_reader_t0(r), t1 = trace_reader_t1(r);
    int ok = 1;
    int64_t times[60];
    for (int k = 0; k < 60; k++) {
        if (k < 40) times[k] = t0 - 10 + (int64_t)dp_rng_below(&rng, (uint64_t)(t1 - t0 + 20));
        else if (k < 50) times[k] = times[k - 1] + 3000;            /* playing forward */
        else times[k] = k == 50 ? t1 + 5 : (k == 51 ? t0 - 1 : wr[(size_t)k * 997 % n].t);
    }
    /* read with the cursor in the middle: state_at must not move it */
    trace_reader_seek(r, wr[1234 % n].t);
    for (int k = 0; k < 60; k++) {
        trace_reader_state_at(r, times[k], &a);
        replay_to(r, times[k], &b);
        if (!evt_state_equal(&a, &b)) {
            fprintf(stderr, "state_at(%lld) differs: events %llu vs %llu\n",
                    (long long)times[k], (unsigned long long)a.events,
                    (unsigned long long)b.events);
            ok = 0;
        }
        if (k == 0) trace_reader_seek(r, wr[1234 % n].t);
    }
    evt_state_release(&a);
    evt_state_release(&b);
    return ok;
}

static void test_state_at(void)
{
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(check_path(dir, "rt.dptrace"), err);
    if (!r) return;
    CHECK(trace_reader_block_count(r) > 2 * TRACE_STATE_SNAPSHOT_BLOCKS);
    evt_state a;
    evt_state_init(&a);
    int64_t t0 = trace_reader_t0(r), t1 = trace_reader_t1(r);
    CHECK(state_at_replays(r, written, gen.n));
    evt_record e;
    /* after the loop replay_to moved the cursor; check seek+state_at independence */
    trace_reader_seek(r, written[1234].t);
    trace_reader_state_at(r, t1, &a);
    CHECK(trace_reader_next(r, &e) == 1 && same_record(&e, &written[1234]));
    /* the full state is sensible */
    trace_reader_state_at(r, t1, &a);
    CHECK(a.n_ps == 2 && a.n_workers == 4 && a.n_vars == 6 && a.events == gen.n);
    CHECK(a.counts[EVT_PUSH_END] == 4 * RT_STEPS * 6);
    CHECK(a.counts[EVT_APPLY] + a.counts[EVT_DROP] == 4 * RT_STEPS * 6);
    CHECK(a.counts[EVT_STEP_END] == 4 * RT_STEPS);
    const evt_task_state *w1 = evt_state_task(&a, EVT_JOB_WORKER, 1);
    CHECK(w1 && w1->steps_done == RT_STEPS && w1->loss > 0 && w1->phase == EVT_PHASE_IDLE);
    CHECK(evt_state_task(&a, EVT_JOB_WORKER, 9) == NULL);
    CHECK(a.n_devices == 6);
    /* a variable's version is the largest APPLY step (its version after the update) */
    int versions_ok = 1;
    for (int i = 0; i < a.n_vars; i++) {
        int64_t want = 0;
        for (size_t k = 0; k < gen.n; k++)
            if (written[k].kind == EVT_APPLY && written[k].var == a.vars[i].name && written[k].step > want)
                want = written[k].step;
        if (a.vars[i].version != want) versions_ok = 0;
    }
    CHECK(versions_ok && a.vars[0].ps == 0 && a.vars[1].ps == 1);
    /* and each variable's dropped gradients */
    int var_drops_ok = 1;
    for (int i = 0; i < a.n_vars; i++) {
        int64_t want = 0;
        for (size_t k = 0; k < gen.n; k++) want += written[k].kind == EVT_DROP && written[k].var == a.vars[i].name;
        var_drops_ok &= a.vars[i].drops == want;
    }
    CHECK(var_drops_ok);
    /* each ps's applied and dropped gradients, and the whole run's, counted from the
     * events written */
    int per_ps_ok = 1;
    int64_t all_applies = 0, all_drops = 0, stale_sum = 0;
    for (int p = 0; p < 2; p++) {
        int64_t applies = 0, drops = 0;
        for (size_t k = 0; k < gen.n; k++) {
            if (written[k].job != EVT_JOB_PS || written[k].task != p) continue;
            applies += written[k].kind == EVT_APPLY;
            drops += written[k].kind == EVT_DROP;
            if (written[k].kind == EVT_APPLY) stale_sum += (int64_t)written[k].value;
        }
        const evt_task_state *ps = evt_state_task(&a, EVT_JOB_PS, p);
        per_ps_ok &= ps && ps->applies == applies && ps->drops == drops;
        all_applies += applies;
        all_drops += drops;
    }
    CHECK(per_ps_ok && all_applies > 0 && all_drops > 0);
    CHECK(a.applies == all_applies && a.drops == all_drops && (int64_t)a.staleness_sum == stale_sum);
    /* mid-run some worker is busy */
    trace_reader_state_at(r, (t0 + t1) / 2, &a);
    int busy = 0;
    for (int i = 0; i < a.workers_len; i++) busy += a.workers[i].phase != EVT_PHASE_IDLE;
    CHECK(busy > 0);
    evt_state_release(&a);
    trace_reader_close(r);
}

/* The snapshots of a trace too big for their memory budget (a huge simulated cluster's):
 * every other one dropped and the spacing doubled, as often as it takes to fit, and no
 * more; state_at still equals a replay. A run like rt.dptrace's, 4 times as long. */
static void test_state_at_thinned(void)
{
    const char *path = check_path(dir, "long.dptrace");
    evgen g;
    evt_record *wr;
    evgen_run(&g, 2, 4, 6, 4 * RT_STEPS, 1, 3);
    write_gen(path, &g, &wr, "{}");
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    CHECK_MSG(r != NULL, "%s", err);
    if (!r) goto out;
    size_t nblocks = trace_reader_block_count(r);
    trace_snapshot_info none = trace_reader_snapshot_info(r);
    CHECK(none.count == 0 && none.spacing == 0 && none.bytes == 0);
    evt_state st;
    evt_state_init(&st);
    trace_reader_state_at(r, trace_reader_t1(r), &st);
    /* at most one snapshot's worth: every task, variable and device of the run */
    size_t one = sizeof st + (size_t)(st.ps_len + st.workers_len) * sizeof(evt_task_state) +
                 (size_t)st.n_vars * sizeof(evt_var_state) + (size_t)st.n_devices * sizeof(evt_device_state) +
                 (size_t)st.var_nslots_ * sizeof(int32_t);
    trace_snapshot_info full = trace_reader_snapshot_info(r);
    printf("long.dptrace: %zu blocks, %zu snapshots\n", nblocks, full.count);
    /* one before every 16th block, and the state after the last */
    size_t want = (nblocks + TRACE_STATE_SNAPSHOT_BLOCKS - 1) / TRACE_STATE_SNAPSHOT_BLOCKS +
                  (nblocks % TRACE_STATE_SNAPSHOT_BLOCKS == 0);
    CHECK_MSG(full.spacing == TRACE_STATE_SNAPSHOT_BLOCKS && full.count == want && full.count >= 8,
              "%zu blocks: %zu snapshots every %zu blocks", nblocks, full.count, full.spacing);
    /* every snapshot but the first (before any event) holds the whole cluster */
    CHECK(full.bytes == sizeof st + (full.count - 1) * one);
    trace_reader_close(r);

    r = trace_reader_open(path, err);
    if (!r) goto out;
    size_t budget = full.bytes / 5;
    trace_reader_set_snapshot_budget(r, budget);
    trace_reader_state_at(r, trace_reader_t0(r), &st);
    trace_snapshot_info thin = trace_reader_snapshot_info(r);
    want = (nblocks + thin.spacing - 1) / thin.spacing + (nblocks % thin.spacing == 0);
    CHECK_MSG(thin.spacing > TRACE_STATE_SNAPSHOT_BLOCKS && thin.count == want,
              "%zu snapshots every %zu blocks", thin.count, thin.spacing);
    /* within the budget, but for the state after the last block, which is always kept */
    CHECK_MSG(thin.bytes <= budget + one, "%zu bytes for a budget of %zu", thin.bytes, budget);
    /* and no thinner than it had to be: at half the spacing it would not fit */
    CHECK_MSG(2 * thin.count * one > budget, "%zu snapshots of %zu bytes for a budget of %zu", thin.count, one,
              budget);
    CHECK(state_at_replays(r, wr, g.n));
    trace_reader_close(r);
    evt_state_release(&st);
out:
    free(wr);
    evgen_free(&g);
    unlink(path);
}

/* evt_state_equal tells apart two states that differ in any one field (what state_at's
 * check against a replay relies on): a state with a ps, a worker, a variable and a
 * device, copied, one field changed in the copy. */
static void test_state_equal_each_field(void)
{
    evt_state st, cp;
    evt_state_init(&st);
    evt_state_init(&cp);
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, 0);
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_VAR_PLACE, EVT_JOB_PS, 0);
    e.var = 7;
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0);
    e.device = 9;
    evt_state_apply(&st, &e);
    CHECK(st.n_vars == 1 && st.n_devices == 1 && st.ps_len == 1 && st.workers_len == 1);
    int n = 0, told = 0;
#define DIFFERS(field, change)                                                                       \
    do {                                                                                             \
        evt_state_copy(&cp, &st);                                                                    \
        cp.field change;                                                                             \
        n++;                                                                                         \
        if (evt_state_equal(&st, &cp) || evt_state_equal(&cp, &st))                                  \
            fprintf(stderr, "evt_state_equal misses a change of " #field "\n");                      \
        else                                                                                         \
            told++;                                                                                  \
    } while (0)
    DIFFERS(t, += 1); DIFFERS(events, += 1); DIFFERS(counts[EVT_APPLY], += 1);
    DIFFERS(cluster_started, = 1); DIFFERS(cluster_stopped, = 1); DIFFERS(config, = 3);
    DIFFERS(n_ps, += 1); DIFFERS(n_workers, += 1); DIFFERS(global_step, += 1);
    DIFFERS(applies, += 1); DIFFERS(drops, += 1); DIFFERS(staleness_sum, += 1);
    DIFFERS(staleness_max, += 1); DIFFERS(last_staleness, += 1); DIFFERS(eval_step, += 1);
    DIFFERS(eval_accuracy, = 0.5); DIFFERS(eval_loss, = 0.5); DIFFERS(checkpoints, += 1);
    DIFFERS(failures, += 1); DIFFERS(events_dropped, += 1);
    DIFFERS(ps[0].applies, += 1); DIFFERS(ps[0].drops, += 1); DIFFERS(ps[0].started, = 0);
    DIFFERS(workers[0].seen, = 0); DIFFERS(workers[0].job, = EVT_JOB_PS); DIFFERS(workers[0].index, += 1);
    DIFFERS(workers[0].host, += 1); DIFFERS(workers[0].pid, += 1); DIFFERS(workers[0].phase, += 1);
    DIFFERS(workers[0].phase_since, += 1); DIFFERS(workers[0].pulls_in_flight, += 1);
    DIFFERS(workers[0].pushes_in_flight, += 1); DIFFERS(workers[0].computing, += 1);
    DIFFERS(workers[0].paced, += 1); DIFFERS(workers[0].in_barrier, = 1); DIFFERS(workers[0].in_ssp, = 1);
    DIFFERS(workers[0].dead, = 1); DIFFERS(workers[0].stopped, = 1); DIFFERS(workers[0].reconnecting, = 1);
    DIFFERS(workers[0].step, += 1); DIFFERS(workers[0].steps_done, += 1); DIFFERS(workers[0].loss, = 2);
    DIFFERS(workers[0].bytes_pulled, += 1); DIFFERS(workers[0].bytes_pushed, += 1);
    DIFFERS(workers[0].events_dropped, += 1); DIFFERS(workers[0].fail_reason, += 1);
    DIFFERS(vars[0].name, += 1); DIFFERS(vars[0].shape, += 1); DIFFERS(vars[0].bytes, += 1);
    DIFFERS(vars[0].ps, += 1); DIFFERS(vars[0].device, += 1); DIFFERS(vars[0].version, += 1);
    DIFFERS(vars[0].drops, += 1); DIFFERS(vars[0].last_staleness, = 2);
    DIFFERS(devices[0].job, = EVT_JOB_PS); DIFFERS(devices[0].task, += 1); DIFFERS(devices[0].name, += 1);
    DIFFERS(devices[0].busy, += 1); DIFFERS(devices[0].ops, += 1);
#undef DIFFERS
    CHECK_MSG(told == n, "evt_state_equal told %d of %d one-field changes apart", told, n);
    evt_state_copy(&cp, &st);
    CHECK(evt_state_equal(&st, &cp));
    evt_state_release(&st);
    evt_state_release(&cp);
}

/* Metadata beyond the format's 16 MiB is refused with a reason, and no file is left. */
static void test_meta_too_large(void)
{
    const char *path = check_path(dir, "big_meta.dptrace");
    size_t n = (16u << 20) + 2;
    char *meta = xmalloc(n + 1), err[DP_ERRLEN] = "";
    memset(meta, ' ', n);
    meta[0] = '{';
    meta[n - 1] = '}';
    meta[n] = 0;
    trace_writer *w = trace_writer_open(path, meta, err);
    CHECK_MSG(w == NULL && strstr(err, "metadata too large") && strstr(err, "big_meta.dptrace"),
              "16 MiB + 2 of metadata: %s (%s)", w ? "opened" : "refused", err);
    CHECK(access(path, F_OK) != 0);
    free(meta);
}

static void test_state_apply(void)
{
    evt_state st, cp;
    evt_state_init(&st);
    evt_state_init(&cp);
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, 2);
    evt_state_apply(&st, &e);
    CHECK(st.n_workers == 1 && st.workers_len == 3 && !evt_state_task(&st, EVT_JOB_WORKER, 0));
    evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, 2);
    e.t = 10;
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->phase == EVT_PHASE_PULLING);
    e.kind = EVT_COMPUTE_BEGIN;
    e.t = 20;
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->phase == EVT_PHASE_COMPUTING &&
          evt_state_task(&st, EVT_JOB_WORKER, 2)->phase_since == 20);
    e.kind = EVT_SSP_WAIT;
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->phase == EVT_PHASE_SSP);
    e.kind = EVT_FAILURE;
    e.str = 5;   /* why it failed, as the viewer shows it */
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->phase == EVT_PHASE_DEAD && st.failures == 1);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->fail_reason == 5);
    e.kind = EVT_RECOVERY;
    e.str = 0;
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->phase == EVT_PHASE_IDLE);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->fail_reason == 0);
    /* a viewer that joins mid-run sees ends whose beginnings it missed: counts stay at 0 */
    const int ends[] = {EVT_PULL_END, EVT_PUSH_END, EVT_COMPUTE_END, EVT_PACED_END};
    for (size_t i = 0; i < DP_ARRAY_LEN(ends); i++) {
        evt_init(&e, (evt_kind)ends[i], EVT_JOB_WORKER, 2);
        evt_state_apply(&st, &e);
    }
    const evt_task_state *late = evt_state_task(&st, EVT_JOB_WORKER, 2);
    CHECK_MSG(late->pulls_in_flight == 0 && late->pushes_in_flight == 0 && late->computing == 0 && late->paced == 0,
              "ends without beginnings: pulls %d, pushes %d, computing %d, paced %d in flight (want 0)",
              late->pulls_in_flight, late->pushes_in_flight, late->computing, late->paced);
    evt_init(&e, EVT_PUSH_BEGIN, EVT_JOB_WORKER, 2);
    evt_state_apply(&st, &e);
    CHECK(evt_state_task(&st, EVT_JOB_WORKER, 2)->pushes_in_flight == 1);
    e.kind = EVT_PUSH_END;
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_EVENTS_DROPPED, EVT_JOB_WORKER, 2);
    e.bytes = 10;
    evt_state_apply(&st, &e);
    e.bytes = 25;
    evt_state_apply(&st, &e);
    evt_init(&e, EVT_EVENTS_DROPPED, EVT_JOB_HUB, 0);
    e.bytes = 5;
    evt_state_apply(&st, &e);
    CHECK(st.events_dropped == 30);
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, EVT_STATE_MAX_TASKS + 5);
    evt_state_apply(&st, &e);                     /* counted, no giant array */
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, -1);
    evt_state_apply(&st, &e);
    CHECK(st.workers_len == 3 && st.ps_len == 0 && st.counts[EVT_TASK_START] == 3);
    e.kind = 999;
    evt_state_apply(&st, &e);
    CHECK(st.counts[0] == 1);
    evt_state_copy(&cp, &st);
    CHECK(evt_state_equal(&cp, &st));
    evt_init(&e, EVT_GLOBAL_STEP, EVT_JOB_PS, 0);
    e.step = 7;
    evt_state_apply(&st, &e);
    CHECK(!evt_state_equal(&cp, &st) && st.global_step == 7);
    evt_state_reset(&st);
    CHECK(st.events == 0 && st.n_workers == 0);
    CHECK(strcmp(evt_phase_name(EVT_PHASE_SSP), "ssp_blocked") == 0 &&
          strcmp(evt_phase_name(99), "unknown") == 0 && strcmp(evt_phase_name(EVT_PHASE_COUNT), "unknown") == 0 &&
          strcmp(evt_phase_name(-1), "unknown") == 0);
    evt_state_release(&st);
    evt_state_release(&cp);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/dp_test_trace.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_out_of_order();
    test_seek_big();
    test_state_apply();
    test_meta_too_large();
    test_state_equal_each_field();
    test_state_at();
    test_state_at_thinned();
    free(written);
    evgen_free(&gen);
    const char *names[] = {"rt.dptrace", "empty.dptrace", "ooo.dptrace"};
    for (size_t i = 0; i < DP_ARRAY_LEN(names); i++) unlink(check_path(dir, names[i]));
    rmdir(dir);
    return CHECK_DONE();
}
