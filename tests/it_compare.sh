#!/usr/bin/env bash
# it_compare.sh — `downpour compare` end to end on two small scenarios (simulated, and
# real on synthetic data): every file of the report folder is written, the table's rows
# are the variants' summaries, and the plotted points (the CSV beside each PNG) are
# recomputed here from each variant's trace (Chrome export) by the documented rule:
# loss curves are means of step_end losses over 200 equal buckets of global step or time.
# Then the recordings in scenarios/recorded/ validate and render.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

verify() { # verify DIR: the report folder's files, rows and points
    python3 - "$DOWNPOUR" "$1" <<'PY'
import csv, json, math, os, subprocess, sys
D, out = sys.argv[1], sys.argv[2]
def line(ok, what): print(('ok   ' if ok else 'FAIL ') + what)
files = ['report.md', 'summary.csv'] + [p + ext for p in ('loss_vs_step', 'loss_vs_time', 'accuracy_vs_time',
         'throughput', 'staleness', 'ps_traffic') for ext in ('.png', '.csv')]
for f in files:
    p = os.path.join(out, f)
    line(os.path.getsize(p) > 0 if os.path.exists(p) else False, 'compare wrote %s' % f)
    if f.endswith('.png'):
        line(open(p, 'rb').read(8) == b'\x89PNG\r\n\x1a\n', '%s is a PNG' % f)
rows = list(csv.DictReader(open(os.path.join(out, 'summary.csv'))))
variants = sorted(os.listdir(os.path.join(out, 'variants')))
line(sorted(r['variant'] for r in rows) == variants and len(rows) >= 2,
     'summary.csv has one row per variant folder (%s)' % ', '.join(variants))
report = open(os.path.join(out, 'report.md')).read()
common = min(int(r['global_step']) for r in rows)
line('| time to step %d (s) |' % common in report,
     'report.md: the times to step %d, the last global step every variant reached' % common)
shown = [l for l in report.splitlines() if l.startswith('![')]
line(shown == ['![%s](%s.png)' % p for p in (('Loss by global step', 'loss_vs_step'), ('Loss over time', 'loss_vs_time'),
     ('Test accuracy over time', 'accuracy_vs_time'), ('Throughput', 'throughput'),
     ('Staleness of applied gradients', 'staleness'), ('Traffic per ps', 'ps_traffic'))],
     'report.md shows the 6 plots, each once (%d image lines)' % len(shown))
def points(name):
    res = {}
    for r in csv.DictReader(open(os.path.join(out, name))):
        res.setdefault(r['series'], []).append(r)
    return res
loss_step, loss_time, stale, thr = (points(n) for n in ('loss_vs_step.csv', 'loss_vs_time.csv', 'staleness.csv', 'throughput.csv'))
acc_pts = points('accuracy_vs_time.csv')
def l_ends(t): return all(l.endswith('|') for l in t)
# its sections, in order
heads = [l for l in report.splitlines() if l.startswith('#')]
line([h.split(' ', 1)[0] for h in heads] == ['#', '##', '##', '##'] and
     [h for h in heads[1:]] == ["## Where the workers' time went", '## Plots', '## Watch them'],
     'report.md: a title, then sections Where the workers\' time went, Plots, Watch them (%s)' % heads)
def close(a, b): return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
# report.md's table is a Markdown table: header, separator, one row per variant, each
# line with the header's cells (the first table; the time table is checked below)
table = [l for l in report.split('## Where the workers', 1)[0].splitlines() if l.startswith('|')]
cells = [len(l.strip('|').split('|')) for l in table]
line(len(table) == 2 + len(rows) and all(c == cells[0] for c in cells) and l_ends(table) and
     all(c.strip() in ('---', '---:') for c in table[1].strip('|').split('|')),
     'report.md: a table of %d lines (header, separator, %d rows) of %s cells each' % (len(table), len(rows), cells))
for r in rows:
    v = r['variant']
    d = os.path.join(out, 'variants', v)
    summ = json.loads(open(os.path.join(d, 'summary.json')).read())
    line(int(r['global_step']) == summ['global_step'] and r['mode'] == summ['mode'] and r['engine'] == summ['engine'],
         '%s: table row = its summary (global step %s, mode %s)' % (v, r['global_step'], r['mode']))
    line(any(l.startswith('| %s | %s | %s |' % (v, summ['engine'], summ['mode'])) for l in report.splitlines()),
         '%s: report.md has its row, on a line of its own' % v)
    line(abs(float(r['samples_per_s']) - summ['samples_per_s']) <= 0.5, '%s: samples/s in the table' % v)
    per_ps = ('%.0f' % (summ['bytes_pulled'] / summ['ps']), '%.0f' % (summ['bytes_pushed'] / summ['ps']))
    line((r['bytes_pulled_per_ps'], r['bytes_pushed_per_ps']) == per_ps,
         '%s: bytes pulled and pushed per ps in the table = the summary\'s over %d ps (%s, %s)' % ((v, summ['ps']) + per_ps))
    traffic = sum(float(p['value']) for p in points('ps_traffic.csv').get(v, []))
    line(close(traffic, summ['bytes_pulled'] + summ['bytes_pushed']),
         '%s: the ps traffic bars add up to the summary\'s bytes pulled + pushed (%.0f)' % (v, traffic))
    tp = {p['category']: float(p['value']) for p in thr[v]}
    line(close(tp['samples/s'], summ['samples_per_s']), '%s: throughput bar = summary samples_per_s' % v)
    chrome = os.path.join(os.environ.get('TMP', '/tmp'), v + '.json')
    subprocess.run([D, 'trace', 'export', '--chrome', chrome, os.path.join(d, 'trace.dptrace')],
                   check=True, capture_output=True)
    doc = json.load(open(chrome))
    ev = doc['traceEvents'] if isinstance(doc, dict) else doc
    real = [e for e in ev if e.get('ph') != 'M']
    t0 = min(e['ts'] for e in real)
    steps = [((e['ts'] - t0) / 1e6, e['args']['value2'], e['args']['value']) for e in ev if e.get('name') == 'step_end']
    def buckets(xs, ys):
        top = max(xs) if xs else 0
        acc = {}
        for x, y in zip(xs, ys):
            b = min(199, int(math.floor(x / top * 200))) if top > 0 else 0
            acc.setdefault(b, []).append((x, y))
        return [(sum(p[0] for p in acc[b]) / len(acc[b]), sum(p[1] for p in acc[b]) / len(acc[b])) for b in sorted(acc)]
    want = buckets([s[1] for s in steps], [s[2] for s in steps])
    got = [(float(p['x']), float(p['y'])) for p in loss_step.get(v, [])]
    line(len(want) > 5 and len(got) == len(want) and all(close(a[0], b[0]) and abs(a[1] - b[1]) <= 1e-5 * max(1, abs(a[1]))
         for a, b in zip(want, got)), '%s: loss_vs_step.csv = the trace\'s step_end losses by global step (%d points)' % (v, len(got)))
    want = buckets([s[0] for s in steps], [s[2] for s in steps])
    got = [(float(p['x']), float(p['y'])) for p in loss_time.get(v, [])]
    line(len(got) == len(want) and all(abs(a[0] - b[0]) <= 2e-6 and abs(a[1] - b[1]) <= 1e-5 * max(1, abs(a[1]))
         for a, b in zip(want, got)), '%s: loss_vs_time.csv = the trace\'s step_end losses by time (%d points)' % (v, len(got)))
    evals = [e for e in ev if e.get('name') == 'eval' and isinstance(e['args'].get('value'), (int, float))
             and math.isfinite(e['args']['value'])]
    line(len(acc_pts.get(v, [])) == len(evals),
         '%s: accuracy_vs_time.csv has a point per evaluation with an accuracy (%d)' % (v, len(evals)))
    applies = [e['args']['staleness'] for e in ev if e.get('name') == 'apply']
    hist = {str(k): 0 for k in range(8)}; hist['8+'] = 0
    for s_ in applies: hist[str(int(s_)) if s_ < 8 else '8+'] += 1
    hist['dropped'] = sum(1 for e in ev if e.get('name') == 'drop')
    got = {p['category']: float(p['value']) for p in stale[v]}
    line(all(got.get(k, 0) == hist[k] for k in hist), '%s: staleness.csv = the trace\'s applies by staleness (%d applies)' % (v, len(applies)))
PY
}

