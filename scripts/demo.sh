#!/usr/bin/env bash
# demo.sh — `make demo`: a local 1 ps + 2 worker sync cluster training an MLP on
# Fashion-MNIST. With a display it opens the live viewer; either way it records the
# trace and leaves a few rendered frames and a summary sheet in out/demo/.
set -eu
BUILD=${BUILD:-build}
D=${DOWNPOUR:-$BUILD/downpour}
OUT=${DEMO_OUT:-out/demo}
mkdir -p "$OUT"
rm -f "$OUT"/*.png "$OUT"/run.dptrace
DATA=/usr/share/datasets/fashion-mnist
[ -f "$DATA/train-images-idx3-ubyte.gz" ] || { echo "demo: Fashion-MNIST missing, using --data synthetic"; DATA=synthetic; }
ARGS="--ps 1 --workers 2 --mode sync --model mlp --optimizer momentum --lr 0.05 --steps 600
      --eval-every 200 --data $DATA --log-device-placement --log-every 200"
VIEW=""
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    VIEW="--view"
    echo "demo: opening the live viewer (close its window when the run is over)"
else
    echo "demo: no display; running headless and rendering frames instead"
fi
# shellcheck disable=SC2086
"$D" cluster $ARGS $VIEW --trace "$OUT/run.dptrace" --summary "$OUT/summary.json"
for step in 10 300 590; do
    "$D" render "$OUT/run.dptrace" --out "$OUT/frame-step$step.png" --at-step $step
done
"$D" render "$OUT/run.dptrace" --out "$OUT/placement.png" --placement
"$D" render "$OUT/run.dptrace" --sheet "$OUT/sheet.png" --title "Downpour demo: 1 ps + 2 workers, sync, Fashion-MNIST"
echo
echo "demo: everything is in $OUT/:"
echo "  run.dptrace     the recorded trace (downpour view $OUT/run.dptrace to replay it)"
echo "  summary.json    the run's summary line"
echo "  frame-*.png     the run at global steps 10, 300 and 590; placement.png"
echo "  sheet.png       a one-page summary sheet"
