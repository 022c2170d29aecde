/* proto.c — encoding and validation of the ps/worker frame header (see proto.h). */
#include "runtime/proto.h"

#include <string.h>

#include "common/dp.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

void proto_encode(const proto_header *h, uint8_t *buf)
{
    put32(buf, PROTO_MAGIC);
    buf[4] = (uint8_t)h->version;
    buf[5] = (uint8_t)(h->version >> 8);
    buf[6] = (uint8_t)h->type;
    buf[7] = (uint8_t)(h->type >> 8);
    put32(buf + 8, h->length);
    put32(buf + 12, h->var);
    put64(buf + 16, (uint64_t)h->arg0);
    put64(buf + 24, (uint64_t)h->arg1);
}

static const char *const type_names[MSG_TYPE_COUNT] = {
    [MSG_HELLO] = "HELLO", [MSG_HELLO_OK] = "HELLO_OK", [MSG_INIT] = "INIT",
    [MSG_INIT_OK] = "INIT_OK", [MSG_PULL] = "PULL", [MSG_PULL_RESP] = "PULL_RESP",
    [MSG_PUSH] = "PUSH", [MSG_PUSH_ACK] = "PUSH_ACK", [MSG_SSP_WAIT] = "SSP_WAIT",
    [MSG_SSP_GO] = "SSP_GO", [MSG_DONE] = "DONE", [MSG_ERROR] = "ERROR",
    [MSG_RELEASE] = "RELEASE", [MSG_INIT_SLOT] = "INIT_SLOT", [MSG_SLOT_RESP] = "SLOT_RESP",
    [MSG_FINAL_STEP] = "FINAL_STEP", [MSG_FINAL_STEP_RESP] = "FINAL_STEP_RESP",
    [MSG_WAITING] = "WAITING", [MSG_AUTH_HELLO] = "AUTH_HELLO",
    [MSG_AUTH_CHALLENGE] = "AUTH_CHALLENGE", [MSG_AUTH_PROOF] = "AUTH_PROOF",
    [MSG_AUTH_OK] = "AUTH_OK",
};

const char *proto_type_name(int type)
{
    if (type <= 0 || type >= MSG_TYPE_COUNT) return "?";
    return type_names[type];
}

/* Which types carry a payload: tensors (bounded by PROTO_MAX_PAYLOAD, a multiple of 4),
 * text (bounded by PROTO_MAX_TEXT), exactly PROTO_AUTH_BYTES (the handshake) or, for
 * HELLO, none or a session token; the rest carry none. */
static int payload_kind(int type)
{
    switch (type) {
    case MSG_INIT: case MSG_PULL_RESP: case MSG_PUSH: case MSG_INIT_SLOT: case MSG_SLOT_RESP: return 1;
    case MSG_ERROR: return 2;
    case MSG_AUTH_HELLO: case MSG_AUTH_CHALLENGE: case MSG_AUTH_PROOF: case MSG_AUTH_OK: return 3;
    case MSG_HELLO: return 4;
    default: return 0;
    }
}

int proto_decode(const uint8_t *buf, proto_header *h, char *err)
{
    uint32_t magic = get32(buf);
    if (magic != PROTO_MAGIC)
        return dp_fail(err, DP_EPROTO, "bad magic 0x%08x, expected 0x%08x", magic, PROTO_MAGIC);
    h->version = (uint16_t)(buf[4] | buf[5] << 8);
    h->type = (uint16_t)(buf[6] | buf[7] << 8);
    h->length = get32(buf + 8);
    h->var = get32(buf + 12);
    h->arg0 = (int64_t)get64(buf + 16);
    h->arg1 = (int64_t)get64(buf + 24);
    if (h->version != PROTO_VERSION)
        return dp_fail(err, DP_EPROTO, "protocol version %u, expected %u", h->version,
                       PROTO_VERSION);
    if (h->type == 0 || h->type >= MSG_TYPE_COUNT)
        return dp_fail(err, DP_EPROTO, "unknown message type %u", h->type);
    switch (payload_kind(h->type)) {
    case 0:
        if (h->length != 0)
            return dp_fail(err, DP_EPROTO, "%s carries %u payload bytes, expected 0",
                           proto_type_name(h->type), h->length);
        break;
    case 1:
        if (h->length > PROTO_MAX_PAYLOAD)
            return dp_fail(err, DP_EPROTO, "payload of %u bytes exceeds limit %u", h->length,
                           PROTO_MAX_PAYLOAD);
        if (h->length % 4)
            return dp_fail(err, DP_EPROTO, "%s payload of %u bytes is not whole floats",
                           proto_type_name(h->type), h->length);
        break;
    case 2:
        if (h->length > PROTO_MAX_TEXT)
            return dp_fail(err, DP_EPROTO, "ERROR text of %u bytes exceeds limit %u", h->length,
                           PROTO_MAX_TEXT);
        break;
    case 3:
        if (h->length != PROTO_AUTH_BYTES)
            return dp_fail(err, DP_EPROTO, "%s carries %u payload bytes, expected %u",
                           proto_type_name(h->type), h->length, PROTO_AUTH_BYTES);
        break;
    case 4:
        if (h->length != 0 && h->length != PROTO_TOKEN_BYTES)
            return dp_fail(err, DP_EPROTO, "%s carries %u payload bytes, expected 0 or %u",
                           proto_type_name(h->type), h->length, PROTO_TOKEN_BYTES);
        break;
    }
    return DP_OK;
}
