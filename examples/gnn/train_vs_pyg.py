# SPDX-License-Identifier: Apache-2.0
"""Train full-batch GraphSAGE-mean and GAT on sparseport.torch next to PyG's SAGEConv / GATConv,
on the same generated graph from the same initial weights, eager and under torch.compile.

    python examples/gnn/train_vs_pyg.py --graph tiny --device cpu --epochs 5
    python examples/gnn/train_vs_pyg.py --graph products --model sage --device cuda --json out.json

Per model, implementation and mode: the median epoch time (synchronised; the first epoch, which
holds compilation and the scheduler's first decisions, is reported apart), the peak memory, the
loss curve, and the largest difference between the loss curves of sparseport and PyG in the same
mode. Memory: on CUDA torch.cuda.max_memory_allocated, absolute and over what was allocated before
the run; on the CPU the peak RSS over the run's start, sampled every 2 ms. The table shows the
"own peak": the peak over the run's start plus the bytes of the inputs that implementation reads
(x, y and its form of the graph), since the process holds every implementation's form of the graph. Each epoch: Adam,
cross-entropy on all nodes, forward + backward + step.

Implementations: ``sparseport`` (models.SAGE / models.GAT on a sparseport.torch.CSR), ``pyg``
(torch_geometric.nn with edge_index) and, for SAGE, ``pyg-csr`` (SAGEConv with the adjacency as a
torch.sparse_csr_tensor, PyG's fastest full-batch path for mean aggregation; torch.compile cannot
trace sparse tensors, so its compiled run breaks the graph around them: the report counts the graphs
and graph breaks dynamo made in every compiled run). GAT runs
on the graph with self loops added once (twins.add_self_loops), PyG's GATConv with
add_self_loops=False on those same edges.

With ``--autocast bf16|f16`` every run is made twice, in float32 and under
``torch.autocast(device, dtype)`` (float32 parameters; forward and loss inside the autocast region,
backward and the Adam step outside), for sparseport and PyG alike: the table gains the columns
"amp" (fp32 or the autocast dtype), "fp32/amp" (the float32 run's median epoch over this run's:
above 1, autocast is faster) and "|loss-fp32|" (the largest difference between this run's loss
curve and the float32 run's of the same implementation and mode); "sparseport speedup" compares
runs of the same precision.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from typing import Callable, Dict, List, Optional

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twins  # noqa: E402
import models  # noqa: E402
import sparseport.torch as spt  # noqa: E402


def pyg_available() -> Optional[str]:
    """None when torch_geometric imports, else the reason."""
    try:
        import torch_geometric  # noqa: F401
        from torch_geometric.nn import GATConv, SAGEConv  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return f"torch_geometric is not importable: {type(e).__name__}: {e}"
    return None


# ---- memory --------------------------------------------------------------------------------------


class RssPeak:
    """Peak resident set size over a block, sampled from /proc/self/statm (Linux)."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.ok = os.path.exists("/proc/self/statm")
        self.page = os.sysconf("SC_PAGE_SIZE") if self.ok else 0

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def __enter__(self):
        if self.ok:
            self.base = self.peak = self._rss()
            self._stop = threading.Event()
            self._t = threading.Thread(target=self._run, daemon=True)
            self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        if self.ok:
            self._stop.set()
            self._t.join()
            self.peak = max(self.peak, self._rss())

    def delta(self) -> Optional[int]:
        return self.peak - self.base if self.ok else None


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- one run -------------------------------------------------------------------------------------


