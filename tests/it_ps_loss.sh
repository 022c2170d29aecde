#!/usr/bin/env bash
# it_ps_loss.sh — a parameter server lost mid-run and restarted (issue 14): every worker
# reconnects (PS_RETRY events, backoff while the ps is down), the chief restores the last
# checkpoint on every ps, and the run completes. The expectation for sync is computed
# independently of the recovery code: an undisturbed run of the same flags, whose final
# checkpoint the disturbed one must match bit for bit (sync is deterministic: each step's
# gradient is the mean over the global batch of that step). Async: completes with the
# global step at --steps and the chief's restore logged. SSP: the gate on a restarted ps
# learns the workers' clocks from their HELLO (it would deadlock otherwise). A
# hand-started cluster (downpour task) shows the backoff: the ps is really down, the
# connection is refused, and each attempt is an event. The launcher SIGKILLs the ps in
# the launched runs; the hand-started ps is ours and only it is signalled.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 16 --batch 16 --eval-every 0 --log-every 100000"
last() { tail -n1 "$1"; }

# --- sync: the restored run equals an undisturbed one, bit for bit ------------------------
for opt in sgd momentum; do
    "$DOWNPOUR" cluster --mode sync --ps 2 --workers 3 --steps 80 $SYN --optimizer $opt \
        --checkpoint-dir "$TMP/base-$opt" >/dev/null 2>&1
    for k in ps:0 ps:1; do
        d="$TMP/k-$opt-$k"
        timeout 120 "$DOWNPOUR" cluster --mode sync --ps 2 --workers 3 --steps 80 --pace 10ms $SYN --optimizer $opt \
            --kill "$k@step=35,restart=500ms" --checkpoint-dir "$d" --save-checkpoint-steps 10 \
            --trace "$d.dptrace" >"$d.out" 2>"$d.err"
        rc=$?
        check "sync $opt, $k killed at step 35 and restarted: the run completes (rc $rc)" test $rc -eq 0
        check "sync $opt, $k: every worker says it lost the ps and reconnects" \
            test "$(grep -c "lost connection to /job:ps/replica:0/task:${k#ps:}: .*; reconnecting" "$d.err")" -eq 3
        check "sync $opt, $k: every worker reconnects" \
            test "$(grep -c "reconnected to /job:ps/replica:0/task:${k#ps:}" "$d.err")" -eq 3
        check "sync $opt, $k: the chief restores the checkpoint of step 30 on every ps" \
            grep -q "Worker 0: restoring the session on every ps from the last checkpoint: global step 3[0-9] -> 30" "$d.err"
        check "sync $opt, $k: both ps take the restore" \
            test "$(grep -c "the chief restores the session: variables back at global step 30" "$d.err")" -eq 2
        check "sync $opt, $k: the final checkpoint equals the undisturbed run's, bit for bit" \
            "$DOWNPOUR" checkpoint diff "$TMP/base-$opt" "$d" --tol 0
        check "sync $opt, $k: every variable ends at --steps" \
            test "$(json "$d.out" global_step)/$(json "$d.out" min_variable_step)" = 80/80
        check "sync $opt, $k: no event lost" test "$(json "$d.out" events_dropped)" = 0
    done
done
d="$TMP/k-momentum-ps:1"
check "the trace holds a PS_RETRY per worker (the loss), one restore, one failure and recovery" \
    test "$(trace_count "$d.dptrace" ps_retry)/$(trace_count "$d.dptrace" checkpoint_restore)/$(trace_count "$d.dptrace" failure)/$(trace_count "$d.dptrace" recovery)" = 3/1/1/1
check "a caption says a worker lost ps 1 and the chief restores" \
    bash -c "'$DOWNPOUR' trace captions '$d.dptrace' | grep -q 'lost ps 1 at global step 3[0-9]: it reconnects, and the chief restores the session on every ps from the last checkpoint'"
check "the caption track's steps follow the global step back (none past --steps 80: barrier waits carry the global step)" \
    bash -c "'$DOWNPOUR' trace captions --json '$d.dptrace' | python3 -c 'import json,sys; d=json.load(sys.stdin); c=d if isinstance(d,list) else d[\"captions\"]; sys.exit(0 if c and max(x[\"step\"] for x in c) <= 80 else 1)'"
check "a caption says the chief restores global step 30" \
    bash -c "'$DOWNPOUR' trace captions '$d.dptrace' | grep -q 'restores global step 30 from model.ckpt-30'"
check "the summary counts the workers' reconnections (ps_reconnects 3: one each)" \
    test "$(json "$d.out" ps_reconnects)" = 3

# --- async: completes; the global step goes back to the checkpoint, then on --------------
# With --prefetch too, where a worker may lose the ps while the next step's parameters are
# on their way: it reconnects, and the run recovers as without.
for pf in "" --prefetch; do
d="$TMP/async$pf"
timeout 120 "$DOWNPOUR" cluster --mode async --ps 2 --workers 2 --steps 100 --pace 10ms $SYN $pf \
    --kill ps:0@step=40,restart=1s --checkpoint-dir "$d" --save-checkpoint-steps 10 --trace "$d.dptrace" \
    >"$d.out" 2>"$d.err"
rc=$?
check "async $pf, ps:0 killed and restarted: the run completes (rc $rc)" test $rc -eq 0
check "async $pf: the global step reaches --steps" fcmp "$(json "$d.out" global_step)" '>=' 100
check "async $pf: the chief restores from a checkpoint" grep -q "restoring the session on every ps from the last checkpoint" "$d.err"
check "async $pf: both workers reconnect (ps_reconnects 2)" test "$(json "$d.out" ps_reconnects)" = 2
# The trace's global_step counter (Chrome export) goes back at most once, to the
# restored checkpoint's step, and only then.
"$DOWNPOUR" trace export --chrome "$d.json" "$d.dptrace" >/dev/null 2>&1
check "async $pf: the global step never goes backwards except to the restored checkpoint" python3 - "$d.json" "$d.err" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
m = re.search(r"restored \S+model\.ckpt-(\d+) \(global step (\d+)\)", open(sys.argv[2]).read())
restored = int(m.group(2))
pts = sorted((e["ts"], e["args"]["global_step"]) for e in ev if e.get("ph") == "C" and e.get("name") == "global_step")
steps = [s for _, s in pts]
back = [(a, b) for a, b in zip(steps, steps[1:]) if b < a]
# It goes back at most once, and only to the restored step. It may not go back at all: the
# chief can save its last checkpoint at the very step at which the ps is lost (seen in CI).
assert len(steps) > 50 and len(back) <= 1 and all(b == restored for _, b in back), (len(steps), back, restored)
if not back:
    before = [s for s in steps if s <= restored]
    assert before and max(before) == restored, (restored, steps[:60])

PY
done

# --- no checkpoint: the session starts again from the initial values ---------------------
d="$TMP/nockpt"
timeout 120 "$DOWNPOUR" cluster --mode sync --ps 2 --workers 2 --steps 60 --pace 10ms $SYN \
    --kill ps:1@step=20,restart=300ms --trace "$d.dptrace" >"$d.out" 2>"$d.err"
rc=$?
check "no --checkpoint-dir: the run completes (rc $rc)" test $rc -eq 0
check "no --checkpoint-dir: the chief says it starts again from the initial values" \
    grep -q "restoring the session on every ps from the initial values (no checkpoint): global step [0-9]* -> 0" "$d.err"
check "no --checkpoint-dir: a caption says so" \
    bash -c "'$DOWNPOUR' trace captions '$d.dptrace' | grep -q 'has no checkpoint to restore: the session starts again from the initial values at global step 0'"
check "no --checkpoint-dir: every variable ends at --steps" \
    test "$(json "$d.out" global_step)/$(json "$d.out" min_variable_step)" = 60/60

# --- ssp: the restarted ps holds global_step and the gate -------------------------------
d="$TMP/ssp"
timeout 120 "$DOWNPOUR" cluster --mode ssp --staleness 2 --ps 2 --workers 3 --steps 80 --pace 10ms $SYN \
    --kill ps:0@step=30,restart=300ms --checkpoint-dir "$d" --save-checkpoint-steps 10 >"$d.out" 2>"$d.err"
rc=$?
check "ssp, the gate's ps killed and restarted: the run completes, no deadlock (rc $rc)" test $rc -eq 0
check "ssp: the global step reaches --steps" fcmp "$(json "$d.out" global_step)" '>=' 80

# --- the chief restarted: the ps keep the variables, nothing is restored -----------------
d="$TMP/chief"
timeout 120 "$DOWNPOUR" cluster --mode sync --ps 1 --workers 2 --steps 60 --pace 10ms $SYN \
    --kill worker:0@step=10,restart=300ms --checkpoint-dir "$d" --save-checkpoint-steps 5 --trace "$d.dptrace" \
    >"$d.out" 2>"$d.err"
rc=$?
check "the chief killed and restarted: the run completes (rc $rc)" test $rc -eq 0
check "the restarted chief says the ps hold the variables and restores nothing" \
    grep -q "the ps tasks hold the variables already (a restarted chief): .*model.ckpt-[0-9]* not restored" "$d.err"
check "... and the trace has no checkpoint_restore" test "$(trace_count "$d.dptrace" checkpoint_restore)" = 0

# --- hand-started: the ps is really down, workers retry with backoff --------------------
read -r P0 P1 W0 W1 < <(free_ports 4)
HOSTS="--ps_hosts=127.0.0.1:$P0,127.0.0.1:$P1 --worker_hosts=127.0.0.1:$W0,127.0.0.1:$W1"
HSYN="$SYN --mode sync --steps 150 --pace 20ms --checkpoint-dir $TMP/hand --save-checkpoint-steps 10"
"$DOWNPOUR" hub --listen 127.0.0.1:0 --trace "$TMP/hand.dptrace" --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 50); do grep -q "listening" "$TMP/hub.out" 2>/dev/null && break; sleep 0.1; done
HUBADDR=$(grep -o "listening on [0-9.:]*" "$TMP/hub.out" | head -1 | awk '{print $3}')
HUBF=${HUBADDR:+--hub $HUBADDR}
"$DOWNPOUR" task --job_name=ps --task_index=0 $HOSTS $HSYN $HUBF >/dev/null 2>"$TMP/hps0.err" &
PS0=$!
"$DOWNPOUR" task --job_name=ps --task_index=1 $HOSTS $HSYN $HUBF >/dev/null 2>"$TMP/hps1.err" &
PS1=$!
"$DOWNPOUR" task --job_name=worker --task_index=0 $HOSTS $HSYN $HUBF >"$TMP/hw0.out" 2>"$TMP/hw0.err" &
WK0=$!
"$DOWNPOUR" task --job_name=worker --task_index=1 $HOSTS $HSYN $HUBF >"$TMP/hw1.out" 2>"$TMP/hw1.err" &
WK1=$!
for _ in $(seq 200); do ls "$TMP/hand"/model.ckpt-20* >/dev/null 2>&1 && break; sleep 0.05; done
kill -9 $PS1
wait $PS1 2>/dev/null
sleep 1.5   # down: connections are refused, the workers retry
"$DOWNPOUR" task --job_name=ps --task_index=1 $HOSTS $HSYN $HUBF >/dev/null 2>"$TMP/hps1b.err" &
PS1=$!
wait $WK0; rc0=$?
wait $WK1; rc1=$?
wait $PS0 $PS1
kill $HUB 2>/dev/null; wait $HUB 2>/dev/null
check "hand-started: both workers finish after ps 1 came back (rc $rc0/$rc1)" test "$rc0/$rc1" = 0/0
check "hand-started: the workers were told the ps is down (connection refused) while it was" \
    grep -q "still waiting for response from /job:ps/replica:0/task:1 .*Connection refused" "$TMP/hw1.err"
check "hand-started: worker 1 reconnects after the ps is back" grep -q "reconnected to /job:ps/replica:0/task:1" "$TMP/hw1.err"
check "hand-started: the chief's final evaluation is at --steps" grep -q "final evaluation at global step 150" "$TMP/hw0.err"
if [ -s "$TMP/hand.dptrace" ]; then
    check "hand-started: retries while down are events (PS_RETRY attempts beyond the loss)" \
        fcmp "$(trace_count "$TMP/hand.dptrace" ps_retry)" '>' 4
else
    bad "hand-started: the hub recorded no trace ($(head -c 300 "$TMP/hub.err"))"
fi

done_tests
