#!/usr/bin/env bash
# it_sim.sh — `downpour sim` end to end: --help, the summary JSON's keys, flag errors
# naming the flag, a recorded trace that `downpour trace validate` accepts, determinism
# of the trace's events, sampled traces, failures, and --calibrate-from on a recorded
# real run (tests/data/*.trace; named .trace because .gitignore drops *.dptrace). Each run takes well under a second.
. "$(dirname "$0")/lib.sh"

check "sim --help mentions the surrogate" sh -c "'$DOWNPOUR' sim --help | grep -q 'SURROGATE'"
check "sim is listed by downpour --help" sh -c "'$DOWNPOUR' --help | grep -q '^  sim '"

# Its progress bar, on a terminal and not into a file.
check_sim_bar sim 200 "'$DOWNPOUR' sim --ps 1 --workers 4 --steps 200"

"$DOWNPOUR" sim --ps 2 --workers 8 --mode sync --steps 20 --model-bytes 10MB --bandwidth 1Gbit \
    --latency 100us --compute 'lognormal:mean=20ms,sigma=0.3' --straggler worker:3x4 \
    --trace "$TMP/a.dptrace" --summary "$TMP/sum.json" --quiet >"$TMP/out" 2>"$TMP/err"
check "sim exits 0" test $? -eq 0
for k in engine mode ps workers steps global_step wall_s mean_step_s samples_per_s final_loss \
         mean_staleness max_staleness dropped_gradients bytes_pulled bytes_pushed events \
         events_dropped trace sim_time_s events_per_s peak_rss_mb loss_model; do
    check "summary has $k" sh -c "grep -q '\"$k\":' '$TMP/out'"
done
check "engine is sim" test "$(json "$TMP/out" engine)" = sim
check "global step reached" test "$(json "$TMP/out" global_step)" = 20
check "--summary file written" sh -c "grep -q '\"engine\":\"sim\"' '$TMP/sum.json'"
check "stderr says the loss is a surrogate's" grep -q surrogate "$TMP/err"
check "trace validates" "$DOWNPOUR" trace validate "$TMP/a.dptrace"
check "trace metadata says engine sim" sh -c "'$DOWNPOUR' trace info '$TMP/a.dptrace' | grep -qx '  engine *sim'"
# 8 workers x 20 sync steps: each worker pulls and pushes every step; with no backups every
# push is applied, and the global step advances once per step.
"$DOWNPOUR" trace info --json "$TMP/a.dptrace" >"$TMP/info.json"
count() { python3 -c "import json; print(json.load(open('$TMP/info.json'))['counts'].get('$1', 0))"; }
check "trace has a pull per worker step (pull_end $(count pull_end) >= 160)" test "$(count pull_end)" -ge 160
check "trace has an apply per push (apply $(count apply) = push_end $(count push_end) > 0)" \
    test "$(count apply)" -eq "$(count push_end)" -a "$(count apply)" -gt 0
check "trace has 20 global steps ($(count global_step))" test "$(count global_step)" -eq 20

"$DOWNPOUR" sim --ps 2 --workers 8 --mode sync --steps 20 --model-bytes 10MB --bandwidth 1Gbit \
    --latency 100us --compute 'lognormal:mean=20ms,sigma=0.3' --straggler worker:3x4 \
    --trace "$TMP/b.dptrace" --quiet >/dev/null 2>&1
"$DOWNPOUR" trace export --chrome "$TMP/a.json" "$TMP/a.dptrace" >/dev/null 2>&1
"$DOWNPOUR" trace export --chrome "$TMP/b.json" "$TMP/b.dptrace" >/dev/null 2>&1
check "same seed, same events" cmp -s "$TMP/a.json" "$TMP/b.json"

bad_flag() { # bad_flag "description" "expected text" args...
    local what=$1 want=$2; shift 2
    "$DOWNPOUR" sim "$@" >/dev/null 2>"$TMP/e"
    local rc=$?
    check "$what" sh -c "[ $rc -eq 2 ] && grep -q -- '$want' '$TMP/e'"
}
bad_flag "bad bandwidth unit" "--bandwidth: unknown bandwidth unit" --bandwidth 10Gbt
bad_flag "bandwidth without unit" "needs a unit" --bandwidth 10
bad_flag "bad size unit" "--model-bytes: unknown size unit" --model-bytes 10Mb
bad_flag "bad time" "--latency" --latency fast
bad_flag "bad distribution" "unknown distribution" --compute 'gamma:mean=1s'
bad_flag "empty distribution" "--compute: empty value" --compute ''
bad_flag "distribution without parameters" "lacks parameters" --compute 'exponential'
bad_flag "a mean that is not a time" '--compute mean: "fast" is not a time' --compute 'constant:mean=fast'
bad_flag "a negative sigma" 'sigma "-1" is not a number in 0..10' --compute 'lognormal:mean=10ms,sigma=-1'
bad_flag "a sigma that is not a number" 'sigma "abc" is not a number' --compute 'lognormal:mean=10ms,sigma=abc'
bad_flag "an sd that is not a time" '--compute sd: "x" is not a time' --compute 'normal:mean=10ms,sd=x'
bad_flag "--hosts range longer than any worker number" "--hosts: \"worker:0-0000000000000000000000000000000000000000000000001=1\" is not JOB:I=H" \
    --workers 4 --hosts '2,worker:0-0000000000000000000000000000000000000000000000001=1'
