/* calibrate.c — --calibrate-from: fits the simulator's parameters to a recorded run.
 *   compute: per worker step, the gap from its last pull_end to its first push_begin (what
 *            the simulator's compute phase stands for: batch gathering, forward/backward,
 *            overheads); compute_end durations when a trace has no pulls. The base mean is
 *            the median of the workers' means; each worker's factor is its mean over that;
 *            the shape is constant (cv < 5%) or lognormal with the pooled cv. When the
 *            metadata says the hosts and their cores, a gap is the work it would have
 *            taken alone: integral of min(1, cores / open gaps on its host) over it;
 *            when compute_end says the span's work (a real worker's CPU time), the gap at
 *            that share instead. The chief's evaluations (EVAL with a duration) are taken
 *            out of their gaps: they are not step work (and not simulated).
 *   network: each worker's pull phase (first pull_begin .. a ps's last pull_end) gives,
 *            per ps, a duration d and x = max(bytes from that ps * workers pulling at once,
 *            bytes through the worker's NIC by then); least squares d = 2L + x / B gives
 *            latency L and bandwidth B. When x hardly varies, L comes from zero-byte pull
 *            answers, else (sync) from the step token's round trip: last push_end to
 *            step_end in steps with no barrier wait. A push phase (to its last ack) gives
 *            x the same way from the ps sent the most bytes; B_push = mean x / (mean d - 2L).
 *            These fold the ps's own work into the network (the default).
 *   the ps's own work (calibrate_ps.c; used with --ps-pull-cost / --ps-push-cost fit):
 *            every ps's answers as its workers saw them (pull_end, push_end: request at
 *            t - dur, arrival at t), a worker's answers arriving at one instant merged
 *            into one of m messages, in the order the ps sent them (arrival less the
 *            answer's transfer at the pull bandwidth found below; a second round). An
 *            answer asked for before the previous one arrived waited for the ps, which
 *            spent the gap between the two on it: least squares of the gaps on (m,
 *            bytes), per direction, without intercept and >= 0, give T per message and a
 *            rate for the bytes (fewer than 8 gaps: 0). With cores the gaps are de-rated
 *            as the compute gaps, the ps a busy task through them (and, second round,
 *            through its fitted work on every other answer); the compute is then fitted
 *            again counting those spans (ps_compute, ps_speed). Latency: the mean time
 *            from a ps's APPLY event to the pusher's APPLIED ack (same message id), else
 *            L above. Bandwidth: the answers that found the ps idle took 2L + the ps's
 *            work + the transfer, x = bytes * (transfers of other workers arriving within
 *            that transfer time of it, + 1); least squares through the origin (none left:
 *            1 TB/s). The ps's sending (--ps-send-bandwidth): every ps's pull answers'
 *            bytes over the CPU its task_stop says beyond that fitted work.
 *   cluster: ps / workers / mode / model / hosts from the metadata ("config" object or
 *            top level), else counted from the events. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/spec.h"
#include "common/dp.h"
#include "events/event.h"
#include "events/trace.h"
#include "sim/calibrate_int.h"
#include "sim/sim.h"

/* Per worker: the sum, sum of squares and count of its compute spans' work. */
typedef struct csum {
    double sum, sumsq;
    int64_t n;
} csum;

typedef struct wstat {
    csum c;                  /* compute spans (their work alone, with cores) */
    int pulls_out;           /* pulls in flight */
    int pushes_out;          /* pushes not yet acked */
    int64_t push_t0;
    double push_bytes, push_integ0;
    double *push_ps;         /* bytes per ps in the current push, NULL until one */
    int64_t phase_t0, last_pull_end, first_push;
    int64_t last_push_end;   /* sync: when the gradients' last ack came, -1 none */
    int barrier;             /* a barrier wait in the current push */
    double *ps_bytes;        /* bytes per ps in the current pull phase */
    int64_t *ps_end;         /* last pull_end per ps in the current phase, -1 none */
    double integ0;           /* pullers integral when this phase began */
    int in_phase;
    double share;            /* the last compute span's work over its duration, -1 unknown */
    double cpu_s;            /* the CPU its training used (task_stop), 0 unknown */
    double moved;            /* bytes pulled and pushed */
    double moved_steps;      /* ... up to the last step's end (the training CPU's bytes) */
    int64_t eval_ns;         /* the chief's evaluation in the current gap (not step work) */
    int64_t eval_total;      /* ... in all, up to the last step's end */
    int64_t eval_pending;    /* the evaluations since the last step_end: a step's when one
                              * ends, the final one's (after the training CPU was read) not */
    int computing;           /* inside a compute span */
    uint64_t early[16];      /* ids of the pushes that began inside it, not yet acked: a
                              * pipelined worker sends a finished gradient while its
                              * backward pass goes on. Their bytes count in the copying;
                              * their times are not the ps's (the worker reads an ack only
                              * between its ops); the step's push, as the simulator's step
                              * makes it, is the one after */
    int n_early;
    int64_t cb_t;            /* the current compute span's begin */
    int64_t early_t;         /* the sum of its early pushes' begins, and how many */
    int n_span_early;
} wstat;

