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
# vary = KEY: V1, V2, ... (or V1 | V2 | ... when values hold commas) lines of [compare]
# (one or two: their product), read plainly
sec, n = '', 1
for line in open(sys.argv[1]):
    line = line.split(';', 1)[0].strip()
    if line.startswith('['): sec = line
    elif sec == '[compare]' and line.startswith('vary') and ':' in line:
        vals = line.split(':', 1)[1]
        n *= len([x for x in vals.split('|' if '|' in vals else ',') if x.strip()])
print(n)
PY
)
    got=$(ls scenarios/recorded/lesson-$name--*.dptrace 2>/dev/null | wc -l)
    check "$name: $want recording(s) in scenarios/recorded/ ($got)" test "$got" -eq "$want"
done

# Lesson 10: four sync variants, backup_workers 0/1 x fail worker:1@step=40,restart=1s /
# ps:1@step=140,restart=500ms, a checkpoint every 25 steps. The headless run above is the
# first variant (backup 0, worker fault at 40, reached with steps=60). Here every variant
# again, shortened to 150 steps (past the ps fault), then the async worker case, which
# cannot be a variant (async takes no backup worker; 400 steps: with 200 the restart comes
# after the others are done and the run fails, see the notes), and the shipped recordings.
L10=scenarios/lessons/10-failure-recovery.ini
$DOWNPOUR compare $L10 --set steps=150 --out "$TMP/l10c" >/dev/null 2>"$TMP/l10c.err"
rc=$?
check "10-failure-recovery: compare with steps=150 (rc $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 5 "$TMP/l10c.err" | sed 's/^/    10-failure-recovery: /'
$DOWNPOUR run $L10 --no-view --set mode=async --set steps=400 --out "$TMP/l10async" >"$TMP/l10async.json" 2>"$TMP/l10async.err"
rc=$?
check "10-failure-recovery: async worker case, steps=400 (rc $rc)" test "$rc" -eq 0
# l10_check TRACE KIND: KIND ps | worker | backup | async; prints "ok ..." or the problems
l10_n=0
l10_check() {
    l10_n=$((l10_n + 1))   # outputs go to $TMP, never beside a shipped recording
    $DOWNPOUR trace info --json "$1" >"$TMP/l10-$l10_n.info" 2>/dev/null
    $DOWNPOUR trace captions --json "$1" >"$TMP/l10-$l10_n.cap" 2>/dev/null
    python3 - "$TMP/l10-$l10_n.info" "$TMP/l10-$l10_n.cap" "$(dirname "$1")/summary.json" "$2" <<'PY'
import json, os, sys
info, cap, summ, kind = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
c, p = info['counts'], []
s = json.load(open(summ)) if os.path.exists(summ) else None
def rule(r): return [x for x in cap['captions'] if x['rule'] == r]
if kind == 'ps':
    if c.get('checkpoint_restore') != 1: p.append(f"checkpoint_restore {c.get('checkpoint_restore')} != 1")
    if c.get('ps_retry', 0) < info['workers']: p.append(f"ps_retry {c.get('ps_retry')} < {info['workers']} workers")
    # from the last checkpoint saved before ps 1 died at step 140: 125, or a step or two
    # later when the chief (a backup worker dropped) read the step after the multiple of 25
    fail = [x for x in rule('failure') if 'ps 1' in x['text']]
    saved = [x['step'] for x in rule('checkpoint') if 'saves' in x['text'] and fail and x['t_s'] <= fail[0]['t_s']]
    want = f"restores global step {saved[-1]} from model.ckpt-{saved[-1]}" if saved else 'restores global step'
    if not saved or not 125 <= saved[-1] < 140: p.append(f"the last checkpoint before the failure is {saved[-1:]}, not 125..139")
    if not any(want in x['text'] for x in cap['captions']): p.append(f"no caption '{want}'")
else:
    if (c.get('failure'), c.get('recovery')) != (1, 1): p.append(f"failure {c.get('failure')}, recovery {c.get('recovery')} != 1, 1")
    if c.get('checkpoint_restore', 0) or c.get('ps_retry', 0): p.append("a worker fault restored a checkpoint or retried a ps")
    f, r = rule('failure'), rule('recovery')
    if len(f) != 1 or len(r) != 1: p.append("not one failure and one recovery caption")
    elif kind == 'worker' and r[0]['step'] != f[0]['step']:
        # no backup: nothing moves while worker 1 is down, the barrier waits for it
        p.append(f"the global step moved while worker 1 was down ({f[0]['step']} -> {r[0]['step']})")
    elif kind in ('backup', 'async') and r[0]['step'] < f[0]['step'] + 20:
        # the others go on: at 20 ms a step, 1 s down is about 45 global steps
        p.append(f"the others did not go on while worker 1 was down ({f[0]['step']} -> {r[0]['step']})")
    if kind == 'backup':
        if s is not None and not s['dropped_gradients'] > 0: p.append("no dropped gradients")
        if any('at the barrier' in x['text'] and 'waits at the barrier' not in x['text'] or 'waiting for' in x['text']
               for x in cap['captions'] if f and r and f[0]['t_s'] < (x['t_s'] or 0) < r[0]['t_s'] and x['rule'] == 'barrier'
               and '3 gradients' in x['text']):
            p.append("waited for 3 gradients while worker 1 was down")
print('; '.join(p) or f"ok {c.get('failure')} failure, {c.get('recovery')} recovery, {c.get('ps_retry', 0)} ps_retry, "
      f"{c.get('checkpoint_restore', 0)} restore" + (f", {s['dropped_gradients']} dropped" if s else ''))
PY
}
for v in "backup_workers-0+fail-worker_1_step_40_restart_1s worker" "backup_workers-1+fail-worker_1_step_40_restart_1s backup" \
         "backup_workers-0+fail-ps_1_step_140_restart_500ms ps" "backup_workers-1+fail-ps_1_step_140_restart_500ms ps"; do
    set -- $v
    for t in "$TMP/l10c/variants/$1/trace.dptrace" "scenarios/recorded/lesson-10-failure-recovery--$1.dptrace"; do
        msg=$(l10_check "$t" "$2" 2>&1)
        check "10-failure-recovery: ${t#$TMP/}: $2: $msg" test "${msg#ok }" != "$msg"
    done
done
msg=$(l10_check "$TMP/l10async/trace.dptrace" async 2>&1)
check "10-failure-recovery: async (--set mode=async): $msg" test "${msg#ok }" != "$msg"
msg=$(l10_check "$TMP/10-failure-recovery/trace.dptrace" worker 2>&1)
check "10-failure-recovery: the headless steps=60 run: worker: $msg" test "${msg#ok }" != "$msg"

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
