#!/usr/bin/env bash
# it_fork.sh — "fork from here": a recorded real run (tests/data, sync, 4 workers, one
# straggler) forked at global step 100 with one backup worker continues in the simulator
# from step 101 on the recorded run's clock, says what it forks and what changed, reaches
# the run's last step, and draws beside the original.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
T=tests/data/real_sync_1ps_4w_slow.trace
"$DOWNPOUR" fork "$T" --at-step 100 --set backup_workers=1 --out "$TMP/fork.dptrace" >"$TMP/fork.json" 2>"$TMP/fork.err"
check "fork exits 0" test $? -eq 0
check "fork validates" "$DOWNPOUR" trace validate "$TMP/fork.dptrace"
"$DOWNPOUR" trace export --chrome "$TMP/orig.json" "$T" 2>/dev/null
"$DOWNPOUR" trace export --chrome "$TMP/fork.chrome.json" "$TMP/fork.dptrace" 2>/dev/null
"$DOWNPOUR" trace info --json "$TMP/fork.dptrace" >"$TMP/info.json"
python3 - "$TMP" <<'PY' >"$TMP/checks.out" 2>"$TMP/checks.err" || echo "FAIL the trace checks crashed: $(tail -n1 "$TMP/checks.err")" >>"$TMP/checks.out"
import json, sys
T = sys.argv[1]
def ev(p):
    d = json.load(open(p)); return d['traceEvents'] if isinstance(d, dict) else d
orig, fork = ev(T + '/orig.json'), ev(T + '/fork.chrome.json')
def gsteps(e): return [(x['ts'], x['args']['global_step']) for x in e if x.get('name') == 'global_step' and x.get('ph') == 'C']
og, fg = gsteps(orig), gsteps(fork)
t100 = min(ts for ts, s in og if s >= 100)
meta = json.load(open(T + '/info.json'))['metadata']
cfg = meta.get('config', meta)
def line(ok, what): print(('ok   ' if ok else 'FAIL ') + what)
line(len(fg) > 0 and min(s for _, s in fg) == 101, 'the fork\'s first global step is 101 (%s)' % (min(s for _, s in fg) if fg else None))
line(max(s for _, s in fg) == max(s for _, s in og), 'the fork reaches the recorded run\'s last step (%s)' % max(s for _, s in og))
line(min(ts for ts, _ in fg) >= t100, 'the fork\'s steps start after the moment the original reached step 100 (%.1f us)' % t100)
line(meta.get('engine') == 'sim', 'the fork is a simulation and says so (engine sim)')
f = cfg.get('fork', {})
line(f.get('at_step') == 100 and f.get('set') == ['backup_workers=1'] and f.get('from', '').endswith('real_sync_1ps_4w_slow.trace'),
     'the metadata names the run, the step and the changed key (%s)' % f)
line(cfg.get('backup_workers') == 1 and cfg.get('workers') == 4, 'the changed key is in the fork\'s config, the rest from the trace')
drops = sum(1 for x in fork if x.get('name') == 'drop')
line(drops > 0, 'with a backup worker the straggler\'s late gradients are dropped in the fork (%d drops)' % drops)
PY
while IFS= read -r l; do case "$l" in "ok   "*) ok "${l#ok   }";; *) bad "${l#FAIL }";; esac; done <"$TMP/checks.out"
check "the fork's summary continues the run's steps (global_step 300, fork_at_step 100)" \
    test "$(json "$TMP/fork.json" global_step)" = 300 -a "$(json "$TMP/fork.json" fork_at_step)" = 100
check "the fork draws beside the original" "$DOWNPOUR" render "$T" --compare "$TMP/fork.dptrace" --out "$TMP/cmp.png" --at 0.8
check "the fork tells how to watch both" grep -q "downpour view $T --compare $TMP/fork.dptrace" "$TMP/fork.err"
"$DOWNPOUR" fork "$T" --at-step 5000 --set backup_workers=1 --out "$TMP/f2.dptrace" >/dev/null 2>"$TMP/e.err"
check "a step the run never reached is refused with the run's last step" grep -q "never reached global step 5000 (it ends at 300)" "$TMP/e.err"
"$DOWNPOUR" fork "$T" --at-step 100 --set wrokers=2 --out "$TMP/f3.dptrace" >/dev/null 2>"$TMP/e.err"
check "an unknown key is refused, with the nearest one" \
    grep -q -- '--set: unknown key "wrokers" (did you mean "workers"?)' "$TMP/e.err"
# --set steps=N continues to step N, past the recorded run's end
"$DOWNPOUR" fork "$T" --at-step 250 --set steps=420 --out "$TMP/f4.dptrace" >"$TMP/f4.json" 2>/dev/null
got=$(json "$TMP/f4.json" global_step)
last=$("$DOWNPOUR" trace info "$TMP/f4.dptrace" 2>/dev/null | grep -o 'global step [0-9]*$')
check "--set steps=420 continues to global step 420 (summary $got, trace: $last)" \
    test "$got" = 420 -a "$last" = "global step 420"
"$DOWNPOUR" fork "$T" --at-step 250 --set steps=200 --out "$TMP/f5.dptrace" >/dev/null 2>"$TMP/e.err"
rc=$?
check "--set steps=200 before the fork's step 250 is refused, exit 2 (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && grep -q -- '--set steps=200: the fork starts after global step 250' '$TMP/e.err' && [ ! -e '$TMP/f5.dptrace' ]"
"$DOWNPOUR" fork "$T" --at-step 100 --set trace="$TMP/f6.dptrace" --out "$TMP/f7.dptrace" >/dev/null 2>"$TMP/e.err"
check "--set trace= is refused: --out names the fork's file" \
    bash -c "grep -q -- '--set trace: run, compare and fork choose where their output goes' '$TMP/e.err' && [ ! -e '$TMP/f6.dptrace' ] && [ ! -e '$TMP/f7.dptrace' ]"
# the fork never overwrites the run it forks, by its name or by another
cp "$T" "$TMP/rec.dptrace"
ln -s rec.dptrace "$TMP/link.dptrace"
for out in "$TMP/rec.dptrace" "$TMP/link.dptrace"; do
    "$DOWNPOUR" fork "$TMP/rec.dptrace" --at-step 100 --set mode=async --out "$out" >/dev/null 2>"$TMP/e.err"
    rc=$?
    check "--out ${out##*/}: the recorded run itself is refused, exit 2, and left as it was (rc $rc)" \
        bash -c "[ $rc -eq 2 ] && grep -q 'that is the recorded run itself' '$TMP/e.err' && cmp -s '$T' '$TMP/rec.dptrace'"
done
done_tests
