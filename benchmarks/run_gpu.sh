#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The issue-4 GPU benchmark in one call on the GPU machine: configure with the cuda preset for
# sm_90 in build/cuda-bench, build sparseport_bench_cuda only, run the full suite inside a time
# budget, and write the JSON, the logs and the Markdown report to $OUT; the report is printed,
# its summaries last. Run from the repository root:
#   benchmarks/run_gpu.sh [BUDGET_SECONDS]    (default 510: the whole script, build included)
# Environment:
#   SPARSEPORT_DATA_DIR  the real matrices (default .device-data, a git-ignored folder carried along)
#   OUT                  where the files go (default /tmp/sparseport-bench-gpu)
#   MIN_TIME             Google Benchmark's --benchmark_min_time per row, in GPU seconds (default 0.01)
#   BENCH_ARGS           more arguments for the suite, split on spaces (e.g. "--sp_graphs=^er --sp_f=64")
#   COMMIT               the commit to name in the report (default: git rev-parse, when .git came along)
# The suite starts no row after its deadline (what is left of the budget, less 45 s for the last
# row and the report); rows it did not reach are listed as skipped, so the JSON stays whole.
set -u
BUDGET=${1:-510}
OUT=${OUT:-/tmp/sparseport-bench-gpu}
B=build/cuda-bench
export SPARSEPORT_DATA_DIR=${SPARSEPORT_DATA_DIR:-.device-data}
MIN_TIME=${MIN_TIME:-0.01}
BENCH_ARGS=${BENCH_ARGS:-}
mkdir -p "$OUT"
say() { echo "== $* (at ${SECONDS}s)"; }

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "GPU: ${gpu:-none found}; driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
short=$(echo "$gpu" | tr 'A-Z' 'a-z' | grep -o '[a-z][0-9][0-9][0-9]*' | head -n 1)
short=${short:-gpu}
day=$(date -u +%Y-%m-%d)
n_files=$(ls "$SPARSEPORT_DATA_DIR"/*.mtx "$SPARSEPORT_DATA_DIR"/*.mtx.gz 2>/dev/null | wc -l)
echo "real matrices in $SPARSEPORT_DATA_DIR: $n_files"

say configure
if ! cmake --preset cuda -B "$B" -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_BUILD_TESTS=OFF \
    -DSPARSEPORT_BUILD_CLI=OFF >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log"
  exit 1
fi
say build
build_limit=$((BUDGET - SECONDS - 120))
((build_limit < 60)) && build_limit=60
if ! timeout "$build_limit" cmake --build "$B" --target sparseport_bench_cuda -j "$(nproc)" \
    >>"$OUT/build.log" 2>&1; then
  grep -E "error|FAILED" "$OUT/build.log" | head -n 30
  tail -n 20 "$OUT/build.log"
  exit 1
fi

deadline=$((BUDGET - SECONDS - 45))
# The full suite takes about 170 s on an H100: ~150 s for the graphs and real matrices, then ~20 s
# for the issue-4 target inputs, which run last (er:2000000:8e-6 for spmm, seg60m:* for
# segment_reduce). A shorter deadline skips them first.
if ((deadline < 200)); then
  echo "warning: the suite gets ${deadline} s but needs about 170-200 s on an H100; its last rows (the issue-4" \
    "target inputs) may be skipped. A budget of $((SECONDS + 245)) s or more avoids that."
fi
say "suite (rows start until ${deadline}s after the suite starts)"
cmd="SPARSEPORT_BENCH_SIZE=full SPARSEPORT_DATA_DIR=$SPARSEPORT_DATA_DIR SPARSEPORT_BENCH_DEADLINE_S=$deadline"
cmd="$cmd $B/benchmarks/sparseport_bench_cuda --benchmark_min_time=$MIN_TIME"
cmd="$cmd --benchmark_out=$OUT/cuda.json --benchmark_out_format=json $BENCH_ARGS"
# The hard stop is a backstop only: the deadline ends the run first (report.py reads a file cut
# short up to its last complete row all the same).
env SPARSEPORT_BENCH_SIZE=full SPARSEPORT_BENCH_DEADLINE_S="$deadline" \
  timeout $((deadline + 35)) "$B/benchmarks/sparseport_bench_cuda" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$OUT/cuda.json" --benchmark_out_format=json $BENCH_ARGS >"$OUT/bench.log" 2>&1
rc=$?
say "suite: rc $rc"
tail -n 5 "$OUT/bench.log"

if [ ! -s "$OUT/cuda.json" ]; then
  echo "no benchmark JSON was written; the end of $OUT/bench.log:"
  tail -n 30 "$OUT/bench.log"
  exit 1
fi
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
if [ -z "$commit" ]; then
  commit="unknown (no .git here; set COMMIT)"
elif [ -z "${COMMIT:-}" ] && ! git diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit with uncommitted changes"
fi
report="$OUT/$day-$short.md"
python3 benchmarks/report.py "$OUT/cuda.json" -o "$report" \
  --title "SparsePort CUDA benchmarks, $gpu, $day" \
  --command "benchmarks/run_gpu.sh $* (MIN_TIME=$MIN_TIME; commit $commit)" \
  --command "$cmd"
cat "$report"
echo
echo "== summary (the report is $report)"
python3 benchmarks/report.py "$OUT/cuda.json" --summary --title "Summary"
say done
exit $rc
