#!/usr/bin/env bash
# it_demo.sh — `make demo`'s two faces: headless (no display: trace, frames and a summary
# sheet land in the output folder; `view` fails at once saying so, `cluster --view` runs
# headless and says so) and `cluster --view` under Xvfb (the viewer attaches
# live; closing it mid-run does not disturb the run; after the run the launcher waits
# for the window and exits cleanly when it closes).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

env -u DISPLAY -u WAYLAND_DISPLAY DEMO_OUT="$TMP/demo" DOWNPOUR="$DOWNPOUR" \
    ./scripts/demo.sh >"$TMP/demo.out" 2>&1
rc=$?
check "headless demo exits 0 (rc $rc)" test $rc -eq 0
# A failed demo shows what it printed (the log keeps it; run.sh shows its error lines).
[ $rc -eq 0 ] || tail -n 30 "$TMP/demo.out" | sed 's/^/    demo: /'
for f in run.dptrace summary.json frame-step10.png frame-step300.png frame-step590.png placement.png sheet.png; do
    check "demo wrote $f" test -s "$TMP/demo/$f"
done
check "demo says where its output is" grep -q "everything is in $TMP/demo" "$TMP/demo.out"
check "demo trace validates" $DOWNPOUR trace validate "$TMP/demo/run.dptrace"
check "demo sheet is a 2560x1600 PNG" python3 -c "
import struct; d=open('$TMP/demo/sheet.png','rb').read(24); assert d[:8]==b'\x89PNG\r\n\x1a\n'; assert struct.unpack('>II', d[16:24])==(2560,1600)"

# No display at all: `view` says so at once (it never opens an unseen window), and
# `cluster --view` runs headless, says so in one line and finishes.
NODISP="env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER"
$NODISP timeout 2 $DOWNPOUR view "$TMP/demo/run.dptrace" >"$TMP/nd.out" 2>"$TMP/nd.err"
rc=$?
check "view without a display fails within 2 s (rc $rc, not 124)" test "$rc" -eq 1
check "... with the one-line error" test "$(cat "$TMP/nd.err")" = 'downpour: view: no display: use `downpour render`'
$NODISP timeout 2 $DOWNPOUR view "$TMP/no-such.dptrace" >/dev/null 2>"$TMP/nd4.err"
rc=$?
check "view of a missing trace without a display fails (rc $rc)" test "$rc" -eq 1
check "... naming the file first, not the display" \
    test "$(cat "$TMP/nd4.err")" = "downpour: view: $TMP/no-such.dptrace: No such file or directory"
$NODISP timeout 2 $DOWNPOUR view "$TMP/demo/run.dptrace" --compare "$TMP/no-such-2.dptrace" >/dev/null 2>"$TMP/nd5.err"
check "... and so for a missing --compare trace" \
    test "$(cat "$TMP/nd5.err")" = "downpour: view: $TMP/no-such-2.dptrace: No such file or directory"
$NODISP timeout 2 $DOWNPOUR view --connect 127.0.0.1:9 >/dev/null 2>"$TMP/nd2.err"
rc=$?
check "view --connect without a display fails before connecting (rc $rc)" test "$rc" -eq 1
check "... with the same line" test "$(cat "$TMP/nd2.err")" = 'downpour: view: no display: use `downpour render`'
$NODISP timeout 60 $DOWNPOUR cluster --ps 1 --workers 2 --steps 60 --data synthetic --model mlp --hidden 32 \
    --quiet --view >"$TMP/nd.json" 2>"$TMP/nd3.err"
rc=$?
check "cluster --view without a display finishes (rc $rc)" test "$rc" -eq 0
check "... reaching its last step" test "$(json "$TMP/nd.json" global_step)" -eq 60
n=$(grep -c 'no display for --view: running headless' "$TMP/nd3.err")
check "... saying once that it runs headless ($n lines)" test "$n" -eq 1
check "... and starting no viewer" bash -c "! grep -qE 'viewer|downpour: view:' '$TMP/nd3.err'"

if ! start_xvfb; then
    skip "Xvfb is not installed or does not start (apt-get install xvfb): cluster --view is not tested"
    done_tests; exit
