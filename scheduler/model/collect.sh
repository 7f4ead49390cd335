#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Collects the cost model's training records on this machine: the generated corpus
# (scheduler/model/corpus.py, generated graphs only) timed with `sparseport tune --collect`.
#   scheduler/model/collect.sh BUILD_DIR OUT_DIR SECONDS [cuda] [openmp] [kokkos] [kokkos-cuda]
# cuda:   every scheduled op on the GPU, F in 1..512, spmm sum and max (CPU core 0).
# openmp: spmm and sddmm on 2 threads pinned to cores 2-3 (taskset; OPENMP_CPUS=all: not pinned),
#         graphs up to 2M entries, at the same time as the GPU run (which uses one core), so the two
#         do not disturb each other.
# kokkos: spmm on the CPU corpus, the kokkos plugin of a Kokkos-OpenMP build (sddmm has one kokkos
#         variant: nothing to rank), THREADS (default 2) threads, alone: run it on a quiet machine,
#         not beside the others (kokkos-x86_64.json was collected so on the 2-core CPU).
# kokkos-cuda: spmm on the GPU corpus, the kokkos plugin of a Kokkos-CUDA build (build/kokkos-cuda,
#         tests/kokkos/gpu_check.sh builds it), F = 16, 32, 64, 128, sum and max (CPU core 0), the
#         whole SECONDS; its records go to OUT_DIR/kokkos.jsonl.gz, for the kokkos-sm90 model (issue
#         36: until then a Kokkos-CUDA scheduler takes the cuda-sm90 model, model.cpp's nearest class).
# Each backend stops starting graphs when SECONDS are spent; its records (every op) end up in
# OUT_DIR/<backend>.jsonl.gz. Logs: OUT_DIR/collect-<backend>.log.
set -u
B=${1:?build dir}
OUT=${2:?out dir}
SECONDS_LIMIT=${3:-400}
shift 3 || true
WHAT=${*:-cuda openmp}
S="$B/src/cli/sparseport"
mkdir -p "$OUT"
WORK=$(mktemp -d)
CORPUS=$WORK/corpus-gpu.txt
CORPUS_CPU=$WORK/corpus-cpu.txt
# Shuffled with a fixed seed: a deadline then cuts a sample spread over every family and size.
seeded() { openssl enc -aes-256-ctr -pass pass:sparseport -nosalt </dev/zero 2>/dev/null; }
python3 scheduler/model/corpus.py --max-nnz "${MAX_NNZ:-20000000}" | shuf --random-source=<(seeded) >"$CORPUS"
python3 scheduler/model/corpus.py --max-nnz "${MAX_NNZ_CPU:-2000000}" | shuf --random-source=<(seeded) >"$CORPUS_CPU"
echo "corpus: $(wc -l <"$CORPUS") graphs (GPU), $(wc -l <"$CORPUS_CPU") (CPU)"

# What has been collected, complete lines only, into OUT_DIR: at the end, and when a timeout stops
# this script first (a graph started before the deadline may run past it: a GPU call's collection
# under `timeout` lost every record that way, 2026-12-07). The runs still going keep writing to WORK.
save() {
  for f in "$WORK"/*.jsonl; do
    [ -e "$f" ] || continue
    echo "$f: $(wc -l <"$f") records"
    sed '$ { /}$/!d }' "$f" | gzip -c >"$OUT/$(basename "$f").gz"
  done
}
trap 'save; exit 124' TERM INT
# One process per op over the whole corpus (one context, each graph generated once per op), each
# with its share of the time; args: backend corpus seconds op F-list reduce-list [prefix...]
run_op() {
  local backend=$1 corpus=$2 secs=$3 op=$4 fs=$5 reduces=$6
  shift 6
  echo "== $backend $op F=$fs reduce=$reduces, ${secs}s"
  "$@" "$S" tune --collect "$WORK/$backend.jsonl" --graphs-from "$corpus" --time-limit "$secs" --op "$op" \
    --backend "$backend" --F "$fs" --reduce "$reduces" --reps 3 ${THREADS:+--threads $THREADS} </dev/null
}

share() { echo $((SECONDS_LIMIT * $1 / 100)); }
# OPENMP_CPUS: the cores the openmp run is pinned to (default 2,3, beside the GPU run on core 0);
# "all": not pinned (a 2-core machine collecting openmp alone).
PIN=(taskset -c "${OPENMP_CPUS:-2,3}")
[ "${OPENMP_CPUS:-}" = all ] && PIN=()
case " $WHAT " in *" openmp "*)
  (
    export OMP_PROC_BIND=false THREADS=2
    run_op openmp "$CORPUS_CPU" "$(share 70)" spmm 16,64,128 sum,max "${PIN[@]}"
    run_op openmp "$CORPUS_CPU" "$(share 25)" sddmm 16,64 sum "${PIN[@]}"
  ) >"$OUT/collect-openmp.log" 2>&1 &
  ;;
esac
case " $WHAT " in *" kokkos "*)
  (
    export OMP_PROC_BIND=false THREADS=${THREADS:-2}
    run_op kokkos "$CORPUS_CPU" "$SECONDS_LIMIT" spmm 16,64,128 sum,max
  ) >"$OUT/collect-kokkos.log" 2>&1
  ;;
esac
case " $WHAT " in *" kokkos-cuda "*)
  run_op kokkos "$CORPUS" "$SECONDS_LIMIT" spmm 16,32,64,128 sum,max taskset -c 0 >"$OUT/collect-kokkos-cuda.log" 2>&1
  ;;
esac
# CUDA_SPMM_ONLY=1: spmm alone for the whole SECONDS (new spmm variants' records, e.g. merge_path and
# vector_rows, which cuda-sm90.json has no trees of its own for: every cold decision times them).
case " $WHAT " in *" cuda "*)
  (
    if [ "${CUDA_SPMM_ONLY:-0}" = 1 ]; then
      run_op cuda "$CORPUS" "$SECONDS_LIMIT" spmm 1,4,16,32,64,128,256,512 sum,max taskset -c 0
    else
      run_op cuda "$CORPUS" "$(share 50)" spmm 1,4,16,32,64,128,256,512 sum,max taskset -c 0
      run_op cuda "$CORPUS" "$(share 20)" sddmm 16,32,64,128,256 sum taskset -c 0
      run_op cuda "$CORPUS" "$(share 9)" csr_attention 32,64 sum taskset -c 0
      run_op cuda "$CORPUS" "$(share 8)" segment_reduce 32,64 sum taskset -c 0
      run_op cuda "$CORPUS" "$(share 8)" gather_scatter 32,64 sum taskset -c 0
    fi
  ) >"$OUT/collect-cuda.log" 2>&1
  ;;
esac
wait
save
rm -rf "$WORK"
