#!/usr/bin/env bash
# it_shm.sh — `--transport shm` in real runs: every worker -> ps connection switches to
# the shared-memory rings (and says so, one line each); sync runs give bit-identical
# parameters and the same summary as over TCP (1 ps and 2 partitioned ps); a worker
# killed mid-run (the launcher's SIGKILL) is handled as over TCP, without a hang, and the
# ps releases that connection's ring (the memfds it maps, read from /proc/<ps>/maps, go
# from two to one); pushes are used where they lie in the ring (async: applied; sync:
# held by the accumulator until the step), with the same parameters as over TCP, also
# when a sync worker is killed while its gradient is held; a sync worker killed and restarted rejoins over a new ring; the flag is in --help and a bad value is refused. This script signals
# nothing: the launcher kills the task.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet"

# --- the same run over both transports ------------------------------------------------------
for t in tcp shm; do
    timeout 120 $DOWNPOUR cluster --ps 1 --workers 2 --mode sync --steps 80 --seed 5 $SYN \
        --transport $t --checkpoint-dir "$TMP/c1-$t" >"$TMP/s1-$t.json" 2>"$TMP/s1-$t.err"
    check "sync over $t exits 0 (rc $?)" test $? -eq 0
done
check "shm: both workers say their connection is on shared memory" \
    test "$(grep -c 'job:ps/replica:0/task:0: shared memory (two ' "$TMP/s1-shm.err")" = 2
check "tcp: no connection is" bash -c "! grep -q 'shared memory' '$TMP/s1-tcp.err'"
check "shm: nothing fell back to TCP" bash -c "! grep -qi 'TCP' '$TMP/s1-shm.err'"
check "sync, 1 ps: shm and tcp give identical parameters (tol 0)" \
    $DOWNPOUR checkpoint diff "$TMP/c1-tcp" "$TMP/c1-shm" --tol 0
for k in global_step final_loss test_accuracy bytes_pulled bytes_pushed dropped_gradients; do
    a=$(json "$TMP/s1-tcp.json" $k); b=$(json "$TMP/s1-shm.json" $k)
    check "sync, 1 ps: $k the same over both ($a, $b)" test "$a" = "$b"
done
# ... and the comparison can fail: another seed over shm differs.
timeout 120 $DOWNPOUR cluster --ps 1 --workers 2 --mode sync --steps 80 --seed 6 $SYN --transport shm \
    --checkpoint-dir "$TMP/c1-other" >/dev/null 2>&1
check "another seed over shm gives other parameters" \
    bash -c "! $DOWNPOUR checkpoint diff '$TMP/c1-tcp' '$TMP/c1-other' --tol 0 >/dev/null 2>&1"

for t in tcp shm; do
    timeout 120 $DOWNPOUR cluster --ps 2 --workers 3 --partition 2 --mode sync --steps 60 --seed 7 $SYN \
        --transport $t --checkpoint-dir "$TMP/c2-$t" >"$TMP/s2-$t.json" 2>"$TMP/s2-$t.err"
    check "sync, 2 ps x 3 workers over $t exits 0 (rc $?)" test $? -eq 0
done
check "2 ps: all six connections on shared memory" test "$(grep -c 'shared memory (two ' "$TMP/s2-shm.err")" = 6
check "sync, 2 partitioned ps: shm and tcp give identical parameters (tol 0)" \
    $DOWNPOUR checkpoint diff "$TMP/c2-tcp" "$TMP/c2-shm" --tol 0
check "sync, 2 ps: the same final loss over both" \
    test "$(json "$TMP/s2-tcp.json" final_loss)" = "$(json "$TMP/s2-shm.json" final_loss)"

# --- async: each push checked and applied where it lies in the ring -------------------------
# One worker async is deterministic: the same parameters over both transports, and over
# shm every push (4 trainable variables a step) applied in place, none over TCP.
for t in tcp shm; do
    timeout 120 $DOWNPOUR cluster --ps 2 --workers 1 --mode async --steps 60 --seed 8 $SYN \
        --transport $t --checkpoint-dir "$TMP/a-$t" >"$TMP/a-$t.json" 2>"$TMP/a-$t.err"
    check "async, 2 ps over $t exits 0 (rc $?)" test $? -eq 0
done
check "async, 2 ps: shm (pushes applied from the ring) and tcp give identical parameters (tol 0)" \
    $DOWNPOUR checkpoint diff "$TMP/a-tcp" "$TMP/a-shm" --tol 0
