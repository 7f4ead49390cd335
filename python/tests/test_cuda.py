# SPDX-License-Identifier: Apache-2.0
"""The ops on cuda tensors (the library's cuda backend) against the same ops on the CPU. Skipped,
with the reason, without a GPU or without the cuda plugin in this build."""
import pytest
import torch

import sparseport
import sparseport.torch as spt
from graphs import random_csr, rand

_status, _reason = {n: (s, r) for n, s, r in sparseport.backends()}["cuda"]
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)
if _status != "available":
    pytest.skip(f"the library's cuda backend is {_status}: {_reason}", allow_module_level=True)

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}


def to_cuda(A):
    return spt.CSR(A.rowptr.cuda(), A.col.cuda(), None if A.values is None else A.values.cuda(), A.shape)


def both(fn, A, *dense):
    """fn on the CPU and on cuda:0, with the gradients of the dense inputs and A.values."""
    out = []
    for dev in ("cpu", "cuda"):
        Ad = A if dev == "cpu" else to_cuda(A)
        v = Ad.values.detach().clone().requires_grad_(True)
        xs = [t.detach().to(dev).requires_grad_(True) for t in dense]
        y = fn(Ad.with_values(v), *xs)
        y.square().sum().backward()
        out.append([y.detach().cpu(), v.grad.cpu() if v.grad is not None else None] + [x.grad.cpu() for x in xs])
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_ops_match_cpu(dtype, index_dtype):
    A = random_csr(300, 200, seed=1, index_dtype=index_dtype, dtype=dtype, max_degree=10)
    B, X, Y = rand(200, 33, seed=2, dtype=dtype), rand(300, 33, seed=3, dtype=dtype), rand(200, 33, seed=4, dtype=dtype)
    cases = [(lambda a, b, r=r: spt.spmm(a, b, r), (B,)) for r in ("sum", "mean", "max", "min")]
    cases += [(lambda a, x, y: spt.sddmm(a, x, y).values, (X, Y)),
              (lambda a, q, k, v: spt.csr_attention(a, q, k, v), (X, Y, B))]
    for fn, dense in cases:
        cpu, gpu = both(fn, A, *dense)
        for c, g in zip(cpu, gpu):
            if c is not None:
                torch.testing.assert_close(g, c, **TOL[dtype])


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
def test_segment_scatter_match_cpu(reduce):
    index = torch.randint(0, 100, (5000,), generator=torch.Generator().manual_seed(1))
    src = rand(5000, 17, seed=2)
    for op, idx in ((spt.scatter_reduce, index), (spt.segment_reduce, index.sort().values)):
        torch.testing.assert_close(op(src.cuda(), idx.cuda(), 120, reduce).cpu(), op(src, idx, 120, reduce),
                                   **TOL[torch.float64])


def test_context_is_per_device():
    ctx = spt.context("cuda")
    assert ctx.backend == f"cuda:{torch.cuda.current_device()}" and ctx.device_memory
    assert spt.context(torch.device("cuda", torch.cuda.current_device())) is ctx


def test_compile_on_cuda():
    A = to_cuda(random_csr(50, 50, seed=3))
    x = rand(50, 8, seed=4, device="cuda", requires_grad=True)

    def f(a, x_):
        return spt.spmm(a, spt.csr_attention(a, x_, x_, x_), "mean").square().sum()

    torch._dynamo.reset()
    loss = torch.compile(f, fullgraph=True)(A, x)
    loss.backward()
    g = x.grad.clone()
    x.grad = None
    f(A, x).backward()
    torch.testing.assert_close(g, x.grad)
