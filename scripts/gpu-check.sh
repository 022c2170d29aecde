#!/usr/bin/env bash
# gpu-check.sh — the one prepared script for a machine with an NVIDIA GPU (docs/gpu.md):
# builds (make -j16 BUILD=build), runs `make test-gpu`, the GPU bench (bench_gpu, and its
# rows for bench/RESULTS.md through bench/gpu_rows.sh) and the GPU tests under ASan
# (make test-gpu-asan, plus one run with ASan's shadow gap left protected, to show whether
# protect_shadow_gap=0 is still needed). Everything goes to $OUT (set by the device tool)
# or ./out/gpu-check; a summary is printed at the end. Each step has a time limit, so
# the whole stays under ~5 minutes; GPU_CHECK_ASAN=0 leaves the ASan steps out.
#   scripts/gpu-check.sh
set -u
cd "$(dirname "$0")/.."
DEST=${OUT:-$PWD/out/gpu-check}
mkdir -p "$DEST"
JOBS=${JOBS:-16}
t_start=$(date +%s)
declare -a SUMMARY
note() { SUMMARY+=("$*"); echo "== $*"; }
# step NAME LIMIT_S CMD...: runs CMD with its output in $DEST/NAME.log; notes rc and time.
step() {
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s)
    echo "== $name: $*"
    timeout -k 5 "$limit" "$@" >"$DEST/$name.log" 2>&1
    local rc=$?
    local secs=$(( $(date +%s) - t0 ))
    [ $rc -eq 124 ] && echo "(timed out after $limit s)" >>"$DEST/$name.log"
    note "$name: rc $rc, ${secs} s$([ $rc -eq 124 ] && echo ", TIMED OUT")"
    return $rc
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes')"
    echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "nvcc: $( (command -v nvcc || ls /usr/local/cuda/bin/nvcc) 2>/dev/null | head -n1)"
    /usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n2
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.max.sm --format=csv
} >"$DEST/machine.txt" 2>&1
cat "$DEST/machine.txt"

if step build 240 make -j"$JOBS" BUILD=build all; then
    step test-gpu 90 make BUILD=build test-gpu
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$DEST/test-gpu.log" | tail -n1)
    gpu=$(sed -n 's/^ *GPU 0: //p' build/test-logs/test_gpu.log 2>/dev/null | head -n1)
    cp build/test-logs/test_gpu.log "$DEST/test_gpu.log" 2>/dev/null
    note "make test-gpu: ${line:-no count line}"
    note "GPU 0: ${gpu:-none found ($(grep -m1 '^skipped:' "$DEST/test_gpu.log" 2>/dev/null))}"

    step bench-gpu 120 ./build/bench/bench_gpu "${BENCH_GPU_SECONDS:-0.3}"
    brc=$?
    ./bench/gpu_rows.sh "$DEST/bench-gpu.log" "$brc" "$DEST/bench-gpu.log" >"$DEST/bench-gpu.md"
    note "GPU bench rows (for bench/RESULTS.md): $DEST/bench-gpu.md"
else
    tail -n 30 "$DEST/build.log"
fi

if [ "${GPU_CHECK_ASAN:-1}" = 1 ]; then
    if step test-gpu-asan 150 make -j"$JOBS" test-gpu-asan; then
        note "ASan (protect_shadow_gap=0): $(grep -E '^[0-9]+ passed' "$DEST/test-gpu-asan.log" | tail -n1)"
    else
        note "ASan (protect_shadow_gap=0): FAILED, see $DEST/test-gpu-asan.log and build-asan/test-logs"
    fi
    cp build-asan/test-logs/test_gpu.log "$DEST/test_gpu-asan.log" 2>/dev/null
    # Whether the driver still needs the shadow gap open: the same binary, gap protected.
    if [ -x build-asan/tests/test_gpu ]; then
        ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
            timeout 60 build-asan/tests/test_gpu >"$DEST/asan-gap-protected.log" 2>&1
        grc=$?
        note "ASan with the shadow gap protected (default options): rc $grc, $(grep -E '^[0-9]+ passed' "$DEST/asan-gap-protected.log" | tail -n1)"
    fi
fi

echo
echo "==== gpu-check summary ($(( $(date +%s) - t_start )) s; files in $DEST) ===="
printf '%s\n' "${SUMMARY[@]}" | tee "$DEST/summary.txt"
[ -s "$DEST/bench-gpu.md" ] && cat "$DEST/bench-gpu.md"
# Exit status: the GPU tests' verdict (the bench and ASan steps are reported, not judged).
grep -qE '^[0-9]+ passed, 0 failed' "$DEST/test-gpu.log" 2>/dev/null
