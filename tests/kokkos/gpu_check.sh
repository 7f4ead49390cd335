#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kokkos plugin on Kokkos's CUDA space, in one call on a GPU machine (issue 22): build Kokkos +
# Kokkos Kernels 3.4 for CUDA from a source pack (scripts/kokkos.sh cuda), configure and build
# build/kokkos-cuda with both the cuda and the kokkos plugins, run CTest's kokkos and conformance
# tests, compute-sanitizer memcheck over the kokkos test programs and every kokkos variant of every
# op, and a benchmark (spmm summed by default, every op with BENCH_OPS=all) that puts, per op, input
# and F, the kokkos plugin's best variant beside the cuda plugin's best and, for spmm, Kokkos Kernels'
# spmv (the kokkos plugin's vendor baseline); tests/kokkos/bench_table.py prints the table.
#
#   tests/kokkos/gpu_check.sh OUT [PACK]
#
#   OUT   where the files go (at most 9): gpu_check.log (this script's output), kokkos.log,
#         build.log, ctest.log, memcheck.log, bench.jsonl (one `sparseport run --json` line per
#         backend, variant, input and F), bench_auto.jsonl (the kokkos scheduler's choice per input
#         and F), bench.csv (one line per op, input and F) and bench.err.log
#   PACK  the sources written by `scripts/kokkos.sh pack FILE` (default: $SPARSEPORT_KOKKOS_SOURCES,
#         else the newest .device-data/sparseport-kokkos-*.tar.*); not needed once Kokkos is built
#
# Every step is time-stamped, prints its elapsed seconds and runs under a limit cut to what is left
# of BUDGET; a failed step stops only the steps that need its result. Run from anywhere; it works in
# the repository root. Kokkos is built into ${SPARSEPORT_KOKKOS_CACHE:-build/kokkos-cuda-deps} and
# the library into build/kokkos-cuda: both are git-ignored build outputs that a warm machine keeps
# between calls, so a second call rebuilds nothing (the cache is deliberately not under
# .device-data/, which a call that carries .device-data replaces as a whole).
# Environment:
#   BUDGET               seconds for the whole script (default 570, for a 600 s limit)
#   STEPS                the steps to run (default "kokkos configure build ctest memcheck bench"; also
#                        "oracle": `sparseport tune --oracle --backend kokkos` over the real matrices at
#                        each BENCH_F, the scheduler's choice judged against every kokkos variant timed
#                        in the same process (bench's auto column compares two processes' timings, which
#                        on 20-60 us calls differ by more than 5 %); writes oracle.jsonl)
#   SPARSEPORT_DATA_DIR  real matrices (*.mtx, *.mtx.gz) for the benchmark (default .device-data)
#   BENCH_GRAPHS         generated inputs (default "rmat:18:16 mesh2d:1024:1024:0 er:262144:6e-5"; set but
#                        empty: none, only the real matrices)
#   BENCH_F              feature widths (default "32 64 128 256")
#   BENCH_REPS           timed calls per variant (default 20)
#   BENCH_REAL           0: no real matrices (default 1)
#   BENCH_OPS            the ops the bench step times (default "spmm", summed; "all": every op both
#                        plugins implement, issue 36's portability table; the ops without a feature
#                        width, csr_slice_rows(_dense), csr_induced_subgraph and csr_transpose, once per
#                        input)
#   BENCH_NATIVE         the native plugin beside the kokkos one (default cuda; openmp on a Kokkos-OpenMP
#                        build, where B must be set to it)
#   BENCH_KOKKOS_ENVS    settings the kokkos plugin is timed under, each NAME=VALUE[,NAME=VALUE] or - for
#                        none (default -): an A/B of a switch in one build, e.g. "- SPARSEPORT_KOKKOS_GROUPS=0";
#                        the table then has a block per setting
#   B                    the build directory (default build/kokkos-cuda)
#   SPARSEPORT_KOKKOS_ARCH  as for scripts/kokkos.sh (default HOPPER90)
set -u
OUT=${1:?usage: tests/kokkos/gpu_check.sh OUT [PACK]}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec > >(tee "$OUT/gpu_check.log") 2>&1

