#!/usr/bin/env bash
# it_hub_restart.sh — a standalone hub restarted under a running `downpour cluster --hub`:
# the hub SIGKILLed mid-run, a new hub on the same address; then the same with SIGTERM.
# Each run completes; the second trace alone names the cluster, tasks and variables
# (trace info, captions); per-task delivery (resume point, dropped) is in it; and the
# events each task emitted (its emitter's own exit line) are accounted for exactly:
# the earlier hub's acknowledged ones (resume point) + the second trace's + the dropped.
# A hub stalled by SIGSTOP under a fast run: the tasks drop events and the summary counts
# them. Only the hub PIDs started here are signalled.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 16 --batch 16 --eval-every 0 --log-every 100000"
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
ADDR=127.0.0.1:$PORT

# start_hub TRACE LOG: a hub on ADDR in the background; HUB = its PID; waits until it listens.
start_hub() {
    "$DOWNPOUR" hub --listen "$ADDR" --trace "$1" --quiet >"$2" 2>&1 &
    HUB=$!
    for _ in $(seq 50); do grep -q "hub listening" "$2" && return 0; sleep 0.1; done
    return 1
}
info() { "$DOWNPOUR" trace info --json "$1"; }

# account T1 T2 ERR: per task, checks the second trace against the emitter's own exit
# line ("emitter worker:0: N events emitted, ..."): resumed_at + events in T2 + dropped = N,
# and T1 holds at least the resume point's events (what the first hub acknowledged).
account() {
    python3 - "$@" <<'PY'
import json, re, subprocess, sys, os
t1, t2, err = sys.argv[1:4]
dp = os.environ.get("DOWNPOUR")
def tasks(p):
    j = json.loads(subprocess.run([dp, "trace", "info", "--json", p], capture_output=True, text=True).stdout)
    return {t["task"]: t for t in j["tasks"]}
a, b = tasks(t1), tasks(t2)
emitted = {m.group(1): int(m.group(2)) for m in
           re.finditer(r"emitter: (\w+:\d+): (\d+) events emitted", open(err).read())}
bad = []
if len(emitted) < 3: bad.append("only %d emitter lines" % len(emitted))
for name, n in emitted.items():
    if name not in b: bad.append(name + " not in the second trace"); continue
    r = b[name]["resumed_at"] or 0
    total = r + b[name]["events"] + b[name]["dropped"]
    held1 = a.get(name, {}).get("events", 0)
    print("%s: emitted %d = resumed_at %d + %d in t2 + %d dropped; t1 holds %d (%d duplicates)"
          % (name, n, r, b[name]["events"], b[name]["dropped"], held1, held1 - r))
    if total != n: bad.append("%s: %d != %d" % (name, total, n))
    if held1 < r: bad.append("%s: t1 holds %d < acknowledged %d" % (name, held1, r))
print("; ".join(bad) if bad else "accounted")
sys.exit(1 if bad else 0)
PY
}

for sig in KILL TERM; do
    s=$(echo $sig | tr A-Z a-z)
    check "$s: hub 1 listens on $ADDR" start_hub "$TMP/$s-1.dptrace" "$TMP/$s-hub1.log"
    H1=$HUB
    "$DOWNPOUR" cluster --mode async --workers 2 --steps 800 --pace 10ms $SYN --hub "$ADDR" \
        >"$TMP/$s.out" 2>"$TMP/$s.err" &
    RUN=$!
    sleep 1.5
    kill -$sig "$H1"
    wait "$H1"
    check "$s: hub 2 listens on the same address" start_hub "$TMP/$s-2.dptrace" "$TMP/$s-hub2.log"
    H2=$HUB
    wait "$RUN"
    rc=$?
    check "$s: the run completes (rc $rc)" test $rc -eq 0
    sleep 0.5
    kill -TERM "$H2"
    wait "$H2"
    check "$s: the first trace opens (trace info)" bash -c "'$DOWNPOUR' trace info '$TMP/$s-1.dptrace' >/dev/null"
    info "$TMP/$s-2.dptrace" >"$TMP/$s-2.json"
    check "$s: the second trace alone has the cluster start, 3 task starts and the variables" \
        python3 -c "
