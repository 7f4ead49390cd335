#!/usr/bin/env bash
# Session 25, call C (what the budget left allows): the DEGREES summary on a GPU. Build only the
# cuda test program and the mini-batch tool; CudaSummary.*, then the mini-batch with its control.
set -u
B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_ENABLE_OPENMP=OFF -DSPARSEPORT_ENABLE_GRAPHBLAS=OFF -DSPARSEPORT_ENABLE_MPI=OFF -DSPARSEPORT_BUILD_BENCHMARKS=OFF -DSPARSEPORT_BUILD_CLI=OFF >$OUT/build.log 2>&1
timeout 170 ninja -C $B -j16 test_cuda minibatch_decisions >>$OUT/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "error:|FAILED" $OUT/build.log | head -5
timeout 40 $B/tests/cuda/test_cuda --gtest_filter='CudaSummary*' >$OUT/summary.log 2>&1; echo "CudaSummary rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/summary.log | head
MB=$B/tests/scheduler/minibatch_decisions
timeout 30 $MB --backend cuda --batches 300 >$OUT/mb-auto.log 2>&1; echo "mb auto rc $?"; grep -E "op time|decide time|overhead|source class|source timed" $OUT/mb-auto.log
timeout 25 $MB --backend cuda --batches 300 --variant spmm.row_warp_vec4 >$OUT/mb-ctl.log 2>&1; echo "mb ctl rc $?"; grep -E "op time|overhead" $OUT/mb-ctl.log
echo "done at ${SECONDS}s"