BUDGET=${BUDGET:-570}
STEPS=${STEPS:-kokkos configure build ctest memcheck bench}
B=${B:-build/kokkos-cuda}
JOBS=$(nproc)
export PATH="$PATH:/usr/local/cuda/bin"
export SPARSEPORT_KOKKOS_CACHE=${SPARSEPORT_KOKKOS_CACHE:-$PWD/build/kokkos-cuda-deps}
PACK=${2:-${SPARSEPORT_KOKKOS_SOURCES:-}}
if [ -z "$PACK" ]; then
  PACK=$(ls -t .device-data/sparseport-kokkos-*.tar.* 2>/dev/null | head -n 1)
fi
DATA=${SPARSEPORT_DATA_DIR:-.device-data}
BENCH_GRAPHS=${BENCH_GRAPHS-rmat:18:16 mesh2d:1024:1024:0 er:262144:6e-5}
BENCH_F=${BENCH_F:-32 64 128 256}
BENCH_REPS=${BENCH_REPS:-20}
BENCH_REAL=${BENCH_REAL:-1}
BENCH_OPS=${BENCH_OPS:-spmm}
[ "$BENCH_OPS" = all ] && BENCH_OPS="spmm sddmm segment_reduce scatter_reduce gather_scatter csr_attention csr_slice_rows csr_slice_rows_dense csr_induced_subgraph csr_transpose"
BENCH_NATIVE=${BENCH_NATIVE:-cuda}
BENCH_KOKKOS_ENVS=${BENCH_KOKKOS_ENVS:--}
CLI=$B/src/cli/sparseport
# For the steps that run as shell functions in a child bash (run_step).
export OUT B CLI JOBS PACK DATA BENCH_GRAPHS BENCH_F BENCH_REPS BENCH_REAL BENCH_OPS BENCH_NATIVE BENCH_KOKKOS_ENVS

# The budget as a wall-clock deadline, so that the steps run in child shells (timeout starts a new
# bash for the shell functions below) see the same one.
export DEADLINE=$(($(date +%s) + BUDGET))
stamp() { printf '[%s +%4ds]' "$(date -u +%H:%M:%S)" "$SECONDS"; }
say() { echo "$(stamp) $*"; }
wanted() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
left() { echo $((DEADLINE - $(date +%s))); }
declare -A RESULT=()
ORDER=()

# run_step NAME CAP LOG COMMAND...: COMMAND (a program or one of the exported functions below)
# under min(CAP, what is left less RESERVE) seconds, output appended to LOG (empty: this output);
# records and prints rc and elapsed seconds. Returns COMMAND's rc.
RESERVE=0
# The seconds a step leaves to the steps after it: R where one of them (the rest of the arguments)
# is asked for, else 0, so that a call of "kokkos configure build" alone gives the build what is
# left of BUDGET (2026-12-06: a fixed 150 s reserve cut such a build at 212 s of a 400 s budget).
reserve_for() {
  local r=$1 s
  shift
  for s in "$@"; do wanted "$s" && { echo "$r"; return; }; done
  echo 0
}
run_step() {
  local name=$1 cap=$2 log=$3 rc t0 limit
  shift 3
  limit=$(($(left) - RESERVE))
  ((cap < limit)) && limit=$cap
  ORDER+=("$name")
  if ((limit < 10)); then
    RESULT[$name]="skipped: ${limit}s left of the budget"
    say "== $name: skipped, ${limit}s left of the budget"
    return 125
  fi
  say "== $name: start (limit ${limit}s)${log:+, log $log}"
  t0=$SECONDS
  if declare -F "$1" >/dev/null; then
    set -- bash -c '"$@"' "$1" "$@"
  fi
  if [ -n "$log" ]; then
    timeout -k 10 "$limit" "$@" >>"$log" 2>&1
  else
    timeout -k 10 "$limit" "$@"
  fi
  rc=$?
  local why=""
  ((rc == 124 || rc == 137)) && why=" (timed out after ${limit}s)"
  RESULT[$name]="rc $rc$why, $((SECONDS - t0))s"
  say "== $name: rc $rc$why, $((SECONDS - t0))s"
  return $rc
}
skip() {  # skip NAME WHY
  ORDER+=("$1")
  RESULT[$1]="not run: $2"
  say "== $1: not run: $2"
}

say "gpu_check (kokkos on CUDA): budget ${BUDGET}s, steps: $STEPS, $JOBS cores, out $OUT"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>&1 |
  head -n 2
