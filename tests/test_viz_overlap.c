/* test_viz_overlap.c — a worker computing and transferring at once (a pipelined push, a
 * prefetch's pull: docs/runtime.md, "Pipelining and prefetch"), in the viewer, on a
 * hand-made run: worker 0 computes 2..20 ms; it pushes 6..10 ms and pulls (the next
 * step's parameters) 12..16 ms, both inside the compute. Its box must say "computing +
 * pushing", then "computing + pulling", then plain "computing" once the transfer is over;
 * and a worker that only computes says "computing" alone. The words come from the text
 * hook (every viz_text call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "viz/internal.h"
#include "vizpix.h"

extern void FcFini(void) __attribute__((weak));

#define MS 1000000

static void add(viz_source *s, int kind, int w, int64_t t, int peer, uint32_t var)
{
    evt_record e;
    evt_init(&e, (evt_kind)kind, EVT_JOB_WORKER, w);
    e.t = t;
    e.step = 1;
    e.peer = peer;
    e.peer_job = peer >= 0 ? EVT_JOB_PS : 0;
    e.var = var;
    e.bytes = peer >= 0 ? 40 : 0;
    e.id = (uint64_t)t;
    viz_source_append(s, &e);
}

static viz_source *fixture(evt_strtab *strs, int W)
{
    char meta[96];
    snprintf(meta, sizeof meta, "{\"engine\":\"real\",\"mode\":\"async\",\"ps\":1,\"workers\":%d}", W);
    viz_source *s = viz_source_new_mem(strs, meta);
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.str = evt_strtab_intern(strs, "localhost");
    e.t = 1000;
    viz_source_append(s, &e);
    for (int w = 0; w < W; w++) {
        e.job = EVT_JOB_WORKER;
        e.task = w;
        e.t = 2000 + w;
        viz_source_append(s, &e);
    }
    uint32_t sb = evt_strtab_intern(strs, "softmax/biases");
    for (int w = 0; w < W; w++) add(s, EVT_COMPUTE_BEGIN, w, 2 * MS, -1, 0);
    add(s, EVT_PUSH_BEGIN, 0, 6 * MS, 0, sb);
    add(s, EVT_PUSH_END, 0, 10 * MS, 0, sb);
    add(s, EVT_PULL_BEGIN, 0, 12 * MS, 0, sb);
    add(s, EVT_PULL_END, 0, 16 * MS, 0, sb);
    for (int w = 0; w < W; w++) add(s, EVT_COMPUTE_END, w, 20 * MS, -1, 0);
    return s;
}

/* What the frame at t wrote. */
static void words_at(viz_source *s, int64_t t, vizpix_text *log)
{
    viz_view v;
    viz_view_init(&v);
    v.t = t;
    cairo_surface_t *img = vizpix_draw_logged(s, &v, log);
    cairo_surface_destroy(img);
}

int main(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = fixture(strs, 2);
    vizpix_text log;
    words_at(s, 8 * MS, &log);
    CHECK_MSG(vizpix_wrote(&log, "computing + pushing"), "8 ms: worker 0 computes and pushes at once");
    CHECK_MSG(!vizpix_wrote(&log, "computing + pulling"), "8 ms: no pull yet");
    words_at(s, 14 * MS, &log);
    CHECK_MSG(vizpix_wrote(&log, "computing + pulling"), "14 ms: worker 0 computes and pulls (a prefetch)");
    CHECK_MSG(vizpix_wrote(&log, "computing"), "14 ms: worker 1 computes");
    words_at(s, 18 * MS, &log);
    CHECK_MSG(vizpix_wrote(&log, "computing") && !strstr(log.all, "computing +"),
              "18 ms: the transfers are over: plain computing");
    viz_source_free(s);
    /* four workers: narrower boxes, where the whole phrase does not fit; the short one does */
    s = fixture(strs, 4);
    words_at(s, 8 * MS, &log);
    CHECK_MSG(vizpix_wrote(&log, "computing + pushing") || vizpix_wrote(&log, "compute + push"),
              "4 workers, 8 ms: worker 0's box still says it computes and pushes");
    words_at(s, 14 * MS, &log);
    CHECK_MSG(vizpix_wrote(&log, "computing + pulling") || vizpix_wrote(&log, "compute + pull"),
              "4 workers, 14 ms: and that it computes and pulls");
    viz_source_free(s);
    evt_strtab_free(strs);
    cairo_debug_reset_static_data();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
