/* test_proto.c — the ps/worker protocol's table (runtime/proto.c) through the one frame
 * codec (net/frame.c): every type round-trips; each type's payload rule is enforced
 * before any payload is read (tensors whole floats and bounded, HELLO none or a token,
 * the handshake exactly 32 bytes, the shm offer 56, ERROR text bounded); a stream frame on a ps
 * connection, a bad magic, another version, unknown types are refused. The connection
 * itself is tests/test_net.c's. */
#include <stdint.h>
#include <string.h>

#include "common/dp.h"
#include "hub/wire.h"
#include "net/frame.h"
#include "runtime/proto.h"
#include "tests/check.h"

static int decode(net_frame h, net_frame *g, char *err)
{
    uint8_t buf[NET_HEADER];
    h.proto = NET_PROTO_PS;
    net_frame_encode(&h, buf);
    return net_frame_decode(buf, &proto_ps, g, err);
}

/* What each type's payload may be, written out here (not read from the table). */
static uint32_t good_len(int t)
{
    switch (t) {
    case MSG_INIT: case MSG_PULL_RESP: case MSG_PUSH: case MSG_INIT_SLOT: case MSG_SLOT_RESP: return 4000;
    case MSG_ERROR: return 12;
    case NET_T_AUTH_HELLO: case NET_T_AUTH_CHALLENGE: case NET_T_AUTH_PROOF: case NET_T_AUTH_OK: return 32;
    case MSG_HELLO: return PROTO_TOKEN_BYTES;
    case NET_T_SHM_OFFER: return 56;
    case NET_T_SHM_ANSWER: return 256;   /* a declining answer's reason, at most */
    default: return 0;
    }
}

int main(void)
{
    char err[DP_ERRLEN];
    net_frame g;
    int known = 0;
    for (int t = 1; t < MSG_TYPE_COUNT; t++) {
        if (!strcmp(proto_type_name(t), "?")) {
            CHECK_MSG(t > NET_T_AUTH_OK && t < NET_T_FIRST, "type %d has no name", t);
            net_frame h = {.type = (uint16_t)t};
            CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "unknown"));
            continue;
        }
        known++;
        net_frame h = {.type = (uint16_t)t, .length = good_len(t), .id = 77, .arg0 = -5, .arg1 = INT64_MAX};
        CHECK_MSG(decode(h, &g, err) == DP_OK, "%s: %s", proto_type_name(t), err);
        CHECK(g.type == t && g.length == good_len(t) && g.id == 77 && g.arg0 == -5 && g.arg1 == INT64_MAX);
        /* One byte more than allowed is refused for every type. */
        h.length = good_len(t) + (t == MSG_ERROR ? NET_MAX_TEXT : 1);
        CHECK_MSG(decode(h, &g, err) == DP_EPROTO, "%s with %u bytes", proto_type_name(t), h.length);
    }
    CHECK(known == 24);   /* ERROR, 4 of the handshake, 2 of the shm upgrade, 17 of the ps */
    net_frame h = {.type = NET_T_AUTH_PROOF, .length = 64};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "AUTH_PROOF carries 64 payload bytes"));
    h = (net_frame){.type = MSG_SLOT_RESP, .length = 6};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "not whole floats"));
    h = (net_frame){.type = MSG_FINAL_STEP, .length = 8};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "FINAL_STEP carries 8"));
    h = (net_frame){.type = MSG_PUSH, .length = PROTO_MAX_PAYLOAD + 4};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "outside its bound"));
    h.length = 0xffffffffu;
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "outside its bound"));
    h.length = PROTO_MAX_PAYLOAD;
    CHECK(decode(h, &g, err) == DP_OK);
    h.length = 7;
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "not whole floats"));
    h = (net_frame){.type = MSG_HELLO, .length = 12};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "HELLO carries 12 payload bytes"));
    h = (net_frame){.type = MSG_ERROR, .length = NET_MAX_TEXT + 1};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "ERROR carries"));
    h = (net_frame){.type = 99};
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "unknown ps/worker frame type 99"));
    h.type = 0;
    CHECK(decode(h, &g, err) == DP_EPROTO && strstr(err, "unknown ps/worker frame type 0"));
    /* The header's own fields. */
    uint8_t buf[NET_HEADER];
    h = (net_frame){.proto = NET_PROTO_PS, .type = MSG_PUSH, .length = 8};
    net_frame_encode(&h, buf);
    buf[0] ^= 1;
    CHECK(net_frame_decode(buf, &proto_ps, &g, err) == DP_EPROTO && strstr(err, "bad magic"));
    net_frame_encode(&h, buf);
    buf[4] = 2;
    CHECK(net_frame_decode(buf, &proto_ps, &g, err) == DP_EPROTO && strstr(err, "version 2"));
    /* An event-stream frame reaching a ps (or the other way round). */
    h = (net_frame){.proto = NET_PROTO_STREAM, .type = EVT_F_HELLO_SUB, .length = 4};
    net_frame_encode(&h, buf);
    CHECK(net_frame_decode(buf, &proto_ps, &g, err) == DP_EPROTO && strstr(err, "of the ps/worker protocol"));
    CHECK(net_frame_decode(buf, &evt_wire_proto, &g, err) == DP_OK && g.type == EVT_F_HELLO_SUB);
    h = (net_frame){.proto = NET_PROTO_PS, .type = MSG_HELLO};
    net_frame_encode(&h, buf);
    CHECK(net_frame_decode(buf, &evt_wire_proto, &g, err) == DP_EPROTO && strstr(err, "of the event stream protocol"));
    /* The shared types are the same in both protocols. */
    for (int t = NET_T_ERROR; t <= NET_T_AUTH_OK; t++)
        CHECK(!strcmp(proto_type_name(t), net_type_name(&evt_wire_proto, t)));
    /* A type outside the table (a peer's, in an error message) is "?", never read past it. */
    static const int outside[] = {0, -1, -70000, 1 << 30};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        CHECK_MSG(!strcmp(net_type_name(&proto_ps, outside[i]), "?"), "type %d is \"?\"", outside[i]);
    CHECK(!strcmp(net_type_name(&proto_ps, proto_ps.ntypes), "?"));
    CHECK(!strcmp(net_type_name(&evt_wire_proto, evt_wire_proto.ntypes + 1000000), "?"));
    return CHECK_DONE();
}
