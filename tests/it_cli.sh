#!/usr/bin/env bash
# it_cli.sh — the command line's contract, command by command: `--help` prints the
# command's usage on stdout and exits 0; a usage error (an unknown flag, a flag at the
# end without its value, a stray argument, an unknown subcommand) exits 2 with exactly
# one line on stderr, naming the command and what was wrong, and nothing on stdout.
# No command here trains or listens: each stops at its arguments (but for render's
# --size, drawn from a 3-step simulated trace at the bounds of its range).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# --help: usage on stdout, nothing on stderr, exit 0
for cmd in cluster local task hub trace checkpoint view render sim run compare keys lessons fork serve completion; do
    "$DOWNPOUR" $cmd --help >"$TMP/out" 2>"$TMP/err"
    rc=$?
    check "$cmd --help: exit 0, its usage on stdout, stderr empty (rc $rc)" \
        bash -c "[ $rc -eq 0 ] && grep -q '^usage: downpour $cmd' '$TMP/out' && [ ! -s '$TMP/err' ]"
done

# usage_error WANT ARGS...: exit 2, stdout empty, one line on stderr that holds WANT
usage_error() {
    local want=$1; shift
    "$DOWNPOUR" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$? lines
    lines=$(wc -l <"$TMP/err")
    check "downpour $*: exit 2 and one line naming it (rc $rc, $lines lines: $(head -c 200 "$TMP/err"))" \
        bash -c "[ $rc -eq 2 ] && [ $lines -eq 1 ] && [ ! -s '$TMP/out' ] && grep -qF -- \"\$1\" '$TMP/err'" _ "$want"
}
# a flag at the end of the line, without its value (each parser's own check)
usage_error 'downpour: hub: --listen needs a value' hub --listen
usage_error 'downpour: view: --speed needs a value' view --speed
usage_error 'downpour: render: --out needs a value' render --out
usage_error 'downpour: serve: --listen needs a value' serve --listen
usage_error 'downpour: run: --set needs a value' run --set
usage_error 'downpour: sim: --steps: missing value' sim --steps
usage_error 'downpour: cluster: --steps: missing value' cluster --steps
usage_error 'downpour: local: --steps: missing value' local --steps
usage_error 'downpour: trace export: --chrome needs a file' trace export --chrome
# unknown flags and stray arguments
# one wording for every command: a flag is unknown, anything else unexpected
for cmd in cluster local task hub view render serve run compare keys lessons fork sim; do
    usage_error "downpour: $cmd: unknown flag \"--bogus\" (see --help)" $cmd --bogus
