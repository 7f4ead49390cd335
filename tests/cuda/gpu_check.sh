#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on a GPU machine: configure and build for sm_90, run CTest, compute-sanitizer (memcheck,
# racecheck, initcheck, synccheck) on the whole CUDA test program, the cuda_timing table and the
# benchmark suite, inside a time budget so that a slow step cannot eat the others' logs. Logs go to
# $OUT/<step>.log; a summary is printed.
#   [CTEST_REGEX=...] [BENCH_ARGS=...] [SAN_*=...] tests/cuda/gpu_check.sh [BUDGET_SECONDS] [STEPS...]
#   (steps: configure build ctest repeat stress memcheck racecheck initcheck synccheck sanitize timing bench;
#   BUILD_TARGETS: the build step's ninja targets, default all; sanitize = all four tools;
#   TIMING_ARGS: cuda_timing's arguments (e.g. "--tc": only the tensor-core table; --bf16 is its old name);
#   CTEST_REGEX narrows the CTest step; bench runs sparseport_bench_cuda at full size on SPARSEPORT_DATA_DIR, default .device-data, with
#   BENCH_ARGS, and writes $OUT/cuda.json and the report $OUT/report.md; benchmarks/run_gpu.sh is
#   the same suite in a build of its own)
#   The sanitizer steps run each named tool once over every test of the program(s) in SAN_TESTS
#   (default tests/cuda/test_cuda; only the tests in SAN_EXCLUDE are left out, see below; a gtest
#   filter SAN_FILTER narrows it by hand), SAN_SHARDS (default 8) processes per tool, each one
#   GoogleTest shard of the program, the tools side by side
#   (SAN_PARALLEL=0: one after another), each under SAN_TIMEOUT seconds (default 300, cut to the
#   budget left); SAN_PRINT_LIMIT (default 100) caps the reports printed per tool. The programs run
#   with SPARSEPORT_TEST_SCALE=$SAN_TEST_SCALE (default 0.1): the tests with large inputs shrink
#   them by that factor, down to floors that keep each input past the kernels' thresholds (a
#   mega-row over several CTAs and chunks, hubs above the hub threshold; tests/cuda/cuda_test.hpp),
#   and the few whose size is the point keep it and thin their loops, since under the tools a
#   test's time follows the work its kernels do; SAN_TEST_SCALE=1 runs the full tests, as CTest. $OUT/<tool>.log holds each tool's log; one summary line per tool gives
#   its error (racecheck: hazard) count, the tests' result, the scale the programs read and the
#   wall seconds.
set -u
BUDGET=${1:-460}
shift || true
STEPS=${*:-configure build ctest sanitize timing}
OUT=${OUT:-/tmp/sparseport-gpu-check}
mkdir -p "$OUT"
B=build-gpu

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

# ---- compute-sanitizer ----------------------------------------------------------------------------
# Left out on purpose: tests/cuda/test_cuda_fault. Its CudaFault test makes a kernel read far
# outside B to check that the sticky fault poisons the context; memcheck would report exactly that
# deliberate illegal address (and the fault ends every later launch of the process). Its other
# tests (CudaErrors) map error codes on the host and launch nothing. test_cuda has no such test.
SAN_FAULT_NOTE="tests/cuda/test_cuda_fault left out: its CudaFault test reads outside B on purpose (the deliberate illegal address is what memcheck reports, and the sticky fault poisons the context); its CudaErrors tests launch nothing"
SAN_TESTS=${SAN_TESTS:-tests/cuda/test_cuda}
SAN_TIMEOUT=${SAN_TIMEOUT:-300}
SAN_PARALLEL=${SAN_PARALLEL:-1}
SAN_PRINT_LIMIT=${SAN_PRINT_LIMIT:-100}
SAN_FILTER=${SAN_FILTER:-}
SAN_SHARDS=${SAN_SHARDS:-8}
SAN_TEST_SCALE=${SAN_TEST_SCALE:-0.1}
# Also left out, by name (a negative filter: every other test runs, new ones included): the two
# tests whose cudaMalloc of twice the device / 512 GiB fails on purpose. compute-sanitizer reports
# every failing CUDA API call as an error ("Program hit cudaErrorMemoryAllocation ... on CUDA API
# call to cudaMalloc"), so they would count as findings. And the three CudaExternal tests that hold
# a stream shut with a waiting host function and look at what ran meanwhile (which stream an op
# was queued on, no wait for the whole device): a tool that serialises launches would block them
# on their own gate. Their kernels run under the tools in the other tests. SAN_EXCLUDE= runs them too.
SAN_EXCLUDE=${SAN_EXCLUDE-CudaResources.DenseOperandTwiceTheDeviceMemoryIsOutOfMemory:CudaResources.StructuralResultLargerThanTheDeviceIsOutOfMemoryNamingTheOp:CudaExternal.OpsRunOnTheLentStream:CudaExternal.WorkBeforeAChangeOfStreamComesFirst:CudaExternal.NothingWaitsForTheWholeDevice}
# A finding exits 9, so that a tool's rc tells it from a failed test (1) and a timeout (124).
SAN_EXITCODE=9
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
SAN_TOOLS=""
for t in memcheck racecheck initcheck synccheck; do
  case " $STEPS " in *" $t "* | *" sanitize "*) SAN_TOOLS="$SAN_TOOLS $t" ;; esac
