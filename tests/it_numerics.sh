#!/usr/bin/env bash
# it_numerics.sh — TensorFlow's check_numerics at the ps (issue 15): a pushed gradient
# holding NaN or Inf is rejected (ACK_DROPPED), counted in the ps's statistics, logged with
# the sender's address, a grad_rejected event with a caption — and never applied: the run
# trains on to a finite accuracy. A python client plays worker 1 of a hand-started async
# cluster (the ps, worker 0 and a hub are ours; only their PIDs are waited for).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
read -r P W0 W1 < <(free_ports 3)
HOSTS="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W0,127.0.0.1:$W1"
SYN="--data synthetic --model softmax --mode async --steps 60 --pace 10ms --eval-every 0 --log-every 1000000"
"$DOWNPOUR" hub --listen 127.0.0.1:0 --trace "$TMP/n.dptrace" --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 50); do grep -q "listening" "$TMP/hub.out" 2>/dev/null && break; sleep 0.1; done
HUBF="--hub $(grep -o "listening on [0-9.:]*" "$TMP/hub.out" | head -1 | awk '{print $3}')"
timeout 90 "$DOWNPOUR" task --job_name=ps --task_index=0 $HOSTS $SYN $HUBF >"$TMP/ps.out" 2>"$TMP/ps.err" &
PS=$!
python3 - "$P" "$TMP/ps.err" >"$TMP/py.out" 2>&1 <<'PY' &
import math, re, socket, struct, sys, time
port, pslog = int(sys.argv[1]), sys.argv[2]
sys.path.insert(0, "tests")
from ps_wire import hdr, conn as ps_wire_conn, frame, config_hash, HELLO, HELLO_OK, PULL, PULL_RESP, PUSH, PUSH_ACK
conn = lambda: ps_wire_conn(port)
# The config hash, from the ps's own log of a refused HELLO (we run the ps: we read its log).
s = conn(); s.sendall(hdr(HELLO, var=1, a0=1)); s.settimeout(3)
try: s.recv(4096)
except OSError: pass
s.close()
h = config_hash(pslog)
s = conn(); s.settimeout(30)
s.sendall(hdr(HELLO, var=1, a0=h))
assert frame(s)[0] == HELLO_OK, "no HELLO_OK"
s.sendall(hdr(PULL, var=2))                      # softmax/biases: waits for the chief's INIT
typ, var, ver, _, body = frame(s)
assert typ == PULL_RESP and len(body) == 40, (typ, len(body))
def push(vals, name):
    s.sendall(hdr(PUSH, length=40, var=2, a0=ver, a1=1) + struct.pack("<10f", *vals))
    while True:
        typ, var, a0, a1, _ = frame(s)
        if typ == PUSH_ACK: break
    print(name, "status", a1 & 0xff)
push([0.0] * 3 + [math.nan] + [0.0] * 6, "nan")
push([math.inf] + [0.0] * 9, "inf")
push([0.0] * 9 + [math.nan], "tail")   # past the check's blocks of 8 (ps_update.c)
push([0.0] * 10, "finite")
s.close()
PY
PY=$!
timeout 90 "$DOWNPOUR" task --job_name=worker --task_index=0 $HOSTS $SYN $HUBF >"$TMP/w0.out" 2>"$TMP/w0.err"
rc=$?
wait $PY; wait $PS
kill $HUB 2>/dev/null; wait $HUB 2>/dev/null
check "worker 0 trains to the end beside the poisoning client (rc $rc)" test $rc -eq 0
check "the NaN gradient is refused (ACK_DROPPED)" grep -q "^nan status 2$" "$TMP/py.out"
check "the Inf gradient is refused (ACK_DROPPED)" grep -q "^inf status 2$" "$TMP/py.out"
check "a NaN in the last element is refused (ACK_DROPPED)" grep -q "^tail status 2$" "$TMP/py.out"
check "a finite gradient from the same client is applied (control)" grep -q "^finite status 0$" "$TMP/py.out"
check "the ps counts 3 rejected" test "$(json "$TMP/ps.out" rejected)" = 3
check "the ps logs the sender and what was wrong" \
    grep -q "rejected a gradient from worker 1 (127.0.0.1:[0-9]*): NaN at element 3 of softmax/biases's gradient; never applied" "$TMP/ps.err"
check "the final accuracy is a number (nothing poisoned was applied)" \
    python3 -c "import json,math,sys; d=json.loads([l for l in open('$TMP/w0.out') if l.startswith('{')][-1]); sys.exit(0 if math.isfinite(d['test_accuracy']) else 1)"
if [ -s "$TMP/n.dptrace" ]; then
    check "the trace holds 3 grad_rejected events" test "$(trace_count "$TMP/n.dptrace" grad_rejected)" = 3
    "$DOWNPOUR" trace export --chrome "$TMP/n.json" "$TMP/n.dptrace" >/dev/null 2>&1
    rej=$(python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
print(' '.join('%s:%s@%d' % (e['args'].get('var'), e['args'].get('peer'), e['args']['value'])
               for e in ev if e.get('name') == 'grad_rejected'))" "$TMP/n.json")
    check "each grad_rejected names the variable, the worker and its first bad element ($rej)" \
        test "$rej" = "softmax/biases:1@3 softmax/biases:1@0 softmax/biases:1@9"
    check "a caption says the ps rejects worker 1's gradient" \
        bash -c "'$DOWNPOUR' trace captions '$TMP/n.dptrace' | grep -q \"ps 0 rejects worker 1's gradient: NaN at element 3\""
else
    bad "the hub recorded no trace ($(head -c 300 "$TMP/hub.err"))"
fi
cat "$TMP/py.out" | sed 's/^/    client: /'
done_tests
