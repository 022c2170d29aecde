#define _GNU_SOURCE
/* sock.c — sockets (sock.h): addresses, listening, accepting and connecting. */
#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/dp.h"

int net_parse_addr(const char *addr, int passive, struct sockaddr_storage *ss,
                        socklen_t *len, char *err)
{
    char host[256];
    const char *colon, *hs, *he;
    if (!addr || !*addr) return dp_fail(err, DP_EINVAL, "empty address (want host:port)");
    if (addr[0] == '[') {
        he = strchr(addr, ']');
        if (!he || he[1] != ':')
            return dp_fail(err, DP_EINVAL, "bad address '%s' (want [v6addr]:port)", addr);
        hs = addr + 1;
        colon = he + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return dp_fail(err, DP_EINVAL, "bad address '%s' (want host:port)", addr);
        hs = addr;
        he = colon;
    }
    if ((size_t)(he - hs) >= sizeof host)
        return dp_fail(err, DP_EINVAL, "bad address '%s': host name too long", addr);
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = 0;
    if (!*host) snprintf(host, sizeof host, "127.0.0.1");
    long long port;
    if (dp_parse_int(colon + 1, &port) || port < 0 || port > 65535 || (!passive && port == 0))
        return dp_fail(err, DP_EINVAL, "bad address '%s': port '%s' is not 1..65535", addr,
                       colon + 1);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%lld", port);
    int rc = getaddrinfo(host, portbuf, &hints, &res);
    if (rc || !res)
        return dp_fail(err, DP_EINVAL, "bad address '%s': %s", addr,
                       rc ? gai_strerror(rc) : "no result");
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void net_addr_text(const struct sockaddr *sa, char *buf, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(buf, n, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(buf, n, "[%s]:%d", host, port);
    } else {
        snprintf(buf, n, "?");
    }
}

int net_socket(int family, char *err)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        dp_fail(err, DP_EIO, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* "host:port", or "[v6]:port" for an IPv6 literal, for messages. */
static const char *host_port(char *buf, size_t n, const char *host, int port)
{
    snprintf(buf, n, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    return buf;
}

/* Resolves host (a name, dotted IPv4 or IPv6 literal without brackets) for a TCP socket:
 * *res gets the list (caller frees with freeaddrinfo). Callers try IPv4 results before
 * IPv6 ones, so a name that has both behaves as it did when only IPv4 was used. */
static int resolve(const char *host, int port, int passive, struct addrinfo **res, char *err)
{
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    *res = NULL;
    int rc = getaddrinfo(host, ps, &hints, res);
    if (rc != 0 || !*res) {
        if (*res) freeaddrinfo(*res);
        *res = NULL;
        return dp_fail(err, DP_EINVAL, "cannot resolve host \"%s\": %s", host,
                       rc ? gai_strerror(rc) : "no address");
    }
    return DP_OK;
}

/* The port of a bound socket of either family, or -1. */
static int sock_port(int fd, int *family)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
    if (family) *family = ss.ss_family;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    return -1;
}

/* One listening socket on ai; returns the fd or -1 with errno set. */
static int listen_on(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 256) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int net_listen(const char *host, int port, int *bound_port, char *err)
{
    struct addrinfo *res;
    int rc = resolve(host, port, 1, &res, err);
    if (rc) return rc;
    int fd = -1, e = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++)      /* IPv4 first, then the rest */
        for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET) != (pass == 0)) continue;
            fd = listen_on(ai);
            if (fd < 0) e = errno;
        }
    freeaddrinfo(res);
    if (fd < 0) {
        char hp[300];
        return dp_fail(err, DP_EIO, "cannot listen on %s: %s", host_port(hp, sizeof hp, host, port),
                       strerror(e ? e : EAFNOSUPPORT));
    }
    if (bound_port) *bound_port = sock_port(fd, NULL);
    return fd;
}

int net_listen_inherited(const char *host, int port, char *err)
{
    const char *env = getenv(NET_LISTEN_ENV);
    char want[16];
    snprintf(want, sizeof want, "%d", NET_LISTEN_FD);
    if (env && !strcmp(env, want)) {
        unsetenv(NET_LISTEN_ENV);
        int fd = NET_LISTEN_FD, listening = 0, family = 0;
        socklen_t ol = sizeof listening;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) == 0 && listening &&
            sock_port(fd, &family) == port && (family == AF_INET || family == AF_INET6)) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            fcntl(fd, F_SETFD, FD_CLOEXEC);
            return fd;
        }
    }
    return net_listen(host, port, NULL, err);
}

int net_accept(int lfd, char *peer, size_t peer_len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return -1;
        return DP_EIO;
    }
    if (peer) net_addr_text((struct sockaddr *)&ss, peer, peer_len);
    return fd;
}

/* connect(), given at most NET_CONNECT_WAIT_MS: a peer whose network vanished mid-way
 * (a namespace torn down, a host gone) drops the SYN and a blocking connect would wait
 * minutes, where the caller retries and checks for a stop request. -1 with errno set
 * (ETIMEDOUT, or the connect's own error); the fd is left blocking as it came. */
static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return connect(fd, sa, len);
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int n = poll(&p, 1, NET_CONNECT_WAIT_MS);
        if (n <= 0) {
            errno = n == 0 ? ETIMEDOUT : errno;
            return -1;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) return -1;
        if (soerr) {
            errno = soerr;
            return -1;
        }
        rc = 0;
    }
    if (rc == 0) fcntl(fd, F_SETFL, fl);
    return rc;
}

int net_connect(const char *host, int port, char *err)
{
    struct addrinfo *res;
    int rc = resolve(host, port, 0, &res, err);
    if (rc) return rc;
    int fd = -1, e = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++)      /* IPv4 first, then the rest */
        for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET) != (pass == 0)) continue;
            fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                e = errno;
                continue;
            }
            if (connect_bounded(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                e = errno;
                close(fd);
                fd = -1;
            }
        }
    freeaddrinfo(res);
    if (fd < 0) return dp_fail(err, DP_EIO, "%s", strerror(e ? e : EAFNOSUPPORT));
    return fd;
}

int net_free_port(char *err)
{
    int port = 0;
    int fd = net_listen("127.0.0.1", 0, &port, err);
    if (fd < 0) return fd;
    close(fd);
    return port;
}

int net_listen_addr(const char *addr, const char *who, struct sockaddr_storage *bound, char *err)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int rc = net_parse_addr(addr, 1, &ss, &sslen, err);
    if (rc) return rc;
    int fd = net_socket(ss.ss_family, err);
    if (fd < 0) return DP_EIO;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, 256) < 0) {
        int e = errno;
        close(fd);
        return dp_fail(err, DP_EIO, "%s: cannot listen on %s: %s", who, addr, strerror(e));
    }
    if (bound) {
        sslen = sizeof *bound;
        getsockname(fd, (struct sockaddr *)bound, &sslen);
    }
    return fd;
}

int net_addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)(const void *)ss)->sin6_port);
    if (ss->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)(const void *)ss)->sin_port);
    return -1;
}
