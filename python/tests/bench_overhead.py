# SPDX-License-Identifier: Apache-2.0
"""Per-call overhead of the Python layers on a tiny spmm (4 x 4, 8 entries, F = 4, float32, CPU):
the median over N calls of each way in, from the C++ call alone to the public function with
autograd. Not a test (pytest does not collect it): python python/tests/bench_overhead.py [N]."""
import statistics
import sys
import time

import torch

import sparseport
import sparseport.torch as spt
from sparseport import _C


def median_us(fn, n):
    for _ in range(min(n, 100)):  # warm-up (and the scheduler's decision, if any)
        fn()
    t = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        t.append(time.perf_counter_ns() - t0)
    return statistics.median(t) / 1e3


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    torch.manual_seed(0)
    rowptr = torch.tensor([0, 2, 4, 6, 8], dtype=torch.int32)
    col = torch.tensor([0, 1, 1, 2, 2, 3, 3, 0], dtype=torch.int32)
    values = torch.rand(8)
    A = spt.CSR(rowptr, col, values, (4, 4))
    B = torch.rand(4, 4)
    C = torch.empty(4, 4)
    ctx = spt.context("cpu")
    args = (ctx, 4, 4, 8, rowptr.data_ptr(), col.data_ptr(), values.data_ptr(), _C.I32, _C.F32,
            B.data_ptr(), 4, 4, 4, _C.F32, C.data_ptr(), 4, 0)
    Bg = B.clone().requires_grad_(True)
    S = torch.sparse_csr_tensor(rowptr.long(), col.long(), values, (4, 4))
    rows = [
        ("C++ sparseport::spmm alone (timed in C++)", _C.spmm_median_seconds(*args, n) * 1e6),
        ("_C.spmm from Python (raw pointers, nanobind)", median_us(lambda: _C.spmm(*args, None), n)),
        ("torch.ops.sparseport.spmm (custom op)", median_us(lambda: torch.ops.sparseport.spmm(rowptr, col, values, 4, B, "sum"), n)),
        ("sparseport.torch.spmm(A, B)", median_us(lambda: spt.spmm(A, B), n)),
        ("sparseport.torch.spmm(A, B) under no_grad", median_us(lambda: _no_grad(spt.spmm, A, B), n)),
        ("sparseport.torch.spmm(A, B), B requires grad", median_us(lambda: spt.spmm(A, Bg), n)),
        ("  for scale: torch.sparse.mm(csr, B)", median_us(lambda: torch.sparse.mm(S, B), n)),
        ("  for scale: torch.mm(B, B)", median_us(lambda: torch.mm(B, B), n)),
    ]
    print(f"sparseport {sparseport.__version__}, torch {torch.__version__}, backend {ctx.backend}, "
          f"threads {torch.get_num_threads()}, median of {n} calls")
    for name, us in rows:
        print(f"  {name:<52} {us:8.2f} us")


def _no_grad(fn, *args):
    with torch.no_grad():
        return fn(*args)


if __name__ == "__main__":
    main()
