# SPDX-License-Identifier: Apache-2.0
"""SparsePort's operators as PyTorch custom ops, with autograd and torch.compile support.

    import torch, sparseport.torch as spt
    A = spt.CSR(rowptr, col, values, (m, k))      # dense index/value tensors; values=None: a pattern
    C = spt.spmm(A, B, reduce="mean")             # m x F
    S = spt.sddmm(A, X, Y)                        # CSR with A's pattern and new values
    out = spt.scatter_reduce(src, index, n, "max")
    O = spt.csr_attention(A, Q, K, V)

The ops are registered as ``torch.ops.sparseport.{spmm,sddmm,segment_reduce,scatter_reduce,
csr_attention,csr_transpose}`` with fake (meta) implementations and autograd formulas, so
``torch.compile(fullgraph=True)`` traces through them; so are the ones their autograd runs:
``spmm_arg`` and ``{segment,scatter}_reduce_arg`` (max/min that also return each output element's
winner, which the backward follows), ``spmm_arg_backward`` and ``{segment,scatter}_reduce_backward``.
The native module does not link libtorch: each op allocates its output with torch.empty and hands
raw data pointers, shapes and type tags to the C++ library, which runs the op on the backend of the
tensors' device (CPU: openmp, else reference; cuda:N: the cuda plugin). One context per device is
created on first use and kept.

Types: float32/float64/float16/bfloat16 values (16-bit: float32 arithmetic in the library, each
result rounded once; all value operands of one call share one dtype), int32/int64 indices (rowptr
and col share one index type). Under ``torch.autocast`` (cpu or cuda) the ops cast their floating
inputs (float64 excepted) to the autocast dtype first, as torch's own lower-precision ops do.
TF32: spmm (and its backward) follows ``torch.backends.cuda.matmul.allow_tf32``, read at each call
(or ``torch.backends.cuda.matmul.fp32_precision == "tf32"`` where torch refuses the legacy read), as
torch's matmuls do: only with it may a variant that rounds float32 inputs to TF32 run (cuda's
spmm.tc_window_tf32); off by default. Errors of the C++ library arrive as sparseport.InvalidArgument (a ValueError), sparseport.Error (a
RuntimeError) and their siblings, with the library's message.
"""
import atexit
import collections
import math
import os
import threading
import weakref
from typing import NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from . import _C

__all__ = [
    "CSR",
    "spmm",
    "sddmm",
    "segment_reduce",
    "scatter_reduce",
    "csr_attention",
    "csr_transpose",
    "context",
    "set_cpu_backend",
]

_VALUE_TAG = {torch.float32: _C.F32, torch.float64: _C.F64, torch.float16: _C.F16, torch.bfloat16: _C.BF16}
_VALUE_DTYPES = "torch.float32, torch.float64, torch.float16, torch.bfloat16"
_HALF = (torch.float16, torch.bfloat16)
_INDEX_TAG = {torch.int32: _C.I32, torch.int64: _C.I64}
_REDUCE = {"sum": 0, "mean": 1, "max": 2, "min": 3}


class CSR(NamedTuple):
    """A CSR matrix of ``shape = (rows, cols)`` as dense tensors: ``rowptr`` (rows + 1), ``col``
    (nnz) and ``values`` (nnz, or None for a pattern: every value 1). Columns within a row may be
    unsorted or repeated (repeats count separately)."""

    rowptr: Tensor
    col: Tensor
    values: Optional[Tensor]
    shape: Tuple[int, int]

    @property
    def nnz(self) -> int:
        return self.col.shape[0]

    @staticmethod
    def from_torch(t: Tensor) -> "CSR":
        """From a 2-D ``torch.sparse_csr_tensor`` (eager code only: torch.compile cannot trace
        sparse tensors; pass a CSR of dense tensors into compiled code)."""
        if t.layout != torch.sparse_csr or t.dim() != 2:
            raise ValueError(f"sparseport: expected a 2-D sparse CSR tensor, got layout {t.layout} with {t.dim()} dims")
        return CSR(t.crow_indices(), t.col_indices(), t.values(), (t.shape[0], t.shape[1]))

    def to_torch(self) -> Tensor:
        """As a ``torch.sparse_csr_tensor`` (a pattern gets values 1 in float32)."""
        vals = self.values if self.values is not None else torch.ones(self.nnz, device=self.col.device)
        return torch.sparse_csr_tensor(self.rowptr, self.col, vals, self.shape, check_invariants=False)

    def with_values(self, values: Optional[Tensor]) -> "CSR":
        return CSR(self.rowptr, self.col, values, self.shape)


def _as_csr(a, op: str) -> CSR:
    if isinstance(a, CSR):
        pass
    elif isinstance(a, Tensor) and a.layout == torch.sparse_csr:
        a = CSR.from_torch(a)
    elif isinstance(a, tuple) and len(a) == 4:
        a = CSR(*a)
    else:
        raise TypeError(f"sparseport.{op}: A must be a sparseport.torch.CSR or a sparse CSR tensor, not {type(a).__name__}")
    if a.rowptr.shape[0] != a.shape[0] + 1:
        raise ValueError(
            f"sparseport.{op}: A.rowptr has {a.rowptr.shape[0]} entries but A.shape is {tuple(a.shape)} (need rows + 1)"
        )
    return a


def _check_reduce(reduce: str, op: str) -> None:
    if reduce not in _REDUCE:
        raise ValueError(f"sparseport.{op}: reduce is '{reduce}', not one of sum, mean, max, min")


# ---- contexts ------------------------------------------------------------------------------------

_contexts = {}
_contexts_lock = threading.Lock()
_cpu_backend: Optional[str] = None
_CPU_BACKENDS = ("openmp", "reference", "kokkos")


def _available() -> set:
    return {name for name, status, _ in _C.plugins() if status == "available"}


def _cpu_choice() -> str:
    if _cpu_backend is not None:
        return _cpu_backend
    env = os.environ.get("SPARSEPORT_BACKEND", "")
    if env in _CPU_BACKENDS:
        return env
    return "openmp" if "openmp" in _available() else "reference"


def set_cpu_backend(backend: Optional[str]) -> None:
    """Run CPU tensors on ``backend`` (reference, openmp or kokkos); None restores the default
    (SPARSEPORT_BACKEND when it names a CPU backend, else openmp when compiled, else reference)."""
    global _cpu_backend
    if backend is not None and backend not in _CPU_BACKENDS:
        raise ValueError(f"sparseport: '{backend}' is not a CPU backend (one of {', '.join(_CPU_BACKENDS)})")
    with _contexts_lock:
        _cpu_backend = backend
        _contexts.pop(("cpu", None), None)


