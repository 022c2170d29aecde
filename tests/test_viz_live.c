/* test_viz_live.c — the viewer's live source against a real hub, in one process: a hub
 * thread, two task emitters producing a small run, a viz live source that attaches
 * mid-run (gets the catch-up state, then live events) and draws them; closing it while
 * the run goes on must not disturb the hub, the emitters or the recorded trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/dp.h"
#include "hub/hub.h"
#include "hub/stream.h"
#include "viz/internal.h"

/* fontconfig's cleanup, when the process has it (through cairo); weak so that the
 * test links without -lfontconfig. */
extern void FcFini(void) __attribute__((weak));

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One worker step: pull, compute, push, apply on the ps. */
static int emit_step(evt_emitter *wk, evt_emitter *ps, uint32_t var, uint32_t dev, int step)
{
    evt_record e;
    int n = 0;
    evt_init(&e, EVT_PULL_BEGIN, EVT_JOB_WORKER, 0);
    e.peer_job = EVT_JOB_PS; e.peer = 0; e.var = var; e.step = step; e.id = (uint64_t)step * 2 + 1;
    n += evt_emit(wk, &e);
    sleep_ms(2);
    e.kind = EVT_PULL_END; e.t = 0; e.bytes = 4096; e.dur = 2000000;
    n += evt_emit(wk, &e);
    evt_init(&e, EVT_COMPUTE_BEGIN, EVT_JOB_WORKER, 0);
    e.device = dev; e.step = step;
    n += evt_emit(wk, &e);
    sleep_ms(3);
    e.kind = EVT_COMPUTE_END; e.t = 0; e.dur = 3000000;
    n += evt_emit(wk, &e);
    evt_init(&e, EVT_PUSH_BEGIN, EVT_JOB_WORKER, 0);
    e.peer_job = EVT_JOB_PS; e.peer = 0; e.var = var; e.step = step; e.id = (uint64_t)step * 2 + 2;
    e.bytes = 4096;
    n += evt_emit(wk, &e);
    sleep_ms(2);
    e.kind = EVT_PUSH_END; e.t = 0; e.dur = 2000000;
    n += evt_emit(wk, &e);
    evt_init(&e, EVT_APPLY, EVT_JOB_PS, 0);
    e.peer_job = EVT_JOB_WORKER; e.peer = 0; e.var = evt_emitter_intern(ps, "hidden/weights");
    e.step = step + 1;
    n += evt_emit(ps, &e);
    evt_init(&e, EVT_STEP_END, EVT_JOB_WORKER, 0);
    e.step = step; e.value = 2.0 / (1 + step * 0.1);
    n += evt_emit(wk, &e);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/test_viz_live.XXXXXX", path[256], err[DP_ERRLEN];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/live.trace", dir);
    evt_hub_options opt;
    evt_hub_options_init(&opt);
    opt.listen = "127.0.0.1:0";
    opt.trace_path = path;
    opt.reorder_ms = 20;
    evt_hub *hub = evt_hub_new(&opt, err);
    CHECK_MSG(hub != NULL, "%s", err);
    if (!hub) return CHECK_DONE();
    CHECK(evt_hub_start_thread(hub, err) == 0);
    const char *addr = evt_hub_address(hub);
    evt_emitter *ps = evt_emitter_new(addr, EVT_JOB_PS, 0, 65536, err);
    evt_emitter *wk = evt_emitter_new(addr, EVT_JOB_WORKER, 0, 65536, err);
    CHECK(ps && wk);
    CHECK(evt_emitter_wait_connected(ps, 3000) && evt_emitter_wait_connected(wk, 3000));
    evt_record e;
    evt_init(&e, EVT_TASK_START, EVT_JOB_PS, 0);
    e.str = evt_emitter_intern(ps, "localhost");
    evt_emit(ps, &e);
    evt_init(&e, EVT_DEVICE, EVT_JOB_PS, 0);
    e.device = evt_emitter_intern(ps, "/job:ps/replica:0/task:0/device:CPU:0");
    evt_emit(ps, &e);
    evt_init(&e, EVT_TASK_START, EVT_JOB_WORKER, 0);
    e.str = evt_emitter_intern(wk, "localhost");
    evt_emit(wk, &e);
    uint32_t dev = evt_emitter_intern(wk, "/job:worker/replica:0/task:0/device:CPU:0");
    evt_init(&e, EVT_DEVICE, EVT_JOB_WORKER, 0);
    e.device = dev;
    evt_emit(wk, &e);
    uint32_t var = evt_emitter_intern(wk, "hidden/weights");
    evt_init(&e, EVT_VAR_DEFINE, EVT_JOB_WORKER, 0);
    e.var = var; e.bytes = 401408; e.str = evt_emitter_intern(wk, "784x128");
    evt_emit(wk, &e);
    evt_init(&e, EVT_VAR_PLACE, EVT_JOB_WORKER, 0);
    e.var = var; e.peer_job = EVT_JOB_PS; e.peer = 0;
    e.device = evt_emitter_intern(wk, "/job:ps/replica:0/task:0/device:CPU:0");
    evt_emit(wk, &e);
    int sent = 6, step = 0;
    for (; step < 10; step++) sent += emit_step(wk, ps, var, dev, step);
    /* attach mid-run */
    viz_source *live = viz_source_connect(addr, 3000, err);
    CHECK_MSG(live != NULL, "%s", err);
    if (!live) return CHECK_DONE();
    CHECK(viz_source_is_live(live));
    int got = 0, pump_rc = 0;
    for (int i = 0; i < 300; i++) {
        if (i % 3 == 0 && step < 40) sent += emit_step(wk, ps, var, dev, step++);
        int rc = viz_source_pump(live, err);
        if (rc < 0) {
            pump_rc = rc;
            break;
        }
        got += rc;
        const evt_state *st = viz_source_state_at(live, viz_source_t1(live));
        const evt_task_state *w0 = evt_state_task(st, EVT_JOB_WORKER, 0);
        if (step >= 40 && w0 && w0->step >= 39) break;
        sleep_ms(5);
    }
    CHECK_MSG(pump_rc >= 0, "pump: %s", err);  /* once, so that the count does not depend on timing */
    const evt_state *st = viz_source_state_at(live, viz_source_t1(live));
    const evt_task_state *w0 = evt_state_task(st, EVT_JOB_WORKER, 0);
    CHECK_MSG(w0 && w0->started, "catch-up state names worker 0");
    /* the steps before attaching are history (catch-up carries state, not steps) */
    CHECK_MSG(w0 && w0->step == 39 && w0->steps_done >= 28, "live: step %lld, %lld step ends",
              w0 ? (long long)w0->step : -1LL, w0 ? (long long)w0->steps_done : -1LL);
    CHECK(live->m.n_vars == 1 && live->m.n_ps == 1 && live->m.n_workers == 1);
    CHECK(!strcmp(viz_source_string(live, live->m.vars[0].name), "hidden/weights"));
    /* draw it: the worker box and the variable bar are where the layout says */
    viz_view v;
    viz_view_init(&v);
    v.t = viz_source_t1(live);
    v.live = 1;
    cairo_surface_t *img = viz_render_image(live, &v);
    viz_ctx c;
    viz_ctx_begin(&c, NULL, live, &v, v.t, v.width, v.height, 1);
    viz_rect bar = c.lay.var_bar[0];
    const unsigned char *d = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    uint32_t px = ((const uint32_t *)(const void *)(d + (size_t)(bar.y + bar.h / 2) * (size_t)stride))[(int)(bar.x + bar.w / 2)];
    viz_rgb vc = viz_var_color(0);
    CHECK_MSG(abs((int)(px >> 16 & 255) - (int)(vc.r * 255)) < 8 && abs((int)(px & 255) - (int)(vc.b * 255)) < 8,
              "variable bar pixel %06x", px & 0xffffff);
    CHECK(c.lay.n_workers == 1 && c.lay.worker_box[0].w > 0);
    viz_ctx_end(&c);
    cairo_surface_destroy(img);
    /* close the viewer mid-run: the run and the hub carry on */
    viz_source_free(live);
    evt_hub_stats before, after;
    evt_hub_get_stats(hub, &before);
    for (int i = 0; i < 10; i++) sent += emit_step(wk, ps, var, dev, step++);
    sleep_ms(200);
    evt_hub_get_stats(hub, &after);
    CHECK(after.events_in > before.events_in);
    CHECK(after.subs_now == 0 && after.bad_conns == 0);
    CHECK(evt_emitter_dropped(wk) == 0 && evt_emitter_dropped(ps) == 0);
    evt_emitter_free(wk);
    evt_emitter_free(ps);
    sleep_ms(100);
    CHECK(evt_hub_join(hub, err) == 0);
    evt_hub_free(hub);
    viz_source *rec = viz_source_open(path, err);
    CHECK_MSG(rec != NULL, "%s", err);
    if (rec) {
        CHECK_MSG(viz_source_events(rec) >= (uint64_t)sent, "%llu recorded, %d sent",
                  (unsigned long long)viz_source_events(rec), sent);
        viz_source_free(rec);
    }
    printf("%d events sent, %d seen live\n", sent, got);
    unlink(path);
    rmdir(dir);
    cairo_debug_reset_static_data();   /* font caches, so LeakSanitizer sees only ours */
    if (FcFini) FcFini();
    return CHECK_DONE();
}
