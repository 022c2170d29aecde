#!/usr/bin/env bash
# it_pace.sh — `cluster --pace T`: every worker step lasts at least T, the rest of T is
# waited out after compute and before the push as its own "paced" span (never compute,
# never network), the summary reports throughput with and without it, and without
# --pace (or with --pace 0) nothing of it shows. Durations are read from the trace's
# Chrome export; the lower bound T is what the feature guarantees, not a speed threshold.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 32 --quiet"
RUN="cluster --ps 1 --workers 2 --steps 20 $SYN"
PACE_MS=50
BATCH=64   # the default --batch: samples = steps * 64

# facts TRACE.json: one JSON line of what the Chrome export says about the workers' steps.
facts() {
    python3 - "$1" "$PACE_MS" <<'PY'
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pace = float(sys.argv[2]) * 1000                     # us, as Chrome times are
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
task = {p: int(re.fullmatch(r"/job:worker/replica:0/task:(\d+)", n).group(1))
        for p, n in names.items() if re.fullmatch(r"/job:worker/replica:0/task:\d+", n)}
dev = {p: int(re.match(r"/job:worker/replica:0/task:(\d+)/", n).group(1))
       for p, n in names.items() if re.match(r"/job:worker/replica:0/task:\d+/device:.* Compute$", n)}
W = {}
def w(i): return W.setdefault(i, {"pull": {}, "push": {}, "pushes": {}, "end": {}, "comp": [], "paced": []})
for e in ev:
    st = e.get("args", {}).get("step")
    if e.get("pid") in task:
        d = w(task[e["pid"]])
        if e.get("ph") == "b" and e["name"] in ("pull", "push"):
            d[e["name"]][st] = min(d[e["name"]].get(st, e["ts"]), e["ts"])
            if e["name"] == "push": d["pushes"].setdefault(st, []).append(e["ts"])
        elif e.get("ph") == "i" and e["name"] == "step_end":
            d["end"][st] = e["ts"]
        elif e.get("ph") == "X" and e["name"] == "paced":
            d["paced"].append((e["ts"], e["ts"] + e["dur"], st))
    elif e.get("pid") in dev and e.get("ph") == "X" and e["name"] == "compute":
        w(dev[e["pid"]])["comp"].append((e["ts"], e["ts"] + e["dur"], st))
steps = short = paced = mismatch = overlap = misplaced = 0
min_step = min_gap = float("inf")
paced_max = 0.0
for i, d in W.items():
    ends = sorted(d["end"].values())
    min_gap = min([min_gap] + [b - a for a, b in zip(ends, ends[1:])])
    comp_end = {s: b for a, b, s in d["comp"]}
    per_step = {}
    for a, b, s in d["paced"]:
        per_step[s] = per_step.get(s, 0) + 1
        # after this step's compute, before its first push after it (the gradients done
        # early go during the compute: pipelining); never over any compute
        ce = comp_end.get(s, float("inf"))
        after = min([t for t in d["pushes"].get(s, []) if t >= ce] or [-1])
        if not (ce <= a and b <= after): misplaced += 1
        overlap += sum(1 for ca, cb, _ in d["comp"] if ca < b and a < cb)
    paced += len(d["paced"])
    paced_max = max(paced_max, sum(b - a for a, b, _ in d["paced"]) / 1e6)
    for s, t_end in d["end"].items():
        steps += 1
        min_step = min(min_step, t_end - d["pull"][s])
        pre = comp_end[s] - d["pull"][s]          # the step's time before the pacing point
        n = per_step.get(s, 0)
        short += pre < pace
        # a paced span exactly when the step was shorter than the pace (0.5 ms either side
        # of it may go either way: the worker's clock readings sit a few us from the events')
        if n > 1 or (pre < pace - 500 and n != 1) or (pre > pace + 500 and n != 0): mismatch += 1
print(json.dumps({"workers": len(W), "steps": steps, "short_steps": short, "paced": paced,
                  "mismatch": mismatch, "overlap": overlap, "misplaced": misplaced,
                  "min_step_ms": min_step / 1000, "min_gap_ms": min_gap / 1000,
                  "paced_sum_s": paced_max}))
PY
}
# keys SUMMARY: the summary's keys, sorted, one line.
keys() { python3 -c "import json; print(' '.join(sorted(json.loads([l for l in open('$1') if l.startswith('{')][-1]))))"; }

# ---- a paced run -----------------------------------------------------------------------
$DOWNPOUR $RUN --pace ${PACE_MS}ms --trace "$TMP/p.dptrace" >"$TMP/p.json" 2>"$TMP/p.err"
check "paced run exits 0" test $? -eq 0
$DOWNPOUR trace export --chrome "$TMP/p.chrome.json" "$TMP/p.dptrace" >/dev/null 2>&1
facts "$TMP/p.chrome.json" >"$TMP/p.facts" 2>"$TMP/p.facts.err"
F() { json "$TMP/p.facts" "$1"; }
steps=$(F steps)
check "paced run: the trace has 2 workers' steps (2 workers, $steps steps, >= 20)" \
    bash -c "[ '$(F workers)' = 2 ] && [ '$steps' -ge 20 ]"
