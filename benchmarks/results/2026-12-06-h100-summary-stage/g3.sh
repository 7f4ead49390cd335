#!/usr/bin/env bash
# Session 26, call 3: main 7881644 (the DEGREES class summary, stream blocks first, the direct
# write) on issue 35's own measures: a cache hit in a new process on device operands
# (cache_hit_cost, as the 2026-12-06 H200 run of section 2), and 1000 sampled subgraphs with the
# control (minibatch_decisions, the workload).
set -u
OUT=${OUT:-/tmp/g3}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L; echo "commit $(git rev-parse --short HEAD 2>/dev/null)"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 290 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -20
HC=$B/tests/scheduler/cache_hit_cost
for run in "spmm er:1000:0.01" "spmm rmat:18:16" "sddmm er:1000:0.01"; do
  set -- $run
  timeout 90 $HC --backend cuda --op $1 --processes 6 --fill 200 $2 2>&1 | tail -n 1
done | tee $OUT/hit.log
echo "at ${SECONDS}s"
MB=$B/tests/scheduler/minibatch_decisions
for arm in auto ctl; do
  v=""; [ $arm = ctl ] && v="--variant spmm.row_warp_vec4"
  timeout 120 $MB --backend cuda --batches 1000 $v >$OUT/mb1000-$arm.log 2>&1; echo "mb1000 $arm rc $?"
  grep -E "op time|decide time|overhead|source|cold" $OUT/mb1000-$arm.log
done
echo "done at ${SECONDS}s"
