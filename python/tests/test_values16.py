# SPDX-License-Identifier: Apache-2.0
"""16-bit values (torch.float16 and torch.bfloat16) and torch.autocast.

- Every op in float16 and bfloat16 against the float64 computation from the same 16-bit inputs
  (graphs.py's pure-torch references): the library accumulates in float32 and rounds each result
  once, so a forward result is within one 16-bit rounding of the float64 one. Gradients (in the
  inputs' dtype) against the float64 gradients, within a few roundings relative to the largest.
  On every CPU backend, and on cuda when there is a GPU and the cuda plugin (else skipped, with
  the reason).
- Under torch.autocast the ops cast their floating inputs to the autocast dtype (float32 CSR
  values with 16-bit features run without a cast by the user; float64 stays float64), and a
  GraphSAGE-mean layer and a GAT layer of examples/gnn/models.py run forward and backward with
  float32 parameters, eager and under torch.compile(fullgraph=True), close to float32.
- torch.library.opcheck on the ops with 16-bit inputs (test_opcheck.py's samples).
"""
import os
import sys

import pytest
import torch

import sparseport
import sparseport.torch as spt
from conftest import CPU_BACKENDS
from graphs import random_csr, rand, ref_attention, ref_reduce, ref_reduce_lowest, ref_sddmm, ref_spmm, rows_of, seed_of
from test_opcheck import samples as opcheck_samples

_GNN = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "examples", "gnn")
sys.path.insert(0, os.path.abspath(_GNN))
import models  # noqa: E402

ops = torch.ops.sparseport
DTYPES16 = [torch.float16, torch.bfloat16]
REDUCES = ["sum", "mean", "max", "min"]


def _cuda_reason():
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    status, reason = {n: (s, r) for n, s, r in sparseport.backends()}["cuda"]
    if status != "available":
        return f"the library's cuda backend is {status}: {reason}"
    return None


CUDA_SKIP = _cuda_reason()
if CUDA_SKIP:
    print(f"test_values16.py: cuda cases skipped: {CUDA_SKIP}")
_on_cuda = pytest.mark.skipif(CUDA_SKIP is not None, reason=f"cuda: {CUDA_SKIP}")
DEVICES = [f"cpu-{b}" for b in CPU_BACKENDS] + [pytest.param("cuda", marks=_on_cuda)]


@pytest.fixture(params=DEVICES)
def device(request):
    """cpu-<backend> (the CPU context rebuilt on that backend) or cuda."""
    if request.param.startswith("cpu-"):
        spt.set_cpu_backend(request.param[4:])
        yield "cpu"
        spt.set_cpu_backend(None)
    else:
        yield "cuda"


def short(dtype):
    return str(dtype).split(".")[1]


def eps(dtype):
    """The spacing of 16-bit values at 1 (float16 2^-10, bfloat16 2^-7): one rounding errs by at
    most half of it, relative."""
    return torch.finfo(dtype).eps


def assert_rounded_once(got, want, dtype, what):
    """Elementwise within one rounding to ``dtype`` (eps/2 relative) plus a margin for float32
    accumulation: |got - want| <= eps * (|want| + 0.1 * max|want|)."""
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, want {dtype}"
    got, want = got.double().cpu(), want.double().cpu()
    if want.numel() == 0:
        return
    tol = eps(dtype) * (want.abs() + 0.1 * want.abs().max())
    bad = (got - want).abs() > tol
    assert not bool(bad.any()), (f"{what}: {int(bad.sum())} of {want.numel()} elements off by more than one "
                                 f"{short(dtype)} rounding; worst |diff| {float((got - want).abs().max()):.3e}, "
                                 f"max |want| {float(want.abs().max()):.3e}")


