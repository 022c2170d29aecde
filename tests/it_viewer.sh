#!/usr/bin/env bash
# it_viewer.sh — the viewer in a real window under Xvfb: replay a recorded trace with
# scripted key presses (--script), check the screenshots it saves (`s`) against the
# headless renderer and against expected pixels: each element's literal colour over as
# many pixels as it covers, and the help card against the same frame without it;
# then live: a hub, a real cluster feeding it, the viewer attached with --connect and
# closed mid-run, and the run and its trace must be unharmed. The window runs with leak
# detection off under ASan: SDL and X11 keep allocations to process exit. Without Xvfb it prints
# "skipped: why" and counts one skip (CI, which installs Xvfb, fails on it).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# pixels MODE ...: prints how many pixels of a PNG (8-bit RGB or RGBA) in the box
# [X0,X1) x [Y0,Y1) pass a test, so that a check can ask for as many as an element covers
# (one stray pixel of the right colour is not a badge, a card or a curve):
#   pixels color PNG R G B TOL X0 Y0 X1 Y1: within TOL (0-255, per channel) of (R,G,B)
#   pixels diff A.png B.png TOL X0 Y0 X1 Y1 [EX0 EY0 EX1 EY1]: where the two differ by more
#     than TOL, leaving out the second box when given
pixels() {
    python3 - "$@" <<'PY'
import sys
sys.path.insert(0, 'tests')
from png_compare import load   # (w, h, RGB rows): the one PNG reader of the tests
def px(img, x, y):
    return img[2][y][3 * x:3 * x + 3]
mode, args = sys.argv[1], sys.argv[2:]
if mode == 'color':
    a = load(args[0]); ref = list(map(int, args[1:4])); tol, x0, y0, x1, y1 = map(int, args[4:9])
    test = lambda x, y: all(abs(v - r) <= tol for v, r in zip(px(a, x, y), ref))
else:
    a, b = load(args[0]), load(args[1]); tol, x0, y0, x1, y1 = map(int, args[2:7])
    ex = list(map(int, args[7:11])) or [0, 0, 0, 0]
    assert a[:2] == b[:2], 'sizes differ'
    test = lambda x, y: not (ex[0] <= x < ex[2] and ex[1] <= y < ex[3]) and \
        any(abs(u - v) > tol for u, v in zip(px(a, x, y), px(b, x, y)))
print(sum(test(x, y) for y in range(max(0, y0), min(a[1], y1)) for x in range(max(0, x0), min(a[0], x1))))
PY
}

if ! start_xvfb; then
    skip "Xvfb is not installed or does not start (apt-get install xvfb): the window is not tested"
    done_tests
    exit 0
fi
export DISPLAY=":$DISP"

# ---- replay with scripted keys --------------------------------------------------------
T="$TMP/run.trace"
check "synthetic trace written" "$DOWNPOUR" render --write-synthetic "$T" --ps 2 --workers 6 --steps 40 >/dev/null
mkdir -p "$TMP/shots" "$TMP/cmp" "$TMP/clickshots"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view "$T" --paused --at 1.5 --size 1280x720 --screenshot-dir "$TMP/shots" \
    --script "s,p,s,p,space,wait:300,space,],],right,s,h,s,esc,q" >"$TMP/view.out" 2>"$TMP/view.err"
rc=$?
check "viewer quits on q (rc $rc)" [ "$rc" -eq 0 ]
cat "$TMP/view.err" | head -5
check "four screenshots saved" [ "$(grep -c '^saved ' "$TMP/view.out")" -eq 4 ]
# the message line each was saved under (the file leaves it out): none at first, then
# the previous screenshot's path
S1=$(grep '^saved ' "$TMP/view.out" | sed -n 1p | awk '{print $2}')
check "a screenshot's toast names its file: the second was saved under 'saved $S1'" \
    bash -c "grep '^saved ' '$TMP/view.out' | sed -n 1p | grep -q ' message=\$' &&
             grep '^saved ' '$TMP/view.out' | sed -n 2p | grep -qF ' message=saved $S1'"
# a scripted click on the timeline (click:X:Y, what a mouse press and release do) moves
# the replay there: the lanes span the trace left to right, so x 640 of 1280 lands in its
# middle third and x 1000 later
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view "$T" --paused --at 0 --size 1280x720 \
    --screenshot-dir "$TMP/clickshots" --script "click:640:690,wait:100,s,click:1000:690,wait:100,s,q" >"$TMP/click.out" 2>&1