check "async over shm: all 240 pushes applied in place ($(json "$TMP/a-shm.json" pushes_in_place))" \
    test "$(json "$TMP/a-shm.json" pushes_in_place)" = 240
check "async over tcp: none ($(json "$TMP/a-tcp.json" pushes_in_place))" \
    bash -c "! grep -q pushes_in_place '$TMP/a-tcp.json'"
check "sync over shm: all 640 pushes held in the ring by the accumulator ($(json "$TMP/s1-shm.json" pushes_in_place))" \
    test "$(json "$TMP/s1-shm.json" pushes_in_place)" = 640
check "sync over tcp: none ($(json "$TMP/s1-tcp.json" pushes_in_place))" \
    bash -c "! grep -q pushes_in_place '$TMP/s1-tcp.json'"

# --- a worker killed mid-run: as over TCP ---------------------------------------------------
# rings PID: how many channels' memfds the process maps (each is mapped three times: the
# file, and its incoming ring twice, back to back)
rings() {
    local m; m=$(cat "/proc/$1/maps" 2>/dev/null) || return 0
    printf '%s\n' "$m" | awk '/downpour-shm/ {print $5}' | sort -u | wc -l
}
KILL="--mode async --workers 2 --steps 300 --pace 10ms --eval-every 0 --kill worker:1@step=40"
for t in tcp shm; do
    timeout 120 $DOWNPOUR cluster $KILL $SYN --transport $t >"$TMP/k-$t.json" 2>"$TMP/k-$t.err" &
    wrap=$!
    # the ps's shm mappings (its side of each worker's ring) before and after the kill
    before=""; after=""; ps_pid=""
    for i in $(seq 1 400); do
        launcher=$(child_pid $wrap ' cluster ')
        [ -n "$launcher" ] && [ -z "$ps_pid" ] && ps_pid=$(child_pid $launcher ' task --job_name=ps ')
        n=""; [ -n "$ps_pid" ] && n=$(rings "$ps_pid")
        if grep -q 'killing /job:worker/replica:0/task:1' "$TMP/k-$t.err" 2>/dev/null; then
            [ -z "$after" ] && sleep 0.3 && after=$(rings "$ps_pid")
            break
        fi
        [ -n "$n" ] && before=$n
        sleep 0.01
    done
    wait $wrap
    rc=$?
    check "$t: a worker killed mid-run: the run completes (rc $rc, not 124)" test $rc -eq 0
    check "$t: the launcher killed it and training went on" \
        bash -c "grep -q 'training goes on without /job:worker/replica:0/task:1' '$TMP/k-$t.err'"
    check "$t: the global step reaches --steps" fcmp "$(json "$TMP/k-$t.json" global_step)" '>=' 300
    check "$t: 1 fault, 1 worker lost" \
        test "$(json "$TMP/k-$t.json" faults_injected)/$(json "$TMP/k-$t.json" workers_lost)" = 1/1
    check "$t: the ps stops on its own" bash -c "! grep -q 'ps/replica:0/task:0: stopped by signal' '$TMP/k-$t.err'"
    if [ $t = shm ]; then
        check "shm: the ps mapped both workers' rings before the kill ($before)" test "${before:-x}" = 2
        check "shm: ... and released the dead one's after it ($after)" test "${after:-x}" = 1
    else
        check "tcp: the ps maps no ring ($before, $after)" test "${before:-0}/${after:-0}" = 0/0
    fi
done

# --- sync: a worker killed and restarted rejoins over a fresh ring -------------------------------
FSYN="--data synthetic --model mlp --hidden 16 --batch 16 --eval-every 0 --log-every 100000"
timeout 120 $DOWNPOUR cluster --mode sync --workers 2 --steps 30 $FSYN --kill worker:1@step=10,restart=1s \
    --transport shm >"$TMP/r.json" 2>"$TMP/r.err"
check "shm, sync restart: the run completes (rc $?)" test $? -eq 0
check "shm, sync restart: worker 1 rejoins at global step 10" \
    grep -q 'Worker 1: restarted: rejoining at global step 10' "$TMP/r.err"
check "shm, sync restart: its new process is on shared memory too (3 such lines)" \
    test "$(grep -c 'shared memory (two ' "$TMP/r.err")" = 3
check "shm, sync restart: global step 30, every variable at it, 1 restart, 0 lost" \
    test "$(json "$TMP/r.json" global_step)/$(json "$TMP/r.json" min_variable_step)/$(json "$TMP/r.json" tasks_restarted)/$(json "$TMP/r.json" workers_lost)" = 30/30/1/0

