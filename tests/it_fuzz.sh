#!/usr/bin/env bash
# it_fuzz.sh — the fuzz targets' regression run (`make test`): builds tests/fuzz/ with
# clang and libFuzzer (`make fuzz-build`, into build-fuzz/), then per target runs every
# input of its corpus once (seeds and crash-* regression inputs: `-runs=0`) and fuzzes
# for FUZZ_QUICK seconds (default 2) on a scratch copy. A crash, leak, sanitizer report
# or timeout fails. Without clang or its libFuzzer runtime: one "skipped:" line.
# `make fuzz` is the long run (docs/reliability.md, "Fuzzing").
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
QUICK=${FUZZ_QUICK:-2}
TARGETS="frame proto handshake emitter sub auth trace idx scenario spec ckpt"

probe="$TMP/probe.c"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe"
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1 ||
   ! "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address,undefined "$probe" -o "$TMP/probe" >/dev/null 2>&1; then
    skip "no clang with libFuzzer (install clang and libclang-rt-dev)"
    echo "$PASS passed, $FAIL failed, $SKIP skipped"
    exit 0
fi
if make --no-print-directory FUZZ_BUILD="$FUZZ_BUILD" fuzz-build >"$TMP/build.log" 2>&1; then
    ok "fuzz targets build"
else
    bad "fuzz targets build"; tail -n 20 "$TMP/build.log"
    echo "$PASS passed, $FAIL failed, $SKIP skipped"
    exit 1
fi
for t in $TARGETS; do
    bin="$FUZZ_BUILD/fuzz_$t"
    log="$TMP/$t-corpus.log"
    if "$bin" tests/fuzz/corpus/"$t" -runs=0 -timeout=10 -artifact_prefix="$TMP/" >"$log" 2>&1; then
        ok "fuzz_$t: every corpus input ($(ls tests/fuzz/corpus/"$t" | wc -l) files) runs clean"
    else
        bad "fuzz_$t: corpus input crashes"; grep -m3 -E 'ERROR:|runtime error:|SUMMARY:' "$log"
    fi
    mkdir -p "$TMP/corpus-$t"
    cp tests/fuzz/corpus/"$t"/* "$TMP/corpus-$t"/
    log="$TMP/$t-quick.log"
    if "$bin" "$TMP/corpus-$t" -max_total_time="$QUICK" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$TMP/" >"$log" 2>&1; then
        ok "fuzz_$t: ${QUICK} s of fuzzing: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | awk '{print $1}' | tr -d '#') runs, no crash"
    else
        bad "fuzz_$t: fuzzing found a crash"; grep -m3 -E 'ERROR:|runtime error:|SUMMARY:' "$log"
        ls "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* 2>/dev/null
    fi
done
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
