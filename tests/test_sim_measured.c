/* test_sim_measured.c — what a real run measures of its CPU, and the simulator's use of
 * it, against closed forms worked out by hand here:
 *   sim_cpu_add: a busy task given more work keeps sharing the cores until it is done
 *     (one core, two 10 ms tasks, 5 ms more for one at 5 ms: 20 ms and 25 ms);
 *   --copy-bandwidth R: a worker's sending and receiving of B bytes is B / R of work on
 *     its host's cores while the transfer lasts, and its pull or push ends no sooner;
 *     sync with a free network, constant compute C, W workers on one host of c cores in
 *     lockstep: step = (C + 2 B / R) * max(1, W / c) (the exact shortcuts with copying:
 *     test_sim_cores.c); with the ps's own work a pull answer's copying runs beside it
 *     (C + 4 ms, not C + 6);
 *   calibration reads a span's work from compute_end (a real worker's CPU time, the
 *     simulator's draw): from a simulated trace with copying on shared cores the compute
 *     comes back exactly, where the gaps are longer than the work;
 *   the copying rate from a hand-written real-style trace: the CPU the worker's training
 *     used beyond its compute gaps' work (the ops' CPU and, compute_end's value, what it
 *     spent between them), over the bytes it moved; the chief's evaluation
 *     taken out of its gap and of that CPU (not step work); and what a calibrated
 *     run turns on with it (the ps's fitted work, the copying, free ps links on one host),
 *     flags winning;
 *   a pipelined worker's push inside its compute span does not shorten the gap;
 *   --ps-send-bandwidth R: after a pull answer's work P the answer leaves and the ps is
 *     busy B / R = S more; sync, W workers pulling at once, a free network, no cores:
 *     the last worker's answer leaves after W P + (W - 1) S, so step = W P + (W - 1) S + C
 *     (S < C: the sends are done before the next message); calibrated from the ps's CPU
 *     beyond its fitted work (the hand-written trace's ps: 51 pull answers of 1000 bytes
 *     and 5.1 ms of CPU, no gaps to fit work from: 10 MB/s);
 *   --copy-bandwidth and --ps-send-bandwidth parsing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/trace.h"
#include "sim/cpu.h"
#include "sim/sim.h"
#include "tests/check.h"
#include "tests/sim_check.h"

#define MS 1000000LL  /* ns */

/* The MLP's bytes pulled (and pushed) per worker step, worked out from its shapes:
 * 784x128 + 128 + 128x10 + 10 floats (global_step carries none). */
#define MLP_BYTES (4.0 * (784 * 128 + 128 + 128 * 10 + 10))

static void test_cpu_add(void)
{
    sim_cpu *c = sim_cpu_new(1, 1, 2);
    sim_cpu_start(c, 0, 0, 10.0 * MS, 0);
    sim_cpu_start(c, 0, 1, 10.0 * MS, 0);
    CHECK(sim_cpu_is_busy(c, 0) && sim_cpu_is_busy(c, 1));
    CHECK(sim_cpu_next(c, 0) == 20 * MS);
    /* at 5 ms each has done 2.5: task 0 now has 12.5 left, task 1 7.5; at 1/2 each task 1
     * is done 15 ms later, at 20 ms, and task 0's last 5 alone end at 25 ms */
    sim_cpu_add(c, 0, 5.0 * MS, 5 * MS);
    CHECK_MSG(sim_cpu_next(c, 0) == 20 * MS, "next %lld", (long long)sim_cpu_next(c, 0));
    int ids[2];
    CHECK(sim_cpu_pop(c, 0, 20 * MS, ids) == 1 && ids[0] == 1 && !sim_cpu_is_busy(c, 1));
    CHECK_MSG(sim_cpu_next(c, 0) == 25 * MS, "next %lld", (long long)sim_cpu_next(c, 0));
    CHECK(sim_cpu_pop(c, 0, 25 * MS, ids) == 1 && ids[0] == 0 && !sim_cpu_is_busy(c, 0));
    CHECK(sim_cpu_next(c, 0) == INT64_MAX);
    sim_cpu_free(c);
}

