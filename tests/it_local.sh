#!/usr/bin/env bash
# it_local.sh — `downpour local` end to end on virtual CPU devices: bad flag values get a
# one-line error naming the flag; the placement log of a fixed model is TensorFlow's,
# line by line, for `local` and for every worker of a cluster; the hard-placement error
# and the soft fallback; the summary line; a towers trace with compute on every device;
# its render (and a split one's) shows one box per device, counted from the pixels.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
L="$DOWNPOUR local --data synthetic --synthetic-samples 500 --quiet"

# bad flag values: one line, naming the flag, exit 2
bad_flag() { # bad_flag FLAG-TEXT... -- EXPECTED
    local args=() want
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    want=$2
    $L "${args[@]}" >/dev/null 2>"$TMP/e.err"
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/e.err")" -eq 1 ] && grep -qF -- "$want" "$TMP/e.err"; then
        ok "local ${args[*]}: one line naming the flag"
    else
        bad "local ${args[*]}: rc $rc, got: $(cat "$TMP/e.err")"
    fi
}
bad_flag --strategy bogus -- '--strategy: "bogus" is not one of single, towers or split'
bad_flag --cpu-devices 0 -- '--cpu-devices: 0 is outside 1..64'
bad_flag --device-for 'hidden' -- '--device-for: "hidden" is not PATTERN=DEVICE'
bad_flag --device-for 'x=/tpu:0' -- '--device-for: "/tpu:0" is not a device'
bad_flag --ps 2 -- 'unknown flag "--ps"'
bad_flag --strategy towers --cpu-devices 4 --batch 2 -- '--batch: 2 is smaller than the 4 towers'
"$DOWNPOUR" cluster --worker-devices tpu:2 >/dev/null 2>"$TMP/e.err"
check "cluster --worker-devices tpu:2: one line naming the flag" grep -qF -- '--worker-devices: "tpu:2" is not cpu:N or gpu:N' "$TMP/e.err"

# the placement log of `local`, softmax model, one CPU device
D=/job:localhost/replica:0/task:0/device:CPU:0
cat >"$TMP/want.local" <<EOT
Device mapping: no known devices.
global_step: (VariableV2): $D
softmax/weights: (VariableV2): $D
softmax/biases: (VariableV2): $D
x: (Placeholder): $D
y: (Placeholder): $D
softmax/MatMul: (MatMul): $D
softmax/add: (Add): $D
loss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): $D
loss/Mean: (Mean): $D
gradients/loss/Mean_grad/truediv: (RealDiv): $D
gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul: (Mul): $D
gradients/softmax/add_grad/Sum_1: (Sum): $D
gradients/softmax/MatMul_grad/MatMul_1: (MatMul): $D
GradientDescent/update_softmax/weights/ApplyGradientDescent: (ApplyGradientDescent): $D
GradientDescent/update_softmax/biases/ApplyGradientDescent: (ApplyGradientDescent): $D
EOT
$L --model softmax --steps 3 --log-device-placement >"$TMP/local.json" 2>"$TMP/local.err"
check "local exits 0" test $? -eq 0
grep -v '^downpour:' "$TMP/local.err" >"$TMP/got.local"
if diff "$TMP/want.local" "$TMP/got.local" >"$TMP/d"; then ok "local's placement log is TensorFlow's, line by line"
else bad "local's placement log differs: $(head -5 "$TMP/d")"; fi
check "the summary says engine local" test "$(json "$TMP/local.json" engine)" = local
check "the summary says strategy single" test "$(json "$TMP/local.json" strategy)" = single
check "the summary counts the steps" test "$(json "$TMP/local.json" global_step)" = 3
# OpenBLAS falls back to its SSE3 kernel (Prescott) on CPU models it does not know; on a
# CPU with AVX2 (read from /proc/cpuinfo here, not by the code under test) downpour runs
# with a kernel that uses it (runtime/blas.c), and a user's OPENBLAS_CORETYPE stands
core=$(json "$TMP/local.json" blas_core)
if grep -qw avx2 /proc/cpuinfo; then
    check "OpenBLAS runs an AVX2 or AVX-512 kernel on this AVX2 CPU ($core)" \
        sh -c "case '$core' in Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Katmai|Coppermine|Northwood|Banias) exit 1;; esac"