/* 1 when push `id` began inside a compute span (wstat.early), which it leaves. */
static int early_done(wstat *s, uint64_t id)
{
    for (int i = 0; i < s->n_early; i++)
        if (s->early[i] == id) {
            s->early[i] = s->early[--s->n_early];
            return 1;
        }
    return 0;
}

typedef struct gap_end {
    int64_t t;
    int i;            /* span index; the start when start is 1 */
    int start;
} gap_end;

static int gap_end_cmp(const void *a, const void *b)
{
    const gap_end *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Per host a running integral S of min(1, cores / open spans); a span's work is S at its
 * end minus S at its start. */
void sim_cal_derate(const sim_cal_span *g, int n, const sim_calibration *cal, double *work)
{
    int H = cal->hosts.n;
    gap_end *ends = xmalloc((size_t)(2 * (n > 0 ? n : 1)) * sizeof *ends);
    for (int i = 0; i < n; i++) {
        ends[2 * i] = (gap_end){g[i].t0, i, 1};
        ends[2 * i + 1] = (gap_end){g[i].t1, i, 0};
    }
    qsort(ends, (size_t)(2 * n), sizeof *ends, gap_end_cmp);  /* ties: any order (no time passes) */
    double *S = xcalloc((size_t)H, sizeof *S), *s0 = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *s0);
    int64_t *t = xcalloc((size_t)H, sizeof *t);
    int *open = xcalloc((size_t)H, sizeof *open);
    for (int j = 0; j < 2 * n; j++) {
        const gap_end *e = &ends[j];
        int h = sim_host_of(&cal->hosts, cal->n_ps, g[e->i].job, g[e->i].task);
        double r = open[h] > cal->cores ? (double)cal->cores / (double)open[h] : 1.0;
        S[h] += (double)(e->t - t[h]) * r;
        t[h] = e->t;
        if (e->start) {
            s0[e->i] = S[h];
            open[h]++;
        } else {
            work[e->i] = (S[h] - s0[e->i]) / 1e9;
            open[h]--;
        }
    }
    free(ends);
    free(S);
    free(s0);
    free(t);
    free(open);
}

/* Where the trace measured a gap's share of a core (compute_end's work, a real run's
 * CPU time), its work alone is the gap at that share; the others keep the model's. */
static void measured_work(const sim_cal_span *g, const double *share, int n, double *work)
{
    for (int i = 0; i < n; i++)
        if (share[i] > 0) work[i] = (double)(g[i].t1 - g[i].t0) / 1e9 * share[i];
}

/* A worker's CPU beyond its compute gaps' work (and the chief's evaluations) went on
 * sending and receiving (the kernel's copying, on a shared host): every worker said its
 * CPU, the rate is the bytes they moved over that CPU. The training loop's CPU is read at
 * its last step's end: the chief's final pull and evaluation after it are not in it. */
static void copy_rate(const wstat *ws, int nw, sim_calibration *cal)
{
    double cpu = 0, bytes = 0;
    for (int k = 0; k < nw; k++) {
        if (!ws[k].c.n) continue;
        if (!(ws[k].cpu_s > 0)) return;
        cpu += ws[k].cpu_s - ws[k].c.sum - (double)ws[k].eval_total / 1e9;
        bytes += ws[k].moved_steps;
    }
    cal->cpu_measured = 1;
    /* a short run can leave nothing measurable beyond the work: no copying then */
    if (cpu > 0 && bytes > 0) cal->copy_rate = bytes / cpu;
}

static int dbl_cmp(const void *a, const void *b);

/* The compute distribution from each worker's spans: base mean = median of the workers'
 * means, speed[k] = worker k's mean / base (owned by the caller), constant when the pooled
 * cv is < 5%, else lognormal. Returns the spans counted, 0 when there are none. */
