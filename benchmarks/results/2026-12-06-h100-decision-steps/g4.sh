#!/usr/bin/env bash
# Session 27, call 4: a device operand's summary before the shape question (temporary switch
# SPARSEPORT_TMP_SUMMARY_FIRST=1: the summary kernel launched first in prepare(), DEGREES asked
# whenever a shape class applies), against main's order, the arms alternating: mini-batch class
# decisions (300 batches) and cache hits in new processes, with the timestamps of core/trace_tmp.hpp
# (temporary). Then the CUDA and scheduler tests under ctest -j8 with the switch on.
set -u
OUT=${OUT:-/tmp/g4}; mkdir -p $OUT/t
B=build-gpu
export SPARSEPORT_TMP_NO_REHEARSE=1
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 250 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -20
MB=$B/tests/scheduler/minibatch_decisions
HC=$B/tests/scheduler/cache_hit_cost
for rep in 1 2; do
  for arm in main first; do
    if [ $arm = first ]; then export SPARSEPORT_TMP_SUMMARY_FIRST=1; else unset SPARSEPORT_TMP_SUMMARY_FIRST; fi
    SPARSEPORT_TRACE_TMP=$OUT/t/mb-$arm-$rep.txt timeout 60 $MB --backend cuda --batches 300 >$OUT/t/mb-$arm-$rep.log 2>&1
    echo "mb $arm $rep rc $?: $(grep -E 'source class' $OUT/t/mb-$arm-$rep.log)"
    for run in "spmm er:1000:0.01 er" "spmm rmat:18:16 rmat"; do
      set -- $run
      SPARSEPORT_TRACE_TMP=$OUT/t/hit-$3-$arm-$rep.txt timeout 60 $HC --backend cuda --op $1 --processes 6 --fill 200 $2 >$OUT/t/hit-$3-$arm-$rep.log 2>&1
      echo "  hit $arm $rep: $(tail -n 1 $OUT/t/hit-$3-$arm-$rep.log | grep -o 'medians.*')"
    done
  done
done
unset SPARSEPORT_TMP_SUMMARY_FIRST
echo "at ${SECONDS}s"
SPARSEPORT_TMP_SUMMARY_FIRST=1 timeout 200 ctest --test-dir $B -j8 --timeout 120 -R "^Cuda|Scheduler|ExitAfterOp|CacheFault|Deterministic" \
  -E "^CudaSpmm|^SpmmConformance|^BackwardConformance" --output-on-failure >$OUT/t/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception" $OUT/t/ctest.log | head -20
tar czf $OUT/traces.tgz -C $OUT t && rm -rf $OUT/t
echo "done at ${SECONDS}s"
