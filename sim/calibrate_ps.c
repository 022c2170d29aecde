/* calibrate_ps.c — the ps's own work fitted from a trace (--ps-pull-cost, --ps-push-cost;
 * calibrate.c's header has the whole fit). A real ps emits no event when it answers a
 * pull, and its APPLY events carry no duration (in sync they come only at the take), so
 * its work is read where its answers land, every worker's pull_end and push_end, per ps
 * in the order they arrive; its APPLY events give the latency (to the pusher's APPLIED
 * ack). A ps handles one message at a time: an answer asked for before the previous one
 * arrived waited for the ps, which then spent the gap between the two on it. Those gaps,
 * against the messages and bytes answered, give a time per message and a rate for the
 * bytes by least squares, per direction; the answers that found the ps idle give the
 * network's bandwidth on what is left beyond the latencies and that work. */
#include "sim/calibrate_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/spec.h"
#include "common/dp.h"

/* Fewer gaps than this in a direction: no cost fitted for it. */
#define MIN_GAPS 8

typedef struct answer {
    int64_t req, end;        /* ns: the first request, the answer's arrival */
    double bytes;
    int w, m, push;          /* worker, messages answered together, direction */
} answer;

/* Per worker, the last APPLY events about its gradients (a ring), to find the one its
 * APPLIED ack answers. */
#define ACK_RING 64
typedef struct applied { uint64_t id; uint32_t var; int64_t t; } applied;

struct sim_cal_ps {
    answer **a;              /* per ps */
    int *n, *cap;
    int n_ps;
    applied *ring;           /* ACK_RING per worker */
    int *ring_at;
    int n_w;
    double *ack;             /* APPLY to the pusher's ack: one way, ps to worker (s) */
    int64_t ack_n, ack_cap;
    double *cpu;             /* per ps, the CPU its serving took (task_stop; 0: not said) */
    int n_cpu;
};

sim_cal_ps *sim_cal_ps_new(void)
{
    return xcalloc(1, sizeof(sim_cal_ps));
}

void sim_cal_ps_free(sim_cal_ps *c)
{
    if (!c) return;
    for (int p = 0; p < c->n_ps; p++) free(c->a[p]);
    free(c->a);
    free(c->n);
    free(c->cap);
    free(c->ring);
    free(c->ring_at);
    free(c->cpu);
    free(c->ack);
    free(c);
}

void sim_cal_ps_add(sim_cal_ps *c, int push, int ps, int worker, int64_t t_req, int64_t t_end, double bytes)
{
    if (ps < 0 || ps >= SPEC_MAX_PS) return;
    if (ps >= c->n_ps) {
        int n = ps + 1;
        c->a = xrealloc(c->a, (size_t)n * sizeof *c->a);
        c->n = xrealloc(c->n, (size_t)n * sizeof *c->n);
        c->cap = xrealloc(c->cap, (size_t)n * sizeof *c->cap);
        for (int p = c->n_ps; p < n; p++) c->a[p] = NULL, c->n[p] = c->cap[p] = 0;
        c->n_ps = n;
    }
    if (c->n[ps] == c->cap[ps]) {
        c->cap[ps] = c->cap[ps] ? 2 * c->cap[ps] : 256;
        c->a[ps] = xrealloc(c->a[ps], (size_t)c->cap[ps] * sizeof *c->a[ps]);
    }
    c->a[ps][c->n[ps]++] = (answer){t_req, t_end, bytes, worker, 1, push};
}

void sim_cal_ps_apply(sim_cal_ps *c, int worker, uint32_t var, uint64_t id, int64_t t)
{
    if (worker < 0 || worker >= SPEC_MAX_WORKERS) return;
    if (worker >= c->n_w) {
        int n = worker + 1;
        c->ring = xrealloc(c->ring, (size_t)n * ACK_RING * sizeof *c->ring);
        c->ring_at = xrealloc(c->ring_at, (size_t)n * sizeof *c->ring_at);
        memset(c->ring + (size_t)c->n_w * ACK_RING, 0, (size_t)(n - c->n_w) * ACK_RING * sizeof *c->ring);
        memset(c->ring_at + c->n_w, 0, (size_t)(n - c->n_w) * sizeof *c->ring_at);
        c->n_w = n;
    }
    c->ring[(size_t)worker * ACK_RING + (size_t)c->ring_at[worker]] = (applied){id, var, t};
    c->ring_at[worker] = (c->ring_at[worker] + 1) % ACK_RING;
}

