#!/usr/bin/env python3
"""check_chrome.py — checks a `downpour trace export --chrome` file against the rules of
TensorFlow's timeline convention that Perfetto needs: valid JSON; process_name and
thread_name metadata; X slices with dur and no partial overlap on one thread; async b/e
pairs balanced per id; flows with numeric ids, each s matched by an f; C counters for
global step, loss and staleness; with DURATION_S (the "duration_s" of `downpour trace
info --json` for the same trace), that ts is in microseconds: the span from the first to
the last event's ts is DURATION_S * 1e6 (within 1% or 1 us; ms would be 1000x short).
Usage: check_chrome.py FILE.json [DURATION_S]. Prints one line per failed rule; exits 1
if any."""
import json, sys
from collections import defaultdict

if len(sys.argv) not in (2, 3):
    sys.exit("usage: check_chrome.py FILE.json [DURATION_S]")
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
bad = []
names = {(e["pid"], e.get("tid")) for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
procs = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
slices = defaultdict(list)
asyncs = defaultdict(int)
flows = defaultdict(lambda: [0, 0])
counters = set()
for e in ev:
    ph = e.get("ph")
    if ph in ("X", "b", "e", "s", "f", "C") and e["pid"] not in procs:
        bad.append("pid %s has no process_name" % e["pid"])
    if ph == "X":
        if "dur" not in e:
            bad.append("X slice without dur: %s" % e.get("name"))
        slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e.get("dur", 0)))
        if (e["pid"], e["tid"]) not in names:
            bad.append("thread %s/%s has no thread_name" % (e["pid"], e["tid"]))
    elif ph in ("b", "e"):
        asyncs[(e.get("cat"), e["id"], e["name"])] += 1 if ph == "b" else -1
    elif ph in ("s", "f"):
        if not isinstance(e.get("id"), int):
            bad.append("flow id %r is not numeric" % (e.get("id"),))
        flows[e.get("id")][0 if ph == "s" else 1] += 1
    elif ph == "C":
        counters.add(e["name"])
for key, spans in slices.items():
    spans.sort()
    stack = []
    for a, b in spans:
        while stack and stack[-1] <= a:
            stack.pop()
        if stack and b > stack[-1] + 1e-6:
            bad.append("partially overlapping X slices on %s: [%s, %s] crosses %s" % (key, a, b, stack[-1]))
            break
        stack.append(b)
for k, v in asyncs.items():
    if v != 0:
        bad.append("async pair %s unbalanced (%+d)" % (k, v))
        break
for k, (s_, f_) in flows.items():
    if s_ != 1 or f_ != 1:
        bad.append("flow %s has %d starts and %d ends" % (k, s_, f_))
        break
low = " ".join(sorted(counters)).lower()
for want in ("global", "loss", "stale"):
    if want not in low:
        bad.append("no counter for %s (have: %s)" % (want, sorted(counters)))
if not flows:
    bad.append("no flows")
if len(sys.argv) == 3:
    want_us = float(sys.argv[2]) * 1e6
    ts = [e["ts"] for e in ev if e.get("ph") != "M"]
    span = max(ts) - min(ts) if ts else 0.0
    if abs(span - want_us) > max(1.0, 0.01 * want_us):
        bad.append("ts span %.3f us, want %.3f us (the trace's %s s): ts not in microseconds?"
                   % (span, want_us, sys.argv[2]))
for b in bad[:20]:
    print(b)
print("chrome export: %d events, %d slices threads, %d flows, %d rule violations" % (len(ev), len(slices), len(flows), len(bad)))
sys.exit(1 if bad else 0)
