#!/usr/bin/env bash
# For the next session, call 3, on the same warm machine: the kokkos oracle over the 18 shared matrices
# at F = 32, 64, 128 (`sparseport tune --oracle --backend kokkos`, every kokkos variant timed in the
# same process). About 150 s.
set -u
OUT=${OUT:-/tmp/gF3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
BUDGET=300 STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
