#!/usr/bin/env bash
# it_netns.sh — `downpour cluster --netns` and `--net` (runtime/netns.c): ps and workers
# in separate network namespaces joined by veth links to a bridge, as on separate hosts;
# training completes across them; `--net worker:1:rate=1mbit` (tbf) makes worker 1's
# pulls measurably slower than worker 0's in the trace (a ratio over 20: unshaped, runs here measure 3 to 6; shaped, over 1000);
# delay/loss need netem: refused with one clear line where the kernel lacks it (the run
# itself skipped, saying so), run to completion where it has it; bad --net values refused
# in one line naming the flag; and nothing is left behind, also after `kill -9` of the
# launcher. Needs root and iproute2; skipped with a line saying why without them. Signals
# only the launcher it started ($!).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
SYN="--data synthetic --model mlp --hidden 4 --batch 16 --eval-every 0 --log-every 100000"

# ns_of PID: the inode of PID's network namespace ("net:[4026531833]"), or nothing.
ns_of() { readlink "/proc/$1/ns/net" 2>/dev/null; }
# task_pids LOG: the task PIDs the launcher logged ("task NAME: pid N, network namespace A").
task_pids() { sed -n 's/^downpour: cluster: task .*: pid \([0-9]*\), network namespace .*/\1/p' "$1"; }
# holders NS...: PIDs of any process still in one of these namespaces.
holders() {
    local l p
    for p in /proc/[0-9]*; do
        l=$(readlink "$p/ns/net" 2>/dev/null) || continue
        for n in "$@"; do [ "$l" = "$n" ] && echo "${p#/proc/}"; done
    done
    return 0
}
# pull_ratio CHROME.json: mean duration of worker 1's pulls of hidden/weights over worker 0's.
pull_ratio() {
    python3 - "$1" <<'PY'
import json, sys
from collections import defaultdict
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
begin, durs = {}, defaultdict(list)
for e in ev:
    if e.get("cat") != "pull": continue
    key = (e["pid"], e["id"])
    if e["ph"] == "b" and e.get("args", {}).get("var") == "hidden/weights": begin[key] = e["ts"]
    elif e["ph"] == "e" and key in begin: durs[procs.get(e["pid"], "")].append(e["ts"] - begin.pop(key))
mean = lambda n: sum(durs[n]) / len(durs[n]) if durs[n] else float("nan")
w0, w1 = mean("/job:worker/replica:0/task:0"), mean("/job:worker/replica:0/task:1")
print("%.3f" % (w1 / w0 if w0 > 0 else 0.0))
PY
}

links_before=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)
netns_before=$(ip netns list 2>/dev/null | sort)
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null ||
   ! unshare --net true 2>/dev/null; then
    skip "network namespaces unavailable (needs root, iproute2 and unshare(CLONE_NEWNET)): the netns runs"
    # the refusal is still checked: one line naming --netns
    "$DOWNPOUR" cluster --netns $SYN --steps 5 >/dev/null 2>"$TMP/refused.err"
    rc=$?
    check "without namespaces --netns is refused in one line (rc $rc)" \
        bash -c "[ $rc -ne 0 ] && [ \$(wc -l <'$TMP/refused.err') -eq 1 ] && grep -q -- '--netns' '$TMP/refused.err'"
    done_tests
    exit $?
fi

# --- (a) every task in its own namespace, training to completion ---------------------------
"$DOWNPOUR" cluster --netns --mode async --workers 2 --steps 150 --pace 10ms $SYN \
    --trace "$TMP/a.dptrace" >"$TMP/a.out" 2>"$TMP/a.err" &
LAUNCHER=$!
for _ in $(seq 100); do [ "$(task_pids "$TMP/a.err" | wc -l)" -eq 3 ] && break; sleep 0.05; done
mine=$(ns_of $$)
theirs=$(for p in $(task_pids "$TMP/a.err"); do ns_of "$p"; done | sort -u)
wait "$LAUNCHER"
rc=$?
check "netns: 1 ps + 2 workers train to completion (rc $rc)" test $rc -eq 0
check "netns: the run reached --steps" test "$(json "$TMP/a.out" global_step)" -ge 150
check "netns: the launcher logs each task's namespace address (10.213.0.2, .3, .4)" \
    test "$(grep -c '^downpour: cluster: task /job:.*: pid [0-9]*, network namespace 10\.213\.0\.[234]$' "$TMP/a.err")" -eq 3
