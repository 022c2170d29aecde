#!/usr/bin/env bash
# it_fashion.sh — the issue's accuracy bar on real Fashion-MNIST: 2 ps + 2 workers, sync,
# MLP, momentum, lr 0.05, 1500 steps of batch 64 per worker must reach >= 0.85, and the
# figure README.md quotes for this command must be what it reaches.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    skip "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
    done_tests; exit
fi
$DOWNPOUR cluster --ps 2 --workers 2 --mode sync --model mlp --optimizer momentum --lr 0.05 \
    --steps 1500 --quiet >"$TMP/f.json" 2>"$TMP/f.err"
check "Fashion-MNIST run exits 0" test $? -eq 0
acc=$(json "$TMP/f.json" test_accuracy)
check "test accuracy $acc >= 0.85" fcmp "$acc" '>=' 0.85
check "global step 1500" test "$(json "$TMP/f.json" global_step)" -eq 1500
# README quotes this run's accuracy; sync with one seed is deterministic, so the figure
# there must be this run's. BLAS kernels round their sums each their own way: the figure
# is the one README gives for the kernel this run used (`Haswell` 0.8662, ...), else the
# headline figure within 0.01 (a kernel README has no figure for: said in the check).
core=$(json "$TMP/f.json" blas_core)
para=$(sed -n '/^## What it reaches/,/^## /p' README.md | tr '\n' ' ')
headline=$(printf '%s' "$para" | sed -n 's/.*\*\*\(0\.[0-9]*\) test accuracy\*\*.*/\1/p')
mine=$(printf '%s' "$para" | grep -o "\`$core\` \`*[0-9.]*" | head -n1 | sed 's/.* //; s/`//g')
[ "$core" = SkylakeX ] && mine=$headline
if [ -n "$mine" ]; then
    check "README's accuracy figure for the $core kernel ($mine) is this run's ($acc)" \
        python3 -c "import sys; sys.exit(0 if abs(float('$mine') - float('$acc')) < 0.00005 else 1)"
else
    check "README's accuracy figure ($headline, no figure for the $core kernel) is within 0.01 of this run's ($acc)" \
        python3 -c "import sys; sys.exit(0 if '$headline' and abs(float('$headline') - float('$acc')) <= 0.01 else 1)"
fi
done_tests