def context(device="cpu") -> "_C.Context":
    """The native context that runs ops on tensors of ``device`` (created on first use, then kept).
    Its settings (``threads``, ``deterministic``, ``validate``) apply to every later op there;
    ``allow_tf32`` too, except for spmm, which passes torch's own flag (see the module's doc)."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    key = (device.type, device.index)
    ctx = _contexts.get(key)
    if ctx is not None:
        return ctx
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            if device.type == "cpu":
                ctx = _C.Context.create(_cpu_choice())
            elif device.type == "cuda":
                ctx = _C.Context.create(f"cuda:{device.index}")
                _lend_torch_allocator(ctx, device.index)
            else:
                raise ValueError(f"sparseport: no backend runs on {device} tensors (cpu and cuda are supported)")
            _contexts[key] = ctx
    return ctx


@atexit.register
def _return_allocators() -> None:
    """At exit, contexts go back to their own scratch pools: the lent callbacks are Python code,
    which must not run while (or after) the interpreter is torn down."""
    for (kind, _), ctx in list(_contexts.items()):
        if kind == "cuda":
            ctx.set_scratch_allocator(None, None)
            ctx.stream = 0


def _lend_torch_allocator(ctx, index: int) -> None:
    """The library's scratch comes from PyTorch's caching allocator, ordered on the stream it is
    asked for (so it is reused in stream order and lives in a CUDA graph's pool under capture)."""
    ctx.set_scratch_allocator(
        lambda n, stream: torch.cuda.caching_allocator_alloc(n, index, stream),
        lambda ptr, n, stream: torch.cuda.caching_allocator_delete(ptr),
    )


def _ctx(device: torch.device):
    ctx = _contexts.get((device.type, device.index))
    if ctx is None:
        ctx = context(device)
    if device.type == "cuda":
        # Our work queues on PyTorch's current stream: ordered after the inputs are written and
        # before the outputs are read, with no wait (and capturable in a CUDA graph).
        # PyTorch's default stream has handle 0, which to the library means "your own stream":
        # name it cudaStreamLegacy (0x1), the same queue.
        ctx.stream = torch.cuda.current_stream(device).cuda_stream or 1
    return ctx


# ---- argument checks (the C++ front end checks shapes, types and index contents) -----------------


def _vec(t: Tensor, what: str, op: str) -> Tensor:
    if t.dim() != 1:
        raise ValueError(f"sparseport.{op}: {what} must be 1-D, got shape {tuple(t.shape)}")
    return t if t.stride(0) == 1 or t.shape[0] <= 1 else t.contiguous()


def _mat(t: Tensor, what: str, op: str) -> Tuple[Tensor, int]:
    """t as row-major with a leading dimension (a copy only when its strides are not)."""
    if t.dim() != 2:
        raise ValueError(f"sparseport.{op}: {what} must be 2-D, got shape {tuple(t.shape)}")
    if t.dtype not in _VALUE_TAG:
        raise ValueError(f"sparseport.{op}: {what} has dtype {t.dtype}; supported: {_VALUE_DTYPES}")
    r, c = t.shape
    s0, s1 = t.stride()
    if (c > 1 and s1 != 1) or (r > 1 and s0 < max(c, 1)):
        t = t.contiguous()
        s0 = max(c, 1)
    return t, (s0 if r > 1 else max(c, 1))


def _csr_parts(rowptr: Tensor, col: Tensor, values: Optional[Tensor], device: torch.device, op: str):
    rowptr = _vec(rowptr, "A.rowptr", op)
    col = _vec(col, "A.col", op)
    if rowptr.shape[0] < 1:
        raise ValueError(f"sparseport.{op}: A.rowptr is empty (it needs rows + 1 entries)")
    itag = _INDEX_TAG.get(rowptr.dtype)
    if itag is None or col.dtype != rowptr.dtype:
        raise ValueError(
            f"sparseport.{op}: A.rowptr and A.col must share one index dtype, torch.int32 or torch.int64 "
            f"(got {rowptr.dtype} and {col.dtype})"
        )
    if rowptr.device != device or col.device != device:
        raise ValueError(f"sparseport.{op}: A's indices are on {rowptr.device}/{col.device} but the dense operands on {device}")
    if values is not None:
        values = _vec(values, "A.values", op)
        if values.shape[0] != col.shape[0]:
            raise ValueError(f"sparseport.{op}: A.values has {values.shape[0]} entries but A.col has {col.shape[0]}")
        if values.dtype not in _VALUE_TAG:
            raise ValueError(f"sparseport.{op}: A.values has dtype {values.dtype}; supported: {_VALUE_DTYPES}")
        if values.device != device:
            raise ValueError(f"sparseport.{op}: A.values is on {values.device} but the dense operands on {device}")
    return rowptr, col, values, itag


_MATMUL = torch.backends.cuda.matmul


def _allow_tf32() -> bool:
    """torch's TF32 setting for matmuls, read at each call and passed to the library as the op's
    allow_tf32 option, so it decides over the context's (``context(...).allow_tf32``,
    SPARSEPORT_ALLOW_TF32). The attribute exists on CPU-only builds too. torch >= 2.9 raises on
    reading ``allow_tf32`` after ``fp32_precision`` was set (mixing its two APIs); then the new
    setting decides."""
    try:
        return bool(_MATMUL.allow_tf32)
    except RuntimeError:
        return getattr(_MATMUL, "fp32_precision", "") == "tf32"


def _same_device(op: str, first: Tensor, *others: Tensor) -> torch.device:
    d = first.device
    for t in others:
        if t.device != d:
            raise ValueError(f"sparseport.{op}: operands on {d} and {t.device}; all must be on one device")
    return d


# ---- the custom ops ------------------------------------------------------------------------------


@torch.library.custom_op("sparseport::spmm", mutates_args=())
def _spmm(rowptr: Tensor, col: Tensor, values: Optional[Tensor], n_cols: int, B: Tensor, reduce: str) -> Tensor:
    device = _same_device("spmm", B)
    rowptr, col, values, itag = _csr_parts(rowptr, col, values, device, "spmm")
    B, b_ld = _mat(B, "B", "spmm")
    rows, f = rowptr.shape[0] - 1, B.shape[1]
    out = torch.empty((rows, f), dtype=B.dtype, device=device)
    btag = _VALUE_TAG[B.dtype]
    _C.spmm(_ctx(device), rows, n_cols, col.shape[0], rowptr.data_ptr(), col.data_ptr(),
            0 if values is None else values.data_ptr(), itag, btag if values is None else _VALUE_TAG[values.dtype],
            B.data_ptr(), B.shape[0], b_ld, f, btag, out.data_ptr(), max(f, 1), _REDUCE[reduce], _allow_tf32())
    return out


@_spmm.register_fake
def _(rowptr, col, values, n_cols, B, reduce):
    return B.new_empty((rowptr.shape[0] - 1, B.shape[1]))


@torch.library.custom_op("sparseport::sddmm", mutates_args=())
def _sddmm(rowptr: Tensor, col: Tensor, values: Optional[Tensor], n_cols: int, X: Tensor, Y: Tensor) -> Tensor:
    device = _same_device("sddmm", X, Y)
    rowptr, col, values, itag = _csr_parts(rowptr, col, values, device, "sddmm")
    X, x_ld = _mat(X, "X", "sddmm")
    Y, y_ld = _mat(Y, "Y", "sddmm")
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"sparseport.sddmm: X is {tuple(X.shape)} and Y is {tuple(Y.shape)} (need X.cols == Y.cols)")
    if Y.dtype != X.dtype:
        raise ValueError(f"sparseport.sddmm: X holds {X.dtype} and Y {Y.dtype} (need one dtype)")
    xtag = _VALUE_TAG[X.dtype]
    out = torch.empty((col.shape[0],), dtype=X.dtype, device=device)
    _C.sddmm(_ctx(device), rowptr.shape[0] - 1, n_cols, col.shape[0], rowptr.data_ptr(), col.data_ptr(),
             0 if values is None else values.data_ptr(), itag, xtag if values is None else _VALUE_TAG[values.dtype],
             X.data_ptr(), X.shape[0], x_ld, Y.data_ptr(), Y.shape[0], y_ld, X.shape[1], xtag, out.data_ptr())
    return out


