#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The table of tests/kokkos/gpu_check.sh's bench step (issue 36): per op, input and F, the kokkos
plugin's best variant beside the native plugin's best (its vendor's included: cuSPARSE, GraphBLAS)
and, where the kokkos plugin has one, its vendor's (Kokkos Kernels' spmv), all from one run; then per
op the geomean, minimum and counts of kokkos best over native best as a speed ratio (1 = as fast).

    bench_table.py BENCH_JSONL OUT_CSV [AUTO_JSONL] [NATIVE]

BENCH_JSONL holds `sparseport run --variant all --json` lines of both backends, the kokkos plugin's
possibly under several settings (a "kokkos_env" field, gpu_check.sh's BENCH_KOKKOS_ENVS: a block per
setting, each against the same native rows); AUTO_JSONL the kokkos scheduler's choice per (op, input,
F), shown in the block without a setting; NATIVE the native backend's token (default cuda).
Rows that did not verify are left out (and the pair marked). Standard library only."""
import csv
import json
import math
import os
import sys


def load(path):
    out = []
    if path and os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    native = argv[4] if len(argv) > 4 else "cuda"
    # The kokkos plugin's rows may come under several settings (gpu_check.sh's BENCH_KOKKOS_ENVS,
    # "kokkos_env" in the line): each setting is a block of its own against the same native rows.
    lines = load(argv[1])
    native_runs, kokkos_runs, settings = {}, {}, {}
    for r in lines:
        key = (r["op"], r["graph"], r["F"])
        if r["backend"].split(":")[0] == "kokkos":
            env = r.get("kokkos_env", "-")
            settings[env] = None
            kokkos_runs.setdefault((env,) + key, []).append(r)
        else:
            native_runs.setdefault(key, []).append(r)
    rows = {}
    for (env, *key), runs in kokkos_runs.items():
        key = tuple(key)
        both = runs + native_runs.get(key, [])
        rows[(env,) + key] = {"n": runs[0]["n"], "nnz": runs[0]["nnz"], "runs": both}
    auto = {(r["op"], r["graph"], r["F"]): r for r in load(argv[3] if len(argv) > 3 else None)}

    def best(runs, backend, vendor):
        # The JSON names the device ("cuda:0"); the backend token is what comes before the colon.
        c = [r for r in runs if r["backend"].split(":")[0] == backend and r["verified"] and r["ms"] is not None
             and (r["variant"] == r.get("vendor_variant")) == vendor]
        return min(c, key=lambda r: r["ms"]) if c else None

    ms = lambda r: r["ms"] if r else None
    ratio = lambda a, b: round(a["ms"] / b["ms"], 3) if a and b else None
    cols = ["kokkos_env", "op", "graph", "n", "nnz", "F", "kokkos_best_variant", "kokkos_best_ms", "kokkos_vendor_ms",
            "native_best_variant", "native_best_ms", "native_vendor_ms", "kokkos_best_over_native_best",
            "kokkos_best_over_kokkos_vendor", "kokkos_auto_variant", "kokkos_auto_ms", "kokkos_auto_over_kokkos_best",
            "all_verified"]
    out = []
    for (env, op, g, f), d in rows.items():
        k, kv = best(d["runs"], "kokkos", False), best(d["runs"], "kokkos", True)
        n_nat, n_v = best(d["runs"], native, False), best(d["runs"], native, True)
        n = min([x for x in (n_nat, n_v) if x], key=lambda r: r["ms"], default=None)
        a = auto.get((op, g, f)) if env == "-" else None  # the scheduler ran without a setting
        out.append({"kokkos_env": env, "op": op, "graph": g, "n": d["n"], "nnz": d["nnz"], "F": f,
                    "kokkos_best_variant": k["variant"] if k else None, "kokkos_best_ms": ms(k),
                    "kokkos_vendor_ms": ms(kv), "native_best_variant": n["variant"] if n else None,
                    "native_best_ms": ms(n), "native_vendor_ms": ms(n_v),
                    "kokkos_best_over_native_best": ratio(k, n), "kokkos_best_over_kokkos_vendor": ratio(k, kv),
                    "kokkos_auto_variant": a["variant"] if a else None, "kokkos_auto_ms": ms(a),
                    "kokkos_auto_over_kokkos_best": ratio(a, k),
                    "all_verified": all(r["verified"] for r in d["runs"]) and (a or {}).get("verified", True)})
    with open(argv[2], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(out)

    fmt = lambda v: "-" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
    for env in settings:
        mine_env = [r for r in out if r["kokkos_env"] == env]
        if len(settings) > 1 or env != "-":
            print(f"## kokkos under {env}")
        print(f"{'op':<20} {'graph':<24} {'F':>4} {'kokkos best':>26} {'ms':>8} {'kk spmv':>8} {native + ' best':>26}"
              f" {'ms':>8} {'k/' + native:>7} {'k/kk':>6} ok")
        for r in mine_env:
            print(f"{r['op']:<20} {r['graph'].split('/')[-1][-24:]:<24} {fmt(r['F']):>4} {fmt(r['kokkos_best_variant']):>26}"
                  f" {fmt(r['kokkos_best_ms']):>8} {fmt(r['kokkos_vendor_ms']):>8} {fmt(r['native_best_variant']):>26}"
                  f" {fmt(r['native_best_ms']):>8} {fmt(r['kokkos_best_over_native_best']):>7}"
                  f" {fmt(r['kokkos_best_over_kokkos_vendor']):>6} {'yes' if r['all_verified'] else 'NO'}")
        print(f"{len(mine_env)} (op, input, F) rows; ms = median per call; ratios > 1: kokkos slower")
        # Per op: kokkos best's speed over the native best's (native ms / kokkos ms; issue 36's
        # targets read 0.8x geomean, 0.6x on every input), and over Kokkos Kernels where it has a row.
        print(f"{'op':<20} {'rows':>5} {'kokkos/' + native + ' geomean':>22} {'min':>6} {'>=0.6':>6} {'>=0.8':>6}"
              f" {'vs KK min':>10}")
        speeds_all = []
        for op in dict.fromkeys(r["op"] for r in mine_env):
            mine = [r for r in mine_env if r["op"] == op and r["kokkos_best_ms"]]
            sp = [r["native_best_ms"] / r["kokkos_best_ms"] for r in mine if r["native_best_ms"]]
            kk = [r["kokkos_vendor_ms"] / r["kokkos_best_ms"] for r in mine if r["kokkos_vendor_ms"]]
            speeds_all += sp
            if not sp:
                print(f"{op:<20} {0:>5} {'-':>22}")
                continue
            gm = math.exp(sum(math.log(x) for x in sp) / len(sp))
            print(f"{op:<20} {len(sp):>5} {gm:>22.3f} {min(sp):>6.3f} {sum(x >= 0.6 for x in sp):>6}"
                  f" {sum(x >= 0.8 for x in sp):>6} {(f'{min(kk):.2f}x' if kk else '-'):>10}")
        if speeds_all:
            gm = math.exp(sum(math.log(x) for x in speeds_all) / len(speeds_all))
            print(f"{'every op':<20} {len(speeds_all):>5} {gm:>22.3f} {min(speeds_all):>6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
