#!/usr/bin/env bash
# it_auth.sh — authentication and the ps's pre-hello limits (issue 15, docs/security.md).
# A hand-started cluster with a secret trains while raw-socket clients (tests/auth_client.py,
# the handshake written again in Python) attack its ps: HELLO without a handshake, a wrong
# secret, a replayed valid handshake, other training flags, a claim of a live worker's slot,
# and floods (pushes before HELLO, half headers, dribblers, idle connections, more than the
# connection cap). Each is refused, logged with the peer's address, answered without the
# expected values; the ps's RSS stays flat and the run completes with every variable at
# --steps. Then: mixed secrets fail clearly on both sides, the hub refuses unauthenticated
# tasks and subscribers and honours its viewer token, and `downpour cluster` with no secret
# makes one up (an outsider is refused, the run trains). Only the PIDs we start are signalled.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
AC="python3 tests/auth_client.py"
SECRET=it-auth-secret-0123456789abcdef
printf '%s\n' "$SECRET" >"$TMP/secret"; chmod 600 "$TMP/secret"
unset DOWNPOUR_SECRET DOWNPOUR_HUB_SECRET

# --- the secret file is checked -----------------------------------------------------------
printf 'short\n' >"$TMP/short"; chmod 600 "$TMP/short"
"$DOWNPOUR" task --secret-file "$TMP/short" --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:1 \
    --worker_hosts=127.0.0.1:2 2>"$TMP/short.err"
check "a too short --secret-file is refused, naming the file" grep -a -q "secret-file $TMP/short: the secret is too short" "$TMP/short.err"
cp "$TMP/secret" "$TMP/open"; chmod 644 "$TMP/open"
"$DOWNPOUR" task --secret-file "$TMP/open" --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:1 \
    --worker_hosts=127.0.0.1:2 2>"$TMP/open.err"
check "a world-readable --secret-file is refused" grep -a -q "open: readable by every user" "$TMP/open.err"
# a NUL inside would cut the secret short where the environment carries it
printf 'it-auth-secret-0123\000456789abcdef\n' >"$TMP/nul"; chmod 600 "$TMP/nul"
timeout 10 "$DOWNPOUR" task --secret-file "$TMP/nul" --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:1 \
    --worker_hosts=127.0.0.1:2 2>"$TMP/nul.err"
rc=$?
check "a --secret-file holding a NUL byte is refused, exit 2 (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && grep -a -q 'nul: the secret holds a NUL byte' '$TMP/nul.err'"

# --- a hand-started cluster with a secret, under attack -----------------------------------
read -r P W0 W1 < <(free_ports 3)
HOSTS="--ps_hosts=127.0.0.1:$P --worker_hosts=127.0.0.1:$W0,127.0.0.1:$W1"
STEPS=150
TRAIN="--data synthetic --model mlp --hidden 1024 --batch 16 --eval-every 0 --log-every 100000 --mode sync --steps $STEPS"
"$DOWNPOUR" task --secret-file "$TMP/secret" --job_name=ps --task_index=0 $HOSTS $TRAIN \
    >"$TMP/ps.out" 2>"$TMP/ps.err" &
PS=$!
$AC ps-cases "$P" "$SECRET" 0 >"$TMP/cases.out" 2>&1
cat "$TMP/cases.out"
HASH=$(sed -n 's/.*this ps has \([0-9a-f]\{16\}\).*/\1/p' "$TMP/ps.err" | head -1)
reply() { grep -a "^$1 ->" "$TMP/cases.out"; }
check "HELLO without a handshake: refused (authentication required)" bash -c "grep -a '^no-handshake ->' '$TMP/cases.out' | grep -a -q 'authentication required'"
check "a wrong secret: refused (authentication failed)" bash -c "grep -a '^wrong-secret ->' '$TMP/cases.out' | grep -a -q 'authentication failed'"
check "a valid handshake (Python HMAC-SHA-512/256 = crypto_auth): the ps's proof verifies" \
    grep -a -q "^valid-handshake -> server proof verified" "$TMP/cases.out"
check "a replayed valid handshake: refused" bash -c "grep -a '^replayed ->' '$TMP/cases.out' | grep -a -q 'authentication failed'"
check "other training flags: refused, the reply names no hash" bash -c \
    "grep -a '^wrong-flags ->' '$TMP/cases.out' | grep -a -q 'different training flags' && ! grep -a -q '$HASH' '$TMP/cases.out' && ! grep -a -q 'expected' '$TMP/cases.out'"
