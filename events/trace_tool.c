/* trace_tool.c — `trace info`, `trace validate` and `trace export` as library calls (see
 * trace_tool.h): open, replay or decode, print, close. Every function owns its reader
 * and state for the length of the call and frees them on every path. */
#include "events/trace_tool.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/dp.h"
#include "events/caption.h"
#include "events/chrome.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"

static double duration_s(const trace_reader *r)
{
    return trace_reader_count(r) ? (double)(trace_reader_t1(r) - trace_reader_t0(r)) / 1e9 : 0.0;
}

void trace_tool_report_fill(const trace_reader *r, trace_tool_report *rep)
{
    if (!rep) return;
    rep->events = trace_reader_count(r);
    rep->blocks = trace_reader_block_count(r);
    rep->duration_s = duration_s(r);
    const char *dmg = trace_reader_damage(r);
    snprintf(rep->damage, sizeof rep->damage, "%s", dmg ? dmg : "");
}

static void report_clear(trace_tool_report *rep)
{
    if (rep) memset(rep, 0, sizeof *rep);
}

const int trace_tool_phase_order[TRACE_TOOL_PHASES] = {
    EVT_PHASE_COMPUTING, EVT_PHASE_PULLING, EVT_PHASE_PUSHING, EVT_PHASE_BARRIER,
    EVT_PHASE_SSP,       EVT_PHASE_PACED,   EVT_PHASE_IDLE,    EVT_PHASE_DEAD};

const char *trace_tool_phase_label(int phase)
{
    return phase == EVT_PHASE_SSP ? "ssp wait" : evt_phase_name(phase);
}

void trace_tool_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

int trace_tool_json_line(FILE *out, json_t *o, char *err)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!s) return dp_fail(err, DP_ERR, "cannot format JSON");
    fputs(s, out);
    fputc('\n', out);
    free(s);
    return 0;
}

/* Replays the whole trace into st. */
static void replay(trace_reader *r, evt_state *st)
{
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) evt_state_apply(st, &e);
}

/* Per source task: what a trace can say about delivery (docs/reliability.md, "Hub
 * restart"): its records (less drop reports and the hub's clock syncs), the latest drop
 * count it reported, the resume point and definition copies of its first report after a
 * reconnect, and the hub's note of how far it recorded the task when it stopped. */
static json_t *delivery_json(trace_reader *r)
{
    enum { MAXT = 1024 };
    struct tk { int job, task; int64_t records, dropped, resumed_at, copies, recorded; } *v =
        xcalloc(MAXT, sizeof *v);
    size_t n = 0;
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) {
        size_t i = 0;
        while (i < n && (v[i].job != e.job || v[i].task != e.task)) i++;
        if (i == n) {
            if (n == MAXT) continue;
            v[n++] = (struct tk){ e.job, e.task, 0, 0, -1, 0, -1 };
        }
        if (e.kind == EVT_CLOCK_SYNC) continue;
        if (e.kind != EVT_EVENTS_DROPPED) {
            v[i].records++;
            continue;
        }
        if (e.peer_job == EVT_JOB_HUB && e.value == 2) {
            v[i].recorded = e.step;
            continue;
        }
        v[i].dropped = e.bytes;
        if (e.value == 1 && v[i].resumed_at < 0) v[i].resumed_at = e.step;
        if (e.value == 1) v[i].copies += (int64_t)e.id;
    }
    static const char *jobs[] = { "ps", "worker", "client", "hub" };
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s:%d", v[i].job <= EVT_JOB_HUB ? jobs[v[i].job] : "?", v[i].task);
        json_t *o = json_object();
        json_object_set_new(o, "task", json_string(name));
        json_object_set_new(o, "events", json_integer(v[i].records - v[i].copies));
        json_object_set_new(o, "definitions_resent", json_integer(v[i].copies));
        json_object_set_new(o, "dropped", json_integer(v[i].dropped));
        json_object_set_new(o, "resumed_at", v[i].resumed_at < 0 ? json_null() : json_integer(v[i].resumed_at));
        json_object_set_new(o, "hub_recorded", v[i].recorded < 0 ? json_null() : json_integer(v[i].recorded));
        json_array_append_new(a, o);
    }
    free(v);
    return a;
}