done
usage_error 'downpour: hub: unexpected argument "extra" (see --help)' hub extra
usage_error 'downpour: keys: unexpected argument "extra" (see --help)' keys extra
usage_error 'downpour: keys: unexpected argument "extra" (see --help)' keys --json extra
usage_error 'downpour: lessons: unexpected argument "extra" (see --help)' lessons extra
usage_error 'downpour: trace info: unknown flag "--bogus" (see --help)' trace info --bogus x.dptrace
# the nearest flag of the key table: --seeps is 1 edit from --steps, 2 from --seed
usage_error 'downpour: cluster: unknown flag "--seeps" (did you mean "--steps"? see --help)' cluster --seeps 5
usage_error 'downpour: trace stats: missing TRACE' trace stats
usage_error 'downpour: trace stats: unknown flag "--jsn" (did you mean "--json"? see --help)' trace stats --jsn x
usage_error 'downpour: trace info: unexpected argument "b.dptrace" (see --help)' trace info a.dptrace b.dptrace
usage_error 'downpour: trace captions: unexpected argument "b.dptrace" (see --help)' trace captions a.dptrace b.dptrace
usage_error 'downpour: trace validate: unknown flag "--bogus" (see --help)' trace validate --bogus
usage_error 'downpour: trace export: unexpected argument "b" (see --help)' trace export --chrome o.json a b
# a flag one or two edits from one the command's --help names is suggested (a letter
# lost, added, changed, or two swapped), by every parser
suggest() {
    usage_error "unknown flag \"$2\" (did you mean \"$3\"? see --help)" $1 "$2"
}
suggest view --sped --speed
suggest view --compaer --compare
suggest render --frame --frames
suggest serve --folow --follow
suggest hub --listn --listen
suggest run --chek --check
suggest compare --ste=steps=3 --set
suggest fork --at-stp --at-step
suggest lessons --dri --dir
suggest keys --jsno --json
suggest cluster --wokrers --workers
suggest sim --stpes --steps
usage_error 'downpour: trace info: unknown flag "--jsn" (did you mean "--json"? see --help)' trace info --jsn x
usage_error 'downpour: trace export: unknown flag "--chrom" (did you mean "--chrome"? see --help)' trace export --chrom x
# compare has no --quiz (run's): nothing of compare's is near it
usage_error 'downpour: compare: unknown flag "--quiz" (see --help)' compare --quiz
usage_error 'downpour: trace validate: missing TRACE' trace validate
usage_error 'downpour: trace export: missing --chrome OUT.json' trace export x.dptrace
# unknown subcommands, and a subcommand's wrong arguments
usage_error "downpour: trace: unknown command 'bogus' (see downpour trace --help)" trace bogus
usage_error "downpour: checkpoint: unknown command 'bogus' (see downpour checkpoint --help)" checkpoint bogus x
usage_error 'downpour: checkpoint info: expected one DIR|FILE' checkpoint info
usage_error 'downpour: checkpoint diff: expected A B [--tol X]' checkpoint diff a
usage_error 'downpour: checkpoint diff: --tol "-1" must be a number >= 0' checkpoint diff a b --tol -1
usage_error 'downpour: checkpoint diff: --tol "nan" must be a number >= 0' checkpoint diff --tol=nan a b
usage_error 'downpour: checkpoint diff: expected A B [--tol X]' checkpoint diff --tol 1 a
usage_error 'downpour: checkpoint diff: unexpected argument "c" (see --help)' checkpoint diff a b c
usage_error 'downpour: checkpoint info: unexpected argument "b" (see --help)' checkpoint info a b
usage_error 'downpour: checkpoint info: unknown flag "--tol" (see --help)' checkpoint info a --tol 1
usage_error 'downpour: unknown command "bogus" (see downpour --help)' bogus
usage_error 'downpour: render: need TRACE and exactly one of --out FILE, --frames DIR or --sheet FILE' render
usage_error 'downpour: serve: need a TRACE' serve

# training data that is not there: refused before any task starts, the file named
mkdir -p "$TMP/half"
: >"$TMP/half/train-images-idx3-ubyte.gz"; : >"$TMP/half/train-labels-idx1-ubyte"
usage_error "downpour: cluster: --data $TMP/half: $TMP/half/t10k-images-idx3-ubyte.gz: No such file or directory" \
    cluster --data "$TMP/half"
printf '[scenario]\ntitle = d\nengine = real\n[training]\ndata = %s\n' "$TMP/half" >"$TMP/data.ini"
"$DOWNPOUR" run --check "$TMP/data.ini" >/dev/null 2>"$TMP/data.err"
check "run --check: a scenario's data that is not there is an error naming it (rc $?)" \
    grep -qF -- "--data $TMP/half: $TMP/half/t10k-images-idx3-ubyte.gz: No such file or directory" "$TMP/data.err"