static int64_t fit_compute(const csum *cs, int nw, sim_dist *out, double **speed)
{
    double *means = xcalloc((size_t)(nw > 0 ? nw : 1), sizeof *means);
    int nm = 0;
    int64_t spans = 0, cv_n = 0;
    double cv2_sum = 0;
    for (int k = 0; k < nw; k++) {
        if (cs[k].n < 1) continue;
        double m = cs[k].sum / (double)cs[k].n;
        means[nm++] = m;
        spans += cs[k].n;
        if (cs[k].n > 1 && m > 0) {
            double var = cs[k].sumsq / (double)cs[k].n - m * m;
            cv2_sum += (var > 0 ? var : 0) / (m * m) * (double)cs[k].n;
            cv_n += cs[k].n;
        }
    }
    if (nm == 0) {
        free(means);
        return 0;
    }
    double base = sim_cal_median(means, (size_t)nm);
    free(means);
    *speed = xmalloc((size_t)nw * sizeof **speed);
    for (int k = 0; k < nw; k++)
        (*speed)[k] = cs[k].n > 0 && base > 0 ? (cs[k].sum / (double)cs[k].n) / base : 1.0;
    double cv = cv_n ? sqrt(cv2_sum / (double)cv_n) : 0;
    memset(out, 0, sizeof *out);
    out->mean = base > 0 ? base : 1e-6;
    if (cv < 0.05) {
        out->kind = SIM_DIST_CONSTANT;
    } else {
        out->kind = SIM_DIST_LOGNORMAL;
        out->sigma = sqrt(log(1 + cv * cv));
    }
    return spans;
}

typedef struct fit {
    double sx, sy, sxx, sxy;
    int64_t n;
} fit;

static void meta_int(json_t *o, const char *k, int *out)
{
    json_t *v = o ? json_object_get(o, k) : NULL;
    if (v && json_is_integer(v)) *out = (int)json_integer_value(v);
}

/* "hosts": [{"name", "cores"}, ...] and "task_hosts" (--hosts syntax; absent: tasks dealt
 * round-robin over the hosts) into cal->hosts and cal->cores (the least of the hosts'; 0
 * when one is not said). */
static void read_hosts(json_t *o, sim_calibration *cal)
{
    json_t *hs = json_object_get(o, "hosts");
    if (!json_is_array(hs) || json_array_size(hs) == 0 || json_array_size(hs) > SPEC_MAX_PS + SPEC_MAX_WORKERS)
        return;
    int cores = -1;
    for (size_t i = 0; i < json_array_size(hs); i++) {
        json_t *c = json_object_get(json_array_get(hs, i), "cores");
        int n = json_is_integer(c) && json_integer_value(c) > 0 && json_integer_value(c) <= 1000000
            ? (int)json_integer_value(c) : 0;
        if (cores < 0 || n < cores) cores = n;
    }
    memset(&cal->hosts, 0, sizeof cal->hosts);
    cal->hosts.n = (int)json_array_size(hs);
    cal->cores = cores > 0 ? cores : 0;
    json_t *th = json_object_get(o, "task_hosts");
    sim_hosts placed;
    char e2[DP_ERRLEN];
    if (json_is_string(th) && !sim_parse_hosts(json_string_value(th), &placed, e2) && placed.n == cal->hosts.n)
        cal->hosts = placed;
}

/* The product of the metadata's straggler factors for worker k, 1 when none. */
static double straggler_factor(const sim_calibration *cal, int k)
{
    double f = 1;
    for (int i = 0; i < cal->n_stragglers; i++)
        if (cal->stragglers[i].worker == k) f *= cal->stragglers[i].factor;
    return f;
}

