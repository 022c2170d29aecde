#!/usr/bin/env bash
# it_web.sh — the class in a browser: `downpour serve` on a recorded trace and `downpour hub
# --http` on a live run. (a) headless Chromium opens the page positioned at 2.5 s and its
# screenshot must hold the frame `downpour render --at 2.5` draws (and not the one of
# 2.6 s); (b) play / pause / step / back through the endpoints the page's buttons call,
# checked on the frames the page's stream delivers; two pages at one moment share one
# drawn frame; --follow moves every page; (c) 50 loopback clients, one stalled: it alone
# is dropped and counted, the other 49 keep receiving; the connection cap refuses and
# counts; (d) a lesson: the page stops at the lesson's pauses and questions, its caption
# text is the viewer's caption bar's (tests/tool_caption) at the frame's moment, 20 answers
# from Python and one clicked in Chromium (tests/web_browser.py: real mouse events over
# the DevTools pipe) are counted on /answers, on the page and on the terminal (rate-limited),
# and bad input on every endpoint gets a one-line error; (e) a client that reads slowly
# skips frames, then is dropped past the bound while a normal one keeps receiving; (f)
# `view --serve --follow` under Xvfb: the page follows the window, and the answers given
# on a lesson window's page show on the window's message line. Clients are
# tests/web_client.py (standard library); every wait is bounded. Without chromium or
# Xvfb those checks print "skipped: why" (CI installs both and fails).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

T=scenarios/recorded/sync-vs-async--mode-sync.dptrace     # 10.4 s, 1 ps + 4 workers
LONG=scenarios/recorded/live-sync--run.dptrace            # 61 s: keeps playing through (c)
LES=scenarios/recorded/lesson-04-first-cluster--run.dptrace  # questions at steps 10 150 240 400
W=960 H=540 WIN_W=1000 WIN_H=640
CLIENT="python3 tests/web_client.py"

# serve NAME ARGS...: starts `downpour serve ARGS` on a free loopback port in the
# background; sets PID_<NAME> and URL_<NAME> (empty when it did not start in 10 s).
serve() {
    local name=$1; shift
    "$DOWNPOUR" serve "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    printf -v "PID_$name" '%s' $!
    for _ in $(seq 100); do grep -q '^serving ' "$TMP/$name.out" && break; sleep 0.1; done
    printf -v "URL_$name" '%s' "$(awk '/^serving /{print $2}' "$TMP/$name.out")"
}
# stop PID: SIGINT, then its exit status (a non-zero one is also noted in STOP_BAD).
STOP_BAD=""
stop() {
    kill -INT "$1" 2>/dev/null
    wait "$1"
    local rc=$?
    [ "$rc" -eq 0 ] || STOP_BAD="$STOP_BAD $1:rc$rc"
    return "$rc"
}
# render_ns NS OUT: `downpour render` of the moment NS ns of $T, paused, as a page shows it;
# --at gets NS + 0.4 ns in seconds so that the renderer's conversion lands on NS itself.
render_ns() {
    "$DOWNPOUR" render "$T" --at "$(python3 -c "print('%.10f' % (($1 + 0.4) / 1e9))")" \
        --size ${W}x$H --out "$2" 2>/dev/null
}
# val FILE KEY: the value of "KEY value" in FILE.
val() { awk -v k="$2" '$1 == k {print $2; exit}' "$1"; }

# ---- the command line --------------------------------------------------------------------
"$DOWNPOUR" serve "$TMP/none.dptrace" --listen 127.0.0.1:0 >/dev/null 2>"$TMP/bad.err"
rc=$?
check "a missing trace: rc 1 and one line naming it (rc $rc)" \
    [ "$rc" -eq 1 -a "$(grep -c "none.dptrace" "$TMP/bad.err")" -eq 1 -a "$(wc -l <"$TMP/bad.err")" -eq 1 ]
"$DOWNPOUR" serve "$T" --listen 127.0.0.1:99999 >/dev/null 2>"$TMP/bad.err"
rc=$?
check "a bad --listen: rc 2, one line naming the flag and the address (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/bad.err') -eq 1 ] && grep -q -- \"serve: --listen: bad address '127.0.0.1:99999'\" '$TMP/bad.err'"
serve any "$T" --listen 0.0.0.0:0 --size ${W}x$H
if command -v chromium >/dev/null 2>&1; then   # its page, opened over loopback
    timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/chromium-any" \
        --virtual-time-budget=3000 --dump-dom "http://127.0.0.1:${URL_any##*:}?paused=1" >"$TMP/dom-any.html" 2>/dev/null
