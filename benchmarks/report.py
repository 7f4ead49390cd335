#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn Google Benchmark JSON from a SparsePort suite into a Markdown report.

    sparseport_bench_cpu --benchmark_out=run.json --benchmark_out_format=json
    python3 benchmarks/report.py run.json -o benchmarks/results/2026-11-cpu.md

Rows are named op/backend/variant/graph/F (Google Benchmark appends /manual_time, dropped here).
With --benchmark_repetitions the median aggregate of each row is used; without aggregates, the
median over the repetitions present. Skipped rows (SkipWithError) are listed with their reason.
The summary gives, per (op, backend, variant), the geometric mean of the per-row speedups and the
time-weighted speedup (sum of baseline times / sum of times), both over the rows that have a
baseline time, as DESIGN.md section 5 asks: never a single best case. It also gives, per (op,
backend), the geometric mean over the inputs (graph, F) of the best variant's speedup on each
input: the best variant other than the baseline itself (what issue 4's targets mean by "best
variant per input"), and the best of all variants, baseline included (what a scheduler that may
fall back to the baseline can reach); and, for spmm, the best variant of every input.

Three issue-4 targets get their own tables when their rows are present: "fused attention vs
one spmm" (csr_attention.fused over the best spmm time on the same graph and F; target <= 2),
and, at the CUDA suite's full size, "megarow vs uniform" (spmm's best time per F on megarow:2000000:16:0.05 and on
er:2000000:8e-6, and their ratio; target <= 1.2) and "segment_reduce 60M messages" (the
seg60m:* inputs, time and effective TB/s per variant; target >= 3 TB/s for nnz_balanced). These
inputs are left out of the two summaries above, so those compare with reports made before them.

A JSON file cut short (a run killed by a time limit) is read up to its last complete row.
Suites whose context sets sparseport_bandwidth_unit=TB/s (the CUDA suite) show gathered TB/s
instead of GB/s. --command records the exact command line(s) that produced the JSON.

Figures (issue 14). With --figures DIR the report also draws PNG figures into DIR and embeds them
in the Markdown ("## Figures", `![...](DIR relative to the Markdown file)`):

    python3 benchmarks/report.py cuda.json -o benchmarks/results/X.md --figures benchmarks/results/X-figs

  speedup-vs-vendor-OP-BACKEND.png  for each (op, backend) whose rows are timed against a vendor
      library (label "baseline=VARIANT (vendor)": spmm and sddmm against cuSPARSE, spmv against
      cusparseSpMV, GraphBLAS, Kokkos Kernels): one bar per input (graph, F), the `speedup` counter
      (vendor time / time, same run) of the best native variant on that input, sorted, log axis,
      a line at 1.0. Native: any variant that is not a vendor library's (not named as a vendor
      baseline anywhere in the run, and not named after one: cusparse*, graphblas, kokkoskernels,
      mkl*, rocsparse*, hipsparse*, aoclsparse*). Best: the highest speedup counter, i.e. the
      fastest native variant. Bars are coloured by that variant.
  floor-frac-OP-BACKEND.png  for each (op, backend) with floor_frac: per input, the compulsory-floor
      fraction (compulsory bytes / time / measured copy bandwidth) of the best (fastest) native
      variant at each F, one marker per F, inputs sorted, log axis, a line at 1.0 (the floor).
  variant-times-OP-BACKEND.png  the scheduler's candidates: the median time of every variant of OP
      (--candidates-op, default spmm) per input, one panel per F (--figure-f, default: up to four F
      of the run), log axis, inputs sorted by the vendor's (else the fastest) time.

Figure titles give the device (context sparseport_device, else host_name), the commit (--commit,
else a context key sparseport_commit, else "commit HASH" in a --command) and the run's date. Like
the summaries, figures leave out the issue-4 target inputs and the determinism group; --figure-ops
limits figures to some ops.

The Markdown needs the Python 3 standard library only; figures need matplotlib (Debian
python3-matplotlib, or pip install matplotlib), imported only when figures are asked for. Without
it, --figures stops with exit status 3 before writing anything; add --figures-optional to write the
Markdown without figures instead, printing why.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
from collections import OrderedDict

TIME_SUFFIXES = ("/manual_time", "/real_time")
COUNTERS = ("median_ms", "GB/s", "GFLOP/s", "floor_frac", "floor_ms", "baseline_ms", "speedup", "eff_TB/s")
# The inputs of two issue-4 targets (bench_cuda.cpp, extra_inputs): shown in their own tables,
# left out of the summaries.
MEGAROW_GRAPH = "megarow:2000000:16:0.05"
UNIFORM_GRAPH = "er:2000000:8e-6"
SEGMENT_PREFIX = "seg60m:"
SEGMENT_TARGET_TBPS = 3.0
MEGAROW_TARGET_RATIO = 1.2
ATTENTION_TARGET_RATIO = 2.0
TO_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_name(run_name):
    """op/backend/variant/graph/F[/manual_time] -> dict, or None for a name of another shape."""
    for suffix in TIME_SUFFIXES:
        if run_name.endswith(suffix):
            run_name = run_name[: -len(suffix)]
    parts = run_name.split("/")
    if len(parts) < 5:
        return None
    try:
        features = int(parts[-1])
    except ValueError:
        return None
    return {"op": parts[0], "backend": parts[1], "variant": parts[2], "graph": "/".join(parts[3:-1]),
            "F": features, "key": run_name}


def row_seconds(b):
    return float(b["real_time"]) * TO_SECONDS.get(b.get("time_unit", "ns"), 1e-9)


