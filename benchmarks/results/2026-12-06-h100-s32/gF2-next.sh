#!/usr/bin/env bash
# For the next session, call 2, on call 1's warm machine (ideally an H200: issue 36's >= 0.8 target is
# the H200's): the bench over the 18 shared matrices and gpu_check's generated shapes (rmat:18:16,
# mesh2d:1024:1024:0, er:262144:6e-5) at F = 32, 64, 128 (medians of 20, verified), the kokkos plugin
# with its row order and without (SPARSEPORT_KOKKOS_ROW_ORDER=0) in one run: session 32 measured the
# order on 5 skewed real matrices only. About 500 s on an H100; the oracle is call 3 (gF3-next.sh).
set -u
OUT=${OUT:-/tmp/gF2}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
BUDGET=570 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_ROW_ORDER=0" \
  tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1

echo "bench done at ${SECONDS}s"; grep -E "^## |geomean|^spmm  +[0-9]" $OUT/bench/gpu_check.log
cd $OUT && tar czf logs.tgz bench/bench.err.log 2>/dev/null; rm -f bench/bench.err.log; echo "done at ${SECONDS}s"