@_sddmm.register_fake
def _(rowptr, col, values, n_cols, X, Y):
    return X.new_empty((col.shape[0],))


def _index_operand(index: Tensor, n: Optional[int], op: str) -> Tuple[Tensor, int]:
    """index as a contiguous vector with its type tag; n: the entries it must have (None: any)."""
    index = _vec(index, "index", op)
    itag = _INDEX_TAG.get(index.dtype)
    if itag is None:
        raise ValueError(f"sparseport.{op}: index has dtype {index.dtype}; supported: torch.int32, torch.int64")
    if n is not None and index.shape[0] != n:
        raise ValueError(f"sparseport.{op}: index has {index.shape[0]} entries but src has {n} rows")
    return index, itag


def _index_reduce(src: Tensor, index: Tensor, num_segments: int, reduce: str, sorted_: bool) -> Tensor:
    op = "segment_reduce" if sorted_ else "scatter_reduce"
    device = _same_device(op, src, index)
    src, s_ld = _mat(src, "src", op)
    index, itag = _index_operand(index, src.shape[0], op)
    if reduce not in _REDUCE:
        raise ValueError(f"sparseport.{op}: reduce is '{reduce}', not one of sum, mean, max, min")
    f = src.shape[1]
    out = torch.empty((num_segments, f), dtype=src.dtype, device=device)
    _C.index_reduce(_ctx(device), sorted_, index.shape[0], index.data_ptr(), itag, src.data_ptr(), s_ld, f,
                    _VALUE_TAG[src.dtype], out.data_ptr(), num_segments, _REDUCE[reduce])
    return out


@torch.library.custom_op("sparseport::segment_reduce", mutates_args=())
def _segment_reduce(src: Tensor, index: Tensor, num_segments: int, reduce: str) -> Tensor:
    return _index_reduce(src, index, num_segments, reduce, True)


@torch.library.custom_op("sparseport::scatter_reduce", mutates_args=())
def _scatter_reduce(src: Tensor, index: Tensor, num_segments: int, reduce: str) -> Tensor:
    return _index_reduce(src, index, num_segments, reduce, False)


@_segment_reduce.register_fake
def _(src, index, num_segments, reduce):
    return src.new_empty((num_segments, src.shape[1]))


@_scatter_reduce.register_fake
def _(src, index, num_segments, reduce):
    return src.new_empty((num_segments, src.shape[1]))


# A SegmentCsr (the segments x E CSR on which a reduce over messages is an spmm; its A^T serves
# the backward) per index tensor, built by the first {segment,scatter}_reduce_arg (max/min with
# grad) or {segment,scatter}_reduce_backward call that meets the index, then reused: a training
# loop pays for the counting sorts of an index (of the CSR, and of its transpose at the first
# backward) once, not per call, and the steady state does no host work (a CUDA graph can capture
# it after a warm-up step).
# An entry lives as long as its index tensor: it holds only a weak reference to it and is dropped
# when the tensor dies, so no other tensor can meet it at the same address. At most _SEGMENT_CACHE
# entries are kept, the least recently used dropped first; each holds about five index-sized
# arrays (the CSR and its transpose), plus two value arrays of E after a mean backward op, in the
# library's memory (on cuda not PyTorch's caching allocator). The key holds the context (a CPU
# backend switch makes new entries), the index's address, size, dtype and version counter (an
# in-place change makes a new entry), the segment count and the messages' dtype.
_segment_csrs: "collections.OrderedDict" = collections.OrderedDict()
_segment_lock = threading.RLock()  # reentrant: a weak reference's callback may run under it (gc)
_SEGMENT_CACHE = 8


class _SegmentEntry:
    """A SegmentCsr, a weak reference to its index tensor, and the reduces whose backward has run
    with it: the first backward of each builds what it needs into the SegmentCsr (the transpose;
    for mean its 1/count weights), under `lock`, so that concurrent calls sharing it only read."""

    __slots__ = ("csr", "ref", "ready", "lock")

    def __init__(self, csr, ref):
        self.csr, self.ref, self.ready, self.lock = csr, ref, set(), threading.Lock()


def _segment_csr(ctx, index: Tensor, owned: bool, itag: int, num_segments: int, vtag: int):
    """The cached SegmentCsr entry of ``index``, or None when ``index`` is a copy made for this call
    (the C++ functions then build a temporary one, or need none)."""
    if not owned:
        return None
    key = (ctx, index.data_ptr(), index.shape[0], itag, index._version, num_segments, vtag)
    hit = _segment_csrs.get(key)
    # A live entry is good for any tensor at its address: while the tensor it was built for lives,
    # the memory is that tensor's, and the version counter (shared by views) says it is unchanged.
    if hit is not None and hit.ref() is not None:
        try:
            _segment_csrs.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile: still valid for this call
            pass
        return hit
    csr = _C.SegmentCsr(ctx, index.shape[0], index.data_ptr(), itag, num_segments, vtag)
    ref = weakref.ref(index, lambda _r, k=key: _drop_segment_csr(k, _r))
    hit = _SegmentEntry(csr, ref)
    with _segment_lock:
        _segment_csrs[key] = hit
        while len(_segment_csrs) > _SEGMENT_CACHE:
            _segment_csrs.popitem(last=False)
    return hit


def _drop_segment_csr(key, ref) -> None:
    with _segment_lock:
        hit = _segment_csrs.get(key)
        if hit is not None and hit.ref is ref:
            del _segment_csrs[key]


# (backend, op) pairs whose max/min with a recorded winner refused 16-bit values: the library's
# front end converts 16-bit operands to float32 for the other ops, but the variants that record
# the winners (spmm_arg, segment/scatter_reduce_arg) may take none. There the op runs the same
# conversion here: float32 copies of the values, the float32 call, one rounding of the result
# (the winners are the float32 call's, which compares the same values: 16-bit inputs and their
# products are exact in float32). Tried natively first, so a backend that gains the support uses it.
_ARG16_VIA_F32: set = set()


def _arg16_via_f32(run32, *values: Optional[Tensor]):
    dtype = next(v.dtype for v in values if v is not None)
    out, arg = run32(*(None if v is None else v.float() for v in values))
    return out.to(dtype), arg


