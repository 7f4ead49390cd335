#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises benchmarks/skew_sweep.sh's JSON lines: per graph and F, cuSPARSE's time, the best
native variant and its speedup over cuSPARSE, and the speedup of each variant named on the command
line; then the geometric means and how often each variant was the fastest native one.

    benchmarks/skew_summary.py OUT.jsonl [variant ...]   (default: spmm.merge_path spmm.hub_split)
"""
import json
import math
import sys
from collections import Counter, defaultdict


def main() -> int:
    path = sys.argv[1]
    shown = sys.argv[2:] or ["spmm.merge_path", "spmm.hub_split"]
    cases = defaultdict(dict)  # (graph, F) -> variant -> record
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("op") != "spmm" or r.get("ms") is None:
            continue
        cases[(r["graph"].split("/")[-1].replace(".mtx.gz", ""), r["F"])][r["variant"]] = r
    head = ["graph", "nnz", "F", "cuSPARSE ms", "best native", "ms", "speedup"] + shown
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    best_ratio, per_variant, wins, unverified = [], defaultdict(list), Counter(), []
    for (graph, f), runs in sorted(cases.items(), key=lambda kv: (kv[1][next(iter(kv[1]))]["nnz"], kv[0][1])):
        vendor = next((r for v, r in runs.items() if v.startswith("spmm.cusparse")), None)
        native = {v: r for v, r in runs.items() if not v.startswith("spmm.cusparse")}
        unverified += [f"{graph} F={f} {v}" for v, r in runs.items() if not r.get("verified")]
        if vendor is None or not native:
            continue
        v_best, r_best = min(native.items(), key=lambda kv: kv[1]["ms"])
        ratio = vendor["ms"] / r_best["ms"]
        best_ratio.append(ratio)
        wins[v_best] += 1
        cells = []
        for v in shown:
            if v in native:
                s = vendor["ms"] / native[v]["ms"]
                per_variant[v].append(s)
                cells.append(f"{s:.2f}x")
            else:
                cells.append("n/a")
        row = [graph, str(r_best["nnz"]), str(f), f"{vendor['ms']:.4f}", v_best, f"{r_best['ms']:.4f}", f"{ratio:.2f}x"]
        print("| " + " | ".join(row + cells) + " |")

    def geo(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

    print()
    print(f"best native over cuSPARSE: geomean {geo(best_ratio):.3f}x over {len(best_ratio)} cases, "
          f"min {min(best_ratio, default=float('nan')):.2f}x, below 1.0 in {sum(r < 1 for r in best_ratio)}")
    for v in shown:
        xs = per_variant[v]
        print(f"{v} over cuSPARSE: geomean {geo(xs):.3f}x over {len(xs)} cases, below 1.0 in {sum(x < 1 for x in xs)}")
    print("fastest native variant: " + ", ".join(f"{v} {n}" for v, n in wins.most_common()))
    if unverified:
        print("NOT VERIFIED: " + "; ".join(unverified))
    return 0


if __name__ == "__main__":
    sys.exit(main())
