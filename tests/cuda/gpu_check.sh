#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on a GPU machine: configure and build for sm_90, run CTest, compute-sanitizer
# (memcheck, racecheck) on the cuda tests, the cuda_timing table and the benchmark suite, inside
# a time budget so that a slow step cannot eat the others' logs. Logs go to $OUT/<step>.log; a
# summary is printed.
#   [CTEST_REGEX=...] [BENCH_ARGS=...] tests/cuda/gpu_check.sh [BUDGET_SECONDS] [STEPS...]
#   (steps: configure build ctest memcheck racecheck timing bench; CTEST_REGEX narrows the CTest
#   step; bench runs sparseport_bench_cuda at full size on SPARSEPORT_DATA_DIR, default
#   .device-data, with BENCH_ARGS, and writes $OUT/cuda.json and the report $OUT/report.md;
#   benchmarks/run_gpu.sh is the same suite in a build of its own)
set -u
BUDGET=${1:-460}
shift || true
STEPS=${*:-configure build ctest memcheck racecheck timing}
OUT=${OUT:-/tmp/sparseport-gpu-check}
mkdir -p "$OUT"
B=build-gpu
# The fault test is left out of the sanitizers on purpose (it faults); these cover every kernel.
MEMCHECK_FILTER='CudaSpmm.EveryVariantDoubleInt64Pattern:CudaSpmm.SmallMatricesTeamsOfSlices:CudaAttention.SmallMatrixSlicesAndTiles:CudaSpmm.MatrixWithoutEntriesScalesC:CudaSddmm.EveryVariantFloatInt32:CudaSegment.EveryVariantDoubleInt64Unweighted:CudaAttention.EveryVariantFloatInt32:CudaStructure.*:CudaPlans.*:CudaPointers.*'
RACECHECK_FILTER='CudaPlans.*:CudaStructure.SliceInducedTransposeFloatInt32:CudaAttention.EveryVariantDoubleInt64'

step() {
  local name=$1 limit=$2
  shift 2
  case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
  local left=$((BUDGET - SECONDS - 5))
  ((limit > left)) && limit=$left
  if ((limit < 10)); then
    echo "== $name: skipped, ${left}s left of the budget"
    return 0
  fi
  echo "== $name (limit ${limit}s, started at ${SECONDS}s)"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc $rc at ${SECONDS}s"
  grep -E "tests passed|tests failed|ERROR SUMMARY|RACECHECK SUMMARY|FAILED|error:" "$OUT/$name.log" | head -n 40
  tail -n "${TAIL:-6}" "$OUT/$name.log"
}

nvidia-smi -L 2>&1 | head -n 4
step configure 90 cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_BUILD_BENCHMARKS=ON
step build 300 ninja -C "$B" -j16 -k 0
step ctest 180 ctest --test-dir "$B" -j8 --timeout 150 --output-on-failure ${CTEST_REGEX:+-R "$CTEST_REGEX"}
step memcheck 110 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/tests/cuda/test_cuda" "--gtest_filter=$MEMCHECK_FILTER"
step racecheck 50 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/tests/cuda/test_cuda" "--gtest_filter=$RACECHECK_FILTER"
TAIL=200 step timing 130 "$B/tests/cuda/cuda_timing"
# The suite stops starting rows 40 s before the budget runs out, and the report reads what it wrote.
bench_deadline=$((BUDGET - SECONDS - 40))
TAIL=3 step bench $((bench_deadline + 30)) env SPARSEPORT_BENCH_SIZE=full \
  SPARSEPORT_DATA_DIR="${SPARSEPORT_DATA_DIR:-.device-data}" SPARSEPORT_BENCH_DEADLINE_S="$bench_deadline" \
  "$B/benchmarks/sparseport_bench_cuda" --benchmark_min_time=0.01 --benchmark_out="$OUT/cuda.json" \
  --benchmark_out_format=json ${BENCH_ARGS:-}
case " $STEPS " in
  *" bench "*)
    [ -s "$OUT/cuda.json" ] && python3 benchmarks/report.py "$OUT/cuda.json" -o "$OUT/report.md" \
      --title "SparsePort CUDA benchmarks, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" \
      --command "tests/cuda/gpu_check.sh $BUDGET $STEPS (BENCH_ARGS='${BENCH_ARGS:-}')" &&
      python3 benchmarks/report.py "$OUT/cuda.json" --summary --title Summary
    ;;
esac
echo "== done at ${SECONDS}s"
