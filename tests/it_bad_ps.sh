#!/usr/bin/env bash
# it_bad_ps.sh — a real worker facing a ps that misbehaves (a python stand-in speaking
# the wire protocol, tests/ps_wire.py): a ps that answers HELLO with an ERROR frame, one
# that acknowledges a push the worker never sent, one that sends a frame type a ps never
# sends, one that releases a step the worker never waited for (of a variable it has,
# and of one it does not), one that sends an optimizer slot to a plain SGD worker. Each time the worker stops with a non-zero exit and one line
# naming the ps and what it did (an ERROR's own text quoted), and does not hang. And a
# ps lost while the chief initialises the variables (the stand-in closes at the first
# INIT, a real ps comes up on its address): the chief reconnects, restores the session
# and trains.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# bad_ps CASE PORT: serves one worker connection on PORT, answers its HELLO as CASE says.
bad_ps() {
    python3 - "$1" "$2" <<'PY'
import socket, sys, time
sys.path.insert(0, "tests")
from ps_wire import hdr, frame, ERROR, HELLO, HELLO_OK, PUSH_ACK, PULL, RELEASE, SLOT_RESP
case, port = sys.argv[1], int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(1); ls.settimeout(30)
s, _ = ls.accept(); s.settimeout(30)
assert frame(s)[0] == HELLO
text = b"the ps is out of disk: /var/ckpt"
if case == "error":
    s.sendall(hdr(ERROR, length=len(text)) + text)
elif case == "ack":
    s.sendall(hdr(HELLO_OK) + hdr(PUSH_ACK, var=1, a0=0, a1=1))
elif case == "type":
    s.sendall(hdr(HELLO_OK) + hdr(PULL, var=1))
elif case == "release":
    s.sendall(hdr(HELLO_OK) + hdr(RELEASE, var=1, a0=1))
elif case == "release-id":
    s.sendall(hdr(HELLO_OK) + hdr(RELEASE, var=4096, a0=1))
elif case == "slot":
    s.sendall(hdr(HELLO_OK) + hdr(SLOT_RESP, var=1, length=4) + b"\0" * 4)
# the worker closes; wait for it
try:
    while s.recv(4096): pass
except OSError:
    pass
PY
}

for case in error ack type release release-id slot; do
    read -r P W < <(free_ports 2)
    bad_ps "$case" "$P" >"$TMP/ps-$case.out" 2>&1 &
    PS=$!
    timeout 60 "$DOWNPOUR" task --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$P \
        --worker_hosts=127.0.0.1:$W --data synthetic --model softmax --quiet --steps 10 \
        >"$TMP/w-$case.out" 2>"$TMP/w-$case.err"
    rc=$?
    wait $PS
    check "$case: the worker stops with an error (rc $rc), not a hang" test $rc -ne 0 -a $rc -ne 124
    case $case in
    error) want="/job:ps/replica:0/task:0 reported: the ps is out of disk: /var/ckpt" ;;
    ack) want="unexpected PUSH_ACK from /job:ps/replica:0/task:0" ;;
    type) want="unexpected PULL from /job:ps/replica:0/task:0" ;;
    release*) want="unexpected RELEASE from /job:ps/replica:0/task:0" ;;
    slot) want="SLOT_RESP of softmax/weights, which this worker did not ask for" ;;
    esac
    if grep -qF -- "$want" "$TMP/w-$case.err"; then ok "$case: the worker says: $want"
    else bad "$case: the worker says: $want"; cat "$TMP/w-$case.err" "$TMP/ps-$case.out"; fi
done

# A ps lost during the chief's first initialisation: the stand-in answers HELLO, reads
# up to the first INIT and goes (listener first, so that no reconnection lands in it);
# then a real ps starts on the same address.
read -r P W < <(free_ports 2)
H="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W --data synthetic --model softmax --steps 10"
python3 - "$P" >"$TMP/ps-init.out" 2>&1 <<'PY' &
import socket, sys
sys.path.insert(0, "tests")
from ps_wire import hdr, frame, HELLO, HELLO_OK, INIT
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1]))); ls.listen(1); ls.settimeout(30)
s, _ = ls.accept(); s.settimeout(30)
assert frame(s)[0] == HELLO
s.sendall(hdr(HELLO_OK))
while frame(s)[0] != INIT:
    pass
ls.close(); s.close()
PY
FAKE=$!
timeout 60 "$DOWNPOUR" task --job_name=worker --task_index=0 $H >"$TMP/w-init.out" 2>"$TMP/w-init.err" &
WK=$!
wait $FAKE
timeout 60 "$DOWNPOUR" task --job_name=ps --task_index=0 $H >/dev/null 2>"$TMP/ps-init.err" &
PS=$!
wait $WK; rc=$?
wait $PS
check "a ps lost during the chief's initialisation: the chief trains on once a ps is back (rc $rc)" test $rc = 0
check "... restoring the session from the initial values" \
    grep -q "restoring the session on every ps from the initial values (no checkpoint): global step 0 -> 0" "$TMP/w-init.err"
check "... the real ps took the restore" grep -q "the chief restores the session: variables back at global step 0" "$TMP/ps-init.err"
check "... and the chief finished at global step 10" grep -q "final evaluation at global step 10:" "$TMP/w-init.err"
done_tests