else
    skip "the BLAS kernel: this CPU has no AVX2"
fi
OPENBLAS_CORETYPE=Prescott $L --steps 3 >"$TMP/pres.json" 2>/dev/null
check "a user's OPENBLAS_CORETYPE stands ($(json "$TMP/pres.json" blas_core))" \
    test "$(json "$TMP/pres.json" blas_core)" = Prescott
# A task runs BLAS on one thread: OpenBLAS is loaded for one (OPENBLAS_NUM_THREADS=1 from
# the launcher, or from downpour's own restart), so no idle BLAS thread spins beside it;
# a user's OPENBLAS_NUM_THREADS stands. Threads counted in /proc, our own children only,
# once the ps has its event loop (an epoll descriptor; the launcher's listening socket is
# there from the exec): its main has run, so OpenBLAS's start-up (which makes its threads
# while the program is loaded) is over. Counted as soon as the process showed
# its command line, a slow start (an ASan build) read 1 where OpenBLAS was about to make 2.
task_threads() { # task_threads ENV...: threads of the ps task of a long cluster run
    env "$@" "$DOWNPOUR" cluster --ps 1 --workers 1 --data synthetic --synthetic-samples 500 --steps 1000000 \
        --quiet --eval-every 0 >/dev/null 2>&1 &
    local lp=$! ps="" n=""
    for _ in $(seq 100); do
        ps=$(child_pid "$lp" "task --job_name=ps") &&
            [ -n "$(find "/proc/$ps/fd" -lname 'anon_inode:*eventpoll*' 2>/dev/null | head -1)" ] &&
            n=$(awk '/^Threads:/{print $2}' "/proc/$ps/status" 2>/dev/null)
        [ -n "$n" ] && break
        sleep 0.1
    done
    kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null
    echo "${n:-none}"
}
if [ "$(nproc)" -gt 1 ]; then
    n=$(task_threads -u OPENBLAS_NUM_THREADS)
    check "a cluster's task runs one thread, no BLAS thread beside it ($n)" test "$n" = 1
    n=$(task_threads OPENBLAS_NUM_THREADS=2)
    check "a user's OPENBLAS_NUM_THREADS stands: 2 gives the task a BLAS thread ($n)" test "$n" = 2
else
    skip "BLAS threads of a task: this machine has one core, OpenBLAS starts no thread"
fi

# every worker of a cluster logs its own ops on its own task
"$DOWNPOUR" cluster --ps 1 --workers 2 --model softmax --data synthetic --synthetic-samples 500 --steps 3 \
    --quiet --log-device-placement >"$TMP/cl.json" 2>"$TMP/cl.err"
check "cluster exits 0" test $? -eq 0
for w in 0 1; do
    W=/job:worker/replica:0/task:$w/device:CPU:0
    P=/job:ps/replica:0/task:0/device:CPU:0
    cat >"$TMP/want.w$w" <<EOT
Device mapping: no known devices.
global_step: (VariableV2): $P
softmax/weights: (VariableV2): $P
softmax/biases: (VariableV2): $P
x: (Placeholder): $W
y: (Placeholder): $W
softmax/MatMul: (MatMul): $W
softmax/add: (Add): $W
loss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): $W
loss/Mean: (Mean): $W
gradients/loss/Mean_grad/truediv: (RealDiv): $W
gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul: (Mul): $W
gradients/softmax/add_grad/Sum_1: (Sum): $W
gradients/softmax/MatMul_grad/MatMul_1: (MatMul): $W
EOT
    # worker w's block: from a "Device mapping" line to the line before the next one
    python3 - "$TMP/cl.err" "$w" >"$TMP/got.w$w" <<'PY'
