# SPDX-License-Identifier: Apache-2.0
"""Tests of tests/kokkos/bench_table.py (gpu_check.sh's bench table, issue 36) on synthetic
`sparseport run --json` lines: the vendors' rows told apart by `vendor_variant`, an op without a
feature width, a row that did not verify, and the per-op speed ratios.

    python3 -m pytest -q tests/kokkos/test_bench_table.py
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_table.py")


def line(op, backend, variant, ms, f=32, vendor=None, verified=True, graph="g1"):
    return json.dumps({"op": op, "backend": backend, "variant": variant, "graph": graph, "n": 10, "nnz": 40,
                       "F": f, "ms": ms, "verified": verified, "vendor_variant": vendor})


class BenchTable(unittest.TestCase):
    def run_table(self, bench, auto=()):
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, x) for x in ("bench.jsonl", "bench.csv", "auto.jsonl")]
            with open(paths[0], "w") as fh:
                fh.write("\n".join(bench) + "\nnot json\n")
            with open(paths[2], "w") as fh:
                fh.write("\n".join(auto) + "\n")
            out = subprocess.run([sys.executable, TABLE, paths[0], paths[1], paths[2], "cuda"], capture_output=True,
                                 text=True, check=True).stdout
            with open(paths[1]) as fh:
                return out, {(r["op"], r["F"]): r for r in csv.DictReader(fh)}

    def test_vendor_rows_native_best_and_ratios(self):
        bench = [
            line("spmm", "cuda:0", "spmm.hub_split", 2.0, vendor="spmm.cusparse"),
            line("spmm", "cuda:0", "spmm.cusparse", 1.0, vendor="spmm.cusparse"),  # the native best: the vendor's
            line("spmm", "kokkos", "spmm.team_rows", 4.0, vendor="spmm.kokkoskernels"),
            line("spmm", "kokkos", "spmm.hub_split", 1.25, vendor="spmm.kokkoskernels"),
            line("spmm", "kokkos", "spmm.kokkoskernels", 0.5, vendor="spmm.kokkoskernels"),  # vendor: never "best"
            line("spmm", "kokkos", "spmm.wrong", 0.1, vendor="spmm.kokkoskernels", verified=False),
            line("csr_transpose", "cuda:0", "csr_transpose.parallel", 3.0, f=None),
            line("csr_transpose", "kokkos", "csr_transpose.count_sort", 2.0, f=None),
        ]
        auto = [line("spmm", "kokkos", "spmm.hub_split", 1.3, vendor="spmm.kokkoskernels")]
        out, rows = self.run_table(bench, auto)
        spmm = rows[("spmm", "32")]
        self.assertEqual(spmm["kokkos_best_variant"], "spmm.hub_split")
        self.assertEqual(spmm["native_best_variant"], "spmm.cusparse")
        self.assertAlmostEqual(float(spmm["kokkos_best_over_native_best"]), 1.25)
        self.assertAlmostEqual(float(spmm["kokkos_best_over_kokkos_vendor"]), 2.5)
        self.assertAlmostEqual(float(spmm["kokkos_auto_over_kokkos_best"]), 1.04)
        self.assertEqual(spmm["all_verified"], "False")  # spmm.wrong did not verify
        tr = rows[("csr_transpose", "")]
        self.assertEqual(tr["kokkos_best_variant"], "csr_transpose.count_sort")
        self.assertAlmostEqual(float(tr["kokkos_best_over_native_best"]), 0.667)
        # Per op: speed = native ms / kokkos ms; every op: geomean of 0.8 and 1.5.
        self.assertRegex(out, r"\nspmm\s+1\s+0\.800\s+0\.800\s+1\s+1\s+0\.40x")
        self.assertRegex(out, r"\ncsr_transpose\s+1\s+1\.500\s+1\.500\s+1\s+1\s+-")
        self.assertRegex(out, r"\nevery op\s+2\s+1\.095\s+0\.800")

    def test_a_block_per_kokkos_setting_against_the_same_native_rows(self):
        def tagged(env, *a, **k):
            return '{"kokkos_env":"%s",' % env + line(*a, **k)[1:]
        bench = [
            line("spmm", "cuda:0", "spmm.hub_split", 1.0, vendor="spmm.cusparse"),
            tagged("-", "spmm", "kokkos", "spmm.hub_split", 2.0, vendor="spmm.kokkoskernels"),
            tagged("SPARSEPORT_KOKKOS_GROUPS=0", "spmm", "kokkos", "spmm.hub_split", 4.0, vendor="spmm.kokkoskernels"),
        ]
        out, _ = self.run_table(bench)
        self.assertIn("## kokkos under -", out)
        self.assertIn("## kokkos under SPARSEPORT_KOKKOS_GROUPS=0", out)
        blocks = out.split("## kokkos under ")
        self.assertRegex(blocks[1], r"\nspmm\s+1\s+0\.500\s")
        self.assertRegex(blocks[2], r"\nspmm\s+1\s+0\.250\s")


if __name__ == "__main__":
    unittest.main()
