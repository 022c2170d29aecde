#!/usr/bin/env bash
# it_trace.sh — instrumentation end to end: a real run's trace matches the run, the
# Chrome export follows the timeline rules, a damaged trace reports its damage, and with
# two viewers attached mid-run, one stalled, the run completes and the other viewer reads
# every event. (Whether a stalled viewer slows the run is measured in `make bench`.)
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet"
TOOLS=$(dirname "$DOWNPOUR")/tests

# A real 1 ps + 2 worker sync run, recorded.
T0=$(date +%s%N)
$DOWNPOUR cluster --ps 1 --workers 2 --steps 60 $SYN --trace "$TMP/s.dptrace" >"$TMP/s.json" 2>"$TMP/s.err"
check "traced sync run exits 0" test $? -eq 0
T1=$(date +%s%N)
check "trace validates" $DOWNPOUR trace validate "$TMP/s.dptrace"
$DOWNPOUR trace info --json "$TMP/s.dptrace" >"$TMP/info.json"
start=$(python3 -c "import json; print(json.load(open('$TMP/info.json'))['metadata'].get('start_unix_ns', 0))")
check "the metadata's start time is the run's wall clock ($T0 <= $start <= $T1)" \
    bash -c "[ '$start' -ge '$T0' ] && [ '$start' -le '$T1' ]"
T0=$(date +%s%N)
$DOWNPOUR local --steps 3 $SYN --trace "$TMP/l.dptrace" >/dev/null 2>&1
T1=$(date +%s%N)
start=$($DOWNPOUR trace info --json "$TMP/l.dptrace" | python3 -c "import json, sys; print(json.load(sys.stdin)['metadata'].get('start_unix_ns', 0))")
check "... and a local run's too ($T0 <= $start <= $T1)" bash -c "[ '$start' -ge '$T0' ] && [ '$start' -le '$T1' ]"
count() { python3 -c "import json; print(json.load(open('$TMP/info.json'))['counts'].get('$1', 0))"; }
push=$(count push_end); apply=$(count apply); drop=$(count drop); step_end=$(count step_end)
check "pushes = workers x steps x variables (2 x 60 x 4 = $push)" test "$push" -eq 480
check "applies + drops = pushes ($apply + $drop)" test $((apply + drop)) -eq "$push"
check "one step_end per worker step (120 = $step_end)" test "$step_end" -eq 120
check "global_step events reach 60" test "$(count global_step)" -eq 60
check "pull_begin = pull_end" test "$(count pull_begin)" -eq "$(count pull_end)"
check "compute_begin = compute_end = step_end" test "$(count compute_end)" -eq "$step_end"
check "task_start for 3 tasks" test "$(count task_start)" -eq 3
check "one device event for each of the 3 tasks (the ps's CPU too)" test "$(count device)" -eq 3
check "placement events present (var_place, op_place)" test "$(count var_place)" -eq 5 -a "$(count op_place)" -gt 5
check "summary events = trace events" test "$(json "$TMP/s.json" events)" -eq \
    "$(python3 -c "import json; print(json.load(open('$TMP/info.json'))['events'])")"
check "summary names the trace" test "$(json "$TMP/s.json" trace)" = "$TMP/s.dptrace"

