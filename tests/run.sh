#!/usr/bin/env bash
# run.sh — runs every unit test binary (build/tests/test_*) and every integration script
# (tests/it_*.sh), each of which ends with "N passed, N failed"; sums them and prints the
# total as the last line. A test that crashes or prints no count line counts as one failure.
set -u
BUILD=${BUILD:-build}
export BUILD
export DOWNPOUR="$PWD/$BUILD/downpour"
total_p=0; total_f=0
logdir="$BUILD/test-logs"; mkdir -p "$logdir"
run_one() {
    local name=$1; shift
    local log="$logdir/$name.log"
    local start=$(date +%s)
    # A hung test fails (and is stopped) instead of stalling the whole run.
    timeout -k 10 "${TEST_TIMEOUT:-600}" "$@" >"$log" 2>&1
    local rc=$?
    [ "$rc" -eq 124 ] && echo "FAIL timed out after ${TEST_TIMEOUT:-600} s" >>"$log"
    local line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
    local p=0 f=1
    if [ -n "$line" ]; then
        p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}')
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    fi
    total_p=$((total_p + p)); total_f=$((total_f + f))
    local secs=$(( $(date +%s) - start ))
    if [ "$f" -eq 0 ]; then
        printf '  ok    %-28s %4d checks  %3ds\n' "$name" "$p" "$secs"
    else
        printf '  FAIL  %-28s %4d passed %d failed (rc %d), log: %s\n' "$name" "$p" "$f" "$rc" "$log"
        grep -E 'FAIL|error|Error' "$log" | head -n 20 | sed 's/^/        /'
    fi
}
echo "unit tests:"
for t in "$BUILD"/tests/test_*; do
    case "$t" in *.o|*.d) continue;; esac
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
echo "integration tests:"
for s in tests/it_*.sh; do
    [ -f "$s" ] || continue
    run_one "$(basename "$s" .sh)" bash "$s"
done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