# A simulated comparison: sync vs async, 32 workers; its evaluations have no accuracy
# (the simulator has none), so they plot no point.
printf '%s\n' '[scenario]' 'title = small sim compare' 'engine = sim' '[cluster]' 'ps = 2' 'workers = 32' \
    'compute = exponential:mean=20ms' '[training]' 'steps = 60' 'model_bytes = 2MB' 'eval_every = 20' \
    '[compare]' 'vary = mode: sync, async' >"$TMP/sim.ini"
"$DOWNPOUR" compare "$TMP/sim.ini" --out "$TMP/simrep" >"$TMP/sim.out" 2>"$TMP/sim.err"
check "compare of a sim scenario exits 0" test $? -eq 0
check "compare says which variant of how many" grep -q "variant 2 of 2: mode-async" "$TMP/sim.err"
verify "$TMP/simrep" >"$TMP/v1.out" 2>&1 || echo "FAIL verify crashed: $(tail -3 "$TMP/v1.out")" >>"$TMP/v1.out"
# A sampled simulator trace (above 64 workers, the transfers of 16 only): the ps traffic
# is scaled to the summary's totals, every worker moving the same bytes.
printf '%s\n' '[scenario]' 'title = sampled' 'engine = sim' '[cluster]' 'workers = 80' '[training]' \
    'steps = 30' '[compare]' 'vary = ps: 1, 3' >"$TMP/sampled.ini"
