# lib.sh — shared helpers for the integration scripts (tests/it_*.sh): check counting
# with the same closing line as the C tests, JSON field extraction, a scratch dir.
PASS=0; FAIL=0
DOWNPOUR=${DOWNPOUR:-$PWD/build/downpour}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/downpour-it.XXXXXX")
trap 'rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT

ok()   { PASS=$((PASS + 1)); echo "ok   $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check() { # check "description" command...
    local what=$1; shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
# json FILE KEY: prints the value of KEY in the last JSON line of FILE.
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
line = [l for l in open(sys.argv[1]) if l.startswith('{')][-1]
v = json.loads(line).get(sys.argv[2])
print('null' if v is None else v)
PY
}
# fcmp A OP B: float comparison, e.g. fcmp 0.93 '>' 0.9
fcmp() { python3 -c "import sys; sys.exit(0 if float('$1') $2 float('$3') else 1)"; }
done_tests() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }
