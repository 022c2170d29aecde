/* bench_hub.c — hub throughput: E emitter threads stream events as fast as the emitter
 * takes them into one in-process hub recording a trace; prints events merged per second
 * (and the same hub with no trace file, the baseline for the cost of recording).
 *   bench_hub EVENTS_PER_EMITTER EMITTERS TRACE_PATH */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/hub.h"
#include "hub/stream.h"

typedef struct job { const char *addr; int task; long n; uint64_t dropped; } job;

static void *produce(void *arg)
{
    job *j = arg;
    char err[DP_ERRLEN];
    evt_emitter *em = evt_emitter_new(j->addr, EVT_JOB_WORKER, j->task, 1 << 16, err);
    evt_emitter_wait_connected(em, 5000);
    uint32_t var = evt_emitter_intern(em, "hidden/weights");
    for (long i = 0; i < j->n; i++) {
        evt_record e;
        evt_init(&e, (i & 1) ? EVT_PULL_END : EVT_PULL_BEGIN, EVT_JOB_WORKER, j->task);
        e.var = var;
        e.peer = 0;
        e.step = i / 10;
        e.bytes = 401408;
        /* Never block: when the ring is full, yield and retry, so every event is offered. */
        while (!evt_emit(em, &e)) usleep(50);
    }
    j->dropped = evt_emitter_dropped(em);
    evt_emitter_free(em);
    return NULL;
}

static double run(long n, int emitters, const char *trace)
{
    char err[DP_ERRLEN];
    evt_hub_options o;
    evt_hub_options_init(&o);
    o.listen = "127.0.0.1:0";
    o.trace_path = trace;
    o.reorder_ms = 20;
    evt_hub *h = evt_hub_new(&o, err);
    if (!h || evt_hub_start_thread(h, err)) {
        fprintf(stderr, "bench_hub: %s\n", err);
        exit(1);
    }
    pthread_t th[64];
    job jobs[64];
    uint64_t t0 = dp_now_ns();
    for (int i = 0; i < emitters; i++) {
        jobs[i] = (job){evt_hub_address(h), i, n, 0};
        pthread_create(&th[i], NULL, produce, &jobs[i]);
    }
    for (int i = 0; i < emitters; i++) pthread_join(th[i], NULL);
    evt_hub_stats st;
    for (int i = 0; i < 500; i++) {
        evt_hub_get_stats(h, &st);
        if (st.events_out >= (uint64_t)(n * emitters)) break;
        usleep(10000);
    }
    double secs = (double)(dp_now_ns() - t0) / 1e9;
    evt_hub_stop(h);
    evt_hub_join(h, err);
    evt_hub_free(h);
    return (double)st.events_out / secs;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_hub EVENTS_PER_EMITTER EMITTERS TRACE_PATH\n");
        return 2;
    }
    dp_log_level = DP_LOG_ERROR;
    long n = atol(argv[1]);
    int e = atoi(argv[2]);
    if (e < 1 || e > 64) return 2;
    printf("hub_nofile_events_s %.0f\n", run(n, e, NULL));
    printf("hub_trace_events_s %.0f\n", run(n, e, argv[3]));
    return 0;
}
