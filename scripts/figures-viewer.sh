#!/usr/bin/env bash
# figures-viewer.sh — renders the two pictures of docs/viewer.md from synthetic runs
# (`downpour render --write-synthetic`, deterministic): a 2 ps + 8 worker sync run with
# one backup worker at 4.148 s (viewer-sync.png) and a 4 ps + 10,000 worker run with 500
# backups at 0.140 s (viewer-10k.png). Writes them to DIR (default out/figures); copy
# them over docs/ to refresh the pictures.   usage: [BUILD=build] scripts/figures-viewer.sh [DIR]
set -eu
BUILD=${BUILD:-build}
D="$BUILD/downpour"
OUT=${1:-out/figures}
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$D" render --write-synthetic "$TMP/sync.dptrace" --ps 2 --workers 8 --backup 1 --steps 120 >/dev/null
"$D" render "$TMP/sync.dptrace" --out "$OUT/viewer-sync.png" --at 4.148
"$D" render --write-synthetic "$TMP/10k.dptrace" --ps 4 --workers 10000 --backup 500 --steps 4 >/dev/null
"$D" render "$TMP/10k.dptrace" --out "$OUT/viewer-10k.png" --at 0.140
echo "wrote $OUT/viewer-sync.png $OUT/viewer-10k.png"