"$DOWNPOUR" compare "$TMP/sampled.ini" --out "$TMP/sampledrep" >/dev/null 2>"$TMP/sampled.err"
check "compare of a sampled simulated scenario exits 0" test $? -eq 0
verify "$TMP/sampledrep" >"$TMP/v3.out" 2>&1 || echo "FAIL verify crashed: $(tail -3 "$TMP/v3.out")" >>"$TMP/v3.out"
# A real comparison on synthetic data: backup workers 0 and 1, one straggler.
printf '%s\n' '[scenario]' 'title = small real compare' 'engine = real' '[cluster]' 'ps = 1' 'workers = 3' \
    '[training]' 'steps = 40' 'data = synthetic' 'model = mlp' 'hidden = 32' '[faults]' 'straggler = worker:2x3' \
    '[compare]' 'vary = backup_workers: 0, 1' 'label = backups' >"$TMP/real.ini"
"$DOWNPOUR" compare "$TMP/real.ini" --out "$TMP/realrep" >"$TMP/real.out" 2>"$TMP/real.err"
check "compare of a real scenario exits 0" test $? -eq 0
verify "$TMP/realrep" >"$TMP/v2.out" 2>&1 || echo "FAIL verify crashed: $(tail -3 "$TMP/v2.out")" >>"$TMP/v2.out"
while IFS= read -r l; do
    case "$l" in "ok   "*) ok "${l#ok   }";; "FAIL "*) bad "${l#FAIL }";; esac
done < <(cat "$TMP/v1.out" "$TMP/v2.out" "$TMP/v3.out")
check "the report's heading is the [compare] label, the scenario's title under it" \
    bash -c "head -3 '$TMP/realrep/report.md' | tr '\n' '|' | grep -qxF '# backups||small real compare|'"
check "the report names the command that opens the traces side by side" \
    grep -q "downpour view $TMP/realrep/variants/backup_workers-0/trace.dptrace --compare $TMP/realrep/variants/backup_workers-1/trace.dptrace" "$TMP/realrep/report.md"
# "Where the workers' time went": each variant's row is its workers' phases summed, as
# `trace stats --json` lists them worker by worker; without a backup, the straggler
# (worker 2) computes most
for v in backup_workers-0 backup_workers-1; do
    "$DOWNPOUR" trace stats --json "$TMP/realrep/variants/$v/trace.dptrace" >"$TMP/$v.stats" 2>/dev/null
done
check "the report's time table: a row per variant, the workers' phases summed, the straggler computing most and pushing last" python3 -c "
import json, re, sys
rep = open(sys.argv[1]).read()
sec = rep.split('## Where the workers\' time went', 1)[1].split('## Plots', 1)[0]
rows = [l for l in sec.splitlines() if l.startswith('| ') and not l.startswith('| ---')]
head = [c.strip() for c in rows[0].strip('|').split('|')]
assert len(rows) == 3, rows
for v, row in zip(['backup_workers-0', 'backup_workers-1'], rows[1:]):
    cells = [c.strip() for c in row.strip('|').split('|')]
    assert cells[0] == v, cells
    w = json.load(open(sys.argv[2] + '/' + v + '.stats'))['per_worker']
    total = sum(x['time_s'] for x in w)
    assert head[-2:] == ['computing most', 'last to push (sync)'], head
    for name, cell in zip(head[1:-2], cells[1:-2]):
        key = 'ssp_blocked' if name == 'ssp wait' else name
        want = 100 * sum(x['phase_s'][key] for x in w) / total
        assert abs(float(cell.rstrip(' %')) - want) < 0.051, (v, name, cell, want)
    # without a backup the barrier waits for the 3x straggler every step: it computes
    # most, and its gradients come last
    assert v != 'backup_workers-0' or cells[-2].startswith('worker 2: '), cells
    assert v != 'backup_workers-0' or re.fullmatch(r'worker 2: \d+ of 40 steps', cells[-1]), cells
