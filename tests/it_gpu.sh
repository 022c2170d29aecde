#!/usr/bin/env bash
# it_gpu.sh — the device layer on a GPU (make test-gpu; also in make test, where it skips
# without one): the placement log's Device mapping line in TensorFlow's format, every op of
# `local --strategy single` on GPU:0, a 100-step run on the GPU ending within 1e-4 of the
# same run with every op on the CPU (--device-for '*=/cpu:0'), and towers over the GPUs
# present (one tower per GPU, the same loss within 1e-4). Kernel-level forward and
# backward checks are in tests/test_gpu.c. Without a CUDA device: one "skipped:" line.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

RUN="local --data synthetic --model mlp --hidden 64 --steps 100 --eval-every 0 --quiet"
$DOWNPOUR local --data synthetic --steps 1 --quiet --log-device-placement >/dev/null 2>"$TMP/log.txt"
n_gpu=$(grep -cE '^/job:localhost/replica:0/task:0/device:GPU:[0-9]+ -> device: ' "$TMP/log.txt")
if [ "$n_gpu" -eq 0 ]; then
    skip "no CUDA device ($(head -n1 "$TMP/log.txt"))"
    done_tests; exit
fi
echo "GPUs: $(sed -n 's/.* name: \(.*\), pci bus id.*/\1/p' "$TMP/log.txt" | sort | uniq -c | tr '\n' ' ')"
check "Device mapping lines in TensorFlow's format ($n_gpu GPUs)" bash -c "grep -E '^/job:localhost/replica:0/task:0/device:GPU:' '$TMP/log.txt' | grep -vqE '^/job:localhost/replica:0/task:0/device:GPU:[0-9]+ -> device: [0-9]+, name: .+, pci bus id: [0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9], compute capability: [0-9]+\.[0-9]+$'; test \$? -eq 1"
check "single: hidden/MatMul on GPU:0" grep -qx 'hidden/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0' "$TMP/log.txt"

$DOWNPOUR $RUN >"$TMP/gpu.json" 2>"$TMP/gpu.err"
check "100 steps on the GPU exit 0" test $? -eq 0
$DOWNPOUR $RUN --device-for '*=/cpu:0' >"$TMP/cpu.json" 2>"$TMP/cpu.err"
check "the same on the CPU exits 0" test $? -eq 0
lg=$(json "$TMP/gpu.json" final_loss) lc=$(json "$TMP/cpu.json" final_loss)
check "GPU final loss $lg = CPU final loss $lc within 1e-4" \
    python3 -c "import sys; sys.exit(0 if abs($lg - $lc) <= 1e-4 * max(1, abs($lc)) else 1)"

$DOWNPOUR $RUN --strategy towers >"$TMP/towers.json" 2>"$TMP/towers.err"
check "towers over the GPUs exit 0" test $? -eq 0
check "one tower per GPU ($n_gpu)" test "$(json "$TMP/towers.json" towers)" = "$n_gpu"
lt=$(json "$TMP/towers.json" final_loss)
check "towers final loss $lt = one GPU's $lg within 1e-4" \
    python3 -c "import sys; sys.exit(0 if abs($lt - $lg) <= 1e-4 * max(1, abs($lg)) else 1)"
done_tests
