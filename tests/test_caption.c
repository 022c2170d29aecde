/* test_caption.c — the caption engine (events/caption.h) and its drawing (viz/captions.h).
 * Each rule gets a hand-made event sequence and the exact line it must make, written out
 * here as a literal; then what no rule may caption, the one-per-rule-per-step limit, the
 * history bound, which caption shows at a time (importance), recorded runs (tests/data,
 * and scenarios/recorded for the only run with drops), and the caption bar and history
 * drawn on an image surface: dark, text-like pixels inside their rectangle, none outside. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>

#include "check.h"
#include "common/dp.h"
#include "events/caption.h"
#include "events/state.h"
#include "events/trace.h"
#include "viz/captions.h"

/* fontconfig's cleanup, when the process has it (through cairo); weak so that the
 * test links without -lfontconfig. */
extern void FcFini(void) __attribute__((weak));

#define MS 1000000LL
#define DASH "\xe2\x80\x94"   /* the em dash of the barrier line */

static const char *META_SYNC_4_1 =
    "{\"engine\":\"real\",\"mode\":\"sync\",\"ps\":1,\"workers\":4,\"backup_workers\":1,\"staleness\":3}";
static const char *META_SYNC_2 = "{\"engine\":\"real\",\"mode\":\"sync\",\"ps\":1,\"workers\":2,\"backup_workers\":0}";
static const char *META_ASYNC = "{\"engine\":\"real\",\"mode\":\"async\",\"ps\":2,\"workers\":4}";
static const char *META_SSP = "{\"engine\":\"sim\",\"config\":{\"mode\":\"ssp\",\"ps\":1,\"workers\":3,\"staleness\":3}}";

static evt_record ev(int kind, int job, int task, int64_t t)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, job, task);
    e.t = t;
    return e;
}

static int add(evt_captioner *c, int kind, int job, int task, int64_t t)
{
    evt_record e = ev(kind, job, task, t);
    return evt_captioner_add(c, &e);
}

static int add_step(evt_captioner *c, int kind, int job, int task, int64_t t, int64_t step, double value)
{
    evt_record e = ev(kind, job, task, t);
    e.step = step;
    e.value = value;
    return evt_captioner_add(c, &e);
}

/* A ps event about worker w (APPLY, DROP). */
static int add_ps(evt_captioner *c, int kind, int w, uint32_t var, int64_t t, int64_t step, double value)
{
    evt_record e = ev(kind, EVT_JOB_PS, 0, t);
    e.peer = w;
    e.peer_job = EVT_JOB_WORKER;
    e.var = var;
    e.step = step;
    e.value = value;
    return evt_captioner_add(c, &e);
}

static int add_str(evt_captioner *c, int kind, int job, int task, int64_t t, int64_t step, uint32_t str)
{
    evt_record e = ev(kind, job, task, t);
    e.step = step;
    e.str = str;
    return evt_captioner_add(c, &e);
}

/* The newest caption's text, "" when none. */
static const char *last(const evt_captioner *c)
{
    size_t n = evt_captioner_count(c);
    return n ? evt_captioner_get(c, n - 1)->text : "";
}

static int last_rule(const evt_captioner *c)
{
    size_t n = evt_captioner_count(c);
    return n ? evt_captioner_get(c, n - 1)->rule : -1;
}

#define CHECK_TEXT(c, want) do { const char *got_ = last(c); \
    CHECK_MSG(!strcmp(got_, want), "got \"%s\", want \"%s\"", got_, want); } while (0)

/* ---- one rule at a time ------------------------------------------------------------------- */

static void test_barrier(void)
{
    /* 4 workers, 1 backup: replicas_to_aggregate = 4 - 1 = 3, so the line comes when 2 wait */
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 149, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 200, 149, 0);
    CHECK_MSG(evt_captioner_count(c) == 0, "1 waiting of R - 1 = 2 needed: no caption yet");
    CHECK(add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 2, 300, 149, 0) == 1);
    CHECK_TEXT(c, "step 149: 2 of 4 workers wait at the barrier " DASH
                  " sync needs 3 gradients (replicas_to_aggregate = 3)");
    const evt_caption *k = evt_captioner_get(c, 0);
    CHECK_MSG(k && k->t == 300 && k->step == 149 && k->rule == EVT_CAPTION_BARRIER,
              "the barrier caption: t 300, step 149, rule barrier");
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 1, 400, 149, 0);
    CHECK_MSG(evt_captioner_count(c) == 1, "a third waiter in step 149: still one barrier caption");
    for (int w = 0; w < 3; w++) add_step(c, EVT_BARRIER_RELEASE, EVT_JOB_WORKER, w, 500, 149, 0);
    /* step 150: worker 0 waits and is released, then worker 1 waits: 1 waiting, not 2 */
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 600, 150, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 610, 150, 0);
    add_step(c, EVT_BARRIER_RELEASE, EVT_JOB_WORKER, 0, 620, 150, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 1, 630, 150, 0);
    CHECK(add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 3, 635, 149, 0) == 0);   /* late, for a step done */
    CHECK_MSG(evt_captioner_count(c) == 1, "a released worker and a late one for step 149 do not count");
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 2, 640, 150, 0);
    CHECK_TEXT(c, "step 150: 2 of 4 workers wait at the barrier " DASH
                  " sync needs 3 gradients (replicas_to_aggregate = 3)");
    evt_captioner_free(c);

    /* 2 workers, no backup: R = 2, so the first waiter is the caption */
    c = evt_captioner_new(META_SYNC_2, NULL, NULL, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 1, 10, 0, 0);
    CHECK_TEXT(c, "step 0: 1 of 2 workers waits at the barrier " DASH
                  " sync needs 2 gradients (replicas_to_aggregate = 2)");
    /* a trace read from the middle, no global step seen yet: the caption is at its step */
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 20, 5, 0);
    k = evt_captioner_get(c, evt_captioner_count(c) - 1);
    CHECK_MSG(k && k->step == 5, "a barrier at step 5 before any global step: caption at step %lld",
              k ? (long long)k->step : -1LL);
    evt_captioner_free(c);
}