def load_json(path):
    """The JSON of one run; a file cut short is closed after its last complete benchmark entry."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text), False
    except ValueError:
        pass
    # Google Benchmark writes each entry as "    {" ... "    }" inside "benchmarks": [ ... ].
    start = text.find('"benchmarks": [')
    if start < 0:
        ctx_end = text.rfind("\n  }")
        if ctx_end < 0:
            raise ValueError(f"{path} is not Google Benchmark JSON and cannot be repaired")
        return json.loads(text[:ctx_end + 4] + "\n}"), True
    end = text.rfind("\n    }")
    if end < start:
        return json.loads(text[:start] + '"benchmarks": []\n}'), True
    return json.loads(text[:end + 6] + "\n  ]\n}"), True


def collect(paths):
    """Rows in first-seen order: key -> {'name':..., 'seconds', counters, 'label', 'error'}."""
    groups = OrderedDict()
    contexts = []
    for path in paths:
        data, repaired = load_json(path)
        if repaired:
            print(f"report.py: {path} was cut short; reading its complete rows only", file=sys.stderr)
        ctx = dict(data.get("context", {}))
        if repaired:
            ctx["report_note"] = "this file was cut short (the run was stopped); only its complete rows are used"
        contexts.append((path, ctx))
        for b in data.get("benchmarks", []):
            name = parse_name(b.get("run_name", b.get("name", "")))
            if name is None:
                continue
            g = groups.setdefault(name["key"], {"name": name, "iterations": [], "median": None, "error": None,
                                                "label": ""})
            if b.get("error_occurred"):
                g["error"] = b.get("error_message", "error")
                continue
            if b.get("skipped"):  # Google Benchmark >= 1.8: SkipWithMessage
                g["error"] = b.get("skip_message", "skipped")
                continue
            if b.get("label"):
                g["label"] = b["label"]
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    g["median"] = b
            else:
                g["iterations"].append(b)
    rows = []
    for g in groups.values():
        row = dict(g["name"])
        row["label"] = g["label"]
        if g["median"] is not None:
            src = [g["median"]]
        else:
            src = g["iterations"]
        if not src:
            row["error"] = g["error"] or "no measurement"
            rows.append(row)
            continue
        row["error"] = None
        # The suites' median per call when they report it, else Google Benchmark's mean per call.
        med = [float(b["median_ms"]) * 1e-3 for b in src if "median_ms" in b]
        row["seconds"] = statistics.median(med) if med else statistics.median(row_seconds(b) for b in src)
        for c in COUNTERS:
            vals = [float(b[c]) for b in src if c in b]
            row[c] = statistics.median(vals) if vals else None
        row["repetitions"] = len(src) if g["median"] is None else "median"
        rows.append(row)
    return rows, contexts


def fmt_time(seconds):
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt(v, digits=3):
    if v is None:
        return ""
    if v == 0:
        return "0"
    return f"{v:.{digits}g}"


def baseline_name(label):
    # The suite labels each row "baseline=VARIANT" or "baseline=VARIANT (vendor)".
    if label.startswith("baseline="):
        return label[len("baseline="):]
    return label


def sort_key(r):
    return (r["op"], r["graph"], r["F"], r["backend"], r["variant"])


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def baseline_variant(label):
    """The baseline's variant name from a row label ("baseline=spmm.cusparse (vendor)")."""
    return baseline_name(label).split(" ")[0] if label.startswith("baseline=") else None


def is_target_input(r):
    """A row on one of the target-only inputs (not part of the suite's summaries)."""
    return r["graph"] == UNIFORM_GRAPH or r["graph"].startswith(SEGMENT_PREFIX)


def target_tables(ok):
    """The Markdown of the issue-4 target tables whose rows are present (none: [])."""
    out = []
    uniform = [r for r in ok if r["op"] == "spmm" and r["graph"] == UNIFORM_GRAPH]
    if uniform:
        out += ["### megarow vs uniform", "",
                f"spmm: the best time of any variant (the vendor's included) per F on {MEGAROW_GRAPH} "
                f"(2M rows, one row with 5% of the 32M entries) and on {UNIFORM_GRAPH} (2M rows, about 32M "
                f"entries, uniform); target: ratio <= {MEGAROW_TARGET_RATIO}.", "",
                "| backend | F | megarow best | variant | uniform best | variant | ratio megarow / uniform |",
                "|---|---:|---:|---|---:|---|---:|"]
        spmm = [r for r in ok if r["op"] == "spmm" and r["graph"] in (MEGAROW_GRAPH, UNIFORM_GRAPH)]
        for backend, features in sorted({(r["backend"], r["F"]) for r in uniform}):
            def best(graph):
                rs = [r for r in spmm if r["backend"] == backend and r["F"] == features and r["graph"] == graph]
                return min(rs, key=lambda r: r["seconds"]) if rs else None
            m, u = best(MEGAROW_GRAPH), best(UNIFORM_GRAPH)
            ratio = m["seconds"] / u["seconds"] if m and u else None
            out.append(f"| {backend} | {features} | {fmt_time(m['seconds']) if m else ''} | "
                       f"{m['variant'] if m else '(no row)'} | {fmt_time(u['seconds'])} | {u['variant']} | "
                       f"{fmt(ratio)} |")
        out.append("")
    seg = [r for r in ok if r["op"] == "segment_reduce" and r["graph"].startswith(SEGMENT_PREFIX)]
    if seg:
        out += ["### segment_reduce 60M messages", "",
                "60M sorted messages (seg60m:uniform: 16 per segment; seg60m:hubs: half in 8 hub segments, the "
                "rest 16 per segment), the indices of tests/cuda/cuda_timing.cpp; effective TB/s: "
                "4*(E + E*F + N*F) bytes / time; target: nnz_balanced >= "
                f"{SEGMENT_TARGET_TBPS:g} TB/s on both.", "",
                "| input | backend | variant | F | time | effective TB/s | floor frac | speedup | vs |",
                "|---|---|---|---:|---:|---:|---:|---:|---|"]
        for r in sorted(seg, key=lambda r: (r["graph"] != SEGMENT_PREFIX + "uniform", r["graph"], r["F"],
                                            r["backend"], r["variant"])):
            out.append(f"| {r['graph']} | {r['backend']} | {r['variant']} | {r['F']} | {fmt_time(r['seconds'])} | "
                       f"{fmt(r.get('eff_TB/s'))} | {fmt(r.get('floor_frac'))} | {fmt(r.get('speedup'))} | "
                       f"{baseline_name(r['label'])} |")
        out.append("")
    fused = [r for r in ok if r["op"] == "csr_attention" and r["variant"].endswith(".fused")
             and not is_target_input(r)]
    spmm_best = {}
    for r in ok:
        if r["op"] == "spmm" and not is_target_input(r):
            key = (r["backend"], r["graph"], r["F"])
            if key not in spmm_best or r["seconds"] < spmm_best[key]["seconds"]:
                spmm_best[key] = r
    pairs = [(r, spmm_best[(r["backend"], r["graph"], r["F"])]) for r in fused
             if (r["backend"], r["graph"], r["F"]) in spmm_best]
    if pairs:
        ratios = [a["seconds"] / b["seconds"] for a, b in pairs]
        within = sum(x <= ATTENTION_TARGET_RATIO for x in ratios)
        out += ["### fused attention vs one spmm", "",
                "csr_attention.fused (F = Fv) over the best spmm time of any variant (the vendor's included) on "
                f"the same graph and F; target: ratio <= {ATTENTION_TARGET_RATIO:g}. Geomean ratio "
                f"{fmt(geomean(ratios))}, {within} of {len(ratios)} inputs within the target, worst {fmt(max(ratios))}.",
                "",
                "| graph | backend | F | fused | best spmm | variant | ratio |",
                "|---|---|---:|---:|---:|---|---:|"]
        for (a, b), x in sorted(zip(pairs, ratios), key=lambda p: sort_key(p[0][0])):
            out.append(f"| {a['graph']} | {a['backend']} | {a['F']} | {fmt_time(a['seconds'])} | "
                       f"{fmt_time(b['seconds'])} | {b['variant']} | {fmt(x)} |")
        out.append("")
    if out:
        out = ["## Issue-4 targets", ""] + out
    return out


