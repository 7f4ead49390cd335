# SPDX-License-Identifier: Apache-2.0
"""Random test graphs and pure-torch reference implementations of the ops (the oracle)."""
import zlib

import torch

import sparseport.torch as spt


def seed_of(*args) -> int:
    """A seed fixed by the test's parameters (str hashes change from run to run)."""
    return zlib.crc32(repr(args).encode())


def random_csr(m, k, *, seed, index_dtype=torch.int64, dtype=torch.float64, values=True, hub=True, empty_rows=True,
               max_degree=4, device="cpu"):
    """An m x k CSR with unsorted columns, a repeated column, empty rows and (hub=True) one hub row
    of 3k entries (so with repeats); values uniform in [-1, 1) or None."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, max_degree + 1, (m,), generator=g)
    if empty_rows and m >= 3:
        deg[1] = 0
        deg[m - 1] = 0
    if hub and m >= 2:
        deg[m // 2] = 3 * k
    if m >= 1 and k >= 1 and deg[0] < 2:
        deg[0] = 2
    if k == 0:
        deg.zero_()
    rowptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    nnz = int(rowptr[-1])
    col = torch.randint(0, max(k, 1), (nnz,), generator=g)
    if nnz >= 2 and deg[0] >= 2:
        col[1] = col[0]  # a repeated column in row 0
    vals = None
    if values:
        vals = (torch.rand(nnz, generator=g, dtype=torch.float64) * 2 - 1).to(dtype).to(device)
    return spt.CSR(rowptr.to(index_dtype).to(device), col.to(index_dtype).to(device), vals, (m, k))


def rand(*shape, seed, dtype=torch.float64, device="cpu", requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    t = (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1).to(dtype).to(device)
    return t.requires_grad_(requires_grad)


def rows_of(A):
    deg = (A.rowptr[1:] - A.rowptr[:-1]).long()
    return torch.repeat_interleave(torch.arange(A.shape[0], device=A.rowptr.device), deg)


def ref_reduce(msg, seg, num_segments, reduce):
    """torch_scatter semantics from torch's own ops: empty segments 0, mean over max(count, 1)."""
    out = msg.new_zeros((num_segments,) + tuple(msg.shape[1:]))
    seg = seg.long()
    if reduce == "sum":
        return out.index_add(0, seg, msg)
    if reduce == "mean":
        count = msg.new_zeros(num_segments).index_add(0, seg, msg.new_ones(seg.shape[0])).clamp_min(1)
        return out.index_add(0, seg, msg) / count.view((-1,) + (1,) * (msg.dim() - 1))
    idx = seg.view((-1,) + (1,) * (msg.dim() - 1)).expand_as(msg)
    return out.scatter_reduce(0, idx, msg, "amax" if reduce == "max" else "amin", include_self=False)


def ref_reduce_lowest(msg, seg, num_segments, reduce):
    """ref_reduce with torch_scatter's gradient for max/min, written out: each output element takes
    the message of the lowest e among those equal to the result (the first NaN where there is one;
    torch's own scatter_reduce shares the gradient among ties instead), so only that message gets
    its gradient. sum and mean: ref_reduce. msg: E x F."""
    if reduce in ("sum", "mean"):
        return ref_reduce(msg, seg, num_segments, reduce)
    seg = seg.long()
    E, F = msg.shape
    m = msg.detach()
    best = ref_reduce(m, seg, num_segments, reduce)
    has_nan = m.new_zeros((num_segments, F)).index_add(0, seg, m.isnan().to(m.dtype)) > 0
    best = best.masked_fill(has_nan, float("nan"))
    at = best.index_select(0, seg)
    equal = (m == at) | (m.isnan() & at.isnan())
    ids = torch.arange(E, device=msg.device)[:, None].expand(E, F)
    win = torch.full((num_segments, F), E, dtype=torch.long, device=msg.device)
    win = win.scatter_reduce(0, seg[:, None].expand(E, F), ids.masked_fill(~equal, E), "amin", include_self=True)
    if E == 0:
        return msg.new_zeros((num_segments, F))
    return torch.where(win < E, msg.gather(0, win.clamp_max(E - 1)), msg.new_zeros(()))


def ref_spmm(A, B, reduce):
    row, col = rows_of(A), A.col.long()
    if reduce == "sum":  # torch.sparse.mm (cuSPARSE / MKL path) as the reference for sum
        vals = A.values if A.values is not None else B.new_ones(col.shape[0])
        S = torch.sparse_coo_tensor(torch.stack([row, col]), vals, A.shape, check_invariants=True)
        return torch.sparse.mm(S, B)
    msg = B.index_select(0, col)
    if A.values is not None:
        msg = msg * A.values[:, None]
    return ref_reduce(msg, row, A.shape[0], reduce)


def ref_sddmm(A, X, Y):
    row, col = rows_of(A), A.col.long()
    out = (X.index_select(0, row) * Y.index_select(0, col)).sum(1)
    return out if A.values is None else out * A.values


def ref_attention(A, Q, K, V, scale=None):
    row, col = rows_of(A), A.col.long()
    if scale is None:
        scale = Q.shape[1] ** -0.5
    s = (Q.index_select(0, row) * K.index_select(0, col)).sum(1) * scale
    s_max = ref_reduce(s, row, A.shape[0], "max")
    p = torch.exp(s - s_max.index_select(0, row))
    p = p / ref_reduce(p, row, A.shape[0], "sum").index_select(0, row)
    return ref_reduce(p[:, None] * V.index_select(0, col), row, A.shape[0], "sum")


def tolerances(dtype):
    return dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)
