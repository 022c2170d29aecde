/* test_chrome.c — the Chrome/Perfetto export follows its rules: valid JSON (jansson),
 * process_name/thread_name for every process and thread used, no partially overlapping
 * X slices on one thread, async b/e pairs balanced with numeric ids, flows s -> f with
 * numeric ids from each push to its apply, counters with numeric values — also for a
 * trace with overlapping computes, unfinished and unmatched transfers, a NaN loss,
 * evaluations with and without an accuracy (each a slice of its duration) and hostile
 * strings — and times in microseconds with three decimals: a hand-made trace's
 * events come out at ts / dur values worked out here from their nanoseconds, in processes
 * named as TensorFlow names the tasks (/job:ps/replica:0/task:0). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/chrome.h"
#include "events/trace.h"
#include "tests/check.h"
#include "tests/evgen.h"

typedef struct xs {
    int64_t pid, tid, start, end;
} xs;

static int64_t ns_of(json_t *v)
{
    return (int64_t)llround(json_number_value(v) * 1000.0);
}

static int xs_cmp(const void *a, const void *b)
{
    const xs *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

/* 1 when no two slices of one thread partially overlap (nesting is allowed). */
static int no_partial_overlap(xs *s, size_t n)
{
    qsort(s, n, sizeof *s, xs_cmp);
    int64_t *stack = xmalloc((n + 1) * sizeof *stack);
    size_t top = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid) top = 0;
        while (top && stack[top - 1] <= s[i].start) top--;
        if (top && stack[top - 1] < s[i].end) {
            fprintf(stderr, "partial overlap pid %lld tid %lld at %lld\n", (long long)s[i].pid,
                    (long long)s[i].tid, (long long)s[i].start);
            ok = 0;
        }
        stack[top++] = s[i].end;
    }
    free(stack);
    return ok;
}

typedef struct counts {
    size_t x, b, e, s, f, c, i, m, flows;
    size_t applies, computes;   /* X slices in the "applies" group naming worker and staleness;
                                 * in the "compute" group */
    int meta_object;
} counts;