static int info_json(FILE *out, trace_reader *r, const evt_state *st, const char *path, char *err)
{
    json_t *o = json_object();
    json_error_t jerr;
    const char *meta = trace_reader_metadata(r);
    json_t *m = json_loads(meta, JSON_DECODE_ANY, &jerr);
    json_t *file = json_string(path);      /* NULL when the name is not UTF-8 */
    json_object_set_new(o, "file", file ? file : json_null());
    if (!m) m = json_string(meta);
    json_object_set_new(o, "metadata", m ? m : json_null());
    json_object_set_new(o, "duration_s", json_real(duration_s(r)));
    json_object_set_new(o, "events", json_integer((json_int_t)st->events));
    json_object_set_new(o, "dropped", json_integer((json_int_t)st->events_dropped));
    json_t *counts = json_object();
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        json_object_set_new(counts, evt_kind_name(k), json_integer((json_int_t)st->counts[k]));
    if (st->counts[0]) json_object_set_new(counts, "unknown", json_integer((json_int_t)st->counts[0]));
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "blocks", json_integer((json_int_t)trace_reader_block_count(r)));
    json_object_set_new(o, "ps", json_integer(st->n_ps));
    json_object_set_new(o, "workers", json_integer(st->n_workers));
    json_object_set_new(o, "global_step", json_integer((json_int_t)st->global_step));
    json_object_set_new(o, "tasks", delivery_json(r));
    const char *dmg = trace_reader_damage(r);
    json_object_set_new(o, "damage", dmg ? json_string(dmg) : json_null());
    return trace_tool_json_line(out, o, err);
}

/* A scalar of the metadata as a person reads it: a string as it is when it holds no
 * control character (the file is not trusted with the terminal), else JSON-escaped. */
static void meta_scalar(FILE *out, const json_t *v)
{
    const char *s = json_string_value(v);
    int plain = s != NULL && *s;
    for (const char *p = s; plain && *p; p++) plain = (unsigned char)*p >= 0x20 && *p != 0x7f;
    if (plain) {
        fputs(s, out);
        return;
    }
    char *j = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(10));
    fputs(j ? j : "?", out);
    free(j);
}

/* The metadata's object V, one key a line, nested objects indented under their key; a
 * lesson is summed up (its title and how many captions, pauses and questions). */
static void meta_object(FILE *out, json_t *v, int depth)
{
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        char key[64];   /* the key as printed: cut short, control characters as '?' */
        snprintf(key, sizeof key, "%s", k);
        trace_tool_printable(key);
        int w = 20 - 2 * depth, nest = json_is_object(x) && strcmp(k, "lesson") && depth < 4;
        if (nest) fprintf(out, "%*s%s\n", 2 + 2 * depth, "", key);
        else fprintf(out, "%*s%-*s ", 2 + 2 * depth, "", w > 0 ? w : 0, key);
        json_t *title = json_object_get(x, "title");
        if (json_is_object(x) && !strcmp(k, "lesson") && json_is_string(title)) {
            meta_scalar(out, title);
            fprintf(out, " (lesson %lld: %zu captions, %zu pauses, %zu questions)\n",
                    (long long)json_integer_value(json_object_get(x, "number")),
                    json_array_size(json_object_get(x, "captions")),
                    json_array_size(json_object_get(x, "pauses")),
                    json_array_size(json_object_get(x, "questions")));
        } else if (nest) {
            meta_object(out, x, depth + 1);
        } else if (!strcmp(k, "start_unix_ns") && json_is_integer(x)) {
            time_t t = (time_t)(json_integer_value(x) / 1000000000);
            struct tm tm;
            char when[32] = "?";
            if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
            fprintf(out, "%lld (%s)\n", (long long)json_integer_value(x), when);
        } else {
            meta_scalar(out, x);
            fputc('\n', out);
        }
    }
}

