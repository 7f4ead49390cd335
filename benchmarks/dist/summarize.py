#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Markdown tables from scaling.sh's JSON lines: per scaling kind, op and reduce, one row per P
with the time per call (median, slowest rank), comm and compute, halo, transport and verification,
and the ratio to P = 1 (strong: speed-up; weak: efficiency, t(1) / t(P))."""
import json
import sys


def main(path):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    groups = {}
    for r in runs:
        groups.setdefault((r["scaling"], r["op"], r["reduce"], r["backend"]), []).append(r)
    for (kind, op, reduce, backend), rs in groups.items():
        rs.sort(key=lambda r: r["ranks"])
        base = rs[0]["ms"] if rs[0]["ranks"] == 1 else None
        what = "speed-up over P = 1" if kind == "strong" else "efficiency t(1)/t(P)"
        print(f"\n**{kind} scaling, {op} {reduce}, {backend}, F = {rs[0]['F']}**\n")
        print(f"| P | threads/rank | graph | entries | ms/call | comm ms | compute ms | halo MB/call | transport | verified | {what} |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---|---|---:|")
        for r in rs:
            ratio = f"{base / r['ms']:.2f}" if base else "-"
            print(f"| {r['ranks']} | {r['threads_per_rank']} | {r['graph']} | {r['nnz']:,} | {r['ms']:.2f} | "
                  f"{r['comm_ms']:.2f} | {r['compute_ms']:.2f} | {r['halo_bytes'] / 1e6:.1f} | {r['transport']} | "
                  f"{r['verified']} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
