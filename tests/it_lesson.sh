#!/usr/bin/env bash
# it_lesson.sh — a viewer that explains, in a real window under Xvfb: `downpour run` a tiny
# lesson (engine real, synthetic data, 40 steps, a question at step 10) with --no-view to
# get a trace, replay it with scripted keys and check the screenshots it saves (`s`):
# playback stops at step 10 with the question card up (a large white card with text, no
# choice highlighted); space reveals the answer (the right choice filled in Okabe-Ito
# bluish green #009E73, literal RGB, the wrong ones not); space again plays on (the headless
# caption bar is checked in test_viz_lesson.c, through viz_render_image); a click on the
# caption bar opens its history and a second closes it. Rows, the card and the bar come from
# the window's "saved" line; pixels are read by tests/png_compare.py's reader, not the viewer.
# Without Xvfb it prints "skipped: why" and counts one skip.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# count PNG R G B TOL X0 Y0 X1 Y1: pixels of [X0,X1) x [Y0,Y1) within TOL of (R,G,B);
# count PNG dark X0 Y0 X1 Y1: pixels darker than 128 in every channel (text)
count() {
    python3 - "$@" <<'PY'
import sys
sys.path.insert(0, 'tests')
from png_compare import load
w, h, rows = load(sys.argv[1])
dark = sys.argv[2] == 'dark'
ref, tol = (None, 0) if dark else (list(map(int, sys.argv[2:5])), int(sys.argv[5]))
x0, y0, x1, y1 = map(int, sys.argv[3:7] if dark else sys.argv[6:10])
n = 0
for y in range(max(0, y0), min(h, y1)):
    r = rows[y]
    for x in range(max(0, x0), min(w, x1)):
        p = r[3 * x:3 * x + 3]
        n += all(v < 128 for v in p) if ref is None else all(abs(v - c) <= tol for v, c in zip(p, ref))
print(n)
PY
}
# field NAME LINE: the value of NAME=... in a "saved" line, commas as spaces
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2" | tr ',' ' '; }

cat >"$TMP/lesson.ini" <<'INI'
[scenario]
title = it_lesson: a question at step 10
engine = real
seed = 1

[cluster]
ps = 1
workers = 2

[training]
mode = async
model = mlp
hidden = 16
batch = 16
steps = 40
data = synthetic
synthetic_samples = 200

[lesson]
number = 1
duration = 1min
at_step.10 = Async: each push is a global step; nobody waits at a barrier.
ask_at_step.10 = Which mode never waits at a barrier? | sync | async | neither | async
INI
check "the lesson runs (real, synthetic, 40 steps)" "$DOWNPOUR" run "$TMP/lesson.ini" --out "$TMP/out" --no-view --set quiet=true
T="$TMP/out/trace.dptrace"
[ -f "$T" ] || T=$(find "$TMP/out" -name trace.dptrace | head -1)
check "it wrote a trace ($T)" [ -s "$T" ]

if ! start_xvfb; then
    skip "Xvfb is not installed or does not start (apt-get install xvfb): the window is not tested"
    done_tests
    exit 0
fi
export DISPLAY=":$DISP"

mkdir -p "$TMP/shots"
# plays from the start at 1x; the run is well under 2 s, so step 10 is reached in the wait
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 30 "$DOWNPOUR" view "$T" --at 0 --size 1280x720 \
    --screenshot-dir "$TMP/shots" --script "wait:3000,s,space,wait:300,s,space,wait:300,s,q" >"$TMP/view.out" 2>"$TMP/view.err"
rc=$?
check "viewer quits on q (rc $rc)" [ "$rc" -eq 0 ]
head -5 "$TMP/view.err"
check "three screenshots saved" [ "$(grep -c '^saved ' "$TMP/view.out")" -eq 3 ]
l1=$(grep '^saved ' "$TMP/view.out" | sed -n 1p)
l2=$(grep '^saved ' "$TMP/view.out" | sed -n 2p)
l3=$(grep '^saved ' "$TMP/view.out" | sed -n 3p)
s1="$TMP/shots/downpour-0001.png" s2="$TMP/shots/downpour-0002.png"
check "stopped for question 1 at step 10, not revealed: '${l1#* t=}'" grep -q 'paused=1 .*question=1 revealed=0' <<<"$l1"
check "after space: revealed, still paused: '${l2#* t=}'" grep -q 'paused=1 .*question=1 revealed=1' <<<"$l2"
check "the answer is choice B (index 1, from the lesson file)" grep -q ' answer=1 ' <<<"$l1"
t2=$(field t "$l2") t3=$(field t "$l3")
check "space again plays on: no question, later than the stop ($t3 > $t2): '${l3#* t=}'" \
    eval "grep -q 'captions=1 history=0 question=0' <<<\"\$l3\" && [ \"${t3:-0}\" -gt \"${t2:-0}\" ]"
