#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The scheduler's evaluation on real matrices the model never trained on (DATA, default
# .device-data: a copy of ../shared/data), written to OUT:
#   cuda-oracle.jsonl   sparseport tune --oracle --json: spmm F = 32, 64, 128 and sddmm F = 64 (cuda)
#   openmp-oracle.jsonl the same for openmp spmm F = 64 on 2 threads pinned to cores 2-3 (in parallel)
#   real.jsonl.gz       sparseport tune --collect on the same matrices, cuda and openmp (features and
#                       every variant's time) for the offline model-alone and transfer evaluation
#                       (family "real": never trained on)
#   hit.log             a cache hit in a new process on a 10M-entry graph (decide_ms of `sparseport run`)
#   scheduler/model/evaluate.sh BUILD_DIR OUT_DIR [DATA]
set -u
B=${1:?build dir}
OUT=${2:?out dir}
DATA=${3:-.device-data}
S="$B/src/cli/sparseport"
mkdir -p "$OUT"
G=$(ls "$DATA"/*.mtx.gz)
W=$(mktemp -d)
(
  export OMP_PROC_BIND=false
  taskset -c 2,3 "$S" tune --oracle --json --op spmm --backend openmp --threads 2 --F 64 --reps 5 $G \
    >"$OUT/openmp-oracle.jsonl" 2>"$W/openmp.err"
  taskset -c 2,3 "$S" tune --collect "$W/real-openmp.jsonl" --op spmm --backend openmp --threads 2 --F 64 --reps 3 $G \
    2>>"$W/openmp.err"
) &
for F in 32 64 128; do
  taskset -c 0 "$S" tune --oracle --json --op spmm --backend cuda --F $F --reps 5 $G >>"$OUT/cuda-oracle.jsonl" 2>>"$W/cuda.err"
done
taskset -c 0 "$S" tune --oracle --json --op sddmm --backend cuda --F 64 --reps 5 $G >>"$OUT/cuda-oracle.jsonl" 2>>"$W/cuda.err"
taskset -c 0 "$S" tune --collect "$W/real.jsonl" --op spmm --backend cuda --F 32,64,128 --reps 3 $G 2>>"$W/cuda.err"
taskset -c 0 "$S" tune --collect "$W/real.jsonl" --op sddmm --backend cuda --F 64 --reps 3 $G 2>>"$W/cuda.err"
# A cache hit in a new process: the first run decides (cold) and caches, the next three replay.
{
  C=$(mktemp -d)
  for i in 1 2 3 4; do
    SPARSEPORT_CACHE_DIR=$C taskset -c 0 "$S" run --op spmm --backend cuda --F 64 --reps 3 --json rmat:20:10 2>&1 |
      grep -o '"variant":"auto"[^}]*' | grep -o '"chosen":"[^"]*"\|"decision":"[a-z ]*\|"decide_ms":[0-9.e+-]*\|"nnz":[0-9]*' | tr '\n' ' '
    echo
  done
} >"$OUT/hit.log" 2>&1
wait
cat "$W/openmp.err" "$W/cuda.err" | grep -v '^collected' | tail -n 20 >"$OUT/eval-errors.log"
cat "$W/real.jsonl" "$W/real-openmp.jsonl" | gzip -c >"$OUT/real.jsonl.gz"
rm -rf "$W"