bad_flag "--hosts job name too long" "--hosts: \"workerworkerworkerworker:0=1\" is not" --workers 4 --hosts '2,workerworkerworkerworker:0=1'
bad_flag "straggler out of range" "worker 9 does not exist" --workers 4 --straggler worker:9x2
bad_flag "bad failure" "--fail" --fail 'worker:1@soon'
bad_flag "backups >= workers" "--backup-workers" --workers 2 --backup-workers 2
bad_flag "unknown flag" "unknown flag" --frobnicate 1
bad_flag "missing calibration trace" "--calibrate-from" --calibrate-from "$TMP/none.dptrace"

"$DOWNPOUR" sim --ps 4 --workers 300 --mode async --steps 600 --model-bytes 1MB \
    --compute 'exponential:mean=10ms' --trace "$TMP/s.dptrace" --trace-level sample:4 --quiet \
    >"$TMP/s.out" 2>/dev/null
check "sampled 300-worker trace validates" "$DOWNPOUR" trace validate "$TMP/s.dptrace"
check "sampled trace stays small" test "$(json "$TMP/s.out" events)" -lt 20000

"$DOWNPOUR" sim --workers 4 --steps 30 --fail 'worker:1@step=5' --quiet >"$TMP/f.out" 2>"$TMP/f.err"
check "a dead worker stalls sync" grep -q stalled "$TMP/f.err"
check "summary says stalled" test "$(json "$TMP/f.out" stalled)" = True
"$DOWNPOUR" sim --workers 4 --steps 30 --fail 'worker:1@step=5,restart=2s' --quiet >"$TMP/f.out" 2>/dev/null
check "a restarted worker lets it finish" test "$(json "$TMP/f.out" global_step)" = 30

# 1 worker, 100 ms steps (and ~1 ms of network): 3 steps fit in 350 ms simulated
"$DOWNPOUR" sim --workers 1 --steps 1000 --max-sim-time 350ms --quiet >"$TMP/m.out" 2>"$TMP/m.err"
check "--max-sim-time exits 0" test $? -eq 0
check "--max-sim-time stops at global step 3 ($(json "$TMP/m.out" global_step))" test "$(json "$TMP/m.out" global_step)" = 3
check "summary says stopped by --max-sim-time, not stalled" \
    test "$(json "$TMP/m.out" stopped_by_max_sim_time)/$(json "$TMP/m.out" stalled)" = True/False
check "stderr says where --max-sim-time stopped it" grep -q "stopped by --max-sim-time 0.350 s at global step 3 of 1000" "$TMP/m.err"

if [ -f tests/data/real_sync_1ps_2w.trace ]; then
    "$DOWNPOUR" sim --calibrate-from tests/data/real_sync_1ps_2w.trace --quiet >"$TMP/c.out" 2>"$TMP/c.err"
    check "calibrated run uses the trace's cluster" test "$(json "$TMP/c.out" workers)" = 2
    check "calibration is reported" grep -q "calibrated from" "$TMP/c.err"
    "$DOWNPOUR" sim --calibrate-from tests/data/real_sync_1ps_2w.trace --workers 64 --ps 4 \
        --quiet >"$TMP/c2.out" 2>/dev/null
    check "calibrated bigger cluster runs" test "$(json "$TMP/c2.out" workers)" = 64
fi
# --- hosts and their cores: the real launcher records its machine, calibration uses it --
bad_flag "hosts placing a missing worker" "worker 9 does not exist" --workers 4 --hosts 2,worker:9=1
bad_flag "hosts not N,JOB:I=H" "is not JOB:I=H" --hosts 2,worker:1
"$DOWNPOUR" sim --workers 4 --steps 10 --compute constant:mean=10ms --latency 0 --bandwidth 1000Tbit \
    --hosts 1 --cores-per-host 2 --quiet >"$TMP/h.out" 2>/dev/null
check "4 workers on one host of 2 cores: a 10 ms step takes 20 ms ($(json "$TMP/h.out" mean_step_s))" \
    fcmp "$(json "$TMP/h.out" mean_step_s)" '==' 0.02
