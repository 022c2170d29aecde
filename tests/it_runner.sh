#!/usr/bin/env bash
# it_runner.sh — the test runner itself (tests/run.sh): a skip is counted as a skip and
# never as a pass; a skip line is counted even when the closing line forgets it; a test
# without a closing line fails; and with DOWNPOUR_STRICT_SKIPS=1 (what .ci/run sets) a skip
# for a missing package fails the run while a skip listed in tests/ci-allowed-skips
# (hardware the machine lacks) does not. The fake tests here are tiny scripts in $TMP.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

fake() { # fake NAME LINE...: a test script printing these lines
    local f="$TMP/$1.sh"; shift
    printf '%s\n' "$@" | sed 's/.*/echo "&"/' >"$f"
    echo "$f"
}
pkg=$(fake it_pkg "skipped: Xvfb is not installed (apt-get install xvfb)" "1 passed, 0 failed, 1 skipped")
gpu=$(fake it_gpu "skipped: no CUDA device (nvidia-smi lists none)" "2 passed, 0 failed, 1 skipped")
forgot=$(fake it_forgot "skipped: Fashion-MNIST is not installed" "3 passed, 0 failed")
onlyskip=$(fake it_onlyskip "skipped: nothing to do here" "0 passed, 0 failed, 1 skipped")
nocount=$(fake it_nocount "ok   something")
runner() { # runner OUTFILE [ENV=V...] -- TESTS...: runs tests/run.sh, returns its status
    local out=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    env BUILD="$TMP/build" DOWNPOUR_STRICT_SKIPS=0 "${envs[@]}" bash tests/run.sh "$@" >"$out" 2>&1
}
last() { tail -n1 "$1"; }

runner "$TMP/a" DOWNPOUR_STRICT_SKIPS=0 -- "$pkg"; rc=$?
check "a package skip outside CI passes (rc $rc)" test $rc -eq 0
check "it is counted as a skip, not a pass ($(last "$TMP/a"))" test "$(last "$TMP/a")" = "1 passed, 0 failed, 1 skipped"
check "the runner shows the skip's reason" grep -q "skipped: Xvfb is not installed" "$TMP/a"

runner "$TMP/b" DOWNPOUR_STRICT_SKIPS=1 -- "$pkg"; rc=$?
check "with strict skips (CI) a package skip fails the run (rc $rc)" test $rc -ne 0
check "... and counts as a failure ($(last "$TMP/b"))" test "$(last "$TMP/b")" = "1 passed, 1 failed, 1 skipped"
check "... naming why" grep -q "not allowed in CI (a package is missing?): skipped: Xvfb" "$TMP/b"

runner "$TMP/c" DOWNPOUR_STRICT_SKIPS=1 -- "$gpu"; rc=$?
check "with strict skips a listed hardware skip (no CUDA device) passes (rc $rc)" test $rc -eq 0
check "... counted as a skip ($(last "$TMP/c"))" test "$(last "$TMP/c")" = "2 passed, 0 failed, 1 skipped"

runner "$TMP/d" -- "$forgot"; rc=$?
check "a skip line the closing line forgot is still counted ($(last "$TMP/d"))" \
    test "$(last "$TMP/d")" = "3 passed, 0 failed, 1 skipped"
runner "$TMP/e" -- "$onlyskip" "$gpu"
check "skips add up across tests and none is a pass ($(last "$TMP/e"))" \
    test "$(last "$TMP/e")" = "2 passed, 0 failed, 2 skipped"
runner "$TMP/f" -- "$nocount"; rc=$?
check "a test without a closing line fails (rc $rc, $(last "$TMP/f"))" \
    test $rc -ne 0 -a "$(last "$TMP/f")" = "0 passed, 1 failed, 0 skipped"
check ".ci/run runs the tests with strict skips" grep -q '^DOWNPOUR_STRICT_SKIPS=1 make test$' .ci/run
done_tests