check "netns: the ps serves on its namespace address, not loopback" \
    grep -q 'serving .* bytes of variables on 10\.213\.0\.2:[0-9]' "$TMP/a.err"
check "netns: three task namespaces, none of them this shell's ($(echo $theirs))" \
    bash -c "[ \$(echo '$theirs' | grep -c net:) -eq 3 ] && ! echo '$theirs' | grep -qxF '$mine'"
check "netns: the hub listened on the bridge" grep -q 'hub on 10\.213\.0\.1:[0-9]' "$TMP/a.err"
"$DOWNPOUR" trace info --json "$TMP/a.dptrace" >"$TMP/a.info" 2>/dev/null
check "netns: the trace records the run (pulls from both workers) and says netns" \
    python3 -c "import json; d = json.load(open('$TMP/a.info')); assert d['counts'].get('pull_end', 0) > 0; assert d['metadata']['netns'] is True"

# --- (b) a slow link: --net worker:1:rate=1mbit (tbf, both directions) ----------------------
"$DOWNPOUR" cluster --net worker:1:rate=1mbit --mode async --workers 2 --steps 150 --pace 10ms $SYN \
    --trace "$TMP/b.dptrace" >"$TMP/b.out" 2>"$TMP/b.err"
rc=$?
check "rate: the run with worker 1 on a 1 Mbit/s link completes (rc $rc)" test $rc -eq 0
"$DOWNPOUR" trace export --chrome "$TMP/b.json" "$TMP/b.dptrace" >/dev/null 2>&1
ratio=$(pull_ratio "$TMP/b.json")
check "rate: worker 1's pulls take over 20x worker 0's (ratio $ratio; unshaped: under 10)" fcmp "${ratio:-0}" '>' 20
"$DOWNPOUR" trace info --json "$TMP/b.dptrace" >"$TMP/b.info" 2>/dev/null
check "rate: the trace's metadata carries the link's shape for the viewer (\"1 Mbit/s\")" \
    python3 -c "import json; n = json.load(open('$TMP/b.info'))['metadata']['net']; assert n == [dict(n[0], job='worker', task=1, label='1 Mbit/s')], n"

# --- (c) delay and loss: netem ---------------------------------------------------------------
if unshare --net sh -c 'ip link add dpprobe0 type veth peer name dpprobe1 && tc qdisc add dev dpprobe0 root netem delay 1ms' >/dev/null 2>&1; then
    "$DOWNPOUR" cluster --net worker:1:delay=20ms,loss=1% --mode async --workers 2 --steps 150 --pace 10ms $SYN \
        --trace "$TMP/c.dptrace" >"$TMP/c.out" 2>"$TMP/c.err"
    rc=$?
    check "delay/loss: the run with worker 1 at 20 ms, 1% loss completes (rc $rc)" test $rc -eq 0
    "$DOWNPOUR" trace export --chrome "$TMP/c.json" "$TMP/c.dptrace" >/dev/null 2>&1
    ratio=$(pull_ratio "$TMP/c.json")
    check "delay/loss: worker 1's pulls take over 20x worker 0's (ratio $ratio; unshaped: under 10)" fcmp "${ratio:-0}" '>' 20
else
    "$DOWNPOUR" cluster --net worker:1:delay=20ms,loss=1% --workers 2 --steps 5 $SYN >/dev/null 2>"$TMP/c.err"
    rc=$?
    check "delay/loss without netem: refused in one line naming the flag and the reason (rc $rc)" \
        bash -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TMP/c.err') -eq 1 ] && grep -qF -- 'downpour: cluster: --net worker:1:delay=20ms,loss=1%: delay and loss need tc netem, and this kernel has no netem qdisc (sch_netem)' '$TMP/c.err'"
    skip "kernel has no netem qdisc (sch_netem)"
fi

