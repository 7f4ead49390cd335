#!/usr/bin/env bash
# hub_split's row order and the row engine's L2 column tiles: their tests, the determinism tests,
# the skew sweep at F = 32 and 64 (hub_split now sorted), and er:200000:2e-5 at F = 64 / 128 / 256
# with the tiles (default) and without (SPARSEPORT_L2_TILE=0), same process order each time.
# Run from the root of the tree to test (the lead runs it inside a `git archive` of the commit).
set -u
export PATH=$PATH:/usr/local/cuda/bin
data=${SPARSEPORT_DATA_DIR:-.device-data}
BUILD_TARGETS="test_cuda sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 260 configure build | tail -1
rm -rf $OUT/check
( timeout 200 build-gpu/tests/cuda/test_cuda --gtest_filter='CudaRowOrder*:CudaSpmm.*:CudaDeterminism.Spmm*:CudaPlans*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|power law" $OUT/test_cuda.log | head -12 )
cli=build-gpu/src/cli/sparseport
for f in 64 128 256; do
  for t in "" 0; do
    echo "er:200000:2e-5 F=$f SPARSEPORT_L2_TILE=${t:-default}"
    SPARSEPORT_L2_TILE=$t timeout 60 $cli run --op spmm --backend cuda --variant all --F $f --reps 30 er:200000:2e-5 2>&1 |
      grep -vE "^ *$" | tail -14
  done
done
SPARSEPORT_DATA_DIR=$data timeout 170 bash benchmarks/skew_sweep.sh $cli $OUT/skew.jsonl "32 64"
python3 benchmarks/skew_summary.py $OUT/skew.jsonl spmm.hub_split spmm.merge_path spmm.nnz_balanced | tee $OUT/skew.md | tail -36