# --- sync: a worker killed while the accumulator holds its gradient in the ring --------------
# Worker 0 paced 100x slower (1 s a step, worker 1 10 ms): worker 1 waits at the
# barrier with its gradient held in its ring for all but the first ~20 ms of each step,
# so the kill at 2 s lands there whatever the start-up took (tried with a busy loop on
# one of the two cores: 20 ms a step and a kill at 1.1 s missed there). The ps copies the gradient out before the ring goes, and the step takes
# it: the same parameters, bit for bit, as the same kill over TCP (both logs naming the
# same step and gradient kept; up to 3 tries for a pair that does). The launcher kills.
KSYN="$FSYN --mode sync --workers 2 --steps 5 --pace 10ms --straggler worker:0x100 --kill worker:1@time=2s,restart=300ms"
kept() { grep -o "worker 1's gradient of .* for step [0-9]* stays accumulated" "$1"; grep -o 'at its step [0-9]*' "$1"; }
for attempt in 1 2 3; do
    for t in tcp shm; do
        rm -rf "$TMP/kc-$t"
        timeout 120 $DOWNPOUR cluster $KSYN --transport $t --checkpoint-dir "$TMP/kc-$t" >"$TMP/kc-$t.json" 2>"$TMP/kc-$t.err"
        eval "rc_$t=\$?"
    done
    grep -q 'stays accumulated (copied out' "$TMP/kc-shm.err" && [ "$(kept "$TMP/kc-tcp.err")" = "$(kept "$TMP/kc-shm.err")" ] && break
done
check "shm, sync kill at the barrier: both runs complete (rc $rc_tcp, $rc_shm)" test "$rc_tcp/$rc_shm" = 0/0
check "shm, sync kill at the barrier: the ps copied the held gradient out of the ring (try $attempt)" \
    grep -q "worker 1's gradient of .* stays accumulated (copied out of its connection's ring)" "$TMP/kc-shm.err"
check "shm, sync kill at the barrier: the same step and gradients kept as over TCP ($(kept "$TMP/kc-shm.err" | tr '\n' ' '))" \
    test "$(kept "$TMP/kc-tcp.err")" = "$(kept "$TMP/kc-shm.err")"
check "shm, sync kill at the barrier: the same parameters as over TCP (tol 0)" \
    $DOWNPOUR checkpoint diff "$TMP/kc-tcp" "$TMP/kc-shm" --tol 0

# --- sync: a ps lost and restored while gradients are held in its rings ----------------------
# The chief restores the last checkpoint (model.ckpt-30, or a later multiple of 10 when
# a busy machine lets the run pass step 40 before the kill lands) on both ps; the held
# gradients of the thrown-away steps are released with it. The same run over TCP ends
# with the same parameters.
PSYN="$SYN --ps 2 --workers 3 --mode sync --steps 60 --optimizer momentum --save-checkpoint-steps 10 --kill ps:1@step=35,restart=500ms"
for t in tcp shm; do
    timeout 120 $DOWNPOUR cluster $PSYN --transport $t --checkpoint-dir "$TMP/pl-$t" >"$TMP/pl-$t.json" 2>"$TMP/pl-$t.err"
    check "sync, ps 1 lost over $t: the run completes (rc $?)" test $? -eq 0
done
restored=$(grep -o 'restoring the session on every ps from the last checkpoint: global step [0-9]* -> [0-9]*' "$TMP/pl-shm.err")
check "sync, ps 1 lost over shm: the chief restored a checkpoint at a multiple of 10, at or after 30 (${restored##*: })" \
    python3 -c "import sys; a, b = map(int, sys.argv[1].split(' -> ')); sys.exit(not (b % 10 == 0 and 30 <= b <= a))" \
        "${restored##*global step }"
check "sync, ps 1 lost: shm and tcp end with the same parameters (tol 0)" \
    $DOWNPOUR checkpoint diff "$TMP/pl-tcp" "$TMP/pl-shm" --tol 0

# --- the flag -----------------------------------------------------------------------------------
check "cluster --help shows --transport" bash -c "$DOWNPOUR cluster --help 2>&1 | grep -q -- '--transport T'"
check "task --help shows --transport" bash -c "$DOWNPOUR task --help 2>&1 | grep -q -- '--transport T'"
$DOWNPOUR cluster --transport udp $SYN --steps 1 >/dev/null 2>"$TMP/bad.err"
check "--transport udp is refused, naming the choices (rc $?)" grep -q 'transport.*"udp" is not one of' "$TMP/bad.err"

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