def assert_close_units(got, want, dtype, units, what):
    """Normwise: max |got - want| <= units * eps * max |want| (a gradient goes through several
    16-bit roundings: the backward ops' results, and the elementwise steps between them)."""
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, want {dtype}"
    got, want = got.double().cpu(), want.double().cpu()
    if want.numel() == 0:
        return
    scale = float(want.abs().max())
    err = float((got - want).abs().max())
    assert err <= units * eps(dtype) * scale + 1e-30, (
        f"{what}: max |diff| {err:.3e} is {err / max(eps(dtype) * scale, 1e-300):.1f} {short(dtype)} eps of "
        f"max |want| {scale:.3e} (allowed {units})")


# ---- every op against float64 -------------------------------------------------------------------


def lowest_spmm(A, B, reduce):
    """spmm max/min in float64 with the library's tie rule (the lowest entry of the row wins, so
    only it gets the gradient): 16-bit inputs tie often."""
    msg = B.index_select(0, A.col.long())
    if A.values is not None:
        msg = msg * A.values[:, None]
    return ref_reduce_lowest(msg, rows_of(A), A.shape[0], reduce)


def index_with_a_big_segment(E, N, seed, sorted_, index_dtype, device):
    """E entries into N segments, segment 0 holding 300 of them (more than 256: a bfloat16 count
    would stop at 256), segment 2 empty."""
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, N, (E,), generator=g)
    index[index == 2] = 3
    index[torch.randperm(E, generator=g)[:300]] = 0
    if sorted_:
        index = index.sort().values
    return index.to(index_dtype).to(device)


def cases():
    """name -> build(dtype, index_dtype, device, seed) -> (A, dense inputs, ref): A and the dense
    inputs in 16 bits; ref(A, *dense) the float64 computation (given float64 copies)."""
    out = {}
    for reduce in REDUCES:
        for values in (True, False):
            def spmm_case(dtype, index_dtype, device, seed, reduce=reduce, values=values):
                A = random_csr(120, 90, seed=seed, index_dtype=index_dtype, dtype=dtype, values=values, device=device)
                B = rand(90, 7, seed=seed + 1, dtype=dtype, device=device)
                ref = (lambda a, b: ref_spmm(a, b, reduce)) if reduce in ("sum", "mean") else \
                    (lambda a, b: lowest_spmm(a, b, reduce))
                return A, [B], ref

            out[f"spmm-{reduce}{'' if values else '-pattern'}"] = spmm_case
    for values in (True, False):
        def sddmm_case(dtype, index_dtype, device, seed, values=values):
            A = random_csr(120, 90, seed=seed, index_dtype=index_dtype, dtype=dtype, values=values, device=device)
            X, Y = rand(120, 7, seed=seed + 1, dtype=dtype, device=device), rand(90, 7, seed=seed + 2, dtype=dtype,
                                                                                 device=device)
            return A, [X, Y], ref_sddmm

        out[f"sddmm{'' if values else '-pattern'}"] = sddmm_case
    for scale in (None, 0.3):
        def attention_case(dtype, index_dtype, device, seed, scale=scale):
            A = random_csr(120, 90, seed=seed, index_dtype=index_dtype, dtype=dtype, values=False, device=device)
            Q, K = rand(120, 8, seed=seed + 1, dtype=dtype, device=device), rand(90, 8, seed=seed + 2, dtype=dtype,
                                                                                 device=device)
            V = rand(90, 3, seed=seed + 3, dtype=dtype, device=device)
            return A, [Q, K, V], (lambda a, q, k, v: ref_attention(a, q, k, v, scale))

        out[f"csr_attention-scale{scale}"] = attention_case
    return out


CASES = cases()


