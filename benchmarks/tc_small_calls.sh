#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 33, step 1 of docs/tc_window_next.md: where a small tensor-core SpMM call's time goes. On
# the small skewed graphs a bf16 spmm.tc_window call takes ~25 us at every F, where FlashSparse
# takes 2-3x less; this puts each kernel of such a call (the value refresh, the scratch memsets, the
# main kernel) beside the call's time seen by the host, so the fixed part can be told apart from
# the gathers.
#
#   B=build-gpu benchmarks/tc_small_calls.sh OUT [MATRIX...]
#
#   B        a build with the cuda plugin (src/cli/sparseport, tests/cuda/cuda_timing)
#   OUT      where the logs go: run.jsonl (host time per call, one `sparseport run --json` line per
#            matrix, variant and F), ncu.csv (each kernel's duration, 5 timed calls per run) and
#            timing.log (cuda_timing --tc: GPU time per call behind a ballast, F = 16..128)
#   MATRIX   default: email-Enron, facebook-combined and wiki-Vote (the graphs of FlashSparse's
#            widest lead) from SPARSEPORT_DATA_DIR, else .device-data
#
# Every result is checked against the float64 reference by `sparseport run`. Nsight Compute runs
# with --clock-control none (the GPU's own clocks, as in the timed runs; never changed here).
# About 2 minutes on an H200 for the three default matrices.
#   NCU_METRICS  more Nsight Compute metrics per kernel, comma-separated (printed beside the time as
#            medians), e.g. lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum for the split
#            windows' scratch reductions (docs/tc_window_next.md)
#   TC_TIMING=0  no cuda_timing (a second run of one build with SPARSEPORT_TC_PART_BLOCKS set:
#            cuda_timing --tc times every part length by itself)
set -u
OUT=${1:?usage: B=BUILD benchmarks/tc_small_calls.sh OUT [MATRIX...]}
shift
mkdir -p "$OUT"
B=${B:-build-gpu}
DATA=${SPARSEPORT_DATA_DIR:-.device-data}
CLI=$B/src/cli/sparseport
export SPARSEPORT_CUDA_TENSOR_CORES=1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mats=("$@")
if [ ${#mats[@]} -eq 0 ]; then
  for g in email-Enron facebook-combined wiki-Vote; do
    f=$(ls "$DATA/$g".mtx* 2>/dev/null | head -n 1)
    [ -n "$f" ] && mats+=("$f") || echo "tc_small_calls: $g not in $DATA, left out" >&2
  done
fi
[ -x "$CLI" ] || { echo "tc_small_calls: $CLI is not built" >&2; exit 2; }
: >"$OUT/run.jsonl"
: >"$OUT/ncu.csv"
for m in "${mats[@]}"; do
  for F in 32 128; do
    # Host time per call: tc_window in bf16 beside the CUDA-core bf16 and cuSPARSE float32 rows.
    for spec in "bf16 spmm.tc_window" "bf16 all" "f32 spmm.cusparse"; do
      read -r dt v <<<"$spec"
      timeout 120 "$CLI" run --op spmm --backend cuda --dtype "$dt" --variant "$v" --F "$F" --reps 50 --json -q "$m" \
        >>"$OUT/run.jsonl" 2>>"$OUT/run.err" || echo "rc $? for $m F=$F $dt $v" >&2
    done
    # Each kernel of 1 warm-up + 5 timed calls of tc_window (the warm-up builds the format).
    if [ -x "$NCU" ]; then
      echo "## $m F=$F" >>"$OUT/ncu.csv"
      timeout 180 "$NCU" --clock-control none --metrics "gpu__time_duration.sum${NCU_METRICS:+,$NCU_METRICS}" --csv --print-units base \
        "$CLI" run --op spmm --backend cuda --dtype bf16 --variant spmm.tc_window --F "$F" --reps 5 -q "$m" \
        >>"$OUT/ncu.csv" 2>>"$OUT/ncu.err" || echo "ncu rc $? for $m F=$F" >&2
    fi
  done
done
if [ "${TC_TIMING:-1}" != 0 ]; then
  timeout 240 "$B/tests/cuda/cuda_timing" --tc "${mats[@]}" >"$OUT/timing.log" 2>&1 || echo "cuda_timing rc $?" >&2
fi
# The ncu lines per kernel name: count and median duration (us), per matrix and F.
python3 "$(dirname "$0")/ncu_summary.py" "$OUT/ncu.csv"
