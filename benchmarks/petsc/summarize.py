#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The JSON lines of one or more runs of sparseport_dist_vs_petsc (benchmarks/petsc/run.sh) as one
Markdown table: a row per (matrix, F, ranks, threads); with several runs, the median over the runs
of each run's median times and speedups, and the range of the speedups.
    python3 benchmarks/petsc/summarize.py build/petsc/dist_vs_petsc.jsonl [more.jsonl ...]
"""
import json
import statistics
import sys
from collections import OrderedDict


def main(paths):
    rows = OrderedDict()
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                d = json.loads(line)
                key = (d["matrix"], d["F"], d["ranks"], d["threads"])
                rows.setdefault(key, []).append(d)
    order = sorted(rows, key=lambda k: (k[2], -k[3], k[0] != "rmat:18:16", k[0], k[1]))
    print("| matrix | nnz | F | ranks x SparsePort threads | PETSc ms | SparsePort ms | speedup | "
          "speedup range | best-of ratio | SparsePort comm ms | halo MB | SparsePort variant | max rel err | runs |")
    print("|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|")
    for key in order:
        runs = rows[key]
        med = lambda field: statistics.median(r[field] for r in runs)
        speedups = [r["speedup"] for r in runs]
        best = min(r["petsc_min_ms"] for r in runs) / min(r["sparseport_min_ms"] for r in runs)
        variants = sorted({r["sparseport_variant"] for r in runs})
        print(f"| {key[0]} | {runs[0]['nnz']:,} | {key[1]} | {key[2]} x {key[3]} | {med('petsc_ms'):.1f} | "
              f"{med('sparseport_ms'):.1f} | {statistics.median(speedups):.2f} | "
              f"{min(speedups):.2f}-{max(speedups):.2f} | {best:.2f} | {med('sparseport_comm_ms'):.1f} | "
              f"{runs[0]['halo_bytes'] / 1e6:.1f} | {', '.join(variants)} | "
              f"{max(r['max_rel_err'] for r in runs):.1e} | {len(runs)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
