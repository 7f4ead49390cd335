#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 19's runs on the one-GPU machine (no MPI installed there, no network), after
# tests/cuda/gpu_check.sh built build-gpu with the carried Open MPI active:
#   source benchmarks/dist/carry_mpi.sh activate .device-data/mpi
#   tests/cuda/gpu_check.sh 300 configure build && benchmarks/dist/gpu.sh [STEPS]
# Steps (default all): tests  the MPI tests on every backend incl. cuda (Dist.np1 through NCCL, a
#                             communicator of one; np2..np4 share the GPU: host-staged);
#                      cuda   run --dist --backend cuda, spmm sum/max at F = 64, 256 on rmat:20:16:
#                             P = 1 (nccl), P = 1 forced host-staged, P = 2 sharing the GPU
#                             (host-staged), and the single-process run for comparison;
#                      scale  strong/weak scaling of the openmp backend on the 16 cores, P = 1..8.
# Writes $OUT/dist-*.log, dist-cuda.jsonl, dist-scaling.jsonl and the tables (dist-*.md).
set -u
OUT=${OUT:-/tmp/dist-gpu}
B=${B:-build-gpu}
STEPS=${*:-tests cuda scale}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off (the device notes)
CLI=$B/src/cli/sparseport
MPIRUN=(${MPIEXEC:-mpirun} --oversubscribe --bind-to none --allow-run-as-root)
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

if has tests; then
  echo "== dist tests (cuda available: $($CLI devices 2>/dev/null | grep -c 'cuda:'))"
  (cd "$B" && timeout 400 ctest -L mpi --output-on-failure) >"$OUT/dist-tests.log" 2>&1
  grep -E "tests passed|Failed|distributed .*calls checked|FAILED" "$OUT/dist-tests.log" | head -20
fi

if has cuda; then
  echo "== run --dist --backend cuda"
  : >"$OUT/dist-cuda.jsonl"
  for reduce in sum max; do
    for F in 64 256; do
      common=(--op spmm --reduce "$reduce" --F "$F" --reps 20 --json --quiet rmat:20:16)
      "$CLI" run --backend cuda:0 "${common[@]}" | sed 's/^{/{"mode":"single",/' >>"$OUT/dist-cuda.jsonl"
      "${MPIRUN[@]}" -np 1 "$CLI" run --dist --backend cuda "${common[@]}" |
        sed 's/^{/{"mode":"dist",/' >>"$OUT/dist-cuda.jsonl"
      SPARSEPORT_DIST_TRANSPORT=host-staged "${MPIRUN[@]}" -x SPARSEPORT_DIST_TRANSPORT -np 1 "$CLI" run --dist \
        --backend cuda "${common[@]}" | sed 's/^{/{"mode":"dist",/' >>"$OUT/dist-cuda.jsonl"
      "${MPIRUN[@]}" -np 2 "$CLI" run --dist --backend cuda "${common[@]}" |
        sed 's/^{/{"mode":"dist",/' >>"$OUT/dist-cuda.jsonl"
    done
  done 2>"$OUT/dist-cuda.log"
  python3 - "$OUT/dist-cuda.jsonl" <<'PY' | tee "$OUT/dist-cuda.md"
import json, sys
print("| mode | ranks | transport | reduce | F | ms/call | comm ms | compute ms | halo MB | verified |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"| {r['mode']} | {r.get('ranks', 1)} | {r.get('transport', '-')} | {r['reduce']} | {r['F']} | {r['ms']:.3f} | "
          f"{r.get('comm_ms', 0):.3f} | {r.get('compute_ms', 0):.3f} | {r.get('halo_bytes', 0) / 1e6:.1f} | {r['verified']} |")
PY
fi

if has scale; then
  echo "== openmp scaling on $(nproc) cores"
  REPS=20 benchmarks/dist/scaling.sh "$CLI" "$OUT/dist-scaling.jsonl" "1 2 4 8" "$(nproc)" 2>"$OUT/dist-scaling.log"
  python3 benchmarks/dist/summarize.py "$OUT/dist-scaling.jsonl" | tee "$OUT/dist-scaling.md"
fi
