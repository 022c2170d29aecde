#!/usr/bin/env bash
# it_scenario.sh — scenario files and the key table: every shipped scenario passes
# `run --check`; malformed files get the right "file:line: ..." errors; the key table is
# the single source of every flag of cluster, task and sim (accepted, listed in --help,
# refused by the commands it does not name) and of every INI key (accepted in its
# section only); a run configured by a file and by flags gives the same summary.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# --- every shipped scenario is valid ----------------------------------------------------
n=0
for f in scenarios/*.ini scenarios/lessons/*.ini; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    check "run --check $f" "$DOWNPOUR" run --check "$f"
done
check "scenarios/ ships at least 3 scenarios ($n)" test "$n" -ge 3

# --- malformed files: exact messages with file:line ------------------------------------
# bad_file NAME 'expected message' LINE...: writes $TMP/NAME.ini from the lines, checks that
# run --check exits 1 with exactly "downpour: run --check: $TMP/NAME.ini:MESSAGE".
bad_file() {
    local name=$1 want=$2; shift 2
    printf '%s\n' "$@" >"$TMP/$name.ini"
    "$DOWNPOUR" run --check "$TMP/$name.ini" >/dev/null 2>"$TMP/$name.err"
    local rc=$? got
    got=$(cat "$TMP/$name.err")
    if [ $rc -eq 1 ] && [ "$got" = "downpour: run --check: $TMP/$name.ini:$want" ]; then
        ok "$name: $want"
    else
        bad "$name: want \"$want\", rc $rc: $got"
    fi
}
H=('[scenario]' 'title = t' 'engine = real')
# `run` and `compare` themselves (not only --check) stop at a bad file, running nothing.
printf '%s\n' "${H[@]}" '[training]' 'stpes = 5' >"$TMP/typo.ini"
for cmd in run compare; do
    "$DOWNPOUR" $cmd "$TMP/typo.ini" --out "$TMP/typo-$cmd" >/dev/null 2>"$TMP/typo.err"
    rc=$?
    check "$cmd of a file with a misspelt key stops (rc $rc) with its line, running nothing" \
        bash -c "[ $rc -eq 2 ] && grep -q '^downpour: $cmd: $TMP/typo.ini:5: unknown key \"stpes\" in \[training\] (did you mean \"steps\"?)' '$TMP/typo.err' && ! [ -e '$TMP/typo-$cmd' ]"
done
bad_file unknown-key '5: unknown key "wokers" in [cluster] (did you mean "workers"?); valid keys: ps, workers, compute, calibrate_from' \
    "${H[@]}" '[cluster]' 'wokers = 3'
bad_file wrong-section '5: key "mode" belongs in [training], not [cluster]' "${H[@]}" '[cluster]' 'mode = sync'
bad_file other-section-suggestion '5: unknown key "stalenes" in [cluster] (did you mean "staleness" in [training]?); valid keys: ps, workers, compute, calibrate_from' \
    "${H[@]}" '[cluster]' 'stalenes = 2'
bad_file out-of-range '5: workers: 0 is outside 1..65536' "${H[@]}" '[cluster]' 'workers = 0'
bad_file not-a-number '5: lr: "fast" is not a number' "${H[@]}" '[training]' 'lr = fast'
bad_file bad-enum '5: mode: "fastest" is not one of sync, async or ssp' "${H[@]}" '[training]' 'mode = fastest'
bad_file bad-time '5: pace: "soon" is not a time (e.g. 50us, 100ms, 2s)' "${H[@]}" '[pace]' 'pace = soon'
bad_file duplicate '6: duplicate key "workers" in [cluster] (first at line 5)' "${H[@]}" '[cluster]' 'workers = 2' 'workers = 3'
bad_file duplicate-title '4: duplicate key "title" in [scenario]' '[scenario]' 'title = t' 'engine = real' 'title = u'
bad_file duplicate-description '5: duplicate key "description" in [scenario]' "${H[@]}" 'description = d' 'description = e'
# a suggestion only within 3 edits: "hiddenwxy" is 3 from "hidden", "hiddenwxyz" 4
bad_file near-key '5: unknown key "hiddenwxy" in [training] (did you mean "hidden"?); valid keys: mode, backup_workers, staleness, prefetch, pipeline, steps, batch, lr, optimizer, model, hidden, model_bytes, data, synthetic_samples, eval_every, eval_time, max_sim_time, nqm_dims' \
    "${H[@]}" '[training]' 'hiddenwxy = 1'
bad_file far-key '5: unknown key "hiddenwxyz" in [training]; valid keys: mode, backup_workers, staleness, prefetch, pipeline, steps, batch, lr, optimizer, model, hidden, model_bytes, data, synthetic_samples, eval_every, eval_time, max_sim_time, nqm_dims' \
    "${H[@]}" '[training]' 'hiddenwxyz = 1'
bad_file vary-bar-bad-value '5: vary fail: "ps:1@soon" is not JOB:I@step=N or JOB:I@time=T, optionally ,restart=T; e.g. worker:1@step=200' \
    "${H[@]}" '[compare]' 'vary = fail: worker:1@step=4,restart=1s | ps:1@soon'
# A repeatable key (fail) may be given twice; a vary separated by | keeps commas in values.
printf '%s\n' "${H[@]}" '[cluster]' 'ps = 2' '[training]' 'data = synthetic' 'model = mlp' 'hidden = 8' 'steps = 40' \
    'eval_every = 0' '[faults]' 'fail = worker:1@step=5,restart=200ms' 'fail = ps:1@step=20,restart=200ms' \
    'save_checkpoint_steps = 5' '[pace]' 'pace = 10ms' '[compare]' 'vary = mode: sync | async' >"$TMP/two-fails.ini"
check "two fail keys and a | vary pass run --check" "$DOWNPOUR" run --check "$TMP/two-fails.ini"
timeout 120 "$DOWNPOUR" compare "$TMP/two-fails.ini" --out "$TMP/two-fails" >/dev/null 2>"$TMP/two-fails.err"
check "compare runs both variants with both faults (rc $?)" \
    test "$(grep -c '"faults_injected":2' "$TMP/two-fails"/variants/*/summary.json | grep -c ':1$')" = 2