/* Checks every rule on the exported file; fills k with per-phase counts. */
static void check_export(const char *path, counts *k)
{
    json_error_t jerr;
    memset(k, 0, sizeof *k);
    json_t *root = json_load_file(path, 0, &jerr);
    CHECK_MSG(root != NULL, "invalid JSON: %s at line %d", jerr.text, jerr.line);
    if (!root) return;
    json_t *evs = json_object_get(root, "traceEvents");
    CHECK(json_is_array(evs));
    k->meta_object = json_is_object(json_object_get(json_object_get(root, "otherData"),
                                                     "metadata"));
    size_t n = json_array_size(evs);
    xs *slices = xmalloc((n + 1) * sizeof *slices);
    size_t nx = 0;
    /* named processes / threads; async and flow bookkeeping, keyed in small tables */
    json_t *procs = json_object(), *threads = json_object(), *asyncs = json_object(),
           *flows = json_object(), *used_threads = json_object();
    int fields_ok = 1, ids_numeric = 1, counters_numeric = 1, order_ok = 1;
    char kbuf[128];
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        json_t *pid = json_object_get(ev, "pid"), *tid = json_object_get(ev, "tid"),
               *ts = json_object_get(ev, "ts");
        if (!ph || !json_is_integer(pid) || !json_is_integer(tid) || !json_is_number(ts)) {
            fields_ok = 0;
            continue;
        }
        long long p = json_integer_value(pid), t = json_integer_value(tid);
        if (!strcmp(ph, "M")) {
            k->m++;
            const char *name = json_string_value(json_object_get(ev, "name"));
            snprintf(kbuf, sizeof kbuf, "%lld/%lld", p, t);
            if (name && !strcmp(name, "process_name")) {
                snprintf(kbuf, sizeof kbuf, "%lld", p);
                json_object_set_new(procs, kbuf, json_true());
            } else if (name && !strcmp(name, "thread_name")) {
                json_object_set_new(threads, kbuf, json_true());
            }
            continue;
        }
        snprintf(kbuf, sizeof kbuf, "%lld", p);
        json_object_set_new(used_threads, kbuf, json_false());   /* pid used */
        if (!strcmp(ph, "X")) {
            k->x++;
            const char *cat = json_string_value(json_object_get(ev, "cat"));
            json_t *args = json_object_get(ev, "args");
            if (cat && !strcmp(cat, "applies") && json_object_get(args, "worker") &&
                json_object_get(args, "staleness"))
                k->applies++;
            if (cat && !strcmp(cat, "compute")) k->computes++;
            json_t *dur = json_object_get(ev, "dur");
            if (!json_is_number(dur) || json_number_value(dur) < 0) fields_ok = 0;
            slices[nx++] = (xs){p, t, ns_of(ts), ns_of(ts) + ns_of(dur)};
            snprintf(kbuf, sizeof kbuf, "%lld/%lld", p, t);
            json_object_set_new(used_threads, kbuf, json_true());
        } else if (!strcmp(ph, "b") || !strcmp(ph, "e")) {
            json_t *id = json_object_get(ev, "id");
            const char *cat = json_string_value(json_object_get(ev, "cat"));
            if (!json_is_integer(id) || !cat) {
                ids_numeric = 0;
                continue;
            }
            snprintf(kbuf, sizeof kbuf, "%s:%lld", cat, (long long)json_integer_value(id));
            json_t *a = json_object_get(asyncs, kbuf);
            if (!a) {
                a = json_pack("{s:i,s:i,s:I,s:I}", "b", 0, "e", 0, "tb", (json_int_t)0,
                              "te", (json_int_t)0);
                json_object_set_new(asyncs, kbuf, a);
            }
            json_object_set_new(a, ph, json_integer(json_integer_value(json_object_get(a, ph)) + 1));
            json_object_set_new(a, ph[0] == 'b' ? "tb" : "te", json_integer(ns_of(ts)));
            if (ph[0] == 'b') k->b++;
            else k->e++;
        } else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            json_t *id = json_object_get(ev, "id");
            if (!json_is_integer(id)) {
                ids_numeric = 0;
                continue;
            }
            if (ph[0] == 'f') {
                const char *bp = json_string_value(json_object_get(ev, "bp"));
                if (!bp || strcmp(bp, "e")) fields_ok = 0;
            }
            snprintf(kbuf, sizeof kbuf, "%lld", (long long)json_integer_value(id));
            json_t *a = json_object_get(flows, kbuf);
            if (!a) {
                a = json_pack("{s:i,s:i,s:I}", "s", 0, "f", 0, "ts", (json_int_t)0);
                json_object_set_new(flows, kbuf, a);
            }
            json_object_set_new(a, ph, json_integer(json_integer_value(json_object_get(a, ph)) + 1));
            if (ph[0] == 's') json_object_set_new(a, "ts", json_integer(ns_of(ts)));
            else if (ns_of(ts) < json_integer_value(json_object_get(a, "ts"))) order_ok = 0;
            if (ph[0] == 's') k->s++;
            else k->f++;
        } else if (!strcmp(ph, "C")) {
            k->c++;
            json_t *args = json_object_get(ev, "args");
            const char *key;
            json_t *val;
            if (!json_is_object(args) || json_object_size(args) == 0) counters_numeric = 0;
            json_object_foreach(args, key, val) if (!json_is_number(val)) counters_numeric = 0;
        } else if (!strcmp(ph, "i")) {
            k->i++;
        } else {
            fields_ok = 0;
        }
    }
    CHECK(fields_ok);
    CHECK(ids_numeric);
    CHECK(counters_numeric);
    CHECK_MSG(order_ok, "a flow finishes before it starts");
    CHECK(no_partial_overlap(slices, nx));
    /* b/e balanced per (cat, id), e not before b */
    const char *key;
    json_t *val;
    int balanced = 1;
    json_object_foreach(asyncs, key, val) {
        if (json_integer_value(json_object_get(val, "b")) != 1 ||
            json_integer_value(json_object_get(val, "e")) != 1 ||
            json_integer_value(json_object_get(val, "te")) <
                json_integer_value(json_object_get(val, "tb"))) {
            fprintf(stderr, "async %s unbalanced\n", key);
            balanced = 0;
        }
    }
    CHECK(balanced);
    int paired = 1;
    json_object_foreach(flows, key, val) {
        if (json_integer_value(json_object_get(val, "s")) != 1 ||
            json_integer_value(json_object_get(val, "f")) != 1)
            paired = 0;
        k->flows++;
    }
    CHECK(paired);
    /* every pid used is named; every X thread is named */
    int named = 1;
    json_object_foreach(used_threads, key, val) {
        if (json_is_true(val)) {
            if (!json_object_get(threads, key)) named = 0;
        } else if (!json_object_get(procs, key)) {
            named = 0;
        }
    }
    CHECK_MSG(named, "a process or X thread has no name");
    json_decref(procs);
    json_decref(threads);
    json_decref(asyncs);
    json_decref(flows);
    json_decref(used_threads);
    json_decref(root);
    free(slices);
}

