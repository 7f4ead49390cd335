#!/usr/bin/env bash
# Session 30, call 1 (issue 36): branch kokkos-async (main 093474e + end_op: device-space kokkos
# ops return with their kernels queued, as the cuda plugin's; SPARSEPORT_KOKKOS_FENCE=1 restores
# the closing fences, a temporary A/B switch). Build; the kokkos and conformance tests (all ops, both
# plugins) under ctest -j8; the bench with both settings from one build; the kokkos oracle.
set -u
OUT=${OUT:-/tmp/gB1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout 300 cmake --build $B --parallel 16 -- -k 0 >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head
timeout 85 ctest --test-dir $B -j8 --timeout 80 -R "Kokkos|kokkos|Conformance|ExitAfterOp" \
  --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest (kokkos+conformance) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest.log | head -20
echo "finished: $(grep -cE '^ *[0-9]+/[0-9]+ Test' $OUT/ctest.log) of $(ctest --test-dir $B -N -R 'Kokkos|kokkos|Conformance|ExitAfterOp' | tail -n 1)"
BUDGET=$((525 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="er:2000:0.002" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_FENCE=1" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
BUDGET=$((588 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
cd $OUT && tar czf logs.tgz b ctest*.log bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -rf b ctest*.log bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