static void test_drop(void)
{
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 149, 0);
    CHECK(add_ps(c, EVT_DROP, 3, 0, 200, 149, 44) == 1);
    CHECK_TEXT(c, "worker 3's gradient for step 105 arrived at step 149: dropped as stale");
    CHECK(last_rule(c) == EVT_CAPTION_DROP);
    evt_captioner_free(c);
}

static void test_staleness(void)
{
    evt_strtab *s = evt_strtab_new();
    uint32_t hw = evt_strtab_intern(s, "hidden/weights"), hb = evt_strtab_intern(s, "hidden/biases");
    evt_captioner *c = evt_captioner_new(META_ASYNC, evt_caption_strtab_str, s, 0);
    evt_record e = ev(EVT_PULL_END, EVT_JOB_WORKER, 1, 100);
    e.var = hw;
    e.value = 57;
    evt_captioner_add(c, &e);
    e = ev(EVT_PULL_END, EVT_JOB_WORKER, 2, 110);
    e.var = hb;   /* worker 2 read another variable: not its hidden/weights */
    e.value = 50;
    evt_captioner_add(c, &e);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 150, 60, 0);
    CHECK(add_ps(c, EVT_APPLY, 1, hw, 200, 61, 3) == 1);
    CHECK_TEXT(c, "worker 1 read hidden/weights at v57 and pushed at v60: staleness 3");
    /* no pull of hidden/weights by worker 2 seen: read = APPLY step 70 - 1 - 4 = 65 */
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 250, 69, 0);
    add_ps(c, EVT_APPLY, 2, hw, 300, 70, 4);
    CHECK_TEXT(c, "worker 2 read hidden/weights at v65 and pushed at v69: staleness 4");
    /* a newer pull replaces the older one */
    e = ev(EVT_PULL_END, EVT_JOB_WORKER, 1, 350);
    e.var = hw;
    e.value = 60;
    evt_captioner_add(c, &e);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 360, 70, 0);
    add_ps(c, EVT_APPLY, 1, hw, 400, 71, 2);
    CHECK_TEXT(c, "worker 1 read hidden/weights at v60 and pushed at v62: staleness 2");
    CHECK(last_rule(c) == EVT_CAPTION_STALENESS);
    evt_captioner_free(c);
    evt_strtab_free(s);
}

static void test_ssp(void)
{
    /* runtime style: SSP_WAIT's value is 0; the others' clocks come from their STEP_ENDs
     * (step 9 done = clock 10; 5 -> 6; 7 -> 8): worker 0 at step 10 is 10 - 6 = 4 ahead */
    evt_captioner *c = evt_captioner_new(META_SSP, NULL, NULL, 0);
    add_step(c, EVT_STEP_END, EVT_JOB_WORKER, 0, 100, 9, 1.0);
    add_step(c, EVT_STEP_END, EVT_JOB_WORKER, 1, 110, 5, 1.0);
    add_step(c, EVT_STEP_END, EVT_JOB_WORKER, 2, 120, 7, 1.0);
    CHECK(add_step(c, EVT_SSP_WAIT, EVT_JOB_WORKER, 0, 200, 10, 0) == 1);
    CHECK_TEXT(c, "worker 0 waits: it is 4 steps ahead of the slowest (staleness bound 3)");
    evt_captioner_free(c);
    /* simulator style: the value carries the slowest's clock, 5; step 10 is 5 ahead */
    c = evt_captioner_new(META_SSP, NULL, NULL, 0);
    add_step(c, EVT_SSP_WAIT, EVT_JOB_WORKER, 2, 200, 10, 5);
    CHECK_TEXT(c, "worker 2 waits: it is 5 steps ahead of the slowest (staleness bound 3)");
    CHECK(last_rule(c) == EVT_CAPTION_SSP_WAIT);
    evt_captioner_free(c);
}