check "the summary says hosts 1, cores 2" test "$(json "$TMP/h.out" hosts)/$(json "$TMP/h.out" cores_per_host)" = 1/2
"$DOWNPOUR" cluster --ps 1 --workers 2 --steps 5 --data synthetic --quiet --trace "$TMP/real.dptrace" \
    >/dev/null 2>&1
check "a real run records its host and core count" python3 -c "
import json, subprocess, os, socket
m = json.loads(subprocess.run(['$DOWNPOUR', 'trace', 'info', '--json', '$TMP/real.dptrace'], capture_output=True).stdout)['metadata']
assert m['hosts'] == [{'name': socket.gethostname(), 'cores': os.cpu_count()}] and m['task_hosts'] == '1', m"
"$DOWNPOUR" sim --calibrate-from "$TMP/real.dptrace" --quiet >"$TMP/hc.out" 2>/dev/null
check "calibrated from it: one host of its cores ($(nproc))" \
    test "$(json "$TMP/hc.out" hosts)/$(json "$TMP/hc.out" cores_per_host)" = "1/$(nproc)"
# (a 5-step run may leave no copying to measure beyond the work: the rate is then 0)
check "a real run says its CPU: calibrated, the ps's work is on ($(json "$TMP/hc.out" ps_pull_cost) a pull, copying $(json "$TMP/hc.out" copy_bandwidth) B/s)" \
    python3 -c "import sys; sys.exit(not ($(json "$TMP/hc.out" copy_bandwidth) >= 0 and '$(json "$TMP/hc.out" ps_pull_cost)' != '0'))"
"$DOWNPOUR" sim --calibrate-from "$TMP/real.dptrace" --steps 1 >/dev/null 2>"$TMP/hc.err"
check "the calibrated line says so" grep -q "from the CPU the workers measured" "$TMP/hc.err"
"$DOWNPOUR" sim --calibrate-from "$TMP/real.dptrace" --copy-bandwidth 0 --ps-pull-cost 0 --ps-push-cost 0 \
    --quiet >"$TMP/hc0.out" 2>/dev/null
check "flags win over what it measured" \
    test "$(json "$TMP/hc0.out" copy_bandwidth)/$(json "$TMP/hc0.out" ps_pull_cost)" = 0.0/0
"$DOWNPOUR" sim --calibrate-from tests/data/real_sync_1ps_2w.trace --quiet >"$TMP/ho.out" 2>/dev/null
check "an older trace (no CPU said) turns none of it on" \
    test "$(json "$TMP/ho.out" copy_bandwidth)" = 0.0
check "an older trace (no hosts) calibrates to unlimited cores" \
    test "$(json "$TMP/ho.out" hosts)/$(json "$TMP/ho.out" cores_per_host)" = 0/0

# --- the ps's own work: off by default, given, or fitted by calibration -------------------
check "the summary says the ps costs nothing by default" \
    test "$(json "$TMP/ho.out" ps_pull_cost)/$(json "$TMP/ho.out" ps_push_cost)" = 0/0
bad_flag "ps cost not a time" "--ps-pull-cost: \"fast\" is not a time" --ps-pull-cost fast
bad_flag "ps cost fit without a trace" "--ps-push-cost fit" --ps-push-cost fit
# 4 workers, one ps taking 2 ms per push (2 gradients, then the token: 1 ms each) and a
# 10 ms compute on a network that costs nothing: 10 + 4 * 3 = 22 ms a step
"$DOWNPOUR" sim --ps 1 --workers 4 --steps 10 --model softmax --compute constant:mean=10ms --latency 0 \
    --bandwidth 1e18B/s --ps-push-cost 1ms --quiet >"$TMP/p.out" 2>/dev/null
check "pushes one at a time at the ps: 22 ms a step ($(json "$TMP/p.out" mean_step_s))" \
    python3 -c "import sys; sys.exit(abs($(json "$TMP/p.out" mean_step_s) - 0.022) > 1e-6)"
check "the summary says the push cost" test "$(json "$TMP/p.out" ps_push_cost)" = 1000us
"$DOWNPOUR" sim --calibrate-from "$TMP/real.dptrace" --ps-pull-cost fit --ps-push-cost fit \
    --trace "$TMP/pf.dptrace" --quiet >"$TMP/pf.out" 2>/dev/null
check "fitted from a real run: the ps's work is not zero ($(json "$TMP/pf.out" ps_pull_cost))" \
    sh -c "[ '$(json "$TMP/pf.out" ps_pull_cost)' != 0 ] && [ '$(json "$TMP/pf.out" global_step)' = 5 ]"
check "its trace validates and says the costs" sh -c "'$DOWNPOUR' trace validate '$TMP/pf.dptrace' && \
    '$DOWNPOUR' trace info --json '$TMP/pf.dptrace' | grep -q '\"ps_pull_cost\"'"
done_tests