static void info_text(FILE *out, trace_reader *r, const evt_state *st, const char *path)
{
    fprintf(out, "trace:     %s (%zu blocks)\n", path, trace_reader_block_count(r));
    json_t *meta = json_loads(trace_reader_metadata(r), 0, NULL);
    if (json_is_object(meta) && json_object_size(meta)) {
        fprintf(out, "metadata:\n");
        meta_object(out, meta, 0);
    } else {   /* none, or not an object: as the file holds it */
        fprintf(out, "metadata:  %s\n", trace_reader_metadata(r));
    }
    json_decref(meta);
    fprintf(out, "duration:  %.3f s\n", duration_s(r));
    fprintf(out, "events:    %llu\n", (unsigned long long)st->events);
    fprintf(out, "dropped:   %lld (reported by tasks)\n", (long long)st->events_dropped);
    fprintf(out, "cluster:   %d ps, %d workers; global step %lld\n", st->n_ps, st->n_workers,
            (long long)st->global_step);
    if (trace_reader_damage(r)) fprintf(out, "damage:    %s\n", trace_reader_damage(r));
    fprintf(out, "counts:\n");
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        if (st->counts[k])
            fprintf(out, "  %-20s %llu\n", evt_kind_name(k), (unsigned long long)st->counts[k]);
    if (st->counts[0])
        fprintf(out, "  %-20s %llu\n", "unknown", (unsigned long long)st->counts[0]);
}

int trace_tool_info(FILE *out, const char *path, int json, trace_tool_report *rep, char *err)
{
    report_clear(rep);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    evt_state st;
    evt_state_init(&st);
    replay(r, &st);
    int rc = 0;
    if (json) rc = info_json(out, r, &st, path, err);
    else info_text(out, r, &st, path);
    trace_tool_report_fill(r, rep);
    evt_state_release(&st);
    trace_reader_close(r);
    return rc;
}

int trace_tool_validate(FILE *out, const char *path, trace_tool_report *rep, char *err)
{
    report_clear(rep);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    /* decode every block: checksums were verified at open, this catches the rest */
    evt_record e;
    uint64_t n = 0;
    int rc;
    while ((rc = trace_reader_next(r, &e)) == 1) n++;
    trace_tool_report_fill(r, rep);
    const char *dmg = trace_reader_damage(r);
    if (dmg || rc < 0) {
        rc = dp_fail(err, DP_ECORRUPT, "%s: %s", path, dmg ? dmg : "read error");
        goto done;
    }
    fprintf(out, "%s: ok, %llu events in %zu blocks, %.3f s\n", path, (unsigned long long)n,
            trace_reader_block_count(r), duration_s(r));
    rc = 0;
done:
    trace_reader_close(r);
    return rc;
}

/* 1 when out_path names the file at path (the same device and inode, through any
 * spelling: a link, "./T", another directory). A missing out_path is not the same. */