import json; j = json.load(open('$TMP/$s-2.json')); c = j['counts']
assert c.get('cluster_start', 0) >= 1 and c.get('task_start', 0) >= 3 and c.get('var_define', 0) >= 4, c
assert j['ps'] == 1 and j['workers'] == 2, (j['ps'], j['workers'])"
    check "$s: the second trace's captions name the tasks" \
        bash -c "'$DOWNPOUR' trace captions '$TMP/$s-2.dptrace' | grep -qi 'worker'"
    check "$s: the second trace has each task's resume point and dropped count" \
        python3 -c "
import json; t = json.load(open('$TMP/$s-2.json'))['tasks']
w = [x for x in t if x['task'].startswith(('worker', 'ps'))]
assert len(w) >= 3 and all(x['resumed_at'] is not None and x['resumed_at'] > 0 for x in w), t"
    check "$s: t1 + t2 + dropped account for every event each task emitted" \
        env DOWNPOUR="$DOWNPOUR" bash -c "$(declare -f account); account '$TMP/$s-1.dptrace' '$TMP/$s-2.dptrace' '$TMP/$s.err' >'$TMP/$s.acct'"
    cat "$TMP/$s.acct"
done
check "term: the first hub noted what it recorded per task (= the second's resume points)" \
    python3 -c "
import json, subprocess
j = lambda p: {t['task']: t for t in json.loads(subprocess.run(['$DOWNPOUR','trace','info','--json',p],capture_output=True,text=True).stdout)['tasks']}
a, b = j('$TMP/term-1.dptrace'), j('$TMP/term-2.dptrace')
w = [k for k in a if k.startswith(('worker', 'ps')) and k in b]
assert w and all(a[k]['hub_recorded'] is not None and a[k]['hub_recorded'] == a[k]['events'] >= b[k]['resumed_at'] > 0 for k in w), (a, b)"
# A hub stalled (SIGSTOP, ours) for 3 s under a fast run: the tasks' 65536-event buffers
# fill and they drop events, which the run's summary counts: the sum of the tasks' final
# statistics, no more than their emitters' own exit lines say they dropped.
check "stall: a hub listens on $ADDR" start_hub "$TMP/stall.dptrace" "$TMP/stall-hub.log"
H=$HUB
"$DOWNPOUR" cluster --mode async --workers 1 --steps 20000 --data synthetic --model softmax --batch 8 \
    --eval-every 0 --log-every 1000000 --hub "$ADDR" >"$TMP/stall.out" 2>"$TMP/stall.err" &
RUN=$!
sleep 1
kill -STOP "$H"
sleep 3
kill -CONT "$H"
wait "$RUN"
rc=$?
kill -TERM "$H"; wait "$H"
sum=$(sed -n 's/.*emitter: [a-z]*:[0-9]*: .* \([0-9]*\) dropped (buffer full).*/\1/p' "$TMP/stall.err" | awk '{s += $1} END {print s + 0}')
dropped=$(json "$TMP/stall.out" events_dropped)
check "stall: the run completes (rc $rc), its summary counts the events the tasks dropped ($dropped, of $sum by their emitters' lines)" \
    bash -c "[ $rc -eq 0 ] && [ '${dropped:-0}' -gt 0 ] && [ '${dropped:-0}' -le '$sum' ]"

# Where a hub listens unless told: the documented default, 127.0.0.1:7411, and with port 0
# a free port it names. (Skipped when something else holds 7411 on this machine.)
# first_line OUT ARGS...: starts `downpour hub --quiet ARGS`, waits for its line, stops it.
first_line() {
    local out=$1; shift
    "$DOWNPOUR" hub --quiet "$@" >"$out" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do grep -q "hub listening" "$out" && break; sleep 0.1; done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    head -1 "$out"
}
if python3 -c "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', 7411))" 2>/dev/null; then
    line=$(first_line "$TMP/default.out")
    check "a hub without --listen listens on 127.0.0.1:7411 ($line)" test "$line" = "hub listening on 127.0.0.1:7411"
else
    skip "the hub's default address: 127.0.0.1:7411 is taken on this machine"
fi
line=$(first_line "$TMP/zero.out" --listen 127.0.0.1:0)
check "--listen 127.0.0.1:0: the hub names the free port it took ($line)" \
    bash -c "[[ '$line' =~ ^hub\ listening\ on\ 127\.0\.0\.1:[1-9][0-9]*$ ]]"
done_tests