# --- (d) bad values: one line naming the flag, exit 2 -----------------------------------------
bad_net() { # bad_net DESCRIPTION EXPECTED-TEXT ARGS...
    local what=$1 want=$2; shift 2
    "$DOWNPOUR" cluster $SYN "$@" >/dev/null 2>"$TMP/bad.err"
    local rc=$?
    check "bad $what: exit 2 and one line naming the flag (rc $rc)" \
        bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/bad.err') -eq 1 ] && grep -qF -- '$want' '$TMP/bad.err'"
}
bad_net "syntax" '--net: "worker:1" is not JOB:I:KEY=V' --net 'worker:1'
bad_net "job" '--net: job "chief" in "chief:0:rate=1mbit" is not ps or worker' --net 'chief:0:rate=1mbit'
bad_net "key" '--net: unknown key "jitter" in "worker:1:jitter=1ms"; keys: delay, loss, rate' --net 'worker:1:jitter=1ms'
bad_net "delay" '--net delay: "soon" is not a time' --net 'worker:1:delay=soon'
bad_net "loss" '--net loss: "150%" is not a percentage in 0..100' --net 'worker:1:loss=150%'
bad_net "rate" '--net rate: "fast" is not a rate' --net 'worker:1:rate=fast'
bad_net "task" '--net: worker:9:rate=1000000bit names worker 9, which does not exist (2 worker tasks)' --net 'worker:9:rate=1mbit'
bad_net "hub" '--netns: the tasks cannot reach --hub 127.0.0.1:1' --netns --hub 127.0.0.1:1
bad_net "delay past 60 s" '--net delay: "61s" is outside 0s..60s' --net 'worker:1:delay=61s'
bad_net "delay of 60 s taken" '--net: worker:9:delay=60000ms names worker 9' --net 'worker:9:delay=60s'
bad_net "task index past 1000000" '--net: task "1000001" in "worker:1000001:rate=1mbit" is not a task index in 0..1000000' \
    --net 'worker:1000001:rate=1mbit'
bad_net "task index 1000000 taken" '--net: worker:1000000:rate=1000000bit names worker 1000000' --net 'worker:1000000:rate=1mbit'
bad_net "job name longer than any job" '--net: "abcdefghijklmnopq:1:rate=1mbit" is not JOB:I:KEY=V' \
    --net 'abcdefghijklmnopq:1:rate=1mbit'
bad_net "bps, which tc reads as bytes" '--net rate: "100kbps" is ambiguous: tc reads bps as bytes per second' \
    --net 'worker:1:rate=100kbps'
bad_net "Mbps" '--net rate: "1Mbps" is ambiguous' --net 'worker:1:rate=1Mbps'
# rates in tc's spelling (any case) or ours, bits or bytes: read as these bits per second
for r in 1mbit=1000000 1MBIT=1000000 1Mbit/s=1000000 10Kbit/s=10000 2.5mbit=2500000 1gbit=1000000000 \
    1000000bit=1000000 8kbit=8000 1MB/s=8000000 1.25MB/s=10000000 1MiB/s=8388608; do
    bad_net "rate for the missing worker 9, ${r%%=*} (read as ${r#*=} bit/s)" "--net: worker:9:rate=${r#*=}bit names worker 9" --net "worker:9:rate=${r%%=*}"