fi
stop "$PID_any"
check "a non-loopback address is served with a warning on stderr" grep -q 'warning: .* not a loopback address' "$TMP/any.err"
# the address to share: this machine's first IPv4 address that is up and not loopback
# (ip's list, in the kernel's interface order), else its host name
share=$(ip -o -4 addr show up 2>/dev/null | awk '$2 != "lo" {sub(/\/.*/, "", $4); print $4; exit}')
[ -n "$share" ] || share=$(hostname)
check "... and the address to share is this machine's, $share, not the wildcard one" \
    grep -q "students open http://$share:[0-9]*/" "$TMP/any.err"
if ! command -v chromium >/dev/null 2>&1; then
    skip "chromium is not installed: the page of a server on 0.0.0.0 is not opened"
else
    check "... and its page tells the students that address" grep -q "Students open <b>http://$share:[0-9]*/</b>" "$TMP/dom-any.html"
fi

# ---- (a) a real browser ------------------------------------------------------------------
serve A "$T" --listen 127.0.0.1:0 --size ${W}x$H --idle-timeout 3
check "serve prints its loopback address ($URL_A)" grep -q '^http://127\.0\.0\.1:[0-9]*/$' <<<"$URL_A"
"$DOWNPOUR" render "$T" --at 2.5 --size ${W}x$H --out "$TMP/ref.png"
"$DOWNPOUR" render "$T" --at 2.6 --size ${W}x$H --out "$TMP/wrong.png"
if ! command -v chromium >/dev/null 2>&1; then
    skip "chromium is not installed (apt-get install chromium): the page is not tested in a browser"
else
    timeout 90 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$TMP/chromium" --virtual-time-budget=2000 --screenshot="$TMP/shot.png" \
        --window-size=$WIN_W,$WIN_H "${URL_A}?at=2.5&paused=1" >"$TMP/chromium.log" 2>&1
    check "the browser's screenshot is taken (${WIN_W}x$WIN_H)" \
        [ "$(python3 tests/png_compare.py size "$TMP/shot.png" 2>/dev/null)" = "$WIN_W $WIN_H" ]
    # The frame is the page's first element, at (0, 0), drawn 1:1 (the window is wider);
    # the virtual-time budget lets the page's first /state poll fill its bar before the shot.
    n=$(python3 tests/png_compare.py diff "$TMP/shot.png" "$TMP/ref.png" 16 0 0 $W $H)
    check "the page shows the 2.5 s frame: <= 518 of 518400 pixels off by > 16 from render --at 2.5 ($n)" \
        [ "${n:-999999}" -le 518 ]
    n=$(python3 tests/png_compare.py diff "$TMP/shot.png" "$TMP/wrong.png" 16 0 0 $W $H)
    check "... a tolerance another moment exceeds: render --at 2.6 is off in > 518 pixels ($n)" \
        [ "${n:-0}" -gt 518 ]
    [ -n "${DOWNPOUR_WEB_SHOT:-}" ] && cp "$TMP/shot.png" "$DOWNPOUR_WEB_SHOT"
    timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/chromium" \
        --virtual-time-budget=3000 --dump-dom "${URL_A}?at=2.5&paused=1" >"$TMP/dom.html" 2>/dev/null
    check "the page shows the address to share ($URL_A)" grep -q "id=\"share\">.*<b>$URL_A</b>" "$TMP/dom.html"
    # The scrubber against the server's /state of that page, read over HTTP by the script:
    # where it stands for 2.5 s, then a real click on its middle moves the page there.
    timeout 90 python3 tests/web_browser.py scrub "${URL_A}?at=2.5&paused=1&id=scrub" scrub >"$TMP/scrub.txt" 2>&1
    tail -n +8 "$TMP/scrub.txt" | tail -3
    check "the scrubber stands at the page's 2.5 s: $(val "$TMP/scrub.txt" scrub_shown) of 1000 (the state: $(val "$TMP/scrub.txt" scrub_expected))" \
        [ "$(val "$TMP/scrub.txt" time_shown)" = 1 -a -n "$(val "$TMP/scrub.txt" scrub_expected)" \
          -a "$(val "$TMP/scrub.txt" scrub_shown)" = "$(val "$TMP/scrub.txt" scrub_expected)" ]
    check "a click on its middle ($(val "$TMP/scrub.txt" scrub_value)) seeks the page there, paused (off by $(val "$TMP/scrub.txt" seek_error_s) s)" \
        python3 -c "import sys; v, e, p = sys.argv[1:]; sys.exit(not (400 <= int(v) <= 600 and float(e) < 2e-6 and p == '0'))" \
            "$(val "$TMP/scrub.txt" scrub_value)" "$(val "$TMP/scrub.txt" seek_error_s)" "$(val "$TMP/scrub.txt" playing)"
