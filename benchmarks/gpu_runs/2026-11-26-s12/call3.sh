#!/usr/bin/env bash
# Issue 21: the device fault of call 2 (megarow:2000000:16:0.05, bf16, F = 256): every spmm variant
# in a process of its own at full size, then compute-sanitizer memcheck on the CUDA 16-bit tests and
# on the variants at a smaller megarow; the conformance 16-bit cases again (cuSPARSE's own 16-bit
# path now only on request). Run from the root of the tree (the lead runs it in a `git archive`).
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_cuda test_conformance sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
cli=build-gpu/src/cli/sparseport
for v in row_warp_vec4 row_warp hub_split merge_path nnz_balanced; do
  for f in 256 64; do
    timeout 40 $cli run --op spmm --backend cuda --variant spmm.$v --dtype bf16 --F $f --reps 5 megarow:2000000:16:0.05 2>&1 |
      grep -E "^spmm|error|FAILED" | sed "s/^/F=$f /" | head -3
  done
done
for v in hub_split merge_path row_warp_vec4; do
  timeout 100 compute-sanitizer --tool memcheck --print-limit 5 $cli run --op spmm --backend cuda --variant spmm.$v \
    --dtype bf16 --F 256 --reps 1 megarow:100000:16:0.05 >$OUT/san_$v.log 2>&1
  echo "memcheck $v: rc $?"; grep -E "ERROR SUMMARY|Invalid|at .*in " $OUT/san_$v.log | head -6
done
( cd build-gpu/tests
  SPARSEPORT_TEST_SCALE=0.1 timeout 150 compute-sanitizer --tool memcheck --print-limit 5 ./cuda/test_cuda \
    --gtest_filter='CudaValues16*' >$OUT/san_test16.log 2>&1
  echo "memcheck CudaValues16: rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/san_test16.log | head -5
  timeout 100 ./test_conformance --gtest_filter='Values16*' >$OUT/conf16.log 2>&1
  echo "test_conformance values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -8 )
