#!/usr/bin/env bash
# For session 31, call 1 (issue 36), tree = branch s31-gpu (main + kokkos-spmm-split +
# kokkos-summary-race + the team-size cache of kokkos-team-size-cache). Build (note its time: the
# split should take the kokkos spmm off the critical path, 135 s -> 4 x 39 s under nvcc here);
# KokkosSummary.* under memcheck and racecheck (the fix of the race that made it fail under memcheck);
# the kokkos tests and the spmm, sddmm, attention and spmv conformance under ctest -j8 (the ops the
# branch touches; the whole conformance suite did not fit the call with the bench); the bench with
# the team-size cache on and off (SPARSEPORT_KOKKOS_TS_CACHE=0) from one build.
set -u
OUT=${OUT:-/tmp/gC1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
# gpu_check.sh's own build step: it also prints the five slowest compile steps (the split's effect).
BUDGET=330 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error|^ *[0-9.]+ s  " $OUT/b/gpu_check.log | head -20
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  timeout 60 $SAN --tool $tool --error-exitcode 9 $B/tests/kokkos/test_kokkos --gtest_filter='KokkosSummary.*' >$OUT/$tool.log 2>&1
  echo "$tool rc $? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/$tool.log) $(grep -E '^\[  (PASSED|FAILED)  \]' $OUT/$tool.log | head -3 | tr '\n' ' ')"
done
timeout 120 ctest --test-dir $B -j8 --timeout 100 -R "Kokkos|kokkos|/SpmmConformance|/SddmmConformance|/AttentionConformance|/Spmv" >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout" $OUT/ctest.log | head
BUDGET=$((560 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_TS_CACHE=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
cd $OUT && tar czf logs.tgz b ctest.log memcheck.log racecheck.log bench/bench.err.log 2>/dev/null; rm -rf b ctest.log bench/bench.err.log; echo "done at ${SECONDS}s"
