# SPDX-License-Identifier: Apache-2.0
"""Tests of benchmarks/report.py on a small synthetic Google Benchmark JSON (two backends,
repetitions with aggregate rows, a vendor and a non-vendor baseline, an spmv group whose baseline is
spmm.cusparse_spmv while spmm.cusparse is timed too, a skipped row), and of its --portability mode
on a synthetic kokkos + openmp run.

    python3 -m unittest discover -s benchmarks/python -p 'test_report*.py' -v
    python3 -m pytest -rs benchmarks/python/test_report.py

The Markdown part needs the standard library only. The figure part needs matplotlib and is skipped,
saying why, when this Python cannot import it; "figures asked for without matplotlib" is tested
with any Python (matplotlib is hidden from the child process).
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(os.path.dirname(HERE), "report.py")

_spec = importlib.util.spec_from_file_location("sparseport_bench_report", REPORT)
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

try:
    import matplotlib  # noqa: F401
    MATPLOTLIB_MISSING = None
except ImportError as e:
    MATPLOTLIB_MISSING = f"matplotlib is not importable by {sys.executable} ({e}); figure checks skipped"

GRAPHS = ("er:1000:1e-2", "rmat:10:8")
# Seconds per call of each (backend, variant) on GRAPHS[0]; GRAPHS[1] is twice as slow. At F = 64
# the natives take 1.5x their F = 32 time, the vendor 1.2x.
TIMES = {
    ("cuda", "spmm.cusparse"): 100e-6,   # vendor baseline
    ("cuda", "spmm.hub_split"): 50e-6,   # best native
    ("cuda", "spmm.row_warp"): 400e-6,
    ("openmp", "spmm.graphblas"): 2e-3,  # vendor baseline
    ("openmp", "spmm.merge_path"): 3e-3,  # best native, but slower than the vendor
    ("openmp", "spmm.rows"): 4e-3,
}
VENDOR = {"cuda": "spmm.cusparse", "openmp": "spmm.graphblas"}


def row(name, seconds, baseline_s, label, run_type="iteration", aggregate=None, floor_frac=None):
    b = {"name": name + ("_" + aggregate if aggregate else ""), "run_name": name, "run_type": run_type,
         "repetitions": 3, "iterations": 100, "real_time": seconds * 1e9, "cpu_time": seconds * 1e9,
         "time_unit": "ns", "median_ms": seconds * 1e3, "baseline_ms": baseline_s * 1e3,
         "speedup": baseline_s / seconds, "GB/s": 1e-6 / seconds, "floor_frac": floor_frac or 1e-6 / seconds,
         "label": label}
    if aggregate:
        b["aggregate_name"] = aggregate
    return b


def repeated(name, seconds, baseline_s, label):
    """Three repetitions (the median one is `seconds`) and their mean/median/stddev aggregates, with
    noise in the mean so that only the median aggregate gives `seconds`."""
    out = [row(name, seconds * k, baseline_s, label) for k in (0.9, 1.0, 1.3)]
    out.append(row(name, seconds * 1.07, baseline_s, label, "aggregate", "mean"))
    out.append(row(name, seconds, baseline_s, label, "aggregate", "median"))
    out.append(row(name, seconds * 0.1, baseline_s, label, "aggregate", "stddev"))
    return out


def synthetic_run():
    benches = []
    for (backend, variant), t in TIMES.items():
        for gi, graph in enumerate(GRAPHS):
            for f in (32, 64):
                scale = (1 + gi) * ((1.2 if variant == VENDOR[backend] else 1.5) if f == 64 else 1.0)
                base = TIMES[(backend, VENDOR[backend])] * (1 + gi) * (1.2 if f == 64 else 1.0)
                benches += repeated(f"spmm/{backend}/{variant}/{graph}/{f}/manual_time", t * scale, base,
                                    f"baseline={VENDOR[backend]} (vendor)")
    # A non-vendor baseline (no speedup-vs-vendor figure for this op).
    for variant, t in (("segment_reduce.atomic", 30e-6), ("segment_reduce.nnz_balanced", 20e-6)):
        benches += repeated(f"segment_reduce/cuda/{variant}/{GRAPHS[0]}/64/manual_time", t, 30e-6,
                            "baseline=segment_reduce.atomic")
    # The spmv group: the baseline is cusparseSpMV; spmm.cusparse is vendor code too and faster here,
    # so it must not be taken as the best native variant.
    for variant, t in (("spmm.cusparse_spmv", 10e-6), ("spmm.cusparse", 6e-6), ("spmm.vector_rows", 8e-6)):
        benches += repeated(f"spmv/cuda/{variant}/{GRAPHS[0]}/1/manual_time", t, 10e-6,
                            "baseline=spmm.cusparse_spmv (vendor)")
    benches.append({"name": f"spmm/cuda/spmm.row_subwarp/{GRAPHS[0]}/64/manual_time",
                    "run_name": f"spmm/cuda/spmm.row_subwarp/{GRAPHS[0]}/64/manual_time", "run_type": "iteration",
                    "error_occurred": True, "error_message": "does not apply: serves F <= 16 but F = 64",
                    "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"})
    context = {"date": "2026-11-26T10:00:00+00:00", "host_name": "testhost", "num_cpus": 16,
               "sparseport_device": "NVIDIA H200, 132 SMs, L2 61440 KiB", "sparseport_commit": "abc1234",
               "sparseport_bandwidth_unit": "TB/s"}
    return {"context": context, "benchmarks": benches}


def run_report(args, hide_matplotlib=False):
    """report.py's exit status, stdout and stderr, run by this Python; with hide_matplotlib the
    child cannot import matplotlib even where it is installed."""
    if hide_matplotlib:
        code = ("import runpy, sys; sys.modules['matplotlib'] = None; "
                f"sys.argv = [{REPORT!r}] + {list(args)!r}; runpy.run_path({REPORT!r}, run_name='__main__')")
        cmd = [sys.executable, "-c", code]
    else:
        cmd = [sys.executable, REPORT] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sparseport-report-test-")
        self.dir = self.tmp.name
        self.json = os.path.join(self.dir, "run.json")
        with open(self.json, "w", encoding="utf-8") as f:
            json.dump(synthetic_run(), f, indent=2)
        self.md = os.path.join(self.dir, "results", "run.md")
        os.makedirs(os.path.dirname(self.md))

    def tearDown(self):
        self.tmp.cleanup()

    def read_md(self):
        with open(self.md, encoding="utf-8") as f:
            return f.read()

    def test_markdown_without_figures(self):
        rc, _, err = run_report([self.json, "-o", self.md, "--title", "Synthetic"], hide_matplotlib=True)
        self.assertEqual(rc, 0, err)
        md = self.read_md()
        self.assertTrue(md.startswith("# Synthetic"))
        self.assertNotIn("## Figures", md)
        self.assertNotIn("![", md)
        # Best variant per input: cuda's hub_split is 2x cuSPARSE at F = 32 and 1.6x at F = 64.
        self.assertRegex(md, r"\| spmm \| cuda \| spmm.cusparse \| 4 \| 1.79 \|")
        # The median aggregate is used, not the mean: 50 us exactly on the first graph at F = 32.
        self.assertIn(f"| spmm | cuda | spmm.hub_split | {GRAPHS[0]} | 32 | 50 us |", md)
        self.assertIn("## Skipped rows", md)
        self.assertIn("does not apply: serves F <= 16 but F = 64", md)

    def test_figures_asked_without_matplotlib_fails(self):
        figs = os.path.join(self.dir, "results", "run-figs")
        rc, _, err = run_report([self.json, "-o", self.md, "--figures", figs], hide_matplotlib=True)
        self.assertEqual(rc, 3, err)
        self.assertIn("matplotlib", err)
        self.assertFalse(os.path.exists(self.md), "nothing is written when figures were asked for and cannot be drawn")
        self.assertFalse(os.path.exists(figs))

    def test_figures_optional_without_matplotlib_writes_markdown(self):
        figs = os.path.join(self.dir, "results", "run-figs")
        rc, _, err = run_report([self.json, "-o", self.md, "--figures", figs, "--figures-optional"],
                                hide_matplotlib=True)
        self.assertEqual(rc, 0, err)
        self.assertIn("no figures", err)
        self.assertIn("matplotlib", err)
        md = self.read_md()
        self.assertNotIn("## Figures", md)
        self.assertIn("## Rows", md)

    def test_figure_data(self):
        rows, contexts = report.collect([self.json])
        ok = report.figure_rows([r for r in rows if not r["error"]])
        vendors = report.vendor_variants(ok)
        self.assertIn(("cuda", "spmm.cusparse"), vendors)
        self.assertIn(("cuda", "spmm.cusparse_spmv"), vendors)
        self.assertIn(("openmp", "spmm.graphblas"), vendors)
        self.assertNotIn(("cuda", "segment_reduce.atomic"), vendors)

        speed = report.speedup_vs_vendor_data(ok, vendors)
        self.assertEqual(list(speed), [("spmm", "cuda"), ("spmm", "openmp"), ("spmv", "cuda")])
        cuda = speed[("spmm", "cuda")]
        self.assertEqual(cuda["vendor"], ["spmm.cusparse"])
        self.assertEqual({i["variant"] for i in cuda["items"]}, {"spmm.hub_split"})
        self.assertEqual([round(i["speedup"], 3) for i in cuda["items"]], [2.0, 2.0, 1.6, 1.6])
        omp = speed[("spmm", "openmp")]["items"]
        self.assertEqual({i["variant"] for i in omp}, {"spmm.merge_path"})
        self.assertTrue(all(i["speedup"] < 1 for i in omp))
        # spmv: the faster spmm.cusparse is vendor code; the best native is vector_rows at 1.25x.
        spmv = speed[("spmv", "cuda")]["items"]
        self.assertEqual([(i["variant"], round(i["speedup"], 3)) for i in spmv], [("spmm.vector_rows", 1.25)])
        self.assertNotIn(("segment_reduce", "cuda"), speed)

        floor = report.floor_frac_data(ok, vendors)
        self.assertIn(("segment_reduce", "cuda"), floor)
        ff, variant = floor[("spmm", "cuda")]["points"][(GRAPHS[0], 32)]
        self.assertEqual(variant, "spmm.hub_split")
        self.assertAlmostEqual(ff, 1e-6 / 50e-6)
        self.assertEqual(floor[("spmm", "cuda")]["graphs"], list(GRAPHS))

        times = report.variant_times_data(ok, vendors, "spmm")
        self.assertEqual(list(times), ["cuda", "openmp"])
        t = times["cuda"]
        self.assertEqual(t["F"], [32, 64])
        self.assertEqual(t["reference"], ["spmm.cusparse"])
        self.assertEqual(t["graphs"], [GRAPHS[1], GRAPHS[0]])  # slowest reference first
        self.assertNotIn("spmm.cusparse", t["variants"])
        self.assertAlmostEqual(t["times"][("spmm.hub_split", GRAPHS[0], 32)] / t["ref"][(GRAPHS[0], 32)], 0.5)
        self.assertEqual(report.variant_times_data(ok, vendors, "spmm", [64])["cuda"]["F"], [64])

        self.assertEqual(report.figure_subtitle(contexts), "NVIDIA H200 · commit abc1234 · 2026-11-26")
        self.assertIn("commit 1234567", report.figure_subtitle([("x", {})], ["run (commit 1234567)"]))
        self.assertEqual(report.pick_features([1, 4, 16, 32, 64, 128, 256]), [1, 16, 64, 256])
        ticks = report.log_ticks(0.7, 3.0)
        self.assertGreaterEqual(len(ticks), 4)
        self.assertIn(1.0, ticks)

    def test_figures(self):
        if MATPLOTLIB_MISSING:
            print(f"\nskipped: {MATPLOTLIB_MISSING}", file=sys.stderr)
            self.skipTest(MATPLOTLIB_MISSING)
        figs = os.path.join(self.dir, "results", "run-figs")
        rc, _, err = run_report([self.json, "-o", self.md, "--figures", figs])
        self.assertEqual(rc, 0, err)
        expected = ["speedup-vs-vendor-spmm-cuda.png", "speedup-vs-vendor-spmm-openmp.png",
                    "speedup-vs-vendor-spmv-cuda.png", "floor-frac-spmm-cuda.png", "floor-frac-spmm-openmp.png",
                    "floor-frac-spmv-cuda.png", "floor-frac-segment_reduce-cuda.png",
                    "variant-times-spmm-cuda.png", "variant-times-spmm-openmp.png"]
        self.assertEqual(sorted(os.listdir(figs)), sorted(expected))
        for name in expected:
            with open(os.path.join(figs, name), "rb") as f:
                head = f.read(8)
            self.assertEqual(head, b"\x89PNG\r\n\x1a\n", name)
            self.assertGreater(os.path.getsize(os.path.join(figs, name)), 5000, name)
        md = self.read_md()
        self.assertIn("## Figures", md)
        links = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", md)
        self.assertEqual(sorted(os.path.basename(p) for p in links), sorted(expected))
        for link in links:
            self.assertTrue(link.startswith("run-figs/"), link)  # relative to the Markdown file
            self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(self.md), link)), link)
        # The figures come before the tables.
        self.assertLess(md.index("## Figures"), md.index("## Best variant per input"))

        # Same JSON, same bytes (no timestamps in the PNGs): committed figures diff only when data moves.
        figs2 = os.path.join(self.dir, "again")
        rc, _, err = run_report([self.json, "-o", os.path.join(self.dir, "again.md"), "--figures", figs2,
                                 "--figure-ops", "spmm", "--figure-f", "64"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(os.listdir(figs2)),
                         sorted(n for n in expected if "-spmm-" in n))
        with open(os.path.join(figs, "speedup-vs-vendor-spmm-cuda.png"), "rb") as a, \
                open(os.path.join(figs2, "speedup-vs-vendor-spmm-cuda.png"), "rb") as b:
            self.assertEqual(a.read(), b.read())


def portability_run():
    """One CPU-suite run with the kokkos and openmp plugins side by side (sparseport_bench_cpu
    --sp_ops=all): spmm sum with both vendors (Kokkos Kernels, GraphBLAS), spmm_max without them, a
    per-graph op (F = 0), an op whose kokkos rows were all skipped, and reference rows to ignore."""
    benches = []
    # (op, backend, variant, graph, F) -> seconds; "-" marks a skipped row.
    times = {}
    for gi, graph in enumerate(GRAPHS):
        k = 1 + gi
        for f in (32, 128):
            w = f / 32
            times.update({
                ("spmm", "kokkos", "spmm.team_rows", graph, f): 100e-6 * k * w,
                ("spmm", "kokkos", "spmm.hub_split", graph, f): 120e-6 * k * w,
                ("spmm", "kokkos", "spmm.kokkoskernels", graph, f): 200e-6 * k * w,   # 2x team_rows
                ("spmm", "openmp", "spmm.rows", graph, f): 90e-6 * k * w,             # 0.9x: kokkos/openmp
                ("spmm", "openmp", "spmm.merge_path", graph, f): 95e-6 * k * w,
                ("spmm", "openmp", "spmm.graphblas", graph, f): 50e-6 * k * w,       # vendor: left out
                ("spmm", "reference", "spmm.serial", graph, f): 1e-3,
                ("spmm_max", "kokkos", "spmm.team_rows", graph, f): 200e-6 * k,
                ("spmm_max", "openmp", "spmm.rows", graph, f): 100e-6 * k,          # kokkos at 0.5x
                ("sddmm", "kokkos", "sddmm.team_rows", graph, f): "-",
                ("sddmm", "openmp", "sddmm.rows", graph, f): 10e-6,
            })
        times[("csr_transpose", "kokkos", "csr_transpose.count_sort", graph, 0)] = 40e-6
        times[("csr_transpose", "openmp", "csr_transpose.parallel", graph, 0)] = 80e-6   # kokkos at 2x
    for (op, backend, variant, graph, f), t in times.items():
        name = f"{op}/{backend}/{variant}/{graph}/{f}/manual_time"
        if t == "-":
            benches.append({"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
                            "error_message": "error: not today", "iterations": 0, "real_time": 0, "cpu_time": 0,
                            "time_unit": "ns"})
            continue
        vendor = {"kokkos": "spmm.kokkoskernels", "openmp": "spmm.graphblas"}.get(backend)
        label = f"baseline={vendor} (vendor)" if op == "spmm" and vendor else f"baseline={variant}"
        benches += repeated(name, t, t, label)
    context = {"date": "2026-12-03T10:00:00+00:00", "host_name": "testhost", "num_cpus": 2,
               "sparseport_threads_kokkos": "Kokkos::OpenMP, 2 threads", "sparseport_ops": "all"}
    return {"context": context, "benchmarks": benches}


class PortabilityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sparseport-portability-test-")
        self.json = os.path.join(self.tmp.name, "run.json")
        with open(self.json, "w", encoding="utf-8") as f:
            json.dump(portability_run(), f, indent=2)

    def tearDown(self):
        self.tmp.cleanup()

    def test_data(self):
        rows, _ = report.collect([self.json])
        self.assertEqual(report.pick_native(rows, "kokkos"), "openmp")
        items = report.portability_ratios(report.portability_data(rows, "kokkos", "openmp"))
        self.assertEqual([i["op"] for i in items][:1], ["spmm"])
        self.assertEqual([i["op"] for i in items][-1], "csr_transpose")
        by = {(i["op"], i["graph"], i["F"]): i for i in items}
        spmm = by[("spmm", GRAPHS[1], 128)]
        # Vendor variants are neither side's best: team_rows against rows, not against GraphBLAS.
        self.assertEqual(spmm["portable"]["variant"], "spmm.team_rows")
        self.assertEqual(spmm["native"]["variant"], "spmm.rows")
        self.assertEqual(spmm["vendor"]["variant"], "spmm.kokkoskernels")
        self.assertAlmostEqual(spmm["vs_native"], 0.9)
        self.assertAlmostEqual(spmm["vs_vendor"], 2.0)
        self.assertAlmostEqual(by[("spmm_max", GRAPHS[0], 32)]["vs_native"], 0.5)
        self.assertIsNone(by[("spmm_max", GRAPHS[0], 32)]["vendor"])
        self.assertAlmostEqual(by[("csr_transpose", GRAPHS[0], 0)]["vs_native"], 2.0)
        sd = by[("sddmm", GRAPHS[0], 32)]
        self.assertIsNone(sd["portable"])
        self.assertIsNone(sd["vs_native"])
        self.assertIn("not today", sd["why"])
        self.assertFalse(any(i["native"] and i["native"]["backend"] == "reference" for i in items))

    def test_markdown(self):
        rc, out, err = run_report([self.json, "--portability"])
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("# kokkos plugin vs the openmp plugin"))
        # spmm alone at F = 32: 0.9 on both graphs (the target is met, just); every op at F = 32:
        # spmm 0.9, 0.9 and spmm_max 0.5, 0.5 (sddmm has no kokkos row) -> sqrt(0.45).
        self.assertIn("| geomean kokkos/openmp >= 0.9 at F = 32 | spmm (sum) | 2 | 0.9 | yes |", out)
        self.assertIn("| geomean kokkos/openmp >= 0.9 at F = 32 | every op | 4 | 0.671 | no |", out)
        self.assertIn("| kokkos/vendor >= 1.5 on every input | spmm | 4 | min 2 (", out)
        self.assertIn(f"| spmm | {GRAPHS[0]} | 32 | spmm.team_rows | 100 us | spmm.rows | 90 us | 0.9 | "
                      "spmm.kokkoskernels | 200 us | 2 |", out)
        self.assertIn(f"| csr_transpose | {GRAPHS[0]} | - | csr_transpose.count_sort | 40 us |", out)
        self.assertIn("| **every op** | all | 10 |", out)
        self.assertIn(f"- sddmm {GRAPHS[0]} F = 32: kokkos/sddmm.team_rows: error: not today", out)

    def test_no_native_backend(self):
        data = portability_run()
        data["benchmarks"] = [b for b in data["benchmarks"] if "/openmp/" not in b["name"]]
        only = os.path.join(self.tmp.name, "kokkos-only.json")
        with open(only, "w", encoding="utf-8") as f:
            json.dump(data, f)
        rc, out, err = run_report([only, "--portability", "--native", "openmp"])
        self.assertEqual(rc, 1)
        self.assertIn("nothing to compare", out)
        self.assertIn("no input was timed on both", err)


if __name__ == "__main__":
    unittest.main()
