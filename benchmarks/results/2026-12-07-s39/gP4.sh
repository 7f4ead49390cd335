#!/usr/bin/env bash
# Session 39, GPU call 4: spmm.cusparse's canonical-CSR check on the GPU (was a read-back of A to
# the host): test_cuda's CudaSpmm tests (the new CusparseTriesAlg3OnlyOnCanonicalRows among them),
# then cuda_timing's first call of spmm.cusparse and hub_split on a products-sized Chung-Lu graph.
set -u
OUT=${OUT:-/tmp/gP4}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-210}
nvidia-smi -L | tee $OUT/gpu.txt; git rev-parse HEAD >>$OUT/gpu.txt; git status --short >>$OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 170 ninja -C $B -j16 test_cuda cuda_timing >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
timeout $((LIMIT - 40 - SECONDS)) $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.*' >$OUT/test_cuda.log 2>&1
echo "test_cuda rc $? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED" $OUT/test_cuda.log | head
timeout $((LIMIT - 5 - SECONDS)) $B/tests/cuda/cuda_timing --spmm --only spmm.cusparse,spmm.hub_split --F 47 chunglu:2449029:25:2.1 \
  >$OUT/timing.txt 2>&1; echo "timing rc $? at ${SECONDS}s"; cat $OUT/timing.txt | cut -c1-250