for v in sync async; do
    check "$v: save_checkpoint_steps gives the variant its own checkpoints/ folder, restored after the lost ps" \
        grep -q "restored $TMP/two-fails/variants/mode-$v/checkpoints/model.ckpt-[0-9]* (global step" "$TMP/two-fails.err"
done
# A variant's checkpoints/ folder starts empty of checkpoints on every run (a rerun trains
# from step 0, never from the last run's files), and nothing else in it is touched.
printf '%s\n' "${H[@]}" '[training]' 'data = synthetic' 'model = softmax' 'steps = 10' 'eval_every = 0' \
    '[faults]' 'save_checkpoint_steps = 5' >"$TMP/ckdir.ini"
"$DOWNPOUR" run "$TMP/ckdir.ini" --out "$TMP/ckdir" --no-view >/dev/null 2>&1
echo "the class's notes" >"$TMP/ckdir/checkpoints/notes.txt"
"$DOWNPOUR" run "$TMP/ckdir.ini" --out "$TMP/ckdir" --no-view >/dev/null 2>"$TMP/ckdir.err"
check "a rerun's checkpoints/ folder: the run's own checkpoints, written again" \
    test "$(LC_ALL=C ls "$TMP/ckdir/checkpoints" | tr '\n' ' ')" = "checkpoint model.ckpt-10 model.ckpt-5 notes.txt "
check "... from step 0, not restored from the last run's" bash -c "! grep -q restored '$TMP/ckdir.err'"
check "a real scenario's run says so: (real engine)" grep -q "^downpour: run: .* (real engine) into $TMP/ckdir/" "$TMP/ckdir.err"
check "... and a file of the user's in it kept" test "$(cat "$TMP/ckdir/checkpoints/notes.txt")" = "the class's notes"
# A checkpoint directory given with --set is the run's: no checkpoints/ folder of its own.
"$DOWNPOUR" run "$TMP/ckdir.ini" --out "$TMP/ckset" --no-view --set checkpoint_dir="$TMP/mine" >/dev/null 2>&1
check "--set checkpoint_dir=DIR: the checkpoints go there, not to the output's checkpoints/" \
    bash -c "[ -e '$TMP/mine/model.ckpt-10' ] && [ ! -e '$TMP/ckset/checkpoints' ]"