def best_per_input(ok):
    """(op, backend) -> list of per-input dicts: graph, F, baseline, baseline_s, best native row and
    best row of all (baseline included). Inputs without a baseline time are left out."""
    inputs = OrderedDict()
    for r in sorted(ok, key=sort_key):
        inputs.setdefault((r["op"], r["backend"]), OrderedDict()).setdefault((r["graph"], r["F"]), []).append(r)
    out = OrderedDict()
    for (op, backend), per_input in inputs.items():
        items = []
        for (graph, features), rs in per_input.items():
            with_base = [r for r in rs if r.get("baseline_ms")]
            if not with_base:
                continue
            base = baseline_variant(with_base[0]["label"])
            base_s = with_base[0]["baseline_ms"] * 1e-3
            native = [r for r in rs if r["variant"] != base]
            items.append({"graph": graph, "F": features, "baseline": base, "baseline_s": base_s,
                          "native": min(native, key=lambda r: r["seconds"]) if native else None,
                          "any": min(rs, key=lambda r: r["seconds"])})
        if items:
            out[(op, backend)] = items
    return out


# ---- figures (issue 14, item 7) -----------------------------------------------------------------
#
# The data of each figure is chosen here with the standard library (and tested without
# matplotlib); only draw_figures imports matplotlib.

# Variant names after "op." that are a vendor library's even where no row uses them as a baseline
# (spmm.cusparse in the spmv group, whose baseline is spmm.cusparse_spmv).
VENDOR_NAME_PREFIXES = ("cusparse", "graphblas", "kokkoskernels", "mkl", "onemkl", "rocsparse", "hipsparse",
                        "aoclsparse")
FIGURE_MAX_F = 4
COMMIT_KEYS = ("sparseport_commit", "sparseport_git_commit", "git_commit", "commit")


class FiguresUnavailable(Exception):
    """matplotlib cannot be imported; the message says what to install."""


def is_vendor_label(label):
    return label.startswith("baseline=") and label.rstrip().endswith("(vendor)")


def vendor_variants(rows):
    """{(backend, variant)} of the vendor libraries' variants in the run (see VENDOR_NAME_PREFIXES)."""
    out = set()
    for r in rows:
        if is_vendor_label(r.get("label", "")):
            out.add((r["backend"], baseline_variant(r["label"])))
        if r["variant"].split(".", 1)[-1].startswith(VENDOR_NAME_PREFIXES):
            out.add((r["backend"], r["variant"]))
    return out


def figure_rows(ok, ops=None):
    """The rows figures use: the suite's inputs (no target inputs), no determinism group, ops filtered."""
    return [r for r in ok if not is_target_input(r) and r["op"] != "determinism" and (not ops or r["op"] in ops)]


def row_speedup(r):
    """The row's speedup counter (baseline time / time, same run); baseline_ms / time when it lacks one."""
    if r.get("speedup"):
        return r["speedup"]
    if r.get("baseline_ms") and r.get("seconds"):
        return r["baseline_ms"] * 1e-3 / r["seconds"]
    return None


# Figures of these ops come first, in this order; the others follow by name.
FIGURE_OP_ORDER = ("spmm", "spmv", "sddmm", "csr_attention", "segment_reduce", "gather_scatter")


def figure_sort_key(r):
    known = r["op"] in FIGURE_OP_ORDER
    return (not known, FIGURE_OP_ORDER.index(r["op"]) if known else 0) + sort_key(r)


def group_inputs(rows):
    """(op, backend) -> (graph, F) -> rows, ops in FIGURE_OP_ORDER, then in sort_key order."""
    out = OrderedDict()
    for r in sorted(rows, key=figure_sort_key):
        out.setdefault((r["op"], r["backend"]), OrderedDict()).setdefault((r["graph"], r["F"]), []).append(r)
    return out


def speedup_vs_vendor_data(rows, vendors):
    """(op, backend) -> {'vendor': names, 'items': [{graph, F, variant, speedup}] sorted by speedup,
    highest first, 'no_native': count}: per input (graph, F) whose rows are timed against a vendor
    baseline, the native variant with the highest speedup counter."""
    out = OrderedDict()
    for (op, backend), per_input in group_inputs(rows).items():
        items, names, no_native = [], set(), 0
        for (graph, features), rs in per_input.items():
            timed = [r for r in rs if is_vendor_label(r["label"])]
            if not timed:
                continue
            names.update(baseline_variant(r["label"]) for r in timed)
            native = [(row_speedup(r), r) for r in timed if (backend, r["variant"]) not in vendors]
            native = [(s, r) for s, r in native if s]
            if not native:
                no_native += 1
                continue
            s, r = max(native, key=lambda p: p[0])
            items.append({"graph": graph, "F": features, "variant": r["variant"], "speedup": s})
        if items:
            items.sort(key=lambda i: (-i["speedup"], i["graph"], i["F"]))
            out[(op, backend)] = {"vendor": sorted(names), "items": items, "no_native": no_native}
    return out


def floor_frac_data(rows, vendors):
    """(op, backend) -> {'graphs': [graph, ...] sorted by their best floor fraction, highest first,
    'F': [F, ...], 'points': {(graph, F): (floor_frac, variant)}}: per input the fastest native
    variant (the fastest of all when the op has only vendor variants) and its floor fraction."""
    out = OrderedDict()
    for (op, backend), per_input in group_inputs(rows).items():
        points = {}
        for (graph, features), rs in per_input.items():
            rs = [r for r in rs if r.get("floor_frac")]
            native = [r for r in rs if (backend, r["variant"]) not in vendors] or rs
            if native:
                r = min(native, key=lambda r: r["seconds"])
                points[(graph, features)] = (r["floor_frac"], r["variant"])
        if not points:
            continue
        best = {}
        for (graph, _), (ff, _) in points.items():
            best[graph] = max(best.get(graph, 0.0), ff)
        graphs = sorted(best, key=lambda g: (-best[g], g))
        out[(op, backend)] = {"graphs": graphs, "F": sorted({f for _, f in points}), "points": points}
    return out


def pick_features(available, wanted=None, limit=FIGURE_MAX_F):
    """The F values of a candidates figure: those wanted that the run has, else up to `limit` of the
    run's (the smallest, the largest and evenly spaced ones between)."""
    available = sorted(set(available))
    if wanted:
        return [f for f in available if f in wanted]
    if len(available) <= limit:
        return available
    idx = sorted({round(i * (len(available) - 1) / (limit - 1)) for i in range(limit)})
    return [available[i] for i in idx]


