#!/usr/bin/env bash
# it_checkpoint.sh — checkpoints hold everything needed to resume exactly (variables,
# global step, the optimizer's slot variables), periodic saves with TensorFlow's flags
# keep the last 5 and are events, the final checkpoint carries the ps's final global
# step, bad directories fail at start, `checkpoint info|diff` on files, and a ps given
# bad slot frames drops the peer.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet"

# Exact resume: 6 uninterrupted steps == 3 steps + resume to 6, bit for bit.
for opt in momentum adagrad; do
    for ps in 1 2; do
        $DOWNPOUR cluster --ps $ps --workers 2 --steps 6 --optimizer $opt $SYN --checkpoint-dir "$TMP/u-$opt-$ps" >/dev/null 2>&1
        $DOWNPOUR cluster --ps $ps --workers 2 --steps 3 --optimizer $opt $SYN --checkpoint-dir "$TMP/r-$opt-$ps" >/dev/null 2>&1
        $DOWNPOUR cluster --ps $ps --workers 2 --steps 6 --optimizer $opt $SYN --checkpoint-dir "$TMP/r-$opt-$ps" \
            >/dev/null 2>"$TMP/r.err"
        check "$opt, $ps ps: resumed from step 3" grep -q "restored .*model.ckpt-3 (global step 3)" "$TMP/r.err"
        check "$opt, $ps ps: 6 steps == 3 + resume 3, bit for bit" \
            $DOWNPOUR checkpoint diff "$TMP/u-$opt-$ps" "$TMP/r-$opt-$ps" --tol 0
    done
done
slot=Momentum
check "the checkpoint holds the slot variables under TensorFlow's names (hidden/weights/$slot)" \
    bash -c "$DOWNPOUR checkpoint info '$TMP/u-momentum-2' | grep -q 'tensor_name: hidden/weights/Momentum '"
check "adagrad's slots: softmax/biases/Adagrad" \
    bash -c "$DOWNPOUR checkpoint info '$TMP/u-adagrad-1' | grep -q 'tensor_name: softmax/biases/Adagrad '"
# The slots matter: without them (an sgd checkpoint) a momentum run refuses to resume.
$DOWNPOUR cluster --ps 1 --workers 2 --steps 3 $SYN --checkpoint-dir "$TMP/sgd" >/dev/null 2>&1
$DOWNPOUR cluster --ps 1 --workers 2 --steps 6 --optimizer momentum $SYN --checkpoint-dir "$TMP/sgd" \
    >/dev/null 2>"$TMP/sgd.err"
check "momentum from an sgd checkpoint: refused, naming the missing slot" \
    grep -q "has no tensor hidden/weights/Momentum (an optimizer slot" "$TMP/sgd.err"

# Periodic checkpoints: every 2 steps, the last 5 kept, each an event.
$DOWNPOUR cluster --ps 2 --workers 2 --steps 12 --optimizer momentum --save-checkpoint-steps 2 $SYN \
    --checkpoint-dir "$TMP/p" --trace "$TMP/p.dptrace" >/dev/null 2>&1
check "--save-checkpoint-steps 2: steps 4..12 kept, 2 deleted (TF keeps 5)" \
    test "$(cd "$TMP/p" && ls model.ckpt-* | sort -t- -k2 -n | tr '\n' ' ')" = \
         "model.ckpt-4 model.ckpt-6 model.ckpt-8 model.ckpt-10 model.ckpt-12 "
check "the index names the latest, then every kept one" \
    test "$(grep -c all_model_checkpoint_paths "$TMP/p/checkpoint"):$(head -1 "$TMP/p/checkpoint")" = \
         '5:model_checkpoint_path: "model.ckpt-12"'
check "no temporary file left behind" test -z "$(ls "$TMP/p" | grep tmp)"
nw=$(trace_count "$TMP/p.dptrace" checkpoint_write)
check "every save is a checkpoint_write event (6, got $nw)" test "$nw" = 6
$DOWNPOUR cluster --ps 2 --workers 2 --steps 4 --optimizer momentum $SYN --checkpoint-dir "$TMP/p4" >/dev/null 2>&1
check "the periodic checkpoint at step 4 == a 4-step run's, bit for bit (slots included)" \
    $DOWNPOUR checkpoint diff "$TMP/p/model.ckpt-4" "$TMP/p4" --tol 0
