/* fuzz_handshake.c — libFuzzer target: the hub's side of a task's or a viewer's
 * connection (hub/hub.c, hub/hub_frame.c on net/conn.c): HELLO_TASK or HELLO_SUB, clock
 * PROBE_REPLYs, RESUME, STRINGS and EVENTS, in any order and shape, and anything else a
 * peer may send. The input is what the peer sends. Each input gets a fresh hub (no
 * trace, 2 clock probes, no secret) and one connection on a socketpair, made by the
 * hub's own accept callback (a net_conn with the hub's options: the stream protocol,
 * hello_s, pre_hello_max); the input is written into the other end in pieces of at most
 * 200 bytes and the hub's loop runs one non-blocking turn after each, while what the hub
 * sends is drained; then the merge window is emitted, acknowledgements and delivery
 * records are made as at a tick and a stop, and the peer's end is shut so the hub
 * closes the connection. The hub's tick timer is stopped so that a run depends on the
 * input only (and the dead connection stays readable until evt_hub_free).
 *
 * Test hook: this file includes hub/hub.c itself, to reach its static accept callback
 * and tick-time helpers without adding an entry point to the library; the archive's
 * hub.o is then never pulled in (Makefile). */
#include "tests/fuzz/fuzz_util.h"

#include "hub/hub.c"

static void drain(int fd)
{
    uint8_t buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    setenv(AUTH_HUB_ENV, "", 1);   /* no secret, whatever the environment says (fuzz_auth has one) */
    evt_hub_options o;
    evt_hub_options_init(&o);
    o.listen = "127.0.0.1:0";
    o.probes = 2;
    o.quiet = 1;
    char err[DP_ERRLEN];
    evt_hub *h = evt_hub_new(&o, err);
    if (!h) { fprintf(stderr, "handshake: %s\n", err); abort(); }
    ev_timer_stop(h->loop, &h->tick);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); abort(); }
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    accept_cb(NULL, sv[0], "fuzz", h);   /* takes sv[0] */
    hub_conn *c = h->conns;              /* freed by evt_hub_free, never before */
    size_t off = 0;
    while (!c->dead && off < size) {
        /* In pieces of at most 200 bytes, read one by one, as a task's frames arrive
         * (it waits for each probe): a hub may refuse a large lump before a hello. */
        size_t k = size - off < 200 ? size - off : 200;
        ssize_t w = write(sv[1], data + off, k);
        if (w > 0) off += (size_t)w;
        ev_run(h->loop, EVRUN_NOWAIT);
        drain(sv[1]);
    }
    if (!c->dead) ev_run(h->loop, EVRUN_NOWAIT);
    hub_merge_emit(h, INT64_MAX);
    hub_ack(h);
    hub_record_delivery(h);
    hub_merge_emit(h, INT64_MAX);
    hub_publish(h);
    shutdown(sv[1], SHUT_WR);
    for (int spins = 0; !c->dead && spins < 1000; spins++) {
        ev_run(h->loop, EVRUN_NOWAIT);
        drain(sv[1]);
    }
    if (!c->dead) {
        fprintf(stderr, "handshake: connection still open after the peer shut its end\n");
        abort();
    }
    close(sv[1]);
    evt_hub_free(h);
    return 0;
}