def _index_reduce_arg(src: Tensor, index: Tensor, num_segments: int, reduce: str, sorted_: bool):
    op = "segment_reduce" if sorted_ else "scatter_reduce"
    device = _same_device(op, src, index)
    src, s_ld = _mat(src, "src", op)
    given = index
    index, itag = _index_operand(index, src.shape[0], op)
    if reduce not in ("max", "min"):
        raise ValueError(f"sparseport.{op}: reduce is '{reduce}'; only max and min record a winner")
    f, vtag = src.shape[1], _VALUE_TAG[src.dtype]
    ctx = _ctx(device)
    if src.dtype in _HALF and (ctx.backend, op) in _ARG16_VIA_F32:
        return _arg16_via_f32(lambda s: _index_reduce_arg(s, given, num_segments, reduce, sorted_), src)
    out = torch.empty((num_segments, f), dtype=src.dtype, device=device)
    arg = torch.empty((num_segments, f), dtype=index.dtype, device=device)
    entry = _segment_csr(ctx, index, index is given, itag, num_segments, vtag)
    try:
        _C.index_reduce_arg(ctx, sorted_, index.shape[0], index.data_ptr(), itag, src.data_ptr(), s_ld, f, vtag,
                            out.data_ptr(), arg.data_ptr(), num_segments, _REDUCE[reduce],
                            None if entry is None else entry.csr)
    except _C.Unsupported:
        if src.dtype not in _HALF:
            raise
        _ARG16_VIA_F32.add((ctx.backend, op))
        return _arg16_via_f32(lambda s: _index_reduce_arg(s, given, num_segments, reduce, sorted_), src)
    return out, arg


@torch.library.custom_op("sparseport::segment_reduce_arg", mutates_args=())
def _segment_reduce_arg(src: Tensor, index: Tensor, num_segments: int, reduce: str) -> Tuple[Tensor, Tensor]:
    """segment_reduce max/min and, per output element, the message that won it (index's dtype; -1:
    an empty segment). Ties: the lowest message; a NaN message wins."""
    return _index_reduce_arg(src, index, num_segments, reduce, True)


@torch.library.custom_op("sparseport::scatter_reduce_arg", mutates_args=())
def _scatter_reduce_arg(src: Tensor, index: Tensor, num_segments: int, reduce: str) -> Tuple[Tensor, Tensor]:
    """scatter_reduce max/min and, per output element, the winner's position in the index's stable
    sort (not the message number; what scatter_reduce_backward takes; -1: an empty segment)."""
    return _index_reduce_arg(src, index, num_segments, reduce, False)


@_segment_reduce_arg.register_fake
def _(src, index, num_segments, reduce):
    return src.new_empty((num_segments, src.shape[1])), index.new_empty((num_segments, src.shape[1]))


@_scatter_reduce_arg.register_fake
def _(src, index, num_segments, reduce):
    return src.new_empty((num_segments, src.shape[1])), index.new_empty((num_segments, src.shape[1]))


def _index_reduce_backward(grad: Tensor, index: Tensor, arg: Optional[Tensor], reduce: str, sorted_: bool) -> Tensor:
    op = "segment_reduce" if sorted_ else "scatter_reduce"
    device = _same_device(op, grad, index)
    grad, g_ld = _mat(grad, "grad", op)
    given = index
    index, itag = _index_operand(index, None, op)
    if reduce not in _REDUCE:
        raise ValueError(f"sparseport.{op}: reduce is '{reduce}', not one of sum, mean, max, min")
    segments, f, vtag = grad.shape[0], grad.shape[1], _VALUE_TAG[grad.dtype]
    by_arg = reduce in ("max", "min")
    if by_arg:
        if arg is None:
            raise ValueError(f"sparseport.{op}: the backward of reduce {reduce} needs the forward's arg")
        if arg.device != device or arg.dtype != index.dtype or tuple(arg.shape) != (segments, f):
            raise ValueError(f"sparseport.{op}: arg is {tuple(arg.shape)} {arg.dtype} on {arg.device}; need "
                             f"{(segments, f)} {index.dtype} on {device} (the forward's)")
        arg = arg.contiguous()
    d_src = torch.empty((index.shape[0], f), dtype=grad.dtype, device=device)
    ctx = _ctx(device)
    entry = _segment_csr(ctx, index, index is given, itag, segments, vtag)

    def run():
        _C.index_reduce_backward(ctx, sorted_, index.shape[0], index.data_ptr(), itag, grad.data_ptr(), g_ld, f, vtag,
                                 d_src.data_ptr(), segments, _REDUCE[reduce], arg.data_ptr() if by_arg else 0,
                                 None if entry is None else entry.csr)

    if entry is None or reduce in entry.ready:
        run()
    else:
        with entry.lock:
            run()
            if ctx.device_memory:  # what it built stays valid for calls queued on other streams
                ctx.synchronize()
            entry.ready.add(reduce)
    return d_src


@torch.library.custom_op("sparseport::segment_reduce_backward", mutates_args=())
def _segment_reduce_backward(grad: Tensor, index: Tensor, arg: Optional[Tensor], reduce: str) -> Tensor:
    """d src of segment_reduce given d out (segments x F): sum: d out[index[e]]; mean: the same over
    the segment's count; max/min: d out where message e won (arg: segment_reduce_arg's), else 0."""
    return _index_reduce_backward(grad, index, arg, reduce, True)


@torch.library.custom_op("sparseport::scatter_reduce_backward", mutates_args=())
def _scatter_reduce_backward(grad: Tensor, index: Tensor, arg: Optional[Tensor], reduce: str) -> Tensor:
    """segment_reduce_backward with index in any order (arg: scatter_reduce_arg's)."""
    return _index_reduce_backward(grad, index, arg, reduce, False)


@_segment_reduce_backward.register_fake
def _(grad, index, arg, reduce):
    return grad.new_empty((index.shape[0], grad.shape[1]))


@_scatter_reduce_backward.register_fake
def _(grad, index, arg, reduce):
    return grad.new_empty((index.shape[0], grad.shape[1]))


@torch.library.custom_op("sparseport::csr_attention", mutates_args=())
def _csr_attention(rowptr: Tensor, col: Tensor, n_cols: int, Q: Tensor, K: Tensor, V: Tensor, scale: float) -> Tensor:
    device = _same_device("csr_attention", Q, K, V)
    rowptr, col, _, itag = _csr_parts(rowptr, col, None, device, "csr_attention")
    Q, q_ld = _mat(Q, "Q", "csr_attention")
    K, k_ld = _mat(K, "K", "csr_attention")
    V, v_ld = _mat(V, "V", "csr_attention")
    if K.dtype != Q.dtype or V.dtype != Q.dtype:
        raise ValueError(f"sparseport.csr_attention: Q, K, V have dtypes {Q.dtype}, {K.dtype}, {V.dtype} (need one)")
    if K.shape[1] != Q.shape[1]:
        raise ValueError(f"sparseport.csr_attention: Q is {tuple(Q.shape)} and K is {tuple(K.shape)} (need Q.cols == K.cols)")
    rows, fv = rowptr.shape[0] - 1, V.shape[1]
    out = torch.empty((rows, fv), dtype=Q.dtype, device=device)
    _C.csr_attention(_ctx(device), rows, n_cols, col.shape[0], rowptr.data_ptr(), col.data_ptr(), itag,
                     Q.data_ptr(), Q.shape[0], q_ld, K.data_ptr(), K.shape[0], k_ld, Q.shape[1],
                     V.data_ptr(), V.shape[0], v_ld, fv,
                     _VALUE_TAG[Q.dtype], out.data_ptr(), scale)
    return out


