#!/usr/bin/env bash
# it_validate_sim.sh — the simulator's fidelity, the make-test subset of `make validate-sim`
# (issue 16): real runs kept in tests/data/validate/ (each NAME.dptrace with NAME.json, its
# real summary and the command that recorded it; re-record with `scripts/validate_sim.py
# DOWNPOUR WORK --rows ... --save tests/data/validate`) are calibrated from and simulated
# again, and each simulation must meet the matrix's goals: self-prediction within 5 % of
# the real mean step, prediction within 10 %, staleness within 10 % or 0.3 steps, dropped
# gradients within 10 %. The simulator is deterministic, so this is a fixed check. The
# same for an earlier recording's subset (tests/data/validate-7: another machine's runs,
# with async rows that meet the goals) and for a longer run (tests/data/validate-long:
# 1,500 steps, the chief's evaluations in). Then `--from` on the current runs: the whole
# table of them, written between a doc's markers.
cd "$(dirname "$0")/.."
. tests/lib.sh
for kept in tests/data/validate tests/data/validate-7 tests/data/validate-long; do
    if ! ls "$kept"/*.json >/dev/null 2>&1; then
        echo "FAIL no recordings in $kept"; FAIL=$((FAIL + 1)); continue
    fi
    echo "$kept:"
    out=$(python3 scripts/validate_sim.py "$DOWNPOUR" --replay "$kept"); rc=$?
    echo "$out" | grep -v "passed, .* failed"
    read -r p f <<<"$(echo "$out" | awk '/passed, .* failed/{print $1, $3}')"
    PASS=$((PASS + ${p:-0})); FAIL=$((FAIL + ${f:-1}))
    [ "$rc" -eq 0 ] || [ "${f:-1}" -gt 0 ] || { FAIL=$((FAIL + 1)); echo "FAIL --replay $kept: exit $rc"; }
done

# --from: the kept runs as the whole matrix, simulated again: a row for each kept run and
# for the 2 -> 4 worker prediction (both its runs are kept), written between the markers
printf 'before\n<!-- validate-sim:begin -->\nold table\n<!-- validate-sim:end -->\nafter\n' >"$TMP/doc.md"
python3 scripts/validate_sim.py "$DOWNPOUR" "$TMP/work" --from tests/data/validate --doc "$TMP/doc.md" \
    >"$TMP/from.out" 2>&1
check "--from: a self row for every kept run, the kept prediction, between the markers" python3 - "$TMP/doc.md" <<'PY'
import os, sys
doc = open(sys.argv[1]).read()
kept = sorted(f[:-5] for f in os.listdir("tests/data/validate") if f.endswith(".json"))
missing = [k for k in kept if "| %s | self |" % k not in doc]
assert kept and not missing, missing
assert "| 1ps-4w-sync | from 1ps-2w-sync (2 -> 4 workers) |" in doc
assert doc.startswith("before\n") and doc.endswith("after\n") and "old table" not in doc
assert "simulated again with this build" in doc
PY
printf 'no markers\n' >"$TMP/bare.md"
check "--doc without the markers: refused (exit 1), naming the file" bash -c \
    "out=\$(python3 scripts/validate_sim.py '$DOWNPOUR' '$TMP/w2' --from tests/data/validate --doc '$TMP/bare.md' 2>&1); \
     [ \$? -eq 1 ] && echo \"\$out\" | grep -q 'bare.md has no'"
done_tests
