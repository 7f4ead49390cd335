#!/usr/bin/env bash
# Session 30, call 4 (issue 36): kokkos-async + the summary's one-reduction fix, on a fresh machine:
# the kokkos plugin, test_kokkos and the CLI only; racecheck over KokkosSummary.* (the race the
# fix removes is a shared-memory hazard), then gpu_check.sh's memcheck step (test_kokkos, its own-init
# twin, every kokkos op), then the kokkos and summary tests under ctest -j8.
set -u
OUT=${OUT:-/tmp/gB3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout 200 cmake --build $B --parallel 16 --target sparseport_plugin_kokkos test_kokkos test_kokkos_own_init sparseport_cli -- -k 0 >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head
SAN=/usr/local/cuda/bin/compute-sanitizer
timeout 60 $SAN --tool racecheck --error-exitcode 9 $B/tests/kokkos/test_kokkos --gtest_filter='KokkosSummary.*' >$OUT/racecheck.log 2>&1
echo "racecheck rc $? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/racecheck.log) $(grep -cE '^\[       OK' $OUT/racecheck.log) ok, $(grep -cE '^\[  FAILED  \] Kokkos' $OUT/racecheck.log) failed"
BUDGET=$((365 - SECONDS)) STEPS=memcheck tests/kokkos/gpu_check.sh $OUT/m >/dev/null 2>&1
echo "memcheck done at ${SECONDS}s"; grep -E "^==== (memcheck|rc)|ERROR SUMMARY" $OUT/m/memcheck.log | paste - - - | head -20
grep -E "^\[  FAILED  \]|^\[  PASSED  \]" $OUT/m/memcheck.log | head
timeout $((400 - SECONDS)) ctest --test-dir $B -j8 --timeout 60 -R "KokkosSummary|KokkosCheck|KokkosSpmm|KokkosArg" >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout" $OUT/ctest.log | head
cd $OUT && tar czf logs.tgz b racecheck.log m/memcheck.log ctest.log 2>/dev/null; rm -rf b; echo "done at ${SECONDS}s"