done
PATH=/nonexistent "$DOWNPOUR" cluster --netns $SYN --steps 5 >/dev/null 2>"$TMP/noip.err"
rc=$?
check "no iproute2: --netns refused in one line (rc $rc)" \
    bash -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TMP/noip.err') -eq 1 ] && grep -qF -- \"--netns: needs iproute2's \\\`ip\\\` and \\\`tc\\\`\" '$TMP/noip.err'"

# a command of the setup that fails: the run is refused in one line quoting the command and
# what it printed (its last newline trimmed); a `tc` that refuses every qdisc stands in
mkdir -p "$TMP/faketc"
printf '#!/bin/sh\necho "RTNETLINK answers: Invalid argument" >&2\nexit 2\n' >"$TMP/faketc/tc"
chmod +x "$TMP/faketc/tc"
PATH="$TMP/faketc:$PATH" "$DOWNPOUR" cluster --net worker:1:rate=10mbit --workers 2 --steps 5 $SYN >/dev/null 2>"$TMP/tc.err"
rc=$?
check "a failing tc: exit 1, one line quoting it and its message ($(head -c 250 "$TMP/tc.err"))" \
    python3 -c "
import re, sys
lines = open(sys.argv[1]).read().split('\n')
assert $rc == 1 and len(lines) == 2 and lines[1] == '', lines
assert re.fullmatch(r'downpour: cluster: --netns: task /job:worker/replica:0/task:1: '
                    r'\x60tc qdisc add dev eth0 root tbf rate 10000000bit burst \d+ latency 1s\x60: '
                    r'RTNETLINK answers: Invalid argument', lines[0]), lines[0]" "$TMP/tc.err"

# --- (e) nothing left behind, also after kill -9 of the launcher -----------------------------
"$DOWNPOUR" cluster --net worker:1:rate=10mbit --mode async --workers 2 --steps 100000 --pace 50ms $SYN \
    >/dev/null 2>"$TMP/e.err" &
LAUNCHER=$!
for _ in $(seq 100); do [ "$(task_pids "$TMP/e.err" | wc -l)" -eq 3 ] && break; sleep 0.05; done
spaces=$(for p in $(task_pids "$TMP/e.err"); do ns_of "$p"; done; ns_of "$LAUNCHER")
check "kill -9: the launcher and its 3 tasks were running in 4 namespaces" \
    test "$(echo "$spaces" | grep -c net:)" -eq 4
# both directions of worker 1's link are shaped, and nobody else's: tbf on its own eth0
# (out of it) and on its port of the bridge, in the launcher's namespace (into it)
task_pid() { sed -n "s|^downpour: cluster: task /job:worker/replica:0/task:$2: pid \([0-9]*\), network namespace .*|\1|p" "$1"; }
q1=$(nsenter --net="/proc/$(task_pid "$TMP/e.err" 1)/ns/net" tc qdisc show dev eth0 2>&1)
q0=$(nsenter --net="/proc/$(task_pid "$TMP/e.err" 0)/ns/net" tc qdisc show dev eth0 2>&1)
qs=$(nsenter --net="/proc/$LAUNCHER/ns/net" tc qdisc show 2>&1)
check "--net worker:1:rate=10mbit: tbf at 10Mbit on worker 1's eth0 ($(echo $q1))" \
    bash -c "grep -q '^qdisc tbf .* rate 10Mbit' <<<'$q1'"
check "... none on worker 0's ($(echo $q0))" bash -c "! grep -q tbf <<<'$q0'"
check "... and one on the bridge's ports, into worker 1 ($(grep -c tbf <<<"$qs") of $(grep -c 'dev dpv' <<<"$qs") ports)" \
    bash -c "[ \$(grep -c '^qdisc tbf .* rate 10Mbit' <<<'$qs') -eq 1 ] && [ \$(grep -c tbf <<<'$qs') -eq 1 ]"
kill -9 "$LAUNCHER"
wait "$LAUNCHER" 2>/dev/null
left=
for _ in $(seq 300); do left=$(holders $spaces); [ -z "$left" ] && break; sleep 0.05; done
check "kill -9: no process is left in any of its namespaces (so they and their veths are gone)$(
    for p in $left; do printf ' [%s: %s]' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done)" test -z "$left"
if [ -n "$left" ]; then   # what they were doing: their stacks and the run's last lines
    for p in $left; do echo "    $p: $(tr '\n' ' ' <"/proc/$p/wchan" 2>/dev/null) $(grep -E 'State|SigCgt|SigPnd|ShdPnd' "/proc/$p/status" 2>/dev/null | tr '\n' ' ')"; done
    tail -n 15 "$TMP/e.err" | sed 's/^/    e.err: /'
fi
links_after=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)
check "no veth or bridge was left in this namespace" test "$links_before" = "$links_after"
check "no named namespace was created (ip netns list)" test "$netns_before" = "$(ip netns list 2>/dev/null | sort)"
done_tests
