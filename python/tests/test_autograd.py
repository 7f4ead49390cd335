# SPDX-License-Identifier: Apache-2.0
"""Gradients: torch.autograd.gradcheck in float64 for every op and reduction (small random graphs
with empty rows, repeated columns and a hub row; int32 and int64 indices), and gradients against
the pure-torch references' autograd on larger graphs in float32 and float64."""
import pytest
import torch
from torch.autograd import gradcheck, gradgradcheck

import sparseport.torch as spt
import sparseport
from graphs import (random_csr, rand, ref_attention, ref_reduce, ref_reduce_lowest, ref_sddmm, ref_spmm, seed_of,
                    tolerances)

pytestmark = pytest.mark.usefixtures("backend")

REDUCES = ["sum", "mean", "max", "min"]
INDEX = [torch.int32, torch.int64]
# nondet_tol: the openmp variants may add in another order from one run to the next.
CHECK = dict(eps=1e-6, atol=1e-6, rtol=1e-4, nondet_tol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("values", [True, False])
def test_gradcheck_spmm(reduce, index_dtype, values):
    A = random_csr(6, 5, seed=seed_of("spmm", reduce, index_dtype, values), index_dtype=index_dtype, values=values)
    B = rand(5, 3, seed=1, requires_grad=True)
    if values:
        v = A.values.clone().requires_grad_(True)
        assert gradcheck(lambda v_, b_: spt.spmm(A.with_values(v_), b_, reduce), (v, B), **CHECK)
    else:
        assert gradcheck(lambda b_: spt.spmm(A, b_, reduce), (B,), **CHECK)


@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("values", [True, False])
def test_gradcheck_sddmm(index_dtype, values):
    A = random_csr(6, 5, seed=seed_of("sddmm", index_dtype, values), index_dtype=index_dtype, values=values)
    X, Y = rand(6, 3, seed=1, requires_grad=True), rand(5, 3, seed=2, requires_grad=True)
    if values:
        v = A.values.clone().requires_grad_(True)
        assert gradcheck(lambda v_, x, y: spt.sddmm(A.with_values(v_), x, y).values, (v, X, Y), **CHECK)
    else:
        assert gradcheck(lambda x, y: spt.sddmm(A, x, y).values, (X, Y), **CHECK)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("sorted_", [True, False])
def test_gradcheck_segment_scatter(reduce, index_dtype, sorted_):
    g = torch.Generator().manual_seed(seed_of(reduce, index_dtype, sorted_))
    index = torch.randint(0, 6, (15,), generator=g)
    index[index == 2] = 3  # an empty segment
    if sorted_:
        index = index.sort().values
    index = index.to(index_dtype)
    src = rand(15, 3, seed=4, requires_grad=True)
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce
    assert gradcheck(lambda s: op(s, index, 7, reduce), (src,), **CHECK)


def segment_index(seed, E, sorted_, index_dtype, segments=6):
    """E entries in [0, segments) without 2 (an empty segment; callers add empty ones at the end)."""
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, segments, (E,), generator=g)
    index[index == 2] = 3
    if sorted_:
        index = index.sort().values
    return index.to(index_dtype)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("sorted_", [True, False])
def test_gradcheck_segment_scatter_ties(reduce, index_dtype, sorted_):
    """Every message sent twice into its segment (the twins move together under gradcheck's
    perturbation, so they stay tied): max/min give the whole gradient to one twin, once; sum/mean
    count both. Segments 2, 6 and 7 are empty."""
    index = segment_index(seed_of("ties", reduce, index_dtype, sorted_), 9, sorted_, index_dtype)
    if sorted_:
        twins, send = index.repeat_interleave(2), (lambda s: s.repeat_interleave(2, 0))
    else:
        twins, send = torch.cat([index, index]), (lambda s: torch.cat([s, s]))
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce
    src = rand(9, 3, seed=5, requires_grad=True)
    assert gradcheck(lambda s: op(send(s), twins, 8, reduce), (src,), **CHECK)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("sorted_", [True, False])