read -r cx0 cy0 cx1 cy1 <<<"$(field card "$l1")"
area=$(( (cx1 - cx0) * (cy1 - cy0) ))
check "the card is large: ${area} px >= 1/6 of 1280x720" [ "${area:-0}" -ge $((1280 * 720 / 6)) ]
n=$(count "$s1" 255 255 255 2 "$cx0" "$cy0" "$cx1" "$cy1")
check "question card: >= 60% of its $area px white ($n)" [ "${n:-0}" -ge $((area * 6 / 10)) ]
n=$(count "$s1" dark "$cx0" "$cy0" "$cx1" "$cy1")
check "question card: >= 400 dark pixels of text ($n)" [ "${n:-0}" -ge 400 ]
for i in 0 1 2; do
    read -r x0 y0 x1 y1 <<<"$(field choice$i "$l1")"
    a=$(( (x1 - x0) * (y1 - y0) ))
    g1=$(count "$s1" 0 158 115 3 "$x0" "$y0" "$x1" "$y1")
    g2=$(count "$s2" 0 158 115 3 "$x0" "$y0" "$x1" "$y1")
    check "before the answer choice $i is not green ($g1 px)" [ "${g1:-999999}" -lt $((a / 100)) ]
    if [ "$i" -eq 1 ]; then
        check "after the key the right choice B is green over >= 50% of $a px ($g2)" [ "${g2:-0}" -ge $((a / 2)) ]
    else
        check "after the key wrong choice $i is not green ($g2 px)" [ "${g2:-999999}" -lt $((a / 100)) ]
    fi
done

# A click on the caption bar opens the caption history over the cluster, a second closes
# it: paused where the third screenshot was, the bar's rectangle read from its line.
read -r bx0 by0 bx1 by1 <<<"$(field bar "$l3")"
check "the third screenshot's line gives the caption bar ($bx0 $by0 $bx1 $by1)" [ -n "$by1" ]
bx=$(( (${bx0:-0} + ${bx1:-0}) / 2 )) by=$(( (${by0:-0} + ${by1:-0}) / 2 ))
mkdir -p "$TMP/hshots"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 30 "$DOWNPOUR" view "$T" \
    --at "$(python3 -c "print(${t3:-0} / 1e9)")" --paused --size 1280x720 --screenshot-dir "$TMP/hshots" \
    --script "s,click:$bx:$by,wait:200,s,click:$bx:$by,wait:200,s,q" >"$TMP/hview.out" 2>"$TMP/hview.err"
hs=$(grep '^saved ' "$TMP/hview.out" | sed 's/.* \(history=[0-9]\).*/\1/' | tr '\n' ' ')
check "caption bar clicked twice: the history opens, then closes ($hs)" \
    test "$hs" = "history=0 history=1 history=0 "
# the history's panel, above the bar: most of a band there changes as it opens
changed=$(python3 - "$TMP/hshots/downpour-0001.png" "$TMP/hshots/downpour-0002.png" \
    "${bx0:-0}" "$(( ${by0:-0} - 150 ))" "${bx1:-0}" "$(( ${by0:-0} - 20 ))" <<'PY'
import sys
sys.path.insert(0, 'tests')
from png_compare import load
(_, _, a), (_, _, b) = load(sys.argv[1]), load(sys.argv[2])
x0, y0, x1, y1 = map(int, sys.argv[3:7])
print(sum(a[y][3 * x:3 * x + 3] != b[y][3 * x:3 * x + 3] for y in range(y0, y1) for x in range(x0, x1)))
PY
)
band=$(( (${bx1:-0} - ${bx0:-0}) * 130 ))
check "... and draws its panel: $changed of the $band px above the bar change" [ "${changed:-0}" -ge $((band / 3)) ]
cp "$s1" "$TMP/../lesson_question_last.png" 2>/dev/null
cp "$s2" "$TMP/../lesson_answer_last.png" 2>/dev/null
kill "$XVFB" 2>/dev/null
wait "$XVFB" 2>/dev/null
done_tests
