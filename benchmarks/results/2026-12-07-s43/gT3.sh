#!/usr/bin/env bash
# Session 43's review call: test_cuda built first, compute-sanitizer memcheck and racecheck on
# hub_split (its shared plan, 0ca9516, never sanitised) and the CudaExternal gate, then the whole
# tree and the suite the way users run it (ctest -j8, one process per test).
set -u
OUT=${OUT:-/tmp/gT3}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-585}
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 200 ninja -C $B -j18 tests/cuda/test_cuda >>$OUT/build.log 2>&1; echo "test_cuda build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.HubSplit*:CudaExternal.*' >$OUT/memcheck.log 2>&1
echo "memcheck rc $? at ${SECONDS}s"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) |tests ran" $OUT/memcheck.log | head
timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.HubSplit*' >$OUT/racecheck.log 2>&1
echo "racecheck rc $? at ${SECONDS}s"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED) " $OUT/racecheck.log | head
timeout $((LIMIT - 260 - SECONDS > 30 ? LIMIT - 260 - SECONDS : 30)) ninja -C $B -j18 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
(cd $B && timeout $((LIMIT - SECONDS)) ctest -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT|Total Test" $OUT/ctest.log | head -20
