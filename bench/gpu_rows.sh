#!/usr/bin/env bash
# gpu_rows.sh — the GPU section of bench/RESULTS.md from bench_gpu's output: shared by
# bench/run.sh (make bench) and scripts/gpu-check.sh, so the rows are written one way.
#   gpu_rows.sh OUTPUT_FILE [RC [ERR_FILE]]   (RC: bench_gpu's exit status; markdown to stdout)
# A "skipped: ..." line in the output, or a non-zero RC, gives one row saying so.
set -u
out=$1; rc=${2:-0}; errf=${3:-/dev/null}
gv() { awk -v k="$1" '$1 == k {print $2}' "$out"; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
skip=$(grep -m1 '^skipped: ' "$out")
echo
echo "### GPU (\`bench/bench_gpu.c\`, docs/gpu.md)"
echo
if [ -n "$skip" ] || [ "$rc" -ne 0 ]; then
    why=${skip#skipped: }
    [ "$rc" -ne 0 ] && why="bench_gpu failed (rc $rc): $(tail -n1 "$errf")"
    echo "| measurement | value | ratio | note |"
    echo "| --- | --- | --- | --- |"
    echo "| GPU vs CPU, cuBLAS vs peak | skipped: ${why:-no CUDA device} | - | measured only on a machine with an NVIDIA GPU (scripts/gpu-check.sh) |"
    exit 0
fi
echo "GPU 0: $(sed -n 's/^gpu_name //p' "$out") (compute capability $(gv gpu_cc)), peak FP32 $(gv gpu_peak_fp32_tflops) TFLOP/s"
echo "(SMs x FP32 lanes per SM x 2 x clock). CPU: OpenBLAS on $(gv cpu_threads) threads, $(nproc) cores,"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'). A step: the batch uploaded, forward, backward,"
echo "the loss downloaded, composed alike on both sides (tests/gpu_mlp.h); best of 3 each side, interleaved."
echo
echo "| measurement | value | ratio | note |"
echo "| --- | --- | --- | --- |"
for c in "mlp128_b64|MLP 784-128-10, batch 64" "mlp128_b1024|MLP 784-128-10, batch 1024" \
         "wide4096_b1024|wide MLP 784-4096-4096-10, batch 1024"; do
    k=${c%%|*}; label=${c#*|}
    gs=$(gv "${k}_gpu_samples_per_s"); cs=$(gv "${k}_cpu_samples_per_s")
    [ -n "$gs" ] && [ -n "$cs" ] || continue
    echo "| $label: GPU vs CPU (baseline) | $gs vs $cs samples/s | $(ratio "$gs" "$cs") of CPU | forward+backward |"
done
for n in 4096 8192; do
    tf=$(gv "sgemm${n}_tflops"); fr=$(gv "sgemm${n}_peak_fraction")
    [ -n "$tf" ] || continue
    echo "| cuBLAS SGEMM ${n}x${n}x${n} | $tf TFLOP/s | $fr of peak | FP32 (no TF32) |"
done
