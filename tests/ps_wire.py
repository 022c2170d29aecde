"""ps_wire.py: the ps/worker wire protocol as the test scripts' python clients speak it
(runtime/proto.h: a 32-byte little-endian header, then the payload). Used by
it_proto.sh, it_checkpoint.sh and it_numerics.sh; auth_client.py adds the handshake."""
import socket
import struct
import time

MAGIC = 0x52575044  # "DPWR"


def hdr(typ=1, length=0, var=0, a0=0, a1=0, magic=MAGIC, ver=1):
    """A frame header: u32 magic | u16 version | u16 type | u32 length | u32 var | i64 arg0 | i64 arg1."""
    return struct.pack("<IHHIIqq", magic, ver, typ, length, var, a0, a1)


def conn(port, tries=100):
    """Connects to the ps on 127.0.0.1:port, waiting (5 s) for it to come up."""
    for _ in range(tries):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("ps never came up")