$DOWNPOUR cluster --ps 2 --workers 2 --steps 14 --optimizer momentum $SYN --checkpoint-dir "$TMP/p" \
    --trace "$TMP/p2.dptrace" >/dev/null 2>&1
nr=$(trace_count "$TMP/p2.dptrace" checkpoint_restore)
check "a resume is a checkpoint_restore event" test "$nr" = 1
check "a resumed run's save trims the list again (4 deleted)" test ! -e "$TMP/p/model.ckpt-4" -a -e "$TMP/p/model.ckpt-14"
# The steps rule is anchored to the multiples of N, not to the last save: resumed at step
# 7, saves every 5 land on 10, 15, 20, 25 (then the final 28), not on 12, 17, 22, 27.
$DOWNPOUR cluster --ps 1 --workers 1 --steps 7 $SYN --checkpoint-dir "$TMP/a" >/dev/null 2>&1
$DOWNPOUR cluster --ps 1 --workers 1 --steps 28 --save-checkpoint-steps 5 $SYN --checkpoint-dir "$TMP/a" \
    --trace "$TMP/a.dptrace" >/dev/null 2>&1
got=$(cd "$TMP/a" && ls model.ckpt-* | sed 's/model.ckpt-//' | sort -n | tr '\n' ' ')
check "--save-checkpoint-steps 5 resumed at 7: saves at 10 15 20 25 28 ($got)" test "$got" = "10 15 20 25 28 "
# The restored step counts as saved: 7 is not written again (the list's trimming to 5
# would hide it).
nw=$(trace_count "$TMP/a.dptrace" checkpoint_write)
check "... and no other (5 checkpoint_write events, got $nw)" test "$nw" = 5
$DOWNPOUR cluster --ps 1 --workers 2 --steps 40 --pace 100ms --save-checkpoint-secs 1 $SYN \
    --checkpoint-dir "$TMP/s" >/dev/null 2>&1
n=$(ls "$TMP/s" | grep -c '^model.ckpt-')
check "--save-checkpoint-secs 1 over a 4 s run: periodic saves besides the last ($n files)" test "$n" -ge 3
expect_err() { # expect_err "substring" args...
    local want=$1; shift
    timeout 20 $DOWNPOUR "$@" >/dev/null 2>"$TMP/e.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$want" "$TMP/e.err" && [ "$(wc -l <"$TMP/e.err")" -eq 1 ]; then
        ok "error: $want"; else bad "error: $want (rc $rc: $(cat "$TMP/e.err"))"; fi
}
expect_err '--save-checkpoint-steps: "x" is not' cluster --save-checkpoint-steps x

# The final checkpoint carries the ps's final global step (async: others push after the
# chief's last read), as does the summary.
for i in 1 2 3; do
    # Slow others: the chief reaches --steps while their last steps are still running.
    $DOWNPOUR cluster --ps 2 --workers 4 --mode async --steps 30 $SYN --slow-worker 1:20 --slow-worker 2:20 \
        --slow-worker 3:20 --checkpoint-dir "$TMP/a$i" >"$TMP/a.json" 2>/dev/null
    ck=$($DOWNPOUR checkpoint info "$TMP/a$i" | sed -n 's/^global_step: //p')
    gs=$(json "$TMP/a.json" global_step); vm=$(json "$TMP/a.json" min_variable_step)
    check "async run $i: final checkpoint at the ps's final step (checkpoint $ck, summary $gs, ps $vm)" \
        test "$ck" = "$vm" -a "$gs" = "$vm"
done

# The summary's param_checksum is FNV-1a (64 bits) of the parameters the chief read last:
# in a sync run, of the final checkpoint's tensors, computed here from the file.
$DOWNPOUR cluster --ps 2 --workers 2 --steps 8 $SYN --checkpoint-dir "$TMP/sum" >"$TMP/sum.json" 2>/dev/null
want=$(ckpt_fnv "$TMP/sum/model.ckpt-8")
got=$(json "$TMP/sum.json" param_checksum)
check "the summary's param_checksum is FNV-1a of the final checkpoint's tensors ($got, $want)" \
    test -n "$want" -a "$got" = "$want"

