# SPDX-License-Identifier: Apache-2.0
"""Writes the C++ evaluator's unit-test fixture: scheduler/models/test-fixture.json (a hand-made
sparseport-trees-1 file: one op, 2 variants, 2 tiny trees each) and scheduler/model/fixture_expected.json
(3 input rows and each variant's expected prediction, from the Python evaluator in common.py).
Row 0 sits exactly on a threshold ("<=" goes left); row 2 leaves out an input the file names (the
evaluator takes it as 0) and has one the file does not name (ignored).

  .venv-model/bin/python scheduler/model/fixture.py
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import common as C  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "scheduler", "models", "test-fixture.json")
EXPECTED = os.path.join(HERE, "fixture_expected.json")

FEATURES = ["f:log2_F", "f:log2_max_degree", "f:max_row_share"]

DOC = {
    "format": C.FORMAT,
    "device_class": "test-fixture",
    "created": "2025-01-01T00:00:00Z",
    "trained_on": "hand-made fixture for the C++ evaluator test",
    "features": FEATURES,
    "ops": {
        "spmm": {
            "margin": 0.35,
            "sigma": 0.2,
            "variants": {
                "spmm.row_warp": {
                    "base": 0.5,
                    "trees": [
                        # x[1] <= 8 ? -0.25 : (x[0] <= 5 ? 0.125 : 0.75)
                        {"split": [1, -1, 0, -1, -1], "threshold": [8.0, 0, 5.0, 0, 0],
                         "left": [1, -1, 3, -1, -1], "right": [2, -1, 4, -1, -1],
                         "value": [0, -0.25, 0, 0.125, 0.75]},
                        # a single leaf
                        {"split": [-1], "threshold": [0], "left": [-1], "right": [-1], "value": [0.0625]},
                    ],
                },
                "family:rows": {
                    "base": -0.1,
                    "trees": [
                        # x[2] <= 0.01 ? 0.2 : 1.5
                        {"split": [2, -1, -1], "threshold": [0.01, 0, 0], "left": [1, -1, -1],
                         "right": [2, -1, -1], "value": [0, 0.2, 1.5]},
                        # x[0] <= 6.5 ? (x[2] <= 0.5 ? -0.05 : 0.1) : 0.3   (children listed out of order)
                        {"split": [0, -1, 2, -1, -1], "threshold": [6.5, 0, 0.5, 0, 0],
                         "left": [2, -1, 3, -1, -1], "right": [1, -1, 4, -1, -1],
                         "value": [0, 0.3, 0, -0.05, 0.1]},
                    ],
                },
            },
        }
    },
}

ROWS = [
    {"f:log2_F": 5.0, "f:log2_max_degree": 8.0, "f:max_row_share": 0.01},  # both on thresholds: left
    {"f:log2_F": 7.0, "f:log2_max_degree": 12.5, "f:max_row_share": 0.25},
    {"f:log2_max_degree": 9.0, "f:max_row_share": 0.6, "f:not_in_model": 3.0},  # f:log2_F absent: 0
]


def main():
    os.makedirs(os.path.dirname(MODEL), exist_ok=True)
    with open(MODEL, "w") as fh:
        json.dump(DOC, fh, indent=1)
        fh.write("\n")
    expected = {"model": "scheduler/models/test-fixture.json", "op": "spmm", "features": FEATURES,
                "note": "x[i] = row[features[i]], 0 when absent; prediction = base + sum of leaf values",
                "rows": []}
    for r in ROWS:
        x = [float(r.get(f, 0.0)) for f in FEATURES]
        preds = {v: C.eval_variant(e, x) for v, e in DOC["ops"]["spmm"]["variants"].items()}
        expected["rows"].append({"inputs": r, "x": x, "expected": preds})
    with open(EXPECTED, "w") as fh:
        json.dump(expected, fh, indent=1)
        fh.write("\n")
    for row in expected["rows"]:
        print(row["x"], row["expected"])


if __name__ == "__main__":
    main()