check "the ps logs its own config hash, only there" test -n "$HASH"
check "each failure is logged with the peer's address" \
    test "$(grep -a -c 'authentication failed from 127.0.0.1:[0-9]' "$TMP/ps.err")" -ge 3
check "a worker without the secret fails at once, clearly" bash -c \
    "timeout 20 '$DOWNPOUR' task --job_name=worker --task_index=1 $HOSTS $TRAIN --connect-timeout 5 2>&1 | grep -a -q 'authentication required'"

# Floods before any worker: the ps buffers nothing for them and drops them after 5 s.
$AC ps-flood "$P" "$PS" 2 3211264 >"$TMP/flood.out" 2>&1
cat "$TMP/flood.out"
GROW=$(sed -n 's/.*rss_growth_kb \([0-9]*\).*/\1/p' "$TMP/flood.out")
check "420 flood connections: the ps's RSS grows by ${GROW:-?} kB (< 16 MB)" test "${GROW:-99999999}" -lt 16384
check "connections beyond the cap are closed at once" bash -c "awk '/flood/ {exit !(\$5 >= 390)}' '$TMP/flood.out'"
check "refusals over the cap are logged" grep -a -q "connections\? over the cap of 24" "$TMP/ps.err"
check "a push before HELLO is refused at its header" grep -a -q "PUSH of 3211264 bytes before the handshake" "$TMP/ps.err"
sleep 0.5
"$DOWNPOUR" task --secret-file "$TMP/secret" --job_name=worker --task_index=0 $HOSTS $TRAIN --pace 20ms \
    >"$TMP/w0.out" 2>"$TMP/w0.err" &
W0P=$!
"$DOWNPOUR" task --secret-file "$TMP/secret" --job_name=worker --task_index=1 $HOSTS $TRAIN --pace 20ms \
    >"$TMP/w1.out" 2>"$TMP/w1.err" &
W1P=$!
sleep 1.5
# A claim of worker 1's live slot, with a valid handshake and the right flags.
$AC ps-claim "$P" "$SECRET" "$(python3 -c "h=0x$HASH; print(h - (1 << 64) if h >= 1 << 63 else h)")" 1 >"$TMP/claim.out" 2>&1
cat "$TMP/claim.out"
check "a second claim of a live worker's slot: refused" grep -a -q "slot is taken by a live connection" "$TMP/claim.out"
wait $W0P; r0=$?; wait $W1P; r1=$?
wait $PS
check "both workers finish (rc $r0, $r1)" test $r0 -eq 0 -a $r1 -eq 0
check "the claim is logged with both addresses" grep -a -q "refused a claim of worker 1's slot from 127.0.0.1:[0-9]*: held by a live connection from 127.0.0.1" "$TMP/ps.err"
check "the holder was not disturbed (worker 1 never lost)" bash -c "! grep -a -q 'lost /job:worker/replica:0/task:1' '$TMP/ps.err'"
check "every variable at --steps ($STEPS)" test "$(json "$TMP/ps.out" var_step_min)" = "$STEPS"
check "the flood's half-open connections were dropped by the handshake timeout or at close" \
    grep -a -q "dropped connection from 127.0.0.1:[0-9]*: " "$TMP/ps.err"
check "the ps counted its refusals and failures" bash -c "test \$(python3 -c \"import json; d=json.loads([l for l in open('$TMP/ps.out') if l.startswith('{')][-1]); print(int(d['conns_refused'] > 0 and d['auth_failures'] >= 3))\") = 1"

# --- the handshake timeout, alone: an idle connection goes after 5 s, logged -------------
P2=$(free_ports 1)
DOWNPOUR_SECRET=$SECRET "$DOWNPOUR" task --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:$P2 \
    --worker_hosts=127.0.0.1:$W0 --data synthetic --model softmax --steps 5 >/dev/null 2>"$TMP/ps2.err" &
PS2=$!
python3 -c "
import socket, time
for _ in range(100):
    try: s = socket.create_connection(('127.0.0.1', $P2)); break
    except OSError: time.sleep(0.05)