# A resume with nothing left to do reports the restored step and evaluates.
$DOWNPOUR cluster --ps 2 --workers 2 --steps 6 --optimizer momentum $SYN --checkpoint-dir "$TMP/p" \
    --trace "$TMP/n.dptrace" >"$TMP/n.json" 2>"$TMP/n.err"
check "nothing left to do: exit 0" test $? -eq 0
check "nothing left to do: the restored checkpoint is not written again" \
    test "$(trace_count "$TMP/n.dptrace" checkpoint_write)" = 0
check "nothing left to do: the summary's global_step is the restored 14" test "$(json "$TMP/n.json" global_step)" = 14
check "nothing left to do: evaluated (test_accuracy $(json "$TMP/n.json" test_accuracy))" \
    fcmp "$(json "$TMP/n.json" test_accuracy)" '>' 0
check "nothing left to do: said so" grep -q "nothing to train: global step 14 already reaches --steps 6" "$TMP/n.err"

# Directories: an unwritable --checkpoint-dir fails at start, in one line naming it.
: >"$TMP/afile"
t0=$(date +%s)
expect_err "--checkpoint-dir $TMP/afile/ck: cannot create it" cluster --steps 100000 $SYN --checkpoint-dir "$TMP/afile/ck"
check "... before training (in $(( $(date +%s) - t0 )) s)" test $(( $(date +%s) - t0 )) -le 2
# A hand-started chief checks it before waiting for its ps.
timeout 20 $DOWNPOUR task --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 \
    $SYN --checkpoint-dir "$TMP/afile/ck" >/dev/null 2>"$TMP/t.err"
check "downpour task (chief): bad --checkpoint-dir refused at once" grep -q "afile/ck: cannot create it" "$TMP/t.err"

# checkpoint info|diff on files and on a directory without its index.
check "checkpoint info FILE" bash -c "$DOWNPOUR checkpoint info '$TMP/p/model.ckpt-12' | grep -q 'global_step: 12'"
check "checkpoint diff FILE FILE" $DOWNPOUR checkpoint diff "$TMP/p/model.ckpt-12" "$TMP/p/model.ckpt-12" --tol 0
mkdir "$TMP/noindex"
$DOWNPOUR checkpoint info "$TMP/noindex" >/dev/null 2>"$TMP/ni.err"
check "a directory without its index: a clear message" \
    grep -q 'noindex: a directory without a "checkpoint" index file' "$TMP/ni.err"
python3 - "$TMP/p/model.ckpt-12" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[100] ^= 1; open(p, 'wb').write(b)
PY
$DOWNPOUR checkpoint info "$TMP/p/model.ckpt-12" >/dev/null 2>"$TMP/crc.err"
check "a flipped bit is a checksum mismatch" grep -q "model.ckpt-12: checksum mismatch" "$TMP/crc.err"
$DOWNPOUR checkpoint info "$TMP/p/checkpoint" >/dev/null 2>"$TMP/magic.err"
check "another kind of file (the index's text) is not a checkpoint, not a damaged one" \
    grep -q "p/checkpoint: offset 0: not a Downpour checkpoint" "$TMP/magic.err"
# Files written here by the documented format (docs/runtime.md, "Checkpoints"), each with
# a valid checksum, so that the reader's own checks are what refuses the bad ones.
python3 - "$TMP/fmt" <<'PY'
import struct, sys, zlib
d = sys.argv[1]
def ckpt(name, tensors, extra=b'', count=None):
    b = b'DPCKPT01' + struct.pack('<Iq I', 1, 7, len(tensors))
    for n, vals in tensors:
        b += struct.pack('<H', len(n)) + n + struct.pack('<Q', len(vals) if count is None else count)
        b += struct.pack('<%df' % len(vals), *vals)
    b += extra
    open(d + '-' + name, 'wb').write(b + struct.pack('<I', zlib.crc32(b)))
