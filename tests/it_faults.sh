#!/usr/bin/env bash
# it_faults.sh — fault injection in `downpour cluster` (--fail, alias --kill; the key
# "fail" the simulator shares): a worker killed in async and in sync with a backup
# worker (the run completes without it), in sync without one (workers log whom they
# wait for, and --barrier-timeout stops the run with one clear error and a checkpoint
# that resumes), a restart that rejoins at the current global step, a ps lost without
# restart (a clear error), an ssp restart back in the staleness gate (runtime and
# simulator), every fault an event in the trace (trace info --json counts)
# and a caption, and bad values refused in one line naming the flag. The launcher
# SIGKILLs the task itself; this script signals nothing. --pace keeps runs long enough
# for a kill to land mid-run; no check reads a duration.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 16 --batch 16 --eval-every 0 --log-every 100000"

# --- async: a dead worker is not waited for -----------------------------------------------
"$DOWNPOUR" cluster --mode async --workers 3 --steps 150 --pace 10ms $SYN --kill worker:1@step=5 \
    --trace "$TMP/a.dptrace" >"$TMP/a.out" 2>"$TMP/a.err"
check "async: the run completes without the killed worker (rc $?)" test $? -eq 0
check "async: the launcher kills worker 1 at exactly its step 5 and says so" \
    grep -q -- "--fail worker:1@step=5: killing /job:worker/replica:0/task:1 (SIGKILL) at its step 5" "$TMP/a.err"
check "async: it says training goes on" grep -q "training goes on without /job:worker/replica:0/task:1 (async" "$TMP/a.err"
check "async: the ps stops on its own, not waiting for the dead worker's DONE" \
    bash -c "! grep -q 'ps/replica:0/task:0: stopped by signal' '$TMP/a.err'"
check "async: the global step reaches --steps" fcmp "$(json "$TMP/a.out" global_step)" '>=' 150
check "async: summary counts 1 fault, 1 worker lost, 0 restarts" \
    test "$(json "$TMP/a.out" faults_injected)/$(json "$TMP/a.out" workers_lost)/$(json "$TMP/a.out" tasks_restarted)" = 1/1/0
check "async: no event was lost (summary events_dropped 0)" test "$(json "$TMP/a.out" events_dropped)" = 0
check "async: the trace holds 1 failure, 0 recoveries" \
    test "$(trace_count "$TMP/a.dptrace" failure)/$(trace_count "$TMP/a.dptrace" recovery)" = 1/0
check "async: the caption says worker 1 died of the injected fault" \
    bash -c "'$DOWNPOUR' trace captions '$TMP/a.dptrace' | grep -q 'worker 1 died: killed by signal 9 (injected by --fail worker:1@step=5)'"

# --- async, by time ------------------------------------------------------------------------
"$DOWNPOUR" cluster --mode async --workers 2 --steps 200 --pace 10ms $SYN --kill worker:1@time=300ms \
    >"$TMP/t.out" 2>"$TMP/t.err"
check "async: --kill worker:1@time=300ms completes the run (rc $?)" test $? -eq 0
check "async: by time, the worker is killed and the global step reaches --steps" \
    bash -c "grep -q 'killing /job:worker/replica:0/task:1' '$TMP/t.err' && [ \$(python3 -c \"import json; print(json.loads(open('$TMP/t.out').read().splitlines()[-1])['global_step'] >= 200)\") = True ]"

# --- the chief lost without restart: the run goes on, and says what it will lack -----------
"$DOWNPOUR" cluster --mode async --workers 3 --steps 100 --pace 10ms $SYN --kill worker:0@step=10 \
    >"$TMP/c.out" 2>"$TMP/c.err"
check "async: the chief killed, not restarted: the run completes (rc $?)" test $? -eq 0
check "... the launcher says nobody will evaluate or checkpoint" \
    grep -q "was the chief: from now on nobody writes checkpoints or evaluates" "$TMP/c.err"
check "... the summary says chief_lost, with test_accuracy null" \
    test "$(json "$TMP/c.out" chief_lost)/$(json "$TMP/c.out" test_accuracy)" = "True/null"

