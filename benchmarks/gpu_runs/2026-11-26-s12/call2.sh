#!/usr/bin/env bash
# Issue 21: the 16-bit tests on the GPU (CUDA values16 tests, the conformance suite with its
# values16 cases, the rest of test_cuda), then sparseport_bench_values16 (f32/bf16/f16 side by side)
# on the shared matrices and the large uniform graph. Run from the root of the tree (the lead runs
# it inside a `git archive` of the commit).
set -u
export PATH=$PATH:/usr/local/cuda/bin
data=${SPARSEPORT_DATA_DIR:-$PWD/.device-data}
BUILD_TARGETS="test_cuda test_conformance test_values16_path sparseport_cli sparseport_bench_values16" TAIL=1 \
  OUT=$OUT/check bash tests/cuda/gpu_check.sh 240 configure build | tail -2
grep -E "error" $OUT/check/build.log | head -20
( cd build-gpu/tests
  timeout 100 ./cuda/test_cuda --gtest_filter='CudaValues16*' >$OUT/test16.log 2>&1
  echo "test_cuda values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" $OUT/test16.log | head -20
  timeout 120 ./test_conformance --gtest_filter='Values16*' >$OUT/conf16.log 2>&1
  echo "test_conformance values16: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -20
  timeout 60 ./test_values16_path >$OUT/path16.log 2>&1
  echo "test_values16_path: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/path16.log | head
  timeout 120 ./cuda/test_cuda --gtest_filter='-CudaValues16*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda rest: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head )
SPARSEPORT_DATA_DIR=$data timeout ${BENCH_S:-200} build-gpu/benchmarks/sparseport_bench_values16 ${BENCH16_ARGS:-} \
  --out $OUT/values16 >$OUT/bench16.log 2>&1
echo "bench_values16: rc $?"; tail -n 60 $OUT/values16.md 2>/dev/null || tail -n 30 $OUT/bench16.log