def run_with_grads(fn, inputs, weight):
    """fn(*inputs) and the gradients of sum(out * weight) for the inputs (leaves made here)."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves)
    out.backward(weight.to(out.dtype))
    return out.detach(), [t.grad for t in leaves]


def weight_like(n_shape, dtype, device):
    n = 1
    for s in n_shape:
        n *= s
    # rounded to 16 bits first, so the float64 reference gets the same output gradient
    return torch.linspace(-1, 1, n, dtype=torch.float64).reshape(n_shape).to(dtype).to(device)


def check_op(name, fn16, fn64, inputs16, dtype, device, grad_units=8):
    w = weight_like(fn64(*[t.double() for t in inputs16]).shape, dtype, device)
    out16, grads16 = run_with_grads(fn16, inputs16, w)
    out64, grads64 = run_with_grads(fn64, [t.double() for t in inputs16], w.double())
    assert_rounded_once(out16, out64, dtype, f"{name} forward")
    for i, (g16, g64) in enumerate(zip(grads16, grads64)):
        assert g16 is not None, f"{name}: no gradient for input {i}"
        assert_close_units(g16, g64, dtype, grad_units, f"{name} gradient of input {i}")


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=short)
@pytest.mark.parametrize("dtype", DTYPES16, ids=short)
@pytest.mark.parametrize("case", sorted(CASES))
def test_csr_ops_16bit(case, dtype, index_dtype, device):
    """spmm (every reduce, with values and as a pattern; the hub row has 270 entries: a mean over
    more than 256), sddmm and csr_attention: forward within one 16-bit rounding of float64, the
    gradients of B / X, Y / Q, K, V and of A.values in 16 bits within 8 eps (normwise)."""
    seed = seed_of(case, dtype, index_dtype)
    A, dense, ref = CASES[case](dtype, index_dtype, device, seed)
    if case.startswith("spmm"):
        reduce = case.split("-")[1]
        fn = lambda *t: spt.spmm(A.with_values(t[0]) if A.values is not None else A, t[-1], reduce)  # noqa: E731
    elif case.startswith("sddmm"):
        fn = lambda *t: spt.sddmm(A.with_values(t[0]) if A.values is not None else A, t[-2], t[-1]).values  # noqa: E731
    else:
        scale = None if case.endswith("None") else float(case.split("scale")[1])
        fn = lambda q, k, v: spt.csr_attention(A, q, k, v, scale=scale)  # noqa: E731
    if case.startswith("csr_attention"):
        check_op(case, fn, lambda q, k, v: ref(A.with_values(None), q, k, v), dense, dtype, device)
        return
    A64 = A.with_values(None if A.values is None else A.values.double())
    if A.values is not None:
        inputs = [A.values] + dense
        ref_fn = lambda v, *d: ref(A64.with_values(v), *d)  # noqa: E731
    else:
        inputs = dense
        ref_fn = lambda *d: ref(A64, *d)  # noqa: E731
    check_op(case, fn, ref_fn, inputs, dtype, device)


@pytest.mark.parametrize("sorted_", [True, False], ids=["segment", "scatter"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES16, ids=short)
def test_segment_scatter_16bit(sorted_, reduce, dtype, device):
    """segment_reduce / scatter_reduce (1-D and 2-D src, a segment of 300 messages, an empty one),
    forward and gradient (max/min: torch_scatter's tie rule, which 16-bit inputs exercise)."""
    index_dtype = torch.int32 if dtype == torch.float16 else torch.int64
    index = index_with_a_big_segment(900, 40, seed_of("seg16", reduce, dtype, sorted_), sorted_, index_dtype, device)
    src = rand(900, 6, seed=seed_of("seg16-src", reduce, dtype), dtype=dtype, device=device)
    op = spt.segment_reduce if sorted_ else spt.scatter_reduce
    name = f"{'segment' if sorted_ else 'scatter'}_reduce-{reduce}"
    check_op(name, lambda s: op(s, index, 45, reduce), lambda s: ref_reduce_lowest(s, index, 45, reduce), [src], dtype,
             device)
    check_op(name + "-1d", lambda s: op(s, index, 45, reduce),
             lambda s: ref_reduce_lowest(s[:, None], index, 45, reduce)[:, 0], [src[:, 2].contiguous()], dtype, device)


@pytest.mark.parametrize("sorted_", [True, False], ids=["segment", "scatter"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES16, ids=short)
def test_backward_ops_16bit(sorted_, reduce, dtype, device):
    """The C++ backward ops called directly ({segment,scatter}_reduce_backward; on the CPU the
    autograd of sum/mean is a torch gather, so this is where the C++ one runs) and the winners'
    ops ({segment,scatter}_reduce_arg, spmm_arg, spmm_arg_backward) in 16 bits: exact where they
    copy a value (a gradient to its winner, the winner's value), within one rounding for mean."""
    name = "segment_reduce" if sorted_ else "scatter_reduce"
    index = index_with_a_big_segment(900, 40, seed_of("bwd16", reduce, dtype, sorted_), sorted_, torch.int64, device)
    grad = rand(45, 5, seed=seed_of("bwd16-grad", reduce, dtype), dtype=dtype, device=device)
    arg = None
    if reduce in ("max", "min"):
        src = rand(900, 5, seed=seed_of("bwd16-src", dtype), dtype=dtype, device=device)
        out, arg = getattr(ops, f"{name}_arg")(src, index, 45, reduce)
        assert out.dtype == dtype
        assert_rounded_once(out, ref_reduce(src.double(), index, 45, reduce), dtype, f"{name}_arg {reduce}")
        want = run_with_grads(lambda s: ref_reduce_lowest(s, index, 45, reduce), [src.double()], grad.double())[1][0]
    else:
        counts = torch.bincount(index.long().cpu(), minlength=45).clamp_min(1).double().to(device)
        g = grad.double() / counts[:, None] if reduce == "mean" else grad.double()
        want = g.index_select(0, index.long())
    got = getattr(ops, f"{name}_backward")(grad, index, arg, reduce)
    assert_rounded_once(got, want, dtype, f"{name}_backward {reduce}")
    if reduce in ("max", "min") and sorted_:  # spmm_arg and its backward, on the same graph
        A = random_csr(120, 90, seed=seed_of("spmm_arg16", dtype), dtype=dtype, device=device)
        B = rand(90, 5, seed=3, dtype=dtype, device=device)
        out, arg = ops.spmm_arg(A.rowptr, A.col, A.values, 90, B, reduce)
        assert_rounded_once(out, ref_spmm(A.with_values(A.values.double()), B.double(), reduce), dtype, "spmm_arg")
        g = rand(120, 5, seed=4, dtype=dtype, device=device)
        d_b, d_v = ops.spmm_arg_backward(A.rowptr, A.col, A.values, 90, B, g, arg, reduce, True, True)
        _, (w_v, w_b) = run_with_grads(lambda v, b: lowest_spmm(A.with_values(v), b, reduce),
                                       [A.values.double(), B.double()], g.double())
        assert_rounded_once(d_b, w_b, dtype, "spmm_arg_backward dB")
        assert_rounded_once(d_v, w_v, dtype, "spmm_arg_backward dvalues")


@pytest.mark.parametrize("dtype", DTYPES16, ids=short)
def test_csr_transpose_carries_16bit_values(dtype, device):
    A = random_csr(30, 20, seed=3, dtype=dtype, device=device)
    v = A.values.clone().requires_grad_(True)
    T = spt.csr_transpose(A.with_values(v))
    assert T.values.dtype == dtype
    dense_a = torch.zeros(A.shape, dtype=torch.float64, device=device).index_put_(
        (rows_of(A), A.col.long()), A.values.double(), accumulate=True)
    dense_t = torch.zeros(T.shape, dtype=torch.float64, device=device).index_put_(
        (rows_of(T), T.col.long()), T.values.detach().double(), accumulate=True)
    torch.testing.assert_close(dense_t, dense_a.T, rtol=0, atol=0)  # repeated entries add up exactly here
    T.values.backward(torch.ones_like(T.values))
    assert v.grad.dtype == dtype and bool((v.grad == 1).all())


def test_mixed_dtypes_are_refused_outside_autocast():
    A = random_csr(10, 8, seed=1, dtype=torch.float32)
    B = rand(8, 3, seed=2, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="holds f32 values but the op runs in bf16|holds bf16 values but the op runs in f32"):
        spt.spmm(A, B)
    with pytest.raises(ValueError, match="need one dtype"):
        spt.sddmm(A.with_values(None), rand(10, 3, seed=3, dtype=torch.float16), rand(8, 3, seed=4,
                                                                                      dtype=torch.bfloat16))


# ---- autocast -----------------------------------------------------------------------------------


def _autocast_devices():
    return ["cpu", pytest.param("cuda", marks=_on_cuda)]


@pytest.mark.parametrize("dtype", DTYPES16, ids=short)
@pytest.mark.parametrize("dev", _autocast_devices())
def test_autocast_casts_every_op(dtype, dev):
    """Under autocast each op runs on its floating inputs cast to the autocast dtype (whatever mix
    of float32 and 16-bit they come in): the same result as casting by hand; gradients flow back
    to float32 leaves in float32. float64 inputs are left alone, as torch's autocast does."""
    A = random_csr(60, 50, seed=5, dtype=torch.float32, device=dev)
    B = rand(50, 6, seed=6, dtype=dtype, device=dev)  # e.g. the output of a Linear under autocast
    X, Y = rand(60, 6, seed=7, device=dev, dtype=torch.float32), rand(50, 6, seed=8, device=dev, dtype=dtype)
    src = rand(60, 6, seed=9, dtype=torch.float32, device=dev)
    index = torch.randint(0, 7, (60,), generator=torch.Generator().manual_seed(1)).to(dev)

    def calls(a, b, x, y, s):
        out = [spt.spmm(a, b, r) for r in REDUCES]
        out.append(spt.sddmm(a, x, y).values)
        out.append(spt.csr_attention(a, x, y, b))
        out += [spt.scatter_reduce(s, index, 8, r) for r in REDUCES]
        out += [spt.segment_reduce(s, index.sort().values, 8, r) for r in REDUCES]
        return out

    def leaves(*ts):
        return [t.detach().clone().requires_grad_(True) for t in ts]

    v, b, x, y, s = leaves(A.values, B, X, Y, src)
    with torch.autocast(dev, dtype=dtype):
        got = calls(A.with_values(v), b, x, y, s)
    assert all(t.dtype == dtype for t in got), [t.dtype for t in got]
    sum(t.float().sum() for t in got).backward()
    assert v.grad.dtype == x.grad.dtype == s.grad.dtype == torch.float32 and b.grad.dtype == y.grad.dtype == dtype
    v2, b2, x2, y2, s2 = leaves(A.values, B, X, Y, src)
    want = calls(A.with_values(v2.to(dtype)), b2, x2.to(dtype), y2, s2.to(dtype))
    sum(t.float().sum() for t in want).backward()
    for i, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=eps(dtype), atol=eps(dtype) * 1e-2, msg=lambda m: f"call {i}: {m}")
    for g, w in zip((v.grad, b.grad, x.grad, y.grad, s.grad), (v2.grad, b2.grad, x2.grad, y2.grad, s2.grad)):
        torch.testing.assert_close(g, w, rtol=eps(dtype), atol=eps(dtype) * float(w.abs().max()))
    # float64 stays float64; outside autocast nothing is cast
    A64 = A.with_values(A.values.double())
    with torch.autocast(dev, dtype=dtype):
        assert spt.spmm(A64, B.double()).dtype == torch.float64
    assert spt.spmm(A, B.float()).dtype == torch.float32


def square_graph(n, device, seed=1):
    """An n x n pattern with a self loop in every row (GAT's graphs hold them) and int32 indices."""
    A = random_csr(n, n, seed=seed, values=False, index_dtype=torch.int64, max_degree=12, empty_rows=False)
    row, col = rows_of(A), A.col.long()
    row, col = torch.cat([row, torch.arange(n)]), torch.cat([col, torch.arange(n)])
    order = (row * n + col).argsort(stable=True)
    row, col = row[order], col[order]
    rowptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(row, minlength=n).cumsum(0)])
    return spt.CSR(rowptr.int().to(device), col.int().to(device), None, (n, n))