/* Sync, one ps, a free network, constant compute C, W workers on one host of `cores`. */
static void one_host(sim_config *c, int workers, int cores, double C)
{
    quiet_net(c, workers, C);
    c->hosts.n = 1;
    c->cores_per_host = cores;
}

static void test_copy_closed_form(void)
{
    static const int cases[][2] = {{1, 1}, {2, 1}, {3, 2}, {4, 2}, {2, 2}};
    const double C = 0.010, copy = 0.002;  /* each way, alone */
    for (size_t i = 0; i < DP_ARRAY_LEN(cases); i++) {
        int W = cases[i][0], cores = cases[i][1];
        sim_config c;
        one_host(&c, W, cores, C);
        c.copy_rate = MLP_BYTES / copy;
        sim_result r;
        CHECK(run(&c, &r) == 0);
        double want = (C + 2 * copy) * (W > cores ? (double)W / cores : 1.0);
        CHECK_REL(r.mean_step_s, want, 1e-4);
        printf("sync, %d workers on %d cores, C = 10 ms, copying 2 ms each way: step %.6f s, closed form %.6f s\n",
               W, cores, r.mean_step_s, want);
    }
    /* with the ps's own work (2 ms a pull answer) on two cores, a pull answer's copying
     * runs beside it, as the answer streams: C + 2 (pull) + 2 (push) ms, not C + 6 */
    {
        sim_config c;
        one_host(&c, 1, 2, C);
        c.copy_rate = MLP_BYTES / copy;
        c.ps_pull_cost = (sim_ps_cost){0, MLP_BYTES / 0.002, 0};
        sim_result r;
        CHECK(run(&c, &r) == 0);
        CHECK_REL(r.mean_step_s, C + 0.004, 1e-4);
    }
    /* a copying faster than the transfer changes nothing when nothing is shared: the
     * transfer (1 ms at this bandwidth) is the longer */
    sim_config c;
    one_host(&c, 1, 1, C);
    c.ps_bw = c.worker_bw = MLP_BYTES / 0.001;
    sim_result plain, copied;
    CHECK(run(&c, &plain) == 0);
    c.copy_rate = MLP_BYTES / 0.0005;
    CHECK(run(&c, &copied) == 0);
    CHECK_REL(copied.mean_step_s, plain.mean_step_s, 1e-6);
    CHECK_REL(plain.mean_step_s, C + 0.002, 1e-4);
}

static void test_send_closed_form(void)
{
    const double C = 0.010, P = 0.002, S = 0.003;
    for (int W = 1; W <= 4; W *= 2) {
        sim_config c;
        quiet_net(&c, W, C);
        c.ps_pull_cost = (sim_ps_cost){0, MLP_BYTES / P, 0};
        sim_result plain, sent;
        CHECK(run(&c, &plain) == 0);
        c.ps_send_rate = MLP_BYTES / S;
        CHECK(run(&c, &sent) == 0);
        CHECK_REL(plain.mean_step_s, W * P + C, 1e-4);
        CHECK_REL(sent.mean_step_s, W * P + (W - 1) * S + C, 1e-4);
        printf("sync, %d workers, pull work 2 ms, sending 3 ms, C = 10 ms: step %.6f s, closed form %.6f s "
               "(%.6f s without the sending)\n", W, sent.mean_step_s, W * P + (W - 1) * S + C, plain.mean_step_s);
    }
}

/* A simulated trace says each span's work: the compute comes back to the ns, although
 * four workers on two cores (and their copying) made every gap longer. */
static void test_calibrate_sim_work(const char *dir)
{
    const char *path = check_path(dir, "measured.trace");
    char err[DP_ERRLEN];
    sim_config c;
    one_host(&c, 4, 2, 0.010);
    c.steps = 100;
    c.copy_rate = MLP_BYTES / 0.001;
    snprintf(c.trace, sizeof c.trace, "%s", path);
    sim_result truth;
    CHECK(run(&c, &truth) == 0);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK(cal.compute.kind == SIM_DIST_CONSTANT);
    CHECK_REL(cal.compute.mean, 0.010, 1e-6);
    CHECK_MSG(truth.mean_step_s > 0.02, "the gaps were longer than the work: step %.6f s", truth.mean_step_s);
    /* a simulated trace says no task's CPU: no copying rate, no sending, nothing turned on */
    CHECK(cal.copy_rate == 0);
    CHECK(cal.ps_send_rate == 0);
    sim_calibration_release(&cal);
    unlink(path);
}

