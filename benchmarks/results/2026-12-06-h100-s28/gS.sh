#!/usr/bin/env bash
# Session 28, call 1: main 7e5dafd (95a3e48 block_fraction, ffe54f8 count_parallel blocks, c573062 the 5 ms cold budget,
# 5e785bc preload prefix), which have not run on a GPU. Build; cache hits in new processes; 1000
# sampled subgraphs with the control; the whole suite under ctest -j8; memcheck on the summary tests
# while time is left.
set -u
OUT=${OUT:-/tmp/gS}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 230 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -20
HC=$B/tests/scheduler/cache_hit_cost
for run in "spmm er:1000:0.01" "spmm rmat:18:16" "sddmm er:1000:0.01"; do
  set -- $run
  timeout 60 $HC --backend cuda --op $1 --processes 6 --fill 200 $2 >$OUT/hit-$1-$2.log 2>&1; tail -n 3 $OUT/hit-$1-$2.log
done
echo "at ${SECONDS}s"
MB=$B/tests/scheduler/minibatch_decisions
for arm in auto ctl; do
  v=""; [ $arm = ctl ] && v="--variant spmm.row_warp_vec4"
  timeout 90 $MB --backend cuda --batches 1000 $v >$OUT/mb1000-$arm.log 2>&1; echo "mb1000 $arm rc $?"
  grep -E "op time|decide time|overhead|source|cold" $OUT/mb1000-$arm.log
done
echo "at ${SECONDS}s"
timeout 280 ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception|Total Test time" $OUT/ctest.log | head -20
if [ $SECONDS -lt 500 ]; then
  SAN_FILTER='CudaSummary*:CudaValidation*' SAN_SHARDS=8 SAN_TIMEOUT=60 OUT=$OUT/san bash tests/cuda/gpu_check.sh 70 memcheck 2>&1 | grep -E "memcheck:" | tail -2
fi
echo "done at ${SECONDS}s"
