# SPDX-License-Identifier: Apache-2.0
"""Synthetic `sparseport tune --collect` records, for developing train.py / transfer.py before real
ones exist. Same fields as the real records (scheduler/model/README.md); the times come from a toy
performance model with the structure the real kernels have (row-mapped variants pay for the
longest row, gathers pay for poor column locality once B misses the cache, narrow F idles warp
lanes, atomics pay for contention, vendors carry a constant overhead) plus hidden per-graph
effects and measurement noise. NOT a stand-in for real data: only for exercising the pipeline.

  .venv-model/bin/python scheduler/model/synthetic.py --out /tmp/syn.jsonl [--graphs 160] [--seed 1]
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np

MACHINES = {
    "cuda-sm90": dict(backend="cuda", device="NVIDIA H200 (synthetic)", gpu=True, bandwidth=0.85e9 * 4800,
                      cache=50e6, workers=132 * 16, launch=4e-6, threads=0),
    "openmp-x86_64": dict(backend="openmp", device="x86_64 2 threads (synthetic)", gpu=False, bandwidth=24e9,
                          cache=32e6, workers=2, launch=2e-6, threads=2),
}

VARIANTS = {
    "cuda": {
        "spmm": ["spmm.row_warp_vec4", "spmm.row_warp", "spmm.hub_split", "spmm.nnz_balanced", "spmm.cusparse"],
        "sddmm": ["sddmm.nnz_balanced", "sddmm.row_warp", "sddmm.vec4", "sddmm.cusparse"],
        "segment_reduce": ["segment_reduce.nnz_balanced", "segment_reduce.atomic",
                           "segment_reduce.nnz_balanced_deterministic"],
        "gather_scatter": ["gather_scatter.nnz_balanced", "gather_scatter.atomic",
                           "gather_scatter.nnz_balanced_deterministic"],
        "csr_attention": ["csr_attention.fused", "csr_attention.unfused"],
    },
    "openmp": {
        "spmm": ["spmm.rows", "spmm.merge_path", "spmm.graphblas"],
        "sddmm": ["sddmm.rows"],
        "segment_reduce": ["segment_reduce.sorted_add", "segment_reduce.sorted_deterministic",
                           "segment_reduce.scatter_atomic"],
        "gather_scatter": ["gather_scatter.sorted_add", "gather_scatter.sorted_deterministic",
                           "gather_scatter.scatter_atomic"],
        "csr_attention": ["csr_attention.unfused", "csr_attention.onepass"],
    },
}
VENDOR = {("cuda", "spmm"): "spmm.cusparse", ("cuda", "sddmm"): "sddmm.cusparse", ("openmp", "spmm"): "spmm.graphblas"}
PROBLEMS = [("spmm", F, "") for F in (8, 32, 64, 128)] + [("sddmm", F, "") for F in (32, 128)] + \
    [("segment_reduce", F, red) for F in (16, 128) for red in ("sum", "max")] + \
    [("gather_scatter", F, "sum") for F in (32, 128)] + [("csr_attention", F, "") for F in (32, 64)]
REDUCE_CODE = {"": 0, "sum": 0, "mean": 1, "max": 2, "min": 3}


def mapping_name(v):
    from common import mapping_name as m
    return m(v)


def make_graph(rng, family, k):
    """A degree sequence and locality numbers for one generated graph; returns (spec, props)."""
    lr = int(rng.integers(12, 21))
    n = 1 << lr
    seed = int(rng.integers(1, 100))
    if family == "chunglu":
        d = float(rng.choice([4, 8, 16, 32]))
        ex = float(rng.uniform(1.9, 3.0))
        w = np.arange(1, n + 1, dtype=float) ** (-1.0 / (ex - 1.0))
        deg = rng.poisson(d * w / w.mean())
        spec, loc, colskew = f"chunglu:{n}:{d:g}:{ex:.2f}@{seed}", rng.uniform(0.0, 0.15), 0.6
    elif family == "er":
        d = float(rng.choice([2, 4, 8, 16, 32, 64]))
        deg = rng.poisson(d, n)
        spec, loc, colskew = f"er:{n}:{d:g}@{seed}", 0.0, 0.0
    elif family == "rmat":
        d = float(rng.choice([8, 16, 32]))
        a = float(rng.uniform(0.45, 0.6))
        deg = rng.poisson(d * rng.lognormal(0, 1.0 + 3 * (a - 0.45), n))
        spec, loc, colskew = f"rmat:{lr}:{d:g}:{a:.2f}@{seed}", rng.uniform(0.1, 0.4), 0.5
    elif family == "grid":
        side = int(math.isqrt(n))
        n = side * side
        deg = np.full(n, 5) - (rng.random(n) < 4.0 / side)
        spec, loc, colskew = f"grid:{side}@{seed}", 0.95, 0.0
    elif family == "banded":
        bw = int(rng.choice([8, 32, 128]))
        deg = rng.binomial(2 * bw, rng.uniform(0.3, 1.0), n)
        spec, loc, colskew = f"banded:{n}:{bw}@{seed}", 0.9, 0.0
    elif family == "sbm":
        d = float(rng.choice([8, 16, 32]))
        deg = rng.poisson(d * rng.gamma(2.0, 0.5, n))
        spec, loc, colskew = f"sbm:{n}:{d:g}:{int(rng.integers(4, 64))}@{seed}", rng.uniform(0.3, 0.7), 0.2
    else:  # "real": a mix, under a file name
        sub = rng.choice(["chunglu", "banded", "rmat", "sbm"])
        s, p = make_graph(rng, str(sub), k)
        p["hidden"] = rng.normal(0, 0.12, 32)  # real inputs: more unexplained variation
        return f"/data/suitesparse/m{k:03d}.mtx", p
    deg = np.minimum(deg, n).astype(np.int64)
    deg[deg < 0] = 0
    return spec, {"deg": deg, "n": n, "loc": float(loc), "colskew": float(colskew), "hidden": rng.normal(0, 0.06, 32)}


def degree_features(deg):
    nnz = int(deg.sum())
    rows = len(deg)
    srt = np.sort(deg)
    q = lambda p: float(srt[int(p * (rows - 1))])  # noqa: E731
    bw = np.where(deg > 0, np.floor(np.log2(np.maximum(deg, 1))) + 1, 0).astype(int)  # bit_width
    frac = lambda lo, hi: float(np.mean((bw >= lo) & (bw <= hi)))  # noqa: E731
    mid = np.where(bw > 0, np.ldexp(1.4142135623730951, bw - 1), 0)
    share256 = float(min(1.0, mid[bw >= 9].sum() / max(1, nnz)))  # bucket_low(b) >= 256
    lg1 = lambda x: math.log2(1 + max(x, 0))  # noqa: E731
    return nnz, {
        "f:log2_rows": lg1(rows), "f:log2_nnz": lg1(nnz), "f:log2_mean_degree": lg1(nnz / rows),
        "f:log2_p50": lg1(q(0.5)), "f:log2_p90": lg1(q(0.9)), "f:log2_p99": lg1(q(0.99)),
        "f:log2_max_degree": lg1(float(srt[-1])), "f:max_row_share": float(srt[-1]) / max(1, nnz),
        "f:empty_frac": frac(0, 0), "f:frac_deg_1": frac(1, 1), "f:frac_deg_2_7": frac(2, 3),
        "f:frac_deg_8_31": frac(4, 5), "f:frac_deg_32_255": frac(6, 8), "f:frac_deg_256_4095": frac(9, 12),
        "f:frac_deg_4096plus": frac(13, 64), "f:nnz_share_deg_256plus": share256,
    }


def simulate(rng, m, backend, op, variant, g, F, red, floor_s, x, vi):
    """A toy time (seconds) of one variant; None when it does not apply."""
    gpu = m["gpu"]
    loc, colskew = g["loc"], g["colskew"]
    ooc = 2 ** x["f:log2_operand_over_cache"]
    # Gathers: poor locality costs when B does not fit the cache.
    gpen = 1 + (0.9 if gpu else 0.5) * (1 - loc) * min(1.0, max(0.0, math.log2(max(ooc, 1e-9)) + 2) / 4) * \
        (1 - 0.4 * colskew)
    maxd = 2 ** x["f:log2_max_degree"] - 1
    meand = 2 ** x["f:log2_mean_degree"] - 1
    per_worker = m["bandwidth"] / m["workers"]
    longest = maxd * F * 4 / per_worker
    lanes = min(F, 32) / 32
    t, imb, launches = floor_s * gpen, 0.0, 1
    v = variant.split(".", 1)[1]
    if op in ("spmm", "sddmm", "csr_attention"):
        if v in ("row_warp_vec4", "row_warp", "rows", "fused", "vec4"):
            imb = longest * (1.0 if gpu else 0.5)
            if gpu:
                t /= 0.4 + 0.6 * lanes
                if v in ("row_warp_vec4", "vec4"):
                    if F % 4:
                        return None
                    t *= 0.86 if F >= 64 else (0.95 if F >= 32 else 1.12)
                if v == "fused":
                    t *= 0.9
            else:
                t *= 1.05 if meand >= 4 else 1.3  # per-row overhead on short rows
        elif v == "hub_split":
            imb = longest / 128
            launches = 2
            t = t / (0.4 + 0.6 * lanes) * 1.04
        elif v in ("nnz_balanced", "merge_path", "onepass"):
            t *= (1.15 if gpu else 1.12) * (1 + 0.2 * (x["f:frac_deg_1"] + x["f:empty_frac"]))
            if gpu:
                t /= 0.6 + 0.4 * lanes
        elif v == "unfused":
            t *= 1.7
            launches = 3
            imb = longest * 0.25
        elif v in ("cusparse", "graphblas"):
            t *= (1.35 if F < 64 else 0.95) * (1.1 if op == "sddmm" else 1.0)
            imb = longest / 6
            launches = 2
        elif v in ("serial",):
            t = floor_s * m["workers"] * 0.8
    else:  # segment_reduce, gather_scatter
        contention = min(1.0, x["f:max_row_share"] * 50 + 0.3 * x["f:frac_deg_256_4095"] + x["f:frac_deg_4096plus"])
        if "atomic" in v:
            t *= (1.25 + 3.0 * contention) if gpu else (1.6 + 1.5 * contention)
            if red in ("max", "min"):
                t *= 1.5  # CAS loops
        elif "deterministic" in v:
            t *= 1.18 if gpu else 1.08
        else:
            t *= 1.08 if gpu else (1.0 + 0.15 * (meand < 2))
        if op == "gather_scatter":
            t *= 1.0 + 0.3 * (1 - loc)
    s = (t ** 4 + imb ** 4) ** 0.25 + launches * m["launch"]
    s *= math.exp(g["hidden"][vi % 32] + rng.normal(0, 0.035))
    return s


def estimate(m, variant, floor_s, x, F):
    """A crude stand-in for scheduler/estimate.cpp (its f:est_over_floor)."""
    maxd = 2 ** x["f:log2_max_degree"] - 1
    longest = maxd * F * 4 / (m["bandwidth"] / m["workers"])
    mp = mapping_name(variant)
    t = floor_s
    imb = 0.0
    if mp == "rows":
        imb = longest
        if m["gpu"] and F < 32:
            t /= 0.4 + 0.6 * F / 32
    elif mp == "hub_split":
        imb = longest / 128
        t *= 1.03
    elif mp == "balanced":
        t *= 1.05
    elif mp == "atomic":
        t *= 1.5
    elif mp == "vendor":
        t *= 1.1
    return max(t, imb) + m["launch"]


def records(args):
    rng = np.random.default_rng(args.seed)
    fams = ["chunglu"] * 5 + ["er"] * 3 + ["rmat"] * 4 + ["grid"] * 2 + ["banded"] * 2 + ["sbm"] * 3 + ["real"] * 2
    graphs = []
    for k in range(args.graphs):
        fam = fams[k % len(fams)]
        spec, g = make_graph(rng, fam, k)
        nnz, dfeat = degree_features(g["deg"])
        g["nnz"] = nnz
        g["family"] = "real" if fam == "real" else fam
        loc, cs = g["loc"], g["colskew"]
        cols = g["n"]
        w32 = min(1.0, loc * 0.7 + 64 / cols)
        w1k = min(1.0, loc * 0.9 + 2048 / cols)
        w32k = min(1.0, loc + (1 - loc) * min(1.0, 65536 / cols))
        dfeat.update({
            "f:log2_cols": math.log2(1 + cols),
            "f:dist_mean": (1 - loc) * cols / 3 / 1048576.0,
            "f:within_32": w32, "f:within_1k": w1k, "f:within_32k": w32k,
            "f:block_reuse": math.log2(1 + 3 * loc + 2 * cs * min(1.0, nnz / cols / 8) + rng.uniform(0, 0.2)),
            "f:segment_fill": math.log2(1 + 8 * loc + rng.uniform(0, 0.3)),
        })
        g["feat"] = dfeat
        graphs.append((spec, g))
        del g["deg"]
    out = []
    for dc in args.device_classes:
        m = MACHINES[dc]
        backend = m["backend"]
        for spec, g in graphs:
            for op, F, red in PROBLEMS:
                x = dict(g["feat"])
                vsz = 4
                nnz, rows, cols = g["nnz"], g["n"], g["n"]
                operand = cols * F * vsz
                struct = (rows + 1) * 4 + nnz * 8
                dense_in = min(nnz, cols) * F * vsz
                outb = rows * F * vsz if op not in ("sddmm",) else nnz * vsz
                if op in ("segment_reduce", "gather_scatter"):
                    dense_in = nnz * F * vsz
                hit = min(1.0, m["cache"] / operand)
                regather = max(0.0, nnz * F * vsz - dense_in) * (1 - hit)
                floor_s = (struct + dense_in + outb + regather) / m["bandwidth"] + m["launch"]
                x.update({
                    "f:log2_F": math.log2(1 + F), "f:log2_operand_over_cache": math.log2(operand / m["cache"]),
                    "f:gpu": 1.0 if m["gpu"] else 0.0, "f:log2_bandwidth": math.log2(m["bandwidth"]),
                    "f:log2_cache": math.log2(m["cache"]), "f:log2_workers": math.log2(m["workers"]),
                    "f:reduce": float(REDUCE_CODE[red]), "f:value_bytes": 4.0, "f:log2_floor_s": math.log2(floor_s),
                })
                if op in ("segment_reduce", "gather_scatter") and rng.random() < 0.5:
                    for k in ("f:dist_mean", "f:within_32", "f:within_1k", "f:within_32k", "f:block_reuse",
                              "f:segment_fill"):
                        x[k] = -1.0  # index ops: no locality
                vendor = VENDOR.get((backend, op), "")
                for vi, var in enumerate(VARIANTS[backend][op]):
                    t = simulate(rng, m, backend, op, var, g, F, red, floor_s, x, vi + 7 * len(op))
                    est = estimate(m, var, floor_s, x, F)
                    r = {
                        "schema": 1, "device_class": dc, "device": m["device"], "backend": backend,
                        "threads": m["threads"], "graph": spec, "family": g["family"], "op": op, "reduce": red,
                        "F": F, "types": f"f32/i32/{red or 'sum'}", "variant": var, "vendor": vendor,
                        "is_vendor": var == vendor, "mapping": mapping_name(var),
                        "ms": round(t * 1e3, 6) if t is not None else -1.0,
                        "floor_ms": floor_s * 1e3, "estimate_ms": est * 1e3,
                    }
                    r.update({k: round(v, 6) for k, v in sorted(x.items())})
                    r["f:est_over_floor"] = round(math.log2(est / floor_s), 6)
                    out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--graphs", type=int, default=160)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device-classes", nargs="+", default=list(MACHINES))
    args = ap.parse_args()
    recs = records(args)
    with open(args.out, "w") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    print(f"{len(recs)} records -> {args.out}")


if __name__ == "__main__":
    import os
    import sys
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
