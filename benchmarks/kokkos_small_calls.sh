#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 36: where a small kokkos SpMM call's time goes on a GPU, beside the cuda plugin's. On the
# small skewed graphs (10k-400k entries) the kokkos plugin's best runs at 0.5-0.7x the cuda plugin's
# best; Nsight Compute puts each kernel of a call (hub_split's init, main and finish; team_rows) with
# its launch shape, registers and the share of the SMs' warp slots it keeps busy beside the cuda
# plugin's hub_split. First run on an H200 by hand (benchmarks/results/2026-12-04-h200-kokkos-loads-in-flight.md
# section 1): the kokkos hub_split kernel 38 us at 7 % of the warp slots, the cuda plugin's 20 us at 37 %.
#
#   B=build/kokkos-cuda benchmarks/kokkos_small_calls.sh OUT [MATRIX...]
#
#   B        a build with the cuda and kokkos plugins (src/cli/sparseport)
#   OUT      where the logs go: ncu.csv (one block per matrix, F, backend and variant; 1 warm-up + 3
#            timed calls each) and summary.txt (per kernel: calls, median time, grid x block,
#            registers, warps active)
#   MATRIX   default: facebook-combined, polblogs and cora from SPARSEPORT_DATA_DIR, else .device-data
#   F        env, the feature widths (default "32 128")
#   KOKKOS_ENV  env, extra settings for the kokkos runs (NAME=VALUE ...; e.g. SPARSEPORT_KOKKOS_GROUPS=0)
#
# Nsight Compute runs with --clock-control none (the GPU's own clocks; never changed here). About a
# minute on an H200 for the defaults.
set -u
OUT=${1:?usage: B=BUILD benchmarks/kokkos_small_calls.sh OUT [MATRIX...]}
shift
mkdir -p "$OUT"
B=${B:-build/kokkos-cuda}
DATA=${SPARSEPORT_DATA_DIR:-.device-data}
CLI=$B/src/cli/sparseport
FS=${F:-32 128}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
MET=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
mats=("$@")
if [ ${#mats[@]} -eq 0 ]; then
  for g in facebook-combined polblogs cora; do
    f=$(ls "$DATA/$g".mtx* 2>/dev/null | head -n 1)
    [ -n "$f" ] && mats+=("$f") || echo "kokkos_small_calls: $g not in $DATA, left out" >&2
  done
fi
[ -x "$CLI" ] || { echo "kokkos_small_calls: $CLI is not built" >&2; exit 2; }
[ -x "$NCU" ] || { echo "kokkos_small_calls: no ncu" >&2; exit 2; }
: >"$OUT/ncu.csv"
for m in "${mats[@]}"; do
  for f in $FS; do
    for spec in "kokkos spmm.hub_split" "kokkos spmm.team_rows" "cuda spmm.hub_split"; do
      read -r b v <<<"$spec"
      env_args=()
      [ "$b" = kokkos ] && read -r -a env_args <<<"${KOKKOS_ENV:-}"
      echo "## $(basename "$m") F=$f $b $v" >>"$OUT/ncu.csv"
      timeout 120 env "${env_args[@]}" "$NCU" --clock-control none --metrics "$MET" --csv --print-units base \
        "$CLI" run --op spmm --backend "$b" --variant "$v" --F "$f" --reps 3 -q "$m" >>"$OUT/ncu.csv" 2>>"$OUT/ncu.err" ||
        echo "ncu rc $? for $m F=$f $b $v" >&2
    done
  done
done
python3 "$(dirname "$0")/ncu_summary.py" --op-only "$OUT/ncu.csv" | tee "$OUT/summary.txt"
