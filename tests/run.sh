#!/usr/bin/env bash
# run.sh — runs every unit test binary (build/tests/test_*) and every integration script
# (tests/it_*.sh), or only the ones named as arguments; each ends with
# "N passed, N failed[, N skipped]" and prints a "skipped: why" line per skip. Sums them
# and prints the total as the last line. A test that crashes or prints no count line
# counts as one failure. A skip is counted as a skip, never as a pass.
# DOWNPOUR_STRICT_SKIPS=1 (set by .ci/run) makes a skip a failure unless its reason
# matches a line of tests/ci-allowed-skips (hardware the machine lacks, such as a GPU):
# CI installs every package, so a skip for a missing package means a broken install.
set -u
BUILD=${BUILD:-build}
export BUILD
export DOWNPOUR="${DOWNPOUR:-$PWD/$BUILD/downpour}"
# The decoded-data cache (runtime/data_cache.h) of the run's tasks: in the build folder,
# not the user's ~/.cache; the first Fashion-MNIST task of the run fills it.
export DOWNPOUR_DATA_CACHE="${DOWNPOUR_DATA_CACHE:-$PWD/$BUILD/data-cache}"
ALLOWED=${DOWNPOUR_ALLOWED_SKIPS:-tests/ci-allowed-skips}
total_p=0; total_f=0; total_s=0
logdir="$BUILD/test-logs"; mkdir -p "$logdir"
# allowed_skip "skipped: why": whether CI accepts this skip.
allowed_skip() {
    [ -f "$ALLOWED" ] || return 1
    grep -vE '^(#|$)' "$ALLOWED" | while IFS= read -r pat; do
        case "$1" in "skipped: $pat"*) echo yes; break;; esac
    done | grep -q yes
}
run_one() {
    local name=$1; shift
    local log="$logdir/$name.log"
    local start=$(date +%s)
    # A hung test fails (and is stopped) instead of stalling the whole run.
    timeout -k 10 "${TEST_TIMEOUT:-600}" "$@" >"$log" 2>&1
    local rc=$?
    [ "$rc" -eq 124 ] && echo "FAIL timed out after ${TEST_TIMEOUT:-600} s" >>"$log"
    local line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n1)
    local p=0 f=1 s=0
    if [ -n "$line" ]; then
        p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}' | tr -d ,)
        s=$(echo "$line" | awk '{print ($5 == "" ? 0 : $5)}')
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    fi
    local skips=$(grep -aE '^skipped: ' "$log")
    local nlines=0 strict_bad=""
    if [ -n "$skips" ]; then
        nlines=$(printf '%s\n' "$skips" | wc -l)
        if [ "${DOWNPOUR_STRICT_SKIPS:-0}" = 1 ]; then
            while IFS= read -r l; do
                allowed_skip "$l" || strict_bad="$strict_bad$l"$'\n'
            done <<<"$skips"
        fi
    fi
    # Every skip line is counted, even one the closing line forgot.
    [ "$nlines" -gt "$s" ] && s=$nlines
    if [ -n "$strict_bad" ]; then
        f=$((f + $(printf '%s' "$strict_bad" | grep -c .)))
    fi
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
    local secs=$(( $(date +%s) - start ))
    if [ "$f" -eq 0 ]; then
        local sk=""; [ "$s" -gt 0 ] && sk=", $s skipped"
        printf '  ok    %-28s %4d checks%s  %3ds\n' "$name" "$p" "$sk" "$secs"
        [ -n "$skips" ] && printf '%s\n' "$skips" | sed 's/^/        /'
    else
        printf '  FAIL  %-28s %4d passed %d failed (rc %d), log: %s\n' "$name" "$p" "$f" "$rc" "$log"
        grep -aE 'FAIL|error|Error' "$log" | head -n 20 | sed 's/^/        /'
        [ -n "$strict_bad" ] && printf '%s' "$strict_bad" | \
            sed 's/^/        not allowed in CI (a package is missing?): /'
    fi
}
if [ $# -gt 0 ]; then
    echo "selected tests:"
    for t in "$@"; do
        case "$t" in
            *.sh) run_one "$(basename "$t" .sh)" bash "$t";;
            *) run_one "$(basename "$t")" "$t";;
        esac
    done
else
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
fi
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