done

# One tool over every program of SAN_TESTS, within `limit` seconds in all; writes $OUT/<tool>.log
# and "rc seconds" to $san_tmp/<tool>.
san_one() {
  local tool=$1 limit=$2 t0 rc=0 r bin left log="$OUT/$1.log"
  local -a opts=(--tool "$tool" --error-exitcode "$SAN_EXITCODE" --print-limit "$SAN_PRINT_LIMIT")
  # racecheck: one report per racy source line pair (the default "analysis", named so it shows);
  # initcheck keeps its default of not reporting allocations that are never used.
  [ "$tool" = racecheck ] && opts+=(--racecheck-report analysis)
  local -a filter=()
  if [ -n "$SAN_FILTER$SAN_EXCLUDE" ]; then
    filter=("--gtest_filter=${SAN_FILTER:-*}${SAN_EXCLUDE:+-$SAN_EXCLUDE}")
  fi
  t0=$(date +%s)
  : >"$log"
  for bin in $SAN_TESTS; do
    left=$((limit - ($(date +%s) - t0)))
    if ((left < 5)); then
      echo "== $bin: not run, the ${limit}s limit is spent" >>"$log"
      rc=124
      break
    fi
    echo "== $SAN ${opts[*]} $B/$bin ${filter[*]} (limit ${left}s, $SAN_SHARDS shards)" >>"$log"
    # GoogleTest's own sharding (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX): every test runs in
    # exactly one shard, each shard is one process under the tool, the shards side by side. The
    # tools' time goes into patching and checking each launch on the host, so processes on more
    # cores finish sooner; their logs are appended one after another below.
    # As under CTest: passive OpenMP workers (the programs share the CPU) and a decision cache of
    # each process's own, so that parallel runs neither spin nor read each other's decisions.
    local shard
    for ((shard = 0; shard < SAN_SHARDS; ++shard)); do
      # SPARSEPORT_TEST_RUNS=2: the determinism tests repeat each launch twice, not five times
      # (test_cuda_determinism.cpp); the repeats reach no new code under the tools.
      # SPARSEPORT_TEST_SCALE: large inputs shrunk (see the header).
      GTEST_TOTAL_SHARDS=$SAN_SHARDS GTEST_SHARD_INDEX=$shard OMP_WAIT_POLICY=passive SPARSEPORT_TEST_RUNS=2 \
        SPARSEPORT_TEST_SCALE="$SAN_TEST_SCALE" SPARSEPORT_CACHE_DIR="$B/sanitize-cache/$tool-$shard" \
        timeout -k 15 "$left" stdbuf -oL -eL "$SAN" "${opts[@]}" "$B/$bin" ${filter[@]+"${filter[@]}"} \
        >"$log.shard$shard" 2>&1 &
    done
    for ((shard = 0; shard < SAN_SHARDS; ++shard)); do
      wait -n
      r=$?
      ((r != 0 && rc == 0)) && rc=$r
    done
    for ((shard = 0; shard < SAN_SHARDS; ++shard)); do
      echo "== shard $shard of $SAN_SHARDS" >>"$log"
      cat "$log.shard$shard" >>"$log"
      rm -f "$log.shard$shard"
    done
  done
  echo "$rc $(($(date +%s) - t0))" >"$san_tmp/$tool"
}

