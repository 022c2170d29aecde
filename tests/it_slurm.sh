#!/usr/bin/env bash
# it_slurm.sh — `downpour task` under a real Slurm: a one-node cluster of this machine
# (munged, slurmctld, slurmd, all private to this test: own key, socket, ports, spool,
# started here and stopped by PID), then `srun -n 3 -O downpour task --cluster-resolver
# slurm --jobs ps:1,worker:2` trains to the end with the summary and parameters of
# `downpour cluster` with the same seed; --print-cluster and the resolver's errors under
# srun; the example job script scripts/slurm/train.sbatch through sbatch (hub, trace,
# DOWNPOUR_HUB). First, without daemons: the CLI's side of the resolver (a fake scontrol
# through DOWNPOUR_SCONTROL, a missing one, DOWNPOUR_HUB). Skipped, saying why, only
# where the daemons cannot start; CI does not accept that skip (tests/ci-allowed-skips).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet --steps 200 --seed 11 --eval-every 0"

# ---- the CLI, no daemons ---------------------------------------------------------------
printf '#!/bin/sh\n[ "$1 $2 $3" = "show hostnames n[1-2]" ] || exit 4\necho n1; echo n2\n' >"$TMP/fake-scontrol"
chmod +x "$TMP/fake-scontrol"
SL_ENV="SLURM_PROCID=3 SLURM_LOCALID=1 SLURMD_NODENAME=n2 SLURM_STEP_NODELIST=n[1-2] SLURM_STEP_TASKS_PER_NODE=2(x2) SLURM_STEP_NUM_TASKS=4"
out=$(env $SL_ENV DOWNPOUR_SCONTROL="$TMP/fake-scontrol" "$DOWNPOUR" task --jobs ps:1,worker:3 --port-base 9000 \
      --print-cluster 2>"$TMP/pc.err")
check "auto picks slurm; rank 3 of 2(x2) prints its cluster (${out:-nothing}: $(head -c 200 "$TMP/pc.err"))" test \
    "$out" = '{"cluster":{"ps":["n1:9000"],"worker":["n1:9001","n2:9000","n2:9001"]},"task":{"type":"worker","index":2}}'
check "the task says where it landed" grep -qxF \
    "downpour: task: slurm: rank 3 of 4 (--jobs ps:1,worker:3) is /job:worker/replica:0/task:2 at n2:9001" "$TMP/pc.err"
# what --print-cluster prints is a TF_CONFIG: it resolves to the same cluster and task
back=$(TF_CONFIG="$out" "$DOWNPOUR" task --print-cluster 2>/dev/null)
check "--print-cluster's output is a TF_CONFIG that reads back the same" test "$back" = "$out"
# scontrol's lines as a wrapper script or another platform might print them: blanks around
# the names, CRLF ends, empty lines; each name is read trimmed, the empty lines skipped
printf '#!/bin/sh\nprintf "  n1 \\r\\n\\n\\tn2\\t\\r\\n\\n"\n' >"$TMP/padded-scontrol"
chmod +x "$TMP/padded-scontrol"
padded=$(env $SL_ENV DOWNPOUR_SCONTROL="$TMP/padded-scontrol" "$DOWNPOUR" task --jobs ps:1,worker:3 --port-base 9000 \
         --print-cluster 2>/dev/null)
check "scontrol's lines are read trimmed, empty ones skipped (${padded:-nothing})" test "$padded" = "$out"
env $SL_ENV DOWNPOUR_SCONTROL="$TMP/no-such-scontrol" "$DOWNPOUR" task --jobs ps:1,worker:3 --print-cluster \
    >/dev/null 2>"$TMP/miss.err"
rc=$?
check "a missing scontrol: exit 2 and one line naming it (rc $rc: $(cat "$TMP/miss.err"))" \
    bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/miss.err') -eq 1 ] && grep -qF 'SLURM_STEP_NODELIST=n[1-2]: $TMP/no-such-scontrol: not found' '$TMP/miss.err'"
