#!/usr/bin/env bash
# it_viewer.sh — the viewer in a real window under Xvfb: replay a recorded trace with
# scripted key presses (--script), check the screenshots it saves (`s`) against the
# headless renderer and against expected pixels (paused badge, placement table, help);
# then live: a hub, a real cluster feeding it, the viewer attached with --connect and
# closed mid-run, and the run and its trace must be unharmed. The window runs with leak
# detection off under ASan: SDL and X11 keep allocations to process exit. Without Xvfb it prints
# "skipped: why" and counts one skip (CI, which installs Xvfb, fails on it).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# has_color PNG R G B X0 Y0 X1 Y1: some pixel in the box is within 12 of (R,G,B)
has_color() {
    python3 - "$@" <<'PY'
import struct, sys, zlib
path, r, g, b, x0, y0, x1, y1 = sys.argv[1], *map(int, sys.argv[2:])
data = open(path, 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat, w = 8, b'', 0
while pos < len(data):
    n, typ = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        bpp = {6: 4, 2: 3}[ctype]
    elif typ == b'IDAT':
        idat += body
    pos += 12 + n
raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        c = prev[i - bpp] if i >= bpp else 0
        u = prev[i]
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + u) & 255
        elif f == 3: line[i] = (line[i] + (a + u) // 2) & 255
        elif f == 4:
            p = a + u - c; pa, pb, pc = abs(p - a), abs(p - u), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else u if pb <= pc else c)) & 255
    rows.append(line); prev = line
for y in range(max(0, y0), min(h, y1)):
    for x in range(max(0, x0), min(w, x1)):
        px = rows[y][x * bpp:x * bpp + 3]
        if abs(px[0] - r) <= 12 and abs(px[1] - g) <= 12 and abs(px[2] - b) <= 12:
            sys.exit(0)
sys.exit(1)
PY
}
lacks_color() { ! has_color "$@"; }

if ! command -v Xvfb >/dev/null 2>&1; then
    skip "Xvfb is not installed (apt-get install xvfb): the window is not tested"
    done_tests
    exit 0
fi
DISP=$(( 90 + RANDOM % 400 ))
while [ -e "/tmp/.X11-unix/X$DISP" ] || [ -e "/tmp/.X$DISP-lock" ]; do DISP=$((DISP + 1)); done
Xvfb ":$DISP" -screen 0 1280x800x24 -nolisten tcp >"$TMP/xvfb.log" 2>&1 &
XVFB=$!
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$DISP" ] && break; sleep 0.1; done
export DISPLAY=":$DISP"

# ---- replay with scripted keys --------------------------------------------------------
T="$TMP/run.trace"
check "synthetic trace written" "$DOWNPOUR" render --write-synthetic "$T" --ps 2 --workers 6 --steps 40 >/dev/null
mkdir -p "$TMP/shots" "$TMP/cmp"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view "$T" --paused --at 1.5 --size 1280x720 --screenshot-dir "$TMP/shots" \
    --script "s,p,s,p,space,wait:300,space,],],right,s,h,s,esc,q" >"$TMP/view.out" 2>"$TMP/view.err"
rc=$?
check "viewer quits on q (rc $rc)" [ "$rc" -eq 0 ]
cat "$TMP/view.err" | head -5
check "four screenshots saved" [ "$(grep -c '^saved ' "$TMP/view.out")" -eq 4 ]
"$DOWNPOUR" render "$T" --at 1.5 --out "$TMP/ref.png"
"$DOWNPOUR" render "$T" --at 1.5 --placement --out "$TMP/ref_p.png"
"$DOWNPOUR" render "$T" --out "$TMP/end.png"
"$DOWNPOUR" render "$T" --at 999 --out "$TMP/past.png" 2>"$TMP/past.err"
check "render --at past the end draws the end" cmp -s "$TMP/end.png" "$TMP/past.png"
check "... and says so" grep -q 'past the end of .*drawing the end' "$TMP/past.err"
check "paused frame = headless render, byte for byte" cmp -s "$TMP/ref.png" "$TMP/shots/downpour-0001.png"
check "placement view = headless --placement render" cmp -s "$TMP/ref_p.png" "$TMP/shots/downpour-0002.png"
check "paused badge (yellow) in the top bar" has_color "$TMP/shots/downpour-0001.png" 240 228 66 640 0 1280 40
check "placement rows coloured by device" has_color "$TMP/shots/downpour-0002.png" 119 170 221 10 180 880 500
line3=$(sed -n 3p "$TMP/view.out")
check "after play, pause, ]], right: paused at 5x ($line3)" grep -q 'paused=1 speed=5 placement=0 help=0' <<<"$line3"
t3=$(sed -n 's/.* t=\([0-9]*\).*/\1/p' <<<"$line3")
check "time moved forward while playing" [ "${t3:-0}" -gt 1500000000 ]
check "help overlay shown" grep -q 'help=1' <<<"$(sed -n 4p "$TMP/view.out")"
check "help card is a big white area" has_color "$TMP/shots/downpour-0004.png" 255 255 255 500 300 780 420

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
    --script "wait:800,s,space,wait:150,s,c,wait:250,s,q" >"$TMP/live.out" 2>"$TMP/live.err"
rc=$?
echo "live viewer ran $(python3 -c "import time; print(round(time.time() - $vstart, 1))") s"
check "live viewer exits cleanly mid-run (rc $rc)" [ "$rc" -eq 0 ]
check "three live screenshots" [ "$(grep -c '^saved ' "$TMP/live.out")" -eq 3 ]
s1=$(sed -n 1p "$TMP/live.out" | awk '{print $2}')
check "LIVE badge (vermillion) in the top bar" has_color "$s1" 213 94 0 900 0 1280 40
check "live frame shows the first variable bar (indigo)" has_color "$s1" 51 34 136 0 44 880 520
check "pausing the live view is marked" grep -q 'paused=1' <<<"$(sed -n 2p "$TMP/live.out")"
check "catch up resumes" grep -q 'paused=0' <<<"$(sed -n 3p "$TMP/live.out")"
still=0; kill -0 "$CL" 2>/dev/null && still=1; echo "cl=$CL still=$still"; tail -3 "$TMP/cluster.err"
check "cluster still running when the viewer closed" [ "$still" -eq 1 ]
# the live run beside a recorded one: A live, B replayed on A's clock, both loss curves
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 20 "$DOWNPOUR" view --connect "$ADDR" --compare "$T" \
    --size 1280x720 --screenshot-dir "$TMP/cmp" --script "wait:500,s,q" >"$TMP/lcmp.out" 2>"$TMP/lcmp.err"
rc=$?
check "live viewer with --compare exits cleanly (rc $rc)" [ "$rc" -eq 0 ]
c1=$(sed -n 1p "$TMP/lcmp.out" | awk '{print $2}')
check "live compare screenshot saved ($c1)" [ -s "$c1" ]
check "A (live) has the LIVE badge" has_color "$c1" 213 94 0 560 0 640 40
check "B (recorded) has no LIVE badge" lacks_color "$c1" 213 94 0 1100 0 1280 40
check "B (recorded) has the REPLAY badge" has_color "$c1" 0 114 178 1180 0 1280 40
check "both loss curves in the shared strip" has_color "$c1" 0 114 178 20 560 1260 710
check "B's loss curve (vermillion) in the strip" has_color "$c1" 213 94 0 20 560 1260 710
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
