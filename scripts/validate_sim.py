#!/usr/bin/env python3
"""validate_sim.py — `make validate-sim`: the simulator's fidelity as a measured property
of a matrix of real runs (issue 16; docs/simulator.md, "Validation matrix").

For each row it records a real run (`downpour cluster ... --trace T`, a few hundred steps),
calibrates from that trace and simulates the same flags (self-prediction; all but --data
and --straggler, which the calibration measures), and for the
prediction rows calibrates from one run and simulates another configuration's flags
(2 -> 4 workers, 2 -> 4 ps), comparing with that configuration's own real run. It
compares mean step, samples/s, mean staleness and dropped gradients, against the goals:
self-prediction within 5 % of mean step, prediction within 10 %, staleness within 10 % or
0.3 steps, dropped gradients within 10 % (or 2 when few). Every row is reported, the ones
that miss with what missed and its likely cause (by rule: causes()). Output: a table on stdout and, with --doc FILE, written
between the markers <!-- validate-sim:begin --> and <!-- validate-sim:end --> of FILE.

  scripts/validate_sim.py DOWNPOUR_BINARY WORKDIR [--doc docs/simulator.md] [--rows a,b]
                          [--save DIR]      also keep each real trace and summary in DIR
                          [--from DIR]      no real runs: the ones kept in DIR (--save) are
                                            the matrix's, simulated again with this build
                                            (each with its recorded --steps)
                          [--steps-scale K] every row's steps times K (default 1): longer
                                            runs, less noise, the chief's evaluations in
                                            (every 500 global steps) from K = 2
  scripts/validate_sim.py DOWNPOUR_BINARY --replay DIR
                          no real runs: simulate the traces kept in DIR (tests/data/validate,
                          made with --save) against their kept summaries; prints ok / FAIL
                          per row and "N passed, N failed, 0 skipped"; exit 1 on a miss
"""
import shutil
import json
import os
import subprocess
import sys
import time

FASHION = "/usr/share/datasets/fashion-mnist"
SYN = ["--data", "synthetic"]

# name, flags of the real run (and of its simulation), steps
ROWS = [
    ("1ps-1w-sync", ["--ps", "1", "--workers", "1", "--mode", "sync"] + SYN, 300),
    ("1ps-2w-sync", ["--ps", "1", "--workers", "2", "--mode", "sync"] + SYN, 300),
    ("1ps-4w-sync", ["--ps", "1", "--workers", "4", "--mode", "sync"] + SYN, 200),
    ("2ps-2w-sync", ["--ps", "2", "--workers", "2", "--mode", "sync"] + SYN, 300),
    ("2ps-4w-sync", ["--ps", "2", "--workers", "4", "--mode", "sync"] + SYN, 200),
    ("4ps-2w-sync", ["--ps", "4", "--workers", "2", "--mode", "sync"] + SYN, 300),
    ("4ps-4w-sync", ["--ps", "4", "--workers", "4", "--mode", "sync"] + SYN, 200),
    ("1ps-2w-async", ["--ps", "1", "--workers", "2", "--mode", "async"] + SYN, 400),
    ("1ps-4w-async", ["--ps", "1", "--workers", "4", "--mode", "async"] + SYN, 400),
    ("2ps-4w-async", ["--ps", "2", "--workers", "4", "--mode", "async"] + SYN, 400),
    ("1ps-4w-ssp", ["--ps", "1", "--workers", "4", "--mode", "ssp", "--staleness", "2"] + SYN, 300),
    ("2ps-2w-sync-part2", ["--ps", "2", "--workers", "2", "--mode", "sync", "--partition", "2"] + SYN, 300),
    ("2ps-4w-async-part4", ["--ps", "2", "--workers", "4", "--mode", "async", "--partition", "4"] + SYN, 400),
    ("1ps-4w-sync-backup1", ["--ps", "1", "--workers", "4", "--mode", "sync", "--backup-workers", "1"] + SYN, 200),
    ("1ps-2w-sync-slow", ["--ps", "1", "--workers", "2", "--mode", "sync", "--straggler", "worker:1x3"] + SYN, 200),
    ("1ps-2w-sync-fashion", ["--ps", "1", "--workers", "2", "--mode", "sync", "--data", FASHION], 300),
    ("2ps-2w-async-fashion", ["--ps", "2", "--workers", "2", "--mode", "async", "--data", FASHION], 400),
]
# prediction: calibrate from the first, simulate the second's flags, compare with its real run
PREDICTIONS = [
    ("1ps-2w-sync", "1ps-4w-sync", "2 -> 4 workers"),
    ("2ps-2w-sync", "4ps-2w-sync", "2 -> 4 ps"),
    ("1ps-2w-async", "1ps-4w-async", "2 -> 4 workers"),
]
GOAL_SELF, GOAL_PRED, GOAL_STALE, GOAL_STALE_ABS, GOAL_DROP = 0.05, 0.10, 0.10, 0.3, 0.10


