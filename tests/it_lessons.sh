#!/usr/bin/env bash
# it_lessons.sh — every lesson of the library runs headless with reduced steps and leaves
# its caption track: `downpour run LESSON --no-view --set steps=N` exits 0 with a trace that
# validates, and `downpour trace captions --json` of that trace holds every authored
# caption of the file (its at_step.N keys, read here from the .ini by Python's own INI
# parser, not ours) with the step and text the file gives, those with N <= the steps run
# reached in time, and rule captions derived from the events.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

STEPS=60
for f in scenarios/lessons/*.ini; do
    name=$(basename "$f" .ini)
    out="$TMP/$name"
    $DOWNPOUR run "$f" --no-view --set steps=$STEPS --out "$out" >"$out.json" 2>"$out.err"
    rc=$?
    check "$name: runs headless with steps=$STEPS (rc $rc)" test "$rc" -eq 0
    [ "$rc" -eq 0 ] || { tail -n 5 "$out.err" | sed "s/^/    $name: /"; continue; }
    check "$name: its trace validates" $DOWNPOUR trace validate "$out/trace.dptrace"
    $DOWNPOUR trace captions --json "$out/trace.dptrace" >"$out.captions" 2>"$out.cerr"
    check "$name: trace captions exits 0" test $? -eq 0
    msg=$(python3 - "$f" "$out.captions" "$STEPS" <<'PY'
import configparser, json, sys
ini, track, steps = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
cp = configparser.ConfigParser(interpolation=None, strict=False)
cp.optionxform = str
cp.read(ini)
want = sorted((int(k.split('.', 1)[1]), v.strip()) for k, v in cp['lesson'].items() if k.startswith('at_step.'))
got = [(c['step'], c['text']) for c in track['captions'] if c['rule'] == 'lesson']
problems = []
if sorted(got) != want:
    problems.append(f"lesson captions {sorted(got)[:3]}... != the file's {want[:3]}...")
for c in track['captions']:
    if c['rule'] == 'lesson' and c['step'] <= steps and c['t_s'] is None:
        problems.append(f"caption at step {c['step']} never reached")
rules = [c for c in track['captions'] if c['rule'] != 'lesson']
if not rules:
    problems.append("no rule captions")
if track['rule_captions'] != len(rules):
    problems.append(f"rule_captions {track['rule_captions']} != {len(rules)} listed")
print('; '.join(problems) or f"ok {len(want)} lesson, {len(rules)} rule captions")
PY
)
    check "$name: caption track: $msg" test "${msg#ok }" != "$msg"
done

# Every lesson ships its notes and a recording of each of its variants (a [compare] key
# with N values: N recordings, else one, "--run"), and its notes name the command to run it.
for f in scenarios/lessons/*.ini; do
    name=$(basename "$f" .ini)
    check "$name: notes in docs/lessons/$name.md name its run command" grep -q "downpour run scenarios/lessons/$name.ini" "docs/lessons/$name.md"
    want=$(python3 - "$f" <<'PY'
import sys
# vary = KEY: V1, V2, ... lines of [compare] (one or more: their product), read plainly
sec, n = '', 1
for line in open(sys.argv[1]):
    line = line.split(';', 1)[0].strip()
    if line.startswith('['): sec = line
    elif sec == '[compare]' and line.startswith('vary') and ':' in line:
        n *= len([x for x in line.split(':', 1)[1].split(',') if x.strip()])
print(n)
PY
)
    got=$(ls scenarios/recorded/lesson-$name--*.dptrace 2>/dev/null | wc -l)
    check "$name: $want recording(s) in scenarios/recorded/ ($got)" test "$got" -eq "$want"
done

# The text form: one line per caption, the authored ones marked "lesson"; bad input.
f=scenarios/lessons/05-sync-vs-async.ini
$DOWNPOUR trace captions "$TMP/05-sync-vs-async/trace.dptrace" >"$TMP/c.txt" 2>&1
check "text track marks the lesson's captions" grep -qE '^ +[0-9.]+ s  step 1 +lesson +Sync: a global step' "$TMP/c.txt"
check "text track has one line per JSON caption" test "$(grep -c . "$TMP/c.txt")" -eq \
    "$(python3 -c "import json; print(len(json.load(open('$TMP/05-sync-vs-async.captions'))['captions']))")"
$DOWNPOUR trace captions "$TMP/nope.dptrace" >/dev/null 2>"$TMP/e1"
rc=$?
check "a missing trace: exit 1 (rc $rc)" test "$rc" -eq 1
check "... with one line naming it" test "$(wc -l <"$TMP/e1")" -eq 1 -a -n "$(grep nope.dptrace "$TMP/e1")"
$DOWNPOUR trace captions --bogus x 2>"$TMP/e2" >/dev/null
check "an unknown option: exit 2" test $? -eq 2
done_tests