read -r CT1 CT2 < <(sed -n 's/^saved [^ ]* t=\([0-9]*\) .*/\1/p' "$TMP/click.out" | tr '\n' ' ')
DUR=$("$DOWNPOUR" trace info --json "$T" | python3 -c "import json, sys; print(int(json.load(sys.stdin)['duration_s'] * 1e9))")
check "a click on the timeline moves the replay there (t ${CT1:-none} then ${CT2:-none} ns of $DUR)" \
    python3 -c "t1, t2, d = $CT1, $CT2, $DUR; assert d / 3 < t1 < 2 * d / 3 < t2 < d, (t1, t2, d)"
"$DOWNPOUR" render "$T" --at 1.5 --out "$TMP/ref.png"
"$DOWNPOUR" render "$T" --at 1.5 --placement --out "$TMP/ref_p.png"
"$DOWNPOUR" render "$T" --out "$TMP/end.png"
"$DOWNPOUR" render "$T" --at 999 --out "$TMP/past.png" 2>"$TMP/past.err"
check "render --at past the end draws the end" cmp -s "$TMP/end.png" "$TMP/past.png"
check "... and says so" grep -q 'past the end of .*drawing the end' "$TMP/past.err"
check "paused frame = headless render, byte for byte" cmp -s "$TMP/ref.png" "$TMP/shots/downpour-0001.png"
check "placement view = headless --placement render" cmp -s "$TMP/ref_p.png" "$TMP/shots/downpour-0002.png"
# colours are literal RGB: Okabe-Ito yellow (paused), Tol light blue (the first device)
n=$(pixels color "$TMP/shots/downpour-0001.png" 240 228 66 3 640 0 1280 40)
check "paused badge: >= 200 yellow pixels in the top bar's right half ($n)" [ "${n:-0}" -ge 200 ]
n=$(pixels color "$TMP/shots/downpour-0002.png" 119 170 221 3 10 180 880 500)
check "placement rows: >= 5000 pixels in the first device's light blue ($n)" [ "${n:-0}" -ge 5000 ]
line3=$(sed -n 3p "$TMP/view.out")
check "after play, pause, ]], right: paused at 5x ($line3)" grep -q 'paused=1 speed=5 placement=0 help=0' <<<"$line3"
t3=$(sed -n 's/.* t=\([0-9]*\).*/\1/p' <<<"$line3")
# --speed is taken as given; [ and ] then step through the presets from there (the
# screenshots' folder, with its parent, is made as the first is saved)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view "$T" --paused --speed 3 --size 640x400 \
    --screenshot-dir "$TMP/speed/shots" --script "s,],s,[,[,s,[,[,[,[,[,[,[,[,[,[,s,q" >"$TMP/speed.out" 2>&1
speeds=$(sed -n 's/^saved .* speed=\([0-9.]*\) .*/\1/p' "$TMP/speed.out" | tr '\n' ' ')
check "--speed 3 plays at 3x; ] goes to 5x, [[ to 2x then 1x, and the slowest stays 0.01x ($speeds)" \
    test "$speeds" = "3 5 1 0.01 "
check "time moved forward while playing" [ "${t3:-0}" -gt 1500000000 ]
check "help overlay shown" grep -q 'help=1' <<<"$(sed -n 4p "$TMP/view.out")"
# Shots 3 and 4 are the same paused frame without and with help. The card is centred in
# the window and grows with its rows (16 keys at 1280x720: about 330..954 x 115..610 with
# its shadow; a key more adds ~28 px of height, and the box below must widen with it);
# inside it, 384..896 x 216..504 is the middle 40 % of the window, where the frame itself
# has little pure white (pull outlines).
H3=$TMP/shots/downpour-0003.png H4=$TMP/shots/downpour-0004.png
n=$(pixels color "$H4" 255 255 255 3 384 216 896 504)
check "help: >= 70 % of the window's middle is the card's white ($n of 147456)" [ "${n:-0}" -ge 103219 ]
n=$(pixels diff "$H3" "$H4" 5 384 216 896 504)
check "help: >= 50 % of the window's middle differs from the frame without help ($n of 147456)" \
    [ "${n:-0}" -ge 73728 ]
n3=$(pixels color "$H3" 0 114 178 3 384 216 512 504) n4=$(pixels color "$H4" 0 114 178 3 384 216 512 504)
check "help: key names in accent blue in the card's left column ($n4 vs $n3 without help)" \
    [ "${n4:-0}" -ge $(( ${n3:-0} + 150 )) ]
n=$(pixels diff "$H3" "$H4" 0 0 0 1280 720 320 104 964 620)
check "help: the frame outside the card is unchanged ($n pixels differ)" [ "${n:--1}" -eq 0 ]

