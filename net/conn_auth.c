/* conn_auth.c — how a connection opens (conn.h, docs/security.md): with a key, the
 * handshake that runs inside the connection before its owner sees a frame (the client's
 * AUTH_HELLO, the server's AUTH_CHALLENGE, the client's AUTH_PROOF, the server's AUTH_OK:
 * each side proves it knows the secret, net/auth.h); without one, open at once. A client
 * may then offer shared memory before on_open; the upgrade's frames are passed on to
 * conn_shm.c. Until the connection is open only the handshake's frames are read; a
 * failure is logged with the peer's address, the peer is told only a fixed text (or
 * which side lacks the secret) and dropped. One loop thread, as conn.c. */
#include "net/conn_int.h"

#include <stdio.h>

#include "common/dp.h"

void netc_become_open(net_conn *c)
{
    c->hs_state = HS_OPEN;
    c->open_pending = 0;
    if (c->o.role == NET_CLIENT) c->hello_done = 1;
    if (c->h->on_open) c->h->on_open(c, c->ctx);
}

/* A failed handshake: why in our log with the peer's address; the peer is told only
 * `told` (nothing about what was expected) and dropped. */
static void auth_failed(net_conn *c, const char *why, const char *told)
{
    if (c->o.listener) c->o.listener->auth_failures++;
    dp_log(DP_LOG_WARN, c->o.name, "authentication failed from %s: %s", c->peer, why);
    c->kind = NET_CLOSE_AUTH;
    if (c->o.role == NET_SERVER) net_conn_send_error(c, told ? told : "authentication failed");
    else netc_close_as(c, NET_CLOSE_AUTH, why);
}

/* A frame while the handshake runs, or a handshake frame after it. Returns 1 when it
 * was handled here (the owner does not see it). */
int netc_handshake_frame(net_conn *c, const net_frame *f, const uint8_t *p)
{
    char msg[DP_ERRLEN];
    if ((netc_is_shm_type(f->type) || c->hs_state == HS_C_SHM) && netc_shm_frame(c, f, p)) return 1;
    if (c->hs_state == HS_OPEN) {
        if (!netc_is_auth_type(f->type)) return 0;
        if (!c->key.set && c->o.role == NET_SERVER) {
            snprintf(msg, sizeof msg, "this %s has no secret: give the %s and its clients the same secret "
                     "($DOWNPOUR_SECRET or --secret-file), or none", c->o.what, c->o.what);
            dp_log(DP_LOG_WARN, c->o.name, "refused %s: it sent %s, but this %s has no secret", c->peer,
                   net_type_name(c->o.proto, f->type), c->o.what);
            c->kind = NET_CLOSE_AUTH;
            net_conn_send_error(c, msg);
            return 1;
        }
        auth_failed(c, "a handshake frame after the handshake", NULL);
        return 1;
    }
    if (f->type == NET_T_ERROR && c->o.role == NET_CLIENT) {
        int n = f->length > 300 ? 300 : (int)f->length;
        snprintf(msg, sizeof msg, "refused during the handshake: %.*s", n, (const char *)p);
        netc_close_as(c, NET_CLOSE_AUTH, msg);
        return 1;
    }
    uint8_t mine[AUTH_NONCE_BYTES];
    switch (c->hs_state) {
    case HS_S_HELLO:
        if (f->type != NET_T_AUTH_HELLO) {
            char why[160];
            snprintf(msg, sizeof msg, "authentication required: this %s has a secret ($DOWNPOUR_SECRET or "
                     "--secret-file%s)", c->o.what, c->alt_key.set ? "; a viewer may use the viewer token" : "");
            snprintf(why, sizeof why, "%s of %u bytes before the handshake (the peer has no secret?)",
                     net_type_name(c->o.proto, f->type), f->length);
            auth_failed(c, why, msg);
            return 1;
        }
        auth_hs_start(&c->hs, AUTH_SERVER, c->o.auth_context, mine);
        auth_hs_peer_nonce(&c->hs, p);
        c->hs_state = HS_S_PROOF;
        netc_send_internal(c, NET_T_AUTH_CHALLENGE, mine, sizeof mine);
        return 1;
    case HS_S_PROOF: {
        if (f->type != NET_T_AUTH_PROOF) {
            auth_failed(c, "no proof after the challenge", NULL);
            return 1;
        }
        const auth_key *k = &c->key;
        if (auth_hs_verify(&c->hs, k, p) != 0) {
            k = &c->alt_key;
            if (!k->set || auth_hs_verify(&c->hs, k, p) != 0) {
                auth_failed(c, "wrong proof (a different secret, or a replayed handshake)", NULL);
                return 1;
            }
            c->alt_auth = 1;
        }
        auth_hs_prove(&c->hs, k, mine);
        auth_hs_clear(&c->hs);
        netc_send_internal(c, NET_T_AUTH_OK, mine, sizeof mine);
        if (!c->closing) netc_become_open(c);
        return 1;
    }
    case HS_C_CHALLENGE:
        if (f->type != NET_T_AUTH_CHALLENGE) break;
        auth_hs_peer_nonce(&c->hs, p);
        auth_hs_prove(&c->hs, &c->key, mine);
        c->hs_state = HS_C_OK;
        netc_send_internal(c, NET_T_AUTH_PROOF, mine, sizeof mine);
        return 1;
    case HS_C_OK:
        if (f->type != NET_T_AUTH_OK) break;
        if (auth_hs_verify(&c->hs, &c->key, p) != 0) {
            snprintf(msg, sizeof msg, "%s failed to prove it knows the secret (a different secret?)", c->peer);
            auth_failed(c, msg, NULL);
            return 1;
        }
        auth_hs_clear(&c->hs);
        if (!netc_shm_offer(c)) netc_become_open(c);
        return 1;
    default:
        break;
    }
    snprintf(msg, sizeof msg, "%s frame before the peer proved it knows the secret",
             net_type_name(c->o.proto, f->type));
    auth_failed(c, msg, NULL);
    return 1;
}

/* With a key, the handshake's first step; without, open at once (on_open now when in a
 * callback, else at the next loop turn, or before the first frame is delivered). */
void netc_start_handshake(net_conn *c, int in_cb)
{
    if (!c->key.set) {
        c->hs_state = HS_OPEN;
        if (netc_shm_offer(c)) return;
        if (c->o.role == NET_CLIENT) c->hello_done = 1;
        if (in_cb) {
            netc_become_open(c);
        } else {
            c->open_pending = 1;
            ev_timer_start(c->loop, &c->defer);
        }
        return;
    }
    if (c->o.role == NET_SERVER) {
        c->hs_state = HS_S_HELLO;
        return;
    }
    uint8_t nonce[AUTH_NONCE_BYTES];
    auth_hs_start(&c->hs, AUTH_CLIENT, c->o.auth_context, nonce);
    c->hs_state = HS_C_CHALLENGE;
    netc_send_internal(c, NET_T_AUTH_HELLO, nonce, sizeof nonce);
}
