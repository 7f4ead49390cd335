#!/usr/bin/env bash
# Session 27, call 3: finer timestamps (core/trace_tmp.hpp, temporary) of a GPU cache hit in a new
# process, with and without a rehearsal of the hit's host steps in the context's warm-up
# (SPARSEPORT_TMP_NO_REHEARSE=1 turns it off; temporary A/B switch), the arms alternating; the rmat
# hit's summary kernel at the clocks it gets (ncu --clock-control none); a mini-batch trace.
set -u
OUT=${OUT:-/tmp/g3}; mkdir -p $OUT/t
B=build-gpu
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 250 ninja -C $B -j16 cache_hit_cost minibatch_decisions >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -20
HC=$B/tests/scheduler/cache_hit_cost
for rep in 1 2; do
for arm in on off; do
  for run in "spmm er:1000:0.01 er" "spmm rmat:18:16 rmat" "sddmm er:1000:0.01 er"; do
    set -- $run
    if [ $arm = off ]; then export SPARSEPORT_TMP_NO_REHEARSE=1; else unset SPARSEPORT_TMP_NO_REHEARSE; fi
    SPARSEPORT_TRACE_TMP=$OUT/t/hit-$1-$3-$arm-$rep.txt timeout 60 $HC --backend cuda --op $1 --processes 6 --fill 200 $2 >$OUT/t/hit-$1-$3-$arm-$rep.log 2>&1
    echo "$arm $rep: $(tail -n 1 $OUT/t/hit-$1-$3-$arm-$rep.log)"
  done
done
done
unset SPARSEPORT_TMP_NO_REHEARSE
echo "at ${SECONDS}s"
timeout 120 ncu --target-processes all --clock-control none -k regex:summary_kernel \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second \
  $HC --backend cuda --op spmm --processes 1 --fill 0 rmat:18:16 >$OUT/t/ncu-hit-rmat.log 2>&1; echo "ncu rc $?"
grep -A4 "(792, 1, 1)" $OUT/t/ncu-hit-rmat.log | grep -E "gpu__time|per_second" | tail -12
echo "at ${SECONDS}s"
MB=$B/tests/scheduler/minibatch_decisions
SPARSEPORT_TRACE_TMP=$OUT/t/mb.txt timeout 90 $MB --backend cuda --batches 300 >$OUT/t/mb300.log 2>&1; echo "mb300 rc $?"
grep -E "op time|decide time|source" $OUT/t/mb300.log
tar czf $OUT/traces.tgz -C $OUT t && rm -rf $OUT/t
echo "done at ${SECONDS}s"