static void test_eval_checkpoint_pace(void)
{
    evt_strtab *s = evt_strtab_new();
    uint32_t path = evt_strtab_intern(s, "/tmp/run/ckpt/model.ckpt-300");
    evt_captioner *c = evt_captioner_new(META_SYNC_2, evt_caption_strtab_str, s, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 50, 300, 0);
    add_step(c, EVT_EVAL, EVT_JOB_WORKER, 0, 100, 300, 0.8412);
    CHECK_TEXT(c, "the chief evaluates at global step 300: accuracy 0.84");
    CHECK(last_rule(c) == EVT_CAPTION_EVAL);
    add_str(c, EVT_CHECKPOINT_WRITE, EVT_JOB_WORKER, 0, 200, 300, path);
    CHECK_TEXT(c, "the chief saves a checkpoint at global step 300: model.ckpt-300");
    CHECK(last_rule(c) == EVT_CAPTION_CHECKPOINT);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 1, 300, 300, 0.2);
    CHECK_TEXT(c, "worker 1 waits out the pace: 200 ms a step");
    CHECK(last_rule(c) == EVT_CAPTION_PACE);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 350, 301, 0);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 0, 400, 301, 1.5);
    CHECK_TEXT(c, "worker 0 waits out the pace: 1.5 s a step");
    evt_captioner_free(c);
    /* PACED_BEGIN without its value: the metadata's pace */
    c = evt_captioner_new("{\"engine\":\"real\",\"mode\":\"sync\",\"workers\":2,\"pace\":0.25}", NULL, NULL, 0);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 1, 100, 0, 0);
    CHECK_TEXT(c, "worker 1 waits out the pace: 250 ms a step");
    evt_captioner_free(c);
    /* a restore, as a resumed run's chief does before step 1 */
    c = evt_captioner_new(META_SYNC_2, evt_caption_strtab_str, s, 0);
    add_str(c, EVT_CHECKPOINT_RESTORE, EVT_JOB_WORKER, 0, 100, 300, path);
    CHECK_TEXT(c, "the chief restores global step 300 from model.ckpt-300");
    evt_captioner_free(c);
    evt_strtab_free(s);
}

static void test_failure(void)
{
    evt_strtab *s = evt_strtab_new();
    uint32_t sim = evt_strtab_intern(s, "simulated failure (--fail)");
    uint32_t died = evt_strtab_intern(s, "task /job:worker/replica:0/task:1 died: exit status 1");
    uint32_t lost = evt_strtab_intern(s, "lost /job:worker/replica:0/task:3/device:CPU:0 mid-step");
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, evt_caption_strtab_str, s, 0);
    add_str(c, EVT_FAILURE, EVT_JOB_WORKER, 2, 1000 * MS, 0, sim);
    CHECK_TEXT(c, "worker 2 fails: simulated failure (--fail)");
    CHECK(last_rule(c) == EVT_CAPTION_FAILURE);
    add(c, EVT_RECOVERY, EVT_JOB_WORKER, 2, 4000 * MS);
    CHECK_TEXT(c, "worker 2 recovers after 3.0 s down");
    CHECK(last_rule(c) == EVT_CAPTION_RECOVERY);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 4100 * MS, 1, 0);
    add_str(c, EVT_FAILURE, EVT_JOB_WORKER, 1, 4200 * MS, 0, died);
    CHECK_TEXT(c, "worker 1 died: exit status 1");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 4300 * MS, 2, 0);
    add_str(c, EVT_FAILURE, EVT_JOB_PS, 0, 4400 * MS, 0, lost);
    CHECK_TEXT(c, "ps 0 fails: lost worker 3 mid-step");
    /* a ps past the first eight the failure times have room for: they grow to hold it
     * (one caption of a rule per global step) */
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 4900 * MS, 3, 0);
    add_str(c, EVT_FAILURE, EVT_JOB_PS, 8, 5000 * MS, 0, sim);
    CHECK_TEXT(c, "ps 8 fails: simulated failure (--fail)");
    add(c, EVT_RECOVERY, EVT_JOB_PS, 0, 6000 * MS);
    CHECK_TEXT(c, "ps 0 recovers after 1.6 s down");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 7000 * MS, 4, 0);
    add(c, EVT_RECOVERY, EVT_JOB_PS, 8, 7500 * MS);
    CHECK_TEXT(c, "ps 8 recovers after 2.5 s down");
    evt_captioner_free(c);
    evt_strtab_free(s);
}

/* Windows of 8 computes a worker: worker 2 takes k times worker 0's and 1's 100 ms. */
static int straggler_window(evt_captioner *c, int64_t *t, double k, int *made_before_last)
{
    int made = 0;
    *made_before_last = 0;
    for (int round = 0; round < EVT_CAPTION_STRAGGLER_STEPS; round++)
        for (int w = 0; w < 3; w++) {
            evt_record e = ev(EVT_COMPUTE_END, EVT_JOB_WORKER, w, *t += MS);
            e.dur = (int64_t)((w == 2 ? k : 1.0) * 100 * MS);
            int last_one = round == EVT_CAPTION_STRAGGLER_STEPS - 1 && w == 2;
            int r = evt_captioner_add(c, &e);
            if (!last_one) *made_before_last += r;
            made += r;
        }
    return made;
}

static void test_straggler(void)
{
    evt_captioner *c = evt_captioner_new(META_SYNC_2, NULL, NULL, 0);
    int64_t t = 0;
    int early = 0;
    CHECK(straggler_window(c, &t, 4.0, &early) == 1);
    CHECK_MSG(early == 0, "no straggler caption before the window's 3 x 8 = 24th compute (%d)", early);
    CHECK_TEXT(c, "worker 2 is the slowest: its steps take 4x the others'");
    CHECK(last_rule(c) == EVT_CAPTION_STRAGGLER);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, t += MS, 1, 0);
    straggler_window(c, &t, 2.5, &early);
    CHECK_TEXT(c, "worker 2 is the slowest: its steps take 2.5x the others'");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, t += MS, 2, 0);
    size_t n = evt_captioner_count(c);
    CHECK_MSG(straggler_window(c, &t, 1.5, &early) == 0 && evt_captioner_count(c) == n,
              "1.5x is under the 2x threshold: no caption");
    evt_captioner_free(c);
}