def summary(out):
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no summary line")


def run(cmd, timeout=300):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
    return summary(p.stdout), time.time() - t


def sim_flags(flags):
    """The run's flags as the simulator takes them: the same cluster and update rule. Not
    --data (the real run's business) nor --straggler (calibration measures each worker's
    speed: the slow worker is in the fit already)."""
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
            continue
        if f in ("--data", "--straggler"):
            skip = True
            continue
        out.append(f)
    return out


def rel(sim, real):
    return (sim - real) / real if real else (0.0 if sim == real else float("inf"))


def verdict(kind, real, sim):
    goal = GOAL_SELF if kind == "self" else GOAL_PRED
    misses = []
    e = rel(sim["mean_step_s"], real["mean_step_s"])
    if abs(e) > goal:
        misses.append("mean step %+.1f%% (goal %d%%)" % (100 * e, 100 * goal))
    rs, ss = real.get("mean_staleness", 0), sim.get("mean_staleness", 0)
    if abs(ss - rs) > max(GOAL_STALE * abs(rs), GOAL_STALE_ABS):
        misses.append("staleness %.2f vs %.2f" % (ss, rs))
    rd, sd = real.get("dropped_gradients", 0), sim.get("dropped_gradients", 0)
    if abs(sd - rd) > max(GOAL_DROP * rd, 2):
        misses.append("dropped %d vs %d" % (sd, rd))
    return misses


