#!/usr/bin/env bash
# it_cluster.sh — real multi-process runs on loopback: every mode converges on synthetic
# data, sync equivalences and reproducibility, async staleness, start order, failures,
# checkpoints, TF_CONFIG, and command-line errors.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet"

for mode in sync async ssp; do
    $DOWNPOUR cluster --ps 1 --workers 2 --mode $mode --steps 300 $SYN >"$TMP/$mode.json" 2>"$TMP/$mode.err"
    check "$mode run exits 0" test $? -eq 0
    acc=$(json "$TMP/$mode.json" test_accuracy)
    check "$mode converges on synthetic data (accuracy $acc > 0.9)" fcmp "$acc" '>' 0.9
    check "$mode reaches global step 300" fcmp "$(json "$TMP/$mode.json" global_step)" '>=' 300
done
missing=""
for k in engine mode ps workers steps global_step wall_s mean_step_s samples_per_s final_loss \
         test_accuracy mean_staleness max_staleness dropped_gradients bytes_pulled bytes_pushed \
         events events_dropped trace; do
    grep -q "\"$k\":" "$TMP/sync.json" || missing="$missing $k"
done
check "summary carries every DESIGN.md key (missing:${missing:- none})" test -z "$missing"
# no --summary: the summary on stdout only; no file is tried, so no error names one
check "a run without --summary tries no summary file (no stderr line names one)" \
    bash -c "[ -s '$TMP/sync.err' ] && ! grep -qE -- '--summary|No such file' '$TMP/sync.err'"

# Sync: 2 workers x batch 16 equals 1 worker x batch 32 on the same data order.
$DOWNPOUR cluster --ps 1 --workers 2 --batch 16 --steps 60 $SYN --checkpoint-dir "$TMP/w2" >/dev/null 2>&1
$DOWNPOUR cluster --ps 1 --workers 1 --batch 32 --steps 60 $SYN --checkpoint-dir "$TMP/w1" >/dev/null 2>&1
check "sync 2 workers x b == 1 worker x 2b (1e-5)" $DOWNPOUR checkpoint diff "$TMP/w2" "$TMP/w1" --tol 1e-5
# ... and a different batch really differs (the comparison can fail).
$DOWNPOUR cluster --ps 1 --workers 1 --batch 16 --steps 60 $SYN --checkpoint-dir "$TMP/w1b" >/dev/null 2>&1
check "a different batch gives different parameters" \
    bash -c "! $DOWNPOUR checkpoint diff '$TMP/w2' '$TMP/w1b' --tol 1e-5 >/dev/null"

# Sync reproducibility: same seed, identical parameters, over 2 ps with partitioning.
$DOWNPOUR cluster --ps 2 --workers 3 --partition 2 --steps 80 $SYN --seed 7 --checkpoint-dir "$TMP/ra" >/dev/null 2>&1
$DOWNPOUR cluster --ps 2 --workers 3 --partition 2 --steps 80 $SYN --seed 7 --checkpoint-dir "$TMP/rb" >/dev/null 2>&1
check "two sync runs with one seed give identical parameters" \
    $DOWNPOUR checkpoint diff "$TMP/ra" "$TMP/rb" --tol 0
$DOWNPOUR cluster --ps 2 --workers 3 --partition 2 --steps 80 $SYN --seed 8 --checkpoint-dir "$TMP/rc" >/dev/null 2>&1
check "another seed gives other parameters" bash -c "! $DOWNPOUR checkpoint diff '$TMP/ra' '$TMP/rc' --tol 0 >/dev/null"

# Async with 4 workers: gradients are stale.
$DOWNPOUR cluster --ps 1 --workers 4 --mode async --steps 400 $SYN >"$TMP/async4.json" 2>/dev/null
st=$(json "$TMP/async4.json" mean_staleness)
check "async with 4 workers reports mean staleness $st > 0" fcmp "$st" '>' 0
check "async max staleness >= 1" fcmp "$(json "$TMP/async4.json" max_staleness)" '>=' 1

