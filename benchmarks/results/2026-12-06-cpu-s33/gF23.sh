#!/usr/bin/env bash
# Session 33, call 2 on call 1's warm machine: gF2-next.sh's bench (18 shared matrices + gpu_check's
# generated shapes, F = 32, 64, 128, medians of 20, verified; kokkos with its row order and without)
# then gF3-next.sh's kokkos oracle, in one call.
set -u
OUT=${OUT:-/tmp/gF23}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
nvidia-smi -L
BUDGET=420 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_ROW_ORDER=0" \
  tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -E "^## |geomean|^spmm  +[0-9]" $OUT/bench/gpu_check.log
BUDGET=$((585 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
cd $OUT && tar czf logs.tgz bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -f bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
