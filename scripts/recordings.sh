#!/usr/bin/env bash
# recordings.sh — `make recordings`: runs each shipped scenario (every variant of one with
# [compare]) and keeps its trace in scenarios/recorded/NAME--LABEL.dptrace (LABEL "run"
# without [compare]), so that a class can replay
# one at once (`downpour view scenarios/recorded/sync-vs-async--mode-sync.dptrace`) with
# no training. Large simulated runs are recorded with sampled workers (trace_level) to
# stay a few MB. Runs one scenario after another; takes a few minutes.
set -eu
BUILD=${BUILD:-build}
D=${DOWNPOUR:-$BUILD/downpour}
REC=scenarios/recorded
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$REC"
for f in scenarios/*.ini; do
    name=$(basename "$f" .ini)
    extra=()
    grep -q '^engine = sim' "$f" && extra=(--set trace_level=sample:16)
    echo "recordings: $name"
    if grep -q '^\[compare\]' "$f"; then
        "$D" compare "$f" --out "$TMP/$name" "${extra[@]}" >/dev/null
    else
        "$D" run "$f" --no-view --out "$TMP/$name/variants/run" "${extra[@]}" >/dev/null
    fi
    for v in "$TMP/$name"/variants/*/; do
        label=$(basename "$v")
        cp "$v/trace.dptrace" "$REC/$name--$label.dptrace"
        echo "  $REC/$name--$label.dptrace ($(du -h "$REC/$name--$label.dptrace" | cut -f1))"
    done
done
