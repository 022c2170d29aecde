/* proto.h — the ps/worker wire protocol. Every message is a 32-byte little-endian header
 * followed by `length` payload bytes (float32 tensors or UTF-8 text):
 *
 *   u32 magic "DPWR" | u16 version | u16 type | u32 length | u32 var | i64 arg0 | i64 arg1
 *
 * Tensor payloads are raw floats, so they are read straight into their destination
 * (a worker's parameter buffer, a ps connection's gradient buffer) with no staging copy.
 * A header is validated before any payload is read or allocated: magic, version, known
 * type, length <= PROTO_MAX_PAYLOAD and what the type allows. Pure encoding, no I/O. */
#ifndef RUNTIME_PROTO_H
#define RUNTIME_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x52575044u /* "DPWR" little-endian */
#define PROTO_VERSION 1
#define PROTO_HEADER_SIZE 32
#define PROTO_MAX_PAYLOAD (64u << 20) /* 64 MiB: the largest variable we allow */
#define PROTO_MAX_TEXT 4096
#define PROTO_AUTH_BYTES 32  /* every AUTH_* payload: a nonce or a proof */
#define PROTO_TOKEN_BYTES 8  /* HELLO's optional session token */

/* Message types. Field use:
 *   AUTH_HELLO w->ps payload=the worker's 32-byte nonce: the first frame when a secret is
 *                    configured (net/auth.h; docs/security.md)
 *   AUTH_CHALLENGE ps->w payload=the ps's 32-byte nonce
 *   AUTH_PROOF w->ps payload=the worker's 32-byte proof of the key over both nonces
 *   AUTH_OK   ps->w  payload=the ps's 32-byte proof (the worker checks it: mutual)
 *   HELLO     w->ps  var=worker index, arg0=config hash, arg1=steps the worker completed
 *                    (its SSP clock: a worker reconnecting after a lost ps carries on),
 *                    payload=none or 8 bytes: the worker process's random session token
 *                    (u64 LE; a HELLO for a slot held by a live connection replaces it
 *                    only when it carries the holder's token: the same process
 *                    reconnecting; any other claim is refused)
 *   HELLO_OK  ps->w  var=ps index, arg0=config hash
 *   INIT      chief->ps var, arg0=global step to start from, arg1=INIT_* flags | session << 8,
 *                    payload=floats (ignored when the variable is initialised, unless
 *                    INIT_RESTORE)
 *   INIT_OK   ps->chief var, arg0=1 if the INIT's value was taken (0: the variable was
 *                    initialised already, as for a restarted chief)
 *   PULL      w->ps  var, arg0=worker local step, arg1=PULL_* flags | session << 8
 *                    (answered once var is initialised, and restored to that session)
 *   PULL_RESP ps->w  var, arg0=version, arg1=the session its value belongs to, payload=floats
 *   PUSH      w->ps  var, arg0=version read, arg1=worker clock (steps completed), payload=gradient
 *   PUSH_ACK  ps->w  var, arg0=version after, arg1=status | staleness << 8
 *   SSP_WAIT  w->ps  arg0=step the worker wants to start   (answered when the bound allows)
 *   SSP_GO    ps->w  arg0=step, arg1=slowest clock
 *   DONE      w->ps  arg0=steps completed
 *   RELEASE   ps->w  var, arg0=version after: a sync gradient acknowledged as ACCUMULATED
 *                    has been applied with the step's others (the worker may go on)
 *   INIT_SLOT chief->ps var, arg1=INIT_* flags, payload=the optimizer's slot (accumulator)
 *                    floats, sent before the variable's INIT when restoring a checkpoint;
 *                    answered INIT_OK
 *   SLOT_RESP ps->w  var, arg0=version, payload=slot floats: sent right after the PULL_RESP
 *                    of a PULL whose arg1 has PULL_WITH_SLOT (same loop turn: consistent)
 *   FINAL_STEP w->ps  (the ps holding global_step) answer once every other worker is done
 *   FINAL_STEP_RESP ps->w arg0=the global step then: the run's final step
 *   WAITING   ps->w  var, arg0=a worker the sync step still waits for, arg1=ms waited: sent
 *                    to the workers held at the barrier every 2 s, and once at
 *                    --barrier-timeout (the worker then stops the run)
 *   ERROR     either payload=text; the sender closes after it */
enum proto_type {
    MSG_HELLO = 1, MSG_HELLO_OK, MSG_INIT, MSG_INIT_OK, MSG_PULL, MSG_PULL_RESP,
    MSG_PUSH, MSG_PUSH_ACK, MSG_SSP_WAIT, MSG_SSP_GO, MSG_DONE, MSG_ERROR, MSG_RELEASE,
    MSG_INIT_SLOT, MSG_SLOT_RESP, MSG_FINAL_STEP, MSG_FINAL_STEP_RESP, MSG_WAITING,
    MSG_AUTH_HELLO, MSG_AUTH_CHALLENGE, MSG_AUTH_PROOF, MSG_AUTH_OK,
    MSG_TYPE_COUNT
};

/* PULL arg1 flag: also send the variable's optimizer slot (checkpoints). */
#define PULL_WITH_SLOT 1

/* INIT / INIT_SLOT arg1 flags. INIT_RESTORE: the chief restores the session after a ps
 * was lost: overwrite an initialised variable (value, version, pending sync gradients).
 * INIT_FRESH_SLOT: the optimizer's slot starts again from its initial value (a restore
 * without a checkpoint: the seed's values at step 0). */
#define INIT_RESTORE 1
#define INIT_FRESH_SLOT 2

/* Sessions: 0 is the chief's first initialisation; each restore after a lost ps starts
 * the next (INIT arg1 >> 8). A worker that reconnected pulls only values of a session
 * newer than the one it trained in (PULL arg1 >> 8), so that no gradient of the new
 * session is computed from values of the old. */
#define PROTO_SESSION_SHIFT 8
#define PROTO_SESSION(arg1) ((int64_t)((uint64_t)(arg1) >> PROTO_SESSION_SHIFT))

enum { ACK_APPLIED = 0, ACK_ACCUMULATED = 1, ACK_DROPPED = 2 };

typedef struct proto_header {
    uint16_t version;
    uint16_t type;
    uint32_t length;
    uint32_t var;
    int64_t arg0;
    int64_t arg1;
} proto_header;

/* Writes h (with PROTO_MAGIC) into buf[PROTO_HEADER_SIZE]. */
void proto_encode(const proto_header *h, uint8_t *buf);

/* Decodes and validates buf[PROTO_HEADER_SIZE]. Returns 0, or DP_EPROTO with a reason in
 * err ("bad magic 0x...", "protocol version 2, expected 1", "unknown message type 99",
 * "payload of 70000000 bytes exceeds limit 67108864", "HELLO carries 12 payload bytes,
 * expected 0 or 8", "AUTH_PROOF carries 5 payload bytes, expected 32"). */
int proto_decode(const uint8_t *buf, proto_header *h, char *err);

/* "PULL", "PUSH_ACK", ... or "?" */
const char *proto_type_name(int type);

#endif
