#!/usr/bin/env bash
# Session 30, last call (issue 36), in what failed starts left (284 s): branch kokkos-summary-race
# (the sampled blocks' two counts in one team reduction). The kokkos plugin and test_kokkos only;
# KokkosSummary.* under racecheck and memcheck (where it failed before the fix), then plain.
set -u
OUT=${OUT:-/tmp/gB4}; mkdir -p $OUT
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=120 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout $((175 - SECONDS)) cmake --build $B --parallel 16 --target sparseport_plugin_kokkos test_kokkos >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head -5
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  [ $SECONDS -gt 215 ] && break
  timeout $((228 - SECONDS)) $SAN --tool $tool --error-exitcode 9 $B/tests/kokkos/test_kokkos --gtest_filter='KokkosSummary.*' >$OUT/$tool.log 2>&1
  echo "$tool rc $? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/$tool.log) $(grep -E '^\[  (PASSED|FAILED)  \]' $OUT/$tool.log | head -3 | tr '\n' ' ')"
done
timeout $((240 - SECONDS)) $B/tests/kokkos/test_kokkos --gtest_filter='KokkosSummary.*:KokkosCheck*' 2>&1 | grep -E "^\[  (PASSED|FAILED)  \]" | head -4
echo "done at ${SECONDS}s"
