# SPDX-License-Identifier: Apache-2.0
"""Generated twins of real GNN graphs: deterministic from a seed, vectorised (torch), sized like
ogbn-products, Reddit and the issue's 200k-node graph, plus a tiny one for tests.

The model is a hierarchical, degree-corrected stochastic block model (a Chung-Lu graph with
communities), laid out in id order the way crawled or community-ordered graphs are:

- ids 0..n-1 are cut into contiguous *communities* (lognormal sizes), and runs of consecutive
  communities form *clusters*; each cluster carries one class label (clusters > classes, so a
  class is spread over several clusters at different places in id order);
- every node gets an expected degree theta from a power law with exponent ``gamma`` (the pdf
  falls as d^-gamma), clipped at ``d_max`` and scaled so that the mean matches the target;
- each undirected edge {u, v}: u is drawn with probability proportional to theta (as stochastic
  rounded stub counts, so u comes out sorted), and v proportional to theta inside u's community
  (probability ``mix[0]``), inside u's cluster (``mix[1]``) or anywhere (``mix[2]``);
- self loops are dropped, repeated pairs merged, and more edges drawn until the graph has exactly
  ``nnz / 2`` undirected edges (the excess of the last round dropped at random); symmetrised, the
  CSR has exactly ``nnz`` entries, rows sorted and columns sorted within each row.

So most entries of a row sit near the diagonal (in the row's community block), a fraction spreads
over the cluster, and the rest is uniform, with a heavy degree tail. Features are a noisy class
embedding plus a community embedding; labels are the cluster's class, so neighbourhood aggregation
helps (high label homophily) and a GNN can learn.

    import twins
    g = twins.generate("200k", seed=0)       # g.rowptr, g.col (int32 CSR), g.edge_index (int64)
    print(g.summary())

``edge_index`` is PyG's layout: ``edge_index[0]`` the source j (the CSR column) and
``edge_index[1]`` the destination i (the CSR row), in CSR order, so PyG aggregates at
``edge_index[1]`` exactly the entries of each CSR row.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor


@dataclass(frozen=True)
class Size:
    n: int  # nodes
    nnz: int  # stored entries of the symmetric adjacency (2 x undirected edges), no self loops
    in_dim: int  # feature width
    classes: int
    communities: int  # contiguous id blocks
    clusters: int  # runs of consecutive communities; one class each
    gamma: float  # power-law exponent of the expected degrees
    d_max: int  # clip of the expected degree
    mix: Tuple[float, float, float]  # P(v in u's community), P(in u's cluster), P(anywhere)
    size_sigma: float = 1.0  # lognormal sigma of the community sizes
    signal: float = 0.5  # class-embedding scale in the features (noise has unit variance)


# Real counts: ogbn-products 2,449,029 nodes and 61,859,140 undirected edges (123,718,280 entries;
# OGB's node property page), 100 features, 47 classes; Reddit (PyG's Reddit) 232,965 nodes,
# 114,615,892 entries, 602 features, 41 classes. "200k" is issue 15's GAT graph (16.7M entries).
# d_max is set to the order of the largest degrees reported for the real graphs (tens of thousands;
# not checked against the data here); the realised maximum is lower, because a hub's draws inside its
# community repeat and are merged (see Graph.stats()).
SIZES: Dict[str, Size] = {
    "tiny": Size(n=2_000, nnz=40_000, in_dim=32, classes=8, communities=40, clusters=16,
                 gamma=2.3, d_max=300, mix=(0.5, 0.3, 0.2)),
    "200k": Size(n=200_000, nnz=16_700_000, in_dim=128, classes=32, communities=400, clusters=96,
                 gamma=2.3, d_max=5_000, mix=(0.5, 0.3, 0.2)),
    "reddit": Size(n=232_965, nnz=114_615_892, in_dim=602, classes=41, communities=160, clusters=82,
                   gamma=2.5, d_max=21_657, mix=(0.35, 0.4, 0.25)),
    "products": Size(n=2_449_029, nnz=123_718_280, in_dim=100, classes=47, communities=2_400,
                     clusters=188, gamma=2.3, d_max=17_481, mix=(0.5, 0.3, 0.2)),
}


@dataclass
class Graph:
    name: str
    n: int
    rowptr: Tensor  # n + 1, index dtype (int32 unless nnz needs int64)
    col: Tensor  # nnz, same dtype; columns sorted within each row
    x: Tensor  # n x in_dim, float32
    y: Tensor  # n, int64 class labels
    num_classes: int
    community: Tensor  # n, int32: community of each node (contiguous id blocks)
    edge_index: Optional[Tensor] = None  # 2 x nnz int64: [col; row] (source; destination)
    self_loops: bool = False
    seed: int = 0
    params: Optional[Size] = None
    seconds: Dict[str, float] = field(default_factory=dict)

    @property
    def nnz(self) -> int:
        return self.col.shape[0]

    def row(self) -> Tensor:
        """The row (destination) of every entry, in the CSR's index dtype."""
        deg = (self.rowptr[1:] - self.rowptr[:-1]).long()
        return torch.repeat_interleave(torch.arange(self.n, dtype=self.col.dtype, device=self.col.device), deg,
                                       output_size=self.nnz)

    def degrees(self) -> Tensor:
        return (self.rowptr[1:] - self.rowptr[:-1]).long()

    def make_edge_index(self) -> Tensor:
        """PyG's edge_index (2 x nnz, int64): row 0 the source (CSR column), row 1 the destination."""
        return torch.stack([self.col.long(), self.row().long()])

    def to(self, device) -> "Graph":
        g = Graph(**{k: getattr(self, k) for k in self.__dataclass_fields__})
        for k in ("rowptr", "col", "x", "y", "community", "edge_index"):
            t = getattr(g, k)
            if t is not None:
                setattr(g, k, t.to(device))
        return g

    def stats(self) -> Dict[str, float]:
        """Degree tail and locality numbers of the generated graph (for the README and reports)."""
        deg = self.degrees().double()
        q = torch.quantile(deg[torch.randperm(self.n, generator=torch.Generator().manual_seed(0))[:1_000_000]],
                           torch.tensor([0.5, 0.99], dtype=torch.float64)) if self.n else torch.zeros(2)
        # Hill estimator of the tail exponent (pdf ~ d^-gamma) over the top 1% of degrees.
        k = max(10, self.n // 100)
        top = torch.sort(deg, descending=True).values[: k + 1]
        hill = 1.0 + k / float(torch.log(top[:k] / top[k]).sum()) if self.n > k and top[k] > 0 else float("nan")
        # Locality: entries inside the row's community, and entries within 1% of n of the diagonal.
        row = self.row().long()
        col = self.col.long()
        same = float((self.community[row] == self.community[col]).double().mean()) if self.nnz else 0.0
        near = float(((row - col).abs() <= max(1, self.n // 100)).double().mean()) if self.nnz else 0.0
        homophily = float((self.y[row] == self.y[col]).double().mean()) if self.nnz else 0.0
        return dict(n=self.n, nnz=self.nnz, mean_degree=float(deg.mean()), median_degree=float(q[0]),
                    p99_degree=float(q[1]), max_degree=float(deg.max()), min_degree=float(deg.min()),
                    tail_exponent_hill=hill, intra_community=same, within_1pct_of_diagonal=near,
                    label_homophily=homophily)

    def summary(self) -> str:
        s = self.stats()
        return (f"{self.name}: {s['n']:,} nodes, {s['nnz']:,} entries{' (with self loops)' if self.self_loops else ''}, "
                f"degree mean {s['mean_degree']:.1f} / median {s['median_degree']:.0f} / p99 {s['p99_degree']:.0f} / "
                f"max {s['max_degree']:.0f}, tail exponent (Hill, top 1%) {s['tail_exponent_hill']:.2f}, "
                f"{100 * s['intra_community']:.1f}% of entries in the row's community, "
                f"{100 * s['within_1pct_of_diagonal']:.1f}% within n/100 of the diagonal, "
                f"label homophily {s['label_homophily']:.2f}, {self.x.shape[1]} features, {self.num_classes} classes")


# ---- the generator -------------------------------------------------------------------------------


def _block_bounds(n: int, blocks: int, sigma: float, gen: torch.Generator) -> Tensor:
    """blocks + 1 strictly increasing cut points 0 = b_0 < ... < b_blocks = n (lognormal sizes)."""
    blocks = max(1, min(blocks, n))
    w = torch.exp(sigma * torch.randn(blocks, generator=gen, dtype=torch.float64)).clamp_min(0.05)
    b = torch.round(torch.cumsum(w, 0) / w.sum() * n).long()
    b = torch.cat([torch.zeros(1, dtype=torch.long), b])
    b[-1] = n
    # strictly increasing (each block at least 1 node): push forward, then back from the end
    b = torch.maximum(b, torch.arange(blocks + 1))
    b = torch.minimum(b, n - blocks + torch.arange(blocks + 1))
    return b


def _expected_degrees(p: Size, gen: torch.Generator) -> Tensor:
    """theta: n expected degrees, power law with exponent gamma, clipped at d_max, mean nnz / n."""
    u = torch.rand(p.n, generator=gen, dtype=torch.float64)
    theta = (1.0 - u).pow(-1.0 / (p.gamma - 1.0))  # Pareto, x_min = 1, pdf ~ x^-gamma
    target = p.nnz / p.n
    for _ in range(20):  # scale to the mean, clip, repeat until the clip no longer moves the mean
        theta = theta * (target / theta.mean())
        if theta.max() <= p.d_max * (1 + 1e-9):
            break
        theta = theta.clamp_max(p.d_max)
    return theta


def _draw_edges(count: int, theta_cdf: Tensor, lo_c: Tensor, hi_c: Tensor, lo_k: Tensor, hi_k: Tensor,
                stub_w: Tensor, mix, n: int, gen: torch.Generator, chunk: int = 1 << 24) -> Tensor:
    """``count`` (about) undirected edges as sorted unique int64 keys min(u,v) * n + max(u,v)."""
    # u by stochastic rounding of count * theta / sum(theta): sorted, no binary search needed
    expect = stub_w * count
    stubs = (expect.floor() + (torch.rand(n, generator=gen, dtype=torch.float64) < expect.frac())).long()
    total = float(theta_cdf[-1])
    keys = []
    start = 0
    deg_ptr = torch.cat([torch.zeros(1, dtype=torch.long), stubs.cumsum(0)])
    n_stubs = int(deg_ptr[-1])
    node_first = 0
    while start < n_stubs:  # chunks of about `chunk` edges, cut at node boundaries
        stop = min(n_stubs, start + chunk)
        node_last = int(torch.searchsorted(deg_ptr, torch.tensor([stop]), right=False)[0])  # first node with ptr >= stop
        node_last = min(max(node_last, node_first + 1), n)
        stop = int(deg_ptr[node_last])
        u = torch.repeat_interleave(torch.arange(node_first, node_last), stubs[node_first:node_last],
                                    output_size=stop - start)
        r = torch.rand(u.shape[0], generator=gen, dtype=torch.float64)
        level = torch.rand(u.shape[0], generator=gen, dtype=torch.float32)
        # the range of cumulative theta mass to draw v from: community, cluster or everything
        lo = torch.where(level < mix[0], lo_c[u], torch.where(level < mix[0] + mix[1], lo_k[u], 0.0))
        hi = torch.where(level < mix[0], hi_c[u], torch.where(level < mix[0] + mix[1], hi_k[u], total))
        del level
        q = lo + r * (hi - lo)
        del lo, hi, r
        v = torch.searchsorted(theta_cdf, q, right=True).clamp_max_(n - 1)
        del q
        keep = u != v
        u, v = u[keep], v[keep]
        keys.append(torch.minimum(u, v) * n + torch.maximum(u, v))
        del u, v, keep
        start, node_first = stop, node_last
    k = torch.cat(keys) if keys else torch.empty(0, dtype=torch.long)
    del keys
    return torch.unique(k, sorted=True)


def _merge_unique(a: Tensor, b: Tensor) -> Tensor:
    return torch.unique(torch.cat([a, b]), sorted=True)


def generate(size: str = "tiny", seed: int = 0, *, edge_index: bool = True, index_dtype=None,
             verbose: bool = False) -> Graph:
    """The twin named ``size`` (tiny, 200k, reddit, products), deterministic from ``seed``."""
    p = SIZES[size]
    times = {}
    t0 = time.perf_counter()
    gen = torch.Generator().manual_seed(seed)
    n, m_target = p.n, p.nnz // 2
    if m_target > n * (n - 1) // 2:
        raise ValueError(f"{size}: {m_target} undirected edges do not fit {n} nodes")

    comm_b = _block_bounds(n, p.communities, p.size_sigma, gen)
    C = comm_b.shape[0] - 1
    K = max(1, min(p.clusters, C))
    cuts = torch.sort(torch.randperm(C - 1, generator=gen)[: K - 1] + 1).values if K > 1 else torch.empty(0, dtype=torch.long)
    clus_b_c = torch.cat([torch.zeros(1, dtype=torch.long), cuts, torch.tensor([C])])  # in communities
    cluster_of_comm = torch.searchsorted(cuts, torch.arange(C), right=True)
    community = torch.repeat_interleave(torch.arange(C, dtype=torch.int32), comm_b[1:] - comm_b[:-1])
    cluster = cluster_of_comm[community.long()]
    class_of_cluster = torch.randperm(K, generator=gen) % p.classes
    y = class_of_cluster[cluster]

    theta = _expected_degrees(p, gen)
    cdf0 = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(theta, 0)])
    theta_cdf = cdf0[1:].contiguous()
    # per node: the cumulative-theta interval of its community and of its cluster
    lo_c = cdf0[comm_b[:-1]][community.long()]
    hi_c = cdf0[comm_b[1:]][community.long()]
    clus_nodes = comm_b[clus_b_c]  # cluster bounds in node ids
    lo_k = cdf0[clus_nodes[:-1]][cluster]
    hi_k = cdf0[clus_nodes[1:]][cluster]
    stub_w = theta / float(cdf0[-1])
    del cluster
    times["setup"] = time.perf_counter() - t0

    # draw, merge repeats, top up until m_target distinct undirected edges
    t1 = time.perf_counter()
    keys = torch.empty(0, dtype=torch.long)
    ask = m_target
    rounds = 0
    while keys.shape[0] < m_target:
        rounds += 1
        if rounds > 30:
            raise RuntimeError(f"{size}: could not reach {m_target} distinct edges (got {keys.shape[0]}); "
                               "the blocks are too small for the degrees")
        new = _draw_edges(ask, theta_cdf, lo_c, hi_c, lo_k, hi_k, stub_w, p.mix, n, gen)
        before = keys.shape[0]
        keys = new if before == 0 else _merge_unique(keys, new)
        gained = keys.shape[0] - before
        if verbose:
            print(f"  round {rounds}: drew {ask:,}, {gained:,} new distinct, {keys.shape[0]:,} of {m_target:,}")
        deficit = m_target - keys.shape[0]
        if deficit > 0:  # ask for the deficit over the last round's yield, plus 2%
            ask = int(math.ceil(deficit / max(gained / max(ask, 1), 1e-3) * 1.02)) + 16
    if keys.shape[0] > m_target:  # drop the excess at random
        keep = torch.sort(torch.randperm(keys.shape[0], generator=gen)[:m_target]).values
        keys = keys[keep]
        del keep
    del lo_c, hi_c, lo_k, hi_k, theta_cdf, cdf0
    times["edges"] = time.perf_counter() - t1

    # symmetrise and sort into CSR
    t2 = time.perf_counter()
    u = keys // n
    v = keys - u * n
    del keys
    both = torch.cat([keys_of(u, v, n), keys_of(v, u, n)])
    del u, v
    both = torch.sort(both).values
    row = both // n
    col = (both - row * n)
    del both
    nnz = col.shape[0]
    if index_dtype is None:
        index_dtype = torch.int32 if max(n, nnz) < 2**31 - 1 else torch.int64
    counts = torch.bincount(row, minlength=n)
    rowptr = torch.zeros(n + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=rowptr[1:])
    del counts
    ei = torch.stack([col, row]) if edge_index else None
    del row
    col = col.to(index_dtype)
    rowptr = rowptr.to(index_dtype)
    times["csr"] = time.perf_counter() - t2

    # features: noisy class embedding + community embedding (unit-variance noise)
    t3 = time.perf_counter()
    d = p.in_dim
    class_emb = torch.randn(p.classes, d, generator=gen) * p.signal
    comm_emb = torch.randn(C, d, generator=gen) * (0.5 * p.signal)
    x = torch.empty(n, d, dtype=torch.float32)
    step = 1 << 18
    for s in range(0, n, step):  # chunks keep the temporaries small
        e = min(n, s + step)
        x[s:e] = torch.randn(e - s, d, generator=gen)
        x[s:e] += class_emb[y[s:e]]
        x[s:e] += comm_emb[community[s:e].long()]
    times["features"] = time.perf_counter() - t3
    times["total"] = time.perf_counter() - t0
    return Graph(name=size, n=n, rowptr=rowptr, col=col, x=x, y=y.long(), num_classes=p.classes,
                 community=community, edge_index=ei, seed=seed, params=p, seconds=times)


def keys_of(r: Tensor, c: Tensor, n: int) -> Tensor:
    return r * n + c


def add_self_loops(g: Graph) -> Graph:
    """The same graph with the diagonal entry (i, i) added to every row (the graph has none),
    kept sorted; edge_index rebuilt in the new CSR order when g has one. Vectorised."""
    if g.self_loops:
        return g
    n, E = g.n, g.nnz
    row = g.row().long()
    col = g.col.long()
    # position of (i, i) among row i's sorted columns = entries of row i with col < i
    before = torch.zeros(n, dtype=torch.long).index_add_(0, row, (col < row).long())
    del row
    rowptr = g.rowptr.long()
    diag_pos = rowptr[:-1] + before + torch.arange(n)  # in the new arrays
    new_col = torch.empty(E + n, dtype=torch.long)
    is_old = torch.ones(E + n, dtype=torch.bool)
    is_old[diag_pos] = False
    new_col[is_old] = col
    new_col[diag_pos] = torch.arange(n)
    del is_old, col
    new_rowptr = rowptr + torch.arange(n + 1)
    out = Graph(**{k: getattr(g, k) for k in g.__dataclass_fields__})
    out.rowptr = new_rowptr.to(g.rowptr.dtype)
    out.col = new_col.to(g.col.dtype)
    out.self_loops = True
    out.edge_index = out.make_edge_index() if g.edge_index is not None else None
    return out


def load_or_generate(size: str, seed: int = 0, cache_dir: Optional[str] = None, verbose: bool = False) -> Graph:
    """generate(), or the copy saved under cache_dir by an earlier call with the same size and seed."""
    import os
    if cache_dir:
        path = os.path.join(cache_dir, f"gnn-twin-{size}-seed{seed}.pt")
        if os.path.exists(path):
            t = time.perf_counter()
            d = torch.load(path, weights_only=False)
            g = Graph(**d)
            g.params = SIZES[size]
            g.seconds = dict(g.seconds, loaded=time.perf_counter() - t)
            return g
    g = generate(size, seed, verbose=verbose)
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        d = {k: getattr(g, k) for k in g.__dataclass_fields__ if k != "params"}
        torch.save(d, path + ".tmp")
        os.replace(path + ".tmp", path)
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description="Generate a GNN graph twin and print its statistics.")
    ap.add_argument("--graph", default="tiny", choices=sorted(SIZES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--no-edge-index", action="store_true", help="skip the int64 edge_index")
    ap.add_argument("--no-stats", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    g = generate(args.graph, args.seed, edge_index=not args.no_edge_index, verbose=True)
    print("seconds:", {k: round(v, 2) for k, v in g.seconds.items()})
    try:
        import resource
        print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    except ImportError:
        pass
    if not args.no_stats:
        print(g.summary())


if __name__ == "__main__":
    main()
