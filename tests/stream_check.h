/* stream_check.h — what the live stream's unit tests share (test_stream.c,
 * test_stream_hub.c): sleeping and timing, a raw connection that sends bad bytes and
 * tells whether the hub dropped it, and a frame header written out byte by byte.
 * Include after tests/check.h. Header-only, static. */
#ifndef TESTS_STREAM_CHECK_H
#define TESTS_STREAM_CHECK_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "net/frame.h"

static inline void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static inline double ms_since(uint64_t t) { return (double)(dp_now_ns() - t) / 1e6; }

/* ---- raw connections sending bad frames --------------------------------------- */
static inline int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* Sends bytes, then returns 1 when the hub closes the connection within 2 s. */
static inline int hub_drops(int port, const uint8_t *bytes, size_t n)
{
    int fd = raw_connect(port);
    if (fd < 0) return 0;
    if (send(fd, bytes, n, MSG_NOSIGNAL) != (ssize_t)n) {
        close(fd);
        return 0;
    }
    char buf[512];
    ssize_t r;
    while ((r = recv(fd, buf, sizeof buf, 0)) > 0) {}
    close(fd);
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* A frame header as bytes (net/frame.h's layout written out: magic, version 1, the
 * stream protocol, type, length, id / arg0 / arg1 zero). */
#define HDR 32
#define MAGIC 0x464e5044u
static inline void header(uint8_t *p, uint32_t magic, uint16_t type, uint32_t len)
{
    memset(p, 0, HDR);
    dp_put_u32(p, magic);
    p[4] = 1;
    p[5] = NET_PROTO_STREAM;
    dp_put_u16(p + 6, type);
    dp_put_u32(p + 8, len);
}

#endif