# Every transfer and update names its variable: each pull one of the model's five (the
# same number of each: a step pulls them all, as do the chief's evaluations and final
# read), each push and apply one of its four trainable ones, 2 x 60 times (in sync the
# global step moves by the step token, not by a push).
$DOWNPOUR trace export --chrome "$TMP/s.names.json" "$TMP/s.dptrace" 2>/dev/null
names=$(python3 - "$TMP/s.names.json" <<'PY'
import json, sys
from collections import Counter
ev = json.load(open(sys.argv[1]))['traceEvents']
c = {k: Counter(e['args'].get('var') for e in ev if e.get('name') == k and e.get('ph') in ('b', 'X'))
     for k in ('pull', 'push', 'apply')}
pulls = set(c['pull'].values())
print('pull:' + ','.join(sorted(map(str, c['pull']))) + ('=same' if len(pulls) == 1 and min(pulls) >= 120 else '=uneven'),
      *(k + ':' + ','.join(f'{v}={n}' for v, n in sorted(c[k].items(), key=lambda x: str(x[0])))
        for k in ('push', 'apply')))
PY
)
# each task's DEVICE event names its own CPU: a Compute track per task in the export
tracks=$(python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
print(','.join(sorted(e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'process_name'
                      and e['args']['name'].endswith(' Compute'))))" "$TMP/s.names.json")
check "a Compute track for each task's CPU, the ps's too ($tracks)" test "$tracks" = \
    "/job:ps/replica:0/task:0/device:CPU:0 Compute,/job:worker/replica:0/task:0/device:CPU:0 Compute,/job:worker/replica:0/task:1/device:CPU:0 Compute"
# each task's task_stop carries the CPU it used (calibration reads it: the ps's serving,
# the workers' training): more than none, and no more than both cores over the run
cpu=$(python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
names = {e['pid']: e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'process_name'}
print(' '.join(sorted('%s=%g' % (names[e['pid']].replace('/replica:0', ''), e['args']['value2'])
                      for e in ev if e.get('name') == 'task_stop')))" "$TMP/s.names.json")
wall=$(json "$TMP/s.json" wall_s)
check "each task's task_stop carries its CPU seconds, in (0, 2 x ${wall} s] ($cpu)" python3 -c "
import sys
cpu = dict(kv.split('=') for kv in sys.argv[1].split())
ok = sorted(cpu) == ['/job:ps/task:0', '/job:worker/task:0', '/job:worker/task:1']
sys.exit(not (ok and all(0 < float(v) <= 2 * float(sys.argv[2]) for v in cpu.values())))" "$cpu" "$wall"
# calibration pairs each apply with the acknowledgement its push got (by their message
# id): the ps's message latency is measured from those pairs, not the network fit's
# latency, which it falls back to when nothing pairs
$DOWNPOUR sim --calibrate-from "$TMP/s.dptrace" --steps 5 --quiet >"$TMP/cal.json" 2>/dev/null
check "calibration pairs applies with their acks: ps_latency_s $(json "$TMP/cal.json" ps_latency_s) is measured, not latency_s $(json "$TMP/cal.json" latency_s)" \
    python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (0 < a != b))" \
    "$(json "$TMP/cal.json" ps_latency_s)" "$(json "$TMP/cal.json" latency_s)"
V4="hidden/biases=120,hidden/weights=120,softmax/biases=120,softmax/weights=120"
check "every pull, push and apply names its variable ($(echo $names))" test "$(echo $names)" = \
    "pull:global_step,hidden/biases,hidden/weights,softmax/biases,softmax/weights=same push:$V4 apply:$V4"

# Async with a backup-free 2 workers: pushes still match applies.
$DOWNPOUR cluster --ps 2 --workers 2 --mode async --steps 60 $SYN --trace "$TMP/a.dptrace" >/dev/null 2>&1
$DOWNPOUR trace info --json "$TMP/a.dptrace" >"$TMP/info.json"
check "async: applies = pushes" test "$(count apply)" -eq "$(count push_end)"
check "async: global step events = applied worker steps" test "$(count global_step)" -ge 60

# Sync with a backup worker (a 2x straggler, over enough steps that it surely takes
# part): drops appear in the trace and balance the pushes.
$DOWNPOUR cluster --ps 1 --workers 3 --backup-workers 1 --steps 200 --slow-worker 2:2 $SYN --trace "$TMP/b.dptrace" >/dev/null 2>&1
$DOWNPOUR trace info --json "$TMP/b.dptrace" >"$TMP/info.json"
check "backup: drops recorded" test "$(count drop)" -gt 0
check "backup: applies + drops = pushes" test $(( $(count apply) + $(count drop) )) -eq "$(count push_end)"
# trace stats of the 2-worker sync run: at each of its global steps one worker's
# gradients came last, so the last to push is counted over all 60 (the summary's steps)
$DOWNPOUR trace stats --json "$TMP/s.dptrace" >"$TMP/sstats.json" 2>/dev/null
check "trace stats of a sync run: the last to push counted over its $(json "$TMP/s.json" global_step) global steps" python3 -c "
import json, sys
o = json.load(open(sys.argv[1]))
l = o['last_to_push']
assert l['task'] in (0, 1) and l['of'] == int(sys.argv[2]) and 30 <= l['steps'] <= l['of'], l
" "$TMP/sstats.json" "$(json "$TMP/s.json" global_step)"
# trace stats of that run: each worker's phases add up to its time, the workers waited at
# the barrier, and the one computing the largest share of its time is the 2x straggler
$DOWNPOUR trace stats --json "$TMP/b.dptrace" >"$TMP/stats.json" 2>"$TMP/stats.err"
check "trace stats: 3 workers, phases adding up to each one's time, barrier waits, worker 2 computes most ($(head -c 300 "$TMP/stats.json"))" python3 -c "
import json, sys
o = json.load(open(sys.argv[1]))
w = o['per_worker']
assert len(w) == 3 and o['mode'] == 'sync', o
for x in w:
    assert abs(sum(x['phase_s'].values()) - x['time_s']) < 1e-6, x
    assert x['steps'] > 0 and abs(x['mean_step_s'] * x['steps'] - x['time_s'] + x['phase_s']['dead']) < 1e-6, x
assert sum(x['phase_s']['barrier'] for x in w) > 0, w
assert o['most_computing']['task'] == 2, o['most_computing']
" "$TMP/stats.json"
$DOWNPOUR trace stats "$TMP/b.dptrace" >"$TMP/stats.txt" 2>&1
check "trace stats text: a row per worker, the all row, the straggler named ($(grep -c . "$TMP/stats.txt") lines)" \
    bash -c "grep -q '^all ' '$TMP/stats.txt' && grep -q '^2  ' '$TMP/stats.txt' && grep -q '^most computing:  worker 2,' '$TMP/stats.txt'"

# Chrome / Perfetto export.
check "chrome export" $DOWNPOUR trace export --chrome "$TMP/s.json.trace" "$TMP/s.dptrace"
# With the trace's duration (trace info), the checker also pins the units: the events'
# span in "ts" must be the duration in microseconds.
ds() { $DOWNPOUR trace info --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['duration_s'])"; }
check "chrome export follows the timeline rules, ts in us (sync)" \
    python3 tests/check_chrome.py "$TMP/s.json.trace" "$(ds "$TMP/s.dptrace")"
# The host's irq + softirq CPU over the run: in the summary and in cluster_stop's value2,
# the same figure; at most every core for the whole run (/proc/stat counts in 10 ms ticks).
irq=$(json "$TMP/s.json" host_irq_s)
check "summary: host_irq_s ($irq s) within 0 .. wall x cores" python3 -c "
import os, sys; irq, wall = float('$irq'), float('$(json "$TMP/s.json" wall_s)')
sys.exit(not 0 <= irq <= wall * os.cpu_count() + 0.02)"
check "trace: cluster_stop's value2 = the summary's host_irq_s" python3 -c "
import json, sys; ev = json.load(open('$TMP/s.json.trace'))
ev = ev['traceEvents'] if isinstance(ev, dict) else ev
stop = [e for e in ev if e.get('name') == 'cluster_stop']
sys.exit(len(stop) != 1 or abs(stop[0]['args'].get('value2', -1) - float('$irq')) > 1e-6)"
$DOWNPOUR trace export --chrome "$TMP/a.json.trace" "$TMP/a.dptrace" 2>/dev/null
check "chrome export follows the timeline rules, ts in us (async)" \
    python3 tests/check_chrome.py "$TMP/a.json.trace" "$(ds "$TMP/a.dptrace")"

# A damaged trace: truncated, then a flipped byte.
size=$(stat -c %s "$TMP/s.dptrace")
head -c $((size * 2 / 3)) "$TMP/s.dptrace" >"$TMP/cut.dptrace"
$DOWNPOUR trace validate "$TMP/cut.dptrace" >"$TMP/v.out" 2>&1
check "truncated trace fails validation" test $? -eq 1
check "truncation reported with an offset" grep -q "offset" "$TMP/v.out"
check "truncated trace still opens for info" $DOWNPOUR trace info "$TMP/cut.dptrace"
printf 'junk' >"$TMP/junk.dptrace"
$DOWNPOUR trace info "$TMP/junk.dptrace" >/dev/null 2>"$TMP/j.err"
check "not-a-trace is refused with one line naming the file" \
    bash -c "grep -q 'junk.dptrace' '$TMP/j.err' && [ \$(wc -l <'$TMP/j.err') -eq 1 ]"

# Live: an external hub, a run streaming to it, two viewers attach mid-run, one stalls.
$DOWNPOUR hub --listen 127.0.0.1:0 --trace "$TMP/live.dptrace" --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 50); do grep -q "listening" "$TMP/hub.out" && break; sleep 0.1; done
ADDR=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$TMP/hub.out")
check "hub prints its address" test -n "$ADDR"
$DOWNPOUR cluster --ps 1 --workers 2 --steps 3000 $SYN --hub "$ADDR" >"$TMP/live.json" 2>/dev/null &
RUN=$!
sleep 0.7
"$TOOLS/tool_sub" "$ADDR" --stall 30 &
STALL=$!
"$TOOLS/tool_sub" "$ADDR" --read 60 >"$TMP/sub.json"
subrc=$?
wait $RUN; runrc=$?
kill $STALL 2>/dev/null; wait $STALL 2>/dev/null
check "run with a stalled viewer completes" test $runrc -eq 0
check "the reading viewer saw the run to its end (cluster_stop)" test $subrc -eq 0
check "the reading viewer first got the state (task starts)" python3 -c "
import json; d=json.load(open('$TMP/sub.json')); assert d['state'] > 0 and d.get('task_start',0) >= 3, d"
check "the reading viewer lost nothing" python3 -c "
import json; d=json.load(open('$TMP/sub.json')); assert d['dropped'] == 0 and d.get('step_end',0) > 100, d"
kill -INT $HUB; wait $HUB
check "hub recorded a valid trace" $DOWNPOUR trace validate "$TMP/live.dptrace"
$DOWNPOUR trace info --json "$TMP/live.dptrace" >"$TMP/info.json"
check "live trace holds every worker step (6000 step_end)" test "$(count step_end)" -ge 6000

done_tests