# ---- fork from here: f opens the chooser, Enter forks, the simulated run shows beside -----
# A recorded real run (sync, 1 ps + 4 workers, 300 steps), paused at 0.5 s; `f` opens the
# chooser (its first row, add a backup worker), Enter asks lab's fork for the continuation,
# which is drawn as B. Shots: before f, the chooser, the fork beside the replay.
R=tests/data/real_sync_1ps_4w_slow.trace
mkdir -p "$TMP/fork"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 30 "$DOWNPOUR" view "$R" --paused --at 0.5 --size 1280x720 \
    --screenshot-dir "$TMP/fork" --fork-dir "$TMP/fork" --script "s,f,s,enter,wait:300,s,q" >"$TMP/fork.out" 2>"$TMP/fork.err"
rc=$?
check "fork: the viewer quits on q (rc $rc)" [ "$rc" -eq 0 ]
grep -q '^saved ' "$TMP/fork.out" || tail -5 "$TMP/fork.err"
F1=$(grep '^saved ' "$TMP/fork.out" | sed -n 1p) F2=$(grep '^saved ' "$TMP/fork.out" | sed -n 2p)
F3=$(grep '^saved ' "$TMP/fork.out" | sed -n 3p) FL=$(grep '^forked ' "$TMP/fork.out")
check "fork: f opens the chooser on its first choice (fork_menu=1)" grep -q 'fork_menu=1' <<<"$F2"
P1=$(awk '{print $2}' <<<"$F1") P2=$(awk '{print $2}' <<<"$F2") P3=$(awk '{print $2}' <<<"$F3")
n1=$(pixels color "$P1" 0 114 178 3 0 44 880 570) n2=$(pixels color "$P2" 0 114 178 3 0 44 880 570)
check "fork: the chooser's highlighted row, >= 8000 more accent-blue pixels over the cluster ($n2 vs $n1)" \
    [ "${n2:-0}" -ge $(( ${n1:-0} + 8000 )) ]
echo "$FL"
N=$(sed -n 's/.* at_step=\([0-9]*\) .*/\1/p' <<<"$FL") FP=$(awk '{print $2}' <<<"$FL")
check "fork: Enter forks at the paused moment's global step with the first choice ($FL)" \
    grep -q "at_step=[0-9]* set=backup_workers=1 first_frame_ms=" <<<"$FL"
check "fork: the next frame is the compare view with the simulated fork as B ($F3)" \
    grep -q "compare=1 compare_engine=sim fork_step=$N fork=$FP" <<<"$F3"
check "fork: ... under the toast 'forked at step $N: backup_workers=1 (simulated, right)'" \
    grep -qF " message=forked at step $N: backup_workers=1 (simulated, right)" <<<"$F3"