echo "nvcc $(nvcc --version 2>/dev/null | grep -o 'V[0-9][0-9.]*' | head -n 1); $(cmake --version | head -n 1);" \
  "$(g++ --version | head -n 1); ninja $(ninja --version 2>/dev/null || echo missing)"
changes=$(git status --porcelain 2>/dev/null | grep -q . && echo ' + local changes')
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$changes"

# --- Kokkos + Kokkos Kernels for CUDA -------------------------------------------------------------
prefix=""
if wanted kokkos; then
  # The prefix is kokkos.sh's last stdout line; its progress (stderr) goes to the log.
  kokkos_build() {
    if [ -n "$PACK" ]; then
      SPARSEPORT_KOKKOS_SOURCES="$PACK" SPARSEPORT_KOKKOS_JOBS=$JOBS scripts/kokkos.sh cuda
    else
      SPARSEPORT_KOKKOS_JOBS=$JOBS scripts/kokkos.sh cuda
    fi 2>>"$OUT/kokkos.log" >"$OUT/kokkos.prefix"
  }
  export -f kokkos_build
  echo "pack: ${PACK:-none (the Kokkos install in $SPARSEPORT_KOKKOS_CACHE, or the orig tarball there)}"
  : >"$OUT/kokkos.log"
  RESERVE=$(reserve_for 200 configure build ctest memcheck bench oracle) run_step kokkos 360 "" kokkos_build
  rc=$?
  prefix=$(tail -n 1 "$OUT/kokkos.prefix" 2>/dev/null)
  rm -f "$OUT/kokkos.prefix"
  tail -n 4 "$OUT/kokkos.log"
  if ((rc != 0)); then
    prefix=""
    # The logs of the step that failed, from the cache, for the report.
    for f in "$SPARSEPORT_KOKKOS_CACHE"/build/*-cuda/*.log; do
      [ -f "$f" ] && { echo "==== $f (last 60 lines)"; tail -n 60 "$f"; } >>"$OUT/kokkos.log"
    done
  fi
else
  prefix=$(ls -d "$SPARSEPORT_KOKKOS_CACHE"/*-cuda 2>/dev/null | head -n 1)
  [ -n "$prefix" ] && say "Kokkos prefix (step kokkos not run): $prefix"
fi

# --- the library with both plugins ----------------------------------------------------------------
# Kokkos_DIR and KokkosKernels_DIR too: CMake keeps the folders it found in an existing build tree's
# cache, and Kokkos_ROOT alone would not move them to another prefix.
configured=0
if wanted configure; then
  if [ -n "$prefix" ]; then
    RESERVE=$(reserve_for 150 build ctest memcheck bench oracle) run_step configure 90 "$OUT/build.log" cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSPARSEPORT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_WERROR=ON -DKokkos_ROOT="$prefix" \
      -DKokkos_DIR="$prefix/lib/cmake/Kokkos" -DKokkosKernels_DIR="$prefix/lib/cmake/KokkosKernels" &&
      configured=1
    grep -E "backend (cuda|kokkos)|  kokkos:|CMake Error" "$OUT/build.log" | head -n 8
  else
    skip configure "no Kokkos prefix (step kokkos failed or did not run)"
  fi
elif [ -f "$B/build.ninja" ]; then
  configured=1
fi

if wanted build; then
  if ((configured)); then
    # -k 0: a target that fails does not stop the others, so the tests that did build still run.
    RESERVE=$(reserve_for 150 ctest memcheck bench oracle) run_step build 450 "$OUT/build.log" cmake --build "$B" --parallel "$JOBS" -- -k 0
    grep -E "FAILED:|error:|error #" "$OUT/build.log" | head -n 20
    # The slowest compile steps (ninja's log: start and end ms), the build's long poles: an A/B that
    # instantiated every type twice took kernels/kokkos/spmm.cpp to about ten minutes (2026-12-05).
    # tests/kokkos/device_compile.sh times a kokkos file before a device call. The log keeps every
    # build's lines: the last one of each output counts.
    [ -f "$B/.ninja_log" ] && awk 'NR > 1 { t[$4] = ($2 - $1) / 1000 } END { for (o in t) printf "%7.1f s  %s\n", t[o], o }' \
      "$B/.ninja_log" | sort -rn | head -n 5
  else
    skip build "not configured"
  fi
fi

# --- tests ---------------------------------------------------------------------------------------
if wanted ctest; then
  if [ -x "$B/tests/test_conformance" ] || [ -x "$B/tests/kokkos/test_kokkos" ]; then
    RESERVE=$(reserve_for 120 memcheck bench oracle) run_step ctest 200 "$OUT/ctest.log" ctest --test-dir "$B" -R 'Kokkos|Conformance' -j 8 \
      --timeout 120 --output-on-failure
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Not Run" "$OUT/ctest.log" | head -n 20
  else
    skip ctest "$B/tests/test_conformance and tests/kokkos/test_kokkos are not built"
  fi
fi

# compute-sanitizer memcheck: the kokkos test programs (initialisation, memory space, finalisation
# at exit), then every kokkos variant of every op through the CLI on a small power-law graph (the
# CLI stages the operands in device memory and checks each result against the reference), which
# puts each of the plugin's kernels and Kokkos Kernels' spmv under the tool. A finding exits 9.
memcheck_all() {
  local san rc=0 r op
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  [ -x "$san" ] || { echo "==== compute-sanitizer not found (PATH, /usr/local/cuda/bin)"; return 127; }
  local -a tool=("$san" --tool memcheck --error-exitcode 9 --print-limit 50)
  echo "==== each program below runs under: ${tool[*]} (a finding exits 9)"
  for t in tests/kokkos/test_kokkos tests/kokkos/test_kokkos_own_init; do
    echo "==== memcheck: $B/$t"
    "${tool[@]}" "$B/$t"
    r=$?
    echo "==== rc $r"
    ((r != 0 && rc == 0)) && rc=$r
  done
  for op in spmm:sum spmm:max sddmm: segment_reduce:sum scatter_reduce:sum gather_scatter:sum csr_attention: \
    csr_slice_rows: csr_slice_rows_dense: csr_induced_subgraph: csr_transpose:; do
    local -a extra=()
    [ -n "${op#*:}" ] && extra=(--reduce "${op#*:}")
    echo "==== memcheck: $CLI run --op ${op%%:*} ${extra[*]} --backend kokkos --variant all --F 40 --reps 1 rmat:12:8"
    "${tool[@]}" "$CLI" run --op "${op%%:*}" "${extra[@]}" --backend kokkos --variant all --F 40 --reps 1 -q rmat:12:8
    r=$?
    echo "==== rc $r"
    ((r != 0 && rc == 0)) && rc=$r
  done
  return $rc
}
export -f memcheck_all
if wanted memcheck; then
  if [ -x "$B/tests/kokkos/test_kokkos" ] && [ -x "$CLI" ]; then
    RESERVE=$(reserve_for 90 bench oracle) run_step memcheck 150 "$OUT/memcheck.log" memcheck_all
    grep -E "^==== |ERROR SUMMARY|^========= (Invalid|Program hit|Error)|Device not supported" "$OUT/memcheck.log" |
      head -n 60
  else
    skip memcheck "$B/tests/kokkos/test_kokkos or $CLI is not built"
  fi
fi

# --- benchmark: each op of BENCH_OPS, kokkos vs the native plugin (vs Kokkos Kernels for spmm) ----
# `sparseport run --variant all --json` times every variant of one backend on one input (a warm-up,
# then BENCH_REPS calls, each timed with steady_clock up to the backend's synchronize; the median
# is `ms`) and checks each result against the reference. Per op, input and F the two backends run one
# after the other on the same operands (generators and operands are seeded: --seed 1); for spmm the
# cuda plugin's variants include cuSPARSE (spmm.cusparse), the kokkos plugin's Kokkos Kernels' spmv
# (spmm.kokkoskernels): a row is a vendor's where the JSON names it `vendor_variant`. spmm is timed
# summed. No row starts after the budget's last 15 s.
bench_all() {
  local g f b op fs last
  local -a red args
  last=$(mktemp)
  local -a graphs
  read -r -a graphs <<<"$BENCH_GRAPHS"
  if [ "$BENCH_REAL" = 1 ] && [ -d "$DATA" ]; then
    # Real matrices, smallest file first, so that a short budget still covers many.
    while IFS= read -r g; do graphs+=("$g"); done < <(ls -Sr "$DATA"/*.mtx "$DATA"/*.mtx.gz 2>/dev/null)
  fi
  echo "inputs: ${graphs[*]}; ops: $BENCH_OPS; native: $BENCH_NATIVE" >&2
  for g in "${graphs[@]}"; do
    for op in $BENCH_OPS; do
      case $op in
        csr_slice_rows | csr_slice_rows_dense | csr_induced_subgraph | csr_transpose) fs=0 ;;  # no F
        *) fs=$BENCH_F ;;
      esac
      red=()
      [ "$op" = spmm ] && red=(--reduce sum)
      for f in $fs; do
        args=("${red[@]}")
        [ "$f" != 0 ] && args+=(--F "$f")
        for b in "$BENCH_NATIVE" $(for e in $BENCH_KOKKOS_ENVS; do echo "kokkos@$e"; done); do
          if (($(left) < 15)); then
            echo "budget spent: stopped before $op $b $g F=$f" >&2
            rm -f "$last"
            return 0
          fi
          echo "== $op $b $g F=$f" >&2
          # kokkos@SETTING: the kokkos plugin under the environment SETTING (NAME=VALUE[,NAME=VALUE]; -:
          # none), tagged in its JSON lines as "kokkos_env" for bench_table.py.
          local setting=${b#kokkos@} backend=${b%%@*}
          local -a envs=()
          [ "$backend" = kokkos ] && [ "$setting" != - ] && IFS=, read -r -a envs <<<"$setting"
          timeout -k 5 $(($(left) - 5)) env "${envs[@]}" "$CLI" run --op "$op" "${args[@]}" --backend "$backend" \
            --variant all --reps "$BENCH_REPS" --json -q "$g" >"$last" ||
            echo "rc $? for $op $b $g F=$f" >&2
          if [ "$backend" = kokkos ]; then
            sed "s/^{/{\"kokkos_env\":\"$setting\",/" "$last"
          else
            cat "$last"
          fi >>"$OUT/bench.jsonl"
        done
        # The scheduler's choice among the kokkos variants (no --variant: probe, guardrail against
        # the vendor where there is one, decision cache), timed like the rest: is it the best?
        timeout -k 5 $(($(left) - 5)) "$CLI" run --op "$op" "${args[@]}" --backend kokkos \
          --reps "$BENCH_REPS" --json -q "$g" >>"$OUT/bench_auto.jsonl" ||
          echo "rc $? for $op kokkos auto $g F=$f" >&2
      done
    done
  done
  rm -f "$last"
}
bench_table() {
  python3 "$PWD/tests/kokkos/bench_table.py" "$OUT/bench.jsonl" "$OUT/bench.csv" "$OUT/bench_auto.jsonl" "$BENCH_NATIVE"
}
export -f bench_all left
if wanted bench; then
  if [ -x "$CLI" ]; then
    : >"$OUT/bench.jsonl"
    : >"$OUT/bench_auto.jsonl"
    RESERVE=$(reserve_for 10 oracle) run_step bench 100000 "$OUT/bench.err.log" bench_all
    tail -n 3 "$OUT/bench.err.log"
    [ -s "$OUT/bench.jsonl" ] && bench_table
  else
    skip bench "$CLI is not built"
  fi
fi

# --- the scheduler on kokkos, judged in one process ------------------------------------------------
oracle_all() {
  local f
  local -a mats=()
  while IFS= read -r g; do mats+=("$g"); done < <(ls -Sr "$DATA"/*.mtx "$DATA"/*.mtx.gz 2>/dev/null)
  for f in $BENCH_F; do
    if (($(left) < 20)); then
      echo "budget spent: stopped before F=$f" >&2
      return 0
    fi
    timeout -k 5 $(($(left) - 5)) "$CLI" tune --oracle --op spmm --backend kokkos --F "$f" --reps 10 --json "${mats[@]}" \
      >>"$OUT/oracle.jsonl" || echo "rc $? for the oracle at F=$f" >&2
  done
}
export -f oracle_all
if wanted oracle; then
  if [ -x "$CLI" ]; then
    : >"$OUT/oracle.jsonl"
    RESERVE=5 run_step oracle 100000 "$OUT/oracle.err.log" oracle_all
    tail -n 3 "$OUT/oracle.err.log"
  else
    skip oracle "$CLI is not built"
  fi
fi

say "== summary"
for s in "${ORDER[@]}"; do printf '  %-10s %s\n' "$s" "${RESULT[$s]}"; done
ls -l "$OUT" | tail -n +2
