/* fuzz_sub.c — libFuzzer target: the viewer's side of the stream (hub/sub.c): a real
 * evt_sub fed hostile hub frames (WELCOME, STRINGS, EVENTS, STATE_END, DROPPED, ERROR and
 * anything else). The input is what the hub sends. A fake hub listens on loopback (one
 * listening socket for the process); per input, evt_sub_connect subscribes (no secret),
 * the fake hub accepts, writes the input in pieces of at most 4 KiB with evt_sub_pump(s,
 * 0) and evt_sub_next after each, until the subscriber has read all of it or ended the
 * stream (closed, DP_EPROTO); then the fake hub resets the connection (SO_LINGER 0: no
 * TIME_WAIT left behind per input, so a long run cannot run out of ports) and the
 * subscriber is pumped to its end. Every popped record's strings are looked up.
 * Checked (abort: a real finding): the only frame the subscriber sends is one HELLO_SUB,
 * and a subscriber whose hub reset the connection reports the end (a negative pump). */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "hub/stream.h"
#include "hub/wire.h"
#include "net/auth.h"
#include "net/sock.h"

static int lfd = -1;
static char addr[64];

static int fz_accept(void)
{
    char peer[96];
    for (int spins = 0; spins < 1000; spins++) {
        int fd = net_accept(lfd, peer, sizeof peer);
        if (fd >= 0) return fd;
        if (fd < -1) break;
        usleep(100);
    }
    fprintf(stderr, "sub: the fake hub accepted nothing\n");
    abort();
}

/* What the subscriber sent: exactly one HELLO_SUB {u32 flags 0}. */
static void fz_check_hello(int fd, dp_buf *in)
{
    uint8_t buf[256];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) dp_buf_append(in, buf, (size_t)r);
    net_frame h;
    const uint8_t *p;
    char err[DP_ERRLEN];
    int n = 0;
    while (net_frame_next(in, &evt_wire_proto, &h, &p, err) == 1) {
        if (h.type != EVT_F_HELLO_SUB || dp_get_u32(p) != 0 || n++) {
            fprintf(stderr, "sub: sent %s, not one HELLO_SUB\n", evt_wire_type_name(h.type));
            abort();
        }
        dp_buf_consume(in, NET_HEADER + h.length);
    }
    if (dp_buf_pending(in) >= NET_HEADER) {
        fprintf(stderr, "sub: sent a bad frame: %s\n", err);
        abort();
    }
}

/* One pump without waiting; pops and looks at what came. Returns the pump's code. */
static int fz_pump(evt_sub *s)
{
    char err[DP_ERRLEN];
    int rc = evt_sub_pump(s, 0, err);
    evt_record e;
    while (evt_sub_next(s, &e) == 1) {
        evt_sub_string(s, e.device);
        evt_sub_string(s, e.var);
        evt_sub_string(s, e.str);
    }
    return rc;
}

static int fz_unread(int fd, int req)
{
    int n = 0;
    return ioctl(fd, req, &n) == 0 ? n : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char err[DP_ERRLEN];
    if (lfd < 0) {
        setenv(AUTH_HUB_ENV, "", 1);   /* no handshake: the hub's frames come at once */
        int port = 0;
        lfd = net_listen("127.0.0.1", 0, &port, err);
        if (lfd < 0) { fprintf(stderr, "sub: %s\n", err); abort(); }
        snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    }
    evt_sub *s = evt_sub_connect(addr, 2000, err);
    if (!s) { fprintf(stderr, "sub: %s\n", err); abort(); }
    int fd = fz_accept();
    dp_buf hello = {0};
    size_t off = 0;
    int rc = 0;
    while (rc >= 0 && off < size) {
        size_t k = size - off < 4096 ? size - off : 4096;
        ssize_t w = write(fd, data + off, k);
        if (w > 0) off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR) break;
        rc = fz_pump(s);
        fz_check_hello(fd, &hello);
    }
    /* Until it has read everything (or ended the stream). */
    for (int spins = 0; rc >= 0 && spins < 10000; spins++) {
        if (!fz_unread(evt_sub_fd(s), FIONREAD) && !fz_unread(fd, SIOCOUTQ)) break;
        rc = fz_pump(s);
    }
    fz_check_hello(fd, &hello);
    struct linger reset = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    close(fd);
    for (int spins = 0; rc >= 0 && spins < 1000; spins++) rc = fz_pump(s);
    if (rc >= 0) {
        fprintf(stderr, "sub: still streaming after the hub reset the connection\n");
        abort();
    }
    evt_sub_synced(s);
    evt_sub_state_count(s);
    evt_sub_hub_t0(s);
    evt_sub_dropped(s);
    evt_sub_strings(s);
    dp_buf_release(&hello);
    evt_sub_close(s);
    return 0;
}