void sim_cal_ps_ack(sim_cal_ps *c, int worker, uint32_t var, uint64_t id, int64_t t)
{
    if (worker < 0 || worker >= c->n_w || !id) return;
    const applied *r = c->ring + (size_t)worker * ACK_RING;
    for (int i = 0; i < ACK_RING; i++) {
        int j = (c->ring_at[worker] - 1 - i + 2 * ACK_RING) % ACK_RING;  /* newest first */
        if (r[j].id == id && r[j].var == var && r[j].t <= t) {
            if (c->ack_n == c->ack_cap) {
                c->ack_cap = c->ack_cap ? 2 * c->ack_cap : 1024;
                c->ack = xrealloc(c->ack, (size_t)c->ack_cap * sizeof *c->ack);
            }
            c->ack[c->ack_n++] = (double)(t - r[j].t) / 1e9;
            return;
        }
    }
}

static int by_end(const void *x, const void *y)
{
    const answer *a = x, *b = y;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    if (a->w != b->w) return a->w < b->w ? -1 : 1;
    return (a->push > b->push) - (a->push < b->push);
}

/* Least squares without intercept of a gap s on (messages m, bytes b), s = m T + b k. */
typedef struct reg { double mm, mb, bb, ms, bs; int64_t n; } reg;

static void reg_add(reg *r, double m, double b, double s)
{
    r->mm += m * m; r->mb += m * b; r->bb += b * b; r->ms += m * s; r->bs += b * s; r->n++;
}

/* T and the rate 1/k, both >= 0: when one comes out negative the other alone is fitted;
 * when messages and bytes always come in one proportion they cannot be told apart, and
 * the bytes take it all (so it grows with the model). */
static sim_ps_cost reg_solve(const reg *r)
{
    sim_ps_cost c = {0, 0, 0};
    if (r->n < MIN_GAPS || !(r->mm > 0)) return c;
    double det = r->mm * r->bb - r->mb * r->mb, T = -1, k = -1;
    if (det > 1e-9 * r->mm * r->bb) {
        T = (r->ms * r->bb - r->mb * r->bs) / det;
        k = (r->mm * r->bs - r->mb * r->ms) / det;
    } else if (r->bb > 0) {
        T = 0;
        k = r->bs / r->bb;
    }
    if (k < 0 || !(r->bb > 0)) {
        k = 0;
        T = r->ms / r->mm;
    } else if (T < 0) {
        T = 0;
        k = r->bs / r->bb;
    }
    c.msg_s = T > 0 ? T : 0;
    c.rate = k > 0 ? 1 / k : 0;
    return c;
}

/* The answers of each ps in arrival order, those of one worker arriving together (one
 * simulated flow) merged into one of m messages. */
static void merge_answers(sim_cal_ps *c)
{
    for (int p = 0; p < c->n_ps; p++) {
        answer *a = c->a[p];
        int n = c->n[p], o = 0;
        qsort(a, (size_t)n, sizeof *a, by_end);
        for (int i = 0; i < n; i++) {
            if (o && a[o - 1].end == a[i].end && a[o - 1].w == a[i].w && a[o - 1].push == a[i].push) {
                a[o - 1].bytes += a[i].bytes;
                a[o - 1].m++;
                if (a[i].req < a[o - 1].req) a[o - 1].req = a[i].req;
                continue;
            }
            a[o++] = a[i];
        }
        c->n[p] = o;
    }
}

/* How many transfers shared the ps's link with answer i (at ps p, sorted by arrival)
 * that took tau: the answers of the same direction to other workers that arrived within
 * tau of it (flows sharing a link at one rate end together), and itself. At most
 * SHARE_SCAN neighbours each way are looked at. */
