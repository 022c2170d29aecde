/* bench_net.c — pull/push throughput of a 4 MiB variable through a real ps task, against
 * raw TCP loopback measured here in the same pattern (4 MiB request, 4 MiB answer).
 *   bench_net DOWNPOUR_BINARY ROUNDS
 * Prints "raw_mib_s <x>" and "ps_mib_s <y>" (MiB moved per second, both directions). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dp.h"
#include "runtime/config.h"
#include "net/conn.h"
#include "net/sock.h"
#include "runtime/proto.h"

#define HIDDEN 1338 /* hidden/weights = 784 x 1338 floats = 4.0 MiB */

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { perror("write"); exit(1); }
        c += w;
        n -= (size_t)w;
    }
}

static void read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { fprintf(stderr, "bench_net: peer closed\n"); exit(1); }
        c += r;
        n -= (size_t)r;
    }
}

static void frame(int fd, int type, uint32_t var, int64_t a0, int64_t a1, const void *p, size_t n)
{
    uint8_t h[NET_HEADER];
    net_frame ph = {.proto = NET_PROTO_PS, .type = (uint16_t)type, .length = (uint32_t)n,
                    .id = var, .arg0 = a0, .arg1 = a1};
    net_frame_encode(&ph, h);
    write_all(fd, h, sizeof h);
    if (n) write_all(fd, p, n);
}

static net_frame expect(int fd, int type, void *payload)
{
    uint8_t h[NET_HEADER];
    char err[DP_ERRLEN] = "";
    net_frame ph;
    read_all(fd, h, sizeof h);
    if (net_frame_decode(h, &proto_ps, &ph, err) || ph.type != type) {
        fprintf(stderr, "bench_net: expected %s, got %s %s\n", proto_type_name(type),
                proto_type_name(ph.type), err);
        exit(1);
    }
    if (ph.length) read_all(fd, payload, ph.length);
    return ph;
}

static double raw_rounds(int rounds, size_t bytes, char *buf)
{
    int sv[2], lfd, port;
    char err[DP_ERRLEN];
    lfd = net_listen("127.0.0.1", 0, &port, err);
    pid_t pid = fork();
    if (pid == 0) { /* echo server */
        int fd;
        while ((fd = accept(lfd, NULL, NULL)) < 0 && errno == EAGAIN) usleep(1000);
        for (int i = 0; i < rounds; i++) {
            read_all(fd, buf, bytes);
            write_all(fd, buf, bytes);
        }
        _exit(0);
    }
    close(lfd);
    sv[0] = net_connect("127.0.0.1", port, err);
    uint64_t t0 = dp_now_ns();
    for (int i = 0; i < rounds; i++) {
        write_all(sv[0], buf, bytes);
        read_all(sv[0], buf, bytes);
    }
    double secs = (double)(dp_now_ns() - t0) / 1e9;
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return 2.0 * rounds * (double)bytes / secs / (1 << 20);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_net DOWNPOUR_BINARY ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[2]);
    size_t counts[5] = {0, 784 * HIDDEN, HIDDEN, HIDDEN * 10, 10};
    size_t big = counts[1] * sizeof(float);
    char *buf = xcalloc(1, big);
    signal(SIGPIPE, SIG_IGN);
    printf("raw_mib_s %.1f\n", raw_rounds(rounds, big, buf));

    char err[DP_ERRLEN];
    int port = net_free_port(err), wport = net_free_port(err);
    char ps_hosts[64], wk_hosts[64], hidden[32];
    snprintf(ps_hosts, sizeof ps_hosts, "--ps_hosts=127.0.0.1:%d", port);
    snprintf(wk_hosts, sizeof wk_hosts, "--worker_hosts=127.0.0.1:%d", wport);
    snprintf(hidden, sizeof hidden, "--hidden=%d", HIDDEN);
    pid_t ps = fork();
    if (ps == 0) {
        execl(argv[1], argv[1], "task", "--job_name=ps", "--task_index=0", ps_hosts, wk_hosts,
              "--mode=async", "--model=mlp", hidden, "--quiet", (char *)NULL);
        _exit(127);
    }
    int fd = -1;
    for (int i = 0; i < 200 && fd < 0; i++) {
        fd = net_connect("127.0.0.1", port, err);
        if (fd < 0) usleep(20000);
    }
    if (fd < 0) {
        fprintf(stderr, "bench_net: ps did not start: %s\n", err);
        return 1;
    }
    rt_config cfg;
    rt_config_init(&cfg);
    cfg.mode = MODE_ASYNC;
    cfg.hidden = HIDDEN;
    cfg.n_workers = 1;
    frame(fd, MSG_HELLO, 0, (int64_t)rt_config_hash(&cfg), 1, NULL, 0);
    expect(fd, MSG_HELLO_OK, NULL);
    for (uint32_t v = 0; v < 5; v++) {
        frame(fd, MSG_INIT, v, 0, 0, buf, counts[v] * sizeof(float));
        expect(fd, MSG_INIT_OK, NULL);
    }
    uint64_t t0 = dp_now_ns();
    for (int i = 0; i < rounds; i++) {
        frame(fd, MSG_PULL, 1, i, 0, NULL, 0);
        net_frame h = expect(fd, MSG_PULL_RESP, buf);
        frame(fd, MSG_PUSH, 1, h.arg0, i + 1, buf, big);
        expect(fd, MSG_PUSH_ACK, NULL);
    }
    double secs = (double)(dp_now_ns() - t0) / 1e9;
    printf("ps_mib_s %.1f\n", 2.0 * rounds * (double)big / secs / (1 << 20));
    close(fd);
    kill(ps, SIGTERM);
    waitpid(ps, NULL, 0);
    free(buf);
    return 0;
}
