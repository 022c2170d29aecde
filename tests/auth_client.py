"""auth_client.py — a raw-socket client of the ps and hub protocols for tests/it_auth.sh:
the handshake of net/auth.h written again from its description (BLAKE2b-256 key
derivation, HMAC-SHA-512 truncated to 32 bytes = libsodium's crypto_auth), so that a
proof it makes being accepted shows the two agree. Subcommands print one line each:
NAME -> what the peer answered."""
import hashlib, hmac, os, socket, struct, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ps_wire import (drain, hdr, unhdr, PROTO_PS, PROTO_STREAM, ERROR, AUTH_HELLO, AUTH_CHALLENGE,
                     AUTH_PROOF, AUTH_OK, HELLO, PUSH)

# The event stream's own types (hub/wire.h), after the shared ones.
HUB_HELLO_TASK, HUB_HELLO_SUB = 16, 17
HUB_NAMES = {ERROR: "ERROR", AUTH_OK: "AUTH_OK", 18: "probe", 23: "welcome"}
CTX_PS, CTX_HUB = b"downpour ps/worker v1", b"downpour hub v1"


def key_of(secret):
    return hashlib.blake2b(b"downpour secret v1\0" + secret, digest_size=32).digest()


def proof(key, role, ctx, nc, ns):
    return hmac.new(key, b"downpour-auth v1" + role + ctx + nc + ns, hashlib.sha512).digest()[:32]


def viewer_token(key):
    return hashlib.blake2b(b"downpour viewer token v1", key=key, digest_size=16).hexdigest()


def conn(port):
    for _ in range(200):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on %d" % port)


def ps_frame(typ, payload=b"", var=0, a0=0, a1=0, length=None):
    n = len(payload) if length is None else length
    return hdr(typ, n, var, a0, a1, proto=PROTO_PS) + payload


def hub_frame(typ, payload=b""):
    return hdr(typ, len(payload), proto=PROTO_STREAM) + payload


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        got = s.recv(n - len(out))
        if not got:
            raise EOFError(out)
        out += got
    return out


def ps_read(s):
    typ, n, _, _, _ = unhdr(recv_exact(s, 32))
    return typ, recv_exact(s, n)


hub_read = ps_read   # one frame format


def rest(s, timeout=3):
    """Everything the peer sends until it closes (or timeout, or a reset)."""
    return drain(s, timeout, reset=b"<reset>")


def ps_handshake(s, key, nc=None):
    """Runs the client side; returns (sent bytes, server proof ok)."""
    nc = nc or os.urandom(32)
    first = ps_frame(AUTH_HELLO, nc)
    s.sendall(first)
    typ, ns = ps_read(s)
    if typ != AUTH_CHALLENGE:
        raise EOFError(ns)
    second = ps_frame(AUTH_PROOF, proof(key, b"C", CTX_PS, nc, ns))
    s.sendall(second)
    typ, ps_proof = ps_read(s)
    if typ != AUTH_OK:
        raise EOFError(ps_proof)
    return first + second, hmac.compare_digest(ps_proof, proof(key, b"S", CTX_PS, nc, ns))


def text(b):
    """The peer's answer as printable text: frame headers and binary bytes as '.'."""
    return "".join(c if 32 <= ord(c) < 127 else " " if c == "\n" else "." for c in b.decode("latin1"))


def ps_cases(port, secret, cfg_hash):
    key = key_of(secret)
    # 1. HELLO with no handshake at all.
    s = conn(port)
    s.sendall(ps_frame(HELLO, var=1, a0=cfg_hash))
    print("no-handshake ->", text(rest(s)))
    # 2. The handshake with a wrong secret.
    s = conn(port)
    try:
        ps_handshake(s, key_of(b"not the secret at all!"))
        print("wrong-secret -> ACCEPTED")
    except EOFError as e:
        print("wrong-secret ->", text(e.args[0] + rest(s)))
    # 3. A valid handshake recorded, then replayed byte for byte on a new connection.
    s = conn(port)
    transcript, server_ok = ps_handshake(s, key)
    print("valid-handshake -> server proof %s" % ("verified" if server_ok else "WRONG"))
    s.close()
    s = conn(port)
    s.sendall(transcript + ps_frame(HELLO, struct.pack("<Q", 7), var=1, a0=cfg_hash))
    print("replayed ->", text(rest(s)))
    # 4. Authenticated, but other training flags: the reply names no hash.
    s = conn(port)
    ps_handshake(s, key)
    s.sendall(ps_frame(HELLO, struct.pack("<Q", 7), var=1, a0=12345))
    print("wrong-flags ->", text(rest(s)))