s.sendall(b'DPNF'); t = time.time(); s.settimeout(9)
try: s.recv(10)
except Exception: pass
print('closed after %.1f s' % (time.time() - t))" >"$TMP/idle.out"
cat "$TMP/idle.out"
check "a connection that never completes the handshake is closed after ~5 s" bash -c "awk '{exit !(\$3 >= 4.5 && \$3 < 8)}' '$TMP/idle.out'"
check "... logged with its address" grep -a -q "dropped connection from 127.0.0.1:[0-9]*: no authenticated HELLO within 5 s" "$TMP/ps2.err"
# Mixed: a worker with a secret against this ps... and a ps without one.
P3=$(free_ports 1)
"$DOWNPOUR" task --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:$P3 --worker_hosts=127.0.0.1:$W0 \
    --data synthetic --model softmax --steps 5 >/dev/null 2>"$TMP/ps3.err" &
PS3=$!
timeout 20 "$DOWNPOUR" task --secret-file "$TMP/secret" --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$P3 \
    --worker_hosts=127.0.0.1:$W0 --data synthetic --model softmax --steps 5 --connect-timeout 5 >/dev/null 2>"$TMP/w3.err"
check "a worker with a secret, a ps without: the worker says why" grep -a -q "this ps has no secret" "$TMP/w3.err"
check "... and so does the ps" grep -a -q "but this ps has no secret" "$TMP/ps3.err"
kill $PS2 $PS3 2>/dev/null; wait $PS2 $PS3 2>/dev/null

# --- the hub ------------------------------------------------------------------------------
H=$(free_ports 1)
"$DOWNPOUR" hub --listen 127.0.0.1:$H --secret-file "$TMP/secret" --quiet >"$TMP/hub.out" 2>"$TMP/hub.err" &
HUB=$!
for _ in $(seq 50); do grep -a -q "viewer token" "$TMP/hub.out" && break; sleep 0.1; done
check "the hub prints a viewer token" grep -a -q "^viewer token: [0-9a-f]\{32\}" "$TMP/hub.out"
TOKEN=$(sed -n 's/^viewer token: \([0-9a-f]*\).*/\1/p' "$TMP/hub.out")
$AC hub-cases "$H" "$SECRET" >"$TMP/hubc.out" 2>&1
cat "$TMP/hubc.out"
check "the hub refuses a subscriber without the secret" bash -c "grep -a '^hub-unauth-sub ->' '$TMP/hubc.out' | grep -a -q 'authentication required'"
check "the hub refuses a task without the secret" bash -c "grep -a '^hub-unauth-task ->' '$TMP/hubc.out' | grep -a -q 'authentication required'"
check "the viewer token does not make a task" bash -c "grep -a '^hub-token-task ->' '$TMP/hubc.out' | grep -a -q 'verified; then ERROR the viewer token may only subscribe'"
check "the viewer token subscribes (WELCOME follows)" grep -a -q "^hub-token-sub -> hub proof verified; then welcome " "$TMP/hubc.out"
TS="$BUILD/tests/tool_sub"
env -u DOWNPOUR_SECRET "$TS" 127.0.0.1:$H --read 1 >/dev/null 2>"$TMP/sub0.err"
check "tool_sub without the secret: refused, says why" grep -a -q "authentication required" "$TMP/sub0.err"
DOWNPOUR_SECRET=$TOKEN "$TS" 127.0.0.1:$H --read 0.5 >"$TMP/sub1.out" 2>"$TMP/sub1.err"
check "tool_sub with the viewer token subscribes (no error)" bash -c "grep -q records '$TMP/sub1.out' && ! grep -q tool_sub '$TMP/sub1.err'"
DOWNPOUR_SECRET=wrong-secret-but-long-enough "$TS" 127.0.0.1:$H --read 0.5 >/dev/null 2>"$TMP/sub2.err"
check "tool_sub with a wrong secret: refused" grep -a -q "authentication failed" "$TMP/sub2.err"
# A task given the viewer token as its secret: the hub refuses it as a task with an ERROR,
# which its emitter says once (a refusal does not heal by retrying), and the training goes on
DOWNPOUR_SECRET=$TOKEN "$DOWNPOUR" local --data synthetic --synthetic-samples 500 --steps 3000 --eval-every 0 \
    --hub 127.0.0.1:$H >/dev/null 2>"$TMP/tokentask.err"