#define SHARE_SCAN 4096
static double sharing(const answer *a, int n, int i, double tau)
{
    int64_t w = (int64_t)llround(tau * 1e9);
    int k = 1;
    for (int d = -1; d <= 1; d += 2)
        for (int j = i + d, s = 0; j >= 0 && j < n && s < SHARE_SCAN; j += d, s++) {
            if (llabs(a[j].end - a[i].end) > w) break;
            if (a[j].push != a[i].push || a[j].w == a[i].w) continue;
            int seen = 0;  /* one worker's messages of a phase share one connection */
            for (int q = i + d; q != j && !seen; q += d) seen = a[q].w == a[j].w && a[q].push == a[j].push;
            k += !seen;
        }
    return k;
}

/* Whether answer a waited for the ps: it was asked for before prev, the answer the ps
 * sent before it, arrived (the ps handles one message at a time, in order). */
static int waited_for(const answer *a, const answer *prev)
{
    return a->req < prev->end;
}

/* An answer as a sample: waited (it was asked for before the previous answer of its ps,
 * in the order the ps sent them, arrived), its y (waited: the ps's time on it, the gap
 * from the previous one; else its whole time) and, waited, the ps's busy span. */
typedef struct sample {
    int waited;
    int64_t t0, t1;
    double y;
} sample;

typedef struct by_done_ctx { const double *done; } by_done_ctx;

