#!/usr/bin/env bash
# Session 28, call 2 (issue 36): branch kokkos-hub-rows on Kokkos-CUDA. hub_split's lane-group
# kernel gives whole rows (<= T) to team threads and only the hubs' chunks to the lane groups;
# SPARSEPORT_KOKKOS_HUB_ROWS=0 is main's kernel in the same build. Kokkos for CUDA from the source
# pack, both plugins built; the spmm kokkos tests; the bench with both settings (the 18 shared
# matrices and er:2000:0.002, F = 32, 64, 128, float sums, 20 reps); memcheck on the two graphs.
set -u
OUT=${OUT:-/tmp/gK2}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
BUDGET=400 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|error" $OUT/b/gpu_check.log | head -20
echo "built at ${SECONDS}s"
timeout 90 ctest --test-dir $B -j8 --timeout 80 -R "KokkosSpmm|SpmmConformance|/BackwardConformance|ExitAfterOp.kokkos|Scheduler.*[Kk]okkos" \
  --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest.log | head -20
left=$((575 - SECONDS - 40))
BUDGET=$left STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="er:2000:0.002" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_HUB_ROWS=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; tail -n 30 $OUT/bench/gpu_check.log
SAN=/usr/local/cuda/bin/compute-sanitizer
for g in facebook-combined email-Enron; do
  [ $SECONDS -gt 560 ] && break
  timeout 20 $SAN --tool memcheck --error-exitcode 9 $B/src/cli/sparseport run --op spmm --backend kokkos --variant spmm.hub_split --F 64 --reps 1 -q .device-data/$g.mtx.gz >$OUT/san-$g.log 2>&1
  echo "memcheck $g rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san-$g.log)"
done
cd $OUT && tar czf logs.tgz b ctest.log san-*.log bench/bench.err.log && rm -rf b ctest.log san-*.log bench/bench.err.log; echo "done at ${SECONDS}s"