static void add(trace_writer *w, evt_kind kind, int job, int task, int64_t t,
                void (*fill)(evt_record *, trace_writer *))
{
    evt_record e;
    evt_init(&e, kind, job, task);
    e.t = t;
    if (fill) fill(&e, w);
    trace_writer_add(w, &e);
}

static void fill_gpu(evt_record *e, trace_writer *w)
{
    e->device = trace_writer_intern(w, "/job:worker/replica:0/task:0/device:GPU:0");
    e->step = e->t / 1000;
}

static void fill_nan(evt_record *e, trace_writer *w)
{
    (void)w;
    e->value = NAN;
    e->step = 3;
}

static void fill_evil(evt_record *e, trace_writer *w)
{
    e->str = trace_writer_intern(w, "quote \" backslash \\ nl \n ctl \x01 bad \xff\xfe utf8 "
                                    "\xe2\x82 end \xed\xa0\x80 surrogate \xf0\x9f\x98\x80 ok");
    e->var = trace_writer_intern(w, "var/\"x\"");
}

static void fill_pull(evt_record *e, trace_writer *w)
{
    e->var = trace_writer_intern(w, "w");
    e->peer = 0;
    e->id = 4242;
    e->dur = 5000;
}

/* ---- units: hand-made events at known nanoseconds ----------------------------------- */

/* One expected trace event: the (unique) event with this ph and name has ts (and dur,
 * for X) equal to the nanoseconds given / 1000, written with exactly three decimals. */
static const struct want_ev {
    const char *ph, *name;
    int64_t ts_ns;
    const char *ts_text;
    int64_t dur_ns;             /* X only */
    const char *dur_text;
} want_evs[] = {
    {"i", "clock_sync", -2500, "-2.500", 0, NULL},
    {"i", "task_start", 0, "0.000", 0, NULL},
    {"X", "compute", 1234567, "1234.567", 2000000, "2000.000"},   /* 2 ms */
    {"b", "pull", 3750000, "3750.000", 0, NULL},                  /* end 4 ms - dur 250 us */
    {"e", "pull", 4000000, "4000.000", 0, NULL},
    {"C", "global_step", 5000001, "5000.001", 0, NULL},
    {"X", "barrier_wait", 6000000, "6000.000", 999, "0.999"},
    {"X", "ssp_wait", 6500000, "6500.000", 250000, "250.000"},   /* 250 us */
    {"i", "cluster_stop", 9876543210, "9876543.210", 0, NULL},
};

static void fill_units_gpu(evt_record *e, trace_writer *w)
{
    e->device = trace_writer_intern(w, "/job:worker/replica:0/task:0/device:GPU:0");
    e->step = 1;
}