static void test_first_step_and_cluster(void)
{
    evt_strtab *s = evt_strtab_new();
    uint32_t cfg = evt_strtab_intern(s, "{\"mode\":\"ssp\",\"ps\":2,\"workers\":8,\"staleness\":2}");
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, evt_caption_strtab_str, s, 0);
    add(c, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0, 10);
    CHECK_TEXT(c, "1 ps and 4 workers start in sync mode: replicas_to_aggregate = 3 (1 backup worker)");
    CHECK(last_rule(c) == EVT_CAPTION_CLUSTER);
    CHECK(add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 1, 0) == 1);
    CHECK_TEXT(c, "global step 1: every variable has taken its first update");
    CHECK(last_rule(c) == EVT_CAPTION_FIRST_STEP);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 200, 2, 0);
    CHECK_MSG(evt_captioner_emitted(c, EVT_CAPTION_FIRST_STEP) == 1, "global step 2: no second first-step line");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 300, 300, 0);
    add_step(c, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, 400, 0, 1.03);
    CHECK_TEXT(c, "training stops at global step 300 after 1.0 s");
    evt_captioner_free(c);
    /* the simulator's metadata nests the run under "config" */
    c = evt_captioner_new("{\"engine\":\"sim\",\"config\":{\"mode\":\"sync\",\"ps\":8,\"workers\":1000}}",
                          NULL, NULL, 0);
    add(c, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0, 10);
    CHECK_TEXT(c, "8 ps and 1000 workers start in sync mode: replicas_to_aggregate = 1000");
    evt_captioner_free(c);
    c = evt_captioner_new(META_ASYNC, NULL, NULL, 0);
    add(c, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0, 10);
    CHECK_TEXT(c, "2 ps and 4 workers start asynchronously: every push is applied at once");
    evt_captioner_free(c);
    /* a cluster whose mode is not known is only said to start */
    c = evt_captioner_new("{\"engine\":\"real\",\"ps\":2,\"workers\":4}", NULL, NULL, 0);
    add(c, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0, 10);
    CHECK_TEXT(c, "the cluster starts");
    evt_captioner_free(c);
    /* no metadata: CLUSTER_START's config fills in */
    c = evt_captioner_new(NULL, evt_caption_strtab_str, s, 0);
    add_str(c, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0, 10, 0, cfg);
    CHECK_TEXT(c, "2 ps and 8 workers start in ssp mode: at most 2 steps apart");
    evt_captioner_free(c);
    evt_strtab_free(s);
}

/* ---- what the engine does with many -------------------------------------------------------- */

static void test_irrelevant(void)
{
    static const int kinds[] = {
        EVT_TASK_START, EVT_TASK_STOP, EVT_DEVICE, EVT_VAR_DEFINE, EVT_VAR_PLACE, EVT_OP_PLACE,
        EVT_PULL_BEGIN, EVT_PULL_END, EVT_PUSH_BEGIN, EVT_PUSH_END, EVT_COMPUTE_BEGIN,
        EVT_STEP_END, EVT_BARRIER_RELEASE, EVT_SSP_RELEASE, EVT_LOG, EVT_EVENTS_DROPPED,
        EVT_CLOCK_SYNC, EVT_PACED_END, 0, EVT_KIND_COUNT + 5,
    };
    evt_captioner *c = evt_captioner_new(META_ASYNC, NULL, NULL, 0);
    int64_t t = 0;
    for (int w = 0; w < 4; w++)
        for (size_t i = 0; i < DP_ARRAY_LEN(kinds); i++) {
            evt_record e = ev(kinds[i], EVT_JOB_WORKER, w, t += 10);
            e.step = 3;
            e.value = 2;
            e.dur = 5 * MS;
            evt_captioner_add(c, &e);
        }
    /* workers beyond the metadata's (the state grows to hold them: 16 and 4096 land on
     * its doubling's edges) and workers no run can have (a damaged trace's): nothing to
     * say, nothing touched outside the state */
    const int bad_workers[] = {16, 4096, -1, EVT_STATE_MAX_TASKS, INT32_MAX};
    for (size_t b = 0; b < DP_ARRAY_LEN(bad_workers); b++)
        for (size_t i = 0; i < DP_ARRAY_LEN(kinds); i++) {
            evt_record e = ev(kinds[i], EVT_JOB_WORKER, bad_workers[b], t += 10);
            e.step = 3;
            evt_captioner_add(c, &e);
        }
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, t += 10, 5, 0);   /* not step 1 */
    add_ps(c, EVT_APPLY, 1, 0, t += 10, 6, 0);                    /* staleness 0 */
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_PS, 0, t += 10, 5, 0);  /* a ps is no waiting worker */
    CHECK_MSG(evt_captioner_count(c) == 0, "transfers, placement, logs, a fresh gradient: no caption (%zu)",
              evt_captioner_count(c));
    evt_captioner_free(c);
    /* 2 sync workers (one waiter would be a line): a ps at the barrier, a drop naming no
     * worker and an evaluation without a number are not */
    c = evt_captioner_new(META_SYNC_2, NULL, NULL, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_PS, 0, 10, 0, 0);
    add_ps(c, EVT_DROP, -1, 0, 20, 0, 1);
    add_step(c, EVT_EVAL, EVT_JOB_WORKER, 0, 30, 0, NAN);
    CHECK_MSG(evt_captioner_count(c) == 0, "a ps waiting, a drop of no worker, a NaN accuracy: no caption (%zu)",
              evt_captioner_count(c));
    evt_captioner_free(c);
}

