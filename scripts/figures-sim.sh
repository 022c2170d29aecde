#!/usr/bin/env bash
# figures-sim.sh — prints, each with its label, the figures docs/simulator.md quotes that
# no test or bench prints: `downpour sim` runs and the real traces in tests/data. Counts
# and simulated times are deterministic (same seed, same numbers); the last section's
# times (CPU seconds, best of 3 runs each, on this machine) are printed as ratios to a
# baseline run made here. Takes about 30 s (2 shared cores).   usage: [BUILD=build] scripts/figures-sim.sh
set -eu
BUILD=${BUILD:-build}
D="$BUILD/downpour"
[ -x "$D" ] || { echo "figures-sim: $D missing (make BUILD=$BUILD)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
sim() { "$D" sim --quiet "$@" 2>/dev/null; }            # prints the summary JSON line
get() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(*[d[k] for k in sys.argv[1:]])" "$@"; }
chrome() { "$D" trace export --chrome "$2" "$1" >/dev/null 2>&1; }
# Per worker step from a Chrome export: pull phase (first pull_begin to last pull_end),
# push phase (likewise), and the sync step token's round trip (last push_end to step_end,
# in steps where the worker never waited at the barrier), means in us; and the mean
# staleness over apply events.
PHASES='
import json, sys, collections
ev = json.load(open(sys.argv[1])); ev = ev["traceEvents"] if isinstance(ev, dict) else ev
begin, span, push_end, step_end, waited, stale = {}, {}, {}, {}, set(), []
for e in ev:
    n, ph = e.get("name"), e.get("ph")
    if n in ("pull", "push") and ph == "b":
        begin[(e["pid"], n, e["id"])] = (e["ts"], e["args"]["step"])
    elif n in ("pull", "push") and ph == "e":
        t0, s = begin.pop((e["pid"], n, e["id"]))
        a, b = span.get((n, e["pid"], s), (t0, e["ts"]))
        span[(n, e["pid"], s)] = (min(a, t0), max(b, e["ts"]))
        if n == "push": push_end[(e["pid"], s)] = max(push_end.get((e["pid"], s), 0), e["ts"])
    elif n == "step_end": step_end[(e["pid"], e["args"]["step"])] = e["ts"]
    elif n == "barrier_wait": waited.add((e["pid"], e["args"]["step"]))
    elif n == "apply": stale.append(e["args"]["staleness"])
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
pull = mean([b - a for (n, p, s), (a, b) in span.items() if n == "pull"])
push = mean([b - a for (n, p, s), (a, b) in span.items() if n == "push"])
tok = mean([step_end[k] - t for k, t in push_end.items() if k in step_end and k not in waited])
print("%.0f %.0f %.0f %.2f" % (pull, push, tok, mean(stale)))
'

echo "== validation: the step token alone (docs/simulator.md, Validation, second row)"
s=$(sim --ps 1 --workers 1 --model-bytes 4 --compute constant:mean=1ns --latency 1ms --steps 50 | get mean_step_s)
echo "1 ps, 1 worker, smallest MLP (--model-bytes 4), ~0 compute, L = 1 ms: mean step $(python3 -c "print('%.3f' % ($s * 1e3))") ms (closed form 6L = 6 ms)"

echo "== trace levels: events written, sample vs full (the run's numbers must not change)"
levels() { # label, sample level, sim flags...
    local label=$1 lvl=$2; shift 2
    read -r es gs ms < <(sim "$@" --trace-level "$lvl" --trace "$TMP/s.dptrace" | get events global_step mean_step_s)
    read -r ef gf mf < <(sim "$@" --trace-level full --trace "$TMP/f.dptrace" | get events global_step mean_step_s)
    echo "$label: $lvl $es events, full $ef: $(python3 -c "print('%.1f' % ($ef / $es))")x fewer; same global step and mean step: $([ "$gs $ms" = "$gf $mf" ] && echo yes || echo NO)"
}
levels "2 ps, 200 workers, 5 steps (test_determinism's case)" sample:4 \
    --ps 2 --workers 200 --steps 5 --compute lognormal:mean=100ms,sigma=0.5 --straggler worker:2x3 --seed 2
levels "100 ps, 1,000 workers, 100 MB, 5 steps" sample:16 --ps 100 --workers 1000 --model-bytes 100MB --steps 5

echo "== twins: ps grouped by the bytes of their shards (100 ps, 100 MB)"
sim --ps 100 --workers 2 --model-bytes 100MB --steps 1 --trace-level full --trace "$TMP/v.dptrace" >/dev/null
chrome "$TMP/v.dptrace" "$TMP/v.json"
python3 - "$TMP/v.json" <<'EOF'
import json, sys, collections
ev = json.load(open(sys.argv[1])); ev = ev["traceEvents"] if isinstance(ev, dict) else ev
size = {e["args"]["var"]: e["args"]["bytes"] for e in ev if e.get("name") == "var_define"}
held = collections.Counter()
for e in ev:
    if e.get("name") == "var_place" and e["args"]["var"] != "global_step":
        held[e["args"]["peer"]] += size[e["args"]["var"]]
classes = sorted(collections.Counter(held.values()).values(), reverse=True)
print("%d classes of %s ps" % (len(classes), ", ".join(map(str, classes))))
EOF

echo "== against the real runtime (--calibrate-from tests/data; real = the trace, sim = its calibrated rerun)"
t=tests/data/real_async_2ps_4w.trace
chrome "$t" "$TMP/ra.json"
real=$(python3 -c "$PHASES" "$TMP/ra.json" | cut -d' ' -f4)
simst=$(sim --calibrate-from "$t" | get mean_staleness)
echo "2 ps, 4 workers, async: mean staleness real $real, sim $(python3 -c "print('%.2f' % $simst)")"
t=tests/data/real_sync_1ps_2w.trace
chrome "$t" "$TMP/rs.json"
sim --calibrate-from "$t" --trace "$TMP/ss.dptrace" >/dev/null
chrome "$TMP/ss.dptrace" "$TMP/ss.json"
read -r rpull rpush rtok _ < <(python3 -c "$PHASES" "$TMP/rs.json")
read -r spull spush stok _ < <(python3 -c "$PHASES" "$TMP/ss.json")
echo "1 ps, 2 workers, sync: pull / push phase real $rpull / $rpush us, sim $spull / $spush us; step token round trip real $rtok us, sim $stok us"

echo "== worker NICs as bottleneck (1,000 workers x 100 ps, 100 MB, exponential compute;"
echo "   CPU seconds of the sim process, user + sys, best of 3 runs each, per rate solve: steadier than wall time on a shared machine)"
nic() { # prints the best CPU time of 3 runs and the (deterministic) rate solves
    local best=0 cpu t
    for i in 1 2 3; do
        t=$( { TIMEFORMAT='%U %S'; time sim --ps 100 --workers 1000 --model-bytes 100MB \
                 --compute exponential:mean=100ms "$@" >"$TMP/nic.json"; } 2>&1 )
        cpu=$(python3 -c "print(sum(map(float, '$t'.split())))")
        best=$(python3 -c "print('%.3f' % ($cpu if $best == 0 else min($best, $cpu)))")
    done
    echo "$best $(get net_solves <"$TMP/nic.json")"
}
read -r c0 n0 < <(nic --steps 30)
read -r c1 n1 < <(nic --steps 3 --worker-bandwidth 1Gbit)
read -r c2 n2 < <(nic --steps 3000 --mode async)
x() { python3 -c "print('%.1f' % ($1))"; }
echo "sync, 30 steps, 10 Gbit NICs (baseline): $c0 s for $n0 rate solves: $(x "$c0 * 1e6 / $n0") us per solve"
echo "sync, 3 steps, 1 Gbit worker NICs: $c1 s for $n1 rate solves: $(x "$c1 * 1e6 / $n1") us per solve, $(x "($c1 / $n1) / ($c0 / $n0)")x the baseline's"
echo "async, 3,000 global steps (3 pushes a worker), 10 Gbit: $c2 s for $n2 rate solves: $(x "$c2 * 1e6 / $n2") us per solve, $(x "($c2 / $n2) / ($c0 / $n0)")x the baseline's"