# A simulated run shows its progress bar on a terminal, up to its last step, and none
# into a file.
printf '%s\n' '[scenario]' 'title = sim bar' 'engine = sim' '[cluster]' 'ps = 1' 'workers = 4' \
    '[training]' 'steps = 200' >"$TMP/bar.ini"
check_sim_bar "a simulated run" 200 "'$DOWNPOUR' run '$TMP/bar.ini' --out '$TMP/bar' --no-view"
bad_file missing-scenario '2: the file must start with [scenario] (title, engine = real | sim)' '[cluster]' 'workers = 2'
bad_file key-before-section '1: "ps" comes before any section; the file must start with [scenario]' 'ps = 1'
bad_file no-title '1: [scenario] needs a title' '[scenario]' 'engine = real'
bad_file empty '1: empty file (a scenario starts with [scenario])' '' ''
bad_file vary-syntax '5: vary "mode sync async" is not KEY: V1, V2, ... (e.g. vary = mode: sync, async)' \
    "${H[@]}" '[compare]' 'vary = mode sync async'
bad_file vary-one-value '5: vary: "mode: sync" needs at least two values to compare' "${H[@]}" '[compare]' 'vary = mode: sync'
bad_file vary-unknown '5: vary: unknown key "wrokers" (did you mean "workers"?)' "${H[@]}" '[compare]' 'vary = wrokers: 1, 2'
bad_file vary-unknown-far '5: vary: unknown key "zzzzzzzzzz" (see downpour keys)' "${H[@]}" '[compare]' 'vary = zzzzzzzzzz: 1, 2'
# a name longer than the suggester's 63-character table: no suggestion, no overrun
LONG=$(printf 'w%.0s' {1..100})
bad_file long-key "5: unknown key \"$LONG\" in [training]; valid keys: mode, backup_workers, staleness, prefetch, pipeline, steps, batch, lr, optimizer, model, hidden, model_bytes, data, synthetic_samples, eval_every, eval_time, max_sim_time, nqm_dims" \
    "${H[@]}" '[training]' "$LONG = 1"
bad_file vary-bad-value '5: vary mode: "fast" is not one of sync, async or ssp' "${H[@]}" '[compare]' 'vary = mode: sync, fast'
bad_file engine-key '5: "bandwidth" is used by the simulator only, and this scenario'"'"'s engine is real' \
    "${H[@]}" '[network]' 'bandwidth = 1Gbit'
bad_file unknown-section '4: unknown section [bogus]; valid sections: [scenario] [cluster] [training] [placement] [network] [faults] [pace] [compare] [lesson]' \
    "${H[@]}" '[bogus]' 'x = 1'
bad_file bad-engine '3: engine: "quantum" is not real, local or sim' '[scenario]' 'title = t' 'engine = quantum'
bad_file not-ini '4: not INI: expected [section] or key = value' "${H[@]}" '[cluster' 'ps = 1'
bad_file dash-spelling '5: unknown key "backup-workers" in [training] (did you mean "backup_workers"?); valid keys: mode, backup_workers, staleness, prefetch, pipeline, steps, batch, lr, optimizer, model, hidden, model_bytes, data, synthetic_samples, eval_every, eval_time, max_sim_time, nqm_dims' \
    "${H[@]}" '[training]' 'backup-workers = 1'
# the nearest key, not merely one near enough: "batah" is 1 edit from batch, 2 from data
bad_file nearest-key '5: unknown key "batah" in [training] (did you mean "batch"?); valid keys: mode, backup_workers, staleness, prefetch, pipeline, steps, batch, lr, optimizer, model, hidden, model_bytes, data, synthetic_samples, eval_every, eval_time, max_sim_time, nqm_dims' \
    "${H[@]}" '[training]' 'batah = 5'
bad_file across-keys '5: backup_workers: 2 leaves no replica to aggregate with 2 workers' "${H[@]}" '[training]' 'backup_workers = 2'
# ... and on the second of two vary lines (the line found among the vary lines, after the
# first that does not name it)
bad_file across-keys-vary '6: backup_workers: 2 leaves no replica to aggregate with 2 workers' "${H[@]}" \
    '[compare]' 'vary = mode: sync, async' 'vary = backup_workers: 0, 2'
