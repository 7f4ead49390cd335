#!/usr/bin/env bash
# Session 44's one short GPU call (under 500 s of device time were left): no Python build.
# 1. cusparse_start.cu (session 42's): a cuSPARSE SpMM plan's start step by step in a new process,
#    lazy and eager module loading: ALG3's first use against its per-plan cost (issue 35's first
#    epoch: its backward vendor checks spent 124.5 ms in ALG3's start in the first plan, 42.1 in the
#    second).
# 2. The cuda plugin and the two issue-35 tools built (no Kokkos), then a new process's cache hit
#    (10k and 3.9M entries) and the 1000-batch mini-batch loop on this tree (sessions 37-38 measured
#    them last: 38.0 / 98.3 us, overhead 656 %).
set -u
OUT=${OUT:-/tmp/gU1}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-330}
nvidia-smi -L
S=benchmarks/results/2026-12-07-s42
nvcc -O2 -arch=sm_90 $S/cusparse_start.cu -lcusparse -o /tmp/cs && { /tmp/cs; echo "-- eager"; CUDA_MODULE_LOADING=EAGER /tmp/cs | head -4; }
echo "cusparse_start done at ${SECONDS}s"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_ENABLE_MPI=OFF >$OUT/build.log 2>&1
timeout $((LIMIT - 110 - SECONDS)) ninja -C $B -j18 tests/scheduler/cache_hit_cost tests/scheduler/minibatch_decisions >>$OUT/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -5
T=$B/tests/scheduler
for g in er:1000:0.01 rmat:18:16; do
  timeout 40 $T/cache_hit_cost --op spmm --backend cuda --processes 6 --fill 200 $g 2>&1 | tail -1
done
echo "hits done at ${SECONDS}s"
timeout $((LIMIT - SECONDS)) $T/minibatch_decisions --backend cuda --batches 1000 >$OUT/minibatch.log 2>&1
echo "minibatch rc $? at ${SECONDS}s"; grep -vE "^\{" $OUT/minibatch.log | tail -12