@_csr_attention.register_fake
def _(rowptr, col, n_cols, Q, K, V, scale):
    return V.new_empty((rowptr.shape[0] - 1, V.shape[1]))


_transposes: dict = {}
_TRANSPOSE_CACHE = 8  # graphs whose transposes are kept (oldest dropped first)


def _transpose_key(rowptr: Tensor, col: Tensor, n_cols: int):
    return (rowptr.device, rowptr.data_ptr(), col.data_ptr(), rowptr.shape[0], col.shape[0], n_cols, rowptr._version,
            col._version)


@torch.library.custom_op("sparseport::csr_transpose", mutates_args=())
def _csr_transpose(rowptr: Tensor, col: Tensor, n_cols: int) -> Tuple[Tensor, Tensor, Tensor]:
    """(rowptr, col, perm) of A's transpose; entry t of the transpose is entry perm[t] of A (int64)."""
    device = rowptr.device
    rowptr, col, _, itag = _csr_parts(rowptr, col, None, device, "csr_transpose")
    # A graph's transpose is built once: every backward needing A^T (spmm dB, sddmm dY, attention
    # dK/dV) then copies it instead of sorting A again, and a step captured in a CUDA graph after a
    # warm-up call needs no allocation outside PyTorch's. The key holds the arrays' addresses and
    # version counters, so an in-place change of rowptr or col builds a new one.
    key = _transpose_key(rowptr, col, n_cols)
    hit = _transposes.get(key)
    if hit is None:
        nnz = col.shape[0]
        t_rowptr = torch.empty((n_cols + 1,), dtype=rowptr.dtype, device=device)
        t_col = torch.empty((nnz,), dtype=col.dtype, device=device)
        perm = torch.empty((nnz,), dtype=col.dtype, device=device)
        _C.csr_transpose(_ctx(device), rowptr.shape[0] - 1, n_cols, nnz, rowptr.data_ptr(), col.data_ptr(), itag,
                         t_rowptr.data_ptr(), t_col.data_ptr(), perm.data_ptr())
        # The cache keeps A's arrays alive too, so their addresses cannot be reused by another A.
        # The dict: mean's backward weights on A^T per dtype (_mean_weights_t), dropped with it.
        hit = (rowptr, col, t_rowptr, t_col, perm.long(), {})
        if len(_transposes) >= _TRANSPOSE_CACHE:
            _transposes.pop(next(iter(_transposes)))
        _transposes[key] = hit
    # Copies: a custom op's outputs must not alias anything that outlives the call.
    return hit[2].clone(), hit[3].clone(), hit[4].clone()


@_csr_transpose.register_fake
def _(rowptr, col, n_cols):
    return rowptr.new_empty((n_cols + 1,)), col.new_empty(col.shape), col.new_empty(col.shape, dtype=torch.int64)


def _spmm_arg_run(rowptr: Tensor, col: Tensor, values: Optional[Tensor], n_cols: int, B: Tensor, reduce: str):
    device = _same_device("spmm", B)
    rowptr, col, values, itag = _csr_parts(rowptr, col, values, device, "spmm")
    B, b_ld = _mat(B, "B", "spmm")
    rows, f = rowptr.shape[0] - 1, B.shape[1]
    ctx = _ctx(device)

    def via_f32():
        return _arg16_via_f32(lambda b, v: _spmm_arg_run(rowptr, col, v, n_cols, b, reduce), B, values)

    if B.dtype in _HALF and (ctx.backend, "spmm_arg") in _ARG16_VIA_F32:
        return via_f32()
    out = torch.empty((rows, f), dtype=B.dtype, device=device)
    arg = torch.empty((rows, f), dtype=col.dtype, device=device)
    btag = _VALUE_TAG[B.dtype]
    try:
        _C.spmm_arg(ctx, rows, n_cols, col.shape[0], rowptr.data_ptr(), col.data_ptr(),
                    0 if values is None else values.data_ptr(), itag, btag if values is None else _VALUE_TAG[values.dtype],
                    B.data_ptr(), B.shape[0], b_ld, f, btag, out.data_ptr(), arg.data_ptr(), _REDUCE[reduce],
                    _allow_tf32())
    except _C.Unsupported:
        if B.dtype not in _HALF or (values is not None and values.dtype != B.dtype):
            raise
        _ARG16_VIA_F32.add((ctx.backend, "spmm_arg"))
        return via_f32()
    return out, arg


@torch.library.custom_op("sparseport::spmm_arg", mutates_args=())
def _spmm_arg(rowptr: Tensor, col: Tensor, values: Optional[Tensor], n_cols: int, B: Tensor,
              reduce: str) -> Tuple[Tensor, Tensor]:
    """spmm max/min and, per output element, the A entry that won it (A's index dtype; -1: empty row)."""
    return _spmm_arg_run(rowptr, col, values, n_cols, B, reduce)


@_spmm_arg.register_fake
def _(rowptr, col, values, n_cols, B, reduce):
    rows = rowptr.shape[0] - 1
    return B.new_empty((rows, B.shape[1])), col.new_empty((rows, B.shape[1]))


@torch.library.custom_op("sparseport::spmm_arg_backward", mutates_args=())
def _spmm_arg_backward(rowptr: Tensor, col: Tensor, values: Optional[Tensor], n_cols: int, B: Tensor, grad: Tensor,
                       arg: Tensor, reduce: str, need_b: bool, need_values: bool) -> Tuple[Tensor, Tensor]:
    """(dB, dvalues) of spmm max/min through arg; an output not needed comes back empty (0 rows)."""
    device = _same_device("spmm", B, grad, arg)
    rowptr, col, values, itag = _csr_parts(rowptr, col, values, device, "spmm")
    if B.dtype not in _VALUE_TAG or grad.dtype != B.dtype:
        raise ValueError(f"sparseport.spmm: B holds {B.dtype} and grad {grad.dtype} (need one dtype of {_VALUE_DTYPES})")
    B, grad, arg = B.contiguous(), grad.contiguous(), arg.contiguous()
    f, vtag = B.shape[1], _VALUE_TAG[B.dtype]
    d_b = torch.empty((n_cols, f) if need_b else (0, f), dtype=B.dtype, device=device)
    d_v = torch.empty((col.shape[0],) if need_values else (0,), dtype=B.dtype, device=device)
    _C.spmm_arg_backward(_ctx(device), rowptr.shape[0] - 1, n_cols, col.shape[0], rowptr.data_ptr(), col.data_ptr(),
                         0 if values is None else values.data_ptr(), itag, vtag, B.data_ptr(), max(f, 1), f,
                         grad.data_ptr(), arg.data_ptr(), d_b.data_ptr() if need_b else 0,
                         d_v.data_ptr() if need_values else 0, _REDUCE[reduce], _allow_tf32())
    return d_b, d_v


@_spmm_arg_backward.register_fake
def _(rowptr, col, values, n_cols, B, grad, arg, reduce, need_b, need_values):
    f = B.shape[1]
    return B.new_empty((n_cols, f) if need_b else (0, f)), B.new_empty((col.shape[0],) if need_values else (0,))


# ---- autograd ------------------------------------------------------------------------------------