fi
N=$DISP
SYN="--data synthetic --model mlp --hidden 32 --quiet"
# The viewer closes mid-run: training goes on.
DISPLAY=:$N $DOWNPOUR cluster --ps 1 --workers 2 --steps 3000 $SYN --view >"$TMP/v1.json" 2>"$TMP/v1.err" &
RUN=$!
VIEW=""
for _ in $(seq 50); do VIEW=$(child_pid $RUN 'view --connect') && break; sleep 0.1; done
check "cluster --view starts the viewer (pid ${VIEW:-none})" test -n "$VIEW"
sleep 1
[ -n "$VIEW" ] && kill "$VIEW"
wait $RUN
check "run completes after its viewer closed mid-run" test $? -eq 0
check "launcher noted the viewer closing" grep -q "viewer closed; training goes on" "$TMP/v1.err"
check "run reached its last step" test "$(json "$TMP/v1.json" global_step)" -eq 3000
# The viewer stays open after the run; the launcher reports and waits for it.
DISPLAY=:$N $DOWNPOUR cluster --ps 1 --workers 2 --steps 100 $SYN --view >"$TMP/v2.json" 2>"$TMP/v2.err" &
RUN=$!
for _ in $(seq 100); do grep -q "close the viewer window" "$TMP/v2.err" && break; sleep 0.1; done
check "summary printed while the viewer is still open" test "$(json "$TMP/v2.json" global_step)" -eq 100
check "launcher asks to close the viewer" grep -q "training finished; close the viewer window to exit" "$TMP/v2.err"
VIEW=$(child_pid $RUN 'view --connect')
check "the viewer is still open after the run (pid ${VIEW:-none})" test -n "$VIEW"
[ -n "$VIEW" ] && kill "$VIEW"
wait $RUN
check "launcher exits 0 once the viewer closes" test $? -eq 0
check "... and prints its summary once, not again as it exits ($(grep -c '"global_step"' "$TMP/v2.json"))" \
    test "$(grep -c '"global_step"' "$TMP/v2.json")" -eq 1

# `downpour run` with a display: a real scenario's viewer watches the live run (a child of
# the run); a simulated one's opens on the trace once it is written (in the process: a
# window named Downpour). Closing either ends the run with 0.
printf '%s\n' '[scenario]' 'title = real view' 'engine = real' '[cluster]' 'ps = 1' 'workers = 2' \
    '[training]' 'steps = 100' 'data = synthetic' 'model = mlp' 'hidden = 32' >"$TMP/runreal.ini"
DISPLAY=:$N $DOWNPOUR run "$TMP/runreal.ini" --out "$TMP/runreal" >/dev/null 2>"$TMP/rr.err" &
RUN=$!
VIEW=""
for _ in $(seq 100); do VIEW=$(child_pid $RUN 'view --connect') && break; sleep 0.1; done
check "run of a real scenario on a display watches it live (viewer pid ${VIEW:-none})" test -n "$VIEW"
for _ in $(seq 100); do grep -q "close the viewer window" "$TMP/rr.err" && break; sleep 0.1; done
[ -n "$VIEW" ] && kill "$VIEW"
wait $RUN; rc=$?
check "... and ends with 0 once its viewer closes, the sheet written (rc $rc)" \
    bash -c "[ $rc -eq 0 ] && [ -s '$TMP/runreal/sheet.png' ]"
if command -v xwininfo >/dev/null; then
    printf '%s\n' '[scenario]' 'title = sim view' 'engine = sim' '[cluster]' 'ps = 1' 'workers = 4' \
        '[training]' 'steps = 200' >"$TMP/runsim.ini"
    DISPLAY=:$N $DOWNPOUR run "$TMP/runsim.ini" --out "$TMP/runsim" >/dev/null 2>"$TMP/rs.err" &
    RUN=$!
    win=0
    for _ in $(seq 100); do
        win=$(xwininfo -root -tree -display ":$N" 2>/dev/null | grep -c '"Downpour"')
        [ "$win" -ge 1 ] && break
        sleep 0.1
    done
    check "run of a simulated scenario on a display opens the viewer once its trace is written ($win window)" \
        bash -c "[ $win -ge 1 ] && grep -q 'wrote $TMP/runsim/trace.dptrace' '$TMP/rs.err'"
    kill -TERM $RUN   # SDL makes it a quit: the window closes as the user's close does
    wait $RUN; rc=$?
    check "... and ends with 0 once it closes (rc $rc)" test $rc -eq 0
else
    skip "run's viewer of a simulated scenario: no xwininfo (x11-utils) to see its window"
fi
kill $XVFB 2>/dev/null
done_tests