static void fill_units_pull(evt_record *e, trace_writer *w)
{
    e->var = trace_writer_intern(w, "w");
    e->peer = 0;
    e->id = 77;
    e->dur = 250000;
}

static void fill_units_step(evt_record *e, trace_writer *w)
{
    (void)w;
    e->step = 7;
}

/* A hand-made trace's events come out with ts (and dur) = their nanoseconds / 1000,
 * written with three decimals: the exporter's microseconds, not ms or ns. */
static void test_times_in_microseconds(const char *tpath, const char *jpath)
{
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(tpath, "{\"engine\":\"sim\"}", err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) return;
    add(w, EVT_CLOCK_SYNC, EVT_JOB_HUB, 0, -2500, NULL);
    add(w, EVT_TASK_START, EVT_JOB_WORKER, 0, 0, NULL);
    add(w, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 1234567, fill_units_gpu);
    add(w, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 1234567 + 2000000, fill_units_gpu);
    add(w, EVT_PULL_END, EVT_JOB_WORKER, 0, 4000000, fill_units_pull);   /* no begin */
    add(w, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 5000001, fill_units_step);
    add(w, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 0, 6000000, fill_units_step);
    add(w, EVT_BARRIER_RELEASE, EVT_JOB_WORKER, 0, 6000999, fill_units_step);
    add(w, EVT_SSP_WAIT, EVT_JOB_WORKER, 0, 6500000, fill_units_step);
    add(w, EVT_SSP_RELEASE, EVT_JOB_WORKER, 0, 6750000, fill_units_step);
    add(w, EVT_TASK_STOP, EVT_JOB_PS, 0, 7000000, NULL);  /* only to name its process */
    add(w, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, 9876543210, NULL);
    CHECK_MSG(trace_writer_close(w, err) == 0, "%s", err);
    trace_reader *r = trace_reader_open(tpath, err);
    CHECK_MSG(r != NULL, "%s", err);
    CHECK_MSG(r && chrome_export_file(r, jpath, err) == 0, "%s", r ? err : "not opened");
    trace_reader_close(r);
    json_error_t jerr;
    json_t *root = json_load_file(jpath, 0, &jerr);
    FILE *f = fopen(jpath, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (f) rewind(f);
    char *text = xmalloc(size > 0 ? (size_t)size + 1 : 1);
    size_t len = f && size > 0 ? fread(text, 1, (size_t)size, f) : 0;
    text[len] = '\0';
    if (f) fclose(f);
    json_t *evs = json_object_get(root, "traceEvents");
    for (size_t k = 0; k < DP_ARRAY_LEN(want_evs); k++) {
        const struct want_ev *we = &want_evs[k];
        json_t *ev, *hit = NULL;
        size_t i, n = 0;
        json_array_foreach(evs, i, ev) {
            const char *ph = json_string_value(json_object_get(ev, "ph"));
            const char *name = json_string_value(json_object_get(ev, "name"));
            if (ph && name && !strcmp(ph, we->ph) && !strcmp(name, we->name)) {
                hit = ev;
                n++;
            }
        }
        double ts = json_number_value(json_object_get(hit, "ts"));
        CHECK_MSG(n == 1 && json_is_number(json_object_get(hit, "ts")) &&
                  ts == (double)we->ts_ns / 1000.0,
                  "%s \"%s\" at %lld ns: ts %.6f us (%zu found), want %s us", we->ph,
                  we->name, (long long)we->ts_ns, ts, n, we->ts_text);
        char lit[96];
        if (we->dur_text) {
            double dur = json_number_value(json_object_get(hit, "dur"));
            CHECK_MSG(n == 1 && json_is_number(json_object_get(hit, "dur")) &&
                      dur == (double)we->dur_ns / 1000.0,
                      "%s \"%s\" lasting %lld ns: dur %.6f us, want %s us", we->ph, we->name,
                      (long long)we->dur_ns, dur, we->dur_text);
            snprintf(lit, sizeof lit, "\"ts\":%s,\"dur\":%s,", we->ts_text, we->dur_text);
        } else {
            snprintf(lit, sizeof lit, "\"ts\":%s,", we->ts_text);
        }
        CHECK_MSG(strstr(text, lit) != NULL, "%s \"%s\": the export has no %s (three decimals)",
                  we->ph, we->name, lit);
    }
    /* each task's process named as TensorFlow names its device's job and task */
    int ps_named = 0, worker_named = 0;
    json_t *ev;
    size_t i;
    json_array_foreach(evs, i, ev) {
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *pname = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
        if (!name || strcmp(name, "process_name") || !pname) continue;
        ps_named += !strcmp(pname, "/job:ps/replica:0/task:0");
        worker_named += !strcmp(pname, "/job:worker/replica:0/task:0");
    }
    CHECK_MSG(ps_named == 1 && worker_named == 1, "process names: /job:ps/replica:0/task:0 %d times, "
              "/job:worker/replica:0/task:0 %d times (want once each)", ps_named, worker_named);
    json_decref(root);
    free(text);
}

/* A worker's towers (one machine, several GPUs): the same step computed on two devices
 * at overlapping times is two compute slices, each from its own begin to its own end. */
static void test_tower_computes(const char *tpath, const char *jpath)
{
    char err[DP_ERRLEN];
    trace_writer *w = trace_writer_open(tpath, "{\"engine\":\"real\"}", err);
    CHECK_MSG(w != NULL, "%s", err);
    if (!w) return;
    uint32_t gpu[2] = {trace_writer_intern(w, "/job:worker/replica:0/task:0/device:GPU:0"),
                       trace_writer_intern(w, "/job:worker/replica:0/task:0/device:GPU:1")};
    const struct { int kind, dev; int64_t t; } evs_in[] = {
        {EVT_COMPUTE_BEGIN, 0, 1000}, {EVT_COMPUTE_BEGIN, 1, 1200},
        {EVT_COMPUTE_END, 0, 3000},   {EVT_COMPUTE_END, 1, 3700},
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(evs_in); i++) {
        evt_record e;
        evt_init(&e, (evt_kind)evs_in[i].kind, EVT_JOB_WORKER, 0);
        e.t = evs_in[i].t;
        e.device = gpu[evs_in[i].dev];
        e.step = 5;
        trace_writer_add(w, &e);
    }
    CHECK_MSG(trace_writer_close(w, err) == 0, "%s", err);
    trace_reader *r = trace_reader_open(tpath, err);
    CHECK_MSG(r && chrome_export_file(r, jpath, err) == 0, "%s", err);
    if (r) trace_reader_close(r);
    json_error_t jerr;
    json_t *root = json_load_file(jpath, 0, &jerr), *ev;
    int slices = 0, gpu0 = 0, gpu1 = 0;
    size_t i;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        if (!ph || !name || strcmp(ph, "X") || strcmp(name, "compute")) continue;
        int64_t ts = ns_of(json_object_get(ev, "ts")), dur = ns_of(json_object_get(ev, "dur"));
        slices++;
        gpu0 += ts == 1000 && dur == 2000;
        gpu1 += ts == 1200 && dur == 2500;
    }
    CHECK_MSG(slices == 2 && gpu0 == 1 && gpu1 == 1, "two towers' computes of step 5: %d slices, GPU:0's "
              "[1000, 3000] ns %d times, GPU:1's [1200, 3700] ns %d times (want once each)", slices, gpu0, gpu1);
    json_decref(root);
}

