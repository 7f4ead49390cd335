# SPDX-License-Identifier: Apache-2.0
"""Full-batch GraphSAGE (mean) and GAT on sparseport.torch ops, and their PyG twins.

Both models take ``(x, A)`` with ``A = sparseport.torch.CSR(rowptr, col, None, (n, n))``: row i
lists the sources j whose messages node i aggregates (rows are destinations, as PyG's
``edge_index[1]``). Nothing here materialises an E x F per-edge tensor: SAGE aggregates with one
``spmm(..., "mean")`` per layer, and GAT keeps E x heads scalars (logits and attention
coefficients) and aggregates each head with one ``spmm`` whose CSR values are the coefficients.

The PyG twins (``torch_geometric.nn.SAGEConv`` / ``GATConv`` with default arguments) are built by
``pyg_twin(model)``, which copies the weights, so both start identical.
"""
from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import sparseport.torch as spt


def csr_of(graph) -> spt.CSR:
    """The pattern CSR (values None) of a twins.Graph."""
    return spt.CSR(graph.rowptr, graph.col, None, (graph.n, graph.n))


def row_index(A: spt.CSR) -> Tensor:
    """The (sorted) row of each entry of A, in A's index dtype."""
    deg = (A.rowptr[1:] - A.rowptr[:-1]).long()
    return torch.repeat_interleave(torch.arange(A.shape[0], dtype=A.col.dtype, device=A.col.device), deg,
                                   output_size=A.col.shape[0])


# ---- GraphSAGE (mean) ----------------------------------------------------------------------------


class SAGEConv(nn.Module):
    """out_i = lin_l(mean_{j in N(i)} x_j) + lin_r(x_i): PyG's SAGEConv(aggr="mean") with its
    default arguments (lin_l has the bias, lin_r none; an empty row's mean is 0).

    Mean aggregation is linear, so lin_l(mean x) = mean(x W_l^T) + b_l: the layer aggregates on
    the narrower side (before the projection when in <= out, after it otherwise). Same math;
    float32 rounding differs at the 1e-7 relative level."""

    def __init__(self, in_channels: int, out_channels: int, fused: bool = False):
        super().__init__()
        self.in_channels, self.out_channels, self.fused = in_channels, out_channels, fused
        self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x: Tensor, A: spt.CSR) -> Tensor:
        if self.fused and not torch.is_autocast_enabled(x.device.type):
            return self._forward_fused(x, A)
        if self.in_channels <= self.out_channels:
            h = self.lin_l(spt.spmm(A, x, "mean"))
        else:
            h = spt.spmm(A, F.linear(x, self.lin_l.weight), "mean") + self.lin_l.bias
        return h + self.lin_r(x)

    def _forward_fused(self, x: Tensor, A: spt.CSR) -> Tensor:
        """The same sums with fewer passes over the N x out result (an experiment, `--sage-fused`,
        session 42; issue 33's steady epoch). In <= out: lin_r's GEMM adds into lin_l's result in
        place (beta = 1) instead of a separate add (nothing saves lin_l's output, so autograd allows
        it). In > out: both projections are one GEMM over [W_l; W_r], so x is read once and the
        backward's dx is one GEMM instead of two and an add; spmm reads its half through the row
        stride. float32 only: under autocast the in-place GEMM would mix dtypes (forward() then
        takes the other path)."""
        if self.in_channels <= self.out_channels:
            return self.lin_l(spt.spmm(A, x, "mean")).addmm_(x, self.lin_r.weight.t())
        y = F.linear(x, torch.cat([self.lin_l.weight, self.lin_r.weight]))
        y_l, y_r = y.split(self.out_channels, dim=1)
        return spt.spmm(A, y_l, "mean") + y_r + self.lin_l.bias


class SAGE(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int, num_layers: int = 3, fused: bool = False):
        super().__init__()
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(SAGEConv(a, b, fused) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: Tensor, A: spt.CSR) -> Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, A)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x


# ---- GAT -----------------------------------------------------------------------------------------


class GATConv(nn.Module):
    """PyG's GATConv math (concat=True, negative_slope=0.2, dropout=0, bias=True) on a graph that
    already holds its self loops (build it with twins.add_self_loops; the PyG twin then runs with
    add_self_loops=False on the same edges):

        h = x W^T (n x H*C);  a_src = <h_j, att_src>, a_dst = <h_i, att_dst> per head (n x H)
        e_ij = LeakyReLU(a_src[j] + a_dst[i], 0.2)                      (E x H scalars)
        p_ij = exp(e_ij - max_j e_ij), s_i = sum_j p_ij                  (segment max and sum)
        out_i = concat_h (sum_j p_ij,h h_j,h) / s_i,h + bias            (one spmm per head)

    which is PyG's softmax-then-sum, alpha_ij = p_ij / s_i, with the division moved after the sum.
    """

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, negative_slope: float = 0.2):
        super().__init__()
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.negative_slope = negative_slope
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.empty(heads * out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:  # PyG's: glorot for lin and att, zeros for bias
        nn.init.xavier_uniform_(self.lin.weight)
        for att in (self.att_src, self.att_dst):
            bound = (6.0 / (att.shape[-2] + att.shape[-1])) ** 0.5
            nn.init.uniform_(att, -bound, bound)
        nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, A: spt.CSR, row: Tensor) -> Tensor:
        H, C = self.heads, self.out_channels
        n = A.shape[0]
        h = self.lin(x)  # n x H*C
        h3 = h.view(-1, H, C)
        a_src = (h3 * self.att_src).sum(-1)  # n x H
        a_dst = (h3 * self.att_dst).sum(-1)
        e = a_src.index_select(0, A.col) + a_dst.index_select(0, row)  # E x H
        e = F.leaky_relu(e, self.negative_slope)
        # softmax over each row's entries; the max only shifts (PyG detaches it too)
        e_max = spt.segment_reduce(e.detach(), row, n, "max")
        p = torch.exp(e - e_max.index_select(0, row))  # E x H, unnormalised
        s = spt.segment_reduce(p, row, n, "sum") + 1e-16  # n x H (PyG's softmax adds 1e-16 too)
        # sum_j (p_ij / s_i) h_j = (sum_j p_ij h_j) / s_i: normalise the n x C outputs, not the
        # E x H coefficients (saves a per-edge gather of s and its scatter in backward)
        p_t = p.t().contiguous()  # H x E: one contiguous value vector per head
        outs = [spt.spmm(A.with_values(p_t[k]), h[:, k * C:(k + 1) * C], "sum") for k in range(H)]
        out = (outs[0] if H == 1 else torch.cat(outs, dim=1)).view(-1, H, C) / s.unsqueeze(-1)
        return out.view(-1, H * C) + self.bias