# Sync with a backup worker drops stale gradients and still finishes.
$DOWNPOUR cluster --ps 1 --workers 3 --backup-workers 1 --steps 100 $SYN --slow-worker 2:3 >"$TMP/bk.json" 2>/dev/null
check "backup worker: stale gradients dropped" fcmp "$(json "$TMP/bk.json" dropped_gradients)" '>' 0

# Sync with backups over partitioned variables on 2 ps: no variable falls behind the
# global step (TensorFlow applies every variable of a step before the step advances), and
# the end of the run never waits on a step that cannot complete.
for seed in 1 2 3 4; do
    timeout 60 $DOWNPOUR cluster --ps 2 --workers 4 --backup-workers 2 --partition 2 --steps 100 $SYN \
        --seed $seed >"$TMP/bk2.json" 2>/dev/null
    rc=$?
    if [ $rc -eq 0 ] && [ "$(json "$TMP/bk2.json" min_variable_step)" = "$(json "$TMP/bk2.json" global_step)" ]; then
        ok "sync + 2 backups, seed $seed: finishes, every variable at the global step"
    else
        bad "sync + 2 backups, seed $seed: rc $rc, $(cat "$TMP/bk2.json")"
    fi
done
check "plain sync: every variable at the global step" \
    test "$(json "$TMP/sync.json" min_variable_step)" = "$(json "$TMP/sync.json" global_step)"

# SSP bound holds, read from the trace. A worker may start step s only once the slowest
# has completed s - S steps, so (closed form, independent of the code) the step counts of
# the workers never differ by more than S + 1, and a gradient read at step s meets at most
# 2S + 1 pushes of each other worker before it is applied: staleness <= (W - 1)(2S + 1).
# A 10x straggler makes an ungated run break both by far (its gradients ~20 stale).
$DOWNPOUR cluster --ps 1 --workers 3 --mode ssp --staleness 1 --steps 200 $SYN --slow-worker 0:10 \
    --trace "$TMP/ssp.dptrace" >"$TMP/ssp.json" 2>/dev/null
check "ssp run with a straggler reaches global step 200" test "$(json "$TMP/ssp.json" global_step)" -ge 200
$DOWNPOUR trace export --chrome "$TMP/ssp.chrome.json" "$TMP/ssp.dptrace" 2>/dev/null
ssp_stats() { python3 - "$TMP/ssp.chrome.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
st = [e['args']['staleness'] for e in ev if e.get('name') == 'apply']
steps = collections.Counter(e['pid'] for e in ev if e.get('name') == 'step_end')
print(len(st), max(st), max(steps.values()) - min(steps.values()), len(steps))
PY
}
read -r n_apply max_st spread n_workers <<<"$(ssp_stats)"
check "ssp trace holds applies ($n_apply) from 3 workers ($n_workers)" test "$n_apply" -gt 0 -a "$n_workers" -eq 3
check "ssp: every applied gradient's staleness <= (W-1)(2S+1) = 6 (max $max_st)" test "$max_st" -le 6
check "ssp: workers' step counts differ by <= S+1 = 2 (spread $spread)" test "$spread" -le 2

# Async evaluations: the chief evaluates once in every interval of --eval-every global steps
# it reads a step of, however far the others move the global step between its pulls (a
# chief slowed 4x sees it jump ~12 at a time). Intervals read come from its step_end
# events (value2 = the global step it read), the evaluations from its eval events.
$DOWNPOUR cluster --ps 1 --workers 4 --mode async --steps 600 --eval-every 50 $SYN --slow-worker 0:4 \
    --trace "$TMP/ev.dptrace" >/dev/null 2>&1
