#!/usr/bin/env bash
# Session 28, call 3 (issue 36): branch kokkos-hub-rows 15b0b8d on Kokkos-CUDA: whole rows take NK
# team threads (one column group a lane, team_rows' lanes and batches); SPARSEPORT_KOKKOS_HUB_ROWS=0
# is main's kernel in the same build. Kokkos for CUDA from the source pack, both plugins; the kokkos
# and conformance tests; the bench with both settings; memcheck on hub_split.
set -u
OUT=${OUT:-/tmp/gK3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
BUDGET=300 STEPS="kokkos configure" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure):" $OUT/b/gpu_check.log
timeout 330 cmake --build $B --parallel 16 -- -k 0 >$OUT/b/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" $OUT/b/build.log | head
timeout 60 ctest --test-dir $B -j8 --timeout 55 -R "KokkosSpmm|SpmmConformance|/BackwardConformance|ExitAfterOp.kokkos|Scheduler.*[Kk]okkos" \
  --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest (spmm subset) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest.log | head -20
BUDGET=170 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="er:2000:0.002" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_HUB_ROWS=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
SAN=/usr/local/cuda/bin/compute-sanitizer
for g in facebook-combined email-Enron; do
  for f in 32 128; do
    [ $SECONDS -gt 470 ] && break
    timeout 20 $SAN --tool memcheck --error-exitcode 9 $B/src/cli/sparseport run --op spmm --backend kokkos --variant spmm.hub_split --F $f --reps 1 -q .device-data/$g.mtx.gz >$OUT/san-$g-$f.log 2>&1
    echo "memcheck $g F=$f rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san-$g-$f.log)"
  done
done
left=$((560 - SECONDS))
if [ $left -gt 30 ]; then
  timeout $left ctest --test-dir $B -j8 --timeout 60 -R "Kokkos|Conformance" -E "KokkosSpmm|SpmmConformance|/BackwardConformance|ExitAfterOp.kokkos|Scheduler.*[Kk]okkos" \
    --output-on-failure >$OUT/ctest2.log 2>&1
  echo "ctest (the rest of Kokkos|Conformance) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest2.log | head -20
fi
cd $OUT && tar czf logs.tgz b ctest*.log san-*.log bench/bench.err.log; rm -rf b ctest*.log san-*.log bench/bench.err.log; echo "done at ${SECONDS}s"