static int cmp_done(const by_done_ctx *x, int i, int j)
{
    if (x->done[i] != x->done[j]) return x->done[i] < x->done[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Sorts idx[0..n) by x's done time, ties in index order (a bottom-up merge sort). */
static void sort_done(int *idx, int n, const by_done_ctx *x)
{
    int *tmp = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = cmp_done(x, idx[i], idx[j]) <= 0 ? idx[i++] : idx[j++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
    free(tmp);
}

/* One round of the fit, the pull answers' transfers taken as bytes / pull_bw (the ps sent
 * an answer that long before it arrived; acks carry no bytes): the samples in the order
 * the ps sent its answers, the costs from the gaps (de-rated with the compute gaps when
 * gap_work), the network from the rest. */
static void fit_round(sim_cal_ps *c, double L, double pull_bw, int idle_busy, int keep_costs,
                      const sim_cal_span *gaps, int n_gaps, double *gap_work, sim_calibration *cal)
{
    int total = 0;
    for (int p = 0; p < c->n_ps; p++) total += c->n[p];
    sample *sm = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *sm);  /* as c->a, per ps */
    int nw = 0;
    for (int p = 0, base = 0; p < c->n_ps; base += c->n[p], p++) {
        const answer *a = c->a[p];
        int n = c->n[p];
        double *done = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *done);
        int *idx = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
        for (int i = 0; i < n; i++) {
            done[i] = (double)a[i].end - (a[i].push ? 0 : a[i].bytes / pull_bw * 1e9);
            idx[i] = i;
        }
        sort_done(idx, n, &(by_done_ctx){done});
        for (int r = 0; r < n; r++) {
            int i = idx[r], h = r ? idx[r - 1] : -1;
            sample *q = &sm[base + i];
            q->waited = h >= 0 && waited_for(&a[i], &a[h]);
            if (q->waited) {
                q->t0 = (int64_t)llround(done[h]);
                q->t1 = (int64_t)llround(done[i]);
                if (q->t1 < q->t0) q->t1 = q->t0;
                q->y = (double)(q->t1 - q->t0) / 1e9;
                nw++;
            } else {
                q->t0 = a[i].req;
                q->t1 = a[i].end;
                q->y = (double)(a[i].end - a[i].req) / 1e9;
            }
        }
        free(done);
        free(idx);
    }
    if (gap_work) {
        /* the ps's busy spans (its gaps) and the compute spans de-rated together */
        int n = n_gaps + total, j = n_gaps;
        sim_cal_span *sp = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *sp);
        double *work = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *work);
        memcpy(sp, gaps, (size_t)n_gaps * sizeof *sp);
        for (int p = 0, base = 0; p < c->n_ps; base += c->n[p], p++)
            for (int i = 0; i < c->n[p]; i++)
                if (sm[base + i].waited) sp[j++] = (sim_cal_span){sm[base + i].t0, sm[base + i].t1, JOB_PS, p};
        /* idle_busy: the ps was busy on the answers that found it idle too, for their work
         * as the previous round fitted it, from when their message came */
        for (int p = 0, base = 0; idle_busy && p < c->n_ps; base += c->n[p], p++)
            for (int i = 0; i < c->n[p]; i++) {
                const answer *a = &c->a[p][i];
                if (sm[base + i].waited) continue;
                int64_t t0 = a->req + (int64_t)llround(L * 1e9);
                int64_t t1 = t0 + (int64_t)llround(sim_ps_cost_s(a->push ? &cal->ps_push_cost : &cal->ps_pull_cost,
                                                                 a->m, a->bytes) * 1e9);
                if (t1 > a->end) t1 = a->end;
                if (t1 > t0) sp[j++] = (sim_cal_span){t0, t1, JOB_PS, p};
            }
        n = j;
        sim_cal_derate(sp, n, cal, work);
        memcpy(gap_work, work, (size_t)n_gaps * sizeof *gap_work);
        j = n_gaps;
        for (int i = 0; i < total; i++)
            if (sm[i].waited) sm[i].y = work[j++];
        free(sp);
        free(work);
    }
    /* the ps's work from the gaps, per direction */
    reg r[2] = {{0}};
    for (int p = 0, base = 0; p < c->n_ps; base += c->n[p], p++)
        for (int i = 0; i < c->n[p]; i++)
            if (sm[base + i].waited) reg_add(&r[c->a[p][i].push], c->a[p][i].m, c->a[p][i].bytes, sm[base + i].y);
    if (!keep_costs) {
        cal->ps_pull_cost = reg_solve(&r[0]);
        cal->ps_push_cost = reg_solve(&r[1]);
        cal->ps_samples[0] = r[0].n;
        cal->ps_samples[1] = r[1].n;
    }
    /* the network from the answers that found the ps idle: 2L, the ps's work, and the
     * transfer, sharing the link with those that arrived meanwhile (least squares through
     * the origin on bytes times the transfers sharing, as calibrate.c's fit) */
    double sb[2] = {0, 0}, sby[2] = {0, 0};
    for (int p = 0, base = 0; p < c->n_ps; base += c->n[p], p++)
        for (int i = 0; i < c->n[p]; i++) {
            const sample *q = &sm[base + i];
            const answer *a = &c->a[p][i];
            if (q->waited || !(a->bytes > 0)) continue;
            const sim_ps_cost *k = a->push ? &cal->ps_push_cost : &cal->ps_pull_cost;
            double rest = q->y - 2 * L - sim_ps_cost_s(k, a->m, a->bytes);
            double x = a->bytes * (rest > 0 ? sharing(c->a[p], c->n[p], i, rest) : 1);
            sb[a->push] += x * x;
            sby[a->push] += x * rest;
        }
    double *bw[2] = {&cal->ps_bandwidth, &cal->ps_push_bandwidth};
    for (int d = 0; d < 2; d++)
        *bw[d] = sby[d] > 0 && sb[d] / sby[d] < SIM_FREE_BW ? sb[d] / sby[d] : SIM_FREE_BW;
    cal->ps_latency = L;
    free(sm);
}

/* The fit's time per message is mostly the busiest ps's, and it would charge every
 * other ps as much for each of its small answers (with 4 ps, 3 near-idle ps would load
 * the shared cores as much as the busy one). A ps's work is taken as its bytes at a rate
 * per direction, the rate at which the busiest ps (the most bytes answered) did the work
 * the fit found for its answers. */