fi

# ---- (b) play / pause / step from the page's endpoints ------------------------------------
# Frames carry no times: each one the page got is compared with `downpour render` of the
# moment the server reported for it (render_ns), byte for byte.
timeout 120 $CLIENT controls "$URL_A" "$TMP" >"$TMP/ctl.txt" 2>"$TMP/ctl.err"
tail -3 "$TMP/ctl.err"
check "a page opened at 2.5 s paused gets, byte for byte, the PNG of render --at 2.5" cmp -s "$TMP/first.png" "$TMP/ref.png"
st=$(val "$TMP/ctl.txt" step_t)
check "step: the next global step after 2.5 s, paused ($st ns)" \
    [ "${st:-0}" -gt 2500000000 -a "${st:-0}" -lt 2600000000 -a "$(val "$TMP/ctl.txt" step_playing)" = 0 ]
render_ns "${st:-0}" "$TMP/ref-step.png"
check "... and the page's next frame is render of that moment, byte for byte" cmp -s "$TMP/step.png" "$TMP/ref-step.png"
bt=$(val "$TMP/ctl.txt" back_t)
check "back: the global step before that, <= 2.5 s ($bt ns)" [ "${bt:-9999999999}" -le 2500000000 ]
check "play: 5 different frames follow, and the position moves" \
    [ "$(val "$TMP/ctl.txt" play_playing)" = 1 -a "$(val "$TMP/ctl.txt" play_distinct_frames)" = 5 -a "$(val "$TMP/ctl.txt" play_moved)" = 1 ]
pt=$(val "$TMP/ctl.txt" pause_t)
render_ns "${pt:-0}" "$TMP/ref-pause.png"
check "pause: the page then shows render of $pt ns (paused), byte for byte" cmp -s "$TMP/pause.png" "$TMP/ref-pause.png"
check "... and keeps it: the next two frames and the position 0.5 s later are the same" \
    [ "$(val "$TMP/ctl.txt" pause_playing)" = 0 -a "$(val "$TMP/ctl.txt" pause_next_two_same)" = 1 -a "$(val "$TMP/ctl.txt" pause_state_t)" = "$pt" ]
check "step while playing: answered, and the player pauses ($(val "$TMP/ctl.txt" step_while_playing))" \
    [ "$(val "$TMP/ctl.txt" step_while_playing)" = 200:0 ]
check "speed: 4 is taken, 1000 clamped to 100, 0.001 to 0.01 (rc:speed $(val "$TMP/ctl.txt" speed_1000) $(val "$TMP/ctl.txt" speed_0.001))" \
    [ "$(val "$TMP/ctl.txt" speed_4)" = 200:4 -a "$(val "$TMP/ctl.txt" speed_1000)" = 200:100 \
      -a "$(val "$TMP/ctl.txt" speed_0.001)" = 200:0.01 -a "$(val "$TMP/ctl.txt" speed_100)" = 200:100 ]
check "... and at 100x, half a second of play from the start reaches the 10.4 s trace's end ($(val "$TMP/ctl.txt" speed_100_moved_ns) ns on)" \
    [ "$(val "$TMP/ctl.txt" speed_100_at_end)" = 1 ]
check "a control for a page with no stream: 404; an unknown op: 400" \
    [ "$(val "$TMP/ctl.txt" unknown_page_status)" = 404 -a "$(val "$TMP/ctl.txt" bad_op_status)" = 400 ]
stop "$PID_A"
rc=$?
check "serve stops on SIGINT (rc $rc) with its counts on stderr" bash -c "[ $rc -eq 0 ] && grep -q '^web: done: ' '$TMP/A.err'"

