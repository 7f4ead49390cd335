#!/usr/bin/env bash
# Session 26, call 2: the class summary reads the row lengths alone (DEGREES, ABI 1.9), FEATURES's
# stream blocks start before its sorts, and the summary's result is written straight into pinned
# host memory (no copy back; SPARSEPORT_SUMMARY_COPY_BACK=1 is the A/B's other arm, temporary).
# Build; the summary slot on fresh and reused arrays, both arms alternating; the kernels' GPU time
# under ncu; the scheduler's log split; the mini-batch loop and its control; memcheck
# on the summary tests; then ctest -j8 (long label and MPI left out) with the time that is left
# (the numbers it finished go to $B/g2-done.txt for a next call, as g1).
set -u
OUT=${OUT:-/tmp/g2}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L; echo "commit $(git rev-parse --short HEAD 2>/dev/null) + working tree"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 290 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -20
MB=$B/tests/scheduler/minibatch_decisions
for arm in direct copy direct copy; do
  if [ $arm = copy ]; then export SPARSEPORT_SUMMARY_COPY_BACK=1; else unset SPARSEPORT_SUMMARY_COPY_BACK; fi
  echo "== summary cost, $arm"; timeout 40 $MB --backend cuda --batches 80 --summary-cost 2>&1 | grep -E "summarize_csr|idle"
done | tee $OUT/mb-summary.log
unset SPARSEPORT_SUMMARY_COPY_BACK
timeout 90 ncu --kernel-name regex:summary_kernel --launch-skip 6 --launch-count 12 --metrics gpu__time_duration.sum,launch__grid_size \
  $MB --backend cuda --batches 10 --summary-cost >$OUT/ncu.log 2>&1; echo "ncu rc $?"
grep -E "summary_kernel|gpu__time_duration" $OUT/ncu.log | sed 's/  */ /; s/(unnamed.*//; s/void .*summary_kernel/summary_kernel/' | paste - - | head -14
SPARSEPORT_LOG=scheduler timeout 40 $MB --backend cuda --batches 60 >$OUT/mb-log.out 2>$OUT/mb-log.err; echo "mb log rc $?"
grep "class ->" $OUT/mb-log.err | tail -n 6 | sed 's/.*\[/[/'
for arm in auto ctl auto ctl; do
  v=""; [ $arm = ctl ] && v="--variant spmm.row_warp_vec4"
  timeout 60 $MB --backend cuda --batches 300 $v >$OUT/mb-$arm.log 2>&1; echo "mb $arm rc $?"
  grep -E "op time|decide time|overhead|source class" $OUT/mb-$arm.log
done
echo "at ${SECONDS}s"
SAN_FILTER='CudaSummary*:CudaValidation*' SAN_SHARDS=8 SAN_TIMEOUT=100 OUT=$OUT/san bash tests/cuda/gpu_check.sh 110 memcheck 2>&1 | grep -v "^GPU" | tail -4
echo "memcheck done at ${SECONDS}s"
left=$((585 - SECONDS)); [ $left -gt 30 ] || left=30
timeout $left ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception" $OUT/ctest.log | head -30
grep -oE "Test +#[0-9]+:" $OUT/ctest.log | grep -oE "[0-9]+" | sort -n > $B/g2-done.txt; wc -l < $B/g2-done.txt
