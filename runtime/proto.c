/* proto.c — the ps/worker protocol's table (see proto.h): each type's name and the
 * payload it allows; net_frame_decode checks every header against it. */
#include "runtime/proto.h"

#include "common/dp.h"

static const net_type types[MSG_TYPE_COUNT] = {
    NET_COMMON_TYPES,
    [MSG_HELLO] = {"HELLO", NET_LEN_NONE_OR, PROTO_TOKEN_BYTES},
    [MSG_HELLO_OK] = {"HELLO_OK", NET_LEN_NONE, 0},
    [MSG_INIT] = {"INIT", NET_LEN_FLOATS, PROTO_MAX_PAYLOAD},
    [MSG_INIT_OK] = {"INIT_OK", NET_LEN_NONE, 0},
    [MSG_PULL] = {"PULL", NET_LEN_NONE, 0},
    [MSG_PULL_RESP] = {"PULL_RESP", NET_LEN_FLOATS, PROTO_MAX_PAYLOAD},
    [MSG_PUSH] = {"PUSH", NET_LEN_FLOATS, PROTO_MAX_PAYLOAD},
    [MSG_PUSH_ACK] = {"PUSH_ACK", NET_LEN_NONE, 0},
    [MSG_SSP_WAIT] = {"SSP_WAIT", NET_LEN_NONE, 0},
    [MSG_SSP_GO] = {"SSP_GO", NET_LEN_NONE, 0},
    [MSG_DONE] = {"DONE", NET_LEN_NONE, 0},
    [MSG_RELEASE] = {"RELEASE", NET_LEN_NONE, 0},
    [MSG_INIT_SLOT] = {"INIT_SLOT", NET_LEN_FLOATS, PROTO_MAX_PAYLOAD},
    [MSG_SLOT_RESP] = {"SLOT_RESP", NET_LEN_FLOATS, PROTO_MAX_PAYLOAD},
    [MSG_FINAL_STEP] = {"FINAL_STEP", NET_LEN_NONE, 0},
    [MSG_FINAL_STEP_RESP] = {"FINAL_STEP_RESP", NET_LEN_NONE, 0},
    [MSG_WAITING] = {"WAITING", NET_LEN_NONE, 0},
};

const net_proto proto_ps = {NET_PROTO_PS, "ps/worker", MSG_TYPE_COUNT, types};

const char *proto_type_name(int type) { return net_type_name(&proto_ps, type); }
