#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 37's confirming run: weak scaling from a base that is already past the L3. On the GPU
# machine's 16 cores (one NVIDIA host, 1 NUMA node, 300 MiB L3), 1 x 4 -> 4 x 4 ranks scaled at
# 0.49-0.55, and one process with the same work, 1 x 4 -> 1 x 16 threads, at 0.38-0.58: the loss
# looked like the node's (2026-12-04-h200-tc-depth2-flashsparse-weak-scaling.md). Those runs' 1 x 4
# base touched ~170 MB, inside the L3, and 4 x 4's did not. This run starts past it: if the
# hypothesis holds, efficiency from this base is much higher, and bounded by the copy bandwidth the
# node gives 16 threads against 4.
#
#   benchmarks/dist/weak_past_l3.sh CLI OUT
#
#   CLI  a sparseport built with MPI (a CPU build is enough: the openmp backend runs)
#   OUT  a folder: weak.jsonl (scaling.sh's lines, one per run as it ends), one.jsonl (the one-process
#        controls), bandwidth.txt (copy GB/s at 1, 4, 8 and 16 threads, torch), progress.log
#
# Graphs, F = 64, spmm sum, float32. Per rank at P = 1, 2, 4 (4 threads a rank):
#   band:2097152:16 (B and C 537 MB each, 4x the L3 together) -> band:4194304:16 -> band:8388608:16
#   rmat:20:16 -> rmat:21:16 -> rmat:22:16 (rmat:23 is left out: its serial float64 reference did not
#   finish inside a 600 s call)
# Each result is verified against the single-process reference (serial float64: most of the time).
# About 5 minutes on the GPU machine. With the carried Open MPI:
#   source benchmarks/dist/carry_mpi.sh activate .device-data/mpi
set -u
CLI=${1:?usage: benchmarks/dist/weak_past_l3.sh CLI OUT}
OUT=${2:?usage: benchmarks/dist/weak_past_l3.sh CLI OUT}
mkdir -p "$OUT"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/progress.log"; }

log "copy bandwidth (torch, 1 GiB float32 copies)"
python3 - >"$OUT/bandwidth.txt" 2>&1 <<'EOF' || log "no torch: bandwidth left out"
import time, torch
x = torch.empty(1 << 28, dtype=torch.float32).uniform_()
y = torch.empty_like(x)
for t in (1, 4, 8, 16):
    torch.set_num_threads(t)
    y.copy_(x)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        y.copy_(x)
        times.append(time.perf_counter() - t0)
    best = min(times)
    print(f"threads {t:2d}: {2 * x.numel() * 4 / best / 1e9:6.1f} GB/s (read + write)", flush=True)
EOF
cat "$OUT/bandwidth.txt"

: >"$OUT/weak.jsonl"
for family in band rmat; do
  if [ "$family" = band ]; then
    graphs="band:2097152:16 band:4194304:16 band:8388608:16"
  else
    graphs="rmat:20:16 rmat:21:16 rmat:22:16"
  fi
  log "weak scaling, $family: $graphs"
  KINDS=weak WEAK_THREADS=4 WEAK_GRAPHS="$graphs" REPS=10 timeout 400 "$here/scaling.sh" "$CLI" "$OUT/weak-$family.jsonl" \
    "1 2 4" 16 >>"$OUT/progress.log" 2>&1 || log "scaling.sh rc $? ($family)"
  cat "$OUT/weak-$family.jsonl" >>"$OUT/weak.jsonl" 2>/dev/null
done

# The controls: one process with the 1 x 4 base at 4 threads and the 4 x 4 graph at 16.
: >"$OUT/one.jsonl"
for spec in "4 band:2097152:16" "16 band:8388608:16" "4 rmat:20:16" "16 rmat:22:16"; do
  read -r t g <<<"$spec"
  log "one process, $t threads, $g"
  OMP_WAIT_POLICY=passive timeout 300 "$CLI" run --op spmm --backend openmp --threads "$t" --F 64 --reps 10 --json -q "$g" \
    >>"$OUT/one.jsonl" 2>>"$OUT/progress.log" || log "rc $? for $g at $t threads"
done
log "done"