def layer_and_inputs(kind, device):
    torch.manual_seed(0)
    A = square_graph(300, device)
    x = torch.randn(300, 24, device=device)
    if kind == "sage":
        return models.SAGEConv(24, 32).to(device), x, (A,)
    return models.GATConv(24, 16, heads=4).to(device), x, (A, models.row_index(A))


def step(layer, fn, x, extra, autocast_dtype):
    """Forward (under autocast when a dtype is given) and backward of sum(out * w) in float32:
    the output, x's gradient and the parameters' gradients (all float32 leaves)."""
    layer.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_(True)
    with torch.autocast(x.device.type, dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None):
        out = fn(x, *extra)
    w = torch.linspace(-1, 1, out.numel(), device=x.device).reshape(out.shape)
    (out.float() * w).sum().backward()
    names = ["out", "x.grad"] + [f"{n}.grad" for n, _ in layer.named_parameters()]
    return out.dtype, dict(zip(names, [out.detach().float(), x.grad] + [p.grad for p in layer.parameters()]))


# Normwise (L2) error against float32, in eps of the autocast dtype. GAT's attention vectors get
# their gradient through the softmax, whose gradient sums to zero over each row: it is a small
# difference of large terms, so its relative error is many roundings (up to 14 bfloat16 eps over
# eight seeds here, the same as the same layer written with torch's index_add / scatter_reduce).
LAYER_UNITS = {"out": 2, "x.grad": 8, "lin.weight.grad": 8, "lin_l.weight.grad": 8, "lin_l.bias.grad": 8,
               "lin_r.weight.grad": 8, "bias.grad": 8, "att_src.grad": 32, "att_dst.grad": 32}