bad_file bad-straggler '5: straggler: "worker:9" is not worker:IxF (e.g. worker:3x4)' "${H[@]}" '[faults]' 'straggler = worker:9'
bad_file lesson-answer '5: ask_at_step.30: the answer "both" is not one of the choices' \
    "${H[@]}" '[lesson]' 'ask_at_step.30 = Which is faster? | sync | async | both'
LONGCHOICE=$(printf 'x%.0s' {1..100})
bad_file lesson-choice-long "5: ask_at_step.30: choice 2 is too long" \
    "${H[@]}" '[lesson]' "ask_at_step.30 = Which? | sync | $LONGCHOICE | sync"
bad_file lesson-ask-format '5: ask_at_step.30: "Which?" is not question | choice | choice ... | answer (2 to 6 choices)' \
    "${H[@]}" '[lesson]' 'ask_at_step.30 = Which?'
bad_file lesson-key '5: unknown key "at_stp.3" in [lesson]; valid keys: number, duration, at_step.N, pause_at_step, ask_at_step.N' \
    "${H[@]}" '[lesson]' 'at_stp.3 = hello'
bad_file lesson-pause '5: pause_at_step: "soon" is not a list of steps' "${H[@]}" '[lesson]' 'pause_at_step = soon'
bad_file calibrate-missing "5: calibrate_from: $TMP/none.trace: No such file or directory" \
    '[scenario]' 'title = t' 'engine = sim' '[cluster]' "calibrate_from = $TMP/none.trace"
printf '%s\n' "${H[@]}" '[lesson]' 'number = 5' 'duration = 2min' 'at_step.10 = a caption' 'pause_at_step = 10, 20' \
    'ask_at_step.30 = Which is faster? | sync | async | async' >"$TMP/lesson.ini"
check "a [lesson] with number, duration, a caption, pauses and a question is valid" "$DOWNPOUR" run --check "$TMP/lesson.ini"
"$DOWNPOUR" run "$TMP/lesson.ini" --no-view --quiz --set steps=5 --set data=synthetic --out "$TMP/lesson" \
    >"$TMP/quiz.out" 2>/dev/null
check "run --quiz prints the question and its choices before the run" \
    python3 -c "import sys; t=open('$TMP/quiz.out').read(); sys.exit(0 if t.index('Which is faster?') < t.index('\"engine\"') and '       B) async' in t else 1)"
check "run --quiz prints the answer after the run" grep -q "at global step 30: B) async" "$TMP/quiz.out"
check "the lesson rides in the trace's metadata (captions, pauses, questions)" python3 -c "
import json, subprocess
m = json.loads(subprocess.run(['$DOWNPOUR', 'trace', 'info', '--json', '$TMP/lesson/trace.dptrace'], capture_output=True).stdout)['metadata']
l = m.get('lesson') or m.get('config', {}).get('lesson')
assert l['number'] == 5 and l['captions'] == [{'step': 10, 'text': 'a caption'}] and l['pauses'] == [10, 20], l
assert l['questions'] == [{'step': 30, 'question': 'Which is faster?', 'choices': ['sync', 'async'], 'answer': 1}], l"
"$DOWNPOUR" run --check "$TMP/none.ini" >/dev/null 2>"$TMP/none.err"
check "a missing file is named with its reason" grep -qx "downpour: run --check: $TMP/none.ini: No such file or directory" "$TMP/none.err"
"$DOWNPOUR" run --check scenarios/sync-vs-async.ini "$TMP/duplicate.ini" >/dev/null 2>&1
check "run --check exits 1 when any file is invalid" test $? -eq 1

# --- the key table is the single source ------------------------------------------------
"$DOWNPOUR" keys --json >"$TMP/keys.json"
for c in cluster task sim local; do "$DOWNPOUR" $c --help >"$TMP/help-$c.txt" 2>&1; done
python3 - "$DOWNPOUR" "$TMP" <<'PY' >"$TMP/keys.out"
import json, subprocess, sys
D, T = sys.argv[1], sys.argv[2]
keys = json.load(open(T + '/keys.json'))
examples = {'bytes': '10MB', 'bandwidth': '1Gbit', 'time': '1s', 'straggler': 'worker:1x2',
            'int': None, 'real': None, 'enum': None, 'bool': None}
