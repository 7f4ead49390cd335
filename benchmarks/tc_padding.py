# SPDX-License-Identifier: Apache-2.0
"""How much of spmm.tc_window's padding blocks of 8 slot columns would save over blocks of 16 (issue 33).

FlashSparse's 16-bit kernel takes k = 8 slot columns per mma (m16n8k8), ours k = 16 (m16n8k16): a
window's last block is padded to k. This counts, per matrix, the slot columns (distinct columns of each
8-row window; repeated (row, column) pairs ignored) and the padded slots at k = 16 and k = 8, so the
gathered B rows and tile bytes the smaller block would save. No GPU; numpy only.

    .venv-model/bin/python benchmarks/tc_padding.py ../shared/data/*.mtx.gz
"""
from __future__ import annotations

import gzip
import math
import sys

import numpy as np


def read_mtx(path: str) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Rows, columns and the (row, column) pairs of a Matrix Market file, symmetric ones expanded."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        symmetric = "symmetric" in f.readline().lower()
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        m, n = map(int, line.split()[:2])
        pairs = np.loadtxt(f, usecols=(0, 1), dtype=np.int64, ndmin=2)
    r, c = pairs[:, 0] - 1, pairs[:, 1] - 1
    if symmetric:
        off = r != c
        r, c = np.concatenate([r, c[off]]), np.concatenate([c, r[off]])
    return m, n, r, c


def main(paths: list[str]) -> None:
    ratios = []
    for path in paths:
        m, n, r, c = read_mtx(path)
        windows = np.unique((r // 8) * (n + 1) + c) // (n + 1)  # one per distinct (window, column)
        slots = np.bincount(windows, minlength=(m + 7) // 8)
        nnz, total = len(r), int(slots.sum())
        p16 = int(np.sum(np.ceil(slots / 16) * 16))
        p8 = int(np.sum(np.ceil(slots / 8) * 8))
        ratios.append(p8 / p16)
        name = path.split("/")[-1].replace(".mtx.gz", "").replace(".mtx", "")
        print(f"{name:20s} nnz {nnz:9d} slots/nnz {total / nnz:5.3f} padded16/slots {p16 / total:5.3f} "
              f"padded8/slots {p8 / total:5.3f} tile fill k16 {nnz / (p16 * 8):5.3f} k8 {nnz / (p8 * 8):5.3f} "
              f"k8/k16 tiles {p8 / p16:5.3f}")
    print("geomean padded slots k8 / k16:", round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3))


if __name__ == "__main__":
    main(sys.argv[1:])