env $SL_ENV DOWNPOUR_SCONTROL="$TMP/fake-scontrol" "$DOWNPOUR" task --jobs ps:1,worker:2 --print-cluster \
    >/dev/null 2>"$TMP/out.err"
check "rank 3 outside --jobs ps:1,worker:2: exit 2 ($(cat "$TMP/out.err"))" grep -qxF \
    "downpour: task: SLURM_PROCID=3: rank 3 is outside --jobs ps:1,worker:2 (3 tasks)" "$TMP/out.err"
"$DOWNPOUR" task --cluster-resolver slurm --print-cluster >/dev/null 2>"$TMP/nos.err"
check "--cluster-resolver slurm outside Slurm says so" grep -qF "SLURM_PROCID is not set" "$TMP/nos.err"
# DOWNPOUR_HUB is --hub's default: an unreachable hub is said by address, training goes on
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
W=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$DOWNPOUR" hub --listen "127.0.0.1:$HP" --trace "$TMP/envhub.dptrace" --quiet >"$TMP/envhub.out" 2>&1 &
EHUB=$!
for _ in $(seq 50); do grep -q "hub listening" "$TMP/envhub.out" 2>/dev/null && break; sleep 0.1; done
H1="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W --steps 20 --data synthetic --model softmax --quiet"
DOWNPOUR_HUB=127.0.0.1:$HP "$DOWNPOUR" task --job_name=ps --task_index=0 $H1 >/dev/null 2>&1 &
EPS=$!
DOWNPOUR_HUB=127.0.0.1:$HP "$DOWNPOUR" task --job_name=worker --task_index=0 $H1 >"$TMP/envw.json" 2>/dev/null
wait $EPS
kill -TERM $EHUB 2>/dev/null; wait $EHUB 2>/dev/null
ev=$("$DOWNPOUR" trace info --json "$TMP/envhub.dptrace" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("events", 0))' 2>/dev/null)
check "tasks given only DOWNPOUR_HUB stream to that hub (${ev:-no} events recorded)" test "${ev:-0}" -gt 0

# ---- a real one-node Slurm ----------------------------------------------------------------
# cannot_start WHY: the one skip of this file; the rest needs the daemons.
cannot_start() { skip "slurm daemons cannot start: $*"; done_tests; exit $?; }
for p in munged mungekey slurmctld slurmd srun sbatch sinfo scontrol; do
    command -v $p >/dev/null 2>&1 || cannot_start "$p not installed (Debian's slurm-wlm and munge: scripts/deps.sh)"
done
[ "$(id -u)" -eq 0 ] || cannot_start "not root (slurmd runs every task as its user; CI runs as root)"
S=$TMP/slurm
mkdir -p "$S/spool" "$S/state" && chmod 755 "$TMP" "$S"
NODE=$(hostname -s)
getent hosts "$NODE" >/dev/null || cannot_start "this machine's name $NODE does not resolve"
# three consecutive free ports for the tasks: port base + local rank 0..2
free_base() { python3 - <<'PY'
import random, socket
for _ in range(200):
    b = random.randrange(20000, 60000)
    try:
        ss = [socket.socket() for _ in range(3)]
        for i, s in enumerate(ss): s.bind(("", b + i))
        print(b); break
    except OSError:
        pass
    finally:
        for s in ss: s.close()
PY
}
# Stops this test's Slurm: its jobs first (only this controller's: SLURM_CONF is ours),
# then the daemons started so far, by PID, once (a PID reaped may be reused). Also on an
# early exit, before lib.sh's cleanup.
MUNGED=""; CTLD=""; SLURMD=""
stop_daemons() {
    [ -n "${STOPPED:-}" ] && return 0
    STOPPED=1
    [ -n "$CTLD" ] && squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null
    local p
    for p in $SLURMD $CTLD $MUNGED; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    return 0
}
trap 'stop_daemons; rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
mungekey -c -k "$S/munge.key" >/dev/null 2>&1 && chmod 600 "$S/munge.key" ||
    cannot_start "mungekey -c failed"
