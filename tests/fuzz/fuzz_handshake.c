/* fuzz_handshake.c — libFuzzer target: the hub's side of a task's stream handshake and
 * what follows it (hub/hub.c): HELLO_TASK or HELLO_SUB, clock PROBE_REPLYs, RESUME,
 * STRINGS and EVENTS, in any order and shape. The input is what the peer sends. Each
 * input gets a fresh hub (no trace, 2 clock probes) and one connection on a socketpair,
 * made as the hub's accept callback makes one (no secret: the hub's authentication
 * handshake is off); the input is written into the other end in pieces of at most 200
 * bytes and the hub's own read callback runs after each; then the merge
 * window is emitted, acknowledgements and delivery records are made as at a tick and a
 * stop, and the peer's end is shut so the hub closes the connection.
 *
 * Test hook: this file includes hub/hub.c itself, to reach its static read callback
 * and connection set-up without adding an entry point to the library; the target links
 * every library object but events/hub.o (Makefile, FUZZ_HUB_OBJ). */
#include "tests/fuzz/fuzz_util.h"

#include "hub/hub.c"

static hub_conn *fz_conn(evt_hub *h, int fd)
{
    hub_conn *c = xcalloc(1, sizeof *c);   /* as accept_cb */
    c->hub = h;
    c->fd = fd;
    c->role = HC_NEW;
    c->born = hub_now(h);
    snprintf(c->peer, sizeof c->peer, "fuzz");
    snprintf(c->name, sizeof c->name, "connection");
    ev_io_init(&c->rio, conn_read_cb, fd, EV_READ);
    ev_io_init(&c->wio, conn_write_cb, fd, EV_WRITE);
    ev_io_start(h->loop, &c->rio);
    c->next = h->conns;
    if (h->conns) h->conns->prev = c;
    h->conns = c;
    return c;
}

static void drain(int fd)
{
    uint8_t buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    evt_hub_options o;
    evt_hub_options_init(&o);
    o.listen = "127.0.0.1:0";
    o.probes = 2;
    o.quiet = 1;
    char err[DP_ERRLEN];
    evt_hub *h = evt_hub_new(&o, err);
    if (!h) { fprintf(stderr, "handshake: %s\n", err); abort(); }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); abort(); }
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    hub_conn *c = fz_conn(h, sv[0]);   /* freed by evt_hub_free, never before */
    size_t off = 0;
    while (!c->dead && off < size) {
        /* In pieces of at most 200 bytes, read one by one, as a task's frames arrive
         * (it waits for each probe): a hub may refuse a large lump before a hello. */
        size_t k = size - off < 200 ? size - off : 200;
        ssize_t w = write(sv[1], data + off, k);
        if (w > 0) off += (size_t)w;
        conn_read_cb(h->loop, &c->rio, EV_READ);
        drain(sv[1]);
    }
    if (!c->dead) conn_read_cb(h->loop, &c->rio, EV_READ);
    hub_merge_emit(h, INT64_MAX);
    hub_ack(h);
    hub_record_delivery(h);
    hub_merge_emit(h, INT64_MAX);
    hub_publish(h);
    shutdown(sv[1], SHUT_WR);
    for (int spins = 0; !c->dead && spins < 1000; spins++) {
        conn_read_cb(h->loop, &c->rio, EV_READ);
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
