#!/usr/bin/env python3
"""scripts/mutants.py: how much of a module's code the tests guard, measured by sampling
one-line mutants (a comparison flipped, && made ||, +1 made +0, a return value changed,
a statement deleted), building each and running the tests that cover it. A mutant the
tests still pass "survived": either the tests miss that line's behaviour, or the change
is equivalent (it cannot alter what the program does) and the survivor list says which
lines to read.

  scripts/mutants.py --files sim/run.c,sim/deliver.c \\
      --tests build/tests/test_sim,tests/it_sim.sh [--count 40] [--seed 1]

Works on a git worktree of HEAD (default /tmp/downpour-mutants-PID, removed after unless
--keep), never on this checkout: uncommitted changes are not in it. Each mutant is built
(`make -j2 build/downpour`, the unit tests named and the test tools, build/tests/tool_*,
which integration tests run) and the tests are run in the order given with
tests/run.sh, stopping at the first that fails. Prints one line per mutant
(killed, SURVIVED, nobuild, with the line before and after) and ends with the counts.
A unit test run past --timeout seconds counts as killed (a hang is a failure)."""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

OPS = [(r'<=', '<'), (r'>=', '>'), (r'(?<![<>=!])<(?![<=])', '<='), (r'(?<![<>=!-])>(?![>=])', '>='),
       (r'==', '!='), (r'!=', '=='), (r'&&', '||'), (r'\|\|', '&&'), (r'\+ 1\b', '+ 0'), (r'- 1\b', '- 0'),
       (r'return 1;', 'return 0;'), (r'return 0;', 'return 1;'), (r'return true;', 'return false;'),
       (r'return false;', 'return true;'), (r'\+\+', '--'), (r' \+ ', ' - '), (r' \* ', ' / ')]
# a declaration (deleting one does not build): "[static] [const] [struct] type [*]name [= ...];"
DECL = re.compile(r'^(static\s+)?(const\s+)?(struct\s+|enum\s+|unsigned\s+)?\w+(\s*\*\s*(const\s+)?|\s+)\**\s*\w+'
                  r'(\[[^\]]*\])?\s*(=.*)?;$')


def mutants_of(path, lines):
    """Every one-line mutant of a C file's function bodies (indented lines), asserts left out."""
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith(('/*', '*', '//', '#')) or 'assert' in s or not line.startswith((' ', '\t')):
            continue
        for pat, rep in OPS:
            for m in re.finditer(pat, line):
                new = line[:m.start()] + re.sub(pat, rep, line[m.start():m.end()]) + line[m.end():]
                out.append((path, i, new, f'{pat} -> {rep}'))
        if s.endswith(';') and not DECL.match(s) and '{' not in s and '}' not in s and \
                not s.startswith(('return', 'break', 'continue', 'goto', 'else', 'case', 'default')):
            out.append((path, i, re.match(r'\s*', line).group(0) + ';  /* deleted */', 'delete'))
    return out