static void read_metadata(const char *json, sim_calibration *cal)
{
    json_t *root = json_loads(json, 0, NULL);
    if (!root) return;
    json_t *srcs[3] = {root, json_object_get(root, "config"), json_object_get(root, "cluster")};
    for (int i = 0; i < 3; i++) {
        json_t *o = srcs[i];
        if (!o || !json_is_object(o)) continue;
        read_hosts(o, cal);
        meta_int(o, "ps", &cal->n_ps);
        meta_int(o, "workers", &cal->n_workers);
        meta_int(o, "hidden", &cal->hidden);
        meta_int(o, "partition", &cal->partition);
        meta_int(o, "batch", &cal->batch);
        meta_int(o, "steps", &cal->steps);
        meta_int(o, "eval_every", &cal->eval_every);
        json_t *m = json_object_get(o, "mode");
        update_mode um;
        if (m && json_is_string(m) && !update_mode_parse(json_string_value(m), &um)) cal->mode = um;
        json_t *st = json_object_get(o, "straggler");
        if (st && json_is_string(st) && !cal->n_stragglers) {
            sim_config d;
            char err[DP_ERRLEN];
            sim_config_init(&d);
            if (!sim_config_set(&d, "straggler", json_string_value(st), "metadata", err)) {
                memcpy(cal->stragglers, d.stragglers, sizeof cal->stragglers);
                cal->n_stragglers = d.n_stragglers;
            }
        }
        json_t *md = json_object_get(o, "model");
        if (md && json_is_string(md) && strlen(json_string_value(md)) < sizeof cal->model)
            snprintf(cal->model, sizeof cal->model, "%s", json_string_value(md));
    }
    json_decref(root);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sim_cal_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A worker's flows of one phase all cross its NIC, sharing it equally while they last, so
 * the one of b bytes cannot end before sum_q min(bytes[q], b) have crossed: for each i,
 * out[i] = that sum for b = bytes[i]. scratch holds 2n + 1 doubles. O(n log n). */
static void nic_bytes(const double *bytes, int n, double *scratch, double *out)
{
    double *sorted = scratch, *prefix = scratch + n;
    memcpy(sorted, bytes, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, dbl_cmp);
    prefix[0] = 0;
    for (int j = 0; j < n; j++) prefix[j + 1] = prefix[j] + sorted[j];
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = n;  /* lo: how many are below bytes[i] */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] < bytes[i]) lo = mid + 1;
            else hi = mid;
        }
        out[i] = prefix[lo] + bytes[i] * (double)(n - lo);
    }
}

int sim_calibrate(const char *path, sim_calibration *cal, char *err)
{
    return sim_calibrate_until(path, INT64_MAX, cal, err);
}