rc=$?
n=$(grep -a -c "emitter: hub 127.0.0.1:$H: hub refused: .*viewer token may only subscribe" "$TMP/tokentask.err")
check "a task with the viewer token: its emitter says the hub's refusal once, training completes (rc $rc, $n lines)" \
    bash -c "[ $rc -eq 0 ] && [ '$n' = 1 ]"
# Tasks stream to it with the secret: a short hand-started run, events recorded.
P4=$(free_ports 1)
DOWNPOUR_SECRET=$SECRET "$DOWNPOUR" task --job_name=ps --task_index=0 --ps_hosts=127.0.0.1:$P4 \
    --worker_hosts=127.0.0.1:$W0 --data synthetic --model softmax --steps 20 --hub 127.0.0.1:$H >/dev/null 2>&1 &
PS4=$!
DOWNPOUR_SECRET=$SECRET "$DOWNPOUR" task --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$P4 \
    --worker_hosts=127.0.0.1:$W0 --data synthetic --model softmax --steps 20 --hub 127.0.0.1:$H >"$TMP/w4.out" 2>&1
wait $PS4
kill $HUB; wait $HUB
check "tasks with the secret stream to the hub" bash -c "grep -a -q 'hub: done: 2 tasks' '$TMP/hub.err' || grep -a -q 'done: [2-9] tasks' '$TMP/hub.err'"
check "the hub logged each refusal with the peer's address" \
    test "$(grep -a -c 'authentication failed from 127.0.0.1:[0-9]' "$TMP/hub.err")" -ge 2
check "... and each connection it dropped with its address (the viewer-token task's retries)" \
    test "$(grep -a -c 'dropping connection 127.0.0.1:[0-9][0-9]*: the viewer token may only subscribe' "$TMP/hub.err")" -ge 2

# --- `downpour cluster` with no secret makes one up ---------------------------------------
"$DOWNPOUR" cluster --ps 1 --workers 2 --data synthetic --model softmax --steps 60 --pace 30ms --quiet \
    --trace "$TMP/auto.dptrace" >"$TMP/auto.out" 2>"$TMP/auto.err" &
CL=$!
for _ in $(seq 100); do grep -a -q "serving .* on 127.0.0.1:" "$TMP/auto.err" && break; sleep 0.05; done
CP=$(sed -n 's/.*serving .* on 127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/auto.err" | head -1)
$AC ps-outsider "$CP" >"$TMP/out.out" 2>&1
wait $CL; rc=$?
cat "$TMP/out.out"
check "cluster with no secret trains (rc $rc), global step $(json "$TMP/auto.out" global_step)" \
    test $rc -eq 0 -a "$(json "$TMP/auto.out" global_step)" = 60
check "... an outsider without its secret is refused" grep -a -q "authentication required" "$TMP/out.out"
check "... its own hub recorded the tasks' events (they authenticated)" fcmp "$(json "$TMP/auto.out" events)" '>' 100

# --- the web page of a run with a secret: the viewer token, in the address or its cookie ---
WT=$(ls scenarios/recorded/*.dptrace | head -1)
DOWNPOUR_SECRET=$SECRET "$DOWNPOUR" serve "$WT" --listen 127.0.0.1:0 >"$TMP/web.out" 2>"$TMP/web.err" &
WEB=$!
for _ in $(seq 100); do grep -q '^serving ' "$TMP/web.out" && break; sleep 0.05; done
WURL=$(awk '/^serving /{print $2}' "$TMP/web.out")
WBASE=${WURL%%\?*}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "the page's address carries the viewer token ($WURL)" grep -q '^http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]\{32\}$' <<<"$WURL"
check "without the token the page is refused (403)" test "$(code "$WBASE")" = 403
check "... and its counters too (403)" test "$(code "${WBASE}stats")" = 403
check "a wrong token is refused (403)" test "$(code "${WBASE}?token=00000000000000000000000000000000")" = 403
curl -s -c "$TMP/jar" -o "$TMP/page.html" -w '%{http_code}' "$WURL" >"$TMP/page.code"
check "with the token the page opens (200)" test "$(cat "$TMP/page.code")" = 200
check "... and sets its cookie" grep -q 'dp_token' "$TMP/jar"
check "the page's own requests pass with the cookie (stats: 200)" test "$(code -b "$TMP/jar" "${WBASE}stats")" = 200
kill $WEB; wait $WEB 2>/dev/null

done_tests