def run(cmd, cwd, timeout=None):
    """Runs cmd in a process group of its own; past timeout the whole group is killed (the
    shell, tests/run.sh and the test it started alike) and None is returned."""
    p = subprocess.Popen(cmd, shell=True, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors='replace', start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def passed(result):
    """tests/run.sh's verdict: exit 0 and a last line "N passed, 0 failed"."""
    if result is None or result.returncode != 0:
        return False
    last = (result.stdout.strip().split('\n') or [''])[-1]
    return re.search(r'\b0 failed\b', last) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--files', required=True, help='C files to mutate, comma-separated (paths in the repository)')
    ap.add_argument('--tests', required=True,
                    help='tests to run, comma-separated: build/tests/test_X binaries and tests/it_Y.sh scripts')
    ap.add_argument('--count', type=int, default=40, help='mutants to try, sampled at random (default 40)')
    ap.add_argument('--seed', type=int, default=1, help='the sample\'s seed (default 1)')
    ap.add_argument('--from', dest='start', type=int, default=0,
                    help='skip the sample\'s first N mutants (to finish one cut short: same seed and count)')
    ap.add_argument('--timeout', type=int, default=300, help='seconds for each test run (default 300)')
    ap.add_argument('--worktree', help='where to check HEAD out (default /tmp/downpour-mutants-PID)')
    ap.add_argument('--keep', action='store_true', help='leave the worktree (and its build) afterwards')
    a = ap.parse_args()

    top = run('git rev-parse --show-toplevel', os.getcwd())
    if top is None or top.returncode:
        sys.exit('mutants.py: not inside the downpour git checkout')
    top = top.stdout.strip()
    files = [f for f in a.files.split(',') if f]
    tests = [t for t in a.tests.split(',') if t]
    for f in files:
        if not f.endswith('.c') or not os.path.isfile(os.path.join(top, f)):
            sys.exit(f'mutants.py: --files: "{f}" is not a C file of this repository')
    for t in tests:
        if not re.fullmatch(r'build/tests/test_\w+|tests/it_\w+\.sh', t):
            sys.exit(f'mutants.py: --tests: "{t}" is not build/tests/test_X or tests/it_Y.sh')
    if a.count < 1:
        sys.exit('mutants.py: --count: at least 1')
    if not 0 <= a.start < a.count:
        sys.exit('mutants.py: --from: from 0 to --count - 1')
    units = [t for t in tests if t.startswith('build/')]
    wt = a.worktree or f'/tmp/downpour-mutants-{os.getpid()}'
    if os.path.exists(wt):
        sys.exit(f'mutants.py: --worktree: {wt} exists; name a new folder')

    r = run(f'git worktree add --detach -q {wt} HEAD', top)
    if r is None or r.returncode:
        sys.exit(f'mutants.py: git worktree add {wt}: {r.stderr.strip() if r else "timed out"}')
    try:
        print(f'worktree {wt} at {run("git rev-parse --short HEAD", wt).stdout.strip()}; building', flush=True)
        tools = sorted(f'build/tests/{p[:-2]}'
                       for p in os.listdir(os.path.join(top, 'tests')) if re.fullmatch(r'tool_\w+\.c', p))
        build = f'make -j2 build/downpour {" ".join(units + tools)}'
        r = run(build, wt)
        if r is None or r.returncode:
            sys.exit(f'mutants.py: the unmutated tree does not build:\n{r.stderr[-2000:] if r else ""}')
        for t in tests:
            if not passed(run(f'BUILD=build bash tests/run.sh {t}', wt, a.timeout)):
                sys.exit(f'mutants.py: {t} fails before any mutant; fix that first')
        pool = []
        for f in files:
            pool += mutants_of(f, open(os.path.join(wt, f)).read().split('\n'))
        random.Random(a.seed).shuffle(pool)
        print(f'{len(pool)} mutants in {len(files)} files; trying {min(a.count, len(pool))} (seed {a.seed})'
              + (f', from the {a.start + 1}th' if a.start else ''), flush=True)
        counts = {'killed': 0, 'SURVIVED': 0, 'nobuild': 0}
        survivors = []
        for f, i, new, what in pool[a.start:a.count]:
            path = os.path.join(wt, f)
            orig = open(path).read()
            lines = orig.split('\n')
            old = lines[i]
            lines[i] = new
            t0 = time.time()
            try:
                open(path, 'w').write('\n'.join(lines))
                r = run(build, wt)
                if r is None or r.returncode:
                    res = 'nobuild'
                else:
                    res = 'SURVIVED'
                    for t in tests:
                        if not passed(run(f'BUILD=build bash tests/run.sh {t}', wt, a.timeout)):
                            res = 'killed'
                            break
            finally:
                open(path, 'w').write(orig)
            counts[res] += 1
            print(f'{res:9s} {f}:{i + 1} ({what}): {old.strip()}  =>  {new.strip()}  '
                  f'({time.time() - t0:.0f} s)', flush=True)
            if res == 'SURVIVED':
                survivors.append(f'{f}:{i + 1}: {old.strip()}  =>  {new.strip()}')
        built = counts['killed'] + counts['SURVIVED']
        print(f'{counts["killed"]} killed, {counts["SURVIVED"]} survived, {counts["nobuild"]} did not build'
              f' ({100 * counts["killed"] / built if built else 0:.0f} % of those built killed)')
        for s in survivors:
            print('  survived:', s)
    finally:
        if not a.keep:
            run(f'git worktree remove --force {wt}', top)
            shutil.rmtree(wt, ignore_errors=True)
            run('git worktree prune', top)


if __name__ == '__main__':
    main()
