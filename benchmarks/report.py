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
baseline time, as DESIGN.md section 5 asks: never a single best case.

Python 3 standard library only.
"""

import argparse
import json
import math
import statistics
import sys
from collections import OrderedDict

TIME_SUFFIXES = ("/manual_time", "/real_time")
COUNTERS = ("median_ms", "GB/s", "GFLOP/s", "floor_frac", "floor_ms", "baseline_ms", "speedup")
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


def collect(paths):
    """Rows in first-seen order: key -> {'name':..., 'seconds', counters, 'label', 'error'}."""
    groups = OrderedDict()
    contexts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        contexts.append((path, data.get("context", {})))
        for b in data.get("benchmarks", []):
            name = parse_name(b.get("run_name", b.get("name", "")))
            if name is None:
                continue
            g = groups.setdefault(name["key"], {"name": name, "iterations": [], "median": None, "error": None,
                                                "label": ""})
            if b.get("error_occurred"):
                g["error"] = b.get("error_message", "error")
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


def render(rows, contexts, title, keep_order):
    out = [f"# {title}", ""]
    for path, ctx in contexts:
        out.append(f"Source: `{path}`")
        out.append("")
        keys = ["date", "host_name", "executable", "num_cpus", "mhz_per_cpu"]
        keys += sorted(k for k in ctx if k.startswith("sparseport_"))
        for k in keys:
            if k in ctx:
                out.append(f"- {k}: {ctx[k]}")
        caches = ctx.get("caches")
        if caches:
            desc = ", ".join(f"L{c.get('level')} {c.get('type', '')} {c.get('size', 0) // 1024} KiB "
                             f"(shared by {c.get('num_sharing', 1)} CPUs)" for c in caches)
            out.append(f"- caches: {desc}")
        out.append("")

    ok = [r for r in rows if not r["error"]]
    skipped = [r for r in rows if r["error"]]
    if not keep_order:
        ok.sort(key=sort_key)
        skipped.sort(key=sort_key)

    out += ["## Summary", "",
            "Per (op, backend, variant) over the rows with a baseline time: geometric mean of the speedups and "
            "the time-weighted speedup (sum of baseline times / sum of times).", "",
            "| op | backend | variant | rows | geomean speedup | time-weighted speedup | median floor frac |",
            "|---|---|---|---:|---:|---:|---:|"]
    summary = OrderedDict()
    for r in sorted(ok, key=lambda r: (r["op"], r["backend"], r["variant"])):
        summary.setdefault((r["op"], r["backend"], r["variant"]), []).append(r)
    for (op, backend, variant), rs in summary.items():
        sp = [r for r in rs if r.get("speedup") and r.get("baseline_ms")]
        geo = math.exp(sum(math.log(r["speedup"]) for r in sp) / len(sp)) if sp else None
        tw = (sum(r["baseline_ms"] * 1e-3 for r in sp) / sum(r["seconds"] for r in sp)) if sp else None
        ff = [r["floor_frac"] for r in rs if r.get("floor_frac") is not None]
        out.append(f"| {op} | {backend} | {variant} | {len(rs)} | {fmt(geo)} | {fmt(tw)} | "
                   f"{fmt(statistics.median(ff)) if ff else ''} |")
    out.append("")

    out += ["## Rows", "",
            "time: median per call; GB/s: gathered bytes (dense rows read through the pattern) / time; floor frac: "
            "compulsory bytes / time / measured copy bandwidth; speedup: baseline time / time, both measured in "
            "the same run.", "",
            "| op | backend | variant | graph | F | time | GB/s | GFLOP/s | floor frac | speedup | vs |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in ok:
        out.append(f"| {r['op']} | {r['backend']} | {r['variant']} | {r['graph']} | {r['F']} | "
                   f"{fmt_time(r['seconds'])} | {fmt(r.get('GB/s'))} | {fmt(r.get('GFLOP/s'))} | "
                   f"{fmt(r.get('floor_frac'))} | {fmt(r.get('speedup'))} | {baseline_name(r['label'])} |")
    out.append("")
    if skipped:
        out += ["## Skipped rows", "", "| op | backend | variant | graph | F | reason |", "|---|---|---|---|---:|---|"]
        for r in skipped:
            reason = " ".join(str(r["error"]).split()).replace("|", "\\|")
            out.append(f"| {r['op']} | {r['backend']} | {r['variant']} | {r['graph']} | {r['F']} | {reason} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+", help="Google Benchmark JSON output (--benchmark_out_format=json)")
    p.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    p.add_argument("--title", default="SparsePort benchmark results")
    p.add_argument("--keep-order", action="store_true", help="rows in run order instead of op/graph/F order")
    args = p.parse_args(argv)
    try:
        rows, contexts = collect(args.json)
    except (OSError, ValueError) as e:
        print(f"report.py: cannot read the benchmark JSON: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("report.py: no rows named op/backend/variant/graph/F in " + ", ".join(args.json), file=sys.stderr)
        return 1
    text = render(rows, contexts, args.title, args.keep_order)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
