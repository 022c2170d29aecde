#!/usr/bin/env bash
# run.sh — `make bench`: every benchmark as a ratio against a baseline measured in the
# same run (these machines are shared and noisy), written to bench/RESULTS.md.
set -u
BUILD=${BUILD:-build}
D="$PWD/$BUILD/downpour"
B="$PWD/$BUILD/bench"
DATA=/usr/share/datasets/fashion-mnist
[ -d "$DATA" ] || DATA=synthetic
OUT=bench/RESULTS.md
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
STEPS=${BENCH_STEPS:-2000}
row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >>"$TMP/rows"; echo "  $1: $2 ($3)"; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
sps() { python3 -c "import json,sys; print([json.loads(l) for l in open('$1') if l.startswith('{')][-1]['samples_per_s'])"; }
best() { # best of N runs of a cluster command: prints samples/s
    local best=0
    for i in 1 2 3; do
        "$D" cluster "$@" --quiet --eval-every 0 >"$TMP/r.json" 2>/dev/null || { echo 0; return; }
        best=$(python3 -c "print(max($best, $(sps "$TMP/r.json")))")
    done
    echo "$best"
}
: >"$TMP/rows"
echo "training throughput (MLP 784-128-10, batch 64/worker, $STEPS steps, data: $DATA)"
base=$("$B/bench_train" "$DATA" mlp 128 64 "$STEPS" | awk '/samples_per_s/{print $2}')
row "in-process training, no ps (baseline)" "$base samples/s" "1.00" "goal: reference"
# One worker: async is plain sequential SGD through the ps (the distribution overhead
# alone); sync adds the step token's round trip (SyncReplicasOptimizer's barrier).
one=$(best --ps 1 --workers 1 --mode async --steps "$STEPS" --data "$DATA")
row "1 ps + 1 worker (async: no barrier)" "$one samples/s" "$(ratio "$one" "$base") of baseline" "goal: >= 0.85 (overhead <= 15%)"
one_sync=$(best --ps 1 --workers 1 --mode sync --steps "$STEPS" --data "$DATA")
row "1 ps + 1 worker, sync" "$one_sync samples/s" "$(ratio "$one_sync" "$base") of baseline" "+ the step token's round trip"
for w in 2 4; do
    for m in sync async; do
        v=$(best --ps 1 --workers $w --mode $m --steps "$STEPS" --data "$DATA")
        row "1 ps + $w workers, $m" "$v samples/s" "$(ratio "$v" "$base") of baseline" "2 cores shared by all tasks"
    done
