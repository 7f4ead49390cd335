#!/usr/bin/env bash
# Issue 21 after the review: the whole CUDA test program and the 16-bit conformance cases, CTest's
# Cuda|Conformance set, compute-sanitizer memcheck on the 16-bit CUDA tests, and a short 16-bit
# benchmark of the large uniform graph and rmat:20:16 (bench_values16 after its helpers moved into
# cuda_timing.hpp). Run from the root of the tree (the lead runs it in a `git archive` of HEAD).
set -u
export PATH=$PATH:/usr/local/cuda/bin
data=${SPARSEPORT_DATA_DIR:-$PWD/.device-data}
BUILD_TARGETS="test_cuda test_conformance test_values16_path sparseport_bench_values16" TAIL=1 \
  OUT=$OUT/check bash tests/cuda/gpu_check.sh 230 configure build | tail -1
( cd build-gpu/tests
  timeout 150 ./cuda/test_cuda >$OUT/test_cuda.log 2>&1
  echo "test_cuda (all): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head -6
  timeout 150 ./test_conformance --gtest_filter='*Values16*' >$OUT/conf16.log 2>&1
  echo "test_conformance *Values16*: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -6
  timeout 60 ./test_values16_path >$OUT/path16.log 2>&1
  echo "test_values16_path: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/path16.log | head -4
  SPARSEPORT_TEST_SCALE=0.1 timeout 120 compute-sanitizer --tool memcheck --print-limit 5 ./cuda/test_cuda \
    --gtest_filter='CudaValues16*' >$OUT/memcheck16.log 2>&1
  echo "memcheck CudaValues16: rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " $OUT/memcheck16.log | head -3 )
SPARSEPORT_DATA_DIR=$data timeout 100 build-gpu/benchmarks/sparseport_bench_values16 --F 64,128 --min-calls 10 \
  --min-ms 5 --graphs '^(er:200000|rmat:20)' --variants '^auto$' --out $OUT/values16 >$OUT/bench16.log 2>&1
echo "bench_values16: rc $?"; grep -E "^\| (er:200000|rmat:20)" $OUT/values16.md | head -14
