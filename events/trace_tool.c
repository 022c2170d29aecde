/* trace_tool.c — `trace info`, `trace validate` and `trace export` as library calls (see
 * trace_tool.h): open, replay or decode, print, close. Every function owns its reader
 * and state for the length of the call and frees them on every path. */
#include "events/trace_tool.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "events/chrome.h"
#include "events/event.h"
#include "events/state.h"
#include "events/trace.h"

static double duration_s(const trace_reader *r)
{
    return trace_reader_count(r) ? (double)(trace_reader_t1(r) - trace_reader_t0(r)) / 1e9 : 0.0;
}

/* Fills rep (when not NULL) from an open reader. */
static void report(const trace_reader *r, trace_tool_report *rep)
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

/* Replays the whole trace into st. */
static void replay(trace_reader *r, evt_state *st)
{
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) == 1) evt_state_apply(st, &e);
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
    const char *dmg = trace_reader_damage(r);
    json_object_set_new(o, "damage", dmg ? json_string(dmg) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!s) return dp_fail(err, DP_ERR, "cannot format JSON");
    fputs(s, out);
    fputc('\n', out);
    free(s);
    return 0;
}

static void info_text(FILE *out, trace_reader *r, const evt_state *st, const char *path)
{
    fprintf(out, "trace:     %s (%zu blocks)\n", path, trace_reader_block_count(r));
    fprintf(out, "metadata:  %s\n", trace_reader_metadata(r));
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
    report(r, rep);
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
    report(r, rep);
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

int trace_tool_export_chrome(const char *path, const char *out_path, trace_tool_report *rep,
                             char *err)
{
    report_clear(rep);
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return DP_EINVAL;
    int rc = chrome_export_file(r, out_path, err);
    report(r, rep);
    trace_reader_close(r);
    return rc;
}