static void test_rate_limit(void)
{
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 5, 0);
    add_ps(c, EVT_DROP, 1, 0, 200, 5, 1);
    CHECK(add_ps(c, EVT_DROP, 2, 0, 300, 5, 2) == 0);
    CHECK_MSG(evt_captioner_count(c) == 1, "two drops in global step 5: one caption");
    CHECK_TEXT(c, "worker 1's gradient for step 4 arrived at step 5: dropped as stale");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 400, 6, 0);
    add_ps(c, EVT_DROP, 2, 0, 500, 6, 2);
    CHECK_MSG(evt_captioner_count(c) == 2, "global step 6: the drop rule may speak again");
    CHECK_TEXT(c, "worker 2's gradient for step 4 arrived at step 6: dropped as stale");
    /* another rule in the same step is not limited by the drop's caption */
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 0, 600, 6, 0.2);
    CHECK_MSG(evt_captioner_count(c) == 3, "a pace line in step 6 beside its drop line");
    evt_captioner_free(c);
}

static void test_history_bound(void)
{
    /* capacity 4; step 1 makes two lines (first step, drop), steps 2..10 one each: 11 */
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 4);
    for (int s = 1; s <= 10; s++) {
        add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, s * 100, s, 0);
        add_ps(c, EVT_DROP, s % 4, 0, s * 100 + 50, s, 1);
    }
    CHECK_MSG(evt_captioner_count(c) == 4, "kept = capacity 4 (%zu)", evt_captioner_count(c));
    CHECK_MSG(evt_captioner_dropped(c) == 7, "dropped = 11 - 4 = 7 (%llu)",
              (unsigned long long)evt_captioner_dropped(c));
    const evt_caption *k = evt_captioner_get(c, 0);
    CHECK_MSG(k && k->step == 7 && !strcmp(k->text, "worker 3's gradient for step 6 arrived at step 7: dropped as stale"),
              "the oldest kept is step 7's drop (%s)", k ? k->text : "none");
    k = evt_captioner_get(c, 3);
    CHECK_MSG(k && k->step == 10 && k->t == 1050, "the newest kept is step 10's, at t 1050");
    CHECK(evt_captioner_get(c, 4) == NULL);
    CHECK_MSG(evt_captioner_at(c, 650) == NULL, "t 650 (step 6) is older than the history: NULL");
    CHECK_MSG(evt_captioner_emitted(c, EVT_CAPTION_DROP) == 10, "10 drop lines made, kept or not");
    evt_captioner_reset(c);
    CHECK_MSG(evt_captioner_count(c) == 0 && evt_captioner_dropped(c) == 0 &&
              evt_captioner_emitted(c, EVT_CAPTION_DROP) == 0, "reset: empty history, counters zero");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 1, 0);
    CHECK_MSG(evt_captioner_count(c) == 1, "reset: global step 1 is captioned again");
    evt_captioner_free(c);
}

static void test_importance(void)
{
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 100, 10, 0);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 3, 150, 10, 0.2);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 200, 10, 0);
    add_step(c, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 1, 300, 10, 0);
    add_ps(c, EVT_DROP, 2, 0, 500, 10, 1);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 0, 550, 10, 0.2);   /* limited: step 10 paced */
    const evt_caption *k = evt_captioner_at(c, 50);
    CHECK_MSG(k == NULL, "before any caption: NULL");
    k = evt_captioner_at(c, 160);
    CHECK_MSG(k && k->rule == EVT_CAPTION_PACE, "t 160: the pace line, the only one yet");
    k = evt_captioner_at(c, 400);
    CHECK_MSG(k && k->rule == EVT_CAPTION_BARRIER, "t 400: the barrier beats the earlier pace line (%s)",
              k ? evt_caption_rule_name(k->rule) : "none");
    k = evt_captioner_at(c, 600);
    CHECK_MSG(k && k->rule == EVT_CAPTION_DROP, "t 600: the drop beats the barrier (%s)",
              k ? evt_caption_rule_name(k->rule) : "none");
    k = evt_captioner_at(c, 500);
    CHECK_MSG(k && k->rule == EVT_CAPTION_DROP, "t 500, the drop's own time: the drop");
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 700, 11, 0);
    add_step(c, EVT_PACED_BEGIN, EVT_JOB_WORKER, 1, 800, 11, 0.2);
    k = evt_captioner_at(c, 900);
    CHECK_MSG(k && k->rule == EVT_CAPTION_PACE && k->step == 11,
              "t 900: step 11's pace line replaces step 10's drop");
    k = evt_captioner_at(c, 750);
    CHECK_MSG(k && k->rule == EVT_CAPTION_DROP, "t 750: step 11 has no line yet, step 10's drop stays");
    /* an event a little late keeps the history's times in order */
    add_ps(c, EVT_DROP, 3, 0, 780, 11, 1);
    k = evt_captioner_get(c, evt_captioner_count(c) - 1);
    CHECK_MSG(k && k->t == 800, "a drop stamped 780 after a caption at 800 is kept at 800");
    evt_captioner_free(c);
}