static void bytes_only(const sim_cal_ps *c, sim_calibration *cal)
{
    int big = -1;
    double big_b = 0;
    for (int p = 0; p < c->n_ps; p++) {
        double b = 0;
        for (int i = 0; i < c->n[p]; i++) b += c->a[p][i].bytes;
        if (b > big_b) big_b = b, big = p;
    }
    sim_ps_cost *cost[2] = {&cal->ps_pull_cost, &cal->ps_push_cost};
    for (int d = 0; d < 2; d++) {
        double work = 0, bytes = 0;
        for (int i = 0; big >= 0 && i < c->n[big]; i++) {
            const answer *a = &c->a[big][i];
            if (a->push != d) continue;
            work += sim_ps_cost_s(cost[d], a->m, a->bytes);
            bytes += a->bytes;
        }
        *cost[d] = work > 0 && bytes > 0 ? (sim_ps_cost){0, bytes / work, 0} : (sim_ps_cost){0, 0, 0};
    }
}

void sim_cal_ps_cpu(sim_cal_ps *c, int ps, double cpu_s)
{
    if (ps < 0 || ps >= 65536 || !(cpu_s > 0) || !isfinite(cpu_s)) return;
    if (ps >= c->n_cpu) {
        c->cpu = xrealloc(c->cpu, (size_t)(ps + 1) * sizeof *c->cpu);
        for (int p = c->n_cpu; p <= ps; p++) c->cpu[p] = 0;
        c->n_cpu = ps + 1;
    }
    c->cpu[ps] = cpu_s;
}

/* The gaps between a ps's answers show the work it does before an answer leaves; its CPU
 * (task_stop) says all it did. What the CPU has beyond the fitted work over the run's
 * answers, the ps did beside its answers' transfers: writing a pull answer into the
 * socket, which streams as the worker reads it. The rate, as bytes_only's: the busiest
 * ps's (the most bytes pulled), its pull answers' bytes over that CPU of its own (0 when a
 * ps did not say its CPU, or none is beyond). Pooling every ps's CPU instead would give
 * the big ps the small ones' CPU, which their bytes do not explain. */
static void send_rate(const sim_cal_ps *c, sim_calibration *cal)
{
    cal->ps_send_rate = 0;
    if (!c->n_ps || c->n_cpu < c->n_ps) return;
    double best = 0, rate = 0;
    for (int p = 0; p < c->n_ps; p++) {
        if (!(c->cpu[p] > 0)) return;
        double fit = 0, pulled = 0;
        for (int i = 0; i < c->n[p]; i++) {
            const answer *a = &c->a[p][i];
            fit += sim_ps_cost_s(a->push ? &cal->ps_push_cost : &cal->ps_pull_cost, a->m, a->bytes);
            if (!a->push) pulled += a->bytes;
        }
        if (pulled > best) best = pulled, rate = c->cpu[p] > fit ? pulled / (c->cpu[p] - fit) : 0;
    }
    cal->ps_send_rate = rate;
}

void sim_cal_ps_fit(sim_cal_ps *c, const sim_cal_span *gaps, int n_gaps, double *gap_work, sim_calibration *cal)
{
    /* one way: the ps's own events against the acks they led to, else the network fit's */
    double L = c->ack_n ? sim_cal_median(c->ack, (size_t)c->ack_n) : cal->latency > 0 ? cal->latency : 0;
    /* a message to a ps: the ps sleeps most of the time and runs at once when it wakes; a
     * worker on a crowded host waits for a core first, which the median has in it. The
     * network's own latency is the acks of workers that found a core free: their 10th
     * percentile (c->ack is sorted now) */
    if (c->ack_n) cal->ps_msg_latency = c->ack[(size_t)(0.1 * (double)(c->ack_n - 1))];
    merge_answers(c);
    /* the order the ps sent its answers in depends on their transfers, and with cores
     * its busy time on every answer counts: a second round with the first's bandwidth
     * and costs */
    fit_round(c, L, SIM_FREE_BW, 0, 0, gaps, n_gaps, gap_work, cal);
    fit_round(c, L, cal->ps_bandwidth, 1, 0, gaps, n_gaps, gap_work, cal);
    /* then the bytes alone, and the network once more with that work */
    bytes_only(c, cal);
    fit_round(c, L, cal->ps_bandwidth, 1, 1, gaps, n_gaps, gap_work, cal);
    send_rate(c, cal);
}
