# SPDX-License-Identifier: Apache-2.0
"""Forward results against pure-torch references (torch.sparse.mm, index_add, scatter_reduce with
include_self=False) on random graphs, on every CPU backend; argument errors; input forms."""
import pytest
import torch

import sparseport
import sparseport.torch as spt
from graphs import random_csr, rand, ref_attention, ref_reduce, ref_sddmm, ref_spmm, rows_of, seed_of, tolerances

pytestmark = pytest.mark.usefixtures("backend")

REDUCES = ["sum", "mean", "max", "min"]
DTYPES = [torch.float32, torch.float64]
INDEX = [torch.int32, torch.int64]
SHAPES = [(1, 1), (7, 5), (40, 33), (200, 150)]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_spmm(reduce, dtype, index_dtype, values, shape):
    m, k = shape
    seed = seed_of(reduce, dtype, index_dtype, values, shape)
    A = random_csr(m, k, seed=seed, index_dtype=index_dtype, dtype=dtype, values=values)
    for f in (1, 3, 16):
        B = rand(k, f, seed=seed + f, dtype=dtype)
        torch.testing.assert_close(spt.spmm(A, B, reduce), ref_spmm(A, B, reduce), **tolerances(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_sddmm(dtype, index_dtype, values, shape):
    m, k = shape
    A = random_csr(m, k, seed=m * 7 + k, index_dtype=index_dtype, dtype=dtype, values=values)
    X, Y = rand(m, 5, seed=1, dtype=dtype), rand(k, 5, seed=2, dtype=dtype)
    S = spt.sddmm(A, X, Y)
    assert S.rowptr is A.rowptr and S.col is A.col and S.shape == A.shape
    torch.testing.assert_close(S.values, ref_sddmm(A, X, Y), **tolerances(dtype))


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("sorted_", [True, False])
def test_segment_and_scatter(reduce, dtype, index_dtype, sorted_):
    g = torch.Generator().manual_seed(5)
    for E, N, F in [(0, 4, 3), (1, 1, 1), (50, 10, 4), (300, 37, 9), (64, 64, 1)]:
        index = torch.randint(0, N, (E,), generator=g)
        if sorted_:
            index = index.sort().values
        index = index.to(index_dtype)
        src = rand(E, F, seed=E + F, dtype=dtype)
        op = spt.segment_reduce if sorted_ else spt.scatter_reduce
        torch.testing.assert_close(op(src, index, N, reduce), ref_reduce(src, index, N, reduce), **tolerances(dtype))
        # 1-D src gives 1-D out
        torch.testing.assert_close(op(src[:, 0].contiguous() if F else src.new_zeros(E), index, N, reduce),
                                   ref_reduce(src[:, 0] if F else src.new_zeros(E), index, N, reduce),
                                   **tolerances(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("shape", SHAPES)
def test_csr_attention(dtype, index_dtype, shape):
    m, n = shape
    A = random_csr(m, n, seed=m + n, index_dtype=index_dtype, dtype=dtype)
    Q, K, V = rand(m, 8, seed=1, dtype=dtype), rand(n, 8, seed=2, dtype=dtype), rand(n, 3, seed=3, dtype=dtype)
    torch.testing.assert_close(spt.csr_attention(A, Q, K, V), ref_attention(A, Q, K, V), **tolerances(dtype))
    torch.testing.assert_close(spt.csr_attention(A, Q, K, V, scale=0.3), ref_attention(A, Q, K, V, 0.3),
                               **tolerances(dtype))


@pytest.mark.parametrize("index_dtype", INDEX)
def test_csr_transpose(index_dtype):
    A = random_csr(30, 20, seed=3, index_dtype=index_dtype)
    T = spt.csr_transpose(A)
    assert T.shape == (20, 30) and T.rowptr.dtype == index_dtype and T.col.dtype == index_dtype
    dense_a = torch.zeros(A.shape, dtype=torch.float64).index_put_((rows_of(A), A.col.long()), A.values, accumulate=True)
    dense_t = torch.zeros(T.shape, dtype=torch.float64).index_put_((rows_of(T), T.col.long()), T.values, accumulate=True)
    torch.testing.assert_close(dense_t, dense_a.T)
    # within a row of the transpose, entries come in A's row order (stable)
    for r in range(T.shape[0]):
        seg = T.col[T.rowptr[r]:T.rowptr[r + 1]]
        assert bool((seg[1:] >= seg[:-1]).all())


def test_empty_and_degenerate():
    for m, k in [(0, 0), (0, 3), (3, 0), (4, 4)]:
        A = spt.CSR(torch.zeros(m + 1, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), None, (m, k))
        B = rand(k, 2, seed=0)
        for r in REDUCES:
            assert torch.equal(spt.spmm(A, B, r), torch.zeros(m, 2, dtype=torch.float64))
        assert spt.sddmm(A, rand(m, 2, seed=1), B).values.shape == (0,)
        assert torch.equal(spt.csr_attention(A, rand(m, 2, seed=1), B, B), torch.zeros(m, 2, dtype=torch.float64))
    A = random_csr(5, 4, seed=1)
    assert spt.spmm(A, rand(4, 0, seed=1)).shape == (5, 0)


def test_sparse_csr_tensor_input():
    A = random_csr(20, 15, seed=9)
    S = A.to_torch()
    assert S.layout == torch.sparse_csr
    B = rand(15, 4, seed=2)
    torch.testing.assert_close(spt.spmm(S, B), spt.spmm(A, B))
    torch.testing.assert_close(spt.sddmm(S, rand(20, 4, seed=3), B).values, spt.sddmm(A, rand(20, 4, seed=3), B).values)


def test_strided_operands():
    A = random_csr(12, 10, seed=4)
    B = rand(10, 8, seed=5)
    expect = spt.spmm(A, B)
    wide = torch.zeros(10, 20, dtype=torch.float64)
    wide[:, 3:11] = B  # ld 20, offset 3: passed as is
    torch.testing.assert_close(spt.spmm(A, wide[:, 3:11]), expect)
    torch.testing.assert_close(spt.spmm(A, B.T.contiguous().T), expect)  # column-major: copied
    torch.testing.assert_close(spt.spmm(A.with_values(torch.stack([A.values, A.values], 1)[:, 0]), B), expect)


def test_errors_carry_the_library_message():
    A = random_csr(6, 5, seed=1)
    with pytest.raises(ValueError, match=r"sparseport::spmm\[.*\]: B is 4x3 but must be 5x3 \(need B.rows == A.cols\)"):
        spt.spmm(A, rand(4, 3, seed=0))
    with pytest.raises(sparseport.InvalidArgument, match=r"sparseport::segment_reduce\[.*\]: index must be sorted"):
        spt.segment_reduce(rand(3, 2, seed=0), torch.tensor([1, 0, 1]), 2)
    with pytest.raises(sparseport.InvalidArgument, match=r"index\[1\] is 7, outside \[0, 2\)"):
        spt.scatter_reduce(rand(3, 2, seed=0), torch.tensor([1, 7, 1]), 2)
    bad = spt.CSR(A.rowptr, A.col.clone().fill_(9), A.values, A.shape)
    with pytest.raises(ValueError, match=r"sparseport::spmm\[.*\]: A row 0 has column 9 outside \[0, 5\)"):
        spt.spmm(bad, rand(5, 3, seed=0))
    with pytest.raises(ValueError, match="holds f32 values but the op runs in f64"):
        spt.spmm(A, rand(5, 3, seed=0, dtype=torch.float32))
    with pytest.raises(ValueError, match="not one of sum, mean, max, min"):
        spt.spmm(A, rand(5, 3, seed=0), "prod")
    with pytest.raises(ValueError, match="share one index dtype"):
        spt.spmm(spt.CSR(A.rowptr.int(), A.col, A.values, A.shape), rand(5, 3, seed=0))
    with pytest.raises(ValueError, match="supported: torch.float32, torch.float64, torch.float16, torch.bfloat16"):
        spt.spmm(A, torch.ones(5, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="B holds f16 values but the op runs in f64"):  # 16 bits: one dtype too
        spt.spmm(A, torch.ones(5, 3, dtype=torch.float16))
    with pytest.raises(ValueError, match="rowptr has 7 entries but A.shape is"):
        spt.spmm(spt.CSR(A.rowptr, A.col, A.values, (7, 5)), rand(5, 3, seed=0))
    assert issubclass(sparseport.InvalidArgument, sparseport.Error) and issubclass(sparseport.Error, RuntimeError)


class _LegacyReadRefused:
    """torch.backends.cuda.matmul as torch >= 2.9 behaves after fp32_precision was set: reading the
    legacy allow_tf32 raises."""

    def __init__(self, precision):
        self.fp32_precision = precision

    @property
    def allow_tf32(self):
        raise RuntimeError("mix of the legacy and new APIs to set the TF32 status")


def test_spmm_passes_torchs_allow_tf32_at_each_call(monkeypatch):
    """spmm, spmm_arg and the spmm max/min backward hand torch.backends.cuda.matmul.allow_tf32, as it
    is at the call, to the library as the call's allow_tf32 option (the last argument)."""
    seen = {"spmm": [], "spmm_arg": [], "spmm_arg_backward": []}
    for name in seen:
        real = getattr(spt._C, name)

        def spy(*args, _real=real, _name=name):
            seen[_name].append(args[-1])
            return _real(*args)

        monkeypatch.setattr(spt._C, name, spy)
    A, B = random_csr(30, 20, seed=5, dtype=torch.float32), rand(20, 4, seed=6, dtype=torch.float32)
    matmul = torch.backends.cuda.matmul
    old = matmul.allow_tf32  # (not monkeypatch: its undo deletes what torch's module only emulates)
    try:
        for flag in (True, False, True):
            matmul.allow_tf32 = flag
            assert matmul.allow_tf32 is flag
            before = {k: len(v) for k, v in seen.items()}
            Bg = B.clone().requires_grad_(True)
            torch.testing.assert_close(spt.spmm(A, Bg, "sum"), ref_spmm(A, B, "sum"))
            spt.spmm(A, Bg, "max").sum().backward()  # spmm_arg, then spmm_arg_backward
            for name, calls in seen.items():
                assert len(calls) > before[name], name
                assert all(c is flag for c in calls[before[name]:]), (name, flag, calls)
    finally:
        matmul.allow_tf32 = old
    # None (no option: the context's consent) is taken too.
    out = torch.empty(30, 4)
    spt._C.spmm(spt.context("cpu"), 30, 20, A.nnz, A.rowptr.data_ptr(), A.col.data_ptr(), A.values.data_ptr(),
                spt._INDEX_TAG[A.rowptr.dtype], spt._C.F32, B.data_ptr(), 20, 4, 4, spt._C.F32, out.data_ptr(), 4,
                0, None)
    torch.testing.assert_close(out, ref_spmm(A, B, "sum"))


def test_allow_tf32_follows_fp32_precision_where_torch_refuses_the_legacy_read(monkeypatch):
    monkeypatch.setattr(spt, "_MATMUL", _LegacyReadRefused("tf32"))
    assert spt._allow_tf32() is True
    monkeypatch.setattr(spt, "_MATMUL", _LegacyReadRefused("ieee"))
    assert spt._allow_tf32() is False


def test_context_allow_tf32_property():
    ctx = spt.context("cpu")
    old = ctx.allow_tf32
    try:
        ctx.allow_tf32 = True
        assert ctx.allow_tf32 is True
        A, B = random_csr(20, 10, seed=2), rand(10, 3, seed=3)
        torch.testing.assert_close(spt.spmm(A, B, "sum"), ref_spmm(A, B, "sum"))
        ctx.allow_tf32 = False
        assert ctx.allow_tf32 is False
    finally:
        ctx.allow_tf32 = old


def test_context_per_device():
    ctx = spt.context("cpu")
    assert ctx is spt.context(torch.device("cpu"))
    assert ctx.backend in ("openmp", "reference") and not ctx.device_memory
    with pytest.raises(ValueError, match="not a CPU backend"):
        spt.set_cpu_backend("cuda")
    validate, deterministic = ctx.validate, ctx.deterministic
    try:
        ctx.validate, ctx.deterministic = "always", True
        assert (ctx.validate, ctx.deterministic) == ("always", True)
        A, B = random_csr(20, 10, seed=2), rand(10, 3, seed=3)
        torch.testing.assert_close(spt.spmm(A, B, "mean"), ref_spmm(A, B, "mean"))
        with pytest.raises(ValueError, match="validate is once, always or off"):
            ctx.validate = "sometimes"
    finally:
        ctx.validate, ctx.deterministic = validate, deterministic