int main(void)
{
    char dir[] = "/tmp/dp_test_chrome.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char tpath[512], jpath[512], err[DP_ERRLEN];
    snprintf(tpath, sizeof tpath, "%s/run.dptrace", dir);
    snprintf(jpath, sizeof jpath, "%s/run.json", dir);

    /* 1: a realistic run */
    evgen g;
    evgen_run(&g, 2, 3, 4, 60, 1, 5);
    trace_writer *w = trace_writer_open(tpath, "{\"engine\":\"sim\",\"mode\":\"sync\"}", err);
    size_t pushes = 0, applies = 0, computes = 0;
    for (size_t i = 0; i < g.n; i++) {
        evt_record e = g.ev[i];
        applies += e.kind == EVT_APPLY || e.kind == EVT_DROP;   /* both are the ps's updates */
        computes += e.kind == EVT_COMPUTE_END;
        e.device = trace_writer_intern(w, evt_strtab_get(g.strs, e.device));
        e.var = trace_writer_intern(w, evt_strtab_get(g.strs, e.var));
        e.str = trace_writer_intern(w, evt_strtab_get(g.strs, e.str));
        pushes += e.kind == EVT_PUSH_BEGIN;
        trace_writer_add(w, &e);
    }
    CHECK(trace_writer_close(w, err) == 0);
    trace_reader *r = trace_reader_open(tpath, err);
    CHECK_MSG(r != NULL, "%s", err);
    CHECK(chrome_export_file(r, jpath, err) == 0);
    counts k;
    check_export(jpath, &k);
    CHECK_MSG(k.flows == pushes, "%zu flows for %zu pushes", k.flows, pushes);
    CHECK(k.b == (size_t)(3 * 60 * 4 * 2) && k.e == k.b);
    CHECK(k.x >= (size_t)(3 * 60 * (1 + 1 + 4 + 4)));   /* compute, barrier, sends, applies */
    /* each slice in its group: the applies and drops with their worker and staleness, the
     * computes */
    CHECK_MSG(k.applies == applies && applies > 0, "%zu applies exported as such, of %zu", k.applies, applies);
    CHECK_MSG(k.computes == computes && computes > 0, "%zu computes exported as such, of %zu", k.computes, computes);
    CHECK(k.c > 0 && k.i > 0 && k.m > 0 && k.meta_object);
    /* exporting twice gives the same bytes (the cursor is rewound) */
    char jpath2[600];
    snprintf(jpath2, sizeof jpath2, "%s.2", jpath);
    CHECK(chrome_export_file(r, jpath2, err) == 0);
    FILE *a = fopen(jpath, "rb"), *b = fopen(jpath2, "rb");
    int same = a && b;
    while (same) {
        int ca = fgetc(a), cb = fgetc(b);
        if (ca != cb) same = 0;
        if (ca == EOF) break;
    }
    if (a) fclose(a);
    if (b) fclose(b);
    CHECK(same);
    unlink(jpath2);
    trace_reader_close(r);
    evgen_free(&g);

    /* 2: the awkward cases */
    w = trace_writer_open(tpath, "not json {", err);
    add(w, EVT_TASK_START, EVT_JOB_WORKER, 0, 0, NULL);
    /* partially overlapping computes on one device, nested ones, identical ones */
    add(w, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 1000, fill_gpu);
    add(w, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0, 2000, fill_gpu);
    add(w, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 3000, fill_gpu);    /* step 3: no begin */
    add(w, EVT_COMPUTE_END, EVT_JOB_WORKER, 0, 1000 + 2500, NULL); /* no device, no begin */
    for (int i = 0; i < 50; i++) {
        int64_t t0 = 10000 + i * 700;
        evt_record e;
        evt_init(&e, EVT_COMPUTE_END, EVT_JOB_WORKER, i % 3);
        e.device = trace_writer_intern(w, "/job:worker/replica:0/task:0/device:GPU:0");
        e.t = t0 + 1000 + (i % 4) * 300;
        e.dur = 1000 + (i % 4) * 300;
        e.step = 100 + i;
        trace_writer_add(w, &e);
    }
    add(w, EVT_STEP_END, EVT_JOB_WORKER, 0, 60000, fill_nan);
    add(w, EVT_LOG, EVT_JOB_WORKER, 0, 60001, fill_evil);
    add(w, EVT_PULL_BEGIN, EVT_JOB_WORKER, 1, 61000, fill_pull);      /* never ends */
    add(w, EVT_PULL_END, EVT_JOB_WORKER, 2, 62000, fill_pull);        /* never began */
    add(w, EVT_PUSH_BEGIN, EVT_JOB_WORKER, 1, 63000, fill_pull);
    add(w, EVT_PUSH_BEGIN, EVT_JOB_WORKER, 1, 63500, fill_pull);      /* same id again */
    add(w, EVT_BARRIER_WAIT, EVT_JOB_WORKER, 1, 64000, NULL);         /* never released */
    add(w, EVT_APPLY, EVT_JOB_PS, 0, 64000, fill_nan);                /* no push: no flow */
    add(w, EVT_GLOBAL_STEP, EVT_JOB_PS, 0, 65000, NULL);
    /* the chief's evaluations: the simulator's (no accuracy) and a real one, each a slice
     * as long as its duration; only the real one an accuracy counter */
    evt_record ev_sim, ev_real;
    evt_init(&ev_sim, EVT_EVAL, EVT_JOB_WORKER, 0);
    ev_sim.t = 66000;
    ev_sim.dur = 1500;
    ev_sim.value = ev_sim.value2 = NAN;
    ev_sim.step = 7;
    trace_writer_add(w, &ev_sim);
    ev_real = ev_sim;
    ev_real.t = 68000;
    ev_real.dur = 500;
    ev_real.value = 0.75;
    ev_real.step = 8;
    trace_writer_add(w, &ev_real);
    add(w, EVT_CLUSTER_STOP, EVT_JOB_CLIENT, 0, 70000, NULL);
    CHECK(trace_writer_close(w, err) == 0);
    r = trace_reader_open(tpath, err);
    CHECK(chrome_export_file(r, jpath, err) == 0);
    check_export(jpath, &k);
    CHECK(k.flows == 0);
    CHECK(k.b == 4 && k.e == 4);
    /* the compute lanes were needed, and the hostile string survived as valid JSON */
    json_error_t jerr;
    json_t *root = json_load_file(jpath, 0, &jerr);
    int lanes = 0, text_ok = 0, evals = 0, accuracy = 0;
    json_t *evs = json_object_get(root, "traceEvents"), *ev;
    size_t i;
    json_array_foreach(evs, i, ev) {
        const char *name = json_string_value(json_object_get(ev, "name"));
        json_t *args = json_object_get(ev, "args");
        if (name && !strcmp(name, "evaluation")) {
            int64_t ts = ns_of(json_object_get(ev, "ts")), dur = ns_of(json_object_get(ev, "dur"));
            int64_t step = json_integer_value(json_object_get(args, "step"));
            evals += (step == 7 && ts == 64500 && dur == 1500) || (step == 8 && ts == 67500 && dur == 500);
        }
        accuracy += name && !strcmp(name, "accuracy");
        if (name && !strcmp(name, "thread_name") &&
            strstr(json_string_value(json_object_get(args, "name")), "compute #2"))
            lanes = 1;
        const char *text = json_string_value(json_object_get(args, "text"));
        if (text && strstr(text, "quote \" backslash \\ nl \n") && strstr(text, "\xf0\x9f\x98\x80 ok"))
            text_ok = 1;
    }
    CHECK(lanes);
    CHECK(text_ok);
    CHECK_MSG(evals == 2 && accuracy == 1, "%d evaluation slices as written, %d accuracy counters", evals,
              accuracy);
    CHECK(json_is_string(json_object_get(json_object_get(root, "otherData"), "metadata")));
    json_decref(root);
    CHECK(chrome_export_file(r, "/nonexistent-dir/x.json", err) != 0 &&
          strstr(err, "/nonexistent-dir/x.json"));
    trace_reader_close(r);

    /* 3: units */
    test_times_in_microseconds(tpath, jpath);
    test_tower_computes(tpath, jpath);
    unlink(tpath);
    unlink(jpath);
    rmdir(dir);
    return CHECK_DONE();
}