class Inputs:
    """What the models read, on the device: x, y, the CSR (+ row index for GAT), edge_index and,
    for pyg-csr, the adjacency as a torch sparse CSR tensor."""

    def __init__(self, g: twins.Graph, device: torch.device, need_sparse_csr: bool, need_row: bool = True):
        self.n = g.n
        self.x = g.x.to(device)
        self.y = g.y.to(device)
        self.A = spt.CSR(g.rowptr.to(device), g.col.to(device), None, (g.n, g.n))
        self.row = models.row_index(self.A) if need_row else None
        self.edge_index = (g.edge_index if g.edge_index is not None else g.make_edge_index()).to(device)
        self.adj_t = None
        if need_sparse_csr:
            # int64 indices, as PyG builds them (SparseTensor / to_torch_csr_tensor). With int32
            # indices torch's CPU backward of sparse.mm(..., reduce="mean") is wrong once n^2 passes
            # 2^31 (seen with torch 2.15: gradients off by hundreds at n = 50,000; compare
            # pytorch/pytorch#99848), so the twin would not train like the others.
            ones = torch.ones(g.nnz, dtype=torch.float32, device=device)
            self.adj_t = torch.sparse_csr_tensor(self.A.rowptr.long(), self.A.col.long(), ones, (g.n, g.n),
                                                 check_invariants=False)

    def input_bytes(self, kind: str, impl: str) -> int:
        """Bytes of the inputs this implementation reads: x, y and its form of the graph."""
        def nb(*ts):
            return sum(t.numel() * t.element_size() for t in ts if t is not None)
        own = nb(self.x, self.y)
        if impl == "sparseport":
            return own + nb(self.A.rowptr, self.A.col, self.row if kind == "gat" else None)
        if impl == "pyg":
            return own + nb(self.edge_index)
        a = self.adj_t
        return own + nb(a.crow_indices(), a.col_indices(), a.values())


def forward_fn(kind: str, impl: str, model: torch.nn.Module, inp: Inputs) -> Callable[[], torch.Tensor]:
    if impl == "sparseport":
        if kind == "gat":
            return lambda m=model: m(inp.x, inp.A, inp.row)
        return lambda m=model: m(inp.x, inp.A)
    if impl == "pyg":
        return lambda m=model: m(inp.x, inp.edge_index)
    if impl == "pyg-csr":
        return lambda m=model: m(inp.x, inp.adj_t)
    raise ValueError(impl)


def make_model(kind: str, impl: str, init_state: Dict[str, torch.Tensor], args, in_dim: int, classes: int,
               device: torch.device) -> torch.nn.Module:
    ours = models.build(kind, in_dim, classes, layers=args.layers, hidden=args.hidden, heads=args.heads,
                        head_dim=args.head_dim, sage_fused=args.sage_fused)
    ours.load_state_dict(init_state)
    ours = ours.to(device)
    return ours if impl == "sparseport" else models.pyg_twin(ours)


AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def train_epoch(opt, fwd: Callable[[], torch.Tensor], region, y: torch.Tensor) -> torch.Tensor:
    """One epoch: forward and loss in `region` (autocast or nothing), backward, the Adam step."""
    opt.zero_grad(set_to_none=True)
    with region():
        loss = F.cross_entropy(fwd(), y)
    loss.backward()
    opt.step()
    return loss