import sys
blocks, cur = [], None
for line in open(sys.argv[1]):
    if line.startswith('Device mapping'):
        cur = [line]; blocks.append(cur)
    elif cur is not None and ': (' in line:
        cur.append(line)
    else:
        cur = None
w = sys.argv[2]
mine = [b for b in blocks if any('/job:worker/replica:0/task:%s/' % w in l for l in b)]
sys.stdout.write(''.join(mine[0]) if len(mine) == 1 else '(%d blocks)\n' % len(mine))
PY
    if diff "$TMP/want.w$w" "$TMP/got.w$w" >"$TMP/d"; then ok "worker $w logs its own ops on task:$w, line by line"
    else bad "worker $w's placement log differs: $(head -5 "$TMP/d")"; fi
done

# a cluster worker with two CPU devices runs two towers
"$DOWNPOUR" cluster --ps 1 --workers 2 --model softmax --data synthetic --synthetic-samples 500 --steps 3 \
    --quiet --worker-devices cpu:2 --log-device-placement >"$TMP/cl2.json" 2>"$TMP/cl2.err"
check "cluster --worker-devices cpu:2 exits 0" test $? -eq 0
check "worker 1's tower_1 computes on its CPU:1" \
    grep -qxF "tower_1/softmax/MatMul: (MatMul): /job:worker/replica:0/task:1/device:CPU:1" "$TMP/cl2.err"
check "worker 1 averages its towers on its CPU:0" \
    grep -qxF "average_gradients/softmax/weights/Mean: (Mean): /job:worker/replica:0/task:1/device:CPU:0" "$TMP/cl2.err"

# hard placement error, soft fallback
$L --steps 2 --device-for 'hidden/*=/gpu:2' >/dev/null 2>"$TMP/e.err"
check "a device that does not exist: exit 2" test $? -eq 2
check "... with TensorFlow's message" grep -qF "downpour: local: Cannot assign a device for operation 'hidden/MatMul': Could not satisfy explicit device specification '/device:GPU:2' because no devices matching that specification are registered in this process; available devices: $D" "$TMP/e.err"
$L --steps 2 --device-for 'hidden/*=/gpu:2' --allow-soft-placement --log-device-placement >/dev/null 2>"$TMP/soft.err"
check "--allow-soft-placement runs" test $? -eq 0
check "... and the log says where the op went" grep -qxF "hidden/MatMul: (MatMul): $D" "$TMP/soft.err"
# a rule whose pattern names nothing: one warning, and the run goes on
$L --steps 2 --device-for 'hiden/*=/cpu:0' >/dev/null 2>"$TMP/unused.err"
rc=$?
check "a --device-for rule that matches nothing: warned once, the run goes on (rc $rc, $(grep -c 'matches no op' "$TMP/unused.err") warnings)" \
    bash -c "[ $rc -eq 0 ] && [ \$(grep -c 'matches no op' '$TMP/unused.err') -eq 1 ] && grep -qF \"downpour: /job:localhost/replica:0/task:0: --device-for 'hiden/*=/cpu:0' matches no op or variable here, so it places nothing (names are like 'hidden/MatMul'\" '$TMP/unused.err'"
$L --steps 2 --device-for 'hidden/*=/cpu:0' >/dev/null 2>"$TMP/used.err"
check "... and none for one that matches" bash -c "! grep -q 'matches no op' '$TMP/used.err'"
# flags the run will not read: a warning each, and the run goes on
"$DOWNPOUR" cluster --ps 1 --workers 1 --data synthetic --synthetic-samples 500 --steps 2 --quiet --mode async \
    --model softmax --staleness 5 --barrier-timeout 5s --hidden 64 >/dev/null 2>"$TMP/unread.err"
