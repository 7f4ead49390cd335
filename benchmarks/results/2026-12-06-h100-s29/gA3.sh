#!/usr/bin/env bash
# Session 29, call 2 (issue 36): main 637af14 + SPARSEPORT_KOKKOS_FENCE=0 (team_rows and hub_split
# without their closing fence; an A/B switch) on Kokkos-CUDA. Call 1's branch (hub batches) gave
# wrong hub_split sums on its one-at-a-time path: this call checks main's kernel with this
# toolchain. Build; the spmm kokkos tests with and without the fence; the bench with both settings
# from one build; the kokkos oracle (trimmed to fit what failed starts left).
set -u
OUT=${OUT:-/tmp/gA3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout 300 cmake --build $B --parallel 16 -- -k 0 >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head
S=$B/src/cli/sparseport
timeout 60 ctest --test-dir $B -j8 --timeout 55 -R "KokkosSpmm|SpmmConformance|/BackwardConformance|ExitAfterOp.kokkos|Scheduler.*[Kk]okkos" \
  --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest (spmm subset) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest.log | head -20
SPARSEPORT_KOKKOS_FENCE=0 timeout 50 ctest --test-dir $B -j8 --timeout 45 -R "KokkosSpmm|SpmmConformance|ExitAfterOp.kokkos" \
  --output-on-failure >$OUT/ctest-fence0.log 2>&1
echo "ctest (fence=0) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest-fence0.log | head -20
BUDGET=170 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="er:2000:0.002" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_FENCE=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
BUDGET=60 STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o >/dev/null 2>&1
echo "oracle done at ${SECONDS}s"; tail -n 3 $OUT/o/oracle.err.log
cd $OUT && tar czf logs.tgz b ctest*.log san-*.log bench/bench.err.log o/oracle.err.log 2>/dev/null; rm -rf b ctest*.log san-*.log bench/bench.err.log o/oracle.err.log; echo "done at ${SECONDS}s"