def test_gradgradcheck_segment_scatter(reduce, sorted_):
    """The backward ops have a backward too (double backward, e.g. gradient penalties)."""
    index = segment_index(seed_of("gradgrad", reduce, sorted_), 15, sorted_, torch.int64)
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce
    src = rand(15, 3, seed=6, requires_grad=True)
    assert gradgradcheck(lambda s: op(s, index, 7, reduce), (src,), **CHECK)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("sorted_", [True, False])
def test_segment_scatter_ties_match_reference(reduce, dtype, index_dtype, sorted_):
    """Values and gradients against scatter_reduce(include_self=False) with torch_scatter's tie rule
    written out (graphs.ref_reduce_lowest), on messages full of ties, with empty segments and, for
    max/min, NaN messages (the first NaN of a segment wins)."""
    E, N, F = 300, 40, 5
    index = segment_index(seed_of("tie-ref", reduce, dtype, index_dtype, sorted_), E, sorted_, index_dtype, segments=35)
    g = torch.Generator().manual_seed(seed_of("tie-values", reduce, dtype))
    src = torch.randint(-3, 4, (E, F), generator=g).to(dtype)
    if reduce in ("max", "min"):
        first = int((index == index[7]).nonzero()[0])  # two NaNs in message 7's segment, column 2
        src[7, 2] = src[first, 2] = float("nan")
    ops = {"ours": spt.segment_reduce if sorted_ else spt.scatter_reduce, "ref": ref_reduce_lowest}
    got = {}
    for name, op in ops.items():
        s = src.clone().requires_grad_(True)
        out = op(s, index, N, reduce)
        out.backward(torch.linspace(-1, 1, out.numel(), dtype=dtype).reshape(out.shape))
        got[name] = (out.detach(), s.grad)
    for a, b in zip(got["ours"], got["ref"]):
        torch.testing.assert_close(a, b, equal_nan=True, **tolerances(dtype))
    if reduce in ("max", "min"):
        assert got["ours"][1][:, 2][index.long() == int(index[7])].count_nonzero() == 1
    assert got["ours"][0][torch.tensor([2, 35, 39])].eq(0).all()  # empty segments


@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("scale", [None, 0.7])
def test_gradcheck_csr_attention(index_dtype, scale):
    A = random_csr(6, 5, seed=seed_of("attention", index_dtype), index_dtype=index_dtype, values=False)
    Q, K, V = rand(6, 4, seed=1, requires_grad=True), rand(5, 4, seed=2, requires_grad=True), rand(5, 3, seed=3, requires_grad=True)
    assert gradcheck(lambda q, k, v: spt.csr_attention(A, q, k, v, scale=scale), (Q, K, V), **CHECK)


def test_gradcheck_csr_transpose_values():
    A = random_csr(6, 5, seed=7)
    v = A.values.clone().requires_grad_(True)
    assert gradcheck(lambda v_: spt.csr_transpose(A.with_values(v_)).values, (v,), **CHECK)


def grads(fn, *inputs):
    inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*inputs)
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weight).sum().backward()
    return [out.detach()] + [t.grad for t in inputs]


