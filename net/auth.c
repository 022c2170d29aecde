/* auth.c — secret loading, key derivation and the challenge-response (see auth.h). The
 * only cryptography is libsodium's: crypto_generichash (key derivation, viewer token),
 * crypto_auth / crypto_auth_verify (HMAC-SHA-512-256), randombytes_buf (nonces,
 * generated secrets), sodium_memzero. */
#include "net/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "common/dp.h"

static const char kdf_label[] = "downpour secret v1";  /* with its NUL: the key's domain */
static const char proof_label[] = "downpour-auth v1";
static const char token_label[] = "downpour viewer token v1";

static void auth_init(void)
{
    dp_assert("auth: libsodium failed to initialise", sodium_init() >= 0);
}

int auth_key_from_secret(auth_key *key, const char *secret, size_t len, const char *what, char *err)
{
    memset(key, 0, sizeof *key);
    if (len < AUTH_MIN_SECRET)
        return dp_fail(err, DP_EINVAL, "%s: the secret is %s (%zu bytes); at least %d are needed",
                       what, len ? "too short" : "empty", len, AUTH_MIN_SECRET);
    if (len > AUTH_MAX_SECRET)
        return dp_fail(err, DP_EINVAL, "%s: the secret is longer than %d bytes", what, AUTH_MAX_SECRET);
    auth_init();
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, AUTH_KEY_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)kdf_label, sizeof kdf_label);
    crypto_generichash_update(&st, (const unsigned char *)secret, len);
    crypto_generichash_final(&st, key->k, AUTH_KEY_BYTES);
    sodium_memzero(&st, sizeof st);
    key->set = 1;
    return DP_OK;
}

int auth_key_from_env(auth_key *key, char *err)
{
    memset(key, 0, sizeof *key);
    const char *s = getenv(AUTH_ENV);
    if (!s) return DP_OK;
    return auth_key_from_secret(key, s, strlen(s), "$" AUTH_ENV, err);
}

int auth_env_check(char *err)
{
    auth_key k;
    int rc = auth_key_from_env(&k, err);
    if (rc == DP_OK) rc = auth_hub_key_from_env(&k, err);
    auth_key_clear(&k);
    return rc;
}

int auth_hub_key_from_env(auth_key *key, char *err)
{
    memset(key, 0, sizeof *key);
    const char *s = getenv(AUTH_HUB_ENV);
    if (!s) return auth_key_from_env(key, err);
    if (!*s) return DP_OK;
    return auth_key_from_secret(key, s, strlen(s), "$" AUTH_HUB_ENV, err);
}

