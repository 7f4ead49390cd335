#!/usr/bin/env bash
# Session 29, call 1 (issue 36): main 637af14 + branch kokkos-hub-batch's spmm.cpp (08ae3bb:
# SPARSEPORT_KOKKOS_HUB_BATCH=1 folds a hub chunk's entries U at a time) + SPARSEPORT_KOKKOS_FENCE=0
# (team_rows and hub_split without their closing fence) on Kokkos-CUDA. Build, the spmm kokkos
# tests (main's settings, then both switches on), the bench with three settings from one build,
# memcheck on the batched kernel, and the fixed cost of a tiny call on both plugins (wall time per
# call and kernel time under ncu).
set -u
OUT=${OUT:-/tmp/gA1}; mkdir -p $OUT
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
SPARSEPORT_KOKKOS_HUB_BATCH=1 SPARSEPORT_KOKKOS_FENCE=0 timeout 50 ctest --test-dir $B -j8 --timeout 45 -R "KokkosSpmm|SpmmConformance" \
  --output-on-failure >$OUT/ctest-batch.log 2>&1
echo "ctest (batch=1) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|Total Test time" $OUT/ctest-batch.log | head -20
BUDGET=210 STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="er:2000:0.002" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_KOKKOS_HUB_BATCH=1 SPARSEPORT_KOKKOS_HUB_BATCH=1,SPARSEPORT_KOKKOS_FENCE=0" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A3 "^op  *rows" $OUT/bench/gpu_check.log
SAN=/usr/local/cuda/bin/compute-sanitizer
for gf in email-Enron:32 cit-HepPh:128; do
  g=${gf%:*}; f=${gf#*:}
  [ $SECONDS -gt 520 ] && break
  SPARSEPORT_KOKKOS_HUB_BATCH=1 timeout 20 $SAN --tool memcheck --error-exitcode 9 $S run --op spmm --backend kokkos --variant spmm.hub_split --F $f --reps 1 -q .device-data/$g.mtx.gz >$OUT/san-$g-$f.log 2>&1
  echo "memcheck batch $g F=$f rc $?: $(grep -E 'ERROR SUMMARY' $OUT/san-$g-$f.log)"
done
# The fixed cost: a 64-row graph, wall time per call (sparseport run) and kernel time (ncu).
which nsys ncu
for be in cuda kokkos kokkos-nofence; do
  [ $be = kokkos-nofence ] && { export SPARSEPORT_KOKKOS_FENCE=0; be=kokkos; }
  timeout 20 $S run --op spmm --backend $be --variant all --F 32 --reps 200 er:64:0.05 2>&1 | tail -n 8
done
unset SPARSEPORT_KOKKOS_FENCE
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for bv in cuda:spmm.row_warp kokkos:spmm.team_rows kokkos:spmm.hub_split; do
  [ $SECONDS -gt 560 ] && break
  timeout 25 $NCU --metrics gpu__time_duration.sum -c 8 $S run --op spmm --backend ${bv%%:*} --variant ${bv#*:} --F 32 --reps 3 er:64:0.05 >$OUT/ncu-${bv%%:*}-${bv#*:}.log 2>&1
  echo "ncu $bv: $(grep -E 'gpu__time_duration' $OUT/ncu-${bv%%:*}-${bv#*:}.log | awk '{print $NF}' | tr '\n' ' ')"
done
cd $OUT && tar czf logs.tgz b ctest*.log san-*.log ncu-*.log bench/bench.err.log 2>/dev/null; rm -rf b ctest*.log san-*.log ncu-*.log bench/bench.err.log; echo "done at ${SECONDS}s"
