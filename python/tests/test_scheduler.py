# SPDX-License-Identifier: Apache-2.0
"""The ops under the input-aware scheduler (SPARSEPORT_SCHEDULER=auto, the library's default; the
rest of the suite runs with it off, see conftest.py): same results, forward and backward."""
import pytest
import torch

import sparseport.torch as spt
from graphs import random_csr, rand, ref_attention, ref_spmm, tolerances


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_auto_scheduler(monkeypatch, dtype):
    monkeypatch.setenv("SPARSEPORT_SCHEDULER", "auto")
    A = random_csr(600, 500, seed=2, dtype=dtype, max_degree=12)
    B = rand(500, 16, seed=3, dtype=dtype, requires_grad=True)
    for reduce in ("sum", "mean", "max"):
        for _ in range(2):  # the second call replays the decision
            torch.testing.assert_close(spt.spmm(A, B, reduce), ref_spmm(A, B, reduce), **tolerances(dtype))
    Q = rand(600, 16, seed=4, dtype=dtype)
    torch.testing.assert_close(spt.csr_attention(A, Q, B, B), ref_attention(A, Q, B, B), **tolerances(dtype))
    spt.spmm(A, B, "sum").sum().backward()
    torch.testing.assert_close(B.grad, ref_spmm(spt.csr_transpose(A), torch.ones(600, 16, dtype=dtype), "sum"),
                               **tolerances(dtype))
