#!/usr/bin/env bash
# run.sh — `make fuzz`: runs each named libFuzzer target (build-fuzz/fuzz_NAME, built by
# the Makefile) for FUZZ_TIME seconds (default 60) on a copy of its seed corpus
# (tests/fuzz/corpus/NAME -> build-fuzz/corpus/NAME, so new inputs never land in tests/).
# Prints per target libFuzzer's closing "#N DONE ... exec/s" line and any crash, leak or
# timeout file (build-fuzz/crashes/NAME/); exits 1 when any target found something.
# Logs: build-fuzz/logs/NAME.log.
set -u
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_TIME=${FUZZ_TIME:-60}
[ $# -gt 0 ] || set -- frame proto handshake emitter sub auth trace idx scenario spec ckpt
found=0
for t in "$@"; do
    bin="$FUZZ_BUILD/fuzz_$t"
    corpus="$FUZZ_BUILD/corpus/$t"
    crashes="$FUZZ_BUILD/crashes/$t"
    log="$FUZZ_BUILD/logs/$t.log"
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
    # One process, no forks: on a shared 2-core machine a job per core would starve others.
    # -rss_limit_mb: a parser that allocates what a header claims is a finding.
    "$bin" "$corpus" -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1
    rc=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    art=$(ls "$crashes" 2>/dev/null)
    printf '%-10s %s  (%s executions, corpus %s files)\n' "$t" "${done_line:-no DONE line}" \
        "${execs:-?}" "$(ls "$corpus" | wc -l)"
    if [ "$rc" -ne 0 ] || [ -n "$art" ]; then
        found=1
        echo "  FOUND (exit $rc): $(grep -m1 -E 'ERROR: |runtime error:|SUMMARY:' "$log")"
        for a in $art; do echo "  file: $crashes/$a"; done
    fi
done
exit $found
