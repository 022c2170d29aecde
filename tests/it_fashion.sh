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
# there must be this run's (within 0.002: BLAS kernels differ between processors).
readme=$(sed -n 's/.*\*\*\(0\.[0-9]*\) test accuracy\*\*.*/\1/p' README.md)
check "README's accuracy figure ($readme) is this run's ($acc)" \
    python3 -c "import sys; sys.exit(0 if '$readme' and abs(float('$readme') - float('$acc')) <= 0.002 else 1)"
done_tests
