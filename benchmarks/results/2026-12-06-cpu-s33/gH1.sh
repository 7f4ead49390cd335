#!/usr/bin/env bash
# Session 33 (device time short after eleven failed starts): Kokkos + configure, then only the CLI and
# its plugins (no test programs), then on an H200 the issue-36 bench (18 shared matrices, F = 32, 64,
# 128, medians of 20, verified) and the kokkos oracle; on an H100 the same bench with the kokkos row
# order on and off (SPARSEPORT_KOKKOS_ROW_ORDER=0), the A/B session 32 ran on 5 of the 18 only.
set -u
OUT=${OUT:-/tmp/gH1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt
BUDGET=200 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):|FAILED:|error" $OUT/b/gpu_check.log | head -10
timeout $((LIMIT - 60 - SECONDS)) cmake --build $B --target sparseport_cli --parallel 16 >$OUT/b/cli.log 2>&1
echo "cli built rc $? at ${SECONDS}s"; tail -n 2 $OUT/b/cli.log
if grep -q H200 $OUT/gpu.txt; then
  BUDGET=$((LIMIT - 80 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
  echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
  BUDGET=$((LIMIT - 5 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
  echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
else
  BUDGET=$((LIMIT - 5 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" \
    BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_ROW_ORDER=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
  echo "bench done at ${SECONDS}s"; grep -E -A3 "^op  *rows|^## " $OUT/bench/gpu_check.log
fi
cd $OUT && tar czf logs.tgz b bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -rf b bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