# One line per tool: findings, the tests' result, the scale, rc and wall seconds; then its first reports.
san_summary() {
  local tool=$1 log="$OUT/$1.log" rc secs found tests scale
  read -r rc secs <"$san_tmp/$tool" || { rc='?'; secs='?'; }
  if [ "$tool" = racecheck ]; then
    # "RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)", once per program
    found=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)' "$log" |
      awk '{h += $3; gsub(/[(,]/, " "); e += $6; w += $8} END {if (NR) printf "%d hazards (%d errors, %d warnings)", h, e, w}')
  else
    # "ERROR SUMMARY: 0 errors", once per program
    found=$(grep -Eo 'ERROR SUMMARY: [0-9]+ errors?' "$log" | awk '{n += $3} END {if (NR) printf "%d errors", n}')
  fi
  [ -z "$found" ] && found="no summary (did not finish)"
  tests=$(grep -Eo '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$log" |
    awk '{n[$2] += $4} END {for (k in n) printf "%s%d %s", (s++ ? ", " : ""), n[k], tolower(k)}')
  # As each process printed it ("[ scale    ] SPARSEPORT_TEST_SCALE=0.1 (...)", cuda_test.hpp).
  scale=$(grep -Eo '^\[ scale +\] SPARSEPORT_TEST_SCALE=[^ ]+' "$log" | sed 's/.*=//' | sort -u | paste -sd, -)
  local why=""
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && why=" (timed out)"
  [ "$rc" = "$SAN_EXITCODE" ] && why=" (findings)"
  # Whose code each report is in: the kernel is named on the report's first line (racecheck: "...
  # at void cusparse::csrmv_v3_kernel<...>+0x3f40") or the next ("=========     at kernel+0x..",
  # memcheck, initcheck); cuSPARSE's kernels are the vendor's, not ours. Ours are printed.
  local counts
  counts=$(awk -v out="$san_tmp/$tool.ours" '
    function close_report() { if (head != "") { if (where ~ /cusparse::/) v++; else { o++; print head >> out } } head = "" }
    /^========= +(Invalid|Uninitialized|Race|Barrier|Program hit|Error|Warning|Unused|Leaked)/ {
      close_report(); head = $0; where = $0; next }
    head != "" && where == head { where = where " " $0; close_report() }
    END { close_report(); printf "%d %d", o, v }' "$log")
  printf '== %s: %s; reports in our kernels: %s, in cuSPARSE: %s; tests: %s; test scale %s; rc %s%s; %s s wall; log %s\n' \
    "$tool" "$found" "${counts% *}" "${counts#* }" "${tests:-none ran}" "${scale:-not printed (asked: $SAN_TEST_SCALE)}" \
    "$rc" "$why" "$secs" "$log"
  [ -f "$san_tmp/$tool.ours" ] && head -n 8 "$san_tmp/$tool.ours"
}

sanitize() {
  [ -n "$SAN_TOOLS" ] || return 0
  local tool left limit=$SAN_TIMEOUT bin
  left=$((BUDGET - SECONDS - 5))
  ((limit > left)) && limit=$left
  if ((limit < 10)); then
    echo "== sanitize:$SAN_TOOLS skipped, ${left}s left of the budget"
    return 0
  fi
  for bin in $SAN_TESTS; do
    [ -x "$B/$bin" ] || { echo "== sanitize: $B/$bin is not built (run the build step)"; return 0; }
  done
  san_tmp=$(mktemp -d)
  echo "== sanitize:$SAN_TOOLS on $SAN_TESTS, ${SAN_FILTER:+the tests $SAN_FILTER}${SAN_FILTER:-every test}; SPARSEPORT_TEST_SCALE=$SAN_TEST_SCALE; limit ${limit}s per tool, $([ "$SAN_PARALLEL" = 1 ] && echo "side by side" || echo "one after another"), started at ${SECONDS}s"
  echo "   $SAN_FAULT_NOTE"
  [ -n "$SAN_EXCLUDE" ] && echo "   also left out: $SAN_EXCLUDE (cudaMalloc fails on purpose: a CUDA API error to the sanitizer)"
  for tool in $SAN_TOOLS; do
    if [ "$SAN_PARALLEL" = 1 ]; then
      san_one "$tool" "$limit" &
    else
      left=$((BUDGET - SECONDS - 5))
      ((limit > left)) && limit=$left
      if ((limit < 10)); then
        echo "124 0" >"$san_tmp/$tool"
        echo "== $tool: not run, ${left}s left of the budget" >"$OUT/$tool.log"
        continue
      fi
      san_one "$tool" "$limit"
    fi
  done
  wait
  echo "== sanitize: done at ${SECONDS}s"
  for tool in $SAN_TOOLS; do san_summary "$tool"; done
  rm -rf "$san_tmp"
}

nvidia-smi -L 2>&1 | head -n 4
step configure 90 cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_BUILD_BENCHMARKS=ON
step build 300 ninja -C "$B" -j16 -k 0 ${BUILD_TARGETS:-}
step ctest 180 ctest --test-dir "$B" -j8 --timeout 150 --output-on-failure ${CTEST_REGEX:+-R "$CTEST_REGEX"}
# Issue 34's process checks. repeat: the CUDA, conformance, scheduler and exit tests under ctest -j8,
# each test up to REPEAT (default 5) times, as users run them (one process per test, in parallel).
# stress: STRESS_S seconds (default 120) of exit_after_op on random op families and endings, 8
# processes at a time (tests/tools/exit_stress.sh), then cache_stress on cuda for as long, 4 workers
# of 3 threads sharing one cache, some killed with SIGKILL.
step repeat 560 ctest --test-dir "$B" -j8 --timeout 150 --output-on-failure --repeat until-fail:"${REPEAT:-5}" \
  -R "${REPEAT_REGEX:-^Cuda|Conformance|Scheduler|CacheFault|Deterministic|ExitAfterOp}"
step stress $((2 * ${STRESS_S:-120} + 60)) bash -c "DURATION=${STRESS_S:-120} WORK=\$(mktemp -d) \\
  tests/tools/exit_stress.sh $B/tests/exit_after_op cuda random @RUN@; \\
  $B/tests/scheduler/cache_stress cuda ${STRESS_S:-120} 4 3 34"
sanitize
TAIL=200 step timing 130 "$B/tests/cuda/cuda_timing" ${TIMING_ARGS:-}
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
