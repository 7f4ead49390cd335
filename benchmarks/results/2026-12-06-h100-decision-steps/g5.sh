#!/usr/bin/env bash
# Session 27, call 5: the landed order (a977827: the device summary before the shape question),
# without switches or timestamps: the CUDA and scheduler tests under ctest -j8, 300 mini-batch class
# decisions, and a cache hit in new processes.
set -u
OUT=${OUT:-/tmp/g5}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 200 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -20
timeout 100 ctest --test-dir $B -j8 --timeout 90 -R "^Cuda|Scheduler|ExitAfterOp|CacheFault|Deterministic" \
  -E "^CudaSpmm|^SpmmConformance|^BackwardConformance" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception" $OUT/ctest.log | head -20
timeout 40 $B/tests/scheduler/minibatch_decisions --backend cuda --batches 300 >$OUT/mb300.log 2>&1; echo "mb300 rc $?"
grep -E "op time|source" $OUT/mb300.log
timeout 40 $B/tests/scheduler/cache_hit_cost --backend cuda --op spmm --processes 6 --fill 200 er:1000:0.01 2>&1 | tail -n 1
echo "done at ${SECONDS}s"