munged -F -f --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
    --log-file="$S/munged.log" --seed-file="$S/munged.seed" >"$S/munged.out" 2>&1 &
MUNGED=$!
for _ in $(seq 50); do [ -S "$S/munge.sock" ] && break; sleep 0.1; done
[ -S "$S/munge.sock" ] || cannot_start "munged did not come up: $(tail -n 2 "$S/munged.out" | tr '\n' ' ')"
read -r CTLD_PORT SLURMD_PORT < <(free_ports 2 0.0.0.0)
cat >"$S/slurm.conf" <<EOF
ClusterName=downpour-test
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
PlugStackConfig=/dev/null
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName=$NODE CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
# the test's own Slurm environment only: none of a surrounding job's
unset $(env | grep -oE '^SLURM_[A-Z_]+' | grep -v '^SLURM_CONF$') 2>/dev/null
slurmctld -D -f "$SLURM_CONF" >"$S/ctld.out" 2>&1 &
CTLD=$!
slurmd -D -f "$SLURM_CONF" >"$S/slurmd.out" 2>&1 &
SLURMD=$!
up=""
for _ in $(seq 100); do
    sinfo -h -o %T 2>/dev/null | grep -q idle && { up=1; break; }
    kill -0 $CTLD 2>/dev/null && kill -0 $SLURMD 2>/dev/null || break
    sleep 0.2
done
if [ -z "$up" ]; then
    why="$(tail -q -n 1 "$S/ctld.out" "$S/slurmd.out" "$S/slurmctld.log" "$S/slurmd.log" 2>/dev/null | grep -v '^$' | tail -n 3 | tr '\n' ' ')"
    stop_daemons
    cannot_start "the node did not become idle in 20 s: $why"
fi
ok "munged, slurmctld and slurmd up: node $NODE idle ($(sinfo -h -o '%P %D %C'))"
run_srun() { timeout -k 5 60 srun "$@"; }

# --print-cluster under srun, auto resolver: every rank its own task of one cluster
PB=$(free_base)
run_srun -n 3 -O -o "$TMP/pc-%t.json" -e "$TMP/pc-%t.err" "$DOWNPOUR" task --jobs ps:1,worker:2 --port-base "$PB" \
    --print-cluster
rc=$?
C="\"cluster\":{\"ps\":[\"$NODE:$PB\"],\"worker\":[\"$NODE:$((PB + 1))\",\"$NODE:$((PB + 2))\"]}"
want0="{$C,\"task\":{\"type\":\"ps\",\"index\":0}}"
want2="{$C,\"task\":{\"type\":\"worker\",\"index\":1}}"
check "srun -n 3 -O task --print-cluster exits 0 (rc $rc)" test $rc -eq 0
check "rank 0 is ps 0 at $NODE:$PB ($(cat "$TMP/pc-0.json" 2>/dev/null))" test "$(cat "$TMP/pc-0.json" 2>/dev/null)" = "$want0"
check "rank 2 is worker 1 at $NODE:$((PB + 2)) ($(cat "$TMP/pc-2.json" 2>/dev/null))" test "$(cat "$TMP/pc-2.json" 2>/dev/null)" = "$want2"
# one task more than --jobs asks: no task starts training, the extra rank says why
run_srun -n 4 -O -o "$TMP/pc4-%t.out" -e "$TMP/pc4-%t.err" "$DOWNPOUR" task --cluster-resolver slurm \
    --jobs ps:1,worker:2 --print-cluster
rc=$?
check "srun -n 4 with --jobs ps:1,worker:2 fails (rc $rc)" test $rc -ne 0
check "rank 3 says it is outside the jobs ($(cat "$TMP/pc4-3.err" 2>/dev/null))" grep -qxF \
    "downpour: task: SLURM_PROCID=3: rank 3 is outside --jobs ps:1,worker:2 (3 tasks)" "$TMP/pc4-3.err"
