/* sock.h — sockets for every connection: "host:port" addresses, listening (including
 * the launcher's handed-down socket), accepting and bounded connects. Sockets are
 * close-on-exec; accepted and listening ones non-blocking; TCP_NODELAY where made here. */
#ifndef NET_SOCK_H
#define NET_SOCK_H

#include <stddef.h>
#include <sys/socket.h>

/* Parses "host:port", "[v6]:port" or ":port" (loopback) and resolves host (numeric or
 * a name). port 0 is allowed when passive (listening). Returns 0 or DP_EINVAL. */
int net_parse_addr(const char *addr, int passive, struct sockaddr_storage *ss, socklen_t *len, char *err);
/* "host:port" ("[v6]:port") text of an address (into buf of n bytes). */
void net_addr_text(const struct sockaddr *sa, char *buf, size_t n);
/* The port of an IPv4/IPv6 address, or -1. */
int net_addr_port(const struct sockaddr_storage *ss);
/* Non-blocking, close-on-exec TCP socket for the family; TCP_NODELAY. -1 + err. */
int net_socket(int family, char *err);

/* A listening socket on host:port (port 0 picks a free one; *bound_port gets the port),
 * IPv4 tried before IPv6. Non-blocking, SO_REUSEADDR. Returns the fd or a negative dp_err. */
int net_listen(const char *host, int port, int *bound_port, char *err);
/* The same for an "host:port" address (net_parse_addr); *bound (may be NULL) gets the
 * bound address. who names the listener in errors ("hub", "web"). */
int net_listen_addr(const char *addr, const char *who, struct sockaddr_storage *bound, char *err);

/* The launcher's handover: it binds each local ps's port itself and passes the listening
 * socket down as fd NET_LISTEN_FD (named by $DOWNPOUR_LISTEN_FD), so that no other socket
 * can take the port between choosing and binding it. Returns that fd when it is a
 * listening socket on `port`, else a fresh net_listen(host, port). */
#define NET_LISTEN_FD 3
#define NET_LISTEN_ENV "DOWNPOUR_LISTEN_FD"
int net_listen_inherited(const char *host, int port, char *err);

/* Accepts one pending connection: fd >= 0 (non-blocking), -1 when none (EAGAIN), or a
 * negative dp_err less than -1 on failure. peer gets "host:port". */
int net_accept(int lfd, char *peer, size_t peer_len);

/* Blocking connect to host:port with a single attempt of at most NET_CONNECT_WAIT_MS;
 * returns fd or a negative dp_err (err says why, e.g. "connection refused"). */
#define NET_CONNECT_WAIT_MS 2000
int net_connect(const char *host, int port, char *err);

/* Finds a free loopback TCP port (bind to port 0, read it, close). */
int net_free_port(char *err);

#endif
