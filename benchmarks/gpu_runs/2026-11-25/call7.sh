#!/usr/bin/env bash
# merge_path with the fix-up folding up to 128 pieces a row (no tail-group pass below that): its
# tests, determinism, and the skew sweep at F = 32 and 64.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_cuda sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
rm -rf $OUT/check
( timeout 150 build-gpu/tests/cuda/test_cuda --gtest_filter='CudaSpmm.MergePath*:CudaDeterminism.SpmmMergePath*:CudaDeterminism.Spmm*:CudaSpmm.SmallWidths*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head -10 )
timeout 150 bash benchmarks/skew_sweep.sh build-gpu/src/cli/sparseport $OUT/skew.jsonl "32 64"
python3 benchmarks/skew_summary.py $OUT/skew.jsonl spmm.merge_path spmm.hub_split spmm.nnz_balanced | tee $OUT/skew.md | tail -36