text = {'fail': 'worker:0@step=5', 'trace': T + '/x.dptrace', 'summary': T + '/s.json',
        'hub': '127.0.0.1:1', 'checkpoint_dir': T + '/ck', 'calibrate_from': 'tests/data/real_sync_1ps_2w.trace',
        'data': 'synthetic', 'compute': 'constant:mean=10ms', 'trace_level': 'full',
        'device_for': 'hidden/*=/cpu:0', 'net': 'worker:1:rate=10mbit',
        'secret_file': T + '/secret'}
needs = {'prefetch': 'mode = async\n'}
def value(k):
    if k['type'] == 'bool': return None
    if k['name'] in text: return text[k['name']]
    if k['name'] == 'partition': return '2'
    if k['default'] not in (None, '-'): return k['default']
    return examples[k['type']] or str(int(k['min']) + 1)
def line(ok, what): print(('ok   ' if ok else 'FAIL ') + what)
for k in keys:
    v = value(k)
    flag = [k['flag']] + ([v] if v is not None else [])
    for cmd in ('cluster', 'task', 'sim', 'local'):
        rc = subprocess.run([D, cmd] + flag + ['--help'], capture_output=True).returncode
        help_has = (' ' + k['flag'] + ' ') in open(T + '/help-' + cmd + '.txt').read()
        if cmd in k['commands']:
            line(rc == 0, '%s %s is accepted (rc %d)' % (cmd, ' '.join(flag), rc))
            line(help_has, '%s --help lists %s' % (cmd, k['flag']))
        else:
            line(rc == 2, '%s refuses %s, not one of its flags (rc %d)' % (cmd, k['flag'], rc))
            line(not help_has, '%s --help does not list %s' % (cmd, k['flag']))
    if k['section'] is None: continue
    for eng in k['engines']:
        sec = k['section']
        body = '[scenario]\ntitle = t\nengine = %s\n' % eng
        if sec == 'scenario': body += '%s = %s\n' % (k['name'], v)
        else: body += '[%s]\n%s = %s\n' % (sec, k['name'], v if v is not None else 'true')
        body += needs.get(k['name'], '')   # a key valid only beside another (same section)
        path = '%s/key-%s-%s.ini' % (T, k['name'], eng)
        open(path, 'w').write(body)
        r = subprocess.run([D, 'run', '--check', path], capture_output=True, text=True)
        line(r.returncode == 0, '[%s] %s = %s is accepted by the %s engine %s' % (sec, k['name'], v, eng, r.stderr.strip()))
        other = 'training' if sec != 'training' else 'cluster'
        open(path, 'w').write('[scenario]\ntitle = t\nengine = %s\n[%s]\n%s = %s\n' % (eng, other, k['name'], v))
        r = subprocess.run([D, 'run', '--check', path], capture_output=True, text=True)
        line(r.returncode == 1 and ('belongs in [%s]' % sec) in r.stderr,
             '%s in [%s] is refused: it belongs in [%s]' % (k['name'], other, sec))
PY
rc=$?
check "the key-table checker ran to its end (rc $rc)" test $rc -eq 0
while IFS= read -r l; do
    case "$l" in "ok   "*) ok "${l#ok   }";; *) bad "${l#FAIL }";; esac
done <"$TMP/keys.out"
check "the key table has every DESIGN.md key" python3 -c "
import json; names = {k['name'] for k in json.load(open('$TMP/keys.json'))}
need = {'ps','workers','mode','backup_workers','staleness','steps','batch','lr','optimizer','model','hidden',
        'data','placement','seed','partition','eval_every','trace','hub','view','log_device_placement',
        'checkpoint_dir','pace','summary'}
assert need <= names, need - names"

"$DOWNPOUR" keys >"$TMP/keys.txt"
check "docs/scenarios.md holds the key table as downpour keys prints it" \
    python3 -c "import sys; sys.exit(0 if open('$TMP/keys.txt').read() in open('docs/scenarios.md').read() else 1)"

# --- a file and flags configure the same run -------------------------------------------
same_summary() { # same_summary A.json B.json KEY...: the keys not listed are equal
    python3 - "$@" <<'PY'
import json, sys
a, b = [json.loads([l for l in open(p) if l.startswith('{')][-1]) for p in sys.argv[1:3]]
skip = set(sys.argv[3:])
diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if k not in skip and a.get(k) != b.get(k)}
assert not diff, diff
assert len(set(a) - skip) >= 18, sorted(a)
PY
}
printf '%s\n' '[scenario]' 'title = small sync' 'engine = real' 'seed = 7' '[cluster]' 'ps = 2' 'workers = 2' \
    '[training]' 'steps = 40' 'data = synthetic' 'model = mlp' 'hidden = 32' 'optimizer = momentum' \
    '[placement]' 'partition = 2' >"$TMP/real.ini"