done
echo "pull/push of a 4 MiB variable vs raw TCP loopback (same request/answer pattern)"
"$B/bench_net" "$D" 200 >"$TMP/net" 2>/dev/null
raw=$(awk '/raw_mib_s/{print $2}' "$TMP/net"); ps=$(awk '/ps_mib_s/{print $2}' "$TMP/net")
row "raw TCP loopback, 4 MiB each way (baseline)" "$raw MiB/s" "1.00" "goal: reference"
row "ps pull + push of a 4 MiB variable" "$ps MiB/s" "$(ratio "$ps" "$raw") of raw" "goal: >= 0.70"
# What the 1 ps + 1 worker figure can be at best without overlapping transfer and compute:
# a step moves the model both ways (407 KB each for MLP-128) at the raw loopback rate.
bound=$(python3 -c "
step = 64.0 / $base; xfer = 2 * 101770 * 4 / ($raw * 1048576)
print('%.2f' % (step / (step + xfer)))")
row "1 ps + 1 worker, bound set by loopback transfer" "$bound of baseline" "achieved $(ratio "$one" "$base") = $(python3 -c "print('%.0f%%' % (100 * $one / $base / $bound))") of bound" "pull, compute, push are sequential per step"
echo "instrumentation overhead (1 ps + 2 workers sync, softmax, best of 3 each, interleaved)"
off=0; on=0
for i in 1 2 3; do
    "$D" cluster --ps 1 --workers 2 --steps "$STEPS" --data "$DATA" --quiet --eval-every 0 >"$TMP/off.json" 2>/dev/null
    off=$(python3 -c "print(max($off, $(sps "$TMP/off.json")))")
    "$D" cluster --ps 1 --workers 2 --steps "$STEPS" --data "$DATA" --quiet --eval-every 0 --trace "$TMP/t.dptrace" >"$TMP/on.json" 2>/dev/null
    on=$(python3 -c "print(max($on, $(sps "$TMP/on.json")))")
done
row "events off (baseline)" "$off samples/s" "1.00" "goal: reference"
row "events on (--trace, hub recording)" "$on samples/s" "$(ratio "$on" "$off") of off" "goal: >= 0.97"
ev=$(python3 -c "import json; print(json.load(open('$TMP/on.json'))['events'])")
size=$(stat -c %s "$TMP/t.dptrace")
row "trace size" "$(python3 -c "print('%.2f' % ($size / $ev))") bytes/event" "$ev events, $size bytes" "zstd blocks"
echo "a stalled live viewer (subscribed, never reading) vs none: the run's speed"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$D" hub --listen "127.0.0.1:$port" --quiet >/dev/null 2>&1 &
HUBPID=$!
sleep 0.5
free_run=0; stall_run=0
for i in 1 2; do
    "$D" cluster --ps 1 --workers 2 --steps "$STEPS" --data "$DATA" --quiet --eval-every 0 --hub "127.0.0.1:$port" >"$TMP/h1.json" 2>/dev/null
    free_run=$(python3 -c "print(max($free_run, $(sps "$TMP/h1.json")))")
    "$BUILD/tests/tool_sub" "127.0.0.1:$port" --stall 120 & STALL=$!
    sleep 0.3
    "$D" cluster --ps 1 --workers 2 --steps "$STEPS" --data "$DATA" --quiet --eval-every 0 --hub "127.0.0.1:$port" >"$TMP/h2.json" 2>/dev/null
    stall_run=$(python3 -c "print(max($stall_run, $(sps "$TMP/h2.json")))")
    kill $STALL 2>/dev/null; wait $STALL 2>/dev/null
done
kill -INT $HUBPID; wait $HUBPID 2>/dev/null
row "streaming to a hub, no viewer (baseline)" "$free_run samples/s" "1.00" "goal: reference"
row "streaming to a hub with a stalled viewer" "$stall_run samples/s" "$(ratio "$stall_run" "$free_run") of no viewer" "goal: unaffected (~1.00)"
echo "hub throughput (2 emitter threads flooding one in-process hub)"
"$B/bench_hub" 500000 2 "$TMP/hub.dptrace" >"$TMP/hub" 2>/dev/null
nf=$(awk '/hub_nofile_events_s/{print $2}' "$TMP/hub"); tf=$(awk '/hub_trace_events_s/{print $2}' "$TMP/hub")
row "hub, merge + fan-out, no trace file (baseline)" "$nf events/s" "1.00" "goal: reference"
row "hub, merge + record to trace" "$tf events/s" "$(ratio "$tf" "$nf") of no-file" "zstd blocks, CRC, index"
for extra in bench_viz bench_sim; do
    if [ -x "$B/$extra" ]; then
        echo "$extra"
        BENCH_SIM_EXP_STEPS=${BENCH_SIM_EXP_STEPS:-100} "$B/$extra" >"$TMP/$extra.md" 2>"$TMP/$extra.err" || echo "  $extra failed: $(tail -n1 "$TMP/$extra.err")"
        sed 's/^/  /' "$TMP/$extra.md"
    fi
done
{
    echo "# Benchmarks"
    echo
    echo "Produced by \`make bench\` (bench/run.sh) on $(date -u +%Y-%m-%d), $(nproc) cores,"
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'). Figures are ratios against a"
    echo "baseline measured in the same run; absolute numbers vary with the machine's load."
    echo
    echo "| measurement | value | ratio | note |"
    echo "| --- | --- | --- | --- |"
    cat "$TMP/rows"
    if [ -s "$TMP/bench_viz.md" ]; then
        echo
        echo "### viewer (\`downpour view\` / \`render\`)"
        echo
        echo "| part | measurement | value | goal |"
        echo "| --- | --- | --- | --- |"
        cat "$TMP/bench_viz.md"
    fi
    [ -s "$TMP/bench_sim.md" ] && { echo; cat "$TMP/bench_sim.md"; }
} >"$OUT"
echo "wrote $OUT"
