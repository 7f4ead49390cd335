#!/usr/bin/env bash
# Session 33, call 1 (device time short: 1034 s left after failed starts). Build; then on an H200 the
# issue-36 measurement first (bench over the 18 shared matrices at F = 32, 64, 128, medians of 20,
# verified; the kokkos oracle), on an H100 the whole suite first (ctest -j8, long and MPI left out).
# Call 2 (gG2.sh) runs the other half on the warm machine.
set -u
OUT=${OUT:-/tmp/gG1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
echo "built at ${SECONDS}s"
if grep -q H200 $OUT/gpu.txt; then
  BUDGET=$((LIMIT - 100 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
  echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
  BUDGET=$((LIMIT - 10 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
  echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
else
  timeout $((LIMIT - 15 - SECONDS)) ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1
  echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout" $OUT/ctest.log | head
fi
cd $OUT && tar czf logs.tgz b ctest.log bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -rf b ctest.log bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