def ps_claim(port, secret, cfg_hash, index):
    """A valid handshake, then a HELLO for a slot a live worker holds."""
    s = conn(port)
    ps_handshake(s, key_of(secret))
    s.sendall(ps_frame(HELLO, struct.pack("<Q", 99), var=index, a0=cfg_hash))
    print("claim ->", text(rest(s)))


def ps_hello_plain(port):
    s = conn(port)
    s.sendall(ps_frame(HELLO, var=0, a0=1))
    print("outsider ->", text(rest(s)))


def ps_flood(port, pid, seconds, push_bytes):
    """100 push headers with all but 4 of their push_bytes of payload, 100 half push headers, 20 dribblers
    (a byte every 10 ms) and 200 idle connections, held for `seconds`; prints the ps's
    peak VmRSS growth (kB) and how many connections it closed at once."""
    def rss():
        for l in open("/proc/%d/status" % pid):
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    base = rss()
    socks = []
    def add():
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setblocking(False)
            socks.append(s)
            return s
        except OSError:
            return None
    hdr = ps_frame(PUSH, var=1, length=push_bytes)
    for _ in range(100):
        s = add()
        if s:
            try:
                s.send(hdr)
                s.send(b"\1" * (push_bytes - 4))   # all but the last float: held open
            except OSError: pass
    for _ in range(100):
        s = add()
        if s:
            try: s.send(hdr[:16])
            except OSError: pass
    drib = [add() for _ in range(20)]
    for _ in range(200):
        add()
    peak, end, i = base, time.time() + seconds, 0
    while time.time() < end:
        for s in drib:
            if s:
                try: s.send(hdr[i % 32:i % 32 + 1])
                except OSError: pass
        i += 1
        peak = max(peak, rss())
        time.sleep(0.01)
    closed = 0
    for s in socks:
        try:
            if s.recv(1) == b"": closed += 1
        except BlockingIOError: pass
        except OSError: closed += 1
    print("flood -> rss_growth_kb %d closed %d of %d" % (peak - base, closed, len(socks)))
    for s in socks:
        s.close()


def hub_cases(port, secret):
    key = key_of(secret)
    s = conn(port)
    s.sendall(hub_frame(HUB_HELLO_SUB, b"\0\0\0\0"))
    print("hub-unauth-sub ->", text(rest(s)))
    s = conn(port)
    s.sendall(hub_frame(HUB_HELLO_TASK, struct.pack("<IiI", 1, 0, 1)))
    print("hub-unauth-task ->", text(rest(s)))
    # The viewer token: a subscriber may use it; a task may not.
    tkey = key_of(viewer_token(key).encode())
    for name, hello in (("hub-token-task", hub_frame(HUB_HELLO_TASK, struct.pack("<IiI", 1, 0, 1))),
                        ("hub-token-sub", hub_frame(HUB_HELLO_SUB, b"\0\0\0\0"))):
        s = conn(port)
        nc = os.urandom(32)
        s.sendall(hub_frame(AUTH_HELLO, nc))
        typ, ns = hub_read(s)
        s.sendall(hub_frame(AUTH_PROOF, proof(tkey, b"C", CTX_HUB, nc, ns)) + hello)
        typ, p = hub_read(s)
        ok = typ == AUTH_OK and hmac.compare_digest(p, proof(tkey, b"S", CTX_HUB, nc, ns))
        s.settimeout(1)
        try:
            typ, p = hub_read(s)
            after = "%s %s" % (HUB_NAMES.get(typ, str(typ)), text(p))
        except (EOFError, socket.timeout) as e:
            after = "closed"
        print(name, "-> hub proof %s; then %s" % ("verified" if ok else "WRONG", after))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "ps-cases": ps_cases(int(args[0]), args[1].encode(), int(args[2]))
    elif cmd == "ps-claim": ps_claim(int(args[0]), args[1].encode(), int(args[2]), int(args[3]))
    elif cmd == "ps-outsider": ps_hello_plain(int(args[0]))
    elif cmd == "ps-flood": ps_flood(int(args[0]), int(args[1]), float(args[2]), int(args[3]))
    elif cmd == "hub-cases": hub_cases(int(args[0]), args[1].encode())
    else: raise SystemExit("unknown subcommand " + cmd)