_ops = torch.ops.sparseport


def _row_of_entries(rowptr: Tensor, nnz) -> Tensor:
    """The row of every stored entry (int64, nnz)."""
    rows = rowptr.shape[0] - 1
    deg = (rowptr[1:] - rowptr[:-1]).long()
    return torch.repeat_interleave(torch.arange(rows, device=rowptr.device), deg, output_size=nnz)


def _cached_transpose(rowptr: Tensor, col: Tensor, n_cols: int):
    """A's entry in _transposes in eager mode, or None: not built yet, or traced (compile; fake or
    functional tensors, which have no address to key by)."""
    if torch.compiler.is_compiling():
        return None
    try:
        return _transposes.get(_transpose_key(rowptr, col, n_cols))
    except RuntimeError:
        return None


def _transpose(rowptr: Tensor, col: Tensor, n_cols: int):
    # Eager: the cached arrays themselves (read only here), so their addresses stay the same from
    # call to call: the library's once-per-operand index check and its plans see a known operand,
    # and a backward captured in a CUDA graph does no check (no host wait) after the warm-up.
    # Traced: the op's copies.
    hit = _cached_transpose(rowptr, col, n_cols)
    if hit is None:
        t = _ops.csr_transpose(rowptr, col, n_cols)  # fills the cache on a miss
        hit = _cached_transpose(rowptr, col, n_cols)
        # None: traced, or an index array was copied on the way in (no stable address to key by).
        if hit is None:
            return t
    return hit[2], hit[3], hit[4]


def _folds_mean(reduce: str, grad: Tensor, rows: int, nnz: int, valued: bool) -> bool:
    """Whether mean's backward puts its 1/deg on A^T's values instead of dividing dC: by bytes, a
    division pass reads and writes dC (2 x rows x F elements) where the weights add nnz reads to the
    spmm (a valued A: 3 x nnz, the product of A's values and the weights made per call). 16 bits
    keep the division in float32, rounded once (1/deg is not exact in a 16-bit weight)."""
    if reduce != "mean" or grad.dtype in _HALF:
        return False
    return 2 * rows * grad.shape[1] > (3 if valued else 1) * nnz


def _mean_weights_t(rowptr: Tensor, col: Tensor, n_cols: int, t_col: Tensor, dtype) -> Tensor:
    """1/deg(i) for every entry of A^T, where i (A^T's column) is the row of A it came from: mean's
    backward weights, kept per dtype in the cached transpose's entry in eager mode (built once per
    graph, dropped with the transpose); made per call where traced."""
    hit = _cached_transpose(rowptr, col, n_cols)
    if hit is not None and dtype in hit[5]:
        return hit[5][dtype]
    inv = 1.0 / (rowptr[1:] - rowptr[:-1]).clamp_min(1).to(dtype)
    w = inv.index_select(0, t_col)
    if hit is not None:
        hit[5][dtype] = w
    return w


def _spmm_setup(ctx, inputs, output):
    rowptr, col, values, n_cols, B, reduce = inputs
    ctx.n_cols, ctx.reduce = n_cols, reduce
    ctx.save_for_backward(rowptr, col, values, B)


def _arg_grads(ctx, rowptr, col, values, B, grad, arg):
    """The gradients of spmm max/min through the forward's winners (C++: spmm_backward)."""
    need_values, need_b = ctx.needs_input_grad[2], ctx.needs_input_grad[4]
    d_b, d_v = _ops.spmm_arg_backward(rowptr, col, values, ctx.n_cols, B, grad, arg, ctx.reduce, need_b,
                                      need_values and values is not None)
    return (None, None, d_v if need_values and values is not None else None, None, d_b if need_b else None, None)


def _spmm_backward(ctx, grad):
    rowptr, col, values, B = ctx.saved_tensors
    need_values, need_b = ctx.needs_input_grad[2], ctx.needs_input_grad[4]
    rows, n_cols, reduce = rowptr.shape[0] - 1, ctx.n_cols, ctx.reduce
    d_values = d_b = None
    if reduce in ("max", "min"):
        # torch.ops.sparseport.spmm called directly: find the winners again (spmm() itself runs
        # spmm_arg, which keeps them from the forward).
        _, arg = _ops.spmm_arg(rowptr, col, values, n_cols, B, reduce)
        return _arg_grads(ctx, rowptr, col, values, B, grad, arg)
    nnz = col.shape[0]
    fold = need_b and _folds_mean(reduce, grad, rows, nnz, values is not None)
    g = grad
    if reduce == "mean" and (need_values or not fold):
        deg = (rowptr[1:] - rowptr[:-1]).clamp_min(1)
        # 16 bits: divided in float32 and rounded once (a degree above 256 is not a bfloat16)
        g = (grad.float() / deg[:, None]).to(grad.dtype) if grad.dtype in _HALF else grad / deg.to(grad.dtype)[:, None]
    if need_b:  # dB = A^T . dC (the transpose built once per call for now)
        t_rowptr, t_col, perm = _transpose(rowptr, col, n_cols)
        t_values = None if values is None else values[perm]
        if fold:  # dB = A^T diag(1/deg) dC: mean's weights on A^T's values, not a pass over dC
            w = _mean_weights_t(rowptr, col, n_cols, t_col, grad.dtype)
            t_values = w if t_values is None else t_values.mul_(w)
        d_b = _ops.spmm(t_rowptr, t_col, t_values, rows, grad if fold else g, "sum")
    if need_values:  # dA.values = sddmm(pattern, dC, B)
        d_values = _ops.sddmm(rowptr, col, None, n_cols, g, B)
    return None, None, d_values, None, d_b, None


def _spmm_arg_setup(ctx, inputs, output):
    rowptr, col, values, n_cols, B, reduce = inputs
    ctx.n_cols, ctx.reduce = n_cols, reduce
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(rowptr, col, values, B, output[1])


def _spmm_arg_backward_rule(ctx, grad, _grad_arg):
    rowptr, col, values, B, arg = ctx.saved_tensors
    return _arg_grads(ctx, rowptr, col, values, B, grad, arg)


_spmm_arg.register_autograd(_spmm_arg_backward_rule, setup_context=_spmm_arg_setup)
_spmm.register_autograd(_spmm_backward, setup_context=_spmm_setup)


def _sddmm_setup(ctx, inputs, output):
    rowptr, col, values, n_cols, X, Y = inputs
    ctx.n_cols = n_cols
    ctx.save_for_backward(rowptr, col, values, X, Y)


def _sddmm_backward(ctx, grad):
    rowptr, col, values, X, Y = ctx.saved_tensors
    n_cols, rows = ctx.n_cols, rowptr.shape[0] - 1
    d_values = d_x = d_y = None
    g = grad if values is None else grad * values  # G = A o dOut
    if ctx.needs_input_grad[4]:  # dX = G . Y
        d_x = _ops.spmm(rowptr, col, g, n_cols, Y, "sum")
    if ctx.needs_input_grad[5]:  # dY = G^T . X
        t_rowptr, t_col, perm = _transpose(rowptr, col, n_cols)
        d_y = _ops.spmm(t_rowptr, t_col, g[perm], rows, X, "sum")
    if ctx.needs_input_grad[2]:  # dA.values = dOut * sddmm(pattern, X, Y)
        d_values = grad * _ops.sddmm(rowptr, col, None, n_cols, X, Y)
    return None, None, d_values, None, d_x, d_y