# --- a restart due as training ends is not made: the chief's and the ps's statistics lines
# (before their exits, which wait for the hub's acknowledgements) end the restarts. Lesson
# 10's async case at 200 steps puts worker 1's restart (1 s) in that window about every
# other run; it used to wait 60 s for a ps that had gone and fail the run.
timeout 120 "$DOWNPOUR" run scenarios/lessons/10-failure-recovery.ini --no-view --set mode=async --set steps=200 \
    --out "$TMP/late" >/dev/null 2>"$TMP/late.err"
rc=$?
check "a restart due as training ends: the run completes (rc $rc)" test $rc -eq 0
check "... the launcher says it is not made (or it was made before the end)" \
    grep -q "training is over: /job:worker/replica:0/task:1 is not restarted\|restarted: rejoining" "$TMP/late.err"

# --- a restart made as training ends, which joins after the ps is gone: the launcher stops
# it. Worker 1's new process starts 1 s after its death, while worker 0, paced at 10 ms,
# still has some 190 steps (1.9 s at least) to go; generating 200,000 synthetic samples
# takes it 1.7 s or more before it connects (measured on an idle machine), after the ps
# has ended. It used to wait --connect-timeout for the ps and fail the run.
timeout 120 "$DOWNPOUR" cluster --mode async --workers 2 --steps 200 --pace 10ms $SYN --synthetic-samples 200000 \
    --kill worker:1@step=5,restart=1s --connect-timeout 20 >"$TMP/gone.out" 2>"$TMP/gone.err"
rc=$?
check "a restart that would join after the ps ended: the run completes at once (rc $rc; $(json "$TMP/gone.out" wall_s) s)" \
    bash -c "[ $rc -eq 0 ] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 20)' '$(json "$TMP/gone.out" wall_s)'"
check "... the launcher restarted worker 1, then stopped it, saying why" \
    bash -c "grep -q 'task:1 restarted by the launcher' '$TMP/gone.err' &&
             grep -q 'training is over: /job:worker/replica:0/task:1, restarted as it ended, finds no ps; stopping it' '$TMP/gone.err'"

# --- two restarts, one made and one due after the end: only the second is dropped --------
timeout 120 "$DOWNPOUR" cluster --mode async --workers 3 --steps 300 --pace 10ms $SYN \
    --kill worker:1@step=5,restart=100ms --kill worker:2@step=20,restart=30s >"$TMP/two.out" 2>"$TMP/two.err"