@pytest.mark.parametrize("mode", ["eager", "compile"])
@pytest.mark.parametrize("kind", ["sage", "gat"])
@pytest.mark.parametrize("dev", _autocast_devices())
def test_autocast_gnn_layer(kind, mode, dev):
    """models.SAGEConv / models.GATConv under torch.autocast(dev, bfloat16) with float32
    parameters and features, no cast by the user: forward and backward run (compiled: one graph,
    fullgraph=True) and match the float32 layer within bfloat16 tolerance."""
    dtype = torch.bfloat16
    layer, x, extra = layer_and_inputs(kind, dev)
    _, want = step(layer, layer, x, extra, None)
    graphs = []
    fn = layer
    if mode == "compile":
        from torch._inductor.compile_fx import compile_fx

        def backend(gm, example_inputs):
            graphs.append(gm)
            return compile_fx(gm, example_inputs)

        torch._dynamo.reset()
        fn = torch.compile(layer, fullgraph=True, backend=backend)
    out_dtype, got = step(layer, fn, x, extra, dtype)
    # SAGE's output is a sum of 16-bit Linear outputs; GAT's adds the float32 bias after dividing
    # by the float32 softmax sums
    assert out_dtype == (dtype if kind == "sage" else torch.float32)
    for name, w in want.items():
        g = got[name]
        assert g.dtype == torch.float32, f"{name}: {g.dtype}"
        err = float((g - w).norm() / w.norm().clamp_min(1e-30))
        assert err <= LAYER_UNITS[name] * eps(dtype), f"{kind} {mode} {name}: L2 error {err / eps(dtype):.2f} eps"
    if mode == "compile":
        assert len(graphs) == 1
        targets = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
        assert any(t.startswith("sparseport.") for t in targets), sorted(targets)
        # a second step reuses the compiled graph and gives the same result
        _, again = step(layer, fn, x, extra, dtype)
        for name in got:
            torch.testing.assert_close(again[name], got[name], rtol=eps(dtype), atol=eps(dtype) * float(
                got[name].abs().max()))
        assert len(graphs) == 1


# ---- opcheck ------------------------------------------------------------------------------------

SAMPLES16 = [(f"{name}-{short(dt)}", op, args) for dt in DTYPES16 for name, op, args in opcheck_samples(dt)
             if not name.startswith("csr_transpose")]  # (no floating operand)


@pytest.mark.parametrize("name,op,args", SAMPLES16, ids=[s[0] for s in SAMPLES16])
def test_opcheck_16bit(name, op, args):
    torch.library.opcheck(op, args)
