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

Python 3 standard library only.
"""

import argparse
import json
import math
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


def render(rows, contexts, title, keep_order, commands=None, summary_only=False):
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+", help="Google Benchmark JSON output (--benchmark_out_format=json)")
    p.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    p.add_argument("--title", default="SparsePort benchmark results")
    p.add_argument("--keep-order", action="store_true", help="rows in run order instead of op/graph/F order")
    p.add_argument("--summary", action="store_true", help="only the summaries (no context, rows or skipped rows)")
    p.add_argument("--command", action="append", default=[],
                   help="the exact command that produced the JSON, shown at the top (repeatable)")
    args = p.parse_args(argv)
    try:
        rows, contexts = collect(args.json)
    except (OSError, ValueError) as e:
        print(f"report.py: cannot read the benchmark JSON: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("report.py: no rows named op/backend/variant/graph/F in " + ", ".join(args.json), file=sys.stderr)
        return 1
    text = render(rows, contexts, args.title, args.keep_order, args.command, args.summary)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