_sddmm.register_autograd(_sddmm_backward, setup_context=_sddmm_setup)


def _index_backward_op(sorted_: bool):
    return _ops.segment_reduce_backward if sorted_ else _ops.scatter_reduce_backward


def _index_grad(sorted_: bool, grad: Tensor, index: Tensor, arg: Optional[Tensor], reduce: str) -> Tensor:
    """d src of segment_reduce / scatter_reduce. max/min: the C++ backward, through the forward's
    arg. sum and mean stay one torch gather, PyG's backward (mean divides the segments' gradients
    by their counts first): the C++ backward (a gather too, spmm on the SegmentCsr's transpose,
    mean with 1/count weights) was no faster. On 2 CPU cores, 1 thread, F = 64, 320k and 1M
    messages, against index_select: sum about equal sorted and 10-30% slower unsorted, mean 5-10%
    slower sorted and 25% slower unsorted, 2x slower at 40k messages (its per-call index check);
    and Tensor.gather over the expanded index is 10-20% faster than index_select there.
    On cuda the C++ backward serves every reduce: torch's gather of 16.7M rows of 64 floats took
    10.5 ms on an H200 (0.4 TB/s written, a tenth of the bandwidth; PyG's scatter backward is the
    same gather), where the forward segment sum reading those bytes took 1.1 ms."""
    if reduce in ("sum", "mean") and not grad.is_cuda:
        if reduce == "mean":
            # counted in float32 for 16-bit gradients (a bfloat16 sum stops at 256), divided there
            # and rounded once
            cdt = torch.float32 if grad.dtype in _HALF else grad.dtype
            count = torch.zeros(grad.shape[0], dtype=cdt, device=grad.device)
            count = count.index_add_(0, index, torch.ones(index.shape[0], dtype=cdt, device=grad.device)).clamp_min(1)
            grad = (grad.to(cdt) / count[:, None]).to(grad.dtype)
        return grad.gather(0, index.long()[:, None].expand(-1, grad.shape[1]))
    return _index_backward_op(sorted_)(grad, index, arg, reduce)


def _index_setup(ctx, inputs, output):
    src, index, num_segments, reduce = inputs
    ctx.reduce, ctx.num_segments = reduce, num_segments
    ctx.save_for_backward(index, src if reduce in ("max", "min") else None)


def _index_backward_rule(sorted_: bool):
    def backward(ctx, grad):
        """The gradient of segment_reduce / scatter_reduce through the C++ backward."""
        index, src = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        arg = None
        if ctx.reduce in ("max", "min"):
            # torch.ops.sparseport.segment_reduce called directly: find the winners again
            # (segment_reduce() itself runs segment_reduce_arg, which keeps them from the forward).
            arg_op = _ops.segment_reduce_arg if sorted_ else _ops.scatter_reduce_arg
            arg = arg_op(src.detach(), index, ctx.num_segments, ctx.reduce)[1]
        return _index_grad(sorted_, grad, index, arg, ctx.reduce), None, None, None

    return backward


def _index_arg_setup(ctx, inputs, output):
    src, index, num_segments, reduce = inputs
    ctx.reduce = reduce
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(index, output[1])


def _index_arg_backward_rule(sorted_: bool):
    def backward(ctx, grad, _grad_arg):
        index, arg = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        return _index_grad(sorted_, grad, index, arg, ctx.reduce), None, None, None

    return backward


def _index_backward_setup(ctx, inputs, output):
    grad, index, arg, reduce = inputs
    ctx.reduce, ctx.num_segments = reduce, grad.shape[0]
    ctx.save_for_backward(index, arg)


def _index_double_backward_rule(sorted_: bool):
    def backward(ctx, gg):
        """The backward is linear in dout: its adjoint reduces the messages' gradients back onto the
        segments (sum and mean: the same reduce; max/min: the sum of the winners' only)."""
        index, arg = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        forward = _ops.segment_reduce if sorted_ else _ops.scatter_reduce
        n, reduce = ctx.num_segments, ctx.reduce
        if reduce in ("max", "min"):
            # won[e, f] = 1 where message e won its segment's element f: the backward of ones.
            ones = gg.new_ones((n, gg.shape[1]))
            won = _index_backward_op(sorted_)(ones, index, arg, reduce)
            return forward(gg * won, index, n, "sum"), None, None, None
        return forward(gg, index, n, reduce), None, None, None

    return backward


_segment_reduce.register_autograd(_index_backward_rule(True), setup_context=_index_setup)
_scatter_reduce.register_autograd(_index_backward_rule(False), setup_context=_index_setup)
_segment_reduce_arg.register_autograd(_index_arg_backward_rule(True), setup_context=_index_arg_setup)
_scatter_reduce_arg.register_autograd(_index_arg_backward_rule(False), setup_context=_index_arg_setup)
_segment_reduce_backward.register_autograd(_index_double_backward_rule(True), setup_context=_index_backward_setup)
_scatter_reduce_backward.register_autograd(_index_double_backward_rule(False), setup_context=_index_backward_setup)


def _attention_setup(ctx, inputs, output):
    rowptr, col, n_cols, Q, K, V, scale = inputs
    ctx.n_cols, ctx.scale = n_cols, scale
    ctx.save_for_backward(rowptr, col, Q, K, V, output)


def _attention_backward(ctx, grad):
    """FlashAttention's backward with per-edge scalars only (never E x F): P is recomputed from
    sddmm(Q, K) and a per-row softmax over the E scores."""
    rowptr, col, Q, K, V, O = ctx.saved_tensors
    n_cols, scale = ctx.n_cols, ctx.scale
    rows, E = rowptr.shape[0] - 1, col.shape[0]
    need_q, need_k, need_v = ctx.needs_input_grad[3:6]
    row = _row_of_entries(rowptr, E)
    s = _ops.sddmm(rowptr, col, None, n_cols, Q, K) * scale
    s_max = _ops.segment_reduce(s[:, None], row, rows, "max")[:, 0]
    p = torch.exp(s - s_max.index_select(0, row))
    p = p / _ops.segment_reduce(p[:, None], row, rows, "sum")[:, 0].index_select(0, row)
    d_q = d_k = d_v = None
    if need_k or need_v:
        t_rowptr, t_col, perm = _transpose(rowptr, col, n_cols)
    if need_v:  # dV = P^T . dO
        d_v = _ops.spmm(t_rowptr, t_col, p[perm], rows, grad, "sum")
    if need_q or need_k:
        d_p = _ops.sddmm(rowptr, col, None, n_cols, grad, V)  # dP[e] = dO[row] . V[col]
        d_s = p * (d_p - (grad * O).sum(1).index_select(0, row))
        if need_q:  # dQ = scale * dS . K
            d_q = _ops.spmm(rowptr, col, d_s, n_cols, K, "sum") * scale
        if need_k:  # dK = scale * dS^T . Q
            d_k = _ops.spmm(t_rowptr, t_col, d_s[perm], rows, Q, "sum") * scale
    return None, None, None, d_q, d_k, d_v, None