check "rank 0 says there are too many tasks" grep -qF "too many tasks: SLURM_STEP_TASKS_PER_NODE=4 gives 4" "$TMP/pc4-0.err"
run_srun -n 2 -O -o /dev/null -e "$TMP/pc2-%t.err" "$DOWNPOUR" task --jobs ps:1,worker:2 --print-cluster
check "srun -n 2 with --jobs ps:1,worker:2: too few tasks" grep -qF \
    "too few tasks: --jobs ps:1,worker:2 needs 3, SLURM_STEP_TASKS_PER_NODE=2 gives 2 (srun -n 3)" "$TMP/pc2-0.err"

# Training under srun: the same run as `downpour cluster --ps 1 --workers 2`, same seed.
PB=$(free_base)
t0=$(date +%s.%N)
run_srun -n 3 -O --kill-on-bad-exit=1 -o "$TMP/task-%t.out" -e "$TMP/task-%t.err" \
    "$DOWNPOUR" task --cluster-resolver slurm --jobs ps:1,worker:2 --port-base "$PB" $SYN --checkpoint-dir "$TMP/ck-slurm"
rc=$?
secs=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
check "srun -n 3 -O task --cluster-resolver slurm trains to the end (rc $rc, $secs s)" test $rc -eq 0
for r in 0 1 2; do
    j=$([ $r -eq 0 ] && echo "ps/replica:0/task:0" || echo "worker/replica:0/task:$((r - 1))")
    check "rank $r resolved itself as /job:$j" grep -qF "slurm: rank $r of 3 (--jobs ps:1,worker:2) is /job:$j at $NODE:$((PB + r))" "$TMP/task-$r.err"
done
"$DOWNPOUR" cluster --ps 1 --workers 2 $SYN --checkpoint-dir "$TMP/ck-cluster" >"$TMP/cluster.json" 2>"$TMP/cluster.err"
check "downpour cluster with the same flags exits 0" test $? -eq 0
# The summary `downpour cluster` builds from its tasks' lines (runtime/launcher.c's
# print_summary), built here from the Slurm tasks' lines, field by field.
cmp_out=$(python3 - "$TMP/cluster.json" "$TMP"/task-0.out "$TMP"/task-1.out "$TMP"/task-2.out <<'PY'
import json, sys
def last(p):
    return json.loads([l for l in open(p) if l.startswith('{')][-1])
cl = last(sys.argv[1])
ps, w0, w1 = (last(p) for p in sys.argv[2:])
mine = {
    'global_step': max(w0['global_step'], ps['global_step']),
    'final_loss': (w0['final_loss'] + w1['final_loss']) / 2,
    'test_accuracy': w0['test_accuracy'],
    'dropped_gradients': ps['drops'],
    'mean_staleness': ps['stale_sum'] / ps['stale_n'] if ps['stale_n'] else 0,
    'max_staleness': ps['stale_max'],
    'min_variable_step': ps['var_step_min'],
    'bytes_pushed': w0['bytes_pushed'] + w1['bytes_pushed'],
}
bad = [f"{k}: slurm {v} vs cluster {cl.get(k)}" for k, v in mine.items()
       if cl.get(k) is None or abs(float(v) - float(cl[k])) > 1e-5 * max(1.0, abs(float(v)))]
print('same' if not bad else '; '.join(bad), '|', ', '.join(f'{k}={cl[k]}' for k in ('global_step', 'final_loss', 'test_accuracy')))
PY
)
check "the Slurm run's summary is downpour cluster's ($cmp_out)" test "${cmp_out%% *}" = same
check "... and so are its final parameters (checkpoint diff --tol 0)" \
    "$DOWNPOUR" checkpoint diff "$TMP/ck-slurm" "$TMP/ck-cluster" --tol 0
