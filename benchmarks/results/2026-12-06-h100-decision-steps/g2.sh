#!/usr/bin/env bash
# Session 27, call 2: where a GPU cache hit's and class decision's microseconds go, from temporary
# timestamps (core/trace_tmp.hpp, SPARSEPORT_TRACE_TMP=FILE; not landed) at each step of prepare(),
# holds_prefix() and the cuda summary slot; the summary kernel's GPU time in a hit process (ncu);
# the slot's warm cost on the same graphs (validation_cost).
set -u
OUT=${OUT:-/tmp/g2}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 250 ninja -C $B -j16 cache_hit_cost minibatch_decisions validation_cost >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -20
HC=$B/tests/scheduler/cache_hit_cost
for run in "spmm er:1000:0.01 er" "spmm rmat:18:16 rmat" "sddmm er:1000:0.01 er"; do
  set -- $run
  SPARSEPORT_TRACE_TMP=$OUT/trace-hit-$1-$3.txt timeout 60 $HC --backend cuda --op $1 --processes 6 --fill 200 $2 >$OUT/hit-$1-$3.log 2>&1
  tail -n 1 $OUT/hit-$1-$3.log
done
echo "at ${SECONDS}s"
MB=$B/tests/scheduler/minibatch_decisions
SPARSEPORT_TRACE_TMP=$OUT/trace-mb.txt timeout 90 $MB --backend cuda --batches 300 >$OUT/mb300.log 2>&1; echo "mb300 rc $?"
grep -E "op time|decide time|source" $OUT/mb300.log
echo "at ${SECONDS}s"
timeout 60 $B/tests/cuda/validation_cost 64 rmat:18:16 er:1000:0.01 >$OUT/validation_cost.log 2>&1; echo "validation_cost rc $?"
cat $OUT/validation_cost.log | tail -30
echo "at ${SECONDS}s"
timeout 120 ncu --target-processes all -k regex:summary_kernel --metrics gpu__time_duration.sum,dram__bytes_read.sum \
  $HC --backend cuda --op spmm --processes 2 --fill 20 rmat:18:16 >$OUT/ncu-hit-rmat.log 2>&1; echo "ncu rc $?"
grep -E "summary_kernel|gpu__time|dram__bytes" $OUT/ncu-hit-rmat.log | head -40
echo "done at ${SECONDS}s"