rc=$?
check "two restarts, the second due after the end: the run completes at once (rc $rc, not 124)" test $rc -eq 0
check "... worker 1 was restarted, and only worker 2 is said not to be" \
    bash -c "grep -q 'task:1 restarted by the launcher' '$TMP/two.err' &&
             [ \"\$(grep -c 'training is over: .* is not restarted' '$TMP/two.err')\" = 1 ] &&
             grep -q 'training is over: /job:worker/replica:0/task:2 is not restarted' '$TMP/two.err'"
check "... the summary counts 2 faults, 1 restart" \
    test "$(json "$TMP/two.out" faults_injected)/$(json "$TMP/two.out" tasks_restarted)" = 2/1

# --- a worker killed before it joins: the ps never hears of it, the chief does not wait
# for its final step forever (FINAL_STEP is bounded), the run completes -------------------
timeout 120 "$DOWNPOUR" cluster --mode async --workers 2 --steps 100 --pace 10ms $SYN --kill worker:1@time=1ms \
    >"$TMP/j.out" 2>"$TMP/j.err"
rc=$?
check "async: a worker killed before it joined: the run completes (rc $rc, not 124)" test $rc -eq 0
check "... the chief says why it did not get the ps's final step" grep -q "did not report the final global step" "$TMP/j.err"

# --- sync with a backup worker: the others cover it ---------------------------------------
"$DOWNPOUR" cluster --mode sync --workers 3 --backup-workers 1 --steps 40 --pace 10ms $SYN \
    --kill worker:2@step=5 --trace "$TMP/s.dptrace" >"$TMP/s.out" 2>"$TMP/s.err"
check "sync+backup: the run completes without worker 2 (rc $?)" test $? -eq 0
check "sync+backup: the launcher says the backup covers it" grep -q "sync: 1 backup worker covers it" "$TMP/s.err"
check "sync+backup: the global step is --steps, every variable at it" \
    test "$(json "$TMP/s.out" global_step)/$(json "$TMP/s.out" min_variable_step)" = 40/40
check "sync+backup: the ps stops on its own" bash -c "! grep -q 'stopped by signal' '$TMP/s.err'"
check "sync+backup: no barrier wait was reported" bash -c "! grep -q 'waiting for' '$TMP/s.err'"
check "sync+backup: the trace holds 1 failure" test "$(trace_count "$TMP/s.dptrace" failure)" = 1

# --- sync without a backup: waiting, then the barrier timeout ------------------------------
# (timeout 120: a hang guard, so that a broken timeout fails here instead of stalling)
timeout 120 "$DOWNPOUR" cluster --mode sync --workers 2 --steps 40 $SYN --kill worker:1@step=8 --barrier-timeout 3s \
    --checkpoint-dir "$TMP/ck" --trace "$TMP/b.dptrace" >"$TMP/b.out" 2>"$TMP/b.err"
check "sync: a lost worker without backups stops the run with exit 1 (rc $?)" test $? -eq 1
check "sync: the launcher says the others wait up to --barrier-timeout" \
    grep -q "sync has no backup worker to cover it: the others wait for it up to --barrier-timeout 3s" "$TMP/b.err"
check "sync: worker 0 logs whom it waits for and how long" \
    grep -q "Worker 0: waiting for /job:worker/replica:0/task:1 (2 s)" "$TMP/b.err"
check "sync: the run's error is one line naming the barrier timeout" \
    test "$(grep -c '^downpour: cluster: task /job:worker/replica:0/task:0 stopped the run: barrier timeout: step [0-9]* waited 3 s for /job:worker/replica:0/task:1 (--barrier-timeout 3s)$' "$TMP/b.err")" = 1
STEP=$(sed -n 's/.*barrier timeout: step \([0-9]*\) waited.*/\1/p' "$TMP/b.err" | head -n1)
check "sync: the chief saved a checkpoint at the step it stopped at ($STEP)" test -f "$TMP/ck/model.ckpt-$STEP"
check "sync: the trace holds the barrier_timeout and the failures (lost worker, stopped run)" \
    test "$(trace_count "$TMP/b.dptrace" barrier_timeout)/$(trace_count "$TMP/b.dptrace" failure)" = 1/2
check "sync: a caption explains the timeout" \
    bash -c "'$DOWNPOUR' trace captions '$TMP/b.dptrace' | grep -q 'worker 0 gives up waiting .* for worker 1 at step $STEP: sync needs every replica'"
"$DOWNPOUR" cluster --mode sync --workers 2 --steps 40 $SYN --checkpoint-dir "$TMP/ck" >"$TMP/rs.out" 2>"$TMP/rs.err"
check "sync: the timeout's checkpoint resumes to completion (rc $?)" test $? -eq 0
check "sync: the resume starts from global step $STEP" grep -q "restored .*model.ckpt-$STEP (global step $STEP)" "$TMP/rs.err"
check "sync: the resumed run reaches --steps" test "$(json "$TMP/rs.out" global_step)" = 40

# --- a restart rejoins at the current global step ------------------------------------------
"$DOWNPOUR" cluster --mode sync --workers 2 --steps 30 $SYN --kill worker:1@step=10,restart=1s \
    --trace "$TMP/r.dptrace" >"$TMP/r.out" 2>"$TMP/r.err"
check "sync restart: the run completes (rc $?)" test $? -eq 0
check "sync restart: the launcher says it restarts and restarted the worker" \
    bash -c "grep -q 'restarting it in 1 s' '$TMP/r.err' && grep -q 'task:1 restarted by the launcher (restart 1' '$TMP/r.err'"
RJ=$(sed -n 's/.*Worker 1: restarted: rejoining at global step \([0-9]*\).*/\1/p' "$TMP/r.err")
check "sync restart: worker 1 rejoins at the current global step (10: it died after its step 10, not 0)" \
    test "$RJ" = 10
check "sync restart: the global step is --steps, every variable at it" \
    test "$(json "$TMP/r.out" global_step)/$(json "$TMP/r.out" min_variable_step)" = 30/30
check "sync restart: summary counts 1 fault, 1 restart, 0 lost" \
    test "$(json "$TMP/r.out" faults_injected)/$(json "$TMP/r.out" tasks_restarted)/$(json "$TMP/r.out" workers_lost)" = 1/1/0
check "sync restart: no event was lost" test "$(json "$TMP/r.out" events_dropped)" = 0
check "sync restart: the trace holds 1 failure and 1 recovery" \
    test "$(trace_count "$TMP/r.dptrace" failure)/$(trace_count "$TMP/r.dptrace" recovery)" = 1/1
check "sync restart: a caption says worker 1 recovers" \
    bash -c "'$DOWNPOUR' trace captions '$TMP/r.dptrace' | grep -q 'worker 1 recovers after'"
"$DOWNPOUR" cluster --mode async --workers 2 --steps 200 --pace 10ms $SYN --kill worker:1@step=5,restart=200ms \
    >"$TMP/ar.out" 2>"$TMP/ar.err"
check "async restart: the run completes (rc $?)" test $? -eq 0
ARJ=$(sed -n 's/.*Worker 1: restarted: rejoining at global step \([0-9]*\).*/\1/p' "$TMP/ar.err")
check "async restart: worker 1 rejoins at the current global step ($ARJ > 5)" bash -c "[ -n '$ARJ' ] && [ '$ARJ' -gt 5 ]"

# SSP: the restarted process takes part in the gate again, at the clock of the worker that
# went on without it (it does not count from 0, which would hold the other back, nor stay
# retired, which would let the other run free). Lockstep (--staleness 0): worker 0 then
# waits for it again.
"$DOWNPOUR" cluster --mode ssp --staleness 0 --workers 2 --steps 1500 --pace 1ms $SYN \
    --kill worker:1@step=5,restart=300ms --trace "$TMP/sr.dptrace" >"$TMP/sr.out" 2>"$TMP/sr.err"
check "ssp restart: the run completes (rc $?)" test $? -eq 0
SRC=$(sed -n 's/.*Worker 1: restarted: rejoining at global step [0-9]*, SSP clock \([0-9]*\).*/\1/p' "$TMP/sr.err")
check "ssp restart: worker 1 counts on from worker 0's clock ($SRC > 5), not from 0" \
    bash -c "[ -n '$SRC' ] && [ '$SRC' -gt 5 ]"
"$DOWNPOUR" trace export --chrome "$TMP/sr.json" "$TMP/sr.dptrace" 2>/dev/null
SRW=$(python3 - "$TMP/sr.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
pid = {e['args']['name']: e['pid'] for e in ev if e.get('name') == 'process_name'}
back = min(e['ts'] for e in ev if e.get('name') == 'recovery')
print(sum(1 for e in ev if e.get('name') == 'ssp_wait' and e['pid'] == pid['/job:worker/replica:0/task:0']
          and e['ts'] > back))
PY
)
check "ssp restart: worker 0 waits at the gate for the restarted worker 1 ($SRW waits after the restart)" \
    bash -c "[ -n '$SRW' ] && [ '$SRW' -gt 0 ]"
SRL=$(python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
print(sum(1 for e in ev if e.get('name') == 'log' and e['args'].get('text', '').startswith(
    'Worker 1: restarted, rejoining at global step ') and e['args']['text'].endswith(', SSP clock $SRC')))" "$TMP/sr.json")
check "ssp restart: the trace's log event says it too ($SRL)" test "$SRL" = 1

# --- a lost ps without restart: a clear error ----------------------------------------------
"$DOWNPOUR" cluster --mode async --workers 2 --steps 400 --pace 10ms $SYN --kill ps:0@step=20 \
    --trace "$TMP/p.dptrace" >"$TMP/p.out" 2>"$TMP/p.err"
check "ps lost: the run stops with exit 1 (rc $?)" test $? -eq 1
check "ps lost: the error names the ps and the fault" \
    grep -q "^downpour: cluster: task /job:ps/replica:0/task:0 died: killed by signal 9 (injected by --fail ps:0@step=20); no restart= was asked" "$TMP/p.err"
check "ps lost: the trace holds its failure" test "$(trace_count "$TMP/p.dptrace" failure)" -ge 1
check "ps lost: its caption says why the run stopped" \
    bash -c "'$DOWNPOUR' trace captions '$TMP/p.dptrace' | grep -q 'ps 0 died: killed by signal 9 (injected by --fail ps:0@step=20); no restart= was asked'"

# --- bad values: one line naming the flag --------------------------------------------------
bad_kill() { # bad_kill DESCRIPTION EXPECTED-TEXT ARGS...
    local what=$1 want=$2; shift 2
    "$DOWNPOUR" cluster $SYN "$@" >/dev/null 2>"$TMP/bad.err"
    local rc=$?
    check "bad $what: exit 2 and one line naming the flag (rc $rc)" \
        bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/bad.err') -eq 1 ] && grep -qF -- '$want' '$TMP/bad.err'"
}
bad_kill "syntax" '--kill: "worker:1@soon" is not JOB:I@step=N or JOB:I@time=T' --kill 'worker:1@soon'
bad_kill "job" '--kill: "chief:0@step=1" is not' --kill 'chief:0@step=1'
bad_kill "step" '--kill: step "-3" is not a non-negative integer' --kill 'worker:1@step=-3'
bad_kill "time" '--kill time: "soon" is not a time' --kill 'ps:0@time=soon'
bad_kill "restart" '--kill restart: "xyz" is not a time' --kill 'worker:1@step=5,restart=xyz'
bad_kill "task" '--fail/--kill: worker:9@step=1 names worker 9, which does not exist (2 worker tasks)' --kill 'worker:9@step=1'
bad_kill "fail spelling" '--fail: "worker:1" is not' --fail 'worker:1'
bad_kill "barrier timeout" '--barrier-timeout: "-1" is not a time' --barrier-timeout -1

# --- one key for both engines ----------------------------------------------------------------
"$DOWNPOUR" sim --workers 4 --steps 30 --kill 'worker:1@step=5,restart=2s' --trace "$TMP/sim.dptrace" --quiet >/dev/null 2>&1
check "sim: --kill is the simulator's --fail (rc $?)" test $? -eq 0
check "sim: its trace holds the failure and the recovery" \
    test "$(trace_count "$TMP/sim.dptrace" failure)/$(trace_count "$TMP/sim.dptrace" recovery)" = 1/1
# the simulator's ssp follows the runtime's: a lost worker is retired from the gate (the
# other goes on), and the restarted one counts on from the other's clock
"$DOWNPOUR" sim --mode ssp --staleness 0 --workers 2 --steps 400 --kill 'worker:1@step=5,restart=2s' \
    --trace "$TMP/simssp.dptrace" --quiet >/dev/null 2>&1
check "sim ssp restart: the run completes (rc $?)" test $? -eq 0
"$DOWNPOUR" trace export --chrome "$TMP/simssp.json" "$TMP/simssp.dptrace" 2>/dev/null
read -r SGS SW1 < <(python3 - "$TMP/simssp.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
pid = {e['args']['name']: e['pid'] for e in ev if e.get('name') == 'process_name'}
down = min(e['ts'] for e in ev if e.get('name') == 'failure')
back = min(e['ts'] for e in ev if e.get('name') == 'recovery')
print(sum(1 for e in ev if e.get('name') == 'global_step' and down < e['ts'] < back),
      min(e['args']['step'] for e in ev if e.get('name') == 'step_end'
          and e['pid'] == pid['/job:worker/replica:0/task:1'] and e['ts'] > back))
PY
)
# worker 0 alone, 0.1 s a step: about 20 steps in the 2 s; held at the bound, 1 at most
check "sim ssp restart: worker 0 goes on while worker 1 is down ($SGS global steps in its 2 s)" \
    bash -c "[ -n '$SGS' ] && [ '$SGS' -ge 10 ]"
check "sim ssp restart: worker 1's first step after it is worker 0's clock, not its own 5 ($SW1)" \
    bash -c "[ -n '$SW1' ] && [ '$SW1' -ge 15 ]"
"$DOWNPOUR" sim --workers 2 --steps 30 --fail 'ps:0@time=1s,restart=1s' --quiet >/dev/null 2>&1
check "sim: @time=T is accepted as @t=T (rc $?)" test $? -eq 0
done_tests
