"""ps_wire.py: the ps/worker protocol as the test scripts' python clients speak it,
written from docs/wire.md (net/frame.h: a 32-byte little-endian header, then the
payload; runtime/proto.h: the types). Used by it_proto.sh, it_checkpoint.sh,
it_numerics.sh and it_bad_ps.sh; auth_client.py adds the handshake."""
import re
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


def frame(s):
    """One whole frame from socket s: (type, id, arg0, arg1, payload); SystemExit when
    the peer closes first."""
    h = b""
    while len(h) < 32:
        got = s.recv(32 - len(h))
        if not got:
            raise SystemExit("closed")
        h += got
    typ, length, var, a0, a1 = unhdr(h)
    body = b""
    while len(body) < length:
        got = s.recv(length - len(body))
        if not got:
            raise SystemExit("closed mid-frame")
        body += got
    return typ, var, a0, a1, body


def drain(s, timeout=3, reset=b""):
    """Everything s receives until the peer closes; b"<timeout>" appended when it does
    not within timeout seconds of silence, `reset` when the peer resets the connection."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            got = s.recv(4096)
            if not got:
                break
            out += got
    except socket.timeout:
        out += b"<timeout>"
    except ConnectionResetError:
        out += reset
    return out


def config_hash(pslog, wait_s=2.5):
    """The ps's config hash as HELLO's signed arg0, read from the ps's own log of a
    refused HELLO (the reply never names it: docs/security.md). The caller runs that ps
    and sent the refused HELLO."""
    for _ in range(int(wait_s / 0.05)):
        m = re.search(r"this ps has ([0-9a-f]{16})", open(pslog).read())
        if m:
            h = int(m.group(1), 16)
            return h - (1 << 64) if h >= 1 << 63 else h
        time.sleep(0.05)
    raise SystemExit("the ps logged no config hash")
