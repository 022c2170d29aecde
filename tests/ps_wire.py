"""ps_wire.py: the ps/worker protocol as the test scripts' python clients speak it,
written from docs/wire.md (net/frame.h: a 32-byte little-endian header, then the
payload; runtime/proto.h: the types). Used by it_proto.sh, it_checkpoint.sh and
it_numerics.sh; auth_client.py adds the handshake."""
import socket
import struct
import time

MAGIC = 0x464E5044  # "DPNF"
PROTO_PS, PROTO_STREAM = 1, 2
# Shared by every protocol (net/frame.h), then the ps/worker protocol's own from 16.
ERROR, AUTH_HELLO, AUTH_CHALLENGE, AUTH_PROOF, AUTH_OK = 1, 2, 3, 4, 5
(HELLO, HELLO_OK, INIT, INIT_OK, PULL, PULL_RESP, PUSH, PUSH_ACK, SSP_WAIT, SSP_GO, DONE,
 RELEASE, INIT_SLOT, SLOT_RESP, FINAL_STEP, FINAL_STEP_RESP, WAITING) = range(16, 33)


def hdr(typ=HELLO, length=0, var=0, a0=0, a1=0, magic=MAGIC, ver=1, proto=PROTO_PS):
    """A frame header: u32 magic | u8 version | u8 protocol | u16 type | u32 length |
    u32 id (the variable) | i64 arg0 | i64 arg1."""
    return struct.pack("<IBBHIIqq", magic, ver, proto, typ, length, var, a0, a1)


def unhdr(h):
    """(type, length, id, arg0, arg1) of a 32-byte header."""
    _, _, _, typ, length, var, a0, a1 = struct.unpack("<IBBHIIqq", h)
    return typ, length, var, a0, a1


def conn(port, tries=100):
    """Connects to the ps on 127.0.0.1:port, waiting (5 s) for it to come up."""
    for _ in range(tries):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("ps never came up")