static void add_v(trace_writer *tw, int kind, int64_t t, int peer, int64_t bytes, int64_t dur, double value,
                  double value2)
{
    evt_record e;
    evt_init(&e, kind, EVT_JOB_WORKER, 0);
    e.t = t;
    e.peer = peer;
    e.peer_job = peer >= 0 ? EVT_JOB_PS : 0;
    e.bytes = bytes;
    e.dur = dur;
    e.value = value;
    e.value2 = value2;
    e.var = 1;
    e.id = (uint64_t)t + 1;
    trace_writer_add(tw, &e);
}

static void add(trace_writer *tw, int kind, int64_t t, int peer, int64_t bytes, int64_t dur, double value2)
{
    add_v(tw, kind, t, peer, bytes, dur, 0, value2);
}

/* One real-style worker on one host of two cores: every step a 1000-byte pull of 1 ms, a
 * compute gap of 2 ms whose span used 1 ms of CPU on its ops (a share of 1/2: 1 ms of
 * work) and `hook` s between them sending and reading (compute_end's value, the span's
 * work too), a 1000-byte push of 1 ms; in the last step's gap first a 10 ms evaluation
 * (EVAL, not step work); its training used 50 steps x 1.25 ms of CPU and the
 * evaluation's 10. After the last step, as the chief's, a final pull and a 20 ms final
 * evaluation, which the training loop's CPU does not hold (the runtime reads it before
 * them). Compute: 1 ms + hook every step (constant). Copying: the 0.25 ms - hook a step
 * beyond the work, for 2000 bytes: 8 MB/s without a hook, 13.3 MB/s with 0.1 ms. */
