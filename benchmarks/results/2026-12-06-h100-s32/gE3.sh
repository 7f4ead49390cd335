#!/usr/bin/env bash
# Session 32 (issue 36), one call for what is left of the device time: the tree of s32-gpu (kokkos
# row order + amortise). Build; the bench A/B of the row order (SPARSEPORT_KOKKOS_ROW_ORDER=0) on the
# 9 mid-size and skewed shared matrices at F = 32, 64, 128 (every result verified against float64);
# then the kokkos tests and the spmm conformance under ctest -j8 while time is left.
set -u
OUT=${OUT:-/tmp/gE3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
mkdir -p .device-data/mid
for g in wb-cs-stanford facebook-combined astro-ph email-Enron cit-HepPh; do ln -sf ../$g.mtx.gz .device-data/mid/; done
SPARSEPORT_DATA_DIR=$PWD/.device-data/mid BUDGET=$((385 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=10 BENCH_GRAPHS="" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_ROW_ORDER=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -E "^## |geomean|^spmm  +[0-9]|budget" $OUT/bench/gpu_check.log | head -12
L=$((392 - SECONDS)); [ $L -gt 20 ] && timeout $L ctest --test-dir $B -j8 --timeout $((L - 5)) -R "Kokkos|kokkos|/SpmmConformance|CudaRowOrder" >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Not Run" $OUT/ctest.log | head
cd $OUT && tar czf all.tgz b bench ctest.log 2>/dev/null; rm -rf b bench ctest.log; echo "done at ${SECONDS}s"