class GAT(nn.Module):
    """num_layers GATConv layers: hidden ones with ``heads`` heads of ``hidden`` channels each,
    concatenated, ELU between layers; the last one with one head of ``out_channels``."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, num_layers: int = 3, heads: int = 4):
        super().__init__()
        convs: List[GATConv] = []
        d = in_channels
        for _ in range(num_layers - 1):
            convs.append(GATConv(d, hidden, heads))
            d = hidden * heads
        convs.append(GATConv(d, out_channels, 1))
        self.convs = nn.ModuleList(convs)

    def forward(self, x: Tensor, A: spt.CSR, row: Optional[Tensor] = None) -> Tensor:
        if row is None:
            row = row_index(A)
        for i, conv in enumerate(self.convs):
            x = conv(x, A, row)
            if i < len(self.convs) - 1:
                x = F.elu(x)
        return x


# ---- PyG twins -----------------------------------------------------------------------------------


class PyGSAGE(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int, num_layers: int = 3):
        super().__init__()
        from torch_geometric.nn import SAGEConv as PyGSAGEConv

        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(PyGSAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: Tensor, edge_index) -> Tensor:
        """edge_index: 2 x E int64 ([source; destination]) or the adjacency as a
        torch.sparse_csr_tensor with rows as destinations (PyG's adj_t)."""
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x


class PyGGAT(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int, num_layers: int = 3, heads: int = 4,
                 add_self_loops: bool = False):
        super().__init__()
        from torch_geometric.nn import GATConv as PyGGATConv

        convs = []
        d = in_channels
        for _ in range(num_layers - 1):
            convs.append(PyGGATConv(d, hidden, heads=heads, add_self_loops=add_self_loops))
            d = hidden * heads
        convs.append(PyGGATConv(d, out_channels, heads=1, add_self_loops=add_self_loops))
        self.convs = nn.ModuleList(convs)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.elu(x)
        return x


@torch.no_grad()
def copy_weights(ours: nn.Module, pyg: nn.Module) -> None:
    """Copies the weights of a SAGE or GAT into its PyG twin (layer by layer)."""
    for a, b in zip(ours.convs, pyg.convs, strict=True):
        if isinstance(a, SAGEConv):
            b.lin_l.weight.copy_(a.lin_l.weight)
            b.lin_l.bias.copy_(a.lin_l.bias)
            b.lin_r.weight.copy_(a.lin_r.weight)
            if getattr(b.lin_r, "bias", None) is not None:
                raise ValueError("PyG SAGEConv.lin_r has a bias: not the default SAGEConv")
        elif isinstance(a, GATConv):
            lin = b.lin if getattr(b, "lin", None) is not None else b.lin_src  # PyG < 2.5 names it lin_src
            lin.weight.copy_(a.lin.weight)
            b.att_src.copy_(a.att_src)
            b.att_dst.copy_(a.att_dst)
            b.bias.copy_(a.bias)
        else:
            raise TypeError(f"no PyG twin for {type(a).__name__}")


def pyg_twin(ours: nn.Module) -> nn.Module:
    """The PyG model with the same architecture and the same weights as ``ours``."""
    if isinstance(ours, SAGE):
        c = ours.convs
        twin = PyGSAGE(c[0].in_channels, c[0].out_channels if len(c) > 1 else c[-1].out_channels,
                       c[-1].out_channels, len(c))
    elif isinstance(ours, GAT):
        c = ours.convs
        hidden = c[0].out_channels if len(c) > 1 else c[-1].out_channels
        twin = PyGGAT(c[0].in_channels, hidden, c[-1].out_channels, len(c), c[0].heads)
    else:
        raise TypeError(f"no PyG twin for {type(ours).__name__}")
    p = next(ours.parameters())
    twin = twin.to(device=p.device, dtype=p.dtype)
    copy_weights(ours, twin)
    return twin


def build(kind: str, in_channels: int, num_classes: int, *, layers: int = 3, hidden: int = 256, heads: int = 4,
          head_dim: int = 64, seed: int = 0, sage_fused: bool = False) -> nn.Module:
    """SAGE(in, hidden, classes) or GAT(in, head_dim x heads, classes), initialised from ``seed``;
    sage_fused: SAGEConv's fused projections (SAGEConv._forward_fused; same parameters)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if kind == "sage":
            return SAGE(in_channels, hidden, num_classes, layers, sage_fused)
        if kind == "gat":
            return GAT(in_channels, head_dim, num_classes, layers, heads)
    raise ValueError(f"unknown model '{kind}' (sage or gat)")
