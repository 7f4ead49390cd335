#!/usr/bin/env bash
# Session 29, call 2 at last (issue 36), cut to what six failed starts left (351 s): main 637af14 +
# SPARSEPORT_KOKKOS_FENCE=0 (an A/B switch) on Kokkos-CUDA. Does main's hub_split pass on the GPU
# with this toolchain (call 1's branch did not)? Build; the spmm kokkos tests; the same under
# FENCE=0; the bench with both settings while time is left.
set -u
OUT=${OUT:-/tmp/gA5}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout 280 cmake --build $B --parallel 16 -- -k 0 >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head
timeout 45 ctest --test-dir $B -j8 --timeout 40 -R "KokkosSpmm|SpmmConformance|/BackwardConformance" \
  --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest (spmm subset) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest.log | head -20
SPARSEPORT_KOKKOS_FENCE=0 timeout 40 ctest --test-dir $B -j8 --timeout 35 -R "KokkosSpmm|SpmmConformance|ExitAfterOp.kokkos" \
  --output-on-failure >$OUT/ctest-fence0.log 2>&1
echo "ctest (fence=0) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest-fence0.log | head -20
left=$((315 - SECONDS))
if [ $left -gt 40 ]; then
  BUDGET=$left STEPS=bench BENCH_F="32 128" BENCH_REPS=20 BENCH_GRAPHS="" \
    BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_FENCE=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
  echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
fi
gzip $OUT/ctest*.log; echo "done at ${SECONDS}s"
