/* auth.h — the shared secret and the mutual challenge-response every connection of a
 * run starts with (docs/security.md). The secret comes from `--secret-file FILE` or the
 * environment variable DOWNPOUR_SECRET (the launcher generates one for its children);
 * a 32-byte key is derived from it with crypto_generichash (BLAKE2b). The handshake is
 * pure functions over byte buffers, so any framing can carry it:
 *
 *   client -> server  nonce_c        (32 random bytes)
 *   server -> client  nonce_s        (32 random bytes)
 *   client -> server  proof_c = crypto_auth(key, "downpour-auth v1" | 'C' | context | nonce_c | nonce_s)
 *   server -> client  proof_s = crypto_auth(key, "downpour-auth v1" | 'S' | context | nonce_c | nonce_s)
 *
 * crypto_auth is HMAC-SHA-512-256; proofs are checked with crypto_auth_verify (constant
 * time). Each side's nonce is fresh, so a recorded transcript does not verify again; the
 * server proves itself only after the client has, so an unauthenticated peer learns no
 * keyed value. No state besides what the caller holds; thread-safe (libsodium is
 * initialised on first use). */
#ifndef NET_AUTH_H
#define NET_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_ENV "DOWNPOUR_SECRET"
#define AUTH_HUB_ENV "DOWNPOUR_HUB_SECRET"  /* the hub connections' own, when set ("": none) */
#define AUTH_KEY_BYTES 32
#define AUTH_NONCE_BYTES 32
#define AUTH_PROOF_BYTES 32
#define AUTH_MIN_SECRET 16        /* bytes: shorter secrets are refused */
#define AUTH_MAX_SECRET 4096
#define AUTH_TOKEN_CHARS 32       /* a viewer token: 16 bytes in hex */

/* The connection kinds, named in every proof: a proof for one kind is no proof for
 * another. */
#define AUTH_CTX_PS "downpour ps/worker v1"
#define AUTH_CTX_HUB "downpour hub v1"

/* A derived key; set == 0: no secret configured (no handshake). Embedded by value;
 * clear with auth_key_clear. */
typedef struct auth_key {
    int set;
    uint8_t k[AUTH_KEY_BYTES];
} auth_key;

/* Derives key from secret bytes (what names the source in messages). Returns 0, or
 * DP_EINVAL when the secret is shorter than AUTH_MIN_SECRET or longer than
 * AUTH_MAX_SECRET bytes. */
int auth_key_from_secret(auth_key *key, const char *secret, size_t len, const char *what, char *err);

/* The key of $DOWNPOUR_SECRET: key->set = 0 (and 0 returned) when it is unset;
 * DP_EINVAL when it is set but empty or too short. */
int auth_key_from_env(auth_key *key, char *err);

/* The key of the hub connections (task -> hub, viewer -> hub, and the hub itself):
 * $DOWNPOUR_HUB_SECRET when set (empty: none), else $DOWNPOUR_SECRET. The launcher sets
 * it empty when it generated the run's secret and the tasks stream to a hub it did not
 * start (`cluster --hub ADDR`), which cannot know that secret. */
int auth_hub_key_from_env(auth_key *key, char *err);

/* Both secrets of the environment ($DOWNPOUR_SECRET, $DOWNPOUR_HUB_SECRET) read and
 * dropped: a command checks them once, before it starts anything, so that a bad one is a
 * usage error rather than a failure on the way. 0 or DP_EINVAL with err naming it. */
int auth_env_check(char *err);

/* `--secret-file FILE`: reads the file (trailing newlines and spaces stripped), refuses
 * one that is missing, empty, shorter than AUTH_MIN_SECRET, or readable by every user,
 * with a message naming it, and puts the secret in $DOWNPOUR_SECRET so that this
 * process and the tasks it starts use it. Returns 0 or DP_EINVAL / DP_EIO. */
int auth_secret_file_to_env(const char *path, char *err);

/* A fresh random secret: 2 * AUTH_KEY_BYTES hex characters and a NUL into hex (n >=
 * 65 bytes). */
void auth_generate_secret(char *hex, size_t n);

/* The read-only viewer token of key (AUTH_TOKEN_CHARS hex characters and a NUL into
 * out, n >= 33): a subscriber may present it as its secret; it derives nothing else. */
void auth_viewer_token(const auth_key *key, char *out, size_t n);

/* Zeroes n bytes at p where the compiler cannot skip it (sodium_memzero). */
void auth_memzero(void *p, size_t n);

/* Zeroes key (sodium_memzero). */
void auth_key_clear(auth_key *key);

/* 1 when host names a loopback address (127.x, ::1, localhost), else 0 (0.0.0.0, "", a
 * routable address or name). */
int auth_host_is_loopback(const char *host);

/* One handshake's state, held by the side running it. Embedded by value. */
enum { AUTH_CLIENT = 'C', AUTH_SERVER = 'S' };
typedef struct auth_hs {
    int role;                     /* AUTH_CLIENT or AUTH_SERVER */
    const char *context;          /* AUTH_CTX_*: borrowed, a string literal */
    uint8_t nonce_c[AUTH_NONCE_BYTES], nonce_s[AUTH_NONCE_BYTES];
} auth_hs;

/* Starts a handshake as role: draws this side's fresh nonce (randombytes_buf) and
 * copies it to nonce_out, to be sent to the peer. */
void auth_hs_start(auth_hs *hs, int role, const char *context, uint8_t nonce_out[AUTH_NONCE_BYTES]);

/* Records the peer's nonce. */
void auth_hs_peer_nonce(auth_hs *hs, const uint8_t nonce[AUTH_NONCE_BYTES]);

/* This side's proof of the key over both nonces, into proof. */
void auth_hs_prove(const auth_hs *hs, const auth_key *key, uint8_t proof[AUTH_PROOF_BYTES]);

/* Checks the peer's proof (constant time). Returns 0 when it is right, -1 otherwise. */
int auth_hs_verify(const auth_hs *hs, const auth_key *key, const uint8_t proof[AUTH_PROOF_BYTES]);

/* Wipes the handshake state. */
void auth_hs_clear(auth_hs *hs);

#endif