rc=$?
check "cluster, async softmax: --staleness, --barrier-timeout and --hidden each warned as unread, the run goes on (rc $rc)" \
    bash -c "[ $rc -eq 0 ] && grep -qx 'downpour: cluster: --staleness 5: only --mode ssp reads it; this async run does not' '$TMP/unread.err' &&
             grep -qx 'downpour: cluster: --barrier-timeout: only --mode sync waits at a barrier; this async run does not' '$TMP/unread.err' &&
             grep -qx 'downpour: cluster: --hidden 64: only --model mlp has a hidden layer' '$TMP/unread.err'"
FASHION=/usr/share/datasets/fashion-mnist   # Debian's dataset-fashion-mnist (make deps)
$L --steps 2 --synthetic-samples 600 --data "$FASHION" >/dev/null 2>"$TMP/unread2.err"
check "local on Fashion-MNIST: --synthetic-samples warned as unread" \
    grep -qx "downpour: local: --synthetic-samples 600: only --data synthetic reads it; this run trains on $FASHION" "$TMP/unread2.err"
"$DOWNPOUR" cluster --ps 1 --workers 1 --data synthetic --synthetic-samples 500 --steps 2 --quiet --mode ssp \
    --staleness 5 --hidden 64 >/dev/null 2>"$TMP/read.err"
check "... and none when the run reads them (ssp, mlp, synthetic)" bash -c "! grep -q 'only --' '$TMP/read.err'"
# a cluster's worker on its one device checks the rules as a tower would
"$DOWNPOUR" cluster --ps 1 --workers 1 --data synthetic --synthetic-samples 500 --steps 2 --quiet \
    --device-for 'hidden/*=/gpu:3' >/dev/null 2>"$TMP/cl1.err"
rc=$?
check "cluster, one device a worker: a rule naming a device it lacks is TensorFlow's error, the run fails (rc $rc)" \
    bash -c "[ $rc -ne 0 ] && grep -qF \"downpour: /job:worker/replica:0/task:0: Cannot assign a device for operation 'hidden/MatMul': Could not satisfy explicit device specification '/device:GPU:3'\" '$TMP/cl1.err'"
"$DOWNPOUR" cluster --ps 1 --workers 1 --data synthetic --synthetic-samples 500 --steps 2 --quiet \
    --device-for 'hidden/*=/gpu:3' --allow-soft-placement >/dev/null 2>"$TMP/cl1s.err"
check "... with --allow-soft-placement it runs" test $? -eq 0
"$DOWNPOUR" cluster --ps 1 --workers 2 --data synthetic --synthetic-samples 500 --steps 2 --quiet \
    --worker-devices cpu:2 --device-for '*/softmax/MatMul=/cpu:1,hiden/*=/cpu:1' >/dev/null 2>"$TMP/cl2w.err"
check "... and towers warn, per worker, of a rule that matches nothing ($(grep -c 'matches no op' "$TMP/cl2w.err") warnings)" \
    bash -c "[ \$(grep -c \"'hiden/\\*=/cpu:1' matches no op\" '$TMP/cl2w.err') -eq 2 ] && [ \$(grep -c 'matches no op' '$TMP/cl2w.err') -eq 2 ] && grep -q \"names are like 'tower_0/hidden/MatMul'\" '$TMP/cl2w.err'"

# towers over 4 virtual CPU devices: a trace with compute on every device
$L --strategy towers --cpu-devices 4 --steps 5 --trace "$TMP/t.dptrace" >"$TMP/tw.json" 2>"$TMP/tw.err"
check "towers with a trace exits 0" test $? -eq 0
check "the summary says 4 towers, strategy towers" \
    test "$(json "$TMP/tw.json" towers):$(json "$TMP/tw.json" strategy)" = 4:towers