check "every worker step, first pull to step_end, lasts >= ${PACE_MS} ms (shortest $(F min_step_ms) ms)" \
    fcmp "$(F min_step_ms)" '>=' $PACE_MS
check "consecutive step_end events of a worker are >= ${PACE_MS} ms apart (closest $(F min_gap_ms) ms)" \
    fcmp "$(F min_gap_ms)" '>=' $PACE_MS
check "one paced span per step shorter than the pace before its push, none for the others ($(F paced) spans, $(F short_steps) short steps of $steps, $(F mismatch) steps wrong)" \
    bash -c "[ '$(F mismatch)' = 0 ] && [ '$(F paced)' -ge 1 ]"
check "paced spans sit after their step's compute and before its first push ($(F misplaced) misplaced)" \
    test "$(F misplaced)" = 0
check "paced spans are disjoint from compute spans ($(F overlap) overlaps)" test "$(F overlap)" = 0
check "trace info counts paced_begin = paced_end = $(F paced) spans" \
    bash -c "[ '$(trace_count "$TMP/p.dptrace" paced_begin)' = '$(F paced)' ] && [ '$(trace_count "$TMP/p.dptrace" paced_end)' = '$(F paced)' ]"
ps=$(json "$TMP/p.json" paced_s)
check "summary paced_s $ps = the most paced time of one worker in the trace, $(F paced_sum_s) s (0.1 ms)" \
    python3 -c "import sys; sys.exit(0 if abs($ps - $(F paced_sum_s)) <= 1e-4 else 1)"
check "summary pace_s = 0.05" fcmp "$(json "$TMP/p.json" pace_s)" '==' 0.05
sps=$(json "$TMP/p.json" samples_per_s); unp=$(json "$TMP/p.json" samples_per_s_unpaced)
check "samples_per_s_unpaced $unp > samples_per_s $sps" fcmp "$unp" '>' "$sps"
# samples / max_i(train_i - paced_i) <= samples / (max train - max paced), train = samples / samples_per_s
samples=$(( steps * BATCH ))
check "samples_per_s_unpaced <= samples / (samples / samples_per_s - paced_s) ($samples samples)" \
    python3 -c "import sys; s=$samples; sys.exit(0 if $unp <= s / (s / $sps - $ps) * (1 + 1e-4) else 1)"

# ---- without --pace, and with --pace 0 -------------------------------------------------
$DOWNPOUR $RUN --trace "$TMP/n.dptrace" >"$TMP/n.json" 2>/dev/null
check "unpaced run exits 0" test $? -eq 0
check "unpaced run: no paced events in the trace" \
    bash -c "[ '$(trace_count "$TMP/n.dptrace" paced_begin)' = 0 ] && [ '$(trace_count "$TMP/n.dptrace" paced_end)' = 0 ]"
want=$(keys "$TMP/p.json" | tr ' ' '\n' | grep -vxE 'pace_s|paced_s|samples_per_s_unpaced' | tr '\n' ' ' | sed 's/ $//')
check "unpaced summary: the paced run's keys less pace_s, paced_s, samples_per_s_unpaced" \
    test "$(keys "$TMP/n.json")" = "$want"
$DOWNPOUR $RUN --pace 0 --trace "$TMP/z.dptrace" >"$TMP/z.json" 2>/dev/null
check "--pace 0 run exits 0" test $? -eq 0
check "--pace 0 is off: no paced events, the unpaced summary's keys" \
    bash -c "[ '$(trace_count "$TMP/z.dptrace" paced_begin)' = 0 ] && [ '$(keys "$TMP/z.json")' = '$want' ]"
# ---- pacing never hides a straggler ----------------------------------------------------
# Worker 1 is slowed 4x: with --pace T its steps last at least 4T (T for the others), so the
# straggler still shows in a paced run. Shortest step per worker from the Chrome export.
$DOWNPOUR cluster --ps 1 --workers 2 --steps 16 --mode async $SYN --slow-worker 1:4 --pace 30ms \
    --trace "$TMP/s.dptrace" >"$TMP/s.json" 2>/dev/null
check "paced run with a straggler exits 0" test $? -eq 0
$DOWNPOUR trace export --chrome "$TMP/s.chrome.json" "$TMP/s.dptrace" >/dev/null 2>&1
read -r w0 w1 <<<"$(python3 - "$TMP/s.chrome.json" <<'PY'
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
task = {p: int(m.group(1)) for p, n in names.items() if (m := re.fullmatch(r"/job:worker/replica:0/task:(\d+)", n))}
pull, end = {}, {}
for e in ev:
    if e.get("pid") not in task: continue
    k, st = task[e["pid"]], e.get("args", {}).get("step")
    if e.get("ph") == "b" and e["name"] == "pull": pull.setdefault(k, {}).setdefault(st, e["ts"])
    if e.get("ph") == "i" and e["name"] == "step_end": end.setdefault(k, {})[st] = e["ts"]
print(*(min(t - pull[k][s] for s, t in end[k].items()) / 1000 for k in (0, 1)))
PY
)"
check "the straggler's steps last >= 4 x 30 ms (shortest $w1 ms)" fcmp "${w1:-0}" '>=' 120
check "the other worker's steps last >= 30 ms (shortest $w0 ms)" fcmp "${w0:-0}" '>=' 30
done_tests
