#!/usr/bin/env bash
# Session 10, call 1: build; new CUDA tests; conformance (attention backward with csr_softmax, spmm with
# merge_path at every F); determinism; the skew sweep.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
git log --oneline -1 2>/dev/null
BUILD_TARGETS="test_cuda test_conformance sparseport_cli" TAIL=3 OUT=$OUT/check \
  bash tests/cuda/gpu_check.sh 300 configure build
T=build-gpu/tests
( timeout 150 $T/cuda/test_cuda --gtest_filter='CudaSpmm*:CudaSoftmax*:CudaAttention*:CudaDeterminism*:CudaSpmmArg*:CudaTransposePerm*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda: rc $?"; grep -E "^\[  (PASSED|FAILED) " $OUT/test_cuda.log | head -20 )
( timeout 200 $T/test_conformance --gtest_filter='*AttentionBackward*:*Spmm*:*Spmv*:*SegmentBackward*:*Backward*' >$OUT/conf.log 2>&1
  echo "test_conformance: rc $?"; grep -E "^\[  (PASSED|FAILED) " $OUT/conf.log | head -40 )
timeout ${SWEEP_S:-150} bash benchmarks/skew_sweep.sh build-gpu/src/cli/sparseport $OUT/skew.jsonl "${SWEEP_F:-32 64 256}"
python3 benchmarks/skew_summary.py $OUT/skew.jsonl spmm.merge_path spmm.hub_split spmm.nnz_balanced spmm.row_warp_vec4 | tee $OUT/skew.md | tail -40
