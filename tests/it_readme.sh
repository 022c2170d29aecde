#!/usr/bin/env bash
# it_readme.sh — README.md's tour, run as a new user would: `make install` into a scratch
# PREFIX puts downpour on PATH, then every command of the tour's code blocks runs in
# order in a scratch folder (with scenarios/ beside it), so the README cannot drift from
# the program. What is changed, and only that: --steps N becomes --steps 20 (and
# `run`/`compare` get --set steps=20) to keep it short; the fixed ports of the
# "by hand" and "live" blocks become free ones; windows open under Xvfb and a viewer is
# closed by a key script (--script) or, for `cluster --view` and `run`, by killing the viewer the
# launcher started (by PID) once training is over. The "terminal N" blocks run their
# commands at once, as in separate terminals.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
REPO=$PWD
command -v Xvfb >/dev/null || { skip "Xvfb is not installed (apt-get install xvfb): the tour's windows need it"; done_tests; exit; }

# -o: install the binary this test run is about as it is (make test built it; under
# `make asan` it carries the sanitizer flags a plain relink would lose).
make -s --no-print-directory BUILD="$BUILD" -o "$BUILD/downpour" install PREFIX="$TMP/prefix" >"$TMP/install.log" 2>&1
check "make install PREFIX=... installs downpour into PREFIX/bin" test -x "$TMP/prefix/bin/downpour"
[ -x "$TMP/prefix/bin/downpour" ] || { cat "$TMP/install.log"; kill "$XVFB" 2>/dev/null; done_tests; exit 1; }
export PATH="$TMP/prefix/bin:$PATH"
check "downpour is on PATH after make install" bash -c 'command -v downpour | grep -q prefix/bin/downpour'
check "... with its bash completion where bash-completion finds it, the script the binary prints" \
    cmp -s "$TMP/prefix/share/bash-completion/completions/downpour" <("$DOWNPOUR" completion bash)

start_xvfb || { skip "Xvfb does not start: the tour's windows need it"; done_tests; exit; }
export DISPLAY=":$DISP"

read -r P1 P2 P3 P4 < <(free_ports 4)
python3 - "$REPO/README.md" >"$TMP/tour.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
tour = text[text.index('## A tour of the command line'):text.index('## Scenarios')]
for i, block in enumerate(re.findall(r'```sh\n(.*?)```', tour, re.S)):
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith('#'): continue
        cmd = re.sub(r'\s+#\s.*$', '', line).strip()
        print('%d\t%s' % (i, cmd))
PY
check "the tour has at least 15 commands in 3 blocks" test "$(wc -l <"$TMP/tour.txt")" -ge 15 -a "$(cut -f1 "$TMP/tour.txt" | sort -u | wc -l)" -ge 3
mkdir -p "$TMP/work"
ln -s "$REPO/scenarios" "$TMP/work/scenarios"
cd "$TMP/work" || exit 1

adapt() { # the command with the documented changes
    local c=$1
    c=$(echo "$c" | sed -E "s/--steps [0-9]+/--steps 20/; s/localhost:2222/localhost:$P1/g; s/localhost:2223/localhost:$P2/g; s/localhost:2224/localhost:$P3/g; s/127\.0\.0\.1:7411/127.0.0.1:$P4/g")
    case "$c" in
        "downpour run "*|"downpour compare "*) c="$c --set steps=20";;
        "downpour view "*) c="$c --script wait:400,q";;
    esac
    echo "$c"
}
# Windows run with leak detection off under ASan, as in it_viewer.sh: SDL and X11 keep
# allocations to process exit.
NOLEAK="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
run_cmd() { # run_cmd N CMD: runs one tour command, its output in $TMP/cmd-N.*
    local n=$1 c=$2 x=$2
    case "$c" in *view*|"downpour run "*) x="env $NOLEAK $c";; esac
    case "$c" in
        *"cluster "*"--view"*|"downpour run "*)
            bash -c "$x" >"$TMP/cmd-$n.out" 2>"$TMP/cmd-$n.err" &
            local pid=$! viewer=""
            for _ in $(seq 1200); do grep -q "close the viewer window" "$TMP/cmd-$n.err" && break; sleep 0.1; done
            # bash -c execs the last command: $pid is the launcher (or `run`) itself
            viewer=$(child_pid $pid 'view --connect')
            [ -n "$viewer" ] && kill "$viewer"
            wait $pid;;
        *) timeout 300 bash -c "$x" >"$TMP/cmd-$n.out" 2>"$TMP/cmd-$n.err";;
    esac
}
n=0
prev_block=""
block_cmds=()
flush_block() { # a "terminal N" block: all at once; a hub (a server) is stopped last
    [ ${#block_cmds[@]} -eq 0 ] && return
    local pids=() names=() c i server=""
    for c in "${block_cmds[@]}"; do
        n=$((n + 1))
        local cc=$c
        case "$c" in *view*) cc="env $NOLEAK $c";; esac
        timeout 120 bash -c "$cc" >"$TMP/cmd-$n.out" 2>"$TMP/cmd-$n.err" &
        if [[ "$c" == *"hub --listen"* ]]; then server=$!; else pids+=("$!"); names+=("$c"); fi
        sleep 0.5
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        local rc=$?
        if [ $rc -eq 0 ]; then ok "tour (at once): ${names[$i]}"; else bad "tour (at once): ${names[$i]} (rc $rc)"; fi
    done
    if [ -n "$server" ]; then
        kill -INT "$server"
        wait "$server"
        check "tour (at once): the hub stops on Ctrl-C and its trace validates" \
            downpour trace validate live.dptrace
    fi
    block_cmds=()
}
while IFS=$'\t' read -r block cmd; do
    c=$(adapt "$cmd")
    if [ "$block" != 0 ]; then
        [ "$block" != "$prev_block" ] && flush_block
        block_cmds+=("$c")
        prev_block=$block
        continue
    fi
    n=$((n + 1))
    run_cmd "$n" "$c"
    rc=$?
    if [ $rc -eq 0 ]; then ok "tour: $c"; else bad "tour: $c (rc $rc): $(tail -n 2 "$TMP/cmd-$n.err")"; fi
done <"$TMP/tour.txt"
flush_block
kill "$XVFB" 2>/dev/null
done_tests
