/* tool_sub.c — a test client of the hub's subscription side, for tests/it_trace.sh.
 *   tool_sub ADDR --read TIMEOUT_S   read until CLUSTER_STOP (or timeout), print a JSON line
 *                                    with the number of records, kinds seen and drops
 *   tool_sub ADDR --stall SECONDS    subscribe, then never read (a stalled viewer) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/dp.h"
#include "events/event.h"
#include "hub/stream.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tool_sub ADDR --read TIMEOUT_S | --stall SECONDS\n");
        return 2;
    }
    char err[DP_ERRLEN];
    evt_sub *s = evt_sub_connect(argv[1], 5000, err);
    if (!s) {
        fprintf(stderr, "tool_sub: %s\n", err);
        return 1;
    }
    double secs = atof(argv[3]);
    if (!strcmp(argv[2], "--stall")) {
        int small = 4096;
        setsockopt(evt_sub_fd(s), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        usleep((useconds_t)(secs * 1e6));
        evt_sub_close(s);
        return 0;
    }
    uint64_t counts[EVT_KIND_COUNT] = {0}, n = 0;
    int saw_stop = 0;
    uint64_t deadline = dp_now_ns() + (uint64_t)(secs * 1e9);
    while (!saw_stop && dp_now_ns() < deadline) {
        evt_record e;
        int rc = evt_sub_read(s, &e, 200, err);
        if (rc < 0) {
            fprintf(stderr, "tool_sub: %s\n", err);
            break;
        }
        if (rc == 0) continue;
        n++;
        if (e.kind < EVT_KIND_COUNT) counts[e.kind]++;
        if (e.kind == EVT_CLUSTER_STOP) saw_stop = 1;
    }
    printf("{\"records\":%llu,\"state\":%llu,\"saw_stop\":%d,\"dropped\":%llu", (unsigned long long)n,
           (unsigned long long)evt_sub_state_count(s), saw_stop, (unsigned long long)evt_sub_dropped(s));
    for (int k = 1; k < EVT_KIND_COUNT; k++)
        if (counts[k]) printf(",\"%s\":%llu", evt_kind_name(k), (unsigned long long)counts[k]);
    printf("}\n");
    evt_sub_close(s);
    return saw_stop ? 0 : 1;
}