serve S "$T" --listen 127.0.0.1:0 --size ${W}x$H
timeout 60 $CLIENT share "$URL_S" >"$TMP/share.txt" 2>&1
stop "$PID_S"
check "two pages of their own at one moment get the same bytes" [ "$(val "$TMP/share.txt" same_bytes)" = 1 ]
check "... drawn once: frames_rendered = 1" [ "$(val "$TMP/share.txt" frames_rendered)" = 1 ]

# The page's drawing and sending threads run at nice 10 (field 19 of /proc/PID/task/TID/
# stat), so they take only what training and the hub leave; the server's other threads do not.
serve N "$T" --listen 127.0.0.1:0 --size 480x270
curl -s -N "${URL_N}stream?id=nice" >/dev/null 2>&1 &
CURL=$!
sleep 1
nices=$(for st in /proc/$PID_N/task/*/stat; do sed 's/^.*) //' "$st" | awk '{print $17}'; done | sort | uniq -c | tr '\n' ' ')
# the threads the server starts (web-player, libmicrohttpd's MHD-*) block every signal:
# SIGINT and SIGTERM are the main thread's. Their SigBlk has signals 1 to 31 but SIGKILL
# and SIGSTOP, which cannot be blocked (bits 0 to 30 but 8 and 18: 0x7ffbfeff).
blk=$(for t in /proc/$PID_N/task/*; do grep -qE '^(web-player|MHD-)' "$t/comm" || continue
      python3 -c "import sys; m = int(sys.argv[1], 16); print('all' if m & 0x7ffbfeff == 0x7ffbfeff else 'not')" \
          "$(awk '/^SigBlk:/{print $2}' "$t/status")"; done | sort | uniq -c | tr '\n' ' ')
kill "$CURL" 2>/dev/null; wait "$CURL" 2>/dev/null
stop "$PID_N"
n10=$(awk '{for (i = 1; i < NF; i += 2) if ($(i+1) == 10) print $i}' <<<"$nices")
n0=$(awk '{for (i = 1; i < NF; i += 2) if ($(i+1) == 0) print $i}' <<<"$nices")
check "the player and the page's connection thread run at nice 10 (count nice: $nices)" test "${n10:-0}" -ge 2
check "... the main thread does not" test "${n0:-0}" -ge 1
check "the player and every libmicrohttpd thread block every signal (count: $blk)" \
    bash -c "grep -qE '^ *[3-9] all' <<<'$blk' && ! grep -q not <<<'$blk'"

serve F "$T" --listen 127.0.0.1:0 --size ${W}x$H --follow --paused --at 2.5
timeout 60 $CLIENT follow "$URL_F" "$TMP" >"$TMP/follow.txt" 2>&1
stop "$PID_F"
check "--follow: two pages both show the server's 2.5 s: the same bytes, render --at 2.5's" \
    bash -c "[ '$(val "$TMP/follow.txt" same_bytes)' = 1 ] && cmp -s '$TMP/follow-first.png' '$TMP/ref.png'"
fst=$(val "$TMP/follow.txt" step_t)
render_ns "${fst:-0}" "$TMP/ref-fstep.png"
check "--follow: a step from page a moves page b to render of $fst ns" cmp -s "$TMP/follow-b-step.png" "$TMP/ref-fstep.png"
check "--follow: two moments for two pages: frames_rendered = 2" [ "$(val "$TMP/follow.txt" frames_rendered)" = 2 ]
# Without --follow each page has a position of its own, which starts as the server's does:
# at --at, paused with --paused, unless the page's address says otherwise.
serve P "$T" --listen 127.0.0.1:0 --size ${W}x$H --paused --at 2.5
timeout 30 $CLIENT start "$URL_P" a b:paused=0 >"$TMP/start.txt" 2>&1
stop "$PID_P"
check "serve --paused --at 2.5: a page starts paused at 2.5 s ($(tr '\n' ' ' <"$TMP/start.txt"))" \
    [ "$(val "$TMP/start.txt" a_playing)" = 0 -a "$(val "$TMP/start.txt" a_t)" = 2.500 ]
check "... and one whose address says paused=0 plays from there" \
    bash -c "[ '$(val "$TMP/start.txt" b_playing)' = 1 ] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 2.6)' '$(val "$TMP/start.txt" b_t)'"

# ---- (c) 50 clients, one stalled -------------------------------------------------------------
serve C "$LONG" --listen 127.0.0.1:0 --size 480x270 --fps 10 --follow --idle-timeout 2
timeout 150 $CLIENT crowd "$URL_C" 50 >"$TMP/crowd.txt" 2>&1
stop "$PID_C"
grep -E '^(min_frames|frames_|reader_error)' "$TMP/crowd.txt"
check "the stalled client (never reads) is dropped and counted: dropped_stalled = 1" [ "$(val "$TMP/crowd.txt" dropped_stalled)" = 1 ]
check "... the server closed its connection" [ "$(val "$TMP/crowd.txt" stalled_closed_by_server)" = 1 ]
check "... and said so on stderr" grep -q 'dropped a stalled page 127\.0\.0\.1:' "$TMP/C.err"
check "the other 49 kept receiving: each >= 3 more frames after the drop, no errors" \
    [ "$(val "$TMP/crowd.txt" readers_3_more_after_drop)" = 49 -a "$(val "$TMP/crowd.txt" reader_errors)" = 0 ]
check "no other client was dropped: dropped = 1" [ "$(val "$TMP/crowd.txt" dropped)" = 1 ]
fr=$(val "$TMP/crowd.txt" frames_rendered) fs=$(val "$TMP/crowd.txt" frames_sent)
check "one drawing per frame for all pages: frames_sent $fs >= 10 x frames_rendered $fr" \
    [ "${fr:-0}" -gt 0 -a "${fs:-0}" -ge $(( 10 * ${fr:-1} )) ]

serve D "$T" --listen 127.0.0.1:0 --size 480x270 --max-conns 4
timeout 60 $CLIENT cap "$URL_D" 4 >"$TMP/cap.txt" 2>&1
stop "$PID_D"
check "--max-conns 4: the 5th connection is closed at once and counted (refused $(val "$TMP/cap.txt" refused))" \
    [ "$(val "$TMP/cap.txt" extra_closed)" = 1 -a "$(val "$TMP/cap.txt" refused)" -ge 1 ]

# ---- (d) a lesson: stops, captions, questions and answers ------------------------------------
CAPTION="$PWD/$BUILD/tests/tool_caption"
serve L "$LES" --listen 127.0.0.1:0 --size ${W}x$H
timeout 120 $CLIENT lesson "$URL_L" "$TMP" >"$TMP/les.txt" 2>"$TMP/les.err"
tail -3 "$TMP/les.err"
check "GET /lesson: the 4 questions, without their answers" \
    [ "$(val "$TMP/les.txt" questions)" = 4 -a "$(val "$TMP/les.txt" answers_hidden)" = 1 ]
check "play from the start stops at the lesson's pause of step 1, then at question 1 (step 10)" \
    [ "$(val "$TMP/les.txt" stop1_gstep)" = 1 -a "$(val "$TMP/les.txt" stop1_question)" = -1 \
      -a "$(val "$TMP/les.txt" stop2_gstep)" = 10 -a "$(val "$TMP/les.txt" stop2_question)" = 0 ]
check "scrubbed to 20 s (global step 387) the page's question is question 3 (step 240)" [ "$(val "$TMP/les.txt" seek_question)" = 2 ]
for k in stop1 stop2 seek; do
    read -r tns cap <"$TMP/caption-$k.txt"
    ref=$("$CAPTION" "$LES" "$tns" | cut -d' ' -f3-)
    check "caption at $k ($tns ns) is the viewer's caption bar there: '$cap'" [ -n "$ref" -a "$cap" = "$ref" ]
done
check "20 students answer (10 at once, 10 spread over 1 s): all taken; counts A 5, B 12, C 3 (/answers: $(val "$TMP/les.txt" counts_q0))" \
    [ "$(val "$TMP/les.txt" burst_200)" = 20 -a "$(val "$TMP/les.txt" counts_q0)" = 5,12,3 -a "$(val "$TMP/les.txt" answered_q0)" = 20 ]
check "a second answer from the same student: 409, the first one kept, nothing counted twice" \
    [ "$(val "$TMP/les.txt" again_status)" = 409 -a "$(val "$TMP/les.txt" again_keeps_first)" = 1 ]
timeout 60 $CLIENT badinput "$URL_L" >"$TMP/bad.txt" 2>&1
check "bad input on every endpoint (22 kinds): a 4xx with a one-line JSON error each ($(val "$TMP/bad.txt" not_one_line_4xx))" \
    [ "$(val "$TMP/bad.txt" not_one_line_4xx)" = - -a "$(grep -c '^status_' "$TMP/bad.txt")" = 22 ]
check "... unknown question 400, unknown choice 400, a bad id 400" \
    [ "$(val "$TMP/bad.txt" status_unknown_question)" = 400 -a "$(val "$TMP/bad.txt" status_choice_out_of_range)" = 400 -a "$(val "$TMP/bad.txt" status_id_space)" = 400 ]
check "... and the server still serves after them (and a 20 kB request line, and non-HTTP bytes)" [ "$(val "$TMP/bad.txt" still_serving)" = 1 ]
# a question keeps 4096 answers (web/internal.h): the 4097th is refused, 503, and
# nothing is written past them
timeout 60 $CLIENT full "$URL_L" 3 4096 >"$TMP/full.txt" 2>&1
check "4096 answers to question 4 are taken, the 4097th refused: 503 'too many answers' ($(val "$TMP/full.txt" full_taken), $(val "$TMP/full.txt" full_last))" \
    [ "$(val "$TMP/full.txt" full_taken)" = 4096 -a "$(val "$TMP/full.txt" full_last)" = 503:too_many_answers_to_this_question \
      -a "$(val "$TMP/full.txt" full_answered)" = 4096 ]
n=$(grep -c '^web: answers: question 1 ' "$TMP/L.err")
check "the terminal: 20 answers in about 1 s give 1 to 4 lines (at most one a second), not one per change ($n)" [ "$n" -ge 1 -a "$n" -le 4 ]
if ! command -v chromium >/dev/null 2>&1; then
    skip "chromium is not installed: answers are not clicked in a browser"
else
    t2=$(val "$TMP/les.txt" stop2_t)
    at=$(python3 -c "print('%.10f' % (($t2 + 0.4) / 1e9))")
    timeout 90 python3 tests/web_browser.py answer "${URL_L}?at=$at&paused=1&student=chromium1" B "$TMP/answer.png" >"$TMP/br.txt" 2>"$TMP/br.err"
    tail -3 "$TMP/br.err"
    check "Chromium: the page shows question 1 under the frame" grep -q '^question Question 1 (step 10): Two workers' "$TMP/br.txt"
    ref=$("$CAPTION" "$LES" "$t2" | cut -d' ' -f3-)
    check "Chromium: the caption text under the frame is the caption bar's ('$ref')" [ -n "$ref" -a "$(sed -n 's/^caption //p' "$TMP/br.txt")" = "$ref" ]
    check "Chromium: a real click on B is counted: the page shows 21 answered: A 5, B 13, C 3" \
        grep -qx 'counts 21 answered: A 5, B 13, C 3' "$TMP/br.txt"
    check "... the answer revealed (B right, marked) and the choices locked" \
        bash -c "grep -qx 'result You answered B: right.' '$TMP/br.txt' && [ '$(val "$TMP/br.txt" right_marked)' = 1 -a '$(val "$TMP/br.txt" buttons_disabled)' = 1 ]"
    [ -n "${DOWNPOUR_WEB_LESSON_SHOT:-}" ] && cp "$TMP/answer.png" "$DOWNPOUR_WEB_LESSON_SHOT"
    timeout 90 python3 tests/web_browser.py text "${URL_L}?at=$at&paused=1&teacher=1" "$TMP/teacher.png" >"$TMP/teacher.txt" 2>&1
    grep -v '^counts' "$TMP/teacher.txt" | grep -v '^[a-z_]* ' | tail -3
    check "a teacher view (?teacher=1) shows the counts before answering" grep -qx 'counts 21 answered: A 5, B 13, C 3' "$TMP/teacher.txt"
    timeout 90 python3 tests/web_browser.py text "${URL_L}?at=$at&paused=1" "$TMP/student.png" >"$TMP/student.txt" 2>&1
    check "... a student who has not answered sees no counts" grep -qx 'counts -' "$TMP/student.txt"
fi
stop "$PID_L"
check "the terminal's last answers line holds the final counts" \
    bash -c "grep '^web: answers: question 1 ' '$TMP/L.err' | tail -n1 | grep -q ': $( command -v chromium >/dev/null && echo '21 answered: A 5, B 13, C 3' || echo '20 answered: A 5, B 12, C 3')\$'"

# ---- (e) a slow page: frames skipped, then dropped past the bound, counted ---------------------
serve SL "$LONG" --listen 127.0.0.1:0 --fps 15 --follow --max-behind 8 --idle-timeout 10
timeout 150 $CLIENT slow "$URL_SL" >"$TMP/slow.txt" 2>&1
stop "$PID_SL"
cat "$TMP/slow.txt" | tr '\n' ' '; echo
check "a client reading a few frames a second skips frames ($(val "$TMP/slow.txt" phase1_frames_skipped) skipped, it got $(val "$TMP/slow.txt" phase1_slow_frames) of $(val "$TMP/slow.txt" phase1_frames_rendered)) and is kept" \
    [ "$(val "$TMP/slow.txt" phase1_frames_skipped)" -gt 0 -a "$(val "$TMP/slow.txt" phase1_dropped_slow)" = 0 -a "$(val "$TMP/slow.txt" phase1_still_open)" = 1 ]
check "reading 40 KB/s it falls > 8 frames behind mid-frame: closed by the server, dropped_slow = 1, not stalled" \
    [ "$(val "$TMP/slow.txt" slow_closed_by_server)" = 1 -a "$(val "$TMP/slow.txt" dropped_slow)" = 1 -a "$(val "$TMP/slow.txt" dropped_stalled)" = 0 ]
check "... said on stderr" grep -q 'dropped a slow page 127\.0\.0\.1:[0-9]*: [0-9]* frames behind' "$TMP/SL.err"
check "the normal client kept receiving: >= 10 frames after the drop, no errors" \
    [ "$(val "$TMP/slow.txt" fast_frames_after_drop)" -ge 10 -a "$(val "$TMP/slow.txt" fast_errors)" = 0 ]

# ---- (f) downpour view TRACE --serve ADDR --follow: the window and the page -------------------
if ! start_xvfb; then
    skip "Xvfb is not installed or does not start: view --serve is not tested"
else
    mkdir -p "$TMP/vs"
    DISPLAY=":$DISP" ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 60 "$DOWNPOUR" view "$T" --paused --at 2.5 \
        --size 1280x720 --serve 127.0.0.1:0 --follow --screenshot-dir "$TMP/vs" \
        --script "wait:4000,period,wait:300,s,wait:5000,q" >"$TMP/vs.out" 2>"$TMP/vs.err" &
    VIEW=$!
    for _ in $(seq 100); do grep -q '^serving ' "$TMP/vs.out" && break; sleep 0.1; done
    VURL=$(awk '/^serving /{print $2}' "$TMP/vs.out")
    timeout 40 $CLIENT drive "$VURL" "$TMP" >"$TMP/drive.txt" 2>&1
    wait "$VIEW"
    rc=$?
    # The page's answers reach the window: 3 students answer question 1 on the page of a
    # lesson's window, whose message line then holds the count (the screenshot's message=).
    mkdir -p "$TMP/vn"
    DISPLAY=":$DISP" ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 60 "$DOWNPOUR" view "$LES" --paused \
        --size 1280x720 --serve 127.0.0.1:0 --screenshot-dir "$TMP/vn" --script "wait:4000,s,q" \
        >"$TMP/vn.out" 2>"$TMP/vn.err" &
    NVIEW=$!
    for _ in $(seq 100); do grep -q '^serving ' "$TMP/vn.out" && break; sleep 0.1; done
    timeout 20 $CLIENT full "$(awk '/^serving /{print $2}' "$TMP/vn.out")" 0 2 >"$TMP/vn.txt" 2>&1
    wait "$NVIEW"
    shown=$(sed -n 's/^saved .* message=//p' "$TMP/vn.out")
    # Without --follow the pages start where the window does: --at, --paused.
    DISPLAY=":$DISP" ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 60 "$DOWNPOUR" view "$T" --paused \
        --at 2.5 --size 1280x720 --serve 127.0.0.1:0 --serve-size 640x360 --script "wait:4000,q" >"$TMP/vp.out" 2>"$TMP/vp.err" &
    PVIEW=$!
    for _ in $(seq 100); do grep -q '^serving ' "$TMP/vp.out" && break; sleep 0.1; done
    timeout 20 $CLIENT start "$(awk '/^serving /{print $2}' "$TMP/vp.out")" p >"$TMP/vp.txt" 2>&1
    wait "$PVIEW"
    check "view --paused --at 2.5 --serve: a page starts paused at 2.5 s too ($(tr '\n' ' ' <"$TMP/vp.txt"))" \
        [ "$(val "$TMP/vp.txt" p_playing)" = 0 -a "$(val "$TMP/vp.txt" p_t)" = 2.500 ]
    check "... at --serve-size 640x360, whatever the window's 1280x720 ($(val "$TMP/vp.txt" p_size))" \
        [ "$(val "$TMP/vp.txt" p_size)" = 640x360 ]
    check "view --serve: 3 answers on the page are on the window's message line ('$shown')" \
        test "$shown" = "question 1 (step 10): 3 answered: A 3, B 0, C 0"
    kill "$XVFB" 2>/dev/null; wait "$XVFB" 2>/dev/null
    "$DOWNPOUR" render "$T" --at 2.5 --out "$TMP/ref720.png" 2>/dev/null
    check "view --serve: the window quits on q (rc $rc) and the page was served ($VURL)" \
        bash -c "[ $rc -eq 0 ] && grep -q '^http://127\.0\.0\.1:[0-9]*/$' <<<'$VURL'"
    check "view --serve --follow: the page first shows the window's 2.5 s: render --at 2.5, byte for byte" cmp -s "$TMP/drive-first.png" "$TMP/ref720.png"
    wt=$(sed -n 's/^saved .* t=\([0-9]*\) .*/\1/p' "$TMP/vs.out")
    check "the window's step (key .) moves the page to the window's moment ($wt ns)" \
        [ -n "$wt" -a "$(val "$TMP/drive.txt" moved_t)" = "$wt" -a "$(val "$TMP/drive.txt" moved_frame_seen)" = 1 ]
    "$DOWNPOUR" render "$T" --at "$(python3 -c "print('%.10f' % ((${wt:-0} + 0.4) / 1e9))")" --out "$TMP/ref720-step.png" 2>/dev/null
    check "... its frame is render of that moment, byte for byte" cmp -s "$TMP/drive-moved.png" "$TMP/ref720-step.png"
    check "... and the page's buttons are off: a control answers 409" [ "$(val "$TMP/drive.txt" play_status)" = 409 -a "$(val "$TMP/drive.txt" driven)" = 1 ]
fi

# ---- live: downpour hub --http ------------------------------------------------------------------
"$DOWNPOUR" hub --listen 127.0.0.1:0 --http 127.0.0.1:0 --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 100); do grep -q 'listening on' "$TMP/hub.out" && break; sleep 0.1; done
ADDR=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$TMP/hub.out")
HURL=$(awk '/^serving /{print $2}' "$TMP/hub.out")
check "hub --http: the hub ($ADDR) and its page ($HURL) on loopback" \
    bash -c "[ -n '$ADDR' ] && grep -q '^http://127\.0\.0\.1:[0-9]*/$' <<<'$HURL'"