/* ---- recorded runs ----------------------------------------------------------------------------- */

typedef struct run_caps {
    evt_captioner *c;
    uint64_t drops;          /* DROP events in the trace, counted here */
    uint64_t wrong_returns;  /* adds whose answer was not the captions they made */
} run_caps;

/* Captions of a whole trace (history large enough to keep them all); c NULL when the file
 * cannot be read. Caller frees c. */
static run_caps caption_trace(const char *path)
{
    run_caps out = {0};
    char err[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return out;
    /* the history holds every caption, so at() answers for any time */
    out.c = evt_captioner_new(trace_reader_metadata(r), evt_caption_trace_str, r, 1 << 16);
    evt_record e;
    while (trace_reader_next(r, &e) == 1) {
        out.drops += e.kind == EVT_DROP;
        size_t before = evt_captioner_count(out.c);
        int made = evt_captioner_add(out.c, &e);
        out.wrong_returns += (size_t)made != evt_captioner_count(out.c) - before;
    }
    trace_reader_close(r);   /* names are in the captions' text already */
    return out;
}

/* Kept captions of rule whose text contains each of the (up to two) pieces. */
static int count_text(const evt_captioner *c, int rule, const char *a, const char *b)
{
    int n = 0;
    for (size_t i = 0; i < evt_captioner_count(c); i++) {
        const evt_caption *k = evt_captioner_get(c, i);
        n += k->rule == rule && strstr(k->text, a) && (!b || strstr(k->text, b));
    }
    return n;
}

static void test_real_traces(void)
{
    /* tests/data/real_sync_1ps_4w_slow.trace: 1 ps, 4 sync workers, worker 3 computes 3x
     * slower (tests/test_sim.c, docs/simulator.md); no backup: replicas_to_aggregate = 4 */
    run_caps rc = caption_trace("tests/data/real_sync_1ps_4w_slow.trace");
    if (!rc.c) {
        CHECK_SKIP("tests/data/real_sync_1ps_4w_slow.trace not readable");
    } else {
        const evt_captioner *c = rc.c;
        int n = count_text(c, EVT_CAPTION_BARRIER, "of 4 workers wait",
                           "sync needs 4 gradients (replicas_to_aggregate = 4)");
        CHECK_MSG(n >= 1, "slow sync run: barrier lines with W = 4, R = 4 (%d)", n);
        CHECK_MSG(n == (int)evt_captioner_emitted(c, EVT_CAPTION_BARRIER), "every barrier line says W = 4, R = 4");
        int s3 = count_text(c, EVT_CAPTION_STRAGGLER, "worker 3 is the slowest", NULL);
        CHECK_MSG(s3 >= 1 && s3 == (int)evt_captioner_emitted(c, EVT_CAPTION_STRAGGLER),
                  "the straggler named is worker 3, every time (%d of %llu)", s3,
                  (unsigned long long)evt_captioner_emitted(c, EVT_CAPTION_STRAGGLER));
        CHECK_MSG(rc.drops == 0 && evt_captioner_emitted(c, EVT_CAPTION_DROP) == 0,
                  "no DROP events, no drop lines");
        CHECK_MSG(evt_captioner_at(c, INT64_MAX) != NULL, "at the end a caption shows");
        CHECK_MSG(rc.wrong_returns == 0, "%llu adds answered other than the captions they made",
                  (unsigned long long)rc.wrong_returns);
        evt_captioner_free(rc.c);
    }

    /* tests/data/real_async_2ps_4w.trace: async; each line's numbers agree: vB - vA = N >= 1 */
    rc = caption_trace("tests/data/real_async_2ps_4w.trace");
    if (!rc.c) {
        CHECK_SKIP("tests/data/real_async_2ps_4w.trace not readable");
    } else {
        const evt_captioner *c = rc.c;
        int lines = 0, agree = 0;
        for (size_t i = 0; i < evt_captioner_count(c); i++) {
            const evt_caption *k = evt_captioner_get(c, i);
            if (k->rule != EVT_CAPTION_STALENESS) continue;
            long long a, b, s;
            int w;
            char var[64];
            lines++;
            agree += sscanf(k->text, "worker %d read %63s at v%lld and pushed at v%lld: staleness %lld", &w, var,
                            &a, &b, &s) == 5 && b - a == s && s >= 1 && w >= 0 && w < 4;
        }
        CHECK_MSG(lines >= 1, "async run: staleness lines (%d)", lines);
        CHECK_MSG(agree == lines, "%d of %d staleness lines read: worker 0..3, v_push - v_read = staleness >= 1",
                  agree, lines);
        CHECK_MSG(evt_captioner_emitted(c, EVT_CAPTION_BARRIER) == 0, "async run: no barrier lines");
        evt_captioner_free(rc.c);
    }

    /* No tests/data trace has drops (trace info: "drop":0 in all three); the recorded
     * straggler scenario with one backup worker does (4 workers, replicas_to_aggregate 3). */
    rc = caption_trace("scenarios/recorded/straggler-backup--backup_workers-1.dptrace");
    if (!rc.c) {
        CHECK_SKIP("scenarios/recorded/straggler-backup--backup_workers-1.dptrace not readable");
    } else {
        const evt_captioner *c = rc.c;
        int n = count_text(c, EVT_CAPTION_DROP, "dropped as stale", NULL);
        CHECK_MSG(rc.drops > 0 && n >= 1, "backup run: %llu DROP events, %d drop lines",
                  (unsigned long long)rc.drops, n);
        n = count_text(c, EVT_CAPTION_BARRIER, "2 of 4 workers wait",
                       "sync needs 3 gradients (replicas_to_aggregate = 3)");
        CHECK_MSG(n >= 1, "backup run: barrier lines with 2 of 4 waiting, R = 4 - 1 = 3 (%d)", n);
        evt_captioner_free(rc.c);
    }
}

/* ---- drawing -------------------------------------------------------------------------------- */

/* Dark pixels (every channel below 0.4: the ink of text; the panel, border, accent mark
 * and muted labels are all lighter) in r of img, or outside r when outside is set. */
static int dark(cairo_surface_t *img, viz_rect r, int outside)
{
    cairo_surface_flush(img);
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img), n = 0;
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char *d = cairo_image_surface_get_data(img);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int in = x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h;
            if (in == outside) continue;
            uint32_t p = ((const uint32_t *)(const void *)(d + (size_t)y * (size_t)stride))[x];
            n += (p >> 16 & 255) < 102 && (p >> 8 & 255) < 102 && (p & 255) < 102;
        }
    return n;
}

