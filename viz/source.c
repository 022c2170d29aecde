/* source.c — viz_source: one interface over three ways of getting events. A recorded
 * trace (trace_reader: O(log n) seeks, state_at with the reader's snapshots), an
 * in-memory array (tests) and a live hub subscription (events appended as they arrive;
 * state snapshots every VIZ_SNAP events so that scrubbing back stays fast). Each source
 * also feeds the model (model.c) once per event. One thread per source. */
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

#define VIZ_SNAP 65536

static const char *trace_str(const void *ctx, uint32_t id)
{
    return trace_reader_string(ctx, id);
}

static const char *mem_str(const void *ctx, uint32_t id)
{
    return evt_strtab_get(ctx, id);
}

viz_source *viz_source_open(const char *path, char *err)
{
    trace_reader *r = trace_reader_open(path, err);
    if (!r) return NULL;
    viz_source *s = xcalloc(1, sizeof *s);
    s->kind = VIZ_SRC_TRACE;
    s->r = r;
    evt_state_init(&s->cur);
    evt_state_init(&s->out);
    viz_model_init(&s->m, trace_reader_t1(r));
    viz_model_metadata(&s->m, trace_reader_metadata(r));
    s->lesson = viz_lesson_new(trace_reader_metadata(r));
    evt_record e;
    trace_reader_rewind(r);
    while (trace_reader_next(r, &e) > 0) viz_model_add(&s->m, &e, trace_str, r);
    return s;
}

viz_source *viz_source_new_mem(const evt_strtab *strings, const char *metadata_json)
{
    viz_source *s = xcalloc(1, sizeof *s);
    s->kind = VIZ_SRC_MEM;
    s->strs = strings;
    evt_state_init(&s->cur);
    evt_state_init(&s->out);
    viz_model_init(&s->m, 0);
    viz_model_metadata(&s->m, metadata_json);
    s->lesson = viz_lesson_new(metadata_json);
    return s;
}

viz_source *viz_source_connect(const char *addr, int timeout_ms, char *err)
{
    evt_sub *sub = evt_sub_connect(addr, timeout_ms, err);
    if (!sub) return NULL;
    viz_source *s = viz_source_new_mem(evt_sub_strings(sub), NULL);
    s->kind = VIZ_SRC_LIVE;
    s->sub = sub;
    snprintf(s->m.title, sizeof s->m.title, "live from %s", addr);
    return s;
}

void viz_source_free(viz_source *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_snaps; i++) evt_state_release(&s->snaps[i]);
    free(s->snaps);
    evt_state_release(&s->cur);
    evt_state_release(&s->out);
    free(s->ev);
    viz_model_release(&s->m);
    viz_lesson_free(s->lesson);
    trace_reader_close(s->r);
    evt_sub_close(s->sub);
    free(s);
}

void viz_source_append(viz_source *s, const evt_record *e)
{
    dp_assert("viz: append needs an in-memory source", s->kind != VIZ_SRC_TRACE);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->ev = xrealloc(s->ev, s->cap * sizeof *s->ev);
    }
    s->ev[s->n++] = *e;
    viz_model_add(&s->m, e, mem_str, s->strs);
    /* A live run has no trace metadata: its lesson rides in CLUSTER_START's config. */
    if (e->kind == EVT_CLUSTER_START && !viz_lesson_present(s)) {
        const char *cfg = mem_str(s->strs, e->str);
        if (cfg && strstr(cfg, "\"lesson\"")) {
            viz_lesson_free(s->lesson);
            s->lesson = viz_lesson_new(cfg);
        }
    }
}

int viz_source_pump(viz_source *s, char *err)
{
    if (s->kind != VIZ_SRC_LIVE || s->sub_closed) return s->sub_closed ? DP_ECLOSED : 0;
    int rc = evt_sub_pump(s->sub, 0, err), got = 0;
    evt_record e;
    while (evt_sub_next(s->sub, &e) == 1) {
        viz_source_append(s, &e);
        got++;
    }
    if (rc == DP_ECLOSED) {
        s->sub_closed = 1;
        return got ? got : DP_ECLOSED;
    }
    return rc < 0 ? rc : got;
}

int viz_source_is_live(const viz_source *s) { return s->kind == VIZ_SRC_LIVE; }

int64_t viz_source_t0(const viz_source *s)
{
    if (s->kind == VIZ_SRC_TRACE) return trace_reader_t0(s->r);
    return s->n ? s->ev[0].t : 0;
}

int64_t viz_source_origin(const viz_source *s)
{
    return s->m.t_start >= 0 ? s->m.t_start : viz_source_t0(s);
}

int64_t viz_source_story_start(const viz_source *s)
{
    return s->m.t_story >= 0 ? s->m.t_story : viz_source_t0(s);
}

int64_t viz_source_t1(const viz_source *s)
{
    if (s->kind == VIZ_SRC_TRACE) return trace_reader_t1(s->r);
    return s->m.t_last;
}

uint64_t viz_source_events(const viz_source *s)
{
    return s->kind == VIZ_SRC_TRACE ? trace_reader_count(s->r) : s->n;
}

const char *viz_source_damage(const viz_source *s)
{
    return s->kind == VIZ_SRC_TRACE ? trace_reader_damage(s->r) : NULL;
}

