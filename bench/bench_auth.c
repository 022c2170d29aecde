/* bench_auth.c — the cost of one connection's authentication (net/auth.h): both sides of
 * the mutual challenge-response in one process — two fresh nonces, two proofs made and
 * two checked (crypto_auth, HMAC-SHA-512-256) — timed over N handshakes. On a real
 * connection the four messages add two round trips (loopback: tens of microseconds).
 * Prints "handshake_us X" and "handshakes_per_s Y". Usage: bench_auth [N]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "net/auth.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    if (n < 1) n = 1;
    auth_key key;
    char err[DP_ERRLEN];
    const char *secret = "bench-secret-0123456789abcdef";
    if (auth_key_from_secret(&key, secret, strlen(secret), "bench", err)) {
        fprintf(stderr, "bench_auth: %s\n", err);
        return 1;
    }
    int bad = 0;
    uint64_t t0 = dp_now_ns();
    for (long i = 0; i < n; i++) {
        auth_hs c, s;
        uint8_t nc[AUTH_NONCE_BYTES], ns[AUTH_NONCE_BYTES], pc[AUTH_PROOF_BYTES], psf[AUTH_PROOF_BYTES];
        auth_hs_start(&c, AUTH_CLIENT, AUTH_CTX_PS, nc);
        auth_hs_start(&s, AUTH_SERVER, AUTH_CTX_PS, ns);
        auth_hs_peer_nonce(&s, nc);
        auth_hs_peer_nonce(&c, ns);
        auth_hs_prove(&c, &key, pc);
        bad |= auth_hs_verify(&s, &key, pc);
        auth_hs_prove(&s, &key, psf);
        bad |= auth_hs_verify(&c, &key, psf);
        auth_hs_clear(&c);
        auth_hs_clear(&s);
    }
    double s = (double)(dp_now_ns() - t0) / 1e9;
    auth_key_clear(&key);
    if (bad) {
        fprintf(stderr, "bench_auth: a proof did not verify\n");
        return 1;
    }
    printf("handshakes %ld\nhandshake_us %.3f\nhandshakes_per_s %.0f\n", n, s / (double)n * 1e6, (double)n / s);
    return 0;
}