int sim_calibrate_until(const char *path, int64_t max_step, sim_calibration *cal, char *err)
{
    memset(cal, 0, sizeof *cal);
    cal->mode = -1;
    cal->eval_every = -1;
    cal->latency = -1;
    char e2[DP_ERRLEN];
    trace_reader *r = trace_reader_open(path, e2);
    if (!r) return dp_fail(err, DP_EINVAL, "--calibrate-from: %s", e2);
    read_metadata(trace_reader_metadata(r), cal);
    int cap_w = 0, max_w = -1, max_ps = -1, pulling = 0;
    wstat *ws = NULL;
    int np_alloc = cal->n_ps > 0 ? cal->n_ps : 256;
    double *nic = xmalloc((size_t)np_alloc * sizeof *nic);
    double *nic_scratch = xmalloc((size_t)(2 * np_alloc + 1) * sizeof *nic_scratch);
    fit f = {0}, pf = {0};
    int pushing = 0;
    double pinteg = 0;
    int64_t pinteg_t = 0;
    double phase_bytes_sum = 0;
    int64_t phases = 0, gs_n = 0, gs_t0 = 0, gs_t1 = 0, zero_n = 0;
    double zero_min = 0, integ = 0, tok_sum = 0;
    int64_t tok_n = 0;
    int64_t integ_t = 0;
    int64_t *cb = NULL;  /* compute_begin time per worker */
    evt_record e;
    int rc;
    cal->until_loss = NAN;
    double *last_loss = NULL;     /* per worker, the loss of its last step_end */
    int n_last = 0;
    /* the recorded hosts had cores to share: gaps are kept and de-rated at the end */
    int derate = cal->cores > 0 && cal->hosts.n > 0;
    sim_cal_span *gaps = NULL;
    double *shares = NULL;   /* per gap, its compute span's measured share (-1 unknown) */
    int n_gaps = 0, cap_gaps = 0;
    int64_t slept = 0;       /* straggler spans whose sleep was taken out */
    double pipe_sum = 0;     /* early pushes' places in their compute spans (0..1) */
    double eval_sum = 0;     /* the chief's evaluations, s, and how many */
    int eval_n = 0;
    int64_t eval_first = -1; /* the step of the first before the run's last step */
    int64_t pipe_n = 0;
    sim_cal_ps *answers = sim_cal_ps_new();  /* every ps's answers, for its own work */
    while ((rc = trace_reader_next(r, &e)) == 1) {
        if (e.kind == EVT_GLOBAL_STEP) {
            if (e.step > max_step) break;
            if (!gs_n) gs_t0 = e.t;
            gs_t1 = e.t;
            gs_n++;
            if (e.step > cal->until_step) {
                cal->until_step = e.step;
                cal->until_ns = e.t;
            }
            if (e.step == max_step) break;
            continue;
        }
        if (e.kind == EVT_STEP_END && e.job == EVT_JOB_WORKER && e.task >= 0 && e.task < 65536 &&
            isfinite(e.value)) {
            if (e.task >= n_last) {
                int nn = e.task + 1;
                last_loss = xrealloc(last_loss, (size_t)nn * sizeof *last_loss);
                for (int i = n_last; i < nn; i++) last_loss[i] = NAN;
                n_last = nn;
            }
            last_loss[e.task] = e.value;
        }
        if (e.job == EVT_JOB_PS && e.task > max_ps) max_ps = e.task;
        if (e.job == EVT_JOB_PS && e.kind == EVT_TASK_STOP) sim_cal_ps_cpu(answers, e.task, e.value2);
        if (e.job == EVT_JOB_PS && e.kind == EVT_APPLY && e.peer_job == EVT_JOB_WORKER)
            sim_cal_ps_apply(answers, e.peer, e.var, e.id, e.t);
        if (e.job != EVT_JOB_WORKER || e.task < 0 || e.task >= 65536) continue;
        int k = e.task;
        if (k >= cap_w) {
            int nc = cap_w ? cap_w : 16;
            while (nc <= k) nc *= 2;
            ws = xrealloc(ws, (size_t)nc * sizeof *ws);
            cb = xrealloc(cb, (size_t)nc * sizeof *cb);
            memset(ws + cap_w, 0, (size_t)(nc - cap_w) * sizeof *ws);
            for (int i = cap_w; i < nc; i++) {
                ws[i].last_pull_end = ws[i].first_push = ws[i].last_push_end = -1;
                ws[i].share = -1;
                cb[i] = -1;
            }
            cap_w = nc;
        }
        if (k > max_w) max_w = k;
        wstat *s = &ws[k];
        int p = e.peer;
        if (e.kind == EVT_COMPUTE_BEGIN) {
            s->computing = 1;
            s->cb_t = e.t;
            s->early_t = s->n_span_early = 0;
        }
        if (e.kind == EVT_COMPUTE_END) {
            s->computing = 0;
            /* where in the span the early pushes began: the simulator's --pipeline */
            if (s->n_span_early && e.t > s->cb_t) {
                pipe_sum += (double)(s->early_t - (int64_t)s->n_span_early * s->cb_t) / (double)(e.t - s->cb_t);
                pipe_n += s->n_span_early;
            }
        }
        if (e.kind == EVT_PUSH_BEGIN && s->computing && s->n_early < (int)DP_ARRAY_LEN(s->early)) {
            s->early[s->n_early++] = e.id;
            s->moved += (double)e.bytes;
            s->early_t += e.t;
            s->n_span_early++;
            continue;
        }
        if (e.kind == EVT_PUSH_END && early_done(s, e.id)) continue;
        if (e.kind == EVT_TASK_STOP && e.value2 > 0 && isfinite(e.value2)) s->cpu_s = e.value2;
        /* the chief's evaluation is no compute: the simulation has its own (eval_s, from
         * every one, the final one's too: the same test set each time) */
        if (e.kind == EVT_EVAL && e.dur > 0) {
            eval_sum += (double)e.dur / 1e9;
            eval_n++;
            if (e.step > 0 && (cal->steps <= 0 || e.step < cal->steps) && (eval_first < 0 || e.step < eval_first))
                eval_first = e.step;
        }
        if (e.kind == EVT_EVAL && e.dur > 0 && s->last_pull_end >= 0 && e.t - e.dur >= s->last_pull_end)
            s->eval_ns += e.dur, s->eval_pending += e.dur;
        if (e.kind == EVT_PULL_BEGIN || e.kind == EVT_PUSH_BEGIN) s->moved += (double)e.bytes;
        if (e.kind == EVT_PULL_BEGIN) {
            if (p > max_ps) max_ps = p;
            if (!s->ps_bytes) {
                s->ps_bytes = xcalloc((size_t)np_alloc, sizeof *s->ps_bytes);
                s->ps_end = xcalloc((size_t)np_alloc, sizeof *s->ps_end);
            }
            if (!s->in_phase) {
                s->in_phase = 1;
                s->phase_t0 = e.t;
                s->eval_ns = 0;
                integ += (double)pulling * (double)(e.t - integ_t);
                integ_t = e.t;
                s->integ0 = integ;
                pulling++;
                memset(s->ps_bytes, 0, (size_t)np_alloc * sizeof *s->ps_bytes);
                for (int i = 0; i < np_alloc; i++) s->ps_end[i] = -1;
            }
            if (p >= 0 && p < np_alloc) s->ps_bytes[p] += (double)e.bytes;
            s->pulls_out++;
        } else if (e.kind == EVT_PULL_END && s->in_phase) {
            if (p >= 0 && p < np_alloc) s->ps_end[p] = e.t;
            if (p >= 0 && e.dur >= 0) sim_cal_ps_add(answers, 0, p, k, e.t - e.dur, e.t, (double)e.bytes);
            if (--s->pulls_out <= 0) {
                s->pulls_out = 0;
                s->in_phase = 0;
                integ += (double)pulling * (double)(e.t - integ_t);
                integ_t = e.t;
                pulling--;
                /* mean number of workers pulling while this phase ran */
                double conc = e.t > s->phase_t0 ? (integ - s->integ0) / (double)(e.t - s->phase_t0) : 1;
                if (conc < 1) conc = 1;
                double tot = 0;
                nic_bytes(s->ps_bytes, np_alloc, nic_scratch, nic);
                /* one point per ps: its answers took d for x = bytes * concurrent pullers
                 * (their share of the ps's link), or the bytes that crossed the worker's
                 * NIC by then when that is more (more ps than workers pulling at once) */
                for (int i = 0; i < np_alloc; i++) {
                    tot += s->ps_bytes[i];
                    if (s->ps_end[i] < 0) continue;
                    double d = (double)(s->ps_end[i] - s->phase_t0) / 1e9, x = s->ps_bytes[i] * conc;
                    if (nic[i] > x) x = nic[i];
                    f.sx += x; f.sy += d; f.sxx += x * x; f.sxy += x * d; f.n++;
                    if (x == 0 && (zero_n == 0 || d < zero_min)) zero_min = d;
                    if (x == 0) zero_n++;
                }
                phase_bytes_sum += tot;
                phases++;
                s->last_pull_end = e.t;
                s->first_push = -1;
                cal->transfers++;
            }
        } else if (e.kind == EVT_PUSH_END && s->pushes_out > 0) {
            if (p >= 0 && e.dur >= 0) sim_cal_ps_add(answers, 1, p, k, e.t - e.dur, e.t, (double)e.bytes);
            if (e.value == 0) sim_cal_ps_ack(answers, k, e.var, e.id, e.t);  /* ACK_APPLIED */
            if (--s->pushes_out == 0) {
                pinteg += (double)pushing * (double)(e.t - pinteg_t);
                pinteg_t = e.t;
                pushing--;
                double d = (double)(e.t - s->push_t0) / 1e9;
                double conc = e.t > s->push_t0 ? (s->push_integ0 < 0 ? 1 : (pinteg - s->push_integ0) /
                                                  (double)(e.t - s->push_t0)) : 1;
                if (conc < 1) conc = 1;
                /* the push ends with the last ps's acks: the one sent the most bytes
                 * (as a pull's points are each ps's bytes), shared with conc pushers on
                 * its link, and not before every byte crossed the worker's NIC; without
                 * per-ps events, the mean over the ps */
                double big = 0;
                for (int i = 0; s->push_ps && i < np_alloc; i++)
                    if (s->push_ps[i] > big) big = s->push_ps[i];
                int nps = max_ps + 1 > 0 ? max_ps + 1 : 1;
                double x = (big > 0 ? big : s->push_bytes / nps) * conc;
                if (big > 0 && s->push_bytes > x) x = s->push_bytes;
                pf.sx += x; pf.sy += d; pf.n++;
                s->last_push_end = e.t;
            }
        } else if (e.kind == EVT_PUSH_BEGIN) {
            if (s->pushes_out == 0) {
                pinteg += (double)pushing * (double)(e.t - pinteg_t);
                pinteg_t = e.t;
                pushing++;
                s->push_t0 = e.t;
                s->push_bytes = 0;
                s->barrier = 0;
                s->last_push_end = -1;
                s->push_integ0 = pinteg;
                if (!s->push_ps) s->push_ps = xmalloc((size_t)np_alloc * sizeof *s->push_ps);
                memset(s->push_ps, 0, (size_t)np_alloc * sizeof *s->push_ps);
            }
            s->pushes_out++;
            s->push_bytes += (double)e.bytes;
            if (p >= 0 && p < np_alloc) s->push_ps[p] += (double)e.bytes;
            if (s->first_push < 0 && s->last_pull_end >= 0) {
                s->first_push = e.t;
                int64_t t0 = s->last_pull_end + s->eval_ns;
                if (t0 > e.t) t0 = e.t;
                s->eval_ns = 0;
                if (derate) {
                    if (n_gaps == cap_gaps) {
                        cap_gaps = cap_gaps ? 2 * cap_gaps : 1024;
                        gaps = xrealloc(gaps, (size_t)cap_gaps * sizeof *gaps);
                        shares = xrealloc(shares, (size_t)cap_gaps * sizeof *shares);
                    }
                    shares[n_gaps] = s->share;
                    gaps[n_gaps++] = (sim_cal_span){t0, e.t, JOB_WORKER, k};
                } else {
                    double g = (double)(e.t - t0) / 1e9;
                    s->c.sum += g; s->c.sumsq += g * g; s->c.n++;
                }
                s->last_pull_end = -1;
                s->share = -1;
            }
        } else if (e.kind == EVT_BARRIER_WAIT) {
            s->barrier = 1;
        } else if (e.kind == EVT_STEP_END) {
            /* sync: after its gradients' acks a worker that never waited sends the step
             * token (no events) and ends the step when its ack comes: a zero-byte round trip */
            if (cal->mode == MODE_SYNC && !s->barrier && s->last_push_end >= 0 && e.t >= s->last_push_end) {
                tok_sum += (double)(e.t - s->last_push_end) / 1e9;
                tok_n++;
            }
            s->last_push_end = -1;
            s->eval_total += s->eval_pending;
            s->eval_pending = 0;
            s->moved_steps = s->moved;
        } else if (e.kind == EVT_COMPUTE_BEGIN) {
            cb[k] = e.t;
        } else if (e.kind == EVT_COMPUTE_END && phases > 0) {
            /* a real worker says the work its span did (the CPU it used): the gap's
             * work alone is the gap at that share, however the host's cores were shared.
             * The CPU its progress hook spent sending and reading between the ops (value)
             * is the span's too: the same thread, one op after the other */
            if (e.value2 > 0 && e.dur > 0 && isfinite(e.value2)) {
                /* a straggler slept (F - 1) / F of its span and counted it as work: that
                 * is neither CPU nor the gap's work (the simulation sleeps it again) */
                double sf = straggler_factor(cal, k), extra = (double)e.dur * (sf - 1) / sf;
                double hook = e.value > 0 && isfinite(e.value) ? e.value : 0;
                double sh = ((e.value2 + hook) * 1e9 - extra) / ((double)e.dur - extra);
                s->share = sh < 1 ? sh : 1;
                s->eval_ns += (int64_t)extra;
                s->eval_total += (int64_t)extra;
                slept += sf > 1;
            }
        } else if (e.kind == EVT_COMPUTE_END && phases == 0) {
            /* only when the trace has no pulls: use the compute spans themselves */
            double d = e.dur > 0 ? (double)e.dur / 1e9 : cb[k] >= 0 ? (double)(e.t - cb[k]) / 1e9 : -1;
            if (d > 0) { s->c.sum += d; s->c.sumsq += d * d; s->c.n++; }
        }
    }
    {
        double sum = 0;
        int n = 0;
        for (int k = 0; k < n_last; k++)
            if (isfinite(last_loss[k])) sum += last_loss[k], n++;
        if (n) cal->until_loss = sum / n;
        free(last_loss);
    }
    trace_reader_close(r);
    if (rc < 0) {
        rc = dp_fail(err, DP_ECORRUPT, "--calibrate-from: %s: unreadable events", path);
        goto out;
    }
    if (pipe_n) cal->pipeline = pipe_sum / (double)pipe_n;
    if (eval_n) cal->eval_s = eval_sum / eval_n;
    /* a trace whose metadata does not say --eval-every (recorded before the runtime wrote
     * it): the step of its first evaluation, exact in sync (the interval's first step), at
     * most a few steps over in async */
    if (cal->eval_every < 0 && eval_first > 0 && eval_first <= INT32_MAX) cal->eval_every = (int)eval_first;
    if (!slept) cal->n_stragglers = 0;  /* an older trace: the speeds carry them */
    if (cal->n_workers <= 0) cal->n_workers = max_w + 1;
    if (cal->n_ps <= 0) cal->n_ps = max_ps + 1;
    /* compute: each gap's work alone (with cores), then the distribution */
    int nw = max_w + 1;
    csum *cs = xcalloc((size_t)(nw > 0 ? nw : 1), sizeof *cs);
    double *work = xmalloc((size_t)(n_gaps > 0 ? n_gaps : 1) * sizeof *work);
    if (derate) {
        sim_cal_derate(gaps, n_gaps, cal, work);
        measured_work(gaps, shares, n_gaps, work);
        for (int i = 0; i < n_gaps; i++) {
            wstat *s = &ws[gaps[i].task];
            s->c.sum += work[i]; s->c.sumsq += work[i] * work[i]; s->c.n++;
        }
        copy_rate(ws, nw, cal);
    }
    for (int k = 0; k < nw; k++) cs[k] = ws[k].c;
    cal->n_speed = nw;
    cal->compute_spans = fit_compute(cs, nw, &cal->compute, &cal->speed);
    if (!cal->compute_spans) {
        free(cs);
        free(work);
        rc = dp_fail(err, DP_EINVAL, "--calibrate-from: %s has no worker compute or pull/push events "
                     "to fit (record it with --trace)", path);
        goto out;
    }
    /* network */
    cal->bandwidth = 0;
    cal->latency = 0;
    if (f.n >= 1) {
        double n = (double)f.n, mx = f.sx / n, my = f.sy / n;
        double varx = f.sxx / n - mx * mx;
        double slope = varx > 0.0025 * mx * mx ? (f.sxy / n - mx * my) / varx : 0;
        if (slope > 0 && my - slope * mx >= 0) {
            cal->bandwidth = 1 / slope;
            cal->latency = (my - slope * mx) / 2;
        } else {
            /* x hardly varies (e.g. sync with one ps): latency and bandwidth cannot be told
             * apart. Take latency from answers that carried no bytes, else from the sync
             * step token's mean round trip, else assume 50 us (at most a quarter of the
             * mean), and give the rest to bandwidth: the same cluster is then reproduced
             * exactly and bigger ones scale with bytes. */
            double lat = zero_n ? zero_min / 2 : tok_n ? tok_sum / (double)tok_n / 2 : 50e-6;
            if (lat > my / 4) lat = my / 4;
            cal->latency = lat;
            if (mx > 0 && my - 2 * lat > 0) cal->bandwidth = mx / (my - 2 * lat);
        }
    }
    if (!(cal->bandwidth > 0)) cal->bandwidth = 10e9 / 8;  /* no signal: transfers are not the cost */
    /* pushes: same latency, their own effective bandwidth (the ps applies each gradient
     * as it arrives, so a push costs more than the bytes alone) */
    cal->push_bandwidth = cal->bandwidth;
    if (pf.n >= 1) {
        double mx = pf.sx / (double)pf.n, my = pf.sy / (double)pf.n;
        if (mx > 0 && my - 2 * cal->latency > 0) cal->push_bandwidth = mx / (my - 2 * cal->latency);
    }
    /* the ps's own work, and what goes with it: the network without it and, with cores,
     * compute de-rated counting the ps's busy spans too */
    sim_cal_ps_fit(answers, gaps, n_gaps, derate ? work : NULL, cal);
    if (derate) {
        measured_work(gaps, shares, n_gaps, work);
        memset(cs, 0, (size_t)(nw > 0 ? nw : 1) * sizeof *cs);
        for (int i = 0; i < n_gaps; i++) {
            csum *c = &cs[gaps[i].task];
            c->sum += work[i]; c->sumsq += work[i] * work[i]; c->n++;
        }
        fit_compute(cs, nw, &cal->ps_compute, &cal->ps_speed);
    } else {
        cal->ps_compute = cal->compute;
        cal->ps_speed = xmalloc((size_t)(nw > 0 ? nw : 1) * sizeof *cal->ps_speed);
        memcpy(cal->ps_speed, cal->speed, (size_t)nw * sizeof *cal->ps_speed);
    }
    free(cs);
    free(work);
    cal->model_bytes = phases ? phase_bytes_sum / (double)phases : 0;
    cal->mean_step_s = gs_n > 1 ? (double)(gs_t1 - gs_t0) / 1e9 / (double)(gs_n - 1) : 0;
    rc = DP_OK;
out:
    sim_cal_ps_free(answers);
    free(gaps);
    free(shares);
    for (int i = 0; i < cap_w; i++) free(ws[i].ps_bytes), free(ws[i].ps_end), free(ws[i].push_ps);
    free(ws);
    free(cb);
    free(nic);
    free(nic_scratch);
    return rc;
}

void sim_calibration_release(sim_calibration *cal)
{
    if (!cal) return;
    free(cal->speed);
    free(cal->ps_speed);
    cal->speed = cal->ps_speed = NULL;
    cal->n_speed = 0;
}