$DOWNPOUR trace export --chrome "$TMP/ev.json" "$TMP/ev.dptrace" 2>/dev/null
msg=$(python3 - "$TMP/ev.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
names = {e['pid']: e['args']['name'] for e in ev if e.get('ph') == 'M' and e['name'] == 'process_name'}
chief = [p for p, n in names.items() if n == '/job:worker/replica:0/task:0'][0]
read = {int(e['args']['value2']) // 50 for e in ev if e.get('pid') == chief and e['name'] == 'step_end'} - {0}
evals = [e['args']['step'] // 50 for e in ev if e.get('pid') == chief and e['name'] == 'eval'][:-1]  # less the final one
print('ok' if sorted(evals) == sorted(read) and len(read) >= 8 else 'bad', len(evals), 'evaluations for', len(read), 'intervals read')
PY
)
check "async chief evaluates once per interval it reads ($msg)" test "${msg%% *}" = ok


# Ports come from the OS, each bound while the next is chosen: 128 workers, never the same
# port twice (picked ahead, a run of 4 failed with "duplicate address").
for i in 1 2; do
    $DOWNPOUR cluster --ps 1 --workers 128 --steps 3 --batch 8 --mode async --data synthetic --model softmax \
        --quiet >/dev/null 2>"$TMP/w128.err"
    rc=$?
    check "cluster --workers 128 (run $i) exits 0 (rc $rc$(grep -o 'duplicate address' "$TMP/w128.err" | head -1 | sed 's/^/: /'))" test $rc -eq 0
done

# Tasks never outlive their launcher: kill -9 it and every task it started exits.
$DOWNPOUR cluster --ps 1 --workers 2 --steps 100000 $SYN >/dev/null 2>&1 &
L=$!
KIDS=""
for _ in $(seq 50); do KIDS=$(children $L | tr '\n' ' '); [ "$(wc -w <<<"$KIDS")" -ge 3 ] && break; sleep 0.1; done
check "the launcher started 3 tasks (${KIDS:-none})" test "$(wc -w <<<"$KIDS")" -ge 3
kill -9 $L 2>/dev/null; wait $L 2>/dev/null
left=""
for _ in $(seq 50); do left=$(alive_matching $KIDS -- 'downpour task'); [ -z "$left" ] && break; sleep 0.1; done
check "after kill -9 of the launcher its tasks exit within 5 s (left: ${left:-none})" test -z "$left"
[ -n "$left" ] && kill $left 2>/dev/null

# A worker started 2 s before its ps still joins, and logs that it waits.
P1=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
W1=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HOSTS="--ps_hosts=127.0.0.1:$P1 --worker_hosts=127.0.0.1:$W1"
$DOWNPOUR task --job_name=worker --task_index=0 $HOSTS --steps 50 $SYN >"$TMP/late.json" 2>"$TMP/late.err" &
WPID=$!
sleep 2
$DOWNPOUR task --job_name=ps --task_index=0 $HOSTS --steps 50 $SYN >/dev/null 2>&1 &
PPID_=$!
wait $WPID; wrc=$?
wait $PPID_
check "worker started 2 s before its ps finishes" test $wrc -eq 0
check "worker logged that it waits for /job:ps/replica:0/task:0" grep -q "still waiting for response from /job:ps/replica:0/task:0" "$TMP/late.err"

# TF_CONFIG: the same cluster from JSON.
TFC_PS="{\"cluster\":{\"ps\":[\"127.0.0.1:$P1\"],\"worker\":[\"127.0.0.1:$W1\"]},\"task\":{\"type\":\"ps\",\"index\":0}}"
TFC_WK="{\"cluster\":{\"ps\":[\"127.0.0.1:$P1\"],\"worker\":[\"127.0.0.1:$W1\"]},\"task\":{\"type\":\"worker\",\"index\":0}}"
TF_CONFIG="$TFC_PS" $DOWNPOUR task --steps 30 $SYN >/dev/null 2>&1 &
TF_CONFIG="$TFC_WK" $DOWNPOUR task --steps 30 $SYN >"$TMP/tfc.json" 2>/dev/null
check "TF_CONFIG task trains to step 30" test "$(json "$TMP/tfc.json" global_step)" -eq 30
wait

# TensorFlow's conventions (TFConfigClusterResolver): task.index may be a string ("0" is
# int("0")), and an explicit --job_name/--task_index overrides TF_CONFIG's task, saying so.
read -r P2 W2 < <(free_ports 2)
TFC_STR="{\"cluster\":{\"ps\":[\"127.0.0.1:$P2\"],\"worker\":[\"127.0.0.1:$W2\"]},\"task\":{\"type\":\"ps\",\"index\":\"0\"}}"
TF_CONFIG="$TFC_STR" $DOWNPOUR task --steps 30 $SYN >"$TMP/tfs_ps.json" 2>"$TMP/tfs_ps.err" &
TFS_PS=$!
TF_CONFIG="$TFC_STR" $DOWNPOUR task --job_name=worker --task_index=0 --steps 30 $SYN >"$TMP/tfs_w.json" 2>"$TMP/tfs_w.err"
check "TF_CONFIG with \"index\": \"0\" (a string) runs the ps" wait $TFS_PS
check "--job_name=worker over TF_CONFIG's ps task trains as the worker to step 30" \
    test "$(json "$TMP/tfs_w.json" global_step)" -eq 30
check "the override is said in one line" grep -qxF \
    "downpour: task: --job_name=worker overrides TF_CONFIG's task.type \"ps\": running as /job:worker/replica:0/task:0" "$TMP/tfs_w.err"
check "no override, no note" bash -c "! grep -q overrides '$TMP/tfs_ps.err'"

# IPv6: 1 ps + 2 async workers on [::1], started by hand as TensorFlow tasks are; the ps
# reports the final global step in its line, and the chief's line carries the same.
if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; then
    read -r P6 W6a W6b < <(free_ports 3 ::1)
    # an array: unquoted, "[::1]" is a glob pattern
    H6=("--ps_hosts=[::1]:$P6" "--worker_hosts=[::1]:$W6a,[::1]:$W6b" --mode async)
    $DOWNPOUR task --job_name=ps --task_index=0 "${H6[@]}" --steps 40 $SYN >"$TMP/v6ps.json" 2>"$TMP/v6ps.err" &
    V6PS=$!
    $DOWNPOUR task --job_name=worker --task_index=1 "${H6[@]}" --steps 40 $SYN >"$TMP/v6w1.json" 2>/dev/null &
    V6W1=$!
    $DOWNPOUR task --job_name=worker --task_index=0 "${H6[@]}" --steps 40 $SYN >"$TMP/v6w0.json" 2>"$TMP/v6w0.err"
    v6rc=$?
    wait $V6W1; v6w1rc=$?
    wait $V6PS; v6psrc=$?
    check "IPv6 [::1]: ps, chief and worker 1 exit 0 ($v6psrc $v6rc $v6w1rc)" test "$v6psrc$v6rc$v6w1rc" = 000
    check "IPv6 [::1]: the ps log names [::1]:$P6" grep -qF "on [::1]:$P6 (async" "$TMP/v6ps.err"
    gs6=$(json "$TMP/v6ps.json" global_step)
    check "IPv6 [::1]: trains to step 40 (ps global_step ${gs6:-none})" fcmp "${gs6:-0}" '>=' 40
    check "the ps's final global_step ($gs6) is the chief's ($(json "$TMP/v6w0.json" global_step))" \
        test "$gs6" = "$(json "$TMP/v6w0.json" global_step)"
else
    skip "IPv6 [::1] run: this machine has no IPv6 loopback"
fi

# Async: the summary's global_step is the ps's final step — what the trace shows — not
# the chief's last read; a slow worker 3 pushes after the others have finished.
$DOWNPOUR cluster --ps 1 --workers 4 --mode async --steps 30 --straggler worker:3x4 $SYN \
    --trace "$TMP/agsum.dptrace" >"$TMP/agsum.json" 2>/dev/null
$DOWNPOUR trace info --json "$TMP/agsum.dptrace" >"$TMP/agsum.info"
check "async summary global_step ($(json "$TMP/agsum.json" global_step)) = the trace's ($(json "$TMP/agsum.info" global_step))" \
    test "$(json "$TMP/agsum.json" global_step)" = "$(json "$TMP/agsum.info" global_step)"

# No ps at all: the worker gives up after --connect-timeout with a clear error.
$DOWNPOUR task --job_name=worker --task_index=0 $HOSTS --connect-timeout 1 $SYN >/dev/null 2>"$TMP/to.err"
check "worker without ps exits non-zero" test $? -ne 0
check "timeout message names the ps" grep -q "/job:ps/replica:0/task:0 at 127.0.0.1:$P1 did not answer within 1 s" "$TMP/to.err"

# A task that dies: the launcher names it and exits non-zero. The test kills only the
# worker its own launcher started (found among the launcher's children by PID).
$DOWNPOUR cluster --ps 1 --workers 2 --steps 100000 $SYN --seed 4242 >/dev/null 2>"$TMP/die.err" &
CL=$!
W1PID=""
for _ in $(seq 100); do W1PID=$(child_pid $CL 'task --job_name=worker --task_index=1 ') && break; sleep 0.1; done
TASKS=$(children $CL)
sleep 1
# Each task shares one of the pipes its launcher made (those this shell does not hold)
# with it, its own stdout: the read ends of the tasks started before it stay in the
# launcher (close-on-exec), or a task would hold them open.
pipes_of() { readlink /proc/$1/fd/* 2>/dev/null | grep '^pipe:' | sort -u; }
made=$(comm -23 <(pipes_of $CL) <(pipes_of $$))
shared="" odd=""
for t in $TASKS; do
    n=$(comm -12 <(echo "$made") <(pipes_of $t) | wc -l)
    shared="$shared $n"
    [ "$n" -eq 1 ] || odd="$odd $t"
done
check "each of the $(echo $TASKS | wc -w) tasks shares one pipe with the launcher, its stdout (shared:$shared)" \
    test -n "$TASKS" -a -z "$odd"
[ -n "$W1PID" ] && kill -9 "$W1PID"
wait $CL; rc=$?
check "the launcher started worker 1 (pid ${W1PID:-none})" test -n "$W1PID"
check "cluster exits non-zero when a worker dies" test $rc -ne 0
if grep -q "task /job:worker/replica:0/task:1 died: killed by signal 9" "$TMP/die.err"; then
    ok "launcher names the dead task"
else
    bad "launcher names the dead task"; cat "$TMP/die.err"
fi
check "no task is left running (of $(echo $TASKS | wc -w) started)" \
    test -z "$(alive_matching $TASKS -- 'task --job_name')"

# Ctrl-C: forwarded, every child reaped.
$DOWNPOUR cluster --ps 1 --workers 2 --steps 100000 $SYN --seed 4343 >/dev/null 2>"$TMP/int.err" &
CPID=$!
sleep 1.5
TASKS=$(children $CPID)
kill -INT $CPID
wait $CPID; rc=$?
sleep 0.3
check "Ctrl-C stops the cluster (exit 130)" test $rc -eq 130
check "Ctrl-C leaves no task running (of $(echo $TASKS | wc -w) started)" \
    test -n "$TASKS" -a -z "$(alive_matching $TASKS -- 'task --job_name')"

# The ps's listening sockets: the launcher makes them and hands each to its ps; it keeps
# its own copy only of a ps that a --fail restarts (workers that reconnect meanwhile wait
# in its backlog), and closes the others' once they are handed over.
$DOWNPOUR cluster --ps 2 --workers 1 --steps 100000 $SYN --pace 10ms --fail 'ps:1@step=99999,restart=1s' \
    >/dev/null 2>"$TMP/lfd.err" &
CPID=$!
for _ in $(seq 300); do   # up to 15 s: three processes start on a loaded machine
    P0=$(child_pid $CPID "task --job_name=ps --task_index=0") && P1=$(child_pid $CPID "task --job_name=ps --task_index=1") &&
        child_pid $CPID "task --job_name=worker" >/dev/null && break
    sleep 0.05
done
S0=$(readlink "/proc/$P0/fd/3" 2>/dev/null); S1=$(readlink "/proc/$P1/fd/3" 2>/dev/null)
for _ in $(seq 100); do   # the launcher's descriptors, once it no longer holds ps 0's (5 s at most)
    LFDS=$(for f in /proc/$CPID/fd/*; do readlink "$f"; done 2>/dev/null)
    [ -n "$S0" ] && ! grep -qxF "$S0" <<<"$LFDS" && break
    sleep 0.05
done
check "each ps listens on the socket the launcher made (${S0:-none}, ${S1:-none})" \
    bash -c "[[ '$S0' == socket:* && '$S1' == socket:* ]]"
check "the launcher closed its copy of ps 0's socket (no restart asked)" \
    bash -c "[ -n '$S0' ] && ! grep -qxF '$S0' <<<'$LFDS'"
check "... and keeps ps 1's, which a --fail restarts" bash -c "[ -n '$S1' ] && grep -qxF '$S1' <<<'$LFDS'"
kill -INT $CPID
wait $CPID

# Checkpoints: write at step 40, resume to 80.
$DOWNPOUR cluster --ps 1 --workers 2 --steps 40 $SYN --checkpoint-dir "$TMP/ck" >/dev/null 2>&1
check "checkpoint index written" grep -q 'model_checkpoint_path: "model.ckpt-40"' "$TMP/ck/checkpoint"
$DOWNPOUR cluster --ps 1 --workers 2 --steps 80 $SYN --checkpoint-dir "$TMP/ck" >"$TMP/ck2.json" 2>"$TMP/ck2.err"
check "second run restores from step 40" grep -q "restored .*model.ckpt-40 (global step 40)" "$TMP/ck2.err"
check "resumed run ends at 80" test "$(json "$TMP/ck2.json" global_step)" -eq 80
printf 'garbage' > "$TMP/ck/model.ckpt-80"
$DOWNPOUR cluster --ps 1 --workers 2 --steps 90 $SYN --checkpoint-dir "$TMP/ck" >/dev/null 2>"$TMP/ck3.err"
check "damaged checkpoint is refused with its name" grep -q "model.ckpt-80: size 7 is not a checkpoint" "$TMP/ck3.err"

# Command-line errors: one line naming the flag.
expect_err() { # expect_err "substring" args...
    local want=$1; shift
    $DOWNPOUR "$@" >/dev/null 2>"$TMP/e.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$want" "$TMP/e.err" && [ "$(wc -l <"$TMP/e.err")" -eq 1 ]; then
        ok "error: $want"; else bad "error: $want (rc $rc: $(cat "$TMP/e.err"))"; fi
}
expect_err '--mode: "fast" is not one of sync, async or ssp' cluster --mode fast
expect_err '--lr: "abc" is not a number' cluster --lr abc
expect_err '--workers: 0 is outside 1..65536' cluster --workers 0
expect_err '--backup-workers: 2 leaves no replica to aggregate with 2 workers' cluster --backup-workers 2
expect_err 'unknown flag "--bogus"' cluster --bogus 1
# numbers are decimal (strtod took "0x10" as 16); a bare unknown flag is unknown, a bare
# flag of the command's own misses its value
expect_err '--lr: "0x10" is not a number' cluster --lr 0x10
expect_err '--lr: "inf" is not a number' cluster --lr inf
expect_err 'unknown flag "--bogus" (see --help)' cluster --bogus
expect_err 'unknown flag "--bogus" (see --help)' cluster --bogus --steps 3
expect_err '--job_name: missing value' task --job_name
expect_err '--ps_hosts: entry 0 "nope": missing' task --job_name=ps --task_index=0 --ps_hosts=nope --worker_hosts=a:1
expect_err '--task_index 3 is outside the 1 worker tasks' task --job_name=worker --task_index=3 --ps_hosts=a:1 --worker_hosts=b:2
expect_err '--optimizer: "adam" is not one of sgd, momentum or adagrad' cluster --optimizer adam
expect_err 'a sync worker may read the parameters only once the step token lets it start' cluster --mode sync --prefetch
expect_err 'a ssp worker may read the parameters only once the staleness gate lets it start' cluster --mode ssp --prefetch
for c in cluster task checkpoint; do
    $DOWNPOUR $c --help >"$TMP/h.out" 2>&1
    check "downpour $c --help" grep -q "usage: downpour $c" "$TMP/h.out"
done

done_tests