def variant_times_data(rows, vendors, op, features=None):
    """backend -> {'F': [...], 'graphs': [...] slowest reference first, 'variants': [...] (the
    reference variant left out), 'reference': names, 'ref': {(graph, F): s}, 'times': {(variant,
    graph, F): s}}: every variant of `op` the run timed (the scheduler's candidates), each time
    relative to the reference measured in the same run on the same input: the rows' baseline (the
    vendor where the op has one), else the fastest variant."""
    out = OrderedDict()
    for (o, backend), per_input in group_inputs(rows).items():
        if o != op:
            continue
        fs = pick_features([f for _, f in per_input], features)
        if not fs:
            continue
        times, ref, names, variants = {}, {}, set(), set()
        for (graph, f), rs in per_input.items():
            if f not in fs:
                continue
            base = next((baseline_variant(r["label"]) for r in rs if baseline_variant(r["label"])), None)
            base_rows = [r for r in rs if r["variant"] == base]
            if base_rows:
                ref[(graph, f)] = base_rows[0]["seconds"]
            elif any(r.get("baseline_ms") for r in rs):
                ref[(graph, f)] = next(r["baseline_ms"] for r in rs if r.get("baseline_ms")) * 1e-3
            else:
                base = min(rs, key=lambda r: r["seconds"])["variant"] + " (fastest)"
                ref[(graph, f)] = min(r["seconds"] for r in rs)
            names.add(base)
            for r in rs:
                if r["variant"] != base:
                    times[(r["variant"], graph, f)] = r["seconds"]
                    variants.add(r["variant"])
        if not times:
            continue
        graphs = sorted({g for g, _ in ref}, key=lambda g: (-max(t for (gg, _), t in ref.items() if gg == g), g))
        variants = sorted(v for v in variants if (backend, v) not in vendors) + \
            sorted(v for v in variants if (backend, v) in vendors)
        out[backend] = {"F": fs, "graphs": graphs, "variants": variants, "reference": sorted(names), "ref": ref,
                        "times": times, "vendor": sorted(v for v in variants if (backend, v) in vendors)}
    return out


def figure_subtitle(contexts, commands=(), commit=None):
    """'NVIDIA H200 · commit daa8b07 · 2026-11-23' from what the JSON context and the options give."""
    devices, dates = [], []
    for _, ctx in contexts:
        d = ctx.get("sparseport_device", "").split(",")[0].strip()
        if not d and ctx.get("host_name"):
            d = f"{ctx['host_name']}, {ctx.get('num_cpus', '?')} CPUs"
        if d and d not in devices:
            devices.append(d)
        day = str(ctx.get("date", ""))[:10]
        if day and day not in dates:
            dates.append(day)
        if not commit:
            commit = next((str(ctx[k]) for k in COMMIT_KEYS if ctx.get(k)), None)
    if not commit:
        for c in commands or ():
            m = re.search(r"\bcommit ([0-9a-f]{7,40})\b", c)
            if m:
                commit = m.group(1)
                break
    parts = [" + ".join(devices) or "device not recorded", f"commit {commit}" if commit else "commit not recorded"]
    if dates:
        parts.append(", ".join(dates))
    return " · ".join(parts)