" "$TMP/realrep/report.md" "$TMP"
"$DOWNPOUR" compare scenarios/sync-vs-async.ini --set wrokers=2 >/dev/null 2>"$TMP/e.err"
check "compare checks --set before running anything" grep -q 'unknown key "wrokers"' "$TMP/e.err"
# A report holds up to 8 variants (its plots' series): 8 run, 9 are refused before any runs.
for n in 8 9; do
    printf '%s\n' '[scenario]' "title = $n variants" 'engine = sim' '[training]' 'steps = 20' '[compare]' \
        "vary = workers: $(seq -s ', ' 1 $n)" >"$TMP/v$n.ini"
done
"$DOWNPOUR" compare "$TMP/v8.ini" --out "$TMP/v8" >/dev/null 2>"$TMP/v8.err"
check "compare of 8 variants, the most a report holds, runs them all (rc $?)" \
    test "$(tail -n +2 "$TMP/v8/summary.csv" | wc -l)" -eq 8
"$DOWNPOUR" compare "$TMP/v9.ini" --out "$TMP/v9" >/dev/null 2>"$TMP/v9.err"
check "compare of 9 variants is refused (rc $?) before any runs" \
    bash -c "grep -qx 'downpour: compare: $TMP/v9.ini: 9 variants; a report compares at most 8' '$TMP/v9.err' && ! [ -e '$TMP/v9' ]"
printf '%s\n' '[scenario]' 'title = nothing to compare' '[cluster]' 'ps = 1' >"$TMP/novary.ini"
"$DOWNPOUR" compare "$TMP/novary.ini" >/dev/null 2>"$TMP/e.err"
check "compare without [compare] says so" grep -q "no \[compare\] section" "$TMP/e.err"

# Ctrl-C (or SIGTERM) during a later variant: the real runs share one event loop in one
# process, so every variant's launcher must take its signal watchers off it; one left
# behind from the first variant sat in the loop's list for its signal when the second
# variant added its own, and the signal then hung the process.
printf '%s\n' '[scenario]' 'title = interrupted' 'engine = real' '[cluster]' 'ps = 1' 'workers = 1' \
    '[training]' 'steps = 400' 'data = synthetic' 'model = softmax' '[pace]' 'pace = 10ms' \
    '[compare]' 'vary = mode: sync, async' >"$TMP/int.ini"
for sig in INT TERM; do
    "$DOWNPOUR" compare "$TMP/int.ini" --out "$TMP/intrep-$sig" >/dev/null 2>"$TMP/int.err" &
    CP=$!
    for _ in $(seq 200); do   # the second variant's worker is up
        grep -q "variant 2 of 2" "$TMP/int.err" && child_pid "$CP" "task --job_name=worker" >/dev/null && break
        sleep 0.05
    done
    TASKS=$(children "$CP")
    kill -"$sig" "$CP"
    for _ in $(seq 100); do kill -0 "$CP" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$CP" 2>/dev/null; then
        bad "compare stops on SIG$sig in its second variant: still running 10 s after it"
        kill -KILL "$CP" $TASKS 2>/dev/null
        wait "$CP"
    else
        wait "$CP"; rc=$?
        check "compare stops on SIG$sig in its second variant (rc $rc, 130)" test "$rc" -eq 130
    fi
    check "... saying it was interrupted" grep -q "^downpour: compare: interrupted$" "$TMP/int.err"
    check "... and leaving no task of it running (of $(echo $TASKS | wc -w) started)" \
        test -n "$TASKS" -a -z "$(alive_matching $TASKS -- 'task --job_name')"
done

# The recordings: each validates and renders.
n=0
for t in scenarios/recorded/*.dptrace; do
    [ -f "$t" ] || continue
    n=$((n + 1))
    check "recording $(basename "$t") validates" "$DOWNPOUR" trace validate "$t"
    check "recording $(basename "$t") renders" "$DOWNPOUR" render "$t" --out "$TMP/rec-$n.png"
    check "recording $(basename "$t") is at most 8 MB" test "$(stat -c %s "$t")" -le 8000000
done
check "scenarios/recorded/ holds a recording of each shipped scenario's variants ($n)" test "$n" -ge 6
done_tests
