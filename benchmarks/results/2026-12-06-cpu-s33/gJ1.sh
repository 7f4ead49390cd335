#!/usr/bin/env bash
# Session 33's last device seconds: the cuda plugin alone (no Kokkos), test_cuda only, then its tests
# under ctest -j8 (CudaRowOrder first: the row order's header moved to kernels/row_order.hpp).
set -u
OUT=${OUT:-/tmp/gJ1}; mkdir -p $OUT
B=build-gpu; LIMIT=${LIMIT:-150}
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF >$OUT/build.log 2>&1
timeout $((LIMIT - 25 - SECONDS)) ninja -C $B -j16 test_cuda >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; tail -n 2 $OUT/build.log
timeout $((LIMIT - 5 - SECONDS)) ctest --test-dir $B -j8 -R "CudaRowOrder|^Cuda" --timeout 60 >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|CudaRowOrder" $OUT/ctest.log | head
