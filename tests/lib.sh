# lib.sh — shared helpers for the integration scripts (tests/it_*.sh): check counting
# with the same closing line as the C tests, skips that say why, JSON field extraction,
# a scratch dir. Scripts signal only the PIDs they started (kept in variables), never a
# pattern: on a shared machine a pattern can match someone else's process.
PASS=0; FAIL=0; SKIP=0
DOWNPOUR=${DOWNPOUR:-$PWD/build/downpour}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/downpour-it.XXXXXX")
trap 'rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT

ok()   { PASS=$((PASS + 1)); echo "ok   $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
# skip "why": one skipped group of checks; the line reads "skipped: why".
skip() { SKIP=$((SKIP + 1)); echo "skipped: $*"; }
check() { # check "description" command...
    local what=$1; shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
# json FILE KEY: prints the value of KEY in the last JSON line of FILE.
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
line = [l for l in open(sys.argv[1]) if l.startswith('{')][-1]
v = json.loads(line).get(sys.argv[2])
print('null' if v is None else v)
PY
}
# trace_count TRACE KIND: how many events of KIND the trace holds (trace info --json; 0
# when none).
# free_ports N [HOST]: N distinct free TCP ports on HOST (default 127.0.0.1; ::1 for IPv6)
# on one line, all bound at once: asked one at a time, the kernel may hand out the same
# port twice, and a cluster spec naming a host:port twice is refused.
free_ports() {
    python3 - "$1" "${2:-127.0.0.1}" <<'PY'
import socket, sys
n, host = int(sys.argv[1]), sys.argv[2]
socks = [socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) for _ in range(n)]
for s in socks:
    s.bind((host, 0))
print(*(s.getsockname()[1] for s in socks))
PY
}
trace_count() {
    "$DOWNPOUR" trace info --json "$1" |
        python3 -c "import json, sys; print(json.load(sys.stdin)['counts'].get(sys.argv[1], 0))" "$2"
}
# ckpt_fnv FILE: FNV-1a (64 bits, hex) of a checkpoint's parameter tensors, their floats'
# bytes in the file's order (its optimizer slots, */Momentum and */Adagrad, left out):
# what a summary's param_checksum must be. The file read by the documented format
# (docs/runtime.md, "Checkpoints"), not by downpour.
ckpt_fnv() {
    python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'DPCKPT01', 'not a checkpoint'
_, _, n = struct.unpack_from('<IqI', b, 8)
o, h = 24, 0xcbf29ce484222325
for _ in range(n):
    (l,) = struct.unpack_from('<H', b, o)
    name = b[o + 2:o + 2 + l]
    (c,) = struct.unpack_from('<Q', b, o + 2 + l)
    o += 2 + l + 8
    if not name.endswith((b'/Momentum', b'/Adagrad')):
        for x in b[o:o + 4 * c]:
            h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    o += 4 * c
print('%016x' % h)
PY
}
# fcmp A OP B: float comparison, e.g. fcmp 0.93 '>' 0.9
fcmp() { python3 -c "import sys; sys.exit(0 if float('$1') $2 float('$3') else 1)"; }
# child_pid PARENT PATTERN: the PID of PARENT's direct child whose command line matches
# PATTERN (extended regex), or nothing. Only our own children are ever looked at.
child_pid() {
    local c
    for c in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
        tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | grep -qE -- "$2" && { echo "$c"; return 0; }
    done
    return 1
}
# check_sim_bar WHAT STEPS COMMAND: the simulator's progress bar (sim_bar) of the shell
# COMMAND reaches step STEPS of STEPS on a terminal (script(1)'s pseudo-terminal), and
# none goes into a file.
check_sim_bar() {
    if command -v script >/dev/null; then
        script -qefc "$3" /dev/null >"$TMP/bar.tty" 2>&1
        check "$1 on a terminal shows its progress bar to the last step" \
            grep -q "sim \[#\{40\}\] 100%  step $2/$2" "$TMP/bar.tty"
    else
        skip "$1's progress bar on a terminal: no script(1) to make one"
    fi
    bash -c "$3" >/dev/null 2>"$TMP/bar.err"
    check "... and none into a file" bash -c "! grep -q 'sim \[' '$TMP/bar.err'"
}
# children PARENT: the PIDs of PARENT's direct children, one per line.
children() { tr ' ' '\n' <"/proc/$1/task/$1/children" 2>/dev/null | grep .; }
# alive_matching PID... -- PATTERN: which of these PIDs still run a command matching PATTERN.
alive_matching() {
    local pat p; pat=${!#}
    for p in "${@:1:$#-2}"; do
        [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qE -- "$pat" && echo "$p"
    done
    return 0
}
# start_xvfb: starts Xvfb (1280x800x24, no TCP) on a free display from 90 up; sets DISP
# (the number) and XVFB (its PID, ours to kill) and waits for its socket. Returns 1 when
# Xvfb is not installed or did not come up in 5 s (the caller skips, saying why).
start_xvfb() {
    command -v Xvfb >/dev/null 2>&1 || return 1
    DISP=$(( 90 + RANDOM % 800 ))
    while [ -e "/tmp/.X11-unix/X$DISP" ] || [ -e "/tmp/.X$DISP-lock" ]; do DISP=$((DISP + 1)); done
    Xvfb ":$DISP" -screen 0 1280x800x24 -nolisten tcp >"$TMP/xvfb.log" 2>&1 &
    XVFB=$!
    for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$DISP" ] && return 0; sleep 0.1; done
    return 1
}
done_tests() { echo "$PASS passed, $FAIL failed, $SKIP skipped"; [ "$FAIL" -eq 0 ]; }
