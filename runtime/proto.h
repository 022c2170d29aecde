/* proto.h — the ps/worker protocol: the vocabulary of NET_PROTO_PS frames (net/frame.h:
 * one 32-byte header, then `length` payload bytes: float32 tensors or UTF-8 text). The
 * header's id is the variable, arg0 / arg1 the fields below. Tensor payloads are raw
 * floats, so they are read straight into their destination (a worker's parameter
 * buffer, a ps connection's gradient buffer) with no staging copy. ERROR and the
 * handshake (NET_T_ERROR, NET_T_AUTH_*) are net/'s, run by net/conn_auth.c. proto_types is
 * the table net_frame_decode checks every header against. */
#ifndef RUNTIME_PROTO_H
#define RUNTIME_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "net/frame.h"

#define PROTO_MAX_PAYLOAD (64u << 20) /* 64 MiB: the largest variable we allow */
#define PROTO_TOKEN_BYTES 8  /* HELLO's optional session token */

/* Message types. Field use (var: the header's id, a variable's id):
 *   HELLO     w->ps  id=worker index, arg0=config hash, arg1=steps the worker completed
 *                    (its SSP clock: a worker reconnecting after a lost ps carries on),
 *                    payload=none or 8 bytes: the worker process's random session token
 *                    (u64 LE; a HELLO for a slot held by a live connection replaces it
 *                    only when it carries the holder's token: the same process
 *                    reconnecting; any other claim is refused)
 *   HELLO_OK  ps->w  id=ps index, arg0=config hash, arg1=the SSP gate's clock for this
 *                    worker (the ps holding the gate; -1 elsewhere): a restarted worker
 *                    process, whose HELLO said 0, counts its clock on from it
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
    MSG_ERROR = NET_T_ERROR,
    MSG_HELLO = NET_T_FIRST, MSG_HELLO_OK, MSG_INIT, MSG_INIT_OK, MSG_PULL, MSG_PULL_RESP,
    MSG_PUSH, MSG_PUSH_ACK, MSG_SSP_WAIT, MSG_SSP_GO, MSG_DONE, MSG_RELEASE,
    MSG_INIT_SLOT, MSG_SLOT_RESP, MSG_FINAL_STEP, MSG_FINAL_STEP_RESP, MSG_WAITING,
    MSG_TYPE_COUNT
};

/* The protocol: every type and the payload it allows. */
extern const net_proto proto_ps;

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

/* "PULL", "PUSH_ACK", ... or "?" */
const char *proto_type_name(int type);

#endif