int auth_secret_file_to_env(const char *path, char *err)
{
    char buf[AUTH_MAX_SECRET + 2];
    int rc = DP_OK;
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return dp_fail(err, DP_EIO, "--secret-file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH)) {
        rc = dp_fail(err, DP_EINVAL, "--secret-file %s: readable by every user (mode %03o); "
                     "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
        goto fail;
    }
    n = fread(buf, 1, sizeof buf - 1, f);
    if (ferror(f)) {
        rc = dp_fail(err, DP_EIO, "--secret-file %s: %s", path, strerror(errno));
        goto fail;
    }
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
    buf[n] = 0;
    if (memchr(buf, 0, n)) {
        rc = dp_fail(err, DP_EINVAL, "--secret-file %s: the secret holds a NUL byte", path);
        goto fail;
    }
    char what[DP_ERRLEN];
    snprintf(what, sizeof what, "--secret-file %s", path);
    auth_key probe;
    rc = auth_key_from_secret(&probe, buf, n, what, err);
    auth_key_clear(&probe);
    if (rc) goto fail;
    if (setenv(AUTH_ENV, buf, 1) != 0)
        rc = dp_fail(err, DP_EIO, "--secret-file %s: setenv: %s", path, strerror(errno));
fail:
    sodium_memzero(buf, sizeof buf);
    fclose(f);
    return rc;
}

void auth_generate_secret(char *hex, size_t n)
{
    dp_assert("auth: secret buffer too small", n >= 2 * AUTH_KEY_BYTES + 1);
    auth_init();
    uint8_t raw[AUTH_KEY_BYTES];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, n, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
}

void auth_viewer_token(const auth_key *key, char *out, size_t n)
{
    dp_assert("auth: token buffer too small", n >= AUTH_TOKEN_CHARS + 1);
    auth_init();
    uint8_t raw[AUTH_TOKEN_CHARS / 2];
    crypto_generichash(raw, sizeof raw, (const unsigned char *)token_label, sizeof token_label - 1,
                       key->k, AUTH_KEY_BYTES);
    sodium_bin2hex(out, n, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
}

void auth_memzero(void *p, size_t n)
{
    sodium_memzero(p, n);
}

void auth_key_clear(auth_key *key)
{
    sodium_memzero(key, sizeof *key);
}

int auth_host_is_loopback(const char *host)
{
    if (!host) return 0;
    if (host[0] == '[') host++;
    return !strncmp(host, "127.", 4) || !strncmp(host, "::1", 3) || !strcmp(host, "localhost");
}

void auth_hs_start(auth_hs *hs, int role, const char *context, uint8_t nonce_out[AUTH_NONCE_BYTES])
{
    dp_assert("auth: role is AUTH_CLIENT or AUTH_SERVER", role == AUTH_CLIENT || role == AUTH_SERVER);
    auth_init();
    memset(hs, 0, sizeof *hs);
    hs->role = role;
    hs->context = context;
    uint8_t *mine = role == AUTH_CLIENT ? hs->nonce_c : hs->nonce_s;
    randombytes_buf(mine, AUTH_NONCE_BYTES);
    memcpy(nonce_out, mine, AUTH_NONCE_BYTES);
}

void auth_hs_peer_nonce(auth_hs *hs, const uint8_t nonce[AUTH_NONCE_BYTES])
{
    memcpy(hs->role == AUTH_CLIENT ? hs->nonce_s : hs->nonce_c, nonce, AUTH_NONCE_BYTES);
}

/* The transcript `role` proves: label | role | context | nonce_c | nonce_s, into msg;
 * returns its length. */
#define AUTH_MSG_MAX (sizeof proof_label + 1 + 128 + 2 * AUTH_NONCE_BYTES)
static size_t transcript(const auth_hs *hs, int role, uint8_t msg[AUTH_MSG_MAX])
{
    size_t cl = strlen(hs->context), n = 0;
    dp_assert("auth: context string too long", cl <= 128);
    memcpy(msg, proof_label, sizeof proof_label - 1);
    n += sizeof proof_label - 1;
    msg[n++] = (uint8_t)role;
    memcpy(msg + n, hs->context, cl);
    n += cl;
    memcpy(msg + n, hs->nonce_c, AUTH_NONCE_BYTES);
    n += AUTH_NONCE_BYTES;
    memcpy(msg + n, hs->nonce_s, AUTH_NONCE_BYTES);
    return n + AUTH_NONCE_BYTES;
}

void auth_hs_prove(const auth_hs *hs, const auth_key *key, uint8_t proof[AUTH_PROOF_BYTES])
{
    uint8_t msg[AUTH_MSG_MAX];
    size_t n = transcript(hs, hs->role, msg);
    crypto_auth(proof, msg, n, key->k);
}

int auth_hs_verify(const auth_hs *hs, const auth_key *key, const uint8_t proof[AUTH_PROOF_BYTES])
{
    if (!key->set) return -1;
    uint8_t msg[AUTH_MSG_MAX];
    size_t n = transcript(hs, hs->role == AUTH_CLIENT ? AUTH_SERVER : AUTH_CLIENT, msg);
    return crypto_auth_verify(proof, msg, n, key->k) == 0 ? 0 : -1;
}

void auth_hs_clear(auth_hs *hs)
{
    sodium_memzero(hs, sizeof *hs);
}
