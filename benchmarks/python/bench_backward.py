# SPDX-License-Identifier: Apache-2.0
"""Backward (and forward + backward) of sparseport.torch's ops against the PyTorch expression a
PyG or plain-PyTorch user would write for the same math, on the same inputs and device.

    python benchmarks/python/bench_backward.py --device cuda --json bwd.json    # 200k nodes, 16.7M entries
    python benchmarks/python/bench_backward.py --device cpu --nodes 5000 --avg-degree 8 --reps 5

Issue 15's target: each backward op >= 1.5x the PyTorch expression. Per op, reduction and set of
inputs that require grad, sparseport is timed once and each PyTorch expression ("variant") next
to it:

  spmm sum (grads B)          torch.sparse.mm(A_csr, B) (autograd); the same with A^T built once
                              (an autograd.Function: dB = torch.sparse.mm(A^T, dC)); PyG-style
                              gather B[col] * values + index_add_ onto rows
  spmm sum (grads B, values)  torch.sparse.mm on a sparse_csr_tensor / sparse_coo_tensor whose
                              values require grad; gather + index_add_
  spmm mean (grads B)         gather B[col] + scatter_reduce(mean, include_self=False);
                              torch_geometric.utils.scatter; torch.sparse.mm(A, B) / deg (PyG's
                              path for a CSR adjacency on CUDA); torch.sparse.mm(A, B, "mean")
  spmm max/min (grads B)      gather + scatter_reduce(amax/amin); PyG scatter; torch.sparse.mm(A, B, "amax")
  sddmm (grads X, Y, values)  (X[row] * Y[col]).sum(-1) * values
  segment_reduce / scatter_reduce sum/mean/max/min (grads src): index_add_ (sum),
                              Tensor.scatter_reduce(include_self=False), PyG scatter; segment
                              uses the sorted rows as index, scatter the (unsorted) columns
  csr_attention (grads Q,K,V) scores = (Q[row] * K[col]).sum(-1) * scale, a scatter softmax over
                              rows (max detached, as PyG) or torch_geometric.utils.softmax, then
                              index_add_(alpha[:, None] * V[col]) onto rows

spmm mean/max/min, segment/scatter and attention use A's pattern (no values), as GNN aggregation
does; spmm sum and sddmm carry values. A variant that raises (e.g. torch.sparse.mm with reduce off
the CPU) is listed with its error and not timed; one missing module (torch_geometric) is skipped.

Before timing, each pair is checked: the forward output and every gradient, as
max|a - b| / max|b| <= tol (float32 1e-4, float64 1e-9; --tol). segment/scatter max/min compare
dsrc summed per segment and dsrc off the winners instead of dsrc itself: float32 messages tie, and
sparseport gives the gradient to the lowest tied message (torch_scatter's rule) where torch's
scatter_reduce shares it. Timing as
python/tests/bench_overhead.py, per call: warm-up, then the median of --reps calls timed with
time.perf_counter, with torch.cuda.synchronize() before and after each on CUDA. Backward alone: the
forward runs once with grads, then torch.autograd.grad(out, inputs, grad_out, retain_graph=True) is
timed; forward + backward: torch.autograd.grad(f(), inputs, grad_out) each call. On CUDA the peak
memory of one call of each (torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus
what was allocated when it started) is reported too.

The index tensors a user keeps per graph (int64 row/col for gather/scatter, the torch CSR, its
transpose for the cached variant) are built once, outside the timing, as edge_index would be.
sparseport keeps its own per-graph and per-index structures the same way, built on first use (here
by the check, before the timing, as in a first training step) and kept while the arrays live:
A^T for spmm/sddmm/attention backward, and for segment/scatter a SegmentCsr per index tensor
(the segments x E CSR, with its transpose once a backward ran). Everything else is inside the
timing. segment/scatter go through the C++ segment_reduce_arg / scatter_reduce_arg forwards for
max/min (recording each output element's winning message when src requires grad; fwd_nograd runs
the plain forward) and segment_reduce_backward / scatter_reduce_backward for every reduce.

Graphs: ``--graph powerlaw`` uses examples/gnn/twins.py's generator (a degree-corrected block
model: power-law degrees, communities in id order; --nodes 200000 --avg-degree 83.5 is exactly its
"200k" twin, issue 15's GAT graph) or, when that file is missing, a small generator here of the
same kind; ``--graph er`` a uniform random graph. Defaults: the 200k-node, 16.7M-entry power-law
graph on CUDA; 20k nodes x 16 on the CPU.

On a shared or loaded CPU, OpenMP and torch's thread pool lose their time slices and medians jump
by tens of ms (seen on a 2-core machine at load 10); --threads 1 gives stable numbers there. The
JSON keeps each minimum next to each median.

Exit status 1 when any check failed.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import warnings
from typing import Callable, Dict, List, Optional, Sequence

import torch

import sparseport
import sparseport.torch as spt

warnings.filterwarnings("ignore", message=".*[Ss]parse.*")  # torch's beta / invariant-check notices

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TWINS_PY = os.path.join(ROOT, "examples", "gnn", "twins.py")


# ---- graphs --------------------------------------------------------------------------------------


def _load_graphs_module():
    """examples/gnn/twins.py as a module, or None when it is missing or does not load."""
    if not os.path.exists(TWINS_PY):
        return None, "examples/gnn/twins.py not found"
    name = "_sparseport_examples_gnn_twins"
    try:
        spec = importlib.util.spec_from_file_location(name, TWINS_PY)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up here
        spec.loader.exec_module(mod)
        for attr in ("SIZES", "Size", "generate"):
            if not hasattr(mod, attr):
                return None, f"examples/gnn/twins.py has no {attr}"
        return mod, None
    except Exception as e:
        sys.modules.pop(name, None)
        return None, f"examples/gnn/twins.py failed to load: {type(e).__name__}: {e}"


def _csr_from_keys(keys: torch.Tensor, n: int):
    """Sorted unique keys row * n + col -> (rowptr, col) int64."""
    row = keys // n
    col = keys - row * n
    rowptr = torch.zeros(n + 1, dtype=torch.long)
    torch.cumsum(torch.bincount(row, minlength=n), 0, out=rowptr[1:])
    return rowptr, col


def er_graph(n: int, avg_degree: float, seed: int):
    """Uniform random n x n pattern with about n * avg_degree entries (repeats merged)."""
    g = torch.Generator().manual_seed(seed)
    E = int(round(n * avg_degree))
    keys = torch.randint(0, n, (E,), generator=g) * n + torch.randint(0, n, (E,), generator=g)
    return _csr_from_keys(torch.unique(keys, sorted=True), n)


def powerlaw_graph_fallback(n: int, avg_degree: float, seed: int, gamma: float = 2.3):
    """A power-law graph when examples/gnn/twins.py is absent: out-degrees from a Pareto tail
    (pdf ~ d^-gamma, mean avg_degree, clipped), 80% of each row's columns near the row in id order
    (Laplace offsets, scale n / 200: community locality), 20% uniform; repeats merged."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    theta = (1.0 - u).pow(-1.0 / (gamma - 1.0))
    d_max = max(2.0, min(60.0 * avg_degree, n / 10))
    for _ in range(20):
        theta = theta * (avg_degree / theta.mean())
        if theta.max() <= d_max * (1 + 1e-9):
            break
        theta = theta.clamp_max(d_max)
    deg = (theta.floor() + (torch.rand(n, generator=g, dtype=torch.float64) < theta.frac())).long()
    row = torch.repeat_interleave(torch.arange(n), deg)
    E = row.shape[0]
    local = torch.rand(E, generator=g) < 0.8
    lap = torch.distributions.Laplace(0.0, max(1.0, n / 200.0))
    torch.manual_seed(seed)
    off = lap.sample((E,)).round().long()
    col = torch.where(local, (row + off) % n, torch.randint(0, n, (E,), generator=g))
    return _csr_from_keys(torch.unique(row * n + col, sorted=True), n)