/* Bands of consecutive pixel rows of r holding dark pixels: lines of text. */
static int text_lines(cairo_surface_t *img, viz_rect r)
{
    int lines = 0, prev = 0;
    for (int y = (int)r.y; y < r.y + r.h; y++) {
        int row = dark(img, (viz_rect){r.x, y, r.w, 1}, 0) > 0;
        lines += row && !prev;
        prev = row;
    }
    return lines;
}

/* Dark pixels of r: the horizontal extent (first to last column) they span. */
static int dark_span(cairo_surface_t *img, viz_rect r)
{
    int x0 = -1, x1 = -1;
    for (int x = (int)r.x; x < r.x + r.w; x++)
        if (dark(img, (viz_rect){x, r.y, 1, r.h}, 0) > 0) {
            if (x0 < 0) x0 = x;
            x1 = x;
        }
    return x0 < 0 ? 0 : x1 - x0 + 1;
}

/* Pixels of r that are not white (any channel below 0.9): ink, muted labels, dots. */
static int nonwhite(cairo_surface_t *img, viz_rect r)
{
    int n = 0, stride = cairo_image_surface_get_stride(img);
    const unsigned char *d = cairo_image_surface_get_data(img);
    for (int y = (int)r.y; y < r.y + r.h; y++)
        for (int x = (int)r.x; x < r.x + r.w; x++) {
            uint32_t p = ((const uint32_t *)(const void *)(d + (size_t)y * (size_t)stride))[x];
            n += (p >> 16 & 255) < 230 || (p >> 8 & 255) < 230 || (p & 255) < 230;
        }
    return n;
}

static cairo_surface_t *blank(int w, int h, cairo_t **cr)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    *cr = cairo_create(img);
    cairo_set_source_rgb(*cr, 1, 1, 1);
    cairo_paint(*cr);
    return img;
}

static void test_draw_bar(void)
{
    viz_rect r = {40, 60, 400, 36};
    const char *text = "step 149: 2 of 4 workers wait at the barrier " DASH " sync needs 3 gradients";
    cairo_t *cr;
    cairo_surface_t *img = blank(480, 200, &cr);
    viz_draw_caption_bar(cr, r, text, 0);
    int in = dark(img, r, 0), out = dark(img, r, 1), span = dark_span(img, r);
    CHECK_MSG(in >= 200, "caption bar: text-like dark pixels inside the bar (%d)", in);
    CHECK_MSG(span >= r.w / 2, "the dark pixels run along the bar, as a line of text (%d of %.0f px)", span, r.w);
    CHECK_MSG(text_lines(img, r) == 1, "one line of text in the bar");
    CHECK_MSG(out == 0, "caption bar: no dark pixel outside the bar (%d)", out);
    cairo_destroy(cr);
    cairo_surface_destroy(img);

    /* a line far too long for the bar is cut, never drawn past it */
    char longer[600] = "";
    for (int i = 0; i < 8; i++) strcat(longer, "worker 3's gradient arrived late; ");
    img = blank(480, 200, &cr);
    viz_draw_caption_bar(cr, r, longer, 0);
    CHECK_MSG(dark(img, r, 1) == 0 && dark(img, r, 0) > 0, "a long line: ink inside, none outside");
    cairo_destroy(cr);
    cairo_surface_destroy(img);

    img = blank(480, 200, &cr);
    viz_draw_caption_bar(cr, r, "", 0);
    CHECK_MSG(dark(img, r, 0) == 0, "no text: no dark pixels, only the panel");
    cairo_destroy(cr);
    cairo_surface_destroy(img);

    img = blank(480, 200, &cr);
    viz_draw_caption_bar(cr, r, "worker 3 is the slowest", 1);
    int proj = dark(img, r, 0);
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    img = blank(480, 200, &cr);
    viz_draw_caption_bar(cr, r, "worker 3 is the slowest", 0);
    int plain = dark(img, r, 0);
    CHECK_MSG(proj > plain * 1.3, "projector: larger, bold text (%d vs %d dark pixels)", proj, plain);
    cairo_destroy(cr);
    cairo_surface_destroy(img);
}

