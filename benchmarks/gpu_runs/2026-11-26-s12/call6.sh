#!/usr/bin/env bash
# Issue 21, last check on the GPU: the 16-bit conformance cases (every backend and variant), the CUDA
# 16-bit tests, and the float32-path tests. Run from the root of the tree (a `git archive` of HEAD).
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_cuda test_conformance test_values16_path" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 260 configure build | tail -1
( cd build-gpu/tests
  timeout 120 ./test_conformance --gtest_filter='Values16*' >$OUT/conf16.log 2>&1
  echo "test_conformance values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -8
  timeout 100 ./cuda/test_cuda --gtest_filter='CudaValues16*' >$OUT/test16.log 2>&1
  echo "test_cuda values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test16.log | head -5
  timeout 60 ./test_values16_path >$OUT/path16.log 2>&1
  echo "test_values16_path: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/path16.log | head -5 )