def assert_same_grads(ours, ref, dtype):
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, **tolerances(dtype))


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", INDEX)
def test_grads_match_reference(reduce, dtype, index_dtype):
    A = random_csr(120, 90, seed=seed_of("ref", reduce, dtype, index_dtype), index_dtype=index_dtype, dtype=dtype)
    B, X, Y = rand(90, 7, seed=1, dtype=dtype), rand(120, 7, seed=2, dtype=dtype), rand(90, 7, seed=3, dtype=dtype)

    def with_values(fn):
        return lambda v, *rest: fn(A.with_values(v), *rest)

    assert_same_grads(grads(with_values(lambda a, b: spt.spmm(a, b, reduce)), A.values, B),
                      grads(with_values(lambda a, b: ref_spmm(a, b, reduce)), A.values, B), dtype)
    assert_same_grads(grads(with_values(lambda a, x, y: spt.sddmm(a, x, y).values), A.values, X, Y),
                      grads(with_values(ref_sddmm), A.values, X, Y), dtype)
    assert_same_grads(grads(lambda q, k, v: spt.csr_attention(A, q, k, v), X, Y, B),
                      grads(lambda q, k, v: ref_attention(A, q, k, v), X, Y, B), dtype)
    g = torch.Generator().manual_seed(3)
    index = torch.randint(0, 50, (400,), generator=g).to(index_dtype)
    src = rand(400, 5, seed=5, dtype=dtype)
    assert_same_grads(grads(lambda s: spt.scatter_reduce(s, index, 60, reduce), src),
                      grads(lambda s: ref_reduce(s, index, 60, reduce), src), dtype)
    index = index.sort().values
    assert_same_grads(grads(lambda s: spt.segment_reduce(s, index, 60, reduce), src),
                      grads(lambda s: ref_reduce(s, index, 60, reduce), src), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("values", [True, False])
def test_mean_backward_weights_or_division(dtype, values):
    """mean's dB puts 1/deg on A^T's values where that moves fewer bytes than dividing dC (wide F),
    and divides dC where it does not (F = 1 under many entries a row): both against the reference,
    with empty rows and a hub row; the weights are built once per graph and dtype, not per call."""
    A = random_csr(80, 60, seed=seed_of("mean-fold", dtype, values), dtype=dtype, values=values, max_degree=12)
    nnz = A.col.shape[0]

    def weights_kept():  # mean's weights in the cached transposes' entries
        return sum(len(hit[5]) for hit in spt._transposes.values())

    spt._transposes.clear()
    for F, folds in [(1, False), (40, True)]:
        assert (2 * 80 * F > (3 if values else 1) * nnz) == folds  # the regime this case is meant to test
        B = rand(60, F, seed=F, dtype=dtype)
        with_values = (lambda fn: lambda v, b: fn(A.with_values(v), b)) if values else (lambda fn: lambda b: fn(A, b))
        args = (A.values, B) if values else (B,)
        for _ in range(2):
            assert_same_grads(grads(with_values(lambda a, b: spt.spmm(a, b, "mean")), *args),
                              grads(with_values(lambda a, b: ref_spmm(a, b, "mean")), *args), dtype)
        assert weights_kept() == (1 if folds else 0)


def test_max_ties_go_to_the_lowest_entry():
    src = torch.tensor([[1.0], [3.0], [3.0], [2.0]], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 0, 1])
    spt.segment_reduce(src, index, 2, "max").sum().backward()
    assert src.grad.flatten().tolist() == [0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("reduce,want", [("max", [1.0, 1.0, 0.0, 0.0, 0.0]), ("min", [1.0, 0.0, 1.0, 0.0, 0.0])])
def test_scatter_ties_go_to_the_lowest_message(reduce, want):
    """Unsorted: the lowest message number wins (not the first in some sorted order)."""
    src = torch.tensor([[2.0], [3.0], [1.0], [2.0], [3.0]], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([1, 0, 0, 1, 0], dtype=torch.int32)
    spt.scatter_reduce(src, index, 3, reduce).sum().backward()
    assert src.grad.flatten().tolist() == want


def test_segment_csr_cache_follows_the_index_tensor():
    """The SegmentCsr kept per index tensor: reused while the tensor lives, dropped when it dies,
    rebuilt after an in-place change; a strided (copied) index is not kept."""
    spt._segment_csrs.clear()
    src = rand(12, 2, seed=1, requires_grad=True)
    index = torch.tensor([0, 0, 1, 1, 1, 3, 3, 4, 4, 4, 4, 5])
    for _ in range(3):
        spt.segment_reduce(src, index, 7, "max").sum().backward()
    assert len(spt._segment_csrs) == 1
    (entry,) = spt._segment_csrs.values()
    assert entry.ready == {"max"}
    index[5:7] = 2  # in place: a new version, a new entry; the answer follows the new index
    src.grad = None
    spt.segment_reduce(src, index, 7, "min").backward(torch.ones(7, 2, dtype=torch.float64))
    assert len(spt._segment_csrs) == 2
    torch.testing.assert_close(src.grad, (src == ref_reduce(src, index, 7, "min")[index]).double())  # no ties
    torch.testing.assert_close(spt.segment_reduce(src, index, 7, "max"), ref_reduce(src, index, 7, "max"))
    del index, entry
    assert len(spt._segment_csrs) == 0
    wide = torch.tensor([[0, 9], [0, 9], [1, 9], [2, 9]])
    src = rand(4, 2, seed=2, requires_grad=True)
    out = spt.scatter_reduce(src, wide[:, 0], 3, "min")  # a strided index: copied for the call
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(out, ref_reduce(src, wide[:, 0], 3, "min"))
    torch.testing.assert_close(src.grad, (src == out[wide[:, 0]]).double())  # no ties: the minima
    assert len(spt._segment_csrs) == 0
    keep = [torch.arange(4) for _ in range(spt._SEGMENT_CACHE + 3)]
    for i in keep:
        spt.scatter_reduce(src, i, 4, "max")
    assert len(spt._segment_csrs) == spt._SEGMENT_CACHE
    with torch.no_grad():  # no backward to come: the plain forward, nothing kept
        spt._segment_csrs.clear()
        spt.scatter_reduce(src, keep[0], 4, "max")
    assert len(spt._segment_csrs) == 0


@pytest.mark.parametrize("reduce", ["max", "min"])
@pytest.mark.parametrize("sorted_", [True, False])
def test_direct_op_call_finds_the_winners_again(reduce, sorted_):
    """torch.ops.sparseport.segment_reduce max/min (no arg kept) has the same gradient as
    segment_reduce(), which keeps the forward's arg."""
    index = segment_index(seed_of("direct", reduce, sorted_), 40, sorted_, torch.int32)
    src = torch.randint(-2, 3, (40, 3), generator=torch.Generator().manual_seed(1)).double()
    direct = torch.ops.sparseport.segment_reduce if sorted_ else torch.ops.sparseport.scatter_reduce
    public = spt.segment_reduce if sorted_ else spt.scatter_reduce
    a, b = (grads(lambda s: fn(s, index, 8, reduce), src) for fn in (direct, public))
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("index_dtype", INDEX)
def test_segment_scatter_backward_of_empty_shapes(reduce, index_dtype):
    """No messages, no features, no segments: gradients of the right shape (zeros where empty)."""
    for op in (spt.segment_reduce, spt.scatter_reduce):
        for E, N, F in [(0, 4, 3), (5, 3, 0), (0, 0, 2), (1, 1, 1), (3, 5, 2)]:
            src = rand(E, F, seed=E + F, requires_grad=True)
            out = op(src, torch.zeros(E, dtype=index_dtype), N, reduce)
            out.backward(torch.ones_like(out))
            assert out.shape == (N, F) and out[1:].eq(0).all()
            want = torch.ones(E, F, dtype=torch.float64) / (E if reduce == "mean" else 1)
            if reduce in ("max", "min") and E > 0:
                want = (src == out[0]).double()
            torch.testing.assert_close(src.grad, want)


def test_segment_backward_needs_the_arg():
    grad = rand(3, 2, seed=1)
    with pytest.raises(ValueError, match="needs the forward's arg"):
        torch.ops.sparseport.segment_reduce_backward(grad, torch.tensor([0, 1, 1]), None, "max")
    with pytest.raises(sparseport.InvalidArgument, match="sorted"):
        torch.ops.sparseport.segment_reduce_backward(grad, torch.tensor([1, 0, 1]), None, "sum")


def test_no_grad_needed_for_integer_inputs_and_no_grad_mode():
    A = random_csr(10, 8, seed=1)
    B = rand(8, 4, seed=2, requires_grad=True)
    with torch.no_grad():
        assert not spt.spmm(A, B).requires_grad
    out = spt.spmm(A, B, "max")
    out.sum().backward()
    assert B.grad is not None and A.values.grad is None