def slow_share(binary, trace):
    """The share of a run's time spent in global steps that took more than twice the
    median step (from the trace's global_step counter), or None when it cannot be read."""
    p = subprocess.run([binary, "trace", "export", "--chrome", "-", trace], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        events = json.loads(p.stdout)
    except ValueError:
        return None
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    ts = sorted(e["ts"] for e in events if e.get("name") == "global_step" and e.get("ph") == "C")
    dt = sorted(b - a for a, b in zip(ts, ts[1:]))
    if len(dt) < 10 or sum(dt) <= 0:
        return None
    med = dt[len(dt) // 2]
    return sum(d for d in dt if d > 2 * med) / sum(dt)


def causes(real, sim, misses, slow=None):
    """The likely cause of each kind of miss, by rule (docs/simulator.md, "Where it still
    misses", says why): tasks sharing fewer cores, workers drifting apart, late workers.
    slow: (real, simulated) shares of the time in steps over twice the median, measured,
    for a mean-step miss."""
    cores = sim.get("cores_per_host", 0) or 0
    tasks = real.get("ps", 0) + real.get("workers", 0)
    out = []
    if any(m.startswith("mean step") for m in misses):
        out.append("%d tasks on %d cores: the scheduler, not modelled" % (tasks, cores) if cores and tasks > cores
                   else "%d tasks on %d cores: run-to-run spread" % (tasks, cores))
        if slow and None not in slow:
            out.append("steps over twice the median: %.0f%% of the real time, %.0f%% simulated"
                       % (100 * slow[0], 100 * slow[1]))
    if any(m.startswith("staleness") for m in misses):
        out.append("workers drift unevenly on shared cores")
    if any(m.startswith("dropped") for m in misses):
        out.append("a real late worker skips steps")
    return out


def fmt_row(name, kind, real, sim, misses, slow=None):
    e_step = rel(sim["mean_step_s"], real["mean_step_s"])
    e_sps = rel(sim["samples_per_s"], real["samples_per_s"])
    return ("| %s | %s | %.3f | %.3f | %+.1f%% | %.0f | %.0f | %+.1f%% | %.2f / %.2f | %d / %d | %s |"
            % (name, kind, 1e3 * real["mean_step_s"], 1e3 * sim["mean_step_s"], 100 * e_step,
               real["samples_per_s"], sim["samples_per_s"], 100 * e_sps,
               real.get("mean_staleness", 0), sim.get("mean_staleness", 0),
               real.get("dropped_gradients", 0), sim.get("dropped_gradients", 0),
               "ok" if not misses else "**misses**: " + "; ".join(misses) +
               " (likely: " + "; ".join(causes(real, sim, misses, slow)) + ")"))


def slow_shares(binary, real_trace, sim_cmd, work, misses):
    """For a mean-step miss: the real run's and its simulation's slow-step shares (the
    simulation run again with --trace into work)."""
    if not any(m.startswith("mean step") for m in misses) or "--mode" not in sim_cmd \
            or sim_cmd[sim_cmd.index("--mode") + 1] != "sync":
        return None   # async global steps are single pushes: their spread says nothing here
    st = os.path.join(work, "slow-sim.dptrace")
    try:
        run(sim_cmd + ["--trace", st])
    except RuntimeError:
        return None
    return slow_share(binary, real_trace), slow_share(binary, st)


def replay(binary, kept):
    """The make-test subset: kept traces and summaries, simulated again."""
    flags_of = {n: f for n, f, _ in ROWS}
    steps_of = {n: s for n, _, s in ROWS}
    names = sorted(f[:-len(".json")] for f in os.listdir(kept) if f.endswith(".json"))
    passed = failed = 0
    real = {n: json.load(open(os.path.join(kept, n + ".json"))) for n in names}
    # SUBSET names the checks ("self NAME", "predict FROM TO"); without it, every kept run
    # and every prediction between kept runs.
    listing = os.path.join(kept, "SUBSET")
    if os.path.exists(listing):
        cases = []
        for i, line in enumerate(open(listing), 1):
            w = line.split("#")[0].split()
            if not w:
                continue
            if w[0] == "self" and len(w) == 2 and w[1] in real:
                cases.append((w[1], w[1], "self"))
            elif w[0] == "predict" and len(w) == 3 and w[1] in real and w[2] in real:
                cases.append((w[1], w[2], "prediction"))
            else:
                raise SystemExit("validate_sim: %s:%d: not 'self NAME' or 'predict FROM TO' of kept runs" % (listing, i))
    else:
        cases = [(n, n, "self") for n in names]
        cases += [(src, dst, "prediction") for src, dst, _ in PREDICTIONS if src in real and dst in real]
    for src, dst, kind in cases:
        extra = sim_flags(flags_of[dst]) + ["--steps", str(real[dst].get("steps", steps_of[dst]))]
        what = dst if kind == "self" else "%s predicted from %s" % (dst, src)
        try:
            sim, _ = run([binary, "sim", "--calibrate-from", os.path.join(kept, src + ".dptrace"), "--quiet"] + extra)
        except RuntimeError as e:   # a kept summary without its trace, a trace it cannot read
            failed += 1
            print("FAIL %s: %s" % (what, str(e).splitlines()[-1][-300:]))
            continue
        misses = verdict(kind, real[dst], sim)
        line = "%s (real %.3f ms, sim %.3f ms, %+.1f%%)" % (
            what, 1e3 * real[dst]["mean_step_s"], 1e3 * sim["mean_step_s"],
            100 * rel(sim["mean_step_s"], real[dst]["mean_step_s"]))
        if misses:
            failed += 1
            print("FAIL %s: %s" % (line, "; ".join(misses)))
        else:
            passed += 1
            print("ok   %s" % line)
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed or not passed else 0


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    if argv[2] == "--replay" and len(argv) == 4:
        return replay(argv[1], argv[3])
    binary, work = argv[1], argv[2]
    doc, only, save, kept, scale = None, None, None, None, 1.0
    rest = argv[3:]
    while rest:
        if rest[0] == "--doc" and len(rest) > 1:
            doc, rest = rest[1], rest[2:]
        elif rest[0] == "--rows" and len(rest) > 1:
            only, rest = set(rest[1].split(",")), rest[2:]
        elif rest[0] == "--save" and len(rest) > 1:
            save, rest = rest[1], rest[2:]
        elif rest[0] == "--from" and len(rest) > 1:
            kept, rest = rest[1], rest[2:]
        elif rest[0] == "--steps-scale" and len(rest) > 1:
            try:
                scale = float(rest[1])
            except ValueError:
                scale = 0
            if not scale > 0:
                raise SystemExit("validate_sim: --steps-scale %r: a number above 0" % rest[1])
            rest = rest[2:]
        else:
            raise SystemExit("validate_sim: unknown argument %r" % rest[0])
    os.makedirs(work, exist_ok=True)
    rows = [r for r in ROWS if (not only or r[0] in only)
            and (not kept or os.path.exists(os.path.join(kept, r[0] + ".json")))]
    flags_of = {n: f for n, f, _ in ROWS}
    steps_of = {n: int(s * scale) for n, _, s in ROWS}
    real, trace, lines, total_t = {}, {}, [], time.time()
    for i, (name, flags, _) in enumerate(rows):
        steps = steps_of[name]
        trace[name] = os.path.join(kept or work, name + ".dptrace")
        if kept:
            real[name], secs = json.load(open(os.path.join(kept, name + ".json"))), 0
            steps = steps_of[name] = real[name].get("steps", steps)
        else:
            cmd = [binary, "cluster"] + flags + ["--steps", str(steps), "--quiet", "--trace", trace[name]]
            real[name], secs = run(cmd)
        if save:
            os.makedirs(save, exist_ok=True)
            shutil.copy(trace[name], os.path.join(save, name + ".dptrace"))
            keep = dict(real[name], command="downpour cluster " + " ".join(flags + ["--steps", str(steps)]))
            keep.pop("trace", None)
            with open(os.path.join(save, name + ".json"), "w") as f:
                json.dump(keep, f, indent=1, sort_keys=True)
        sim_cmd = [binary, "sim", "--calibrate-from", trace[name], "--quiet"] + sim_flags(flags) + ["--steps", str(steps)]
        sim, _ = run(sim_cmd)
        misses = verdict("self", real[name], sim)
        lines.append(fmt_row(name, "self", real[name], sim, misses,
                             slow_shares(binary, trace[name], sim_cmd, work, misses)))
        print("[%2d/%d] %-22s real %.3f ms, sim %.3f ms (%+.1f%%)%s  (%.0f s)" % (
            i + 1, len(rows), name, 1e3 * real[name]["mean_step_s"], 1e3 * sim["mean_step_s"],
            100 * rel(sim["mean_step_s"], real[name]["mean_step_s"]),
            "" if not misses else "  misses: " + "; ".join(misses), secs), file=sys.stderr)
    for src, dst, what in PREDICTIONS:
        if src not in real or dst not in real:
            continue
        sim_cmd = ([binary, "sim", "--calibrate-from", trace[src], "--quiet"] + sim_flags(flags_of[dst])
                   + ["--steps", str(steps_of[dst])])
        sim, _ = run(sim_cmd)
        misses = verdict("prediction", real[dst], sim)
        lines.append(fmt_row(dst, "from %s (%s)" % (src, what), real[dst], sim, misses,
                             slow_shares(binary, trace[dst], sim_cmd, work, misses)))
        print("predict %s from %s: real %.3f ms, sim %.3f ms (%+.1f%%)" % (
            dst, src, 1e3 * real[dst]["mean_step_s"], 1e3 * sim["mean_step_s"],
            100 * rel(sim["mean_step_s"], real[dst]["mean_step_s"])), file=sys.stderr)
    missed = sum(1 for l in lines if "**misses**" in l)
    origin = ("`make validate-sim` (scripts/validate_sim.py)" if not kept else
              "The real runs of one `make validate-sim` kept with `--save DIR`, simulated again with this build "
              "(`scripts/validate_sim.py DOWNPOUR WORK --from DIR`),")
    header = [
        origin + " on %s, %d cores; %d rows, %d within the goals, %d "
        "missing; %.0f s in all. Real: `downpour cluster FLAGS --steps N --trace T`; self-prediction: "
        "`downpour sim --calibrate-from T`; prediction: `downpour sim --calibrate-from T_FROM FLAGS`. "
        "Mean step in ms, real / simulated staleness and dropped gradients. Samples/s are each "
        "summary's own: the real one over the workers' whole training loops, their start included "
        "(the tasks start tens of ms apart, which runs of 0.2 to 0.6 s make large), the simulated one "
        "over the simulated time; the mean step, between global steps, compares like with like and is "
        "the figure the goals hold. A miss names its likely cause, by rule: more tasks than cores, "
        "workers drifting apart, late workers skipping steps (\"Where it still misses\", below); "
        "a sync row's mean-step miss also gives, measured on both traces, the share of the run's "
        "time spent in global steps over twice the median step (a real run's share comes from "
        "steps the machine held up: another process, the VM's host)."
        % (os.uname().nodename if os.environ.get("VALIDATE_SIM_HOSTNAME") else "this machine",
           os.cpu_count(), len(lines), len(lines) - missed, missed, time.time() - total_t),
        "",
        "| run | kind | real step | sim step | error | real samples/s | sim samples/s | error | staleness | dropped | goals |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    table = "\n".join(header + lines)
    print(table)
    if doc:
        text = open(doc).read()
        b, e = "<!-- validate-sim:begin -->", "<!-- validate-sim:end -->"
        if b not in text or e not in text:
            raise SystemExit("validate_sim: %s has no %s ... %s markers" % (doc, b, e))
        text = text[:text.index(b) + len(b)] + "\n" + table + "\n" + text[text.index(e):]
        open(doc, "w").write(text)
        print("validate_sim: table written to %s" % doc, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
