#!/usr/bin/env bash
# Session 26, call 1: where a GPU shape-class decision's operand summary goes (issue 35), and main's
# whole test suite under ctest -j8. Build as gA.sh did; the summary slot timed on each batch's fresh
# arrays and again (minibatch_decisions --summary-cost); the scheduler's log with the summary call
# split out of its stage; the mini-batch loop and its control; the summary kernel's GPU time under
# ncu; then ctest -j8 (long label and MPI left out) with the time that is left.
set -u
OUT=${OUT:-/tmp/g1}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L; echo "commit $(git rev-parse --short HEAD 2>/dev/null)"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 290 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -20
MB=$B/tests/scheduler/minibatch_decisions
timeout 40 $MB --backend cuda --batches 100 --summary-cost >$OUT/mb-summary.log 2>&1; echo "mb summary rc $?"; cat $OUT/mb-summary.log
SPARSEPORT_LOG=scheduler timeout 40 $MB --backend cuda --batches 60 >$OUT/mb-log.out 2>$OUT/mb-log.err; echo "mb log rc $?"
grep "class ->" $OUT/mb-log.err | tail -n 8 | sed 's/.*\[/[/'
timeout 60 $MB --backend cuda --batches 300 >$OUT/mb-auto.log 2>&1; echo "mb auto rc $?"; grep -E "op time|decide time|overhead|source|variant" $OUT/mb-auto.log
timeout 40 $MB --backend cuda --batches 300 --variant spmm.row_warp_vec4 >$OUT/mb-ctl.log 2>&1; echo "mb ctl rc $?"; grep -E "op time|overhead" $OUT/mb-ctl.log
timeout 90 ncu --kernel-name regex:summary_kernel --launch-skip 6 --launch-count 12 --metrics gpu__time_duration.sum,launch__grid_size \
  $MB --backend cuda --batches 10 --summary-cost >$OUT/ncu.log 2>&1; echo "ncu rc $?"
grep -E "summary_kernel|gpu__time_duration|launch__grid_size" $OUT/ncu.log | sed 's/  */ /g' | head -40
echo "at ${SECONDS}s"
left=$((585 - SECONDS)); [ $left -gt 30 ] || left=30
timeout $left ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception" $OUT/ctest.log | head -30
grep -cE "Test +#" $OUT/ctest.log
# The tests this call finished (the build folder stays on a warm machine).
grep -oE "Test +#[0-9]+:" $OUT/ctest.log | grep -oE "[0-9]+" | sort -n > $B/g1-done.txt; wc -l < $B/g1-done.txt