check "the trace validates" "$DOWNPOUR" trace validate "$TMP/t.dptrace"
check "... and its metadata says strategy towers on 4 CPU devices" python3 -c "
import json, subprocess, sys
m = json.loads(subprocess.run(['$DOWNPOUR', 'trace', 'info', '--json', '$TMP/t.dptrace'], capture_output=True).stdout)['metadata']
sys.exit(0 if (m.get('strategy'), m.get('cpu_devices')) == ('towers', 4) else 1)"
"$DOWNPOUR" trace export --chrome "$TMP/t.json" "$TMP/t.dptrace" 2>/dev/null
python3 - "$TMP/t.json" <<'PY' >"$TMP/c.out"
import json, sys
d = json.load(open(sys.argv[1])); ev = d['traceEvents'] if isinstance(d, dict) else d
procs = {e['pid']: e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'process_name'}
lanes = {procs.get(e['pid'], '') for e in ev if e.get('ph') == 'X' and e.get('name') == 'compute'}
print(len({l for l in lanes if '/job:localhost/replica:0/task:0/device:CPU:' in l}))
PY
check "compute shows on 4 devices in the Chrome export ($(cat "$TMP/c.out"))" test "$(cat "$TMP/c.out")" = 4
# the copies between devices: each of the 3 towers off CPU:0 takes the 4 variables in and
# sends their 4 gradients back, every step: 3 x 4 x 5 = 60 each way, each begun and ended
cnt=$("$DOWNPOUR" trace info --json "$TMP/t.dptrace" | python3 -c "import json, sys; c = json.load(sys.stdin)['counts']
print(*(c[k] for k in ('pull_begin', 'pull_end', 'push_begin', 'push_end')))")
check "towers: 60 copies of variables in and 60 of gradients out, each with its end ($cnt)" test "$cnt" = "60 60 60 60"
# every compute span ends, the gradients' averaging on CPU:0 too: one span a step
cb=$(trace_count "$TMP/t.dptrace" compute_begin) ce=$(trace_count "$TMP/t.dptrace" compute_end)
avg=$(python3 -c "import json, sys; d = json.load(open(sys.argv[1])); ev = d['traceEvents'] if isinstance(d, dict) else d
print(sum(1 for e in ev if e.get('ph') == 'X' and e.get('args', {}).get('var') == 'average_gradients'))" "$TMP/t.json")
check "towers: every compute span ends ($cb begun, $ce ended), the averaging one a step ($avg of 5)" \
    test "$cb" = "$ce" -a "$avg" = 5
# a scenario file may say engine = local
printf '[scenario]\ntitle = towers\nengine = local\n[training]\nsteps = 5\n[placement]\nstrategy = towers\ncpu_devices = 2\ndevice_for = tower_1/*=/cpu:0\n' >"$TMP/local.ini"
check "a scenario with engine = local checks" "$DOWNPOUR" run --check "$TMP/local.ini"
# ... and save checkpoints, in its output folder (each variant its own), as a cluster scenario does
printf '[scenario]\ntitle = ck\nengine = local\n[training]\nsteps = 4\ndata = synthetic\nsynthetic_samples = 500\n[faults]\nsave_checkpoint_steps = 2\n' >"$TMP/lck.ini"
"$DOWNPOUR" run "$TMP/lck.ini" --no-view --out "$TMP/lck" >/dev/null 2>&1
got=$(cd "$TMP/lck/checkpoints" 2>/dev/null && ls model.ckpt-* | tr '\n' ' ')
check "a local scenario with save_checkpoint_steps = 2 over 4 steps: its checkpoints/ folder holds 2 and 4 ($got)" \
    test "$got" = "model.ckpt-2 model.ckpt-4 "
printf '[scenario]\ntitle = t\nengine = local\n[placement]\nstrategy = sideways\n' >"$TMP/bad.ini"
"$DOWNPOUR" run --check "$TMP/bad.ini" >/dev/null 2>"$TMP/e.err"
check "a bad strategy in a file names the file and line" grep -q 'bad.ini:5.*strategy.*"sideways" is not one of single, towers or split' "$TMP/e.err"
# the viewer draws one machine: a box per device, counted from the rendered pixels (the
# render reports each box and its colour with DOWNPOUR_RENDER_LAYOUT=1; the pixels must agree)
machine_boxes() { # machine_boxes STRATEGY N: prints "boxes reported, boxes headed in their colour, colour runs"
    $L --strategy "$1" --cpu-devices "$2" --steps 6 --trace "$TMP/m$1.dptrace" >/dev/null 2>&1 || return 1
    DOWNPOUR_RENDER_LAYOUT=1 "$DOWNPOUR" render "$TMP/m$1.dptrace" --out "$TMP/m$1.png" --at-step 3 \
        >"$TMP/m$1.lay" 2>/dev/null || return 1
    python3 - "$TMP/m$1.png" "$TMP/m$1.lay" <<'PY'
import sys
sys.path.insert(0, 'tests')
from png_compare import load
w, h, rows = load(sys.argv[1])
px = lambda x, y: tuple(rows[y][3 * x:3 * x + 3])
boxes = [l.split() for l in open(sys.argv[2]) if l.startswith('device ')]
rgb = lambda s: tuple(int(s[i:i + 2], 16) for i in (1, 3, 5))
headed = 0
for _, name, rect, col in boxes:
    x, y, bw, bh = map(int, rect.split(','))
    n = sum(px(xx, yy) == rgb(col) for xx in range(x, x + bw) for yy in range(y, y + 20))
    headed += n >= bw * 5          # its header: the device's colour across the box, 5+ rows
# from the pixels alone: across the headers' row, runs of the devices' colours, left to right
cols, runs, prev = {rgb(b[3]) for b in boxes}, 0, None
y = int(boxes[0][2].split(',')[1]) + 6 if boxes else 0   # above the name's glyphs
for x in range(w):
    k = px(x, y) if px(x, y) in cols else None
    runs += k is not None and k != prev
    prev = k
print(len(boxes), headed, runs)
PY
}
out=$(machine_boxes towers 4)
check "render of a towers trace on 4 CPU devices: 4 device boxes, each headed in its colour ($out)" test "$out" = "4 4 4"
out=$(machine_boxes split 2)
check "render of a split trace on 2 CPU devices: 2 device boxes ($out)" test "$out" = "2 2 2"

# Every compute span names what runs: an op of the run's own placement log (the first of
# the run of ops on that device), average_gradients or the optimizer's apply scope.
for st in towers split; do
    $L --strategy $st --cpu-devices 2 --steps 5 --log-device-placement --trace "$TMP/op-$st.dptrace" \
        >/dev/null 2>"$TMP/op-$st.log"
    $DOWNPOUR trace export --chrome "$TMP/op-$st.json" "$TMP/op-$st.dptrace" 2>/dev/null
    msg=$(python3 - "$TMP/op-$st.json" "$TMP/op-$st.log" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
ops = {l.split(': (')[0] for l in open(sys.argv[2]) if ': (' in l} | {'average_gradients', 'GradientDescent'}
names = [e['args'].get('var') for e in ev if e.get('name') == 'compute']
bad = sorted({str(n) for n in names if n not in ops})
print('ok' if names and not bad else 'bad', len(names), 'spans', 'unnamed or unknown: ' + ', '.join(bad[:4]) if bad else '')
PY
)
    check "$st: every compute span names its op ($msg)" test "${msg%% *}" = ok
done

# A hub that dies mid-run (SIGKILL): the run's writes to it fail (EPIPE, not a SIGPIPE that
# would kill the task), and the run finishes its steps; the emitter says what the hub got.
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$DOWNPOUR" hub --listen 127.0.0.1:$PORT --trace "$TMP/hubdie.dptrace" --quiet >"$TMP/hubdie.log" 2>&1 &
HUBPID=$!
for _ in $(seq 50); do grep -q "hub listening" "$TMP/hubdie.log" && break; sleep 0.1; done
$L --steps 6000 --eval-every 0 --hub 127.0.0.1:$PORT >"$TMP/hubdie.json" 2>"$TMP/hubdie.err" &
LPID=$!
for _ in $(seq 100); do [ -s "$TMP/hubdie.dptrace" ] && break; sleep 0.05; done   # its first events in
sleep 0.3
kill -9 $HUBPID 2>/dev/null
wait $HUBPID 2>/dev/null
wait $LPID
rc=$?
em=$(grep -o '[0-9]* undelivered at exit' "$TMP/hubdie.err") gs=$(json "$TMP/hubdie.json" global_step)
check "a hub killed mid-run: the local run finishes its 6000 steps (rc $rc, global step $gs; $em)" \
    [ "$rc" -eq 0 -a "$gs" = 6000 -a "${em%% *}" -gt 0 ]
# Exit statuses: interrupted (SIGINT, as Ctrl-C sends it) 130 with "interrupted"; a run
# that fails (data that is not there) 1, with one line naming the file.
"$DOWNPOUR" local --data synthetic --synthetic-samples 500 --steps 100000000 --eval-every 0 --log-every 100 \
    >/dev/null 2>"$TMP/int.err" &
LPID=$!
for _ in $(seq 200); do grep -q "training step 100 done" "$TMP/int.err" && break; sleep 0.05; done  # training
kill -INT $LPID
wait $LPID
rc=$?
check "SIGINT: exit 130 and 'interrupted' (rc $rc)" \
    bash -c "[ $rc -eq 130 ] && grep -qx 'downpour: local: interrupted' '$TMP/int.err'"
"$DOWNPOUR" local --data "$TMP/no-data" --steps 10 >/dev/null 2>"$TMP/nodata.err"
rc=$?
check "missing data: exit 2 and one line naming --data and the file (rc $rc: $(head -c 160 "$TMP/nodata.err"))" \
    bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/nodata.err') -eq 1 ] && grep -qF -- '--data $TMP/no-data: $TMP/no-data/train-images-idx3-ubyte' '$TMP/nodata.err'"

# --checkpoint-dir: local saves and resumes as a cluster's chief does, in the same files.
M="--optimizer momentum --seed 3"
$L --steps 6 $M --checkpoint-dir "$TMP/ck6" >"$TMP/ck6.json" 2>/dev/null
$L --steps 3 $M --checkpoint-dir "$TMP/ck3" >/dev/null 2>&1
$L --steps 6 $M --checkpoint-dir "$TMP/ck3" --trace "$TMP/ck3.dptrace" >"$TMP/ck3.json" 2>"$TMP/ck3.err"
check "local resumes from its checkpoint of step 3" grep -q "restored .*/ck3/model.ckpt-3 (global step 3)" "$TMP/ck3.err"
check "local: 6 steps == 3 + resume to 6, bit for bit, momentum's slots included" \
    "$DOWNPOUR" checkpoint diff "$TMP/ck6" "$TMP/ck3" --tol 0
c6=$(json "$TMP/ck6.json" param_checksum) c3=$(json "$TMP/ck3.json" param_checksum)
check "... and the summaries agree: global step 6 both, param_checksum $c6 = $c3" \
    test "$(json "$TMP/ck6.json" global_step):$(json "$TMP/ck3.json" global_step)" = 6:6 -a "$c6" = "$c3"
want=$(ckpt_fnv "$TMP/ck6/model.ckpt-6")
check "local: the summary's param_checksum is FNV-1a of the final checkpoint's parameters ($want)" test "$c6" = "$want"
check "the resumed run's trace: one checkpoint_restore, one checkpoint_write (the final)" \
    test "$(trace_count "$TMP/ck3.dptrace" checkpoint_restore):$(trace_count "$TMP/ck3.dptrace" checkpoint_write)" = 1:1
$L --steps 7 --save-checkpoint-steps 2 --checkpoint-dir "$TMP/ck7" >/dev/null 2>&1
got=$(cd "$TMP/ck7" 2>/dev/null && ls model.ckpt-* | sed 's/model.ckpt-//' | sort -n | tr '\n' ' ')
check "local --save-checkpoint-steps 2 over 7 steps: saves at 2 4 6, then the final 7 ($got)" test "$got" = "2 4 6 7 "
$L --steps 4 $M --checkpoint-dir "$TMP/ck3" --trace "$TMP/ck4.dptrace" >"$TMP/ck4.json" 2>"$TMP/ck4.err"
check "a resume with nothing left to do says so (global step 6, --steps 4)" \
    grep -q "nothing to train: global step 6 already reaches --steps 4" "$TMP/ck4.err"
check "... evaluates at the restored step and writes no checkpoint" \
    test "$(json "$TMP/ck4.json" global_step):$(trace_count "$TMP/ck4.dptrace" checkpoint_write)" = 6:0
# --save-checkpoint-secs 1: the periodic saves at least a second apart (the final one
# is at the end). A run needs over a second to show it: 3000 steps take about 3 s here,
# and a machine that runs them in under one gets ten times as many.
for steps in 3000 30000; do
    rm -rf "$TMP/cks"
    $L --steps $steps --hidden 256 --save-checkpoint-secs 1 --checkpoint-dir "$TMP/cks" \
        --trace "$TMP/cks.dptrace" >/dev/null 2>&1
    "$DOWNPOUR" trace export --chrome "$TMP/cks.json" "$TMP/cks.dptrace" 2>/dev/null
    read -r periodic gaps <<<"$(python3 - "$TMP/cks.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
w = sorted(e['ts'] / 1e6 for e in ev if e.get('name') == 'checkpoint_write')[:-1]   # the last: the final save
t0 = min(e['ts'] for e in ev if e.get('ph') != 'M') / 1e6
print(len(w), ','.join('%.3f' % (b - a) for a, b in zip([t0] + w, w)) or '-')
PY
)"
    [ "${periodic:-0}" -ge 1 ] && break
done
check "local --save-checkpoint-secs 1: ${periodic:-0} periodic saves (1 or more), each a second or more after the last (gaps $gaps s)" \
    python3 -c "import sys; g = '$gaps'; sys.exit(0 if g != '-' and all(float(x) >= 0.999 for x in g.split(',')) else 1)"
# a local run's trace: the variables' placements name them, and the optimizer's apply is
# a compute span of its own, with its length
"$DOWNPOUR" trace export --chrome "$TMP/ck3.json" "$TMP/ck3.dptrace" 2>/dev/null
check "local's trace: var_place names global_step and the 4 variables; each apply (Momentum) is a span > 0" \
    python3 - "$TMP/ck3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
names = sorted(e['args'].get('var') for e in ev if e.get('name') == 'var_place')
applies = [e for e in ev if e.get('cat') == 'compute' and e['args'].get('var') == 'Momentum']
ok = names == ['global_step', 'hidden/biases', 'hidden/weights', 'softmax/biases', 'softmax/weights'] and \
    len(applies) == 3 and all(e['dur'] > 0 for e in applies)
print(names, [e['dur'] for e in applies])
sys.exit(0 if ok else 1)
PY
# a cluster's checkpoint resumes in local (the same file format and tensor names)
"$DOWNPOUR" cluster --ps 1 --workers 1 --steps 3 --data synthetic --synthetic-samples 500 $M --quiet \
    --checkpoint-dir "$TMP/ckc" >/dev/null 2>&1
$L --steps 5 $M --checkpoint-dir "$TMP/ckc" >"$TMP/ckc.json" 2>"$TMP/ckc.err"
check "local resumes a 1 ps + 1 worker cluster's checkpoint of step 3 and trains to 5" \
    bash -c "grep -q 'restored .*/ckc/model.ckpt-3 (global step 3)' '$TMP/ckc.err' && [ \"\$(cd '$TMP/ckc' && ls model.ckpt-5)\" = model.ckpt-5 ]"
: >"$TMP/afile"
$L --steps 4 --checkpoint-dir "$TMP/afile/ck" >/dev/null 2>"$TMP/ckbad.err"
rc=$?
check "local: a --checkpoint-dir that cannot be made: exit 2, one line naming it (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/ckbad.err') -eq 1 ] && grep -qF -- '--checkpoint-dir $TMP/afile/ck: cannot create it' '$TMP/ckbad.err'"
done_tests