# run --check validates the files after it, and only files
usage_error 'downpour: run: --check comes first and takes only files ("a.ini" is before it; see --help)' run a.ini --check b.ini
usage_error 'downpour: run --check: unknown flag "--bogus" (see --help)' run --check --bogus
usage_error 'downpour: run --check: unknown flag "--sett" (did you mean "--set"? see --help)' run --check a.ini --sett x=1
# an address that cannot be one: the flag named, before anything listens or connects
usage_error "downpour: hub: --listen: bad address 'bogus' (want host:port)" hub --listen bogus
usage_error "downpour: hub: --http: bad address '127.0.0.1:99999': port '99999' is not 1..65535" hub --http 127.0.0.1:99999
usage_error "downpour: serve: --listen: bad address 'bogus' (want host:port)" serve x.dptrace --listen bogus
usage_error "downpour: view: --serve: bad address ':x': port 'x' is not 1..65535" view x.dptrace --serve :x
usage_error "downpour: view: --connect: bad address '127.0.0.1:0': port '0' is not 1..65535" view --connect 127.0.0.1:0
# a secret file that cannot be read, or is too short: refused before anything starts
printf 'abc\n' >"$TMP/short.secret"
chmod 600 "$TMP/short.secret"
for cmd in serve hub view; do
    usage_error "downpour: $cmd: --secret-file $TMP/none.secret: No such file or directory" \
        $cmd --secret-file "$TMP/none.secret" x.dptrace
done
usage_error "downpour: serve: --secret-file $TMP/short.secret: the secret is too short (3 bytes)" \
    serve --secret-file "$TMP/short.secret" x.dptrace

# flags that each parse but do not go together: refused by the task before it connects
TWO='{"cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2","127.0.0.1:3"]},"task":{"type":"worker","index":0}}'
TF_CONFIG=$TWO usage_error 'downpour: task: --backup-workers: 2 leaves no replica to aggregate with 2 workers' \
    task --backup-workers 2
TF_CONFIG=$TWO usage_error 'downpour: task: --prefetch: only with --mode async' task --mode sync --prefetch
TF_CONFIG=$TWO usage_error 'downpour: task: --print-cluster: "maybe" is not true or false' task --print-cluster=maybe
TF_CONFIG=$TWO "$DOWNPOUR" task --print-cluster=true >"$TMP/pc.out" 2>"$TMP/pc.err"
check "task --print-cluster=true: as bare, the cluster in TF_CONFIG form (rc $?)" \
    bash -c "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"task\"] != {\"type\": \"worker\", \"index\": 0})' '$TMP/pc.out'"
# periodic saves with nowhere to save them (TensorFlow says nothing and saves nothing)
TF_CONFIG=$TWO usage_error 'downpour: task: --save-checkpoint-steps 10: saves only with --checkpoint-dir DIR' \
    task --save-checkpoint-steps 10
usage_error 'downpour: cluster: --save-checkpoint-secs 5: saves only with --checkpoint-dir DIR' \
    cluster --save-checkpoint-secs 5
usage_error 'downpour: local: --save-checkpoint-steps 2: saves only with --checkpoint-dir DIR' \
    local --save-checkpoint-steps 2
# ... which a scenario's variants get of their own, for the seconds' rule as for the steps'
printf '[scenario]\ntitle = t\nengine = real\n[faults]\nsave_checkpoint_secs = 5\nsave_checkpoint_steps = 9\n' \
    >"$TMP/saves.ini"
check "save_checkpoint_secs and _steps are [faults] keys of a scenario" \
    bash -c "'$DOWNPOUR' run --check '$TMP/saves.ini' | grep -q '^ok'"

# a secret from the environment that is too short: refused before any task starts (each
# task refused it on its own before, one line apiece)
DOWNPOUR_SECRET=abc usage_error 'downpour: cluster: $DOWNPOUR_SECRET: the secret is too short (3 bytes)' \
    cluster --data synthetic --steps 10
DOWNPOUR_HUB_SECRET=abc usage_error 'downpour: cluster: $DOWNPOUR_HUB_SECRET: the secret is too short (3 bytes)' \
    cluster --data synthetic --steps 10
TF_CONFIG=$TWO DOWNPOUR_SECRET=abc usage_error 'downpour: task: $DOWNPOUR_SECRET: the secret is too short' task
# ... and by the hub, a live viewer and the web player, before they listen or connect
# (exit 1 on the way before)
DOWNPOUR_SECRET=abc usage_error 'downpour: hub: $DOWNPOUR_SECRET: the secret is too short (3 bytes)' \
    hub --listen 127.0.0.1:0