ckpt('good', [(b'w', [1.5, -2.0, 0.25])])
ckpt('oversize', [(b'w', [1.5, -2.0, 0.25])], count=4)
ckpt('trailing', [(b'w', [1.5, -2.0, 0.25])], extra=b'\0\0')
PY
$DOWNPOUR checkpoint info "$TMP/fmt-good" >"$TMP/fmt.out" 2>&1
check "a checkpoint written by the documented format reads: global step 7, w's 3 floats (sum -0.25, -2 to 1.5)" \
    test "$(tr -s ' ' <"$TMP/fmt.out")" = "$(printf 'global_step: 7\ntensor_name: w floats: 3 sum: -0.25 min: -2 max: 1.5')"
$DOWNPOUR checkpoint info "$TMP/fmt-oversize" >/dev/null 2>"$TMP/fmt.err"
check "a tensor claiming more floats than the file holds is refused at its offset" \
    grep -qx "downpour: checkpoint: $TMP/fmt-oversize: offset 24: bad size for tensor w" "$TMP/fmt.err"
$DOWNPOUR checkpoint info "$TMP/fmt-trailing" >/dev/null 2>"$TMP/fmt.err"
check "bytes after the last tensor are refused at their offset" \
    grep -qx "downpour: checkpoint: $TMP/fmt-trailing: offset 47: trailing bytes" "$TMP/fmt.err"
$DOWNPOUR checkpoint info --help >"$TMP/fmt.out" 2>&1
rc=$?
check "checkpoint info --help prints the usage (rc $rc), not a missing file" \
    bash -c "[ $rc -eq 0 ] && grep -q '^usage: downpour checkpoint' '$TMP/fmt.out'"

# Bad slot frames: a ps drops the peer with a reason and keeps serving.
read -r P W W2 < <(free_ports 3)
# Async with 2 workers: the bad peers say they are worker 1 (a lost worker 1 is let go),
# worker 0 then trains alone.
HOSTS="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W,127.0.0.1:$W2"
PSYN="--data synthetic --model softmax --quiet --optimizer momentum --mode async --steps 20"
$DOWNPOUR task --job_name=ps --task_index=0 $HOSTS $PSYN >/dev/null 2>"$TMP/ps.err" &
PS=$!
python3 - "$P" "$TMP/ps.err" >"$TMP/py.out" 2>&1 <<'PY'
import re, socket, struct, sys, time
port = int(sys.argv[1])
sys.path.insert(0, "tests")
from ps_wire import hdr, conn as ps_wire_conn, drain, config_hash, HELLO, PULL, INIT, PUSH, INIT_SLOT
conn = lambda: ps_wire_conn(port)
def talk(s, data):
    s.sendall(data)
    return drain(s)
# The config hash, from the ps's own log of its refusal of a wrong one (the reply
# never names it: docs/security.md).
s = conn(); txt = talk(s, hdr(HELLO, var=1, a0=1, a1=2)).decode("latin1"); s.close()
h = config_hash(sys.argv[2])
cases = {
    "slot of wrong size": hdr(INIT_SLOT, length=8, var=1),
    "slot of global_step": hdr(INIT_SLOT, length=0, var=0),
    "slot pull before init": hdr(PULL, var=1, a1=1),
    "empty init of an unknown variable": hdr(INIT, var=99),
    "empty push of an unknown variable": hdr(PUSH, var=99),
}
for name, data in cases.items():
    s = conn()
    s.sendall(hdr(HELLO, var=1, a0=h, a1=2))
    print(name, "->", talk(s, data + b"\0" * (8 if name == "slot of wrong size" else 0))[32:200])
    s.close()
PY
$DOWNPOUR task --job_name=worker --task_index=0 $HOSTS $PSYN >/dev/null 2>"$TMP/w.err"
check "worker trains to the end after the bad slot frames" test $? -eq 0
wait $PS
for reason in "INIT_SLOT of softmax/weights carries 8 bytes, expected 31360" \
              "INIT_SLOT of global_step, which keeps no optimizer slot" \
              "PULL of softmax/weights's slot, which is not initialised" \
              "unexpected INIT (var 99)" "unexpected PUSH (var 99)"; do
    if grep -q -- "$reason" "$TMP/ps.err" "$TMP/py.out"; then ok "dropped with reason: $reason"
    else bad "dropped with reason: $reason"; cat "$TMP/ps.err" "$TMP/py.out"; fi
done
check "every bad connection got an answer or was closed (no hang)" bash -c "! grep -q timeout '$TMP/py.out'"

done_tests