def import_pyplot():
    """matplotlib.pyplot on the Agg backend (no display), or FiguresUnavailable saying what to install."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError as e:
        raise FiguresUnavailable(
            f"figures need matplotlib, which {sys.executable} cannot import ({e}); install it (Debian: "
            "apt-get install python3-matplotlib; PyPI: python3 -m pip install matplotlib)") from e
    return plt, ticker


def log_ticks(lo, hi):
    """Tick values for a log axis from lo to hi: 1-2-5 per decade, denser when the span is small."""
    for steps in ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8)):
        ticks = sorted({float(f"{m * 10.0 ** e:.6g}") for e in range(math.floor(math.log10(lo)) - 1,
                                                                     math.ceil(math.log10(hi)) + 1) for m in steps})
        ticks = [t for t in ticks if lo <= t <= hi]
        if len(ticks) >= 4:
            return ticks
    return ticks


def tick_label(v, suffix=""):
    return f"{v:.3g}{suffix}"


def setup_log_axis(ax, ticker, lo, hi, suffix="", formatter=None):
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(ticker.FixedLocator(log_ticks(lo, hi)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(formatter or (lambda v, _: tick_label(v, suffix))))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.grid(axis="x", color="0.88", linewidth=0.6)
    ax.set_axisbelow(True)


def variant_colors(plt, names):
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def short_variant(v):
    return v.split(".", 1)[-1]


def save_png(fig, path):
    # No Software/date metadata: the same JSON gives the same bytes, so committed figures diff cleanly.
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})


def draw_speedup(plt, ticker, op, backend, data, subtitle, path):
    items = data["items"]
    n = len(items)
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.19 * n))
    variants = sorted({i["variant"] for i in items})
    colors = variant_colors(plt, variants)
    y = [n - 1 - k for k in range(n)]
    sp = [i["speedup"] for i in items]
    # Bars start at 1.0: a win reaches right of the line, a loss left of it.
    ax.barh(y, [s - 1.0 for s in sp], left=1.0, height=0.72, color=[colors[i["variant"]] for i in items])
    lo, hi = min(min(sp), 1.0) / 1.35, max(max(sp), 1.0) * 1.35
    setup_log_axis(ax, ticker, lo, hi, "×")
    ax.axvline(1.0, color="black", linewidth=1.0)
    for yy, s in zip(y, sp):
        ax.text(s * (1.02 if s >= 1 else 0.98), yy, f"{s:.2f}×" if s < 10 else f"{s:.1f}×", va="center",
                ha="left" if s >= 1 else "right", fontsize=6.5)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{i['graph']}  F={i['F']}" for i in items], fontsize=7)
    ax.set_ylim(-0.7, n - 0.3)
    vendor = ", ".join(data["vendor"])
    ax.set_xlabel(f"speedup of the best native variant over {vendor} (vendor time / time, same run; log scale)")
    wins = sum(s >= 1.0 for s in sp)
    ax.set_title(f"{op} on {backend}: best native variant vs the vendor ({vendor}), per input and F\n{subtitle}\n"
                 f"geomean {geomean(sp):.2f}×, {wins} of {n} inputs ≥ 1.0×, worst {min(sp):.2f}×", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[v]) for v in variants]
    ax.legend(handles, [short_variant(v) for v in variants], title="best native variant", fontsize=7,
              title_fontsize=7, loc="lower right", framealpha=0.9)
    save_png(fig, path)
    plt.close(fig)
    return (f"{op} on {backend}: speedup over {vendor} per input and F",
            f"{op} on {backend}: speedup of the best native variant over the vendor ({vendor}), per input and F; "
            f"geomean {geomean(sp):.2f}×, {wins} of {n} inputs ≥ 1.0×, worst {min(sp):.2f}×")


def draw_floor(plt, ticker, op, backend, data, subtitle, path):
    graphs, fs, points = data["graphs"], data["F"], data["points"]
    n = len(graphs)
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.24 * n))
    cmap = plt.get_cmap("viridis")
    markers = "osD^vP*Xh"
    ypos = {g: n - 1 - k for k, g in enumerate(graphs)}
    for y in ypos.values():
        ax.axhline(y, color="0.93", linewidth=0.6, zorder=0)
    for k, f in enumerate(fs):
        pts = [(points[(g, f)][0], ypos[g]) for g in graphs if (g, f) in points]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22, marker=markers[k % len(markers)],
                       color=cmap(k / max(1, len(fs) - 1) * 0.9), label=f"F={f}", zorder=3)
    vals = [v for v, _ in points.values()]
    lo, hi = min(vals) / 1.5, max(max(vals), 1.0) * 1.25
    setup_log_axis(ax, ticker, lo, hi)
    ax.axvline(1.0, color="black", linewidth=1.0)
    ax.text(1.0, n - 0.4, " floor", fontsize=7, va="bottom")
    ax.set_yticks(list(ypos.values()))
    ax.set_yticklabels(graphs, fontsize=7)
    ax.set_ylim(-0.7, n - 0.1)
    ax.set_xlabel("fraction of the compulsory floor (compulsory bytes / time / copy bandwidth; log scale)")
    ax.set_title(f"{op} on {backend}: fraction of the compulsory floor, best native variant per input and F\n"
                 f"{subtitle}\nmedian {statistics.median(vals):.3g}, best {max(vals):.3g}, worst {min(vals):.3g}",
                 fontsize=9)
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9)
    save_png(fig, path)
    plt.close(fig)
    return (f"{op} on {backend}: fraction of the compulsory floor per input and F",
            f"{op} on {backend}: fraction of the compulsory floor reached by the best native variant per input, "
            f"one marker per F; median {statistics.median(vals):.3g}, worst {min(vals):.3g}")


def draw_times(plt, ticker, op, backend, data, subtitle, path):
    graphs, fs, variants, times, ref = data["graphs"], data["F"], data["variants"], data["times"], data["ref"]
    n = len(graphs)
    fig, axes = plt.subplots(1, len(fs), figsize=(3.4 * len(fs) + 2.4, 1.9 + 0.24 * n), sharey=True,
                             squeeze=False)
    colors = variant_colors(plt, variants)
    markers = "os^vD<>Ph*X"
    ypos = {g: n - 1 - k for k, g in enumerate(graphs)}
    rel = {k: t / ref[(k[1], k[2])] for k, t in times.items()}
    lo, hi = min(min(rel.values()), 1.0) / 1.3, max(max(rel.values()), 1.0) * 1.3
    reference = ", ".join(data["reference"])
    for ax, f in zip(axes[0], fs):
        for y in ypos.values():
            ax.axhline(y, color="0.93", linewidth=0.6, zorder=0)
        for k, v in enumerate(variants):
            pts = [(rel[(v, g, f)], ypos[g]) for g in graphs if (v, g, f) in rel]
            if pts:
                vendor = v in data["vendor"]
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], color="black" if vendor else colors[v],
                           marker="x" if vendor else markers[k % len(markers)], s=22, zorder=3,
                           label=short_variant(v) + (" (vendor)" if vendor else ""))
        setup_log_axis(ax, ticker, lo, hi, "×")
        ax.axvline(1.0, color="black", linewidth=1.0)
        # The reference's own time, so the ratios keep their scale.
        for g in graphs:
            if (g, f) in ref:
                ax.text(hi, ypos[g], " " + fmt_time(ref[(g, f)]), fontsize=6, va="center", ha="left",
                        color="0.3", clip_on=False)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"F={f}", fontsize=9)
        ax.set_xlabel(f"time / {short_variant(reference)} time (log)", fontsize=8)
    axes[0][0].set_yticks(list(ypos.values()))
    axes[0][0].set_yticklabels(graphs, fontsize=7)
    axes[0][0].set_ylim(-0.7, n - 0.3)
    seen = OrderedDict()
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), title="variant", fontsize=7, title_fontsize=7,
               loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"{op} on {backend}: time of each variant (the scheduler's candidates) relative to {reference}, "
                 f"same run, per input; left of 1.0 is faster\n{subtitle}; grey: {reference}'s own time",
                 fontsize=9)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    fl = ", ".join(str(f) for f in fs)
    return (f"{op} on {backend}: time of each variant relative to {reference} per input",
            f"{op} on {backend}: time per call of every {op} variant the run timed (the scheduler's candidates) "
            f"over {reference}'s time on the same input, F = {fl}; {reference}'s own time at the right")


def draw_figures(rows, contexts, outdir, commands=(), commit=None, ops=None, candidates_ops=("spmm",),
                 features=None):
    """Draw the figures into outdir; returns [(path, alt text, caption)] in report order. Raises
    FiguresUnavailable without matplotlib. Prints to stderr which figures had no data."""
    plt, ticker = import_pyplot()
    ok = figure_rows([r for r in rows if not r["error"]], ops)
    vendors = vendor_variants(ok)
    subtitle = figure_subtitle(contexts, commands, commit)
    os.makedirs(outdir, exist_ok=True)
    made = []

    def path(kind, op, backend):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{kind}-{op}-{backend}") + ".png"
        return os.path.join(outdir, name)

    speed = speedup_vs_vendor_data(ok, vendors)
    if not speed:
        print("report.py: no speedup-vs-vendor figure: no row is timed against a vendor baseline "
              "(label 'baseline=VARIANT (vendor)')", file=sys.stderr)
    for (op, backend), data in speed.items():
        p = path("speedup-vs-vendor", op, backend)
        made.append((p, *draw_speedup(plt, ticker, op, backend, data, subtitle, p)))
    floor = floor_frac_data(ok, vendors)
    if not floor:
        print("report.py: no floor-fraction figure: no row has a floor_frac counter", file=sys.stderr)
    for (op, backend), data in floor.items():
        p = path("floor-frac", op, backend)
        made.append((p, *draw_floor(plt, ticker, op, backend, data, subtitle, p)))
    for op in candidates_ops:
        times = variant_times_data(ok, vendors, op, features)
        if not times:
            print(f"report.py: no variant-times figure for {op}: no {op} rows"
                  + (f" at F = {', '.join(map(str, features))}" if features else ""), file=sys.stderr)
        for backend, data in times.items():
            p = path("variant-times", op, backend)
            made.append((p, *draw_times(plt, ticker, op, backend, data, subtitle, p)))
    return made


def figures_markdown(figures, base_dir):
    """The "## Figures" section embedding [(path, alt text, caption)], paths relative to base_dir."""
    if not figures:
        return []
    out = ["## Figures", ""]
    for p, alt, caption in figures:
        rel = os.path.relpath(os.path.abspath(p), os.path.abspath(base_dir)).replace(os.sep, "/")
        if any(c in rel for c in " ()<>"):
            rel = f"<{rel}>"
        out += [f"![{alt}]({rel})", "", f"*{caption}.*", ""]
    return out


# ---- portability: a portable plugin against the native plugin of the same hardware (issue 36) ----
#
# One run that times both plugins (sparseport_bench_cpu --sp_ops=all: kokkos on Kokkos-OpenMP next
# to openmp) gives, per op, graph and F, the fastest variant of each plugin of its own (vendor
# libraries' variants left out: spmm.kokkoskernels, spmm.graphblas), their ratio, and the portable
# plugin's vendor row (Kokkos Kernels) against the portable plugin's best.

PORTABLE_BACKEND = "kokkos"
# The native plugin of the portable plugin's hardware, the first present in the run: the cuda plugin
# beside Kokkos-CUDA, the openmp plugin beside Kokkos-OpenMP.
NATIVE_BACKENDS = ("cuda", "openmp")
# Issue 36's targets: the portable plugin's best at least 0.9x the native plugin's best (geomean at
# F = 32 and at F = 128), and at least 1.5x its vendor library (Kokkos Kernels) on every input.
PORTABILITY_TARGET_NATIVE = 0.9
PORTABILITY_TARGET_F = (32, 128)
PORTABILITY_TARGET_VENDOR = 1.5
PORTABILITY_OP_ORDER = ("spmm", "spmm_mean", "spmm_max", "spmm_min", "spmv", "sddmm", "segment_reduce",
                        "scatter_reduce", "gather_scatter", "csr_attention", "csr_slice_rows",
                        "csr_slice_rows_dense", "csr_induced_subgraph", "csr_transpose")


def portability_op_key(op):
    known = op in PORTABILITY_OP_ORDER
    return (not known, PORTABILITY_OP_ORDER.index(op) if known else 0, op)


def pick_native(rows, portable, native=None):
    """The native backend to compare with: `native` when given, else the first of NATIVE_BACKENDS
    with rows in the run (None when there is none)."""
    if native:
        return native
    present = {r["backend"] for r in rows}
    return next((b for b in NATIVE_BACKENDS if b in present and b != portable), None)


def portability_data(rows, portable, native):
    """[{op, graph, F, portable, native, vendor, why}] sorted by op, graph, F: per input (op, graph, F)
    that either backend timed, the fastest row of each backend's own variants (None when it has none
    that ran), and the fastest of the portable backend's vendor variants (None when none ran). `why`
    gives the errors of the rows that did not run, for inputs missing a side."""
    rows = [r for r in rows if not is_target_input(r) and r["op"] != "determinism"
            and r["backend"] in (portable, native)]
    vendors = vendor_variants([r for r in rows if not r["error"]])
    inputs = OrderedDict()
    for r in sorted(rows, key=lambda r: (portability_op_key(r["op"]), r["graph"], r["F"], r["backend"], r["variant"])):
        inputs.setdefault((r["op"], r["graph"], r["F"]), []).append(r)
    out = []
    for (op, graph, features), rs in inputs.items():
        def fastest(backend, vendor):
            cand = [r for r in rs if r["backend"] == backend and not r["error"]
                    and ((backend, r["variant"]) in vendors) == vendor]
            return min(cand, key=lambda r: r["seconds"]) if cand else None
        item = {"op": op, "graph": graph, "F": features, "portable": fastest(portable, False),
                "native": fastest(native, False), "vendor": fastest(portable, True)}
        errors = sorted({f"{r['backend']}/{r['variant']}: {' '.join(str(r['error']).split())}" for r in rs
                         if r["error"] and (r["backend"], r["variant"]) not in vendors})
        item["why"] = "; ".join(errors)
        out.append(item)
    return out


def portability_ratios(items):
    """Adds to each item 'vs_native' (native best time / portable best time: 1 = as fast, above 1 =
    the portable plugin is faster) and 'vs_vendor' (vendor time / portable best time); None where a
    side is missing."""
    for i in items:
        p, n, v = i["portable"], i["native"], i["vendor"]
        i["vs_native"] = n["seconds"] / p["seconds"] if p and n else None
        i["vs_vendor"] = v["seconds"] / p["seconds"] if p and v else None
    return items


def portability_markdown(rows, contexts, portable=PORTABLE_BACKEND, native=None, title=None, commands=None):
    """The portability report as Markdown lines; (lines, status) where status is 0, or 1 when the run
    holds no input timed on both backends."""
    native = pick_native(rows, portable, native)
    out = ["# " + (title or f"{portable} plugin vs the {native or 'native'} plugin"), ""]
    if commands:
        out += ["Commands:", ""] + [f"    {c}" for c in commands] + [""]
    for path, ctx in contexts:
        keys = ["date", "host_name", "num_cpus", "sparseport_version", "sparseport_threads",
                f"sparseport_threads_{portable}", f"sparseport_threads_{native}", "sparseport_suite_size",
                "sparseport_ops", "report_note"]
        out.append(f"Source: `{path}`" + "".join(f"; {k}: {ctx[k]}" for k in keys if k in ctx))
        out.append("")
    if native is None:
        out += [f"No native backend in the run (looked for {', '.join(NATIVE_BACKENDS)}); nothing to compare.", ""]
        return out, 1
    items = portability_ratios(portability_data(rows, portable, native))
    both = [i for i in items if i["vs_native"] is not None]
    if not both:
        out += [f"No input (op, graph, F) has a timed row of both {portable} and {native}; nothing to compare.", ""]
        return out, 1
    pn, nn = portable, native
    out += [f"Per input (op, graph, F): the fastest of each plugin's own variants (vendor libraries' variants left "
            f"out) in this one run, and the {pn} plugin's vendor variant (Kokkos Kernels). "
            f"*{pn}/{nn}*: {nn} best time / {pn} best time (1 = as fast; above 1: {pn} faster). "
            f"*{pn}/vendor*: vendor time / {pn} best time. Times are medians per call (the `_median` aggregate "
            "with repetitions). Ratios from one run only; on a shared machine they move from run to run.", ""]

    # Targets.
    out += ["## Targets (issue 36)", "",
            "| target | scope | inputs | value | met |", "|---|---|---:|---:|---|"]
    for f in PORTABILITY_TARGET_F:
        for scope, sel in (("spmm (sum)", lambda i: i["op"] == "spmm"), ("every op", lambda i: True)):
            rs = [i["vs_native"] for i in both if i["F"] == f and sel(i)]
            g = geomean(rs)
            out.append(f"| geomean {pn}/{nn} >= {PORTABILITY_TARGET_NATIVE:g} at F = {f} | {scope} | {len(rs)} | "
                       f"{fmt(g)} | {'' if g is None else ('yes' if g >= PORTABILITY_TARGET_NATIVE else 'no')} |")
    vv = [i for i in items if i["vs_vendor"] is not None]
    if vv:
        worst = min(vv, key=lambda i: i["vs_vendor"])
        under = sum(i["vs_vendor"] < PORTABILITY_TARGET_VENDOR for i in vv)
        out.append(f"| {pn}/vendor >= {PORTABILITY_TARGET_VENDOR:g} on every input | "
                   f"{', '.join(sorted({i['op'] for i in vv}, key=portability_op_key))} | {len(vv)} | "
                   f"min {fmt(worst['vs_vendor'])} ({worst['graph']}, F = {worst['F']}); {under} under | "
                   f"{'yes' if under == 0 else 'no'} |")
    else:
        out.append(f"| {pn}/vendor >= {PORTABILITY_TARGET_VENDOR:g} on every input | (no vendor rows) | 0 | | |")
    out.append("")

    # Geomeans per op and F.
    out += ["## Geomeans per op and F", "",
            f"| op | F | inputs | geomean {pn}/{nn} | min | max | inputs with vendor | geomean {pn}/vendor | "
            f"min {pn}/vendor |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    groups = OrderedDict()
    for i in items:
        groups.setdefault((i["op"], i["F"]), []).append(i)
    per_f = OrderedDict()
    for (op, f), its in groups.items():
        rn = [i["vs_native"] for i in its if i["vs_native"] is not None]
        rv = [i["vs_vendor"] for i in its if i["vs_vendor"] is not None]
        per_f.setdefault(f, []).extend(rn)
        out.append(f"| {op} | {f or '-'} | {len(rn)} | {fmt(geomean(rn))} | {fmt(min(rn)) if rn else ''} | "
                   f"{fmt(max(rn)) if rn else ''} | {len(rv)} | {fmt(geomean(rv))} | {fmt(min(rv)) if rv else ''} |")
    for f in sorted(per_f):
        rn = per_f[f]
        out.append(f"| **every op** | {f or '-'} | {len(rn)} | **{fmt(geomean(rn))}** | {fmt(min(rn)) if rn else ''} | "
                   f"{fmt(max(rn)) if rn else ''} | | | |")
    rn = [i["vs_native"] for i in both]
    out.append(f"| **every op** | all | {len(rn)} | **{fmt(geomean(rn))}** | {fmt(min(rn))} | {fmt(max(rn))} | | | |")
    out.append("")

    # Per input.
    out += ["## Per input", "",
            f"| op | graph | F | best {pn} | time | best {nn} | time | {pn}/{nn} | vendor | time | {pn}/vendor |",
            "|---|---|---:|---|---:|---|---:|---:|---|---:|---:|"]
    missing = []
    for i in items:
        p, n, v = i["portable"], i["native"], i["vendor"]
        if p is None or n is None:
            missing.append(i)
        out.append(f"| {i['op']} | {i['graph']} | {i['F'] or '-'} | {p['variant'] if p else '(none ran)'} | "
                   f"{fmt_time(p['seconds']) if p else ''} | {n['variant'] if n else '(none ran)'} | "
                   f"{fmt_time(n['seconds']) if n else ''} | {fmt(i['vs_native'])} | {v['variant'] if v else ''} | "
                   f"{fmt_time(v['seconds']) if v else ''} | {fmt(i['vs_vendor'])} |")
    out.append("")
    if missing:
        out += ["Inputs without a timed row on one side (left out of the geomeans):", ""]
        for i in missing:
            why = i["why"].replace("|", "\\|") or "no row of that backend in the run"
            out.append(f"- {i['op']} {i['graph']} F = {i['F']}: {why}")
        out.append("")
    return out, 0


def render(rows, contexts, title, keep_order, commands=None, summary_only=False, figures_md=None):
    out = [f"# {title}", ""]
    if commands:
        out += ["Commands:", ""] + [f"    {c}" for c in commands] + [""]
    seen = {}
    for path, ctx in ([] if summary_only else contexts):
        out.append(f"Source: `{path}`")
        out.append("")
        keys = ["date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "report_note"]
        keys += sorted(k for k in ctx if k.startswith("sparseport_"))
        same = []
        for k in keys:
            if k not in ctx:
                continue
            if seen.get(k) == ctx[k] and k not in ("date", "sparseport_command_line", "report_note"):
                same.append(k)
                continue
            seen[k] = ctx[k]
            out.append(f"- {k}: {ctx[k]}")
        caches = ctx.get("caches")
        if caches and seen.get("caches") != caches:
            seen["caches"] = caches
            desc = ", ".join(f"L{c.get('level')} {c.get('type', '')} {c.get('size', 0) // 1024} KiB "
                             f"(shared by {c.get('num_sharing', 1)} CPUs)" for c in caches)
            out.append(f"- caches: {desc}")
        if same:
            out.append(f"- as above: {', '.join(same)}")
        out.append("")

    out += figures_md or []

    # Gathered bandwidth in TB/s for the device suites, GB/s otherwise.
    tera = any(ctx.get("sparseport_bandwidth_unit") == "TB/s" for _, ctx in contexts)
    bw_unit, bw_scale = ("TB/s", 1e-3) if tera else ("GB/s", 1.0)

    def bw(r):
        return r.get("GB/s") * bw_scale if r.get("GB/s") is not None else None

    ok = [r for r in rows if not r["error"]]
    skipped = [r for r in rows if r["error"]]
    if not keep_order:
        ok.sort(key=sort_key)
        skipped.sort(key=sort_key)

    # The target-only inputs have their own tables; the summaries stay comparable with older reports.
    suite_ok = [r for r in ok if not is_target_input(r)]
    targets_note = (" The inputs of the issue-4 target tables (their own section) are not counted here."
                    if len(suite_ok) < len(ok) else "")
    best = best_per_input(suite_ok)
    if best:
        out += ["## Best variant per input", "",
                "Per (op, backend), over the inputs (graph, F) with a baseline time: geometric mean of the speedup "
                "of the fastest variant on each input over the baseline measured in the same run. *best other*: "
                "the fastest variant other than the baseline (the issue's \"best variant per input\"); *best of "
                "all*: the baseline included (at least 1 up to noise). Time-weighted: sum of baseline times / sum "
                "of best times." + targets_note, "",
                "| op | backend | baseline | inputs | geomean best other | time-weighted best other | "
                "min | max | geomean best of all |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        for (op, backend), items in best.items():
            nat = [i for i in items if i["native"] is not None]
            sp = [i["baseline_s"] / i["native"]["seconds"] for i in nat]
            tw = (sum(i["baseline_s"] for i in nat) / sum(i["native"]["seconds"] for i in nat)) if nat else None
            any_sp = [i["baseline_s"] / i["any"]["seconds"] for i in items]
            bases = sorted({i["baseline"] or "?" for i in items})
            out.append(f"| {op} | {backend} | {', '.join(bases)} | {len(items)} | {fmt(geomean(sp))} | {fmt(tw)} | "
                       f"{fmt(min(sp)) if sp else ''} | {fmt(max(sp)) if sp else ''} | {fmt(geomean(any_sp))} |")
        out.append("")
        for (op, backend), items in best.items():
            if op not in ("spmm", "spmv"):
                continue
            out += [f"### {op} on {backend}: the best variant other than the baseline, per input", "",
                    f"| graph | F | best variant | time | {bw_unit} | floor frac | baseline time | speedup |",
                    "|---|---:|---|---:|---:|---:|---:|---:|"]
            for i in items:
                r = i["native"]
                if r is None:
                    continue
                out.append(f"| {i['graph']} | {i['F']} | {r['variant']} | {fmt_time(r['seconds'])} | {fmt(bw(r))} | "
                           f"{fmt(r.get('floor_frac'))} | {fmt_time(i['baseline_s'])} | "
                           f"{fmt(i['baseline_s'] / r['seconds'])} |")
            out.append("")

    out += target_tables(ok)

    out += ["## Summary per variant", "",
            "Per (op, backend, variant) over the rows with a baseline time: geometric mean of the speedups and "
            "the time-weighted speedup (sum of baseline times / sum of times)." + targets_note, "",
            "| op | backend | variant | rows | geomean speedup | time-weighted speedup | median floor frac |",
            "|---|---|---|---:|---:|---:|---:|"]
    summary = OrderedDict()
    for r in sorted(suite_ok, key=lambda r: (r["op"], r["backend"], r["variant"])):
        summary.setdefault((r["op"], r["backend"], r["variant"]), []).append(r)
    for (op, backend, variant), rs in summary.items():
        sp = [r for r in rs if r.get("speedup") and r.get("baseline_ms")]
        geo = geomean([r["speedup"] for r in sp])
        tw = (sum(r["baseline_ms"] * 1e-3 for r in sp) / sum(r["seconds"] for r in sp)) if sp else None
        ff = [r["floor_frac"] for r in rs if r.get("floor_frac") is not None]
        out.append(f"| {op} | {backend} | {variant} | {len(rs)} | {fmt(geo)} | {fmt(tw)} | "
                   f"{fmt(statistics.median(ff)) if ff else ''} |")
    out.append("")
    if summary_only:
        return "\n".join(out)

    out += ["## Rows", "",
            f"time: median per call; {bw_unit}: gathered bytes (dense rows read through the pattern) / time; floor "
            "frac: compulsory bytes / time / measured copy bandwidth; speedup: baseline time / time, both measured "
            "in the same run.", "",
            f"| op | backend | variant | graph | F | time | {bw_unit} | GFLOP/s | floor frac | speedup | vs |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in ok:
        out.append(f"| {r['op']} | {r['backend']} | {r['variant']} | {r['graph']} | {r['F']} | "
                   f"{fmt_time(r['seconds'])} | {fmt(bw(r))} | {fmt(r.get('GFLOP/s'))} | "
                   f"{fmt(r.get('floor_frac'))} | {fmt(r.get('speedup'))} | {baseline_name(r['label'])} |")
    out.append("")
    if skipped:
        out += ["## Skipped rows", "", "| op | backend | variant | graph | F | reason |", "|---|---|---|---|---:|---|"]
        for r in skipped:
            reason = " ".join(str(r["error"]).split()).replace("|", "\\|")
            out.append(f"| {r['op']} | {r['backend']} | {r['variant']} | {r['graph']} | {r['F']} | {reason} |")
        out.append("")
    return "\n".join(out)


def int_list(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected F values like 32,64, got {text!r}") from None


def name_list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: report.py cuda.json -o benchmarks/results/X.md --figures benchmarks/results/X-figs "
               "(figures: speedup-vs-vendor-OP-BACKEND.png, floor-frac-OP-BACKEND.png, "
               "variant-times-OP-BACKEND.png; the module docstring defines each).")
    p.add_argument("json", nargs="+", help="Google Benchmark JSON output (--benchmark_out_format=json)")
    p.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    p.add_argument("--title", default="SparsePort benchmark results")
    p.add_argument("--keep-order", action="store_true", help="rows in run order instead of op/graph/F order")
    p.add_argument("--summary", action="store_true", help="only the summaries (no context, rows or skipped rows)")
    p.add_argument("--command", action="append", default=[],
                   help="the exact command that produced the JSON, shown at the top (repeatable)")
    q = p.add_argument_group("portability (issue 36)")
    q.add_argument("--portability", action="store_true",
                   help=f"instead of the report: per op, graph and F the best {PORTABLE_BACKEND} variant against "
                        "the best variant of the native plugin of the same hardware, and against Kokkos Kernels, "
                        "with geomeans and the issue's targets")
    q.add_argument("--portable", default=PORTABLE_BACKEND, metavar="BACKEND",
                   help=f"the portable backend (default {PORTABLE_BACKEND})")
    q.add_argument("--native", metavar="BACKEND",
                   help=f"the native backend (default: the first of {', '.join(NATIVE_BACKENDS)} in the run)")
    g = p.add_argument_group("figures (need matplotlib)")
    g.add_argument("--figures", metavar="DIR",
                   help="also draw PNG figures into DIR (created if missing) and embed them in the Markdown, "
                        "linked relative to the Markdown file (to the current folder with stdout); without "
                        "matplotlib: exit status 3 before writing anything")
    g.add_argument("--figures-optional", action="store_true",
                   help="with --figures: without matplotlib, write the Markdown alone and print why")
    g.add_argument("--figure-ops", type=name_list, metavar="OP,...",
                   help="draw figures for these ops only (default: every op of the run)")
    g.add_argument("--candidates-op", type=name_list, default=["spmm"], metavar="OP,...",
                   help="ops of the time-per-variant figure (default: spmm)")
    g.add_argument("--figure-f", type=int_list, metavar="F,...",
                   help=f"F values of the time-per-variant figure (default: up to {FIGURE_MAX_F} of the run's)")
    g.add_argument("--commit", help="the commit shown in figure titles (default: context sparseport_commit, "
                                    "else 'commit HASH' in a --command)")
    args = p.parse_args(argv)
    if args.figures_optional and not args.figures:
        p.error("--figures-optional needs --figures DIR")
    try:
        rows, contexts = collect(args.json)
    except (OSError, ValueError) as e:
        print(f"report.py: cannot read the benchmark JSON: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("report.py: no rows named op/backend/variant/graph/F in " + ", ".join(args.json), file=sys.stderr)
        return 1
    if args.portability:
        title = args.title if args.title != p.get_default("title") else None
        lines, status = portability_markdown(rows, contexts, args.portable, args.native, title, args.command)
        text = "\n".join(lines)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        else:
            print(text)
        if status:
            print(f"report.py: no input was timed on both {args.portable} and "
                  f"{pick_native(rows, args.portable, args.native) or 'a native backend'}", file=sys.stderr)
        return status
    figures_md = []
    if args.figures:
        try:
            figures = draw_figures(rows, contexts, args.figures, args.command, args.commit, args.figure_ops,
                                   args.candidates_op, args.figure_f)
        except FiguresUnavailable as e:
            if not args.figures_optional:
                print(f"report.py: {e}; or leave out --figures (or add --figures-optional) for the Markdown "
                      "alone. Nothing was written.", file=sys.stderr)
                return 3
            print(f"report.py: no figures: {e}", file=sys.stderr)
            figures = []
        base = os.path.dirname(os.path.abspath(args.output)) if args.output else os.getcwd()
        figures_md = figures_markdown(figures, base)
        for path, _, _ in figures:
            print(f"report.py: wrote {path}", file=sys.stderr)
    text = render(rows, contexts, args.title, args.keep_order, args.command, args.summary, figures_md)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