def profile_epoch(epoch: Callable[[], object], device: torch.device, top: int, host: bool = False) -> List[Dict]:
    """One epoch under torch.profiler: the `top` ops (kernels on CUDA) by their own device time
    (CPU time on the CPU), each with its calls and milliseconds in that epoch. Where a steady epoch's
    time goes, for the kernel work (issue 33: the products-sized SAGE epoch against PyG's).
    host=True ranks by the host time of their own instead, the CUDA runtime's calls (cudaMalloc,
    module loads, synchronisations) among them: where a first epoch's wall time goes beyond the
    device's work (issue 35: the first epoch against the median)."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    with profile(activities=acts) as prof:
        epoch()
        sync(device)
    def own_us(e) -> float:
        if host or device.type != "cuda":
            return e.self_cpu_time_total
        return getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0.0)
    rows = sorted(prof.key_averages(), key=own_us, reverse=True)
    return [dict(name=e.key[:120], calls=int(e.count), ms=own_us(e) / 1e3) for e in rows[:top] if own_us(e) > 0]


def run_one(kind: str, impl: str, mode: str, init_state, args, inp: Inputs, g: twins.Graph,
            device: torch.device, amp: Optional[str] = None) -> Dict:
    """One training run; amp: None (float32) or a key of AUTOCAST_DTYPES (forward and loss under
    torch.autocast with that dtype)."""
    rec = dict(model=kind, impl=impl, mode=mode, status="ok", error=None, epoch_s=[], losses=[], autocast=amp)

    def region():
        return torch.autocast(device.type, dtype=AUTOCAST_DTYPES[amp]) if amp else contextlib.nullcontext()

    model = opt = fwd = None
    torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    rss = RssPeak()
    try:
        with rss:
            model = make_model(kind, impl, init_state, args, g.x.shape[1], g.num_classes, device)
            opt = torch.optim.Adam(model.parameters(), lr=args.lr)
            if mode == "compile":
                from torch._dynamo.utils import counters
                counters.clear()
                fullgraph = impl == "sparseport" and not args.no_fullgraph
                rec["fullgraph"] = fullgraph
                target = torch.compile(model, fullgraph=fullgraph)
            else:
                target = model
            fwd = forward_fn(kind, impl, target, inp)
            for epoch in range(args.epochs):
                sync(device)
                t0 = time.perf_counter()
                if epoch == 0 and args.profile_first:
                    box = []
                    rec["first_profile"] = profile_epoch(lambda: box.append(train_epoch(opt, fwd, region, inp.y)),
                                                         device, args.profile_first, host=True)
                    loss = box[0]
                else:
                    loss = train_epoch(opt, fwd, region, inp.y)
                sync(device)
                rec["epoch_s"].append(time.perf_counter() - t0)
                rec["losses"].append(loss.item())
            if args.profile:
                rec["profile"] = profile_epoch(lambda: train_epoch(opt, fwd, region, inp.y), device, args.profile)
    except Exception as e:  # compile failures and the like: report and go on
        rec["status"] = "failed"
        msg = f"{type(e).__name__}: {e}"
        rec["error"] = msg if len(msg) < 4000 else msg[:4000] + " ..."
        if args.verbose:
            traceback.print_exc()
    finally:
        del model, opt, fwd
    if mode == "compile":
        from torch._dynamo.utils import counters
        rec["dynamo_graphs"] = int(counters["stats"].get("unique_graphs", 0))
        breaks = dict(counters["graph_break"])
        rec["graph_breaks"] = int(sum(breaks.values()))
        rec["graph_break_reasons"] = {k[:300]: int(v) for k, v in list(breaks.items())[:10]}
    rec["input_bytes"] = inp.input_bytes(kind, impl)
    if device.type == "cuda":
        rec["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        rec["peak_over_start_bytes"] = rec["peak_bytes"] - base
        rec["memory_kind"] = "torch.cuda.max_memory_allocated"
    else:
        d = rss.delta()
        rec["peak_bytes"] = None
        rec["peak_over_start_bytes"] = d
        rec["memory_kind"] = "peak RSS over the run's start (sampled)" if d is not None else "n/a"
    # own peak: what the run allocated at its peak plus the inputs it reads (the process also holds
    # the other implementations' forms of the graph, which the absolute peak would count)
    d = rec["peak_over_start_bytes"]
    rec["own_peak_bytes"] = None if d is None else d + rec["input_bytes"]
    ep = rec["epoch_s"]
    rec["first_epoch_s"] = ep[0] if ep else None
    rec["median_epoch_s"] = statistics.median(ep[1:] if len(ep) > 1 else ep) if ep else None
    return rec


@torch.no_grad()
def init_forward_check(kind: str, init_state, args, inp: Inputs, g: twins.Graph, device, impls) -> Dict:
    """Forward of the sparseport model vs each PyG twin at the initial weights."""
    ours = make_model(kind, "sparseport", init_state, args, g.x.shape[1], g.num_classes, device)
    ref = forward_fn(kind, "sparseport", ours, inp)()
    out = {}
    for impl in impls:
        if impl == "sparseport":
            continue
        try:
            twin = models.pyg_twin(ours)
            got = forward_fn(kind, impl, twin, inp)()
            diff = (got - ref).abs()
            scale = ref.abs().max().clamp_min(1e-30)
            ok = torch.allclose(ref, got, rtol=1e-4, atol=1e-4 * float(scale))
            out[impl] = dict(max_abs_diff=float(diff.max()), max_abs_ref=float(scale), allclose_rtol_1e_4=bool(ok))
            del twin, got, diff
        except Exception as e:  # e.g. out of memory: PyG with edge_index holds E x F messages
            out[impl] = dict(error=f"{type(e).__name__}: {str(e)[:2000]}")
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


# ---- report --------------------------------------------------------------------------------------


def fmt_bytes(b: Optional[int]) -> str:
    if b is None:
        return "n/a"
    return f"{b / 2**30:.2f} GiB" if abs(b) >= 2**30 else f"{b / 2**20:.0f} MiB"


def _loss_diff(a: Dict, b: Dict) -> float:
    return max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))


def _tag(mode: str, amp: Optional[str]) -> str:
    return mode if amp is None else f"{mode}+{amp}"


def compare(runs: List[Dict]) -> List[Dict]:
    """Largest |loss difference| between sparseport and each other run of the same model, per mode
    and precision, between eager and compiled sparseport, and (with --autocast) between each
    autocast run and the float32 run of the same implementation and mode. Autocast runs also get
    fp32_over_amp_epoch and max_abs_loss_diff_vs_fp32 in their record."""
    out = []
    by = {(r["model"], r["impl"], r["mode"], r.get("autocast")): r for r in runs
          if r["status"] == "ok" and r["losses"]}
    for (kind, impl, mode, amp), r in by.items():
        tag = _tag(mode, amp)
        if impl == "sparseport":
            other = by.get((kind, "sparseport", "eager", amp))
            if mode != "eager" and other:
                out.append(dict(model=kind, a=f"sparseport/{tag}", b=f"sparseport/{_tag('eager', amp)}",
                                max_abs_loss_diff=_loss_diff(r, other)))
        else:
            ours = by.get((kind, "sparseport", mode, amp))
            if ours:
                out.append(dict(model=kind, a=f"sparseport/{tag}", b=f"{impl}/{tag}", max_abs_loss_diff=_loss_diff(r, ours)))
        fp32 = by.get((kind, impl, mode, None)) if amp is not None else None
        if fp32:
            r["max_abs_loss_diff_vs_fp32"] = _loss_diff(r, fp32)
            r["fp32_over_amp_epoch"] = fp32["median_epoch_s"] / r["median_epoch_s"]
            out.append(dict(model=kind, a=f"{impl}/{tag}", b=f"{impl}/{mode}", max_abs_loss_diff=r["max_abs_loss_diff_vs_fp32"]))
    return out


def print_table(runs: List[Dict], comps: List[Dict], checks: Dict, device: torch.device) -> None:
    mem_head = "own peak (over start)" if device.type == "cuda" else "own peak (RSS delta)"
    amp_cols = any(r.get("autocast") for r in runs)  # the --autocast columns
    print()
    print(f"{'model':5} {'impl':10} {'mode':7} " + (f"{'amp':4} " if amp_cols else "") +
          f"{'median epoch':>13} {'1st epoch':>10} {mem_head:>24} "
          f"{'loss[0]':>9} {'loss[-1]':>9}  {'sparseport speedup':>18}  " +
          (f"{'fp32/amp':>8}  {'|loss-fp32|':>11}  " if amp_cols else "") + "graphs/breaks")
    by = {(r["model"], r["impl"], r["mode"], r.get("autocast")): r for r in runs}
    for r in runs:
        amp = f"{r.get('autocast') or 'fp32':4} " if amp_cols else ""
        if r["status"] != "ok":
            print(f"{r['model']:5} {r['impl']:10} {r['mode']:7} {amp}FAILED: {r['error'][:300]}")
            continue
        mem = f"{fmt_bytes(r['own_peak_bytes'])} ({fmt_bytes(r['peak_over_start_bytes'])})"
        sp = by.get((r["model"], "sparseport", r["mode"], r.get("autocast")))
        gb = f"{r['dynamo_graphs']}/{r['graph_breaks']}" if "dynamo_graphs" in r else ""
        speed = ""
        if r["impl"] != "sparseport" and sp and sp["status"] == "ok":
            speed = f"{r['median_epoch_s'] / sp['median_epoch_s']:.2f}x"
        extra = ""
        if amp_cols:
            ratio = f"{r['fp32_over_amp_epoch']:.2f}x" if "fp32_over_amp_epoch" in r else ""
            diff = f"{r['max_abs_loss_diff_vs_fp32']:.2e}" if "max_abs_loss_diff_vs_fp32" in r else ""
            extra = f"{ratio:>8}  {diff:>11}  "
        print(f"{r['model']:5} {r['impl']:10} {r['mode']:7} {amp}{1e3 * r['median_epoch_s']:10.1f} ms "
              f"{1e3 * r['first_epoch_s']:7.0f} ms {mem:>24} {r['losses'][0]:9.5f} {r['losses'][-1]:9.5f}  {speed:>18}  "
              f"{extra}{gb}")
    print()
    for kind, c in checks.items():
        for impl, v in c.items():
            if "error" in v:
                print(f"{kind}: forward at init, sparseport vs {impl}: FAILED {v['error'][:300]}")
                continue
            print(f"{kind}: forward at init, sparseport vs {impl}: max |diff| {v['max_abs_diff']:.3e} "
                  f"(max |out| {v['max_abs_ref']:.3e}), allclose(rtol=1e-4): {v['allclose_rtol_1e_4']}")
    for c in comps:
        print(f"{c['model']}: max |loss difference| {c['a']} vs {c['b']}: {c['max_abs_loss_diff']:.3e}")
    for r in runs:
        if r["status"] == "ok":
            print(f"{r['model']} {r['impl']}/{_tag(r['mode'], r.get('autocast'))} losses: "
                  + " ".join(f"{x:.5f}" for x in r["losses"]))
    for r in runs:
        if r.get("first_profile"):
            print(f"\n{r['model']} {r['impl']}/{_tag(r['mode'], r.get('autocast'))}: the first epoch (profiled, "
                  f"{1e3 * r['first_epoch_s']:.0f} ms), the ops and runtime calls with the most host time of their own")
            for p in r["first_profile"]:
                print(f"  {p['ms']:9.3f} ms {p['calls']:5d} calls  {p['name']}")
    for r in runs:
        if r.get("profile"):
            unit = "device" if device.type == "cuda" else "CPU"
            print(f"\n{r['model']} {r['impl']}/{_tag(r['mode'], r.get('autocast'))}: one profiled epoch, the ops with "
                  f"the most {unit} time of their own")
            for p in r["profile"]:
                print(f"  {p['ms']:9.3f} ms {p['calls']:5d} calls  {p['name']}")


# ---- main ----------------------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="tiny", choices=sorted(twins.SIZES))
    ap.add_argument("--model", default="both", choices=["sage", "gat", "both"])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--compile", dest="compile", action="store_true", default=True,
                    help="also run under torch.compile (default)")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--no-fullgraph", action="store_true",
                    help="compile the sparseport models without fullgraph=True (PyG's always go without)")
    ap.add_argument("--impl", default="sparseport,pyg,pyg-csr",
                    help="comma list of sparseport, pyg, pyg-csr (pyg-csr: SAGE only)")
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON")
    ap.add_argument("--seed", type=int, default=0, help="graph and weight seed")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256, help="SAGE hidden width")
    ap.add_argument("--heads", type=int, default=4, help="GAT heads")
    ap.add_argument("--head-dim", type=int, default=64, help="GAT channels per head")
    ap.add_argument("--lr", type=float, default=0.005)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--cache-dir", help="save the generated graph here, and reuse it next time")
    ap.add_argument("--no-stats", action="store_true", help="skip the graph statistics (seconds on big graphs)")
    ap.add_argument("--autocast", choices=sorted(AUTOCAST_DTYPES), default=None,
                    help="also run every model under torch.autocast with this dtype (float32 parameters) and "
                         "report its epoch time and loss curve against the float32 run (default: float32 only)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the timed epochs, one more under torch.profiler: print the N ops (CUDA: kernels) "
                         "with the most device time of their own (CPU: CPU time), per run")
    ap.add_argument("--profile-first", type=int, default=0, metavar="N",
                    help="run the first epoch under torch.profiler and print the N ops and CUDA runtime calls with "
                         "the most host time of their own (what a first epoch pays beyond a steady one; the "
                         "profiler's own cost is in that epoch's time), per run")
    ap.add_argument("--sage-fused", action="store_true",
                    help="sparseport's SAGE with fused projections (models.SAGEConv._forward_fused: lin_r's GEMM "
                         "adds into lin_l's result; one GEMM over both weights where in > out); float32 only")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of failed runs")
    return ap.parse_args(argv)


def main(argv=None) -> Dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    reason = pyg_available()
    impls_all = [s.strip() for s in args.impl.split(",") if s.strip()]
    if reason:
        print(f"note: {reason}; running sparseport only (pip install torch_geometric)")
        impls_all = [i for i in impls_all if i == "sparseport"]
    kinds = ["sage", "gat"] if args.model == "both" else [args.model]
    modes = ["eager", "compile"] if args.compile else ["eager"]
    amps = [None] + ([args.autocast] if args.autocast else [])

    t = time.perf_counter()
    g0 = twins.load_or_generate(args.graph, args.seed, args.cache_dir)
    gen_s = time.perf_counter() - t
    print(f"graph {args.graph} (seed {args.seed}) ready in {gen_s:.1f} s: {g0.seconds}")
    result = dict(
        command=" ".join([os.path.basename(sys.executable)] + sys.argv) if argv is None else f"main({argv})",
        graph=dict(name=args.graph, seed=args.seed, seconds=g0.seconds, params=g0.params.__dict__ if g0.params else None),
        device=str(device), device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        torch=torch.__version__, torch_threads=torch.get_num_threads(), python=platform.python_version(),
        torch_geometric=None if reason else __import__("torch_geometric").__version__,
        epochs=args.epochs, lr=args.lr, autocast=args.autocast, sage_fused=args.sage_fused, layers=args.layers, hidden=args.hidden, heads=args.heads, head_dim=args.head_dim,
        env={k: v for k, v in os.environ.items() if k.startswith("SPARSEPORT_")},
        runs=[], init_forward=dict(), loss_comparisons=[])
    if not args.no_stats:
        result["graph"]["stats"] = g0.stats()
        print(g0.summary())

    for kind in kinds:
        g = twins.add_self_loops(g0) if kind == "gat" else g0
        impls = [i for i in impls_all if not (i == "pyg-csr" and kind != "sage")]
        inp = Inputs(g, device, "pyg-csr" in impls, need_row=kind == "gat")
        init = models.build(kind, g.x.shape[1], g.num_classes, layers=args.layers, hidden=args.hidden,
                            heads=args.heads, head_dim=args.head_dim, seed=args.seed).state_dict()
        for mode in modes:
            for amp in amps:
                for impl in impls:
                    rec = run_one(kind, impl, mode, init, args, inp, g, device, amp)
                    rec["graph_nnz"] = g.nnz
                    result["runs"].append(rec)
                    status = (f"median epoch {1e3 * rec['median_epoch_s']:.1f} ms, loss {rec['losses'][0]:.4f} -> "
                              f"{rec['losses'][-1]:.4f}" if rec["status"] == "ok" else f"FAILED {rec['error'][:200]}")
                    tag = f" {amp or 'fp32':4}" if args.autocast else ""
                    print(f"  {kind:4} {impl:10} {mode:7}{tag} {status}", flush=True)
        # After the runs, not before: the check runs sparseport's forward, whose first calls make the
        # scheduler's decisions for these widths; before the runs they would be missing from the
        # first epoch that a user's training loop pays (sessions 40-41 reported it that way).
        if len(impls) > 1:
            result["init_forward"][kind] = init_forward_check(kind, init, args, inp, g, device, impls)
        del inp, g
        gc.collect()

    result["loss_comparisons"] = compare(result["runs"])
    print_table(result["runs"], result["loss_comparisons"], result["init_forward"], device)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
