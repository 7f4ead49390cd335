#!/usr/bin/env bash
# Session 41's last GPU call (about 200 s of device time left): test_cuda alone built, then the
# CudaExternal tests (the gate around hub_split's shared plan) and hub_split's tests.
set -u
OUT=${OUT:-/tmp/gR4}; mkdir -p $OUT; B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 170 ninja -C $B -j18 tests/cuda/test_cuda >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -5
$B/tests/cuda/test_cuda --gtest_filter='CudaExternal.*:CudaSpmm.HubSplit*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |^\[       OK|FAILED|Failure" | head -20
echo "tests at ${SECONDS}s"