# literal RGB: the SIMULATED badge is Okabe-Ito reddish purple, REAL bluish green
n=$(pixels color "$P3" 204 121 167 3 640 0 1280 34)
check "fork: B's top bar is labelled SIMULATED (>= 400 reddish-purple pixels: $n)" [ "${n:-0}" -ge 400 ]
n=$(pixels color "$P3" 204 121 167 3 0 0 640 34)
check "fork: A's top bar is not ($n)" [ "${n:--1}" -eq 0 ]
n=$(pixels color "$P3" 0 158 115 3 0 0 640 34)
check "fork: A's top bar says REAL (>= 300 bluish-green pixels: $n)" [ "${n:-0}" -ge 300 ]
n=$(pixels diff "$P1" "$P3" 5 640 34 1280 390)
check "fork: B's half is a cluster of its own, not the replay's panels (>= 20000 pixels differ: $n)" [ "${n:-0}" -ge 20000 ]
"$DOWNPOUR" trace export --chrome "$TMP/fork.json" "$FP" >/dev/null 2>&1
"$DOWNPOUR" trace info --json "$FP" >"$TMP/fork.info" 2>/dev/null
first=$(python3 -c "
import json, sys
d = json.load(open('$TMP/fork.json')); e = d['traceEvents'] if isinstance(d, dict) else d
print(min(x['args']['global_step'] for x in e if x.get('name') == 'global_step' and x.get('ph') == 'C'))" 2>/dev/null)
check "fork: the fork's first global step is N + 1 ($first, N = $N)" [ "${first:-0}" -eq $(( ${N:-0} + 1 )) ]
fm=$(python3 -c "
import json; m = json.load(open('$TMP/fork.info'))['metadata']; f = m.get('config', m)['fork']
print(f['at_step'], ','.join(f['set']))" 2>/dev/null)
check "fork: its metadata names the step and the changed key ($fm)" [ "$fm" = "$N backup_workers=1" ]

# ---- live: hub + real cluster + viewer closed mid-run --------------------------------
"$DOWNPOUR" hub --listen 127.0.0.1:0 --trace "$TMP/live.trace" --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 50); do grep -q 'listening on' "$TMP/hub.out" && break; sleep 0.1; done
ADDR=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$TMP/hub.out")
check "hub listening ($ADDR)" [ -n "$ADDR" ]
"$DOWNPOUR" cluster --ps 1 --workers 2 --mode sync --steps 1500 --model mlp --hidden 256 --batch 128 \
    --data synthetic --slow-worker 1:2 --eval-every 500 --hub "$ADDR" --quiet >"$TMP/cluster.out" 2>"$TMP/cluster.err" &
CL=$!
sleep 0.5
vstart=$(date +%s.%N)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view --connect "$ADDR" --screenshot-dir "$TMP/shots" \
    --script "wait:800,s,space,wait:150,s,wait:300,s,c,wait:250,s,q" >"$TMP/live.out" 2>"$TMP/live.err"
rc=$?
echo "live viewer ran $(python3 -c "import time; print(round(time.time() - $vstart, 1))") s"
check "live viewer exits cleanly mid-run (rc $rc)" [ "$rc" -eq 0 ]
check "four live screenshots" [ "$(grep -c '^saved ' "$TMP/live.out")" -eq 4 ]
s1=$(sed -n 1p "$TMP/live.out" | awk '{print $2}')
# literal RGB: Okabe-Ito vermillion (LIVE, B's loss) and blue (REPLAY, A's loss), Tol indigo
n=$(pixels color "$s1" 213 94 0 3 900 0 1280 40)
check "LIVE badge: >= 600 vermillion pixels in the top bar's right end ($n)" [ "${n:-0}" -ge 600 ]
n=$(pixels color "$s1" 51 34 136 3 0 44 880 520)
check "live frame: >= 200 pixels of the first variable's indigo in the cluster ($n)" [ "${n:-0}" -ge 200 ]
check "pausing the live view is marked" grep -q 'paused=1' <<<"$(sed -n 2p "$TMP/live.out")"
lt2=$(sed -n 2p "$TMP/live.out" | sed 's/.* t=\([0-9]*\) .*/\1/') lt3=$(sed -n 3p "$TMP/live.out" | sed 's/.* t=\([0-9]*\) .*/\1/')
check "a paused live view stays where it was paused while the run goes on (t $lt2, 300 ms later $lt3)" \
    test -n "$lt2" -a "$lt2" = "$lt3"
check "catch up resumes" grep -q 'paused=0' <<<"$(sed -n 4p "$TMP/live.out")"
still=0; kill -0 "$CL" 2>/dev/null && still=1; echo "cl=$CL still=$still"; tail -3 "$TMP/cluster.err"
check "cluster still running when the viewer closed" [ "$still" -eq 1 ]
# the live run beside a recorded one: A live, B replayed on A's clock, both loss curves
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view --connect "$ADDR" --compare "$T" \
    --size 1280x720 --screenshot-dir "$TMP/cmp" --script "wait:500,s,q" >"$TMP/lcmp.out" 2>"$TMP/lcmp.err"
rc=$?
check "live viewer with --compare exits cleanly (rc $rc)" [ "$rc" -eq 0 ]
c1=$(sed -n 1p "$TMP/lcmp.out" | awk '{print $2}')
check "live compare screenshot saved ($c1)" [ -s "$c1" ]
n=$(pixels color "$c1" 213 94 0 3 560 0 640 40)
check "A (live): >= 600 pixels of the LIVE badge's vermillion at its top bar's end ($n)" [ "${n:-0}" -ge 600 ]
n=$(pixels color "$c1" 213 94 0 12 1100 0 1280 40)
check "B (recorded): no vermillion at its top bar's end ($n)" [ "${n:--1}" -eq 0 ]
n=$(pixels color "$c1" 0 114 178 3 1180 0 1280 40)
check "B (recorded): >= 600 pixels of the REPLAY badge's blue at its top bar's end ($n)" [ "${n:-0}" -ge 600 ]
# the strip's plot, below its title line (which is in the same two colours); A's curve
# starts when the viewer attached (~0.5 s of a live run), so a short line is enough
n=$(pixels color "$c1" 0 114 178 3 20 570 1260 710)
check "compare strip: A's loss curve, >= 40 blue pixels in the plot ($n)" [ "${n:-0}" -ge 40 ]
n=$(pixels color "$c1" 213 94 0 3 20 570 1260 710)
check "compare strip: B's loss curve, >= 100 vermillion pixels in the plot ($n)" [ "${n:-0}" -ge 100 ]
wait "$CL"
rc=$?
check "cluster finishes normally after the viewer left (rc $rc)" [ "$rc" -eq 0 ]
kill -INT "$HUB"
wait "$HUB"
check "hub trace is valid" "$DOWNPOUR" trace validate "$TMP/live.trace"
check "live trace renders" "$DOWNPOUR" render "$TMP/live.trace" --out "$TMP/live.png"
cp "$s1" "$TMP/../viz_live_last.png" 2>/dev/null
kill "$XVFB" 2>/dev/null
wait "$XVFB" 2>/dev/null
done_tests