"$DOWNPOUR" run "$TMP/real.ini" --no-view --out "$TMP/real-file" >"$TMP/real-file.out" 2>"$TMP/real-file.err"
check "run of a real scenario exits 0" test $? -eq 0
for f in trace.dptrace summary.json sheet.png; do check "run wrote $f" test -s "$TMP/real-file/$f"; done
"$DOWNPOUR" cluster --seed 7 --ps 2 --workers 2 --steps 40 --data synthetic --model mlp --hidden 32 \
    --optimizer momentum --partition 2 --quiet --trace "$TMP/real-flags.dptrace" >"$TMP/real-flags.out" 2>/dev/null
check "a real sync run by file and by flags: same summary (but times, trace path, event count)" \
    same_summary "$TMP/real-file.out" "$TMP/real-flags.out" wall_s mean_step_s samples_per_s trace events host_irq_s
check "summary.json is the printed summary" same_summary "$TMP/real-file.out" "$TMP/real-file/summary.json"
printf '%s\n' '[scenario]' 'title = small sim' 'engine = sim' 'seed = 3' '[cluster]' 'ps = 2' 'workers = 16' \
    'compute = lognormal:mean=20ms,sigma=0.3' '[training]' 'mode = async' 'steps = 50' 'model_bytes = 4MB' \
    '[network]' 'bandwidth = 1Gbit' 'latency = 100us' '[faults]' 'straggler = worker:3x4' >"$TMP/sim.ini"
"$DOWNPOUR" run "$TMP/sim.ini" --no-view --out "$TMP/sim-file" >"$TMP/sim-file.out" 2>"$TMP/sim-file.err"
check "run of a sim scenario exits 0" test $? -eq 0
check "... and says which engine runs it, into which folder" \
    grep -qF "downpour: run: $(sed -n 's/^title = //p' "$TMP/sim.ini") (sim engine) into $TMP/sim-file/" "$TMP/sim-file.err"
"$DOWNPOUR" sim --seed 3 --ps 2 --workers 16 --compute 'lognormal:mean=20ms,sigma=0.3' --mode async \
    --steps 50 --model-bytes 4MB --bandwidth 1Gbit --latency 100us --straggler worker:3x4 \
    --trace "$TMP/sim-flags.dptrace" --quiet >"$TMP/sim-flags.out" 2>/dev/null
check "a sim run by file and by flags: same summary (but wall time, trace path, memory)" \
    same_summary "$TMP/sim-file.out" "$TMP/sim-flags.out" wall_s events_per_s peak_rss_mb trace
"$DOWNPOUR" run "$TMP/real.ini" --engine sim --no-view --out "$TMP/scaled" --set workers=64 >"$TMP/scaled.out" 2>"$TMP/scaled.err"
check "a real scenario runs in the simulator (--engine sim --set workers=64)" \
    test "$(json "$TMP/scaled.out" engine)" = sim -a "$(json "$TMP/scaled.out" workers)" = 64
check "... and says so: (sim engine)" grep -q "^downpour: run: .* (sim engine) into $TMP/scaled/" "$TMP/scaled.err"
check "the simulator names the real runtime's keys it ignores" grep -q "ignores the real runtime's keys: data" "$TMP/scaled.err"
# A refused run loses nothing: the last run's trace and summary in its folder stay as
# they were, and the refusal is the only line.
cp "$TMP/sim-file/trace.dptrace" "$TMP/sim-file.keep"
cp "$TMP/sim-file/summary.json" "$TMP/sim-file.keep.json"
"$DOWNPOUR" run "$TMP/sim.ini" --no-view --out "$TMP/sim-file" --set bogus=1 >/dev/null 2>"$TMP/set.err"
check "a refused --set leaves the folder's last trace and summary as they were" \
    bash -c "cmp -s '$TMP/sim-file/trace.dptrace' '$TMP/sim-file.keep' && cmp -s '$TMP/sim-file/summary.json' '$TMP/sim-file.keep.json'"