static void test_draw_history(void)
{
    evt_captioner *c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 0);
    for (int s = 1; s <= 6; s++) {
        add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, s * 100, s + 1, 0);   /* no first-step line */
        add_ps(c, EVT_DROP, 1, 0, s * 100 + 50, s + 1, 1);
    }
    viz_rect r = {20, 20, 440, 160};   /* 7 rows of 19.5 px after 6.5 px padding each side */
    cairo_t *cr;
    cairo_surface_t *img = blank(480, 200, &cr);
    int used = viz_draw_caption_history(cr, r, c, 5);
    CHECK_MSG(used == 0, "6 captions fit 7 rows: scroll 5 clamps to 0 (%d)", used);
    CHECK_MSG(text_lines(img, r) == 6, "history: one line of text per caption, 6 (%d)", text_lines(img, r));
    CHECK_MSG(dark(img, r, 1) == 0, "history: no dark pixel outside its panel");
    viz_rect row0 = {r.x + 140, r.y + 3, r.w - 150, 17};   /* the first row's text column */
    CHECK_MSG(dark(img, row0, 0) > 0, "nothing dropped: the first row is a caption, in ink");
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    evt_captioner_free(c);

    /* capacity 20, 25 drops: 5 dropped, a note line first; 21 lines in 7 rows */
    c = evt_captioner_new(META_SYNC_4_1, NULL, NULL, 20);
    for (int s = 1; s <= 25; s++) {
        add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, s * 100, s + 1, 0);
        add_ps(c, EVT_DROP, 1, 0, s * 100 + 50, s + 1, 1);
    }
    img = blank(480, 200, &cr);
    used = viz_draw_caption_history(cr, r, c, 1000);
    CHECK_MSG(used == 21 - 7, "scrolled to the top: scroll = 21 lines - 7 rows = 14 (%d)", used);
    CHECK_MSG(text_lines(img, r) == 6, "the top: a muted note and 6 caption lines (%d dark bands)",
              text_lines(img, r));
    CHECK_MSG(dark(img, row0, 0) == 0 && nonwhite(img, row0) > 30,
              "5 dropped: the first row is the muted note, no ink (%d dark, %d grey)", dark(img, row0, 0),
              nonwhite(img, row0));
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    evt_captioner_free(c);
}

/* A push or pull that begins while its worker computes: once per worker and kind; not
 * outside the compute, and not a copy between its own devices (no ps). */
static void test_overlap(void)
{
    evt_strtab *s = evt_strtab_new();
    uint32_t sb = evt_strtab_intern(s, "softmax/biases");
    evt_captioner *c = evt_captioner_new(META_SYNC_2, evt_caption_strtab_str, s, 0);
    evt_record e = ev(EVT_PUSH_BEGIN, EVT_JOB_WORKER, 0, 50);
    e.peer = 0;
    e.var = sb;
    e.step = 4;
    CHECK_MSG(evt_captioner_add(c, &e) == 0, "a push after the compute is no overlap");
    add_step(c, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 100, 5, 0);
    e.t = 150;
    e.peer = -1;
    CHECK_MSG(evt_captioner_add(c, &e) == 0, "a copy between devices is no overlap");
    e.peer = 0;
    CHECK(evt_captioner_add(c, &e) == 1);
    CHECK_TEXT(c, "worker 0 pushes softmax/biases while it still computes: that gradient is done "
                  "before the rest of the backward pass");
    CHECK(last_rule(c) == EVT_CAPTION_OVERLAP);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 160, 6, 0);
    e.t = 170;
    CHECK_MSG(evt_captioner_add(c, &e) == 0, "a worker's second overlapping push: no caption");
    evt_record p = ev(EVT_PULL_BEGIN, EVT_JOB_WORKER, 0, 180);
    p.peer = 0;
    p.step = 6;
    CHECK(evt_captioner_add(c, &p) == 1);
    CHECK_TEXT(c, "worker 0 pulls for step 6 while it computes step 5 (prefetch): its gradients are "
                  "one step staler");
    add_step(c, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 200, 5, 0);
    e.task = 1;
    e.t = 210;
    CHECK_MSG(evt_captioner_add(c, &e) == 0, "worker 1 does not compute: no overlap");
    add_step(c, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 1, 220, 5, 0);
    add_step(c, EVT_COMPUTE_END, EVT_JOB_WORKER, 1, 230, 5, 0);
    add_step(c, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 235, 7, 0);
    e.t = 240;
    CHECK_MSG(evt_captioner_add(c, &e) == 0, "worker 1's push after its compute ended: no overlap");
    evt_captioner_free(c);
    evt_strtab_free(s);
}

int main(void)
{
    test_overlap();
    test_barrier();
    test_drop();
    test_staleness();
    test_ssp();
    test_eval_checkpoint_pace();
    test_failure();
    test_straggler();
    test_first_step_and_cluster();
    test_irrelevant();
    test_rate_limit();
    test_history_bound();
    test_importance();
    test_real_traces();
    test_draw_bar();
    test_draw_history();
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