static void test_copy_rate_from_trace(const char *dir, double hook)
{
    const char *path = check_path(dir, "realish.trace");
    char err[DP_ERRLEN];
    trace_writer *tw = trace_writer_open(path, "{\"engine\":\"real\",\"ps\":1,\"workers\":1,\"mode\":\"sync\","
                                         "\"hosts\":[{\"name\":\"h\",\"cores\":2}],\"task_hosts\":\"1\"}", err);
    CHECK_MSG(tw != NULL, "%s", err);
    if (!tw) return;
    const int steps = 50;
    for (int s = 0; s < steps; s++) {
        int64_t t = (int64_t)s * 4 * MS, ev = s == steps - 1 ? 10 * MS : 0;
        add(tw, EVT_PULL_BEGIN, t, 0, 1000, 0, 0);
        add(tw, EVT_PULL_END, t + MS, 0, 1000, MS, 0);
        if (ev) add(tw, EVT_EVAL, t + MS + ev, -1, 0, ev, 0);
        add(tw, EVT_COMPUTE_BEGIN, t + MS + ev, -1, 0, 0, 0);
        add_v(tw, EVT_COMPUTE_END, t + 3 * MS + ev, -1, 0, 2 * MS, hook, 0.001);
        add(tw, EVT_PUSH_BEGIN, t + 3 * MS + ev, 0, 1000, 0, 0);
        add(tw, EVT_PUSH_END, t + 4 * MS + ev, 0, 1000, MS, 0);
        add(tw, EVT_STEP_END, t + 4 * MS + ev, -1, 0, 0, 0);
    }
    int64_t end = (int64_t)steps * 4 * MS + 10 * MS;
    add(tw, EVT_PULL_BEGIN, end, 0, 1000, 0, 0);
    add(tw, EVT_PULL_END, end + MS, 0, 1000, MS, 0);
    add(tw, EVT_EVAL, end + 21 * MS, -1, 0, 20 * MS, 0);
    add(tw, EVT_TASK_STOP, end + 21 * MS, -1, 0, 0, steps * 0.00125 + 0.010);
    evt_record ps;  /* the ps's serving: 0.1 ms of CPU a pull answer */
    evt_init(&ps, EVT_TASK_STOP, EVT_JOB_PS, 0);
    ps.t = end + 22 * MS;
    ps.value2 = (steps + 1) * 0.0001;
    trace_writer_add(tw, &ps);
    /* a damaged trace's ps numbers are not indices: ignored (ASan sees a write) */
    ps.task = -1;
    ps.value2 = 1;
    trace_writer_add(tw, &ps);
    CHECK(trace_writer_close(tw, err) == 0);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK(cal.compute.kind == SIM_DIST_CONSTANT);
    CHECK_REL(cal.compute.mean, 0.001 + hook, 1e-6);
    CHECK_REL(cal.copy_rate, 2000 / (0.00025 - hook), 1e-6);
    /* one worker: no answer waited for the ps, no work fitted; its CPU is all sending */
    CHECK(cal.ps_pull_cost.rate == 0 && cal.ps_pull_cost.msg_s == 0);
    CHECK_REL(cal.ps_send_rate, (steps + 1) * 1000 / ((steps + 1) * 0.0001), 1e-9);
    printf("hand-written trace, %.1f ms between the ops: compute %.6f ms (gap 2 ms at a share of %.2f), copying "
           "%.4g MB/s (%.4g MB/s), the ps's sending %.4g MB/s (10 MB/s)\n", hook * 1e3, cal.compute.mean * 1e3,
           (0.001 + hook) / 0.002, cal.copy_rate / 1e6, 2000 / (0.00025 - hook) / 1e6, cal.ps_send_rate / 1e6);
    /* what a calibrated run takes from it: the ps's work fitted, the copying, free ps
     * links on the one host */
    sim_options o;
    sim_options_init(&o);
    char *argv[] = {"sim", NULL};
    CHECK(sim_options_parse(&o, 1, argv, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.copy_rate == cal.copy_rate && o.c.hosts.n == 1 && o.c.cores_per_host == 2);
    CHECK(o.c.ps_bw == SIM_FREE_BW);
    CHECK(o.c.ps_pull_cost.msg_s == cal.ps_pull_cost.msg_s && o.c.ps_pull_cost.rate == cal.ps_pull_cost.rate &&
          o.c.ps_push_cost.rate == cal.ps_push_cost.rate);
    CHECK(o.c.ps_send_rate == cal.ps_send_rate);
    /* flags win: no copying, the ps's work folded into the network as without it */
    sim_options_init(&o);
    char *argv2[] = {"sim", "--copy-bandwidth", "0", "--ps-pull-cost", "0", "--ps-push-cost", "0", NULL};
    CHECK(sim_options_parse(&o, 7, argv2, err) == 0);
    sim_options_calibrate(&o, &cal);
    CHECK(o.c.copy_rate == 0 && o.c.ps_pull_cost.rate == 0 && o.c.ps_push_cost.rate == 0);
    CHECK(o.c.ps_send_rate == 0);
    CHECK(o.c.ps_bw == cal.bandwidth);
    sim_calibration_release(&cal);
    unlink(path);
}

/* A pipelined worker (runtime/worker_net.c, wk_step_progress) sends a small gradient while
 * its backward pass goes on: the same steps as above, with a 100-byte push beginning 1 ms
 * into each 2 ms compute span and acked 0.5 ms later, still inside it. Its compute is
 * still the span's work, 1 ms, and its push rate that of the push after the span: the
 * early push is not the step's push (without that the gap ends at it, and its ack breaks
 * the push's timing). */
static void test_pipelined_push_from_trace(const char *dir)
{
    const char *path = check_path(dir, "pipelined.trace");
    char err[DP_ERRLEN];
    trace_writer *tw = trace_writer_open(path, "{\"engine\":\"real\",\"ps\":1,\"workers\":1,\"mode\":\"async\","
                                         "\"hosts\":[{\"name\":\"h\",\"cores\":2}],\"task_hosts\":\"1\"}", err);
    CHECK_MSG(tw != NULL, "%s", err);
    if (!tw) return;
    for (int s = 0; s < 50; s++) {
        int64_t t = (int64_t)s * 4 * MS;
        add(tw, EVT_PULL_BEGIN, t, 0, 1000, 0, 0);
        add(tw, EVT_PULL_END, t + MS, 0, 1000, MS, 0);
        add(tw, EVT_COMPUTE_BEGIN, t + MS, -1, 0, 0, 0);
        /* the early push and its ack (inside the span), one message id as the runtime's */
        evt_record e;
        evt_init(&e, EVT_PUSH_BEGIN, EVT_JOB_WORKER, 0);
        e.t = t + 2 * MS;
        e.peer = 0;
        e.peer_job = EVT_JOB_PS;
        e.bytes = 100;
        e.var = 2;
        e.id = 1000000 + (uint64_t)s;
        trace_writer_add(tw, &e);
        e.kind = EVT_PUSH_END;
        e.t += MS / 2;
        e.dur = MS / 2;
        trace_writer_add(tw, &e);
        add(tw, EVT_COMPUTE_END, t + 3 * MS, -1, 0, 2 * MS, 0.001);
        add(tw, EVT_PUSH_BEGIN, t + 3 * MS, 0, 1000, 0, 0);
        add(tw, EVT_PUSH_END, t + 4 * MS, 0, 1000, MS, 0);
        add(tw, EVT_STEP_END, t + 4 * MS, -1, 0, 0, 0);
    }
    CHECK(trace_writer_close(tw, err) == 0);
    sim_calibration cal;
    int rc = sim_calibrate(path, &cal, err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK_REL(cal.compute.mean, 0.001, 1e-6);
    /* the step's push moves 1000 bytes in 1 ms after the compute: at least ~1 MB/s (an
     * ack that came inside the span, read before its push began, gave 0.32) */
    CHECK_MSG(cal.push_bandwidth >= 0.9e6, "push bandwidth %.4g B/s", cal.push_bandwidth);
    printf("pipelined trace: compute %.6f ms (1 ms: a push inside the span does not end the gap), "
           "push %.4g MB/s\n", cal.compute.mean * 1e3, cal.push_bandwidth / 1e6);
    sim_calibration_release(&cal);
    unlink(path);
}

static void test_parse(void)
{
    char err[DP_ERRLEN];
    sim_config c;
    sim_config_init(&c);
    CHECK(c.copy_rate == 0);
    CHECK(sim_config_set(&c, "copy_bandwidth", "2GB/s", "--copy-bandwidth", err) == 0 && c.copy_rate == 2e9);
    CHECK(sim_config_set(&c, "copy_bandwidth", "0", "--copy-bandwidth", err) == 0 && c.copy_rate == 0);
    CHECK(sim_config_set(&c, "copy_bandwidth", "fast", "--copy-bandwidth", err) == DP_EINVAL &&
          strstr(err, "--copy-bandwidth") && strstr(err, "fast"));
    CHECK(sim_config_set(&c, "copy_bandwidth", "-1GB/s", "--copy-bandwidth", err) == DP_EINVAL);
    CHECK(c.ps_send_rate == 0);
    CHECK(sim_config_set(&c, "ps_send_bandwidth", "3GB/s", "--ps-send-bandwidth", err) == 0 && c.ps_send_rate == 3e9);
    CHECK(sim_config_set(&c, "ps_send_bandwidth", "0", "--ps-send-bandwidth", err) == 0 && c.ps_send_rate == 0);
    CHECK(sim_config_set(&c, "ps_send_bandwidth", "quick", "--ps-send-bandwidth", err) == DP_EINVAL &&
          strstr(err, "--ps-send-bandwidth") && strstr(err, "quick"));
}

int main(void)
{
    char dir[] = "/tmp/downpour-test-sim-measured.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_cpu_add();
    test_copy_closed_form();
    test_send_closed_form();
    test_calibrate_sim_work(dir);
    test_copy_rate_from_trace(dir, 0);
    test_copy_rate_from_trace(dir, 0.0001);
    test_pipelined_push_from_trace(dir);
    test_parse();
    rmdir(dir);
    return CHECK_DONE();
}