def make_graph(kind: str, n: int, avg_degree: float, seed: int):
    """(rowptr, col, description) on the CPU, int64."""
    if kind == "er":
        rowptr, col = er_graph(n, avg_degree, seed)
        return rowptr, col, "er (uniform columns, repeats merged)"
    mod, why = _load_graphs_module()
    if mod is not None:
        nnz = int(round(n * avg_degree / 2)) * 2
        t = mod.SIZES.get("200k")
        if t is not None and n == t.n and nnz == t.nnz:
            name = "200k"
        else:  # the 200k twin's shape scaled: communities of ~500 ids, degree clip 60x the mean
            base = t if t is not None else next(iter(mod.SIZES.values()))
            com = max(1, n // 500)
            clusters = max(1, round(com * 96 / 400))
            size = dataclasses.replace(base, n=n, nnz=nnz, in_dim=1, communities=com, clusters=clusters,
                                       classes=max(1, min(base.classes, clusters)),
                                       d_max=max(2, min(int(60 * avg_degree), n // 10)))
            name = f"bench-{n}-{nnz}"
            mod.SIZES[name] = size
        last = None
        for attempt in range(3):
            try:
                gr = mod.generate(name, seed, edge_index=False)
                return (gr.rowptr.long(), gr.col.long(),
                        f"powerlaw (examples/gnn/twins.py generate('{name}'), seed {seed})")
            except Exception as e:  # e.g. blocks too small for the degrees: clip harder
                last = e
                if name == "200k":
                    break
                mod.SIZES[name] = dataclasses.replace(mod.SIZES[name], d_max=max(2, mod.SIZES[name].d_max // 2))
        why = f"examples/gnn/twins.py generate failed: {type(last).__name__}: {last}"
    rowptr, col = powerlaw_graph_fallback(n, avg_degree, seed)
    return rowptr, col, f"powerlaw (fallback generator in this script: {why})"


# ---- timing --------------------------------------------------------------------------------------


class Timer:
    def __init__(self, device: torch.device, reps: int, warmup: int):
        self.device, self.reps, self.warmup = device, reps, warmup
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def times_ms(self, fn: Callable[[], object]) -> List[float]:
        for _ in range(self.warmup):
            fn()
        t = []
        for _ in range(self.reps):
            self.sync()
            t0 = time.perf_counter()
            fn()
            self.sync()
            t.append((time.perf_counter() - t0) * 1e3)
        return t

    def peak_mib(self, fn: Callable[[], object]) -> Optional[float]:
        """Peak memory one call adds over what was allocated when it started (CUDA only)."""
        if not self.cuda:
            return None
        self.sync()
        base = torch.cuda.memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        r = fn()
        self.sync()
        peak = torch.cuda.max_memory_allocated(self.device)
        del r
        return (peak - base) / 2**20


# ---- the cases -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Variant:
    name: str
    fn: Callable[[], torch.Tensor]
    needs: Optional[str] = None  # a module that must import, else the variant is skipped


@dataclasses.dataclass
class Case:
    op: str
    reduce: str
    grads: str  # which inputs require grad, for the table
    sp: Callable[[], torch.Tensor]
    variants: List[Variant]
    inputs: Sequence[torch.Tensor]
    grad_out: torch.Tensor
    # (out, grads) -> (out, grads, names) compared instead of the raw results (ties, see below)
    view: Optional[Callable] = None


class _MMCachedT(torch.autograd.Function):
    """C = A @ B with dB = A^T @ dC, A^T a CSR built once per graph (what a user who knows torch
    transposes its sparse operand in every backward writes)."""

    @staticmethod
    def forward(ctx, B, A, At):
        ctx.At = At
        return torch.sparse.mm(A, B)

    @staticmethod
    def backward(ctx, grad):
        return torch.sparse.mm(ctx.At, grad), None, None


def _module_ok(name: str) -> Optional[str]:
    try:
        __import__(name)
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def build_cases(rowptr, col, n, F, dtype, device, ops: Sequence[str], seed: int) -> List[Case]:
    g = torch.Generator(device="cpu").manual_seed(seed)

    def randn(*shape, grad=False):
        t = torch.randn(*shape, generator=g, dtype=dtype).to(device)
        return t.requires_grad_(grad)

    E = col.shape[0]
    row64 = torch.repeat_interleave(torch.arange(n, device=device), (rowptr[1:] - rowptr[:-1]).long(), output_size=E)
    col64 = col.long()
    deg = (rowptr[1:] - rowptr[:-1]).clamp_min(1).to(dtype)
    vals = (torch.rand(E, generator=g, dtype=dtype) + 0.5).to(device)  # values, no grad
    ones = torch.ones(E, dtype=dtype, device=device)
    A_vals = spt.CSR(rowptr, col, vals, (n, n))
    A_pat = spt.CSR(rowptr, col, None, (n, n))
    T_vals = torch.sparse_csr_tensor(rowptr, col, vals, (n, n), check_invariants=False)
    T_ones = torch.sparse_csr_tensor(rowptr, col, ones, (n, n), check_invariants=False)
    coo_idx = torch.stack([row64, col64])
    T_vals_t = torch.sparse_coo_tensor(torch.stack([col64, row64]), vals, (n, n)).coalesce().to_sparse_csr()
    T_vals_t = torch.sparse_csr_tensor(T_vals_t.crow_indices().to(col.dtype), T_vals_t.col_indices().to(col.dtype),
                                       T_vals_t.values(), (n, n), check_invariants=False)  # A's index dtype
    rowx = lambda f: row64[:, None].expand(-1, f)  # noqa: E731

    def pyg_scatter(src, index, red):
        from torch_geometric.utils import scatter
        return scatter(src, index, 0, n, reduce=red)

    def torch_scatter(src, index, red):  # torch_scatter semantics: empty segments 0
        f = src.shape[1]
        return src.new_zeros(n, f).scatter_reduce(0, index[:, None].expand(-1, f), src, red, include_self=False)

    cases: List[Case] = []
    B = randn(n, F, grad=True)
    go = randn(n, F)
    if "spmm" in ops:
        cases.append(Case("spmm", "sum", "B", lambda: spt.spmm(A_vals, B, "sum"), [
            Variant("torch.sparse.mm(A_csr, B)", lambda: torch.sparse.mm(T_vals, B)),
            Variant("torch.sparse.mm, A^T cached (autograd.Function)", lambda: _MMCachedT.apply(B, T_vals, T_vals_t)),
            Variant("gather B[col]*v + index_add_", lambda: B.new_zeros(n, F).index_add_(0, row64, B[col64] * vals[:, None])),
        ], [B], go))
        v_mm = vals.clone().requires_grad_(True)
        A_mm = spt.CSR(rowptr, col, v_mm, (n, n))
        cases.append(Case("spmm", "sum", "B,values", lambda: spt.spmm(A_mm, B, "sum"), [
            Variant("torch.sparse.mm(sparse_csr_tensor(v), B)",
                    lambda: torch.sparse.mm(torch.sparse_csr_tensor(rowptr, col, v_mm, (n, n), check_invariants=False), B)),
            Variant("torch.sparse.mm(sparse_coo_tensor(v), B)",
                    lambda: torch.sparse.mm(torch.sparse_coo_tensor(coo_idx, v_mm, (n, n), is_coalesced=True,
                                                                    check_invariants=False), B)),
            Variant("gather B[col]*v + index_add_", lambda: B.new_zeros(n, F).index_add_(0, row64, B[col64] * v_mm[:, None])),
        ], [B, v_mm], go))
        cases.append(Case("spmm", "mean", "B", lambda: spt.spmm(A_pat, B, "mean"), [
            Variant("gather B[col] + scatter_reduce(mean)", lambda: torch_scatter(B[col64], row64, "mean")),
            Variant("gather + torch_geometric.utils.scatter(mean)", lambda: pyg_scatter(B[col64], row64, "mean"),
                    "torch_geometric"),
            Variant("torch.sparse.mm(A_csr, B) / deg", lambda: torch.sparse.mm(T_ones, B) / deg[:, None]),
            Variant("torch.sparse.mm(A_csr, B, 'mean')", lambda: torch.sparse.mm(T_ones, B, "mean")),
        ], [B], go))
        for red, tred in (("max", "amax"), ("min", "amin")):
            cases.append(Case("spmm", red, "B", (lambda r=red: spt.spmm(A_pat, B, r)), [
                Variant(f"gather B[col] + scatter_reduce({tred})", lambda t=tred: torch_scatter(B[col64], row64, t)),
                Variant(f"gather + torch_geometric.utils.scatter({red})", lambda r=red: pyg_scatter(B[col64], row64, r),
                        "torch_geometric"),
                Variant(f"torch.sparse.mm(A_csr, B, '{tred}')", lambda t=tred: torch.sparse.mm(T_ones, B, t)),
            ], [B], go))
    if "sddmm" in ops:
        X, Y = randn(n, F, grad=True), randn(n, F, grad=True)
        v_dd = vals.clone().requires_grad_(True)
        A_dd = spt.CSR(rowptr, col, v_dd, (n, n))
        cases.append(Case("sddmm", "-", "X,Y,values", lambda: spt.sddmm(A_dd, X, Y).values, [
            Variant("(X[row] * Y[col]).sum(-1) * values", lambda: (X[row64] * Y[col64]).sum(-1) * v_dd),
        ], [X, Y, v_dd], randn(E)))
    for op, index in (("segment_reduce", row64), ("scatter_reduce", col64)):
        if op.split("_")[0] not in ops and op not in ops:
            continue
        src = randn(E, F, grad=True)
        go_s = randn(n, F)
        fn = spt.segment_reduce if op == "segment_reduce" else spt.scatter_reduce
        for red, tred in (("sum", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin")):
            vs = []
            if red == "sum":
                vs.append(Variant("index_add_", lambda i=index, s=src: s.new_zeros(n, F).index_add_(0, i, s)))
            vs.append(Variant(f"Tensor.scatter_reduce({tred}, include_self=False)",
                              lambda i=index, s=src, t=tred: torch_scatter(s, i, t)))
            vs.append(Variant(f"torch_geometric.utils.scatter({red})", lambda i=index, s=src, r=red: pyg_scatter(s, i, r),
                              "torch_geometric"))
            view = None
            if red in ("max", "min"):
                # float32 messages tie (a few per 10M at F = 64): sparseport gives an output element's
                # gradient to the lowest tied message (torch_scatter's rule), torch's scatter_reduce
                # shares it among them. Compared: dsrc summed per segment (the same under either rule)
                # and dsrc where the message is not the segment's max/min (0 under either rule).
                def view(res, i=index, s=src):
                    out, (d,) = res
                    off = s.detach() != out.index_select(0, i)
                    per_segment = d.new_zeros(out.shape).index_add_(0, i, d)
                    return out, [per_segment, d * off], ["src (per segment)", "src (not a winner)"]
            cases.append(Case(op, red, "src", (lambda i=index, s=src, r=red, f=fn: f(s, i, n, r)), vs, [src], go_s, view))
    if "attention" in ops or "csr_attention" in ops:
        Q, K, V = randn(n, F, grad=True), randn(n, F, grad=True), randn(n, F, grad=True)
        scale = 1.0 / math.sqrt(F)

        def torch_attention():
            s = (Q[row64] * K[col64]).sum(-1) * scale
            smax = s.new_full((n,), -math.inf).scatter_reduce(0, row64, s.detach(), "amax", include_self=True)
            e = (s - smax[row64]).exp()
            den = e.new_zeros(n).index_add_(0, row64, e) + 1e-16
            alpha = e / den[row64]
            return V.new_zeros(n, F).index_add_(0, row64, alpha[:, None] * V[col64])

        def pyg_attention():
            from torch_geometric.utils import scatter, softmax
            s = (Q[row64] * K[col64]).sum(-1) * scale
            alpha = softmax(s, row64, num_nodes=n)
            return scatter(alpha[:, None] * V[col64], row64, 0, n, reduce="sum")

        cases.append(Case("csr_attention", "-", "Q,K,V", lambda: spt.csr_attention(A_pat, Q, K, V, scale), [
            Variant("scatter softmax + index_add_ (PyG-style)", torch_attention),
            Variant("torch_geometric.utils.softmax + scatter", pyg_attention, "torch_geometric"),
        ], [Q, K, V], randn(n, F)))
    return cases


# ---- checking and measuring ----------------------------------------------------------------------


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.layout != torch.strided:
        a = a.to_dense()
    if b.layout != torch.strided:
        b = b.to_dense()
    if a.shape != b.shape:
        return math.inf
    if a.numel() == 0:
        return 0.0
    d = (a.double() - b.double()).abs().max().item()
    s = b.double().abs().max().item()
    return d / s if s > 0 else d


def forward_and_grads(fn, inputs, grad_out):
    out = fn()
    grads = torch.autograd.grad(out, inputs, grad_out)
    return out.detach(), [gr.detach() for gr in grads]


def check(sp_res, tv_res, names: List[str], tol: float):
    """(ok, worst error, detail)."""
    out_s, grads_s = sp_res
    out_t, grads_t = tv_res
    errs = [("out", rel_err(out_s, out_t))] + [(f"d{nm}", rel_err(a, b)) for nm, a, b in zip(names, grads_s, grads_t)]
    worst = max(e for _, e in errs)
    bad = [f"{nm} {e:.1e}" for nm, e in errs if not e <= tol]
    return not bad, worst, ", ".join(bad)


def measure(timer: Timer, fn, inputs, grad_out) -> Dict[str, Optional[float]]:
    def fwd_bwd():
        return torch.autograd.grad(fn(), inputs, grad_out)

    r: Dict[str, Optional[float]] = {}

    def put(key, t):  # the median is what the table shows; the minimum is kept for noisy machines
        r[f"{key}_ms"] = statistics.median(t)
        r[f"{key}_min_ms"] = min(t)

    put("fwd_bwd", timer.times_ms(fwd_bwd))
    r["fwd_bwd_peak_mib"] = timer.peak_mib(fwd_bwd)
    out = fn()
    bwd = lambda: torch.autograd.grad(out, inputs, grad_out, retain_graph=True)  # noqa: E731
    put("bwd", timer.times_ms(bwd))
    r["bwd_peak_mib"] = timer.peak_mib(bwd)
    with torch.no_grad():
        put("fwd_nograd", timer.times_ms(fn))
    del out
    return r


def _fmt(x, spec=".2f", width=8):
    return f"{'-':>{width}}" if x is None else f"{x:{width}{spec}}"


# ---- main ----------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--graph", default="powerlaw", choices=("er", "powerlaw"))
    ap.add_argument("--nodes", type=int, default=None, help="default: 200000 on CUDA, 20000 on the CPU")
    ap.add_argument("--avg-degree", type=float, default=None,
                    help="entries per row; default: 83.5 on CUDA (16.7M entries), 16 on the CPU")
    ap.add_argument("--F", type=int, default=64, help="feature width")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--index-dtype", default="int32", choices=("int32", "int64"),
                    help="A's rowptr/col for sparseport and the torch CSR (gather/scatter indices are int64, as torch needs)")
    ap.add_argument("--reps", type=int, default=20, help="timed calls per measurement (the median is reported)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", default="spmm,sddmm,segment,scatter,attention",
                    help="comma list of spmm, sddmm, segment, scatter, attention")
    ap.add_argument("--tol", type=float, default=None, help="max|a-b|/max|b| allowed (default 1e-4 float32, 1e-9 float64)")
    ap.add_argument("--threads", type=int, default=0, help="torch (and sparseport CPU) threads; 0 leaves the default")
    ap.add_argument("--target", type=float, default=1.5, help="the speedup the summary marks as met")
    ap.add_argument("--json", metavar="OUT", help="write every row and the setup to this file")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("bench_backward: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
            return 2
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
    on_cuda = device.type == "cuda"
    n = args.nodes if args.nodes is not None else (200_000 if on_cuda else 20_000)
    avg = args.avg_degree if args.avg_degree is not None else (83.5 if on_cuda else 16.0)
    dtype = getattr(torch, args.dtype)
    idx_dtype = getattr(torch, args.index_dtype)
    tol = args.tol if args.tol is not None else (1e-4 if dtype == torch.float32 else 1e-9)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    if args.threads:
        torch.set_num_threads(args.threads)
        if not on_cuda:
            spt.context("cpu").threads = args.threads

    t0 = time.perf_counter()
    rowptr, col, gdesc = make_graph(args.graph, n, avg, args.seed)
    gen_s = time.perf_counter() - t0
    degs = (rowptr[1:] - rowptr[:-1])
    E = col.shape[0]
    if max(n, E) >= 2**31 - 1 and idx_dtype == torch.int32:
        idx_dtype = torch.int64
    rowptr = rowptr.to(idx_dtype).to(device)
    col = col.to(idx_dtype).to(device)
    ginfo = dict(kind=args.graph, description=gdesc, nodes=n, entries=E, mean_degree=E / max(n, 1),
                 max_degree=int(degs.max()) if n else 0, empty_rows=int((degs == 0).sum()),
                 generate_seconds=round(gen_s, 2))
    dev_name = torch.cuda.get_device_name(device) if on_cuda else (platform.processor() or platform.machine())
    backend = spt.context(device).backend
    setup = dict(device=str(device), device_name=dev_name, sparseport_backend=backend, torch=torch.__version__,
                 sparseport=getattr(sparseport, "__version__", "?"), python=platform.python_version(),
                 threads=torch.get_num_threads(), F=args.F, dtype=args.dtype, index_dtype=str(idx_dtype).split(".")[-1],
                 reps=args.reps, warmup=args.warmup, tol=tol, graph=ginfo,
                 command=" ".join([os.path.relpath(sys.argv[0], ROOT) if os.path.isabs(sys.argv[0]) else sys.argv[0]]
                                  + (sys.argv[1:] if argv is None else list(argv))))
    print(f"sparseport {setup['sparseport']} ({backend}), torch {torch.__version__}, {device} ({dev_name}), "
          f"{setup['threads']} torch threads")
    print(f"graph: {gdesc}: {n:,} nodes, {E:,} entries (mean degree {E / max(n, 1):.1f}, max {ginfo['max_degree']:,}, "
          f"{ginfo['empty_rows']:,} empty rows), generated in {gen_s:.1f} s")
    print(f"F = {args.F}, {args.dtype}, {setup['index_dtype']} CSR indices; median of {args.reps} after {args.warmup} "
          f"warm-up calls; check tolerance {tol:g}\n")

    timer = Timer(device, args.reps, args.warmup)
    cases = build_cases(rowptr, col, n, args.F, dtype, device, ops, args.seed)
    rows: List[dict] = []
    failures = 0
    for case in cases:
        names = case.grads.split(",")
        label = f"{case.op} {case.reduce} (grads {case.grads})"
        try:
            sp_res = forward_and_grads(case.sp, case.inputs, case.grad_out)
            sp_m = measure(timer, case.sp, case.inputs, case.grad_out)
        except Exception as e:
            failures += 1
            print(f"{label}: sparseport raised {type(e).__name__}: {e}")
            traceback.print_exc(limit=3)
            rows.append(dict(op=case.op, reduce=case.reduce, grads=case.grads, variant=None,
                             error=f"sparseport: {type(e).__name__}: {e}"))
            continue
        for var in case.variants:
            row = dict(op=case.op, reduce=case.reduce, grads=case.grads, variant=var.name,
                       sparseport=sp_m, torch=None, check=None, max_rel_err=None, error=None, skipped=None)
            if var.needs and (why := _module_ok(var.needs)):
                row["skipped"] = f"{var.needs} not importable ({why})"
                rows.append(row)
                continue
            try:
                tv_res = forward_and_grads(var.fn, case.inputs, case.grad_out)
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                rows.append(row)
                continue
            if case.view is None:
                ok, worst, detail = check(sp_res, tv_res, names, tol)
            else:
                (o_s, g_s, v_names), (o_t, g_t, _) = case.view(sp_res), case.view(tv_res)
                ok, worst, detail = check((o_s, g_s), (o_t, g_t), v_names, tol)
            del tv_res
            row["check"] = "ok" if ok else f"FAIL ({detail})"
            row["max_rel_err"] = worst
            failures += 0 if ok else 1
            try:
                row["torch"] = measure(timer, var.fn, case.inputs, case.grad_out)
            except Exception as e:
                row["error"] = f"timing: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
            for k in ("bwd", "fwd_bwd", "fwd_nograd"):
                t = row["torch"] and row["torch"][f"{k}_ms"]
                row[f"{k}_speedup"] = (t / sp_m[f"{k}_ms"]) if t and sp_m[f"{k}_ms"] else None
            rows.append(row)
            gc.collect()
        del sp_res
        gc.collect()
        print_case(rows, case, on_cuda)

    summary = summarize(rows, args.target)
    print_summary(summary, args.target)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(setup=setup, rows=rows, summary=summary), f, indent=1)
        print(f"\nwrote {args.json}")
    if failures:
        print(f"\n{failures} check(s) failed", file=sys.stderr)
    return 1 if failures else 0


_HEADER_PRINTED = False


def print_case(rows, case, on_cuda):
    global _HEADER_PRINTED
    mine = [r for r in rows if r["op"] == case.op and r["reduce"] == case.reduce and r["grads"] == case.grads]
    if not _HEADER_PRINTED:
        h = (f"{'op':<15}{'reduce':<7}{'grads':<11}{'PyTorch expression':<49}"
             f"{'bwd sp':>8}{'torch':>9}{'x':>7}  {'f+b sp':>8}{'torch':>9}{'x':>7}")
        if on_cuda:
            h += f"  {'f+b MiB sp':>10}{'torch':>9}  {'bwd MiB sp':>10}{'torch':>9}"
        h += "  check"
        print(h)
        print("-" * len(h))
        print(" " * 82 + "(ms, median; x = torch / sparseport)")
        _HEADER_PRINTED = True
    for r in mine:
        lead = f"{r['op']:<15}{r['reduce']:<7}{r['grads']:<11}{(r['variant'] or '')[:48]:<49}"
        if r.get("skipped") or (r.get("error") and not r.get("torch")):
            sp = r.get("sparseport")
            tail = f"skipped: {r['skipped']}" if r.get("skipped") else f"error: {r['error']}"
            print(lead + (f"{_fmt(sp['bwd_ms'])}{'':>16}  {_fmt(sp['fwd_bwd_ms'])}{'':>16}  " if sp else "") + tail)
            continue
        sp, tv = r["sparseport"], r["torch"]
        line = (lead + f"{_fmt(sp['bwd_ms'])} {_fmt(tv['bwd_ms'])}{_fmt(r['bwd_speedup'], '.2f', 7)}"
                f"  {_fmt(sp['fwd_bwd_ms'])} {_fmt(tv['fwd_bwd_ms'])}{_fmt(r['fwd_bwd_speedup'], '.2f', 7)}")
        if on_cuda:
            line += (f"  {_fmt(sp['fwd_bwd_peak_mib'], '.0f', 10)}{_fmt(tv['fwd_bwd_peak_mib'], '.0f', 9)}"
                     f"  {_fmt(sp['bwd_peak_mib'], '.0f', 10)}{_fmt(tv['bwd_peak_mib'], '.0f', 9)}")
        line += f"  {r['check']}" + (f" {r['error']}" if r.get("error") else "")
        print(line)


def summarize(rows, target):
    """Per op / reduce / grads: sparseport's times against the fastest PyTorch variant that
    passed its check (the conservative speedup) and against each variant."""
    out = []
    keys = []
    for r in rows:
        k = (r["op"], r["reduce"], r["grads"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in rows if (r["op"], r["reduce"], r["grads"]) == k]
        good = [r for r in rs if r.get("torch") and r.get("check") == "ok"]
        s = dict(op=k[0], reduce=k[1], grads=k[2])
        if not good:
            s["note"] = "no PyTorch variant ran and agreed"
            out.append(s)
            continue
        sp = good[0]["sparseport"]
        for m in ("bwd", "fwd_bwd"):
            best = min(good, key=lambda r: r["torch"][f"{m}_ms"])
            s[f"{m}_sparseport_ms"] = sp[f"{m}_ms"]
            s[f"{m}_best_torch_ms"] = best["torch"][f"{m}_ms"]
            s[f"{m}_best_torch_variant"] = best["variant"]
            s[f"{m}_speedup_vs_best"] = best["torch"][f"{m}_ms"] / sp[f"{m}_ms"]
        s["bwd_target_met"] = s["bwd_speedup_vs_best"] >= target
        out.append(s)
    return out


def print_summary(summary, target):
    print(f"\nsummary: sparseport against the fastest PyTorch expression that agreed (target: backward >= {target}x)")
    h = f"{'op':<15}{'reduce':<7}{'grads':<11}{'bwd x':>7}  {'fastest torch backward':<49}{'f+b x':>7}  target"
    print(h)
    print("-" * len(h))
    for s in summary:
        lead = f"{s['op']:<15}{s['reduce']:<7}{s['grads']:<11}"
        if "note" in s:
            print(lead + s["note"])
            continue
        print(lead + f"{s['bwd_speedup_vs_best']:7.2f}  {s['bwd_best_torch_variant'][:48]:<49}"
              f"{s['fwd_bwd_speedup_vs_best']:7.2f}  {'met' if s['bwd_target_met'] else 'missed'}")


if __name__ == "__main__":
    sys.exit(main())
