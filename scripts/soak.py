#!/usr/bin/env python3
"""soak.py — `make soak`: 100 random kill / restart events of workers and ps across one
run of a hand-started cluster (downpour task ×6 and a hub), then checks what issue 14
asks of it:

  * the run completes (every worker exits 0, the chief's final evaluation is at --steps);
  * the global step never goes backwards except to a checkpoint: in the hub's trace
    every drop of the global step lands on the step of a CHECKPOINT_RESTORE;
  * no update applied before the last checkpoint is lost: every restore is of the newest
    checkpoint written before it (by time, in the trace and on disk);
  * the final accuracy is within 0.02 of an undisturbed run's (and, sync being
    deterministic, the final checkpoint equals it bit for bit: `checkpoint diff --tol 0`);
  * no event was lost (every task's events_dropped is 0).

Faults are serialised — one task down at a time — and each waits for training to make
progress (a new checkpoint past the step at the kill) before the next, so that each
kill hits a running cluster. Every PID signalled is one this script started. Bounded:
gives up (exit 1) after --budget seconds (default 290).

Writes a report to stdout (and --report FILE, markdown) with the figures
docs/reliability.md quotes.
"""
import argparse, glob, json, os, random, re, shutil, signal, socket, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--events", type=int, default=100)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--budget", type=float, default=290.0)
ap.add_argument("--report", default="")
args = ap.parse_args()

DP = os.environ.get("DOWNPOUR", os.path.join(os.getcwd(), "build", "downpour"))
rng = random.Random(args.seed)
tmp = tempfile.mkdtemp(prefix="dp-soak.")
t_start = time.time()
N_PS, N_WK, STEPS = 2, 4, 10000
TRAIN = ["--data", "synthetic", "--model", "mlp", "--hidden", "16", "--batch", "16", "--mode", "sync",
         "--optimizer", "momentum", "--steps", str(STEPS), "--eval-every", "0", "--log-every", "1000000",
         "--save-checkpoint-steps", "10", "--quiet"]


def die(msg):
    print(f"soak: FAIL {msg} (work files kept in {tmp})")
    for p in procs.values():
        if p.poll() is None:
            p.kill()
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ckpt_steps(d):
    return sorted(int(m.group(1)) for f in os.listdir(d) if (m := re.match(r"model\.ckpt-(\d+)$", f))) \
        if os.path.isdir(d) else []


# --- the undisturbed run (the launcher, no pace: seconds) ---------------------------------
base = os.path.join(tmp, "base")
r = subprocess.run([DP, "cluster", "--ps", str(N_PS), "--workers", str(N_WK), *TRAIN, "--checkpoint-dir", base],
                   capture_output=True, text=True)
if r.returncode != 0:
    die(f"the undisturbed run failed: {r.stderr[-400:]}")
base_acc = json.loads(r.stdout.strip().splitlines()[-1])["test_accuracy"]

# --- the soak: a hand-started cluster ------------------------------------------------------
ps_ports = [free_port() for _ in range(N_PS)]
wk_ports = [free_port() for _ in range(N_WK)]
hosts = ["--ps_hosts=" + ",".join(f"127.0.0.1:{p}" for p in ps_ports),
         "--worker_hosts=" + ",".join(f"127.0.0.1:{p}" for p in wk_ports)]
