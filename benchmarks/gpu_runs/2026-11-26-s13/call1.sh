#!/usr/bin/env bash
# Issue 21, session 13 (the only GPU call: about 330 s of device time were left): the packed 16-bit
# sddmm rows (sddmm.cuh, sddmm_nnz_balanced.cu) and hub_split's F <= 32 teams for 16-bit values.
# Build; the CUDA 16-bit, sddmm and small-matrix spmm tests; compute-sanitizer memcheck on the
# 16-bit spmm and sddmm tests; the 16-bit conformance cases of spmm and sddmm; and the scheduler's
# choice (`auto`) of spmm and sddmm in f32 / bf16 / f16 at F = 32, 64, 128 on the shared matrices,
# er:200000:2e-5 and rmat:20:16 (megarow and the large uniform input left out: cuSPARSE's own
# 16-bit SpMM, the vendor row, faulted on 32M-entry inputs in session 12).
# Run from the repository root with .device-data carried.
set -u
export PATH=$PATH:/usr/local/cuda/bin
data=${SPARSEPORT_DATA_DIR:-$PWD/.device-data}
BUILD_TARGETS="test_cuda test_conformance sparseport_bench_values16" TAIL=1 \
  OUT=$OUT/check bash tests/cuda/gpu_check.sh 260 configure build | tail -1
grep -E " error" $OUT/check/build.log | head -5
( cd build-gpu/tests
  timeout 90 ./cuda/test_cuda --gtest_filter='CudaValues16*:CudaSddmm*:CudaSpmm.SmallMatrices*:CudaSpmm.HubSplit*' \
    >$OUT/test_cuda.log 2>&1
  echo "test_cuda (16-bit, sddmm, small spmm): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head -8
  SPARSEPORT_TEST_SCALE=0.1 timeout 80 compute-sanitizer --tool memcheck --print-limit 5 ./cuda/test_cuda \
    --gtest_filter='CudaValues16.Spmm*:CudaValues16.Sddmm*' >$OUT/memcheck16.log 2>&1
  echo "memcheck 16-bit spmm/sddmm: rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " $OUT/memcheck16.log | head -3
  timeout 100 ./test_conformance --gtest_filter='*Values16*Spmm*:*Values16*Sddmm*' >$OUT/conf16.log 2>&1
  echo "conformance 16-bit spmm/sddmm: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -6 )
SPARSEPORT_DATA_DIR=$data timeout 150 build-gpu/benchmarks/sparseport_bench_values16 --F 32,64,128 --ops spmm,sddmm \
  --variants '^auto$' --min-calls 10 --min-ms 3 --deadline 130 --uniform none --graphs '^(?!megarow|band)' \
  --out $OUT/values16 >$OUT/bench16.log 2>&1
echo "bench_values16: rc $?"; sed -n '/## Summary/,/## spmm per input/p' $OUT/values16.md | head -16
