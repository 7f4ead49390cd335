#!/usr/bin/env bash
# Session 42's first GPU call, on branch hub-shared-plan (rebased on main): the whole C++ tree built,
# the CudaExternal tests (the gate around hub_split's shared plan) and hub_split's tests, then the
# whole suite the way users run it.
set -u
OUT=${OUT:-/tmp/gS1}; mkdir -p $OUT; B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 170 ninja -C $B -j18 tests/cuda/test_cuda >>$OUT/build.log 2>&1; echo "test_cuda build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
timeout 60 $B/tests/cuda/test_cuda --gtest_filter='CudaExternal.*:CudaSpmm.HubSplit*' >$OUT/focus.log 2>&1
echo "focus rc $? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" $OUT/focus.log | head -20
timeout $((560 - SECONDS > 0 ? 560 - SECONDS : 1)) ninja -C $B -j18 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
(cd $B && timeout $((585 - SECONDS)) ctest -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT|Total Test" $OUT/ctest.log | head -20
