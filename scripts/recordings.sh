#!/usr/bin/env bash
# recordings.sh — `make recordings`: runs each shipped scenario and each lesson (every
# variant of one with [compare]) and keeps its trace for replay without training:
#   scenarios/NAME.ini             -> scenarios/recorded/NAME--LABEL.dptrace
#   scenarios/lessons/NN-NAME.ini  -> scenarios/recorded/lesson-NN-NAME--LABEL.dptrace
# (LABEL "run" without [compare]), so that a class can replay one at once
# (`downpour view scenarios/recorded/sync-vs-async--mode-sync.dptrace`). Large simulated
# runs are recorded with sampled workers (trace_level) to stay a few MB. Runs one
# scenario after another (never two at once: they would compete for cores); takes a few
# minutes. With arguments it records only those files:
#   scripts/recordings.sh scenarios/lessons/09-bounded-staleness.ini
set -eu
BUILD=${BUILD:-build}
D=${DOWNPOUR:-$BUILD/downpour}
REC=scenarios/recorded
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$REC"
if [ $# -gt 0 ]; then
    files=("$@")
else
    files=(scenarios/*.ini)
    [ -d scenarios/lessons ] && files+=(scenarios/lessons/*.ini)
fi
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "recordings: $f: no such file" >&2; exit 1; }
    name=$(basename "$f" .ini)
    case "$f" in scenarios/lessons/*) name="lesson-$name" ;; esac
    extra=()
    grep -q '^engine = sim' "$f" && extra=(--set trace_level=sample:16)
    echo "recordings: $name"
    for w in 4 2; do
        R=$REC/real-1ps-${w}w-sync-fashion-mnist.dptrace
        if [ "$name" = lesson-12-real-to-sim ] && [ ! -f "$R" ]; then
            # lesson 12 is fitted to real runs of 4 workers (its self-prediction) and of 2
            # (its prediction); kept once made, like the lesson's numbers
            "$D" cluster --ps 1 --workers $w --mode sync --steps 1200 --model mlp --hidden 128 \
                --optimizer sgd --lr 0.1 --batch 64 --eval-every 300 --seed 1 --trace "$R" --quiet >/dev/null
            echo "  $R ($(du -h "$R" | cut -f1))"
        fi
    done
    rm -rf "${TMP:?}/$name"
    if grep -q '^\[compare\]' "$f"; then
        "$D" compare "$f" --out "$TMP/$name" ${extra[@]+"${extra[@]}"} >/dev/null
    else
        "$D" run "$f" --no-view --out "$TMP/$name/variants/run" ${extra[@]+"${extra[@]}"} >/dev/null
    fi
    for v in "$TMP/$name"/variants/*/; do
        label=$(basename "$v")
        cp "$v/trace.dptrace" "$REC/$name--$label.dptrace"
        echo "  $REC/$name--$label.dptrace ($(du -h "$REC/$name--$label.dptrace" | cut -f1))"
    done
done