static int same_file(const char *path, const char *out_path)
{
    struct stat a, b;
    return stat(path, &a) == 0 && stat(out_path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int trace_tool_export_chrome(const char *path, const char *out_path, trace_tool_report *rep,
                             char *err)
{
    report_clear(rep);
    /* fopen(out, "w") would truncate the trace before it is read */
    if (strcmp(out_path, "-") != 0 && same_file(path, out_path))
        return dp_fail(err, DP_EINVAL, "output %s is the input trace %s: refusing to overwrite "
                       "it", out_path, path);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    int rc = chrome_export_file(r, out_path, err);
    trace_tool_report_fill(r, rep);
    trace_reader_close(r);
    return rc;
}

/* ---- captions ------------------------------------------------------------------------ */

typedef struct track_line {
    int64_t t;          /* ns since the first event; -1: the run never reached the step */
    int64_t step;
    const char *rule;   /* "lesson" or evt_caption_rule_name() */
    const char *text;   /* borrowed from the captioner or the metadata JSON */
} track_line;

/* The lesson's authored captions (json borrowed), in file order; *n gets the count. */
static track_line *lesson_lines(json_t *meta, size_t *n)
{
    *n = 0;
    json_t *lesson = json_object_get(meta, "lesson");
    if (!lesson) lesson = json_object_get(json_object_get(meta, "config"), "lesson");
    json_t *caps = json_object_get(lesson, "captions");
    size_t k = json_array_size(caps);
    track_line *v = xcalloc(k + 1, sizeof *v);
    for (size_t i = 0; i < k; i++) {
        json_t *c = json_array_get(caps, i);
        json_t *st = json_object_get(c, "step"), *tx = json_object_get(c, "text");
        if (!json_is_integer(st) || !json_is_string(tx)) continue;
        v[*n].t = -1;
        v[*n].step = (int64_t)json_integer_value(st);
        v[*n].rule = "lesson";
        v[*n].text = json_string_value(tx);
        (*n)++;
    }
    return v;
}

static int track_cmp(const void *a, const void *b)
{
    const track_line *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    int lx = strcmp(x->rule, "lesson") == 0, ly = strcmp(y->rule, "lesson") == 0;
    if (lx != ly) return lx ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return 0;
}

int trace_tool_captions(FILE *out, const char *path, int json, trace_tool_report *rep, char *err)
{
    report_clear(rep);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    /* Every caption kept: at most one per rule a global step, and a step per event. */
    uint64_t n_ev = trace_reader_count(r);
    size_t cap = (size_t)(n_ev < 1000000 ? n_ev : 1000000) + EVT_CAPTION_RULE_COUNT;
    evt_captioner *c = evt_captioner_new(trace_reader_metadata(r), evt_caption_trace_str, r, cap);
    json_error_t jerr;
    json_t *meta = json_loads(trace_reader_metadata(r), JSON_DECODE_ANY, &jerr);
    size_t n_lesson;
    track_line *lesson = lesson_lines(meta, &n_lesson);
    int64_t t0 = trace_reader_t0(r);
    evt_record e;
    trace_reader_rewind(r);
    size_t next = 0; /* lesson captions sorted by step get the time their step is reached */
    qsort(lesson, n_lesson, sizeof *lesson, track_cmp);
    while (trace_reader_next(r, &e) == 1) {
        evt_captioner_add(c, &e);
        if (e.kind == EVT_GLOBAL_STEP)
            while (next < n_lesson && lesson[next].step <= e.step) lesson[next++].t = e.t - t0;
    }
    size_t n_rule = evt_captioner_count(c), n = 0, unreached = n_lesson - next;
    track_line *v = xcalloc(n_rule + n_lesson + 1, sizeof *v);
    for (size_t i = 0; i < n_rule; i++) {
        const evt_caption *k = evt_captioner_get(c, i);
        v[n++] = (track_line){k->t - t0, k->step, evt_caption_rule_name(k->rule), k->text};
    }
    memcpy(v + n, lesson, n_lesson * sizeof *v);
    n += n_lesson;
    qsort(v, n, sizeof *v, track_cmp);
    int rc = 0;
    if (json) {
        json_t *o = json_object(), *arr = json_array();
        json_t *file = json_string(path);
        json_object_set_new(o, "file", file ? file : json_null());
        for (size_t i = 0; i < n; i++) {
            json_t *l = json_object();
            json_object_set_new(l, "t_s", v[i].t < 0 ? json_null() : json_real((double)v[i].t / 1e9));
            json_object_set_new(l, "step", json_integer((json_int_t)v[i].step));
            json_object_set_new(l, "rule", json_string(v[i].rule));
            json_t *tx = json_string(v[i].text);
            json_object_set_new(l, "text", tx ? tx : json_string(""));
            json_array_append_new(arr, l);
        }
        json_object_set_new(o, "captions", arr);
        json_object_set_new(o, "lesson_captions", json_integer((json_int_t)n_lesson));
        json_object_set_new(o, "rule_captions", json_integer((json_int_t)n_rule));
        json_object_set_new(o, "unreached", json_integer((json_int_t)unreached));
        rc = trace_tool_json_line(out, o, err);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (v[i].t < 0) fprintf(out, "%10s    ", "-");
            else fprintf(out, "%10.3f s  ", (double)v[i].t / 1e9);
            fprintf(out, "step %-6lld %-11s %s\n", (long long)v[i].step, v[i].rule, v[i].text);
        }
        if (evt_captioner_dropped(c))
            fprintf(out, "(%llu older captions dropped)\n", (unsigned long long)evt_captioner_dropped(c));
    }
    trace_tool_report_fill(r, rep);
    free(v);
    free(lesson);
    json_decref(meta);
    evt_captioner_free(c);
    trace_reader_close(r);
    return rc;
}