"$DOWNPOUR" cluster --ps 1 --workers 2 --mode sync --steps 1500 --data synthetic --hub "$ADDR" \
    --quiet >"$TMP/cluster.out" 2>"$TMP/cluster.err" &
CL=$!
timeout 60 $CLIENT live "$HURL" >"$TMP/live.txt" 2>&1
wait "$CL"
rc=$?
check "hub --http: the live page follows the run: 6 different frames, at the live end" \
    [ "$(val "$TMP/live.txt" changing_frames)" = 6 -a "$(val "$TMP/live.txt" live)" = 1 -a "$(val "$TMP/live.txt" at_live)" = 1 ]
check "... paused for 0.5 s, then played at 4x, it catches up with the live end within 1 s (at_live then:now $(val "$TMP/live.txt" caught_up))" \
    [ "$(val "$TMP/live.txt" caught_up)" = 0:1 ]
check "... and the run finished normally (rc $rc)" [ "$rc" -eq 0 ]
stop "$HUB"
rc=$?
check "hub --http stops on SIGINT (rc $rc), web counts on stderr" bash -c "[ $rc -eq 0 ] && grep -q '^web: done: 1 pages' '$TMP/hub.err'"
check "every server stopped on SIGINT with rc 0, leaks and sanitizers included (${STOP_BAD:-all 0})" [ -z "$STOP_BAD" ]
done_tests
