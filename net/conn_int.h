/* conn_int.h — net_conn's insides, shared by conn.c (the socket, the queue, reading),
 * conn_auth.c (the handshake) and conn_shm.c (the shared-memory upgrade and liveness).
 * Not for use outside net/: the public interface is conn.h. Functions here carry the
 * netc_ prefix; each is documented where it is defined. */
#ifndef NET_CONN_INT_H
#define NET_CONN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "common/buf.h"
#include "common/dp.h"
#include "net/auth.h"
#include "net/conn.h"
#include "net/shm.h"

/* An output segment: owned bytes (own != NULL, capacity cap) or a borrowed payload. */
typedef struct out_seg {
    struct out_seg *next;
    uint8_t *own;
    const uint8_t *p;
    size_t len, off, cap;
} out_seg;

enum hs_state {
    HS_OPEN = 0,        /* open: the owner's frames flow */
    HS_CONNECTING,      /* non-blocking connect in progress */
    HS_C_CHALLENGE,     /* client: AUTH_HELLO sent, waiting for AUTH_CHALLENGE */
    HS_C_OK,            /* client: AUTH_PROOF sent, waiting for AUTH_OK */
    HS_S_HELLO,         /* server: waiting for AUTH_HELLO */
    HS_S_PROOF,         /* server: challenge sent, waiting for AUTH_PROOF */
    HS_C_SHM            /* client: SHM_OFFER sent, waiting for SHM_ANSWER */
};

struct net_listener {
    ev_io w;
    struct ev_loop *loop;
    int fd, max_conns, open, owner_gone;
    char name[64];
    net_accept_fn on_accept;
    void *ctx;
    uint64_t refused, refused_logged, refused_log_ns, auth_failures;
};

struct net_conn {
    ev_io rio, wio;
    ev_timer reap;       /* frees a conn closed from outside its own callbacks */
    ev_timer defer;      /* on_open without a handshake */
    ev_timer guard;      /* hello_s / frame_s */
    struct ev_loop *loop;
    int fd;
    net_conn_opts o;
    auth_key key, alt_key;
    auth_hs hs;
    int hs_state, alt_auth, hello_done, reading;
    int open_pending;           /* open without a handshake; on_open not yet called */
    const net_handler *h;
    void *ctx;
    char peer[96];
    uint64_t born_ns;
    /* reading */
    uint8_t hbuf[NET_HEADER];
    size_t hgot;
    net_frame cur;
    int in_payload, internal;   /* internal: the frame is the handshake's, not the owner's */
    int in_header, lending;     /* in on_header; the payload is to be lent from the ring */
    int keeping;                /* ... and held after on_frame (net_conn_hold_payload) */
    uint8_t *dst;
    size_t pgot;
    uint8_t *own;
    size_t own_cap;
    uint64_t last_read_ns;
    /* writing */
    out_seg *head, *tail;
    out_seg *spare;             /* one written owned segment, kept: no malloc per frame */
    dp_buf stage;
    size_t pending;             /* queued, unwritten (stage not included) */
    /* lifecycle */
    int in_cb, closing, close_after_flush, kind;
    char reason[DP_ERRLEN];
    uint64_t bytes_in, bytes_out, owner_frames;
    /* shared memory: offered (client, HS_C_SHM) or in use (shm_on) */
    shm_chan *shm;
    int shm_on, shm_asked, peer_gone;
    ev_io bio;           /* our doorbell: the peer wrote, made room, or died */
    ev_timer more;       /* the read budget ran out with bytes left in the ring */
};


/* Inside a callback of c: a close then frees only at LEAVE, after the callback. */
#define ENTER(c) ((c)->in_cb = 1)
#define LEAVE(c)                     \
    do {                             \
        (c)->in_cb = 0;              \
        if ((c)->closing) netc_finish(c); \
    } while (0)

static inline int netc_is_auth_type(int t) { return t >= NET_T_AUTH_HELLO && t <= NET_T_AUTH_OK; }
static inline int netc_is_shm_type(int t) { return t == NET_T_SHM_OFFER || t == NET_T_SHM_ANSWER; }

/* conn.c */
void netc_finish(net_conn *c);
void netc_close_as(net_conn *c, int kind, const char *reason);
int netc_flush_out(net_conn *c);
void netc_kick(net_conn *c);
void netc_queue_copy(net_conn *c, const void *p, size_t n);
void netc_send_internal(net_conn *c, int type, const void *p, size_t n);
void netc_bad_frame(net_conn *c, const char *what);
void netc_read_frames(net_conn *c);

/* conn_auth.c */
void netc_become_open(net_conn *c);
int netc_handshake_frame(net_conn *c, const net_frame *f, const uint8_t *p);
void netc_start_handshake(net_conn *c, int in_cb);

/* conn_shm.c */
int netc_shm_offer(net_conn *c);
int netc_shm_frame(net_conn *c, const net_frame *f, const uint8_t *p);
void netc_shm_liveness(net_conn *c);
void netc_shm_on_bell(struct ev_loop *loop, ev_io *w, int revents);
void netc_shm_on_more(struct ev_loop *loop, ev_timer *w, int revents);

#endif