ck = os.path.join(tmp, "ckpt")
trace = os.path.join(tmp, "soak.dptrace")
procs, logs, starts = {}, {}, {}
hub = subprocess.Popen([DP, "hub", "--listen", "127.0.0.1:0", "--trace", trace, "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = hub.stdout.readline()
m = re.search(r"listening on (\S+)", line)
if not m:
    die(f"the hub did not say where it listens: {line!r}")
hub_addr = m.group(1)
COMMON = [*hosts, *TRAIN, "--pace", "10ms", "--checkpoint-dir", ck, "--hub", hub_addr]


def start(job, i):
    key = f"{job}:{i}"
    n = starts.get(key, 0)
    starts[key] = n + 1
    out = open(os.path.join(tmp, f"{job}{i}.{n}.out"), "w")
    err = open(os.path.join(tmp, f"{job}{i}.{n}.err"), "w")
    env = dict(os.environ)
    if n:
        env["DOWNPOUR_RESTART"] = "1"
    procs[key] = subprocess.Popen([DP, "task", f"--job_name={job}", f"--task_index={i}", *COMMON],
                                  stdout=out, stderr=err, env=env)
    logs[key] = (out.name, err.name)


for i in range(N_PS):
    start("ps", i)
for i in range(N_WK):
    start("worker", i)


def wait_progress(past, timeout):
    """Until a checkpoint beyond step `past` exists (training went on), or the chief ended."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = ckpt_steps(ck)
        if s and s[-1] > past:
            return s[-1]
        if procs["worker:0"].poll() is not None:
            return None
        time.sleep(0.02)
    die(f"no progress past checkpoint {past} within {timeout} s after the last fault")


events = []   # (kind, task, down_s, step_before)
wait_progress(20, 60)
for k in range(args.events):
    if time.time() - t_start > args.budget - 60:
        die(f"only {k} of {args.events} faults within the budget")
    if procs["worker:0"].poll() is not None:
        die(f"the run ended after {k} of {args.events} faults: raise STEPS")
    job = "ps" if rng.random() < 0.4 else "worker"
    i = rng.randrange(N_PS if job == "ps" else N_WK)
    key = f"{job}:{i}"
    time.sleep(rng.uniform(0, 0.3))   # anywhere between two checkpoints
    before = ckpt_steps(ck)[-1]
    procs[key].send_signal(signal.SIGKILL)
    procs[key].wait()
    down = rng.uniform(0.05, 0.4)
    time.sleep(down)
    start(job, i)
    events.append((job, i, down, before))
    wait_progress(before, 60)

t_faults = time.time() - t_start
print(f"soak: {len(events)} faults in {t_faults:.0f} s; letting the run finish", flush=True)
# --- let it finish -------------------------------------------------------------------------
for i in range(N_WK):
    try:
        procs[f"worker:{i}"].wait(timeout=max(10, args.budget - (time.time() - t_start)))
    except subprocess.TimeoutExpired:
        die(f"worker {i} did not finish within the budget")
for i in range(N_PS):
    try:
        procs[f"ps:{i}"].wait(timeout=30)
    except subprocess.TimeoutExpired:
        die(f"ps {i} did not stop after the workers finished")
hub.send_signal(signal.SIGTERM)
hub.wait(timeout=30)
wall = time.time() - t_start

# --- checks ----------------------------------------------------------------------------------
fails = []
check = lambda ok, what: print(f"{'ok  ' if ok else 'FAIL'} {what}") or (fails.append(what) if not ok else None)
rcs = {i: procs[f"worker:{i}"].returncode for i in range(N_WK)}
check(all(rc == 0 for rc in rcs.values()), f"every worker's last process exits 0 ({rcs})")
chief_err = open(logs["worker:0"][1]).read()
m = re.search(r"final evaluation at global step (\d+): accuracy ([0-9.]+)", chief_err)
check(m and int(m.group(1)) == STEPS, f"the chief's final evaluation is at --steps {STEPS}")
acc = float(m.group(2)) if m else float("nan")
check(abs(acc - base_acc) <= 0.02, f"final accuracy {acc:.4f} within 0.02 of the undisturbed run's {base_acc:.4f}")
d = subprocess.run([DP, "checkpoint", "diff", base, ck, "--tol", "0"], capture_output=True, text=True)
check(d.returncode == 0, "the final checkpoint equals the undisturbed run's, bit for bit (sync)")

dropped = 0
for f in glob.glob(os.path.join(tmp, "*.out")):
    for l in open(f):
        if l.startswith("{"):
            dropped += json.loads(l).get("events_dropped", 0)
check(dropped == 0, f"no event dropped by any task process that finished ({dropped})")

# The global step's course in the hub's trace (its Chrome export's counter).
chrome = os.path.join(tmp, "soak.json")
subprocess.run([DP, "trace", "export", "--chrome", chrome, trace], capture_output=True)
doc = json.load(open(chrome))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
gsteps = [s for _, s in sorted((e["ts"], e["args"]["global_step"]) for e in ev
                               if e.get("ph") == "C" and e.get("name") == "global_step")]
backs = [(a, b) for a, b in zip(gsteps, gsteps[1:]) if b < a]
info = json.loads(subprocess.run([DP, "trace", "info", "--json", trace], capture_output=True, text=True).stdout)
counts = info.get("counts", {})
# The chief's processes, in order: what each saved and what it restored.
saved_last, restored, stale = None, [], []
for n in range(starts["worker:0"]):
    for l in open(os.path.join(tmp, f"worker0.{n}.err")):
        if (m := re.search(r"saved checkpoint \S+model\.ckpt-(\d+)", l)):
            saved_last = int(m.group(1))
        if (m := re.search(r"restored \S+model\.ckpt-(\d+) \(global step", l)):
            restored.append(int(m.group(1)))
            if saved_last is not None and int(m.group(1)) != saved_last:
                stale.append((int(m.group(1)), saved_last))
ps_kills = sum(1 for e in events if e[0] == "ps")
check(len(gsteps) > STEPS / 2, f"the trace holds the global step's course ({len(gsteps)} points)")
check(all(b in restored for _, b in backs),
      f"the global step goes back only to a restored checkpoint's step ({len(backs)} times back)")
check(1 <= len(restored) <= ps_kills, f"a restore for each ps lost at most ({len(restored)} for {ps_kills})")
check(not stale, f"every restore is of the newest checkpoint written before it ({stale[:3]})")
check(counts.get("checkpoint_restore", 0) == len(restored),
      f"each restore is one CHECKPOINT_RESTORE event ({counts.get('checkpoint_restore', 0)})")
summary = {
    "faults": len(events), "ps_kills": ps_kills, "worker_kills": len(events) - ps_kills,
    "restores": len(restored), "times_back": len(backs), "steps_redone": sum(a - b for a, b in backs),
    "ps_retry_events": counts.get("ps_retry", 0), "wall_s": round(wall, 1), "accuracy": acc,
    "undisturbed_accuracy": base_acc, "events_dropped": dropped,
    "mean_down_s": round(sum(e[2] for e in events) / max(1, len(events)), 3),
}
print("soak: " + json.dumps(summary))
if args.report:
    with open(args.report, "w") as f:
        f.write("| faults | ps killed | workers killed | restores | global step back | steps redone | "
                "PS_RETRY events | final accuracy (undisturbed) | events dropped | wall |\n")
        f.write("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
        f.write(f"| {len(events)} | {ps_kills} | {summary['worker_kills']} | {len(restored)} | {len(backs)} | "
                f"{summary['steps_redone']} | {summary['ps_retry_events']} | {acc:.4f} ({base_acc:.4f}) | "
                f"{dropped} | {wall:.0f} s |\n")
n_checks = 10
if fails:
    die(f"{len(fails)} checks failed")
shutil.rmtree(tmp, ignore_errors=True)
print(f"{n_checks} passed, 0 failed")