DOWNPOUR_HUB_SECRET=abc usage_error 'downpour: hub: $DOWNPOUR_HUB_SECRET: the secret is too short (3 bytes)' \
    hub --listen 127.0.0.1:0
DOWNPOUR_SECRET=abc usage_error 'downpour: view: $DOWNPOUR_SECRET: the secret is too short (3 bytes)' \
    view --connect 127.0.0.1:1
DOWNPOUR_SECRET=abc usage_error 'downpour: serve: $DOWNPOUR_SECRET: the secret is too short (3 bytes)' \
    serve x.dptrace --listen 127.0.0.1:0

# a value out of its range: render --size takes 64..16384 each way, both ends included
"$DOWNPOUR" sim --workers 2 --steps 3 --trace "$TMP/tiny.dptrace" --quiet >/dev/null 2>&1
for size in 63x64 64x63 16385x64 64x16385 64x64x 64; do
    usage_error "downpour: render: --size \"$size\" is not WxH (64..16384 each)" render "$TMP/tiny.dptrace" \
        --out "$TMP/tiny.png" --size $size
done
for size in 64x64 16384x64 64x16384; do
    "$DOWNPOUR" render "$TMP/tiny.dptrace" --out "$TMP/tiny.png" --size $size >/dev/null 2>"$TMP/err"
    rc=$?
    got=$(python3 -c "import struct, sys; d = open(sys.argv[1], 'rb').read(24); print('%dx%d' % struct.unpack('>II', d[16:24]))" "$TMP/tiny.png" 2>/dev/null)
    check "render --size $size: drawn at that size (rc $rc, $got)" bash -c "[ $rc -eq 0 ] && [ '$got' = $size ]"
    rm -f "$TMP/tiny.png"
done

# serve --size: 64..8192 each way
for size in 63x64 64x63 8193x64 64x8193 64x; do
    usage_error "downpour: serve: --size \"$size\" is not WxH (64..8192 each)" serve x.dptrace --size $size
done

# view --size: 200..16384 wide, 150..16384 high, as its message says
for size in 199x150 200x149 16385x200 200x16385 x; do
    usage_error "downpour: view: --size \"$size\" is not WxH (W 200..16384, H 150..16384)" view x.dptrace --size $size
done

# view --serve-size: a page's frames, 64..8192 each, and only beside --serve
usage_error "downpour: view: --serve-size \"63x64\" is not WxH (64..8192 each)" view x.dptrace --serve 127.0.0.1:0 --serve-size 63x64
usage_error "downpour: view: --serve-size needs --serve ADDR" view x.dptrace --serve-size 640x360

# accepted_to_trace WHAT ARGS...: the flags are taken (each at an end of its range), and the
# command goes on to open its trace, which is not there: exit 1 naming it, not 2 for a flag
accepted_to_trace() {
    local cmd=$1; shift
    "$DOWNPOUR" $cmd "$TMP/none.dptrace" "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    check "$cmd $*: taken, the trace is what is missing (rc $rc: $(head -c 120 "$TMP/err"))" \
        bash -c "[ $rc -eq 1 ] && grep -qF 'downpour: $cmd: $TMP/none.dptrace: No such file or directory' '$TMP/err'"
}
# view says a missing trace first, before it needs a display
env -u DISPLAY "$DOWNPOUR" view "$TMP/none.dptrace" >/dev/null 2>"$TMP/err"
rc=$?
check "view of a missing trace: exit 1, one line naming it, no display needed (rc $rc: $(head -c 120 "$TMP/err"))" \
    bash -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TMP/err') -eq 1 ] && grep -qxF 'downpour: view: $TMP/none.dptrace: No such file or directory' '$TMP/err'"
accepted_to_trace serve --at 0 --speed 0.01 --fps 0.1 --max-conns 1 --idle-timeout 1 --max-behind 1
accepted_to_trace serve --at 1e9 --speed 100 --fps 120 --max-conns 10000 --idle-timeout 3600 --max-behind 100000 \
    --size 8192x8192
