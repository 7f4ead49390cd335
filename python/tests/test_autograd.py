# SPDX-License-Identifier: Apache-2.0
"""Gradients: torch.autograd.gradcheck in float64 for every op and reduction (small random graphs
with empty rows, repeated columns and a hub row; int32 and int64 indices), and gradients against
the pure-torch references' autograd on larger graphs in float32 and float64."""
import pytest
import torch
from torch.autograd import gradcheck

import sparseport.torch as spt
from graphs import random_csr, rand, ref_attention, ref_reduce, ref_sddmm, ref_spmm, seed_of, tolerances

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


def test_max_ties_go_to_the_lowest_entry():
    src = torch.tensor([[1.0], [3.0], [3.0], [2.0]], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 0, 1])
    spt.segment_reduce(src, index, 2, "max").sum().backward()
    assert src.grad.flatten().tolist() == [0.0, 1.0, 0.0, 1.0]


def test_no_grad_needed_for_integer_inputs_and_no_grad_mode():
    A = random_csr(10, 8, seed=1)
    B = rand(8, 4, seed=2, requires_grad=True)
    with torch.no_grad():
        assert not spt.spmm(A, B).requires_grad
    out = spt.spmm(A, B, "max")
    out.sum().backward()
    assert B.grad is not None and A.values.grad is None
