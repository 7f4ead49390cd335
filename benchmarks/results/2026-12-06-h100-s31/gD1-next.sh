#!/usr/bin/env bash
# For the next session (issue 36's >= 0.8 target is the H200's; only H100s have run since the
# fence change): main on an H200. Build; the kokkos tests and the spmm/sddmm/attention/spmv
# conformance under ctest -j8; the bench over the 18 shared matrices at F = 32, 64, 128; the kokkos
# oracle. About 500 s on an H100 (session 31: build 194 s, tests 83 s, bench 130 s a kokkos arm).
set -u
OUT=${OUT:-/tmp/gD1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=330 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
timeout 110 ctest --test-dir $B -j8 --timeout 100 -R "Kokkos|kokkos|/SpmmConformance|/SddmmConformance|/AttentionConformance|/Spmv" >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout" $OUT/ctest.log | head
BUDGET=$((540 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
BUDGET=$((585 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
cd $OUT && tar czf logs.tgz b ctest.log bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -rf b ctest.log bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