accepted_to_trace render --out "$TMP/x.png" --at 1e9
accepted_to_trace render --frames "$TMP/frames" --from 0 --to 1e9
# one wording for a number out of its range, in every hand-parsed command (cli_int, cli_num)
usage_error 'downpour: serve: --speed "100.5" must be a number in 0.01..100' serve x.dptrace --speed 100.5
usage_error 'downpour: serve: --fps "0.09" must be a number in 0.1..120' serve x.dptrace --fps 0.09
usage_error 'downpour: serve: --at "1.1e9" must be a number in 0..1e+09' serve x.dptrace --at 1.1e9
usage_error 'downpour: serve: --max-conns "10001" must be an integer in 1..10000' serve x.dptrace --max-conns 10001
usage_error 'downpour: serve: --idle-timeout "1.5" must be an integer in 1..3600' serve x.dptrace --idle-timeout 1.5
usage_error 'downpour: render: --at "1.1e9" must be a number in 0..1e+09' render x.dptrace --out x.png --at 1.1e9
usage_error 'downpour: render: --to "-1" must be a number in 0..1e+09' render x.dptrace --frames d --to -1
usage_error 'downpour: render: --fps "0" must be a number in 0.001..100000' render x.dptrace --frames d --fps 0
usage_error 'downpour: render: --at-step "-1" must be an integer >= 0' render x.dptrace --out x.png --at-step -1
usage_error 'downpour: render: --workers "60001" must be an integer in 1..60000' render --write-synthetic "$TMP/synthetic.dptrace" --workers 60001
usage_error 'downpour: view: --speed "0" must be a number in 0.01..100' view x.dptrace --speed 0
usage_error 'downpour: view: --at "nan" must be a number in 0..1e+09' view x.dptrace --at nan
# (a bad --listen after: a parser that took the value ends at once, not as a hub)
usage_error 'downpour: hub: --reorder-ms "86400001" must be an integer in 0..86400000' hub --reorder-ms 86400001 --listen x
usage_error 'downpour: hub: --exit-when-idle "-1" must be an integer in 0..86400000' hub --exit-when-idle -1 --listen x
usage_error 'downpour: fork: --at-step "0" must be an integer >= 1' fork x.dptrace --at-step 0
usage_error 'downpour: fork: --at-step "9223372036854775808" must be an integer >= 1' fork x.dptrace --at-step 9223372036854775808

# commands whose arguments are all optional, given none
"$DOWNPOUR" keys >"$TMP/table" 2>"$TMP/err"
rc=$?
check "keys alone: the key table (rc $rc, $(wc -l <"$TMP/table") lines)" \
    bash -c "[ $rc -eq 0 ] && head -1 '$TMP/table' | grep -q '^key  *section  *default' && grep -q '^staleness ' '$TMP/table' && [ ! -s '$TMP/err' ]"
"$DOWNPOUR" keys --json >"$TMP/out" 2>"$TMP/err"
check "keys --json: the table's keys as JSON, one entry each" python3 -c "
import json, sys
names = [k['name'] for k in json.load(open(sys.argv[1]))]
table = [l.split()[0] for l in open(sys.argv[2]).read().splitlines()[1:] if l.strip()]
assert names == table, (names, table)" "$TMP/out" "$TMP/table"

# with no command at all: the usage, on stderr, exit 2
"$DOWNPOUR" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "downpour alone: exit 2, the usage on stderr (rc $rc)" \
    bash -c "[ $rc -eq 2 ] && grep -q '^usage: downpour <command>' '$TMP/err' && [ ! -s '$TMP/out' ]"
# the lesson library from another folder: the one beside the binary, by absolute paths
here=$(cd "$(dirname "$DOWNPOUR")/.." && pwd)
(cd "$TMP" && "$DOWNPOUR" lessons) >"$TMP/les.out" 2>"$TMP/les.err"
rc=$?
check "lessons from another folder: the checkout's library beside the binary (rc $rc, $(wc -l <"$TMP/les.out") lines)" \
    bash -c "[ $rc -eq 0 ] && grep -qF 'downpour run $here/scenarios/lessons/01-one-device.ini' '$TMP/les.out'"