const char *viz_source_string(const viz_source *s, uint32_t id)
{
    if (s->kind == VIZ_SRC_TRACE) return trace_reader_string(s->r, id);
    return s->strs ? evt_strtab_get(s->strs, id) : "";
}

/* Number of in-memory events with time <= t. */
static size_t mem_upper(const viz_source *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ev[mid].t <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static size_t mem_lower(const viz_source *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ev[mid].t < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void mem_advance(viz_source *s, size_t target)
{
    while (s->cur_n < target) {
        if (s->cur_n % VIZ_SNAP == 0 && s->cur_n / VIZ_SNAP == s->n_snaps) {
            s->snaps = xrealloc(s->snaps, (s->n_snaps + 1) * sizeof *s->snaps);
            evt_state_init(&s->snaps[s->n_snaps]);
            evt_state_copy(&s->snaps[s->n_snaps++], &s->cur);
        }
        evt_state_apply(&s->cur, &s->ev[s->cur_n++]);
    }
}

const evt_state *viz_source_state_at(viz_source *s, int64_t t)
{
    if (s->kind == VIZ_SRC_TRACE) {
        if (!s->out_valid || s->out_t != t) {
            trace_reader_state_at(s->r, t, &s->out);
            s->out_t = t;
            s->out_valid = 1;
        }
        return &s->out;
    }
    size_t target = mem_upper(s, t);
    if (target < s->cur_n) {
        size_t k = target / VIZ_SNAP;
        if (k < s->n_snaps) {
            evt_state_copy(&s->cur, &s->snaps[k]);
            s->cur_n = k * VIZ_SNAP;
        } else {
            evt_state_reset(&s->cur);
            s->cur_n = 0;
        }
    }
    mem_advance(s, target);
    return &s->cur;
}

size_t viz_source_scan(viz_source *s, int64_t a, int64_t b, size_t max, viz_scan_fn fn, void *ctx)
{
    size_t n = 0;
    if (s->kind == VIZ_SRC_TRACE) {
        evt_record e;
        if (trace_reader_seek(s->r, a) < 0) return 0;
        while (n < max && trace_reader_next(s->r, &e) > 0) {
            if (e.t > b) break;
            if (e.t < a) continue;
            fn(ctx, &e);
            n++;
        }
        return n;
    }
    for (size_t i = mem_lower(s, a); i < s->n && n < max && s->ev[i].t <= b; i++, n++)
        fn(ctx, &s->ev[i]);
    return n;
}

typedef struct seek_ctx { int64_t t, best; int dir, by_step; int64_t step; } seek_ctx;

static int64_t event_step(const evt_record *e)
{
    return e->kind == EVT_GLOBAL_STEP || e->kind == EVT_APPLY ? e->step : -1;
}

static void seek_cb(void *ctx, const evt_record *e)
{
    seek_ctx *c = ctx;
    if (c->by_step && event_step(e) < c->step) return;
    if (c->dir > 0 && e->t > c->t && (c->best < 0 || e->t < c->best)) c->best = e->t;
    if (c->dir < 0 && e->t < c->t && e->t > c->best) c->best = e->t;
}

int64_t viz_source_time_of_step(viz_source *s, int64_t step)
{
    const viz_model *m = &s->m;
    double best = -1;
    int b = 0;
    for (b = 0; b < m->nb; b++) {
        if (m->gstep.v[b] > best) best = m->gstep.v[b];
        if (best >= (double)step) break;
    }
    if (b >= m->nb) return viz_source_t1(s);
    seek_ctx c = {(int64_t)b * m->bw - 1, -1, 1, 1, step};
    viz_source_scan(s, (int64_t)b * m->bw, (int64_t)(b + 1) * m->bw, (size_t)-1, seek_cb, &c);
    return c.best >= 0 ? c.best : (int64_t)b * m->bw;
}

int64_t viz_source_seek_event(viz_source *s, int64_t t, int dir, int by_step)
{
    int64_t t0 = viz_source_t0(s), t1 = viz_source_t1(s);
    if (by_step) {
        int64_t gs = viz_source_state_at(s, t)->global_step;
        if (dir > 0) {
            int64_t nt = viz_source_time_of_step(s, gs + 1);
            return nt > t ? nt : t;
        }
        int64_t at_gs = gs > 0 ? viz_source_time_of_step(s, gs) : t0;
        if (at_gs < t) return at_gs;
        return gs > 1 ? viz_source_time_of_step(s, gs - 1) : t0;
    }
    seek_ctx c = {t, -1, dir, 0, 0};
    if (dir > 0) {
        for (int64_t w = s->m.bw; c.best < 0 && t + 1 <= t1; w *= 4) {
            viz_source_scan(s, t + 1, t + w, 4096, seek_cb, &c);
            if (t + w >= t1) break;
        }
        return c.best >= 0 ? c.best : t;
    }
    for (int64_t w = s->m.bw; c.best < 0; w *= 4) {
        int64_t a = t - w < t0 ? t0 : t - w;
        viz_source_scan(s, a, t - 1, (size_t)-1, seek_cb, &c);
        if (a <= t0) break;
    }
    return c.best >= 0 ? c.best : t;
}
