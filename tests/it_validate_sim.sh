#!/usr/bin/env bash
# it_validate_sim.sh — the simulator's fidelity, the make-test subset of `make validate-sim`
# (issue 16): real runs kept in tests/data/validate/ (each NAME.dptrace with NAME.json, its
# real summary and the command that recorded it; re-record with `scripts/validate_sim.py
# DOWNPOUR WORK --rows ... --save tests/data/validate`) are calibrated from and simulated
# again, and each simulation must meet the matrix's goals: self-prediction within 5 % of
# the real mean step, prediction within 10 %, staleness within 10 % or 0.3 steps, dropped
# gradients within 10 %. The simulator is deterministic, so this is a fixed check.
cd "$(dirname "$0")/.."
. tests/lib.sh
if ! ls tests/data/validate/*.json >/dev/null 2>&1; then
    echo "no recordings in tests/data/validate"; echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
python3 scripts/validate_sim.py "$DOWNPOUR" --replay tests/data/validate
