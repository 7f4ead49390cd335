# SPDX-License-Identifier: Apache-2.0
"""The ops on cuda tensors (the library's cuda backend) against the same ops on the CPU. Skipped,
with the reason, without a GPU or without the cuda plugin in this build."""
import pytest
import torch

import sparseport
import sparseport.torch as spt
from torch.autograd import gradcheck, gradgradcheck

from graphs import random_csr, rand, ref_reduce_lowest, seed_of

_status, _reason = {n: (s, r) for n, s, r in sparseport.backends()}["cuda"]
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)
if _status != "available":
    pytest.skip(f"the library's cuda backend is {_status}: {_reason}", allow_module_level=True)

DTYPES = [torch.float32, torch.float64]
REDUCES = ["sum", "mean", "max", "min"]
CHECK = dict(eps=1e-6, atol=1e-6, rtol=1e-4, nondet_tol=1e-12)
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


def segment_index(seed, E, sorted_, index_dtype, segments):
    """E entries in [0, segments) without 2 (an empty segment), on the CPU."""
    index = torch.randint(0, segments, (E,), generator=torch.Generator().manual_seed(seed))
    index[index == 2] = 3
    return (index.sort().values if sorted_ else index).to(index_dtype)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("sorted_", [True, False])
def test_segment_scatter_grads_match_reference(reduce, dtype, index_dtype, sorted_):
    """Values and gradients on cuda against torch_scatter's tie rule written out (ties everywhere,
    empty segments, NaN messages for max/min) and against the CPU."""
    E, N, F = 3000, 120, 33
    index = segment_index(seed_of("cuda-ref", reduce, index_dtype, sorted_), E, sorted_, index_dtype, 100)
    src = torch.randint(-3, 4, (E, F), generator=torch.Generator().manual_seed(2)).to(dtype)
    if reduce in ("max", "min"):
        first = int((index == index[7]).nonzero()[0])
        src[7, 2] = src[first, 2] = float("nan")
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce
    weight = torch.linspace(-1, 1, N * F, dtype=dtype).reshape(N, F)
    got = {}
    for name, fn, dev in (("cuda", op, "cuda"), ("cpu", op, "cpu"), ("ref", ref_reduce_lowest, "cuda")):
        s = src.to(dev).detach().clone().requires_grad_(True)  # a leaf on every device
        out = fn(s, index.to(dev), N, reduce)
        out.backward(weight.to(dev))
        got[name] = (out.detach().cpu(), s.grad.cpu())
    for other in ("ref", "cpu"):
        for a, b in zip(got["cuda"], got[other]):
            torch.testing.assert_close(a, b, equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("sorted_", [True, False])
def test_gradcheck_segment_scatter_on_cuda(reduce, sorted_):
    """float64 gradcheck with empty segments and every message sent twice (tied twins), and the
    double backward."""
    index = segment_index(seed_of("cuda-gradcheck", reduce, sorted_), 9, sorted_, torch.int32, 6).cuda()
    twins = index.repeat_interleave(2) if sorted_ else torch.cat([index, index])
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce

    def f(s):
        return op(s.repeat_interleave(2, 0) if sorted_ else torch.cat([s, s]), twins, 8, reduce)

    src = rand(9, 3, seed=5, device="cuda", requires_grad=True)
    assert gradcheck(f, (src,), **CHECK)
    assert gradgradcheck(lambda s: op(s, index, 8, reduce), (src,), **CHECK)


def test_segment_scatter_graph_capture_replays_forward_and_backward():
    """segment/scatter max, min, mean and sum in a step captured in a CUDA graph (after warm-up
    calls, which build and keep each index's SegmentCsr and its transpose) replay to eager."""
    A = to_cuda(random_csr(3000, 3000, seed=10, max_degree=40))
    x = rand(3000, 16, seed=11, device="cuda", requires_grad=True)
    rows = torch.repeat_interleave(torch.arange(3000, device="cuda"), (A.rowptr[1:] - A.rowptr[:-1]).long())
    rows = rows.to(A.col.dtype)

    def step():
        msg = x.index_select(0, A.col.long())
        h = (spt.segment_reduce(msg, rows, 3000, "max") + spt.segment_reduce(msg, rows, 3000, "mean")
             + spt.scatter_reduce(msg, A.col, 3000, "min") + spt.scatter_reduce(msg, A.col, 3000, "sum"))
        h.square().sum().backward()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            x.grad = None
            step()
    torch.cuda.current_stream().wait_stream(side)
    want = x.grad.clone()
    g = torch.cuda.CUDAGraph()
    x.grad = None
    with torch.cuda.graph(g):
        step()
    x.grad.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(x.grad, want)


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


def test_ops_run_on_the_current_stream():
    """On a side stream, each op queues behind that stream's work (no wait on the default stream):
    B is written on the side stream right before the op reads it."""
    A = to_cuda(random_csr(2000, 2000, seed=5, max_degree=30))
    B = rand(2000, 64, seed=6, device="cuda")
    want = spt.spmm(A, B, "max")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        B2 = B * 1.0  # a kernel on the side stream the op must wait for
        got = spt.spmm(A, B2, "max")
        assert spt.context("cuda").stream == side.cuda_stream
    torch.cuda.current_stream().wait_stream(side)
    torch.testing.assert_close(got, want)
    spt.spmm(A, B, "sum")  # back on the default stream
    assert spt.context("cuda").stream == (torch.cuda.current_stream().cuda_stream or 1)


def test_cuda_graph_capture_replays_forward_and_backward():
    """A GNN step captured in a CUDA graph (after a warm-up call, which makes the scheduler's
    decision and checks the indices) replays to the eager result."""
    A = to_cuda(random_csr(3000, 3000, seed=7, max_degree=40))
    x = rand(3000, 32, seed=8, device="cuda", requires_grad=True)

    def step():
        h = spt.spmm(A, x, "mean") + spt.spmm(A, x, "max")
        h.square().sum().backward()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            x.grad = None
            step()
    torch.cuda.current_stream().wait_stream(side)
    want = x.grad.clone()
    g = torch.cuda.CUDAGraph()
    x.grad = None
    with torch.cuda.graph(g):
        step()
    x.grad.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(x.grad, want)


def test_scratch_goes_through_the_lent_allocator():
    """csr_transpose's sort takes scratch: with a counting allocator around PyTorch's lent to the
    context, every block taken is released, byte for byte, and the result is still right."""
    A = to_cuda(random_csr(5000, 4000, seed=9, max_degree=50))
    ctx = spt.context("cuda")
    taken, given = [], []

    def alloc(n, stream):
        taken.append(n)
        return torch.cuda.caching_allocator_alloc(n, torch.cuda.current_device(), stream)

    def release(ptr, n, stream):
        given.append(n)
        torch.cuda.caching_allocator_delete(ptr)

    ctx.set_scratch_allocator(alloc, release)
    try:
        T = spt.csr_transpose(A)
        torch.cuda.synchronize()
    finally:
        spt._lend_torch_allocator(ctx, torch.cuda.current_device())
    assert len(taken) > 0, "csr_transpose took no scratch through the lent allocator"
    assert sorted(taken) == sorted(given)
    dense = torch.zeros(A.shape, dtype=torch.float64)
    rows = torch.repeat_interleave(torch.arange(A.shape[0]), (A.rowptr[1:] - A.rowptr[:-1]).cpu().long())
    dense.index_put_((rows, A.col.cpu().long()), A.values.cpu(), accumulate=True)
    torch.testing.assert_close(T.to_torch().cpu().to_dense(), dense.t())
