#!/usr/bin/env bash
# it_proto.sh — a live ps under bad network frames: wrong magic, wrong version, unknown
# type, oversized length, truncated frame, mismatched training flags, a push before HELLO,
# a push (after a good HELLO) to a variable the chief has not initialised yet. Each
# offending connection is dropped with a logged reason (the last told it in an ERROR
# frame); the ps keeps serving and a real worker then trains to the end. A worker's
# DONE said twice counts once, and its leaving after DONE is no loss; the chief's FINAL_STEP
# asked twice is refused the second time.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model softmax --quiet"
read -r P W < <(free_ports 2)
HOSTS="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W"
$DOWNPOUR task --job_name=ps --task_index=0 $HOSTS --steps 30 $SYN >/dev/null 2>"$TMP/ps.err" &
PS=$!
python3 - "$P" "$TMP/ps.err" >"$TMP/py.out" 2>&1 <<'PY'
import socket, struct, sys, time
port, pslog = int(sys.argv[1]), sys.argv[2]
sys.path.insert(0, "tests")
from ps_wire import hdr, conn as ps_wire_conn, drain, config_hash, HELLO, PULL, PUSH, PROTO_STREAM
conn = lambda: ps_wire_conn(port)
cases = {
    "bad magic": hdr(magic=0xdeadbeef),
    "version": hdr(ver=2),
    "unknown type": hdr(typ=99),
    "another protocol": hdr(typ=17, proto=PROTO_STREAM),
    "oversized": hdr(typ=PUSH, length=0x7ffffff0),
    "truncated": hdr(typ=PUSH, length=400)[:20],
    "hash": hdr(typ=HELLO, var=0, a0=12345, a1=1),
    "before hello": hdr(typ=PULL, var=1),
}
for name, data in cases.items():
    s = conn()
    s.sendall(data)
    if name == "truncated":
        s.close()
        continue
    s.settimeout(3)
    try:
        got = s.recv(4096)
    except socket.timeout:
        got = b"<timeout>"
    print(name, "->", "closed" if got == b"" else got[:120])
    s.close()
# A good HELLO (the config hash read from the ps's log of the refused one above), then a
# push to softmax/biases, which no chief has initialised yet.
s = conn()
s.sendall(hdr(HELLO, var=0, a0=config_hash(pslog)))
s.sendall(hdr(PUSH, length=40, var=2, a0=0, a1=1) + bytes(40))
got = drain(s)
print("push before init ->", got[32:200] if len(got) > 32 else got, "closed" if not got.endswith(b"<timeout>") else "")
s.close()
PY
$DOWNPOUR task --job_name=worker --task_index=0 $HOSTS --steps 30 $SYN >"$TMP/w.json" 2>"$TMP/w.err"
check "worker trains to the end after the bad peers" test $? -eq 0
wait $PS
check "ps exits cleanly after its worker is done" test $? -eq 0
for reason in "bad frame: bad magic 0xdeadbeef" "bad frame: frame format version 2" \
              "bad frame: unknown ps/worker frame type 99" "a frame of protocol 2 on a connection of the ps/worker" \
              "PUSH carries 2147483632 payload bytes (outside its bound)" "truncated frame" \
              "runs with different training flags" "PULL before HELLO"; do
    if grep -q -- "$reason" "$TMP/ps.err" "$TMP/py.out"; then ok "dropped with reason: $reason"
    else bad "dropped with reason: $reason"; cat "$TMP/ps.err" "$TMP/py.out"; fi
done
check "push before the chief's INIT: the ps's log says why" \
    grep -q "push to softmax/biases before it was initialised" "$TMP/ps.err"
check "... and so does the ERROR frame it sent before closing" \
    grep -q "push before init -> .*push to softmax/biases before it was initialised.* closed" "$TMP/py.out"
check "every bad connection got an answer or was closed (no hang)" bash -c "! grep -q timeout '$TMP/py.out'"

# stand_in N W FRAMES LABEL: a ps for 2 async workers (PS, HOSTS; its log $TMP/psN.err),
# and a python stand-in for worker W that learns the config hash from a refused HELLO,
# then says HELLO and sends FRAMES (ps_wire expressions); prints "LABEL -> " and what
# came back to $TMP/pyN.out.
stand_in() {
    local n=$1 w=$2 frames=$3 label=$4
    read -r P W0 W1 < <(free_ports 3)
    HOSTS="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W0,127.0.0.1:$W1 --mode async"
    $DOWNPOUR task --job_name=ps --task_index=0 $HOSTS --steps 30 $SYN >/dev/null 2>"$TMP/ps$n.err" &
    PS=$!
    python3 - "$P" "$TMP/ps$n.err" "$w" "$frames" "$label" >"$TMP/py$n.out" 2>&1 <<'PY'
import sys
port, pslog, w, frames, label = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
sys.path.insert(0, "tests")
from ps_wire import hdr, conn, drain, config_hash, HELLO, DONE, FINAL_STEP
s = conn(port)
s.sendall(hdr(HELLO, var=w, a0=12345))     # refused: the ps logs its own hash
drain(s)
s = conn(port)
s.sendall(hdr(HELLO, var=w, a0=config_hash(pslog)) + eval(frames))
print(label, "->", drain(s, timeout=1))
PY
}

# A worker's DONE counts once: worker 1 of 2 (a python stand-in) says DONE twice and
# leaves; the ps neither stops under worker 0 nor logs worker 1 as lost.
stand_in 2 1 "hdr(DONE) + hdr(DONE)" "done twice"
$DOWNPOUR task --job_name=worker --task_index=0 $HOSTS --steps 30 $SYN >/dev/null 2>"$TMP/w2.err"
check "a DONE said twice by worker 1: worker 0 still trains to the end" test $? -eq 0
wait $PS
check "... and the ps exits cleanly after it" test $? -eq 0
check "... without calling worker 1, which said DONE before it left, lost" \
    bash -c "! grep -q 'lost /job:worker/replica:0/task:1' '$TMP/ps2.err'"

# The chief's FINAL_STEP is answered once: worker 0 (a python stand-in) asks twice while
# worker 1 still trains, so the first waits; the second is refused in an ERROR frame,
# and the ps says so.
stand_in 3 0 "hdr(FINAL_STEP) + hdr(FINAL_STEP)" "final step twice"
kill $PS 2>/dev/null; wait $PS 2>/dev/null
check "a ps stopped by SIGTERM before its workers were done says so" grep -q "stopped by signal" "$TMP/ps3.err"
check "a FINAL_STEP asked twice by the chief: the second is refused in an ERROR frame" \
    grep -q "final step twice -> .*unexpected FINAL_STEP (var 0) from worker 0" "$TMP/py3.out"
check "... and the ps logs it" grep -q "unexpected FINAL_STEP (var 0) from worker 0" "$TMP/ps3.err"
done_tests
