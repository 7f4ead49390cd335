#!/usr/bin/env bash
# Issue 21, first look on the GPU: the native 16-bit spmm/sddmm kernels' tests, the whole CUDA test
# program (regressions in float/double), and f32/bf16/f16 side by side through `sparseport run`
# (every variant; 16-bit ones not natively 16-bit run on float32 copies), checked against double.
# Run from the root of the tree to test (the lead runs it inside a `git archive` of the commit).
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_cuda sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 300 configure build | tail -2
grep -E "error" $OUT/check/build.log | head -20
( timeout 120 build-gpu/tests/cuda/test_cuda --gtest_filter='CudaValues16*' >$OUT/test16.log 2>&1
  echo "test_cuda values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|error" $OUT/test16.log | head -30 )
( timeout 150 build-gpu/tests/cuda/test_cuda --gtest_filter='-CudaValues16*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda rest: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head -12 )
cli=build-gpu/src/cli/sparseport
for g in er:200000:2e-5 rmat:18:16; do
  for f in 64 128; do
    for t in f32 bf16 f16; do
      echo "== $g F=$f $t"
      timeout 40 $cli run --op spmm --backend cuda --variant all --dtype $t --F $f --reps 30 $g 2>&1 | grep -vE "^ *$" | tail -12
    done
  done
done
for op in sddmm csr_attention segment_reduce; do
  for t in f32 bf16; do
    echo "== $op er:200000:2e-5 F=64 $t"
    timeout 40 $cli run --op $op --backend cuda --dtype $t --F 64 --reps 30 er:200000:2e-5 2>&1 | grep -vE "^ *$" | tail -3
  done
done