cp "$DOWNPOUR" "$TMP/lonely"
(cd "$TMP" && ./lonely lessons) >/dev/null 2>"$TMP/les.err"
rc=$?
check "... and without one, one line saying where to run it (rc $rc: $(cat "$TMP/les.err"))" \
    bash -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TMP/les.err') -eq 1 ] && grep -q 'give --dir DIR or \$DOWNPOUR_LESSONS' '$TMP/les.err'"
# --version: the commit the binary was built from (one git knows, when this is a
# checkout), its BLAS, and CUDA in or out as the Makefile decided (build/cuda.conf)
"$DOWNPOUR" --version >"$TMP/ver" 2>"$TMP/err"
rc=$?
rev=$(sed -n '1s/^downpour (git \([0-9a-f]\{7,\}\)\(-dirty\)\{0,1\})$/\1/p' "$TMP/ver")
if git rev-parse --git-dir >/dev/null 2>&1; then
    check "downpour --version: exit 0, names a commit of this checkout ($(head -1 "$TMP/ver"))" \
        bash -c "[ $rc -eq 0 ] && [ ! -s '$TMP/err' ] && [ -n '$rev' ] && git cat-file -e '$rev^{commit}'"
else
    check "downpour --version: exit 0, no checkout to name ($(head -1 "$TMP/ver"))" \
        bash -c "[ $rc -eq 0 ] && grep -qx 'downpour (git unknown)' '$TMP/ver'"
fi
if grep -q '^CUDA=1' "$BUILD/cuda.conf"; then want_cuda='CUDA: built'; else want_cuda='CUDA: not built'; fi
check "... names its BLAS and says \"$want_cuda\" ($(sed -n 2,3p "$TMP/ver" | tr '\n' ' '))" \
    bash -c "grep -q '^BLAS: OpenBLAS .*, core [A-Za-z0-9]' '$TMP/ver' && grep -q '^$want_cuda' '$TMP/ver'"
check "... and the top-level help says so" bash -c "'$DOWNPOUR' --help | grep -qF 'downpour --version'"
# completion bash: the script, sourced, completes what a TAB would, read from this binary
"$DOWNPOUR" completion bash >"$TMP/comp.bash" 2>"$TMP/err"
check "completion bash: exit 0, a script that bash reads and that registers downpour" \
    bash -c ". '$TMP/comp.bash' && complete -p downpour | grep -q '_downpour'"
# comp WORDS...: what TAB offers after "downpour WORDS" (the last word the one completed;
# bash splits "--set mode=a" into --set, mode, =, a)
comp() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _downpour; echo "${COMPREPLY[*]}"' \
        _ "$TMP/comp.bash" "$DOWNPOUR" "$@"
}
comp_is() {
    local want=$1; shift
    local got; got=$(comp "$@")
    check "completion of \"downpour $*\": \"$want\" (got \"$got\")" test "$got" = "$want"
}
comp_is cluster cl
comp_is "cluster local task hub trace checkpoint view render sim run compare keys lessons fork serve completion --help --version" ""
comp_is --speed view --sp
comp_is "captions export info stats validate" trace ""
comp_is "diff info" checkpoint ""
comp_is --json trace info --j
comp_is "sync async ssp" cluster --mode ""
comp_is async run x.ini --set mode = a
comp_is shm cluster --transport = s
comp_is "towers" local --strategy t
comp_is "workers= worker_devices= worker_bandwidth=" run x.ini --set work
comp_is "" cluster --bogus = x
"$DOWNPOUR" completion zsh >"$TMP/out" 2>"$TMP/err"
rc=$?
check "completion zsh: exit 2, one line saying bash only (rc $rc: $(cat "$TMP/err"))" \
    bash -c "[ $rc -eq 2 ] && grep -qxF 'downpour: completion: no script for shell \"zsh\" (bash only)' '$TMP/err'"
check "downpour --help names every trace command" bash -c "'$DOWNPOUR' --help | grep -q 'info | stats | validate | captions | export'"
done_tests