# the comparison can fail: another seed gives another summary
"$DOWNPOUR" cluster --ps 1 --workers 2 ${SYN/--seed 11/--seed 12} >"$TMP/cluster12.json" 2>/dev/null
check "another seed gives another final loss (the comparison can fail)" \
    test "$(json "$TMP/cluster12.json" final_loss)" != "$(json "$TMP/cluster.json" final_loss)"

# The example job script, through sbatch: hub on the first node, trace in the shared
# directory, tasks reaching the hub through DOWNPOUR_HUB, the secret from a file.
mkdir -p "$TMP/shared" "$TMP/home"
HPORT=$(free_ports 1 0.0.0.0); PB=$(free_base)
# -N 1 -n 3 -O replace the script's 2 nodes and 4 tasks: this is one 2-CPU node.
timeout -k 5 60 sbatch --wait -N 1 -n 3 -O -o "$TMP/sbatch.out" -D "$TMP" \
    --export=ALL,HOME="$TMP/home",DOWNPOUR="$DOWNPOUR",DOWNPOUR_SHARED="$TMP/shared",DOWNPOUR_HUB_PORT=$HPORT,DOWNPOUR_PORT_BASE=$PB,DOWNPOUR_TRAIN_FLAGS="--data synthetic --model mlp --hidden 32 --steps 100 --eval-every 0" \
    scripts/slurm/train.sbatch >"$TMP/sbatch.id" 2>&1
rc=$?
jobid=$(grep -oE '[0-9]+' "$TMP/sbatch.id" | head -n 1)
run="$TMP/shared/$jobid"
check "sbatch scripts/slurm/train.sbatch -N 1 -n 3 -O: exits 0 (rc $rc$([ $rc -ne 0 ] && tail -n 3 "$TMP/sbatch.out" 2>/dev/null | tr '\n' ' '))" test $rc -eq 0
check "the chief trained to step 100 ($(tail -n 1 "$run/task-1.out" 2>/dev/null | head -c 120))" \
    test "$(json "$run/task-1.out" global_step 2>/dev/null)" = 100
check "the secret file was made private (mode $(stat -c %a "$TMP/home/.downpour/secret" 2>/dev/null))" \
    test "$(stat -c %a "$TMP/home/.downpour/secret" 2>/dev/null)" = 600
ev=$("$DOWNPOUR" trace info --json "$run/run.dptrace" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("events", 0))' 2>/dev/null)
check "the hub on the first node recorded the run to the shared directory (${ev:-no} events)" test "${ev:-0}" -gt 0
check "the job's output says how to watch from a laptop" grep -qF "ssh -N -L $HPORT:$NODE:$HPORT" "$TMP/sbatch.out"
check "... and gives the hub's read-only viewer token" grep -qE "TOKEN, read-only .*: [0-9a-f]{32}" "$TMP/sbatch.out"
# DOWNPOUR_CHECK=1: the job script's check prints each task's cluster and trains nothing
timeout -k 5 60 sbatch --wait -N 1 -n 3 -O -o "$TMP/check.out" -D "$TMP" \
    --export=ALL,HOME="$TMP/home",DOWNPOUR="$DOWNPOUR",DOWNPOUR_SHARED="$TMP/shared",DOWNPOUR_CHECK=1,DOWNPOUR_PORT_BASE=$PB \
    scripts/slurm/train.sbatch >/dev/null 2>&1
rc=$?
n=$(grep -c '^{"cluster":{"ps":\["'"$NODE:$PB"'"\],"worker":\["'"$NODE:$((PB + 1))"'","'"$NODE:$((PB + 2))"'"\]}' "$TMP/check.out" 2>/dev/null)
check "sbatch with DOWNPOUR_CHECK=1 prints the cluster of its 3 tasks (rc $rc, ${n:-0} lines)" test "$rc/${n:-0}" = 0/3

# Stopped by PID, and gone.
stop_daemons
left=$(alive_matching $MUNGED $CTLD $SLURMD -- 'munged|slurmctld|slurmd')
check "munged, slurmctld and slurmd stopped (left: ${left:-none})" test -z "$left"
done_tests
