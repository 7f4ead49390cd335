#!/usr/bin/env bash
# For the next session, call 2, on call 1's warm machine (ideally an H200: issue 36's >= 0.8 target is
# the H200's): the bench over the 18 shared matrices at F = 32, 64, 128 (medians of 20, verified),
# then the kokkos oracle. About 450 s on an H100.
set -u
OUT=${OUT:-/tmp/gF2}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
BUDGET=330 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
BUDGET=$((585 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
cd $OUT && tar czf logs.tgz bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -f bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