check "... and says only that it refused it (one line)" \
    bash -c "[ \$(wc -l <'$TMP/set.err') -eq 1 ] && grep -q 'unknown key \"bogus\"' '$TMP/set.err'"
sed 's|^\[cluster\]$|&\ncalibrate_from = /nonexistent/real.dptrace|' "$TMP/sim.ini" >"$TMP/sim-cal.ini"
"$DOWNPOUR" run "$TMP/sim-cal.ini" --no-view --out "$TMP/sim-file" >/dev/null 2>"$TMP/cal.err"
check "a calibration that fails (its trace is missing) leaves them too" \
    bash -c "grep -q /nonexistent/real.dptrace '$TMP/cal.err' && cmp -s '$TMP/sim-file/trace.dptrace' '$TMP/sim-file.keep' && cmp -s '$TMP/sim-file/summary.json' '$TMP/sim-file.keep.json'"
"$DOWNPOUR" run "$TMP/real.ini" --no-view --set wrokers=3 >/dev/null 2>"$TMP/set.err"
check "--set with an unknown key suggests one" grep -q 'unknown key "wrokers" (did you mean "workers"?)' "$TMP/set.err"
long=$(printf 'k%.0s' $(seq 70))
for bad in "=5" "workers" "$long=1"; do
    "$DOWNPOUR" run "$TMP/real.ini" --no-view --set "$bad" >/dev/null 2>"$TMP/set.err"
    rc=$?
    check "--set '${bad:0:12}' (${#bad} characters) is not KEY=VALUE (rc $rc)" \
        bash -c "[ $rc -eq 2 ] && grep -qx -- 'downpour: run: $TMP/real.ini: --set: \"$bad\" is not KEY=VALUE' '$TMP/set.err'"
done
# where the output goes is run's own (--out, --no-view): a --set of it would be dropped
for key in trace summary hub view; do
    "$DOWNPOUR" run "$TMP/real.ini" --no-view --out "$TMP/owned" --set $key=x >/dev/null 2>"$TMP/set.err"
    rc=$?
    check "--set $key=...: refused, exit 2, nothing run (rc $rc)" \
        bash -c "[ $rc -eq 2 ] && grep -q -- '--set $key: run, compare and fork choose where their output goes' '$TMP/set.err' && [ ! -e '$TMP/owned/trace.dptrace' ]"
done
# compare with a --set of the key it varies would run the same variant twice
"$DOWNPOUR" compare scenarios/sync-vs-async.ini --out "$TMP/same" --set mode=async >/dev/null 2>"$TMP/set.err"
rc=$?
check "compare --set of the varied key: refused, exit 2, naming the vary line (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && grep -q -- '--set mode: scenarios/sync-vs-async.ini:[0-9]* varies mode itself' '$TMP/set.err' && [ ! -e '$TMP/same' ]"
"$DOWNPOUR" run "$TMP/real.ini" --no-view --set workers=0 >/dev/null 2>"$TMP/set.err"
check "--set values get the same checks" grep -q -- '--set workers: 0 is outside 1..65536' "$TMP/set.err"
# straggler = none clears the file's stragglers: the run equals one without any.
"$DOWNPOUR" run "$TMP/sim.ini" --no-view --set straggler=none --out "$TMP/sim-none" >"$TMP/sim-none.out" 2>/dev/null
"$DOWNPOUR" sim --seed 3 --ps 2 --workers 16 --compute 'lognormal:mean=20ms,sigma=0.3' --mode async \
    --steps 50 --model-bytes 4MB --bandwidth 1Gbit --latency 100us \
    --trace "$TMP/sim-nostr.dptrace" --quiet >"$TMP/sim-nostr.out" 2>/dev/null
check "--set straggler=none: the run of a file with a straggler equals one without" \
    same_summary "$TMP/sim-none.out" "$TMP/sim-nostr.out" wall_s events_per_s peak_rss_mb trace
check "... and differs from the file's own run (the straggler mattered)" \
    test "$(json "$TMP/sim-none.out" global_step)/$(json "$TMP/sim-none.out" sim_time_s)" != \
         "$(json "$TMP/sim-file.out" global_step)/$(json "$TMP/sim-file.out" sim_time_s)"
check "zero compute is a valid pure-network experiment" "$DOWNPOUR" sim --compute constant:mean=0ms --steps 5 --quiet
done_tests