_csr_attention.register_autograd(_attention_backward, setup_context=_attention_setup)


# ---- autocast ------------------------------------------------------------------------------------
# Under torch.autocast(device_type, dtype) every op with floating operands runs in the autocast
# dtype: its floating tensors on that device (float64 excepted, as torch's own autocast leaves it)
# are cast to torch.get_autocast_dtype(device_type), read at each call, then the op runs with the
# autocast key excluded. torch.library.register_autocast does the same with a dtype fixed at
# registration; this reads the current one, so float16 and bfloat16 regions both work. The kernel
# sits on the AutocastCPU / AutocastCUDA dispatch keys, ahead of autograd: the casts are recorded
# (gradients flow back to float32 parameters through them) and the op's autograd sees one dtype.
# Traced by torch.compile as well (dynamo and AOTAutograd dispatch through it: the casts land in
# the graph). csr_transpose has no floating operand and is left out.

_AUTOCAST_OPS = ("spmm", "spmm_arg", "spmm_arg_backward", "sddmm", "segment_reduce", "scatter_reduce",
                 "segment_reduce_arg", "scatter_reduce_arg", "segment_reduce_backward", "scatter_reduce_backward",
                 "csr_attention")
_AUTOCAST_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}


if hasattr(torch, "get_autocast_dtype"):  # the device-generic API (torch 2.4 on)
    _autocast_dtype = torch.get_autocast_dtype
else:
    def _autocast_dtype(device_type: str) -> torch.dtype:
        return torch.get_autocast_gpu_dtype() if device_type == "cuda" else torch.get_autocast_cpu_dtype()


def _autocast_kernel(op, device_type: str, key: str):
    excluded = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key))

    def cast(x, dtype):
        if (isinstance(x, Tensor) and x.is_floating_point() and x.dtype != dtype and x.dtype != torch.float64
                and x.device.type == device_type):
            return x.to(dtype)
        return x

    def kernel(_keyset, *args, **kwargs):
        dtype = _autocast_dtype(device_type)
        args = tuple(cast(a, dtype) for a in args)
        kwargs = {k: cast(v, dtype) for k, v in kwargs.items()}
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            return op(*args, **kwargs)

    return kernel


_autocast_lib = torch.library.Library("sparseport", "IMPL")
for _name in _AUTOCAST_OPS:
    for _device_type, _key in _AUTOCAST_KEYS.items():
        _autocast_lib.impl(_name, _autocast_kernel(getattr(_ops, _name).default, _device_type, _key), _key,
                           with_keyset=True)
del _name, _device_type, _key


# ---- the public functions ------------------------------------------------------------------------


def spmm(A, B: Tensor, reduce: str = "sum") -> Tensor:
    """C[i, :] = reduce_j(A[i, j] * B[j, :]) over the entries of row i of A; reduce in sum, mean
    (sum / entries in the row), max, min. A: m x k (CSR), B: k x F, C: m x F; empty rows give 0.
    Differentiable in B and A.values. float32 may run as TF32 (on cuda's tensor cores) only where
    ``torch.backends.cuda.matmul.allow_tf32`` is True at the call, as for torch's matmuls."""
    A = _as_csr(A, "spmm")
    _check_reduce(reduce, "spmm")
    if reduce in ("max", "min"):
        # The forward records each output element's winning entry; the backward follows it.
        return _ops.spmm_arg(A.rowptr, A.col, A.values, A.shape[1], B, reduce)[0]
    return _ops.spmm(A.rowptr, A.col, A.values, A.shape[1], B, reduce)


def sddmm(A, X: Tensor, Y: Tensor) -> CSR:
    """out[e] = A.values[e] * dot(X[row(e)], Y[col(e)]) for every entry e of A (m x k); X: m x F,
    Y: k x F. Returns a CSR with A's pattern and these values. Differentiable in X, Y, A.values."""
    A = _as_csr(A, "sddmm")
    return A.with_values(_ops.sddmm(A.rowptr, A.col, A.values, A.shape[1], X, Y))


def _src_2d(src: Tensor, op: str) -> Tuple[Tensor, bool]:
    if src.dim() == 1:
        return src[:, None], True
    if src.dim() != 2:
        raise ValueError(f"sparseport.{op}: src must be 1-D or 2-D, got shape {tuple(src.shape)}")
    return src, False


def _needs_grad(src: Tensor) -> bool:
    """Whether autograd will record this call (else max/min skip recording their winners)."""
    return src.requires_grad and torch.is_grad_enabled()


def segment_reduce(src: Tensor, index: Tensor, num_segments: int, reduce: str = "sum") -> Tensor:
    """out[s] = reduce over e with index[e] == s of src[e]; index sorted ascending (checked).
    src: E or E x F; out: num_segments (x F). Empty segments give 0; mean divides by max(count, 1)."""
    _check_reduce(reduce, "segment_reduce")
    src2, flat = _src_2d(src, "segment_reduce")
    if reduce in ("max", "min") and _needs_grad(src2):
        # The forward records the winners (when a backward may follow) and the backward follows them.
        out = _ops.segment_reduce_arg(src2, index, num_segments, reduce)[0]
    else:
        out = _ops.segment_reduce(src2, index, num_segments, reduce)
    return out[:, 0] if flat else out


def scatter_reduce(src: Tensor, index: Tensor, num_segments: int, reduce: str = "sum") -> Tensor:
    """segment_reduce with index in any order (torch_scatter's scatter(src, index, dim=0,
    dim_size=num_segments, reduce=...))."""
    _check_reduce(reduce, "scatter_reduce")
    src2, flat = _src_2d(src, "scatter_reduce")
    if reduce in ("max", "min") and _needs_grad(src2):
        out = _ops.scatter_reduce_arg(src2, index, num_segments, reduce)[0]
    else:
        out = _ops.scatter_reduce(src2, index, num_segments, reduce)
    return out[:, 0] if flat else out


def csr_attention(A, Q: Tensor, K: Tensor, V: Tensor, scale: Optional[float] = None) -> Tensor:
    """out[i] = sum_j softmax_j(scale * Q[i] . K[j]) * V[j] over the columns j of row i of A
    (A's values are ignored). A: m x n, Q: m x F, K: n x F, V: n x Fv; empty rows give 0.
    scale defaults to 1 / sqrt(F). Differentiable in Q, K, V."""
    A = _as_csr(A, "csr_attention")
    if scale is None:
        f = Q.shape[-1]
        scale = 1.0 / math.sqrt(f) if f > 0 else 1.0
    elif scale == 0:
        raise ValueError("sparseport.csr_attention: scale must not be 0 (None gives 1/sqrt(F))")
    return _ops.csr_attention(A.rowptr, A.col, A.shape[1], Q, K, V, float(scale))


def csr_transpose(A) -> CSR:
    """A^T as a CSR (A's values carried, differentiably); within a row, entries in A's row order."""
    A = _as_csr(A, "csr_transpose")
    t_rowptr, t_col, perm = _ops.csr_transpose(A.rowptr, A.col, A.shape[1])
    return CSR(t_rowptr, t_col, None if A.values is None else A.values[perm], (A.shape[1], A.shape[0]))
