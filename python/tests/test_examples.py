# SPDX-License-Identifier: Apache-2.0
"""examples/gnn end to end on the tiny generated graph (CPU, eager, 3 epochs): the sparseport
GraphSAGE and GAT equal their PyG twins (SAGEConv / GATConv) at init and along the loss curve, and
the loss goes down (skipped, with the reason, when torch_geometric is not importable); and the
generated graph is a deterministic, symmetric, sorted CSR."""
import os
import sys

import pytest
import torch

_GNN = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "examples", "gnn")
sys.path.insert(0, os.path.abspath(_GNN))

import twins  # noqa: E402
import models  # noqa: E402
import train_vs_pyg  # noqa: E402

_REASON = train_vs_pyg.pyg_available()
if _REASON:
    print(f"test_examples.py skipped: {_REASON} (pip install torch_geometric)")
needs_pyg = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


@pytest.fixture(scope="module")
def tiny():
    return twins.generate("tiny", seed=0)


def test_tiny_graph_is_a_symmetric_sorted_csr(tiny):
    g = tiny
    assert g.rowptr.dtype == g.col.dtype == torch.int32
    assert int(g.rowptr[-1]) == g.nnz == twins.SIZES["tiny"].nnz
    row, col = g.row().long(), g.col.long()
    key = row * g.n + col
    assert bool((key[1:] > key[:-1]).all())  # rows sorted, columns sorted and distinct in a row
    assert not bool((row == col).any())
    assert bool(torch.equal(torch.sort(col * g.n + row).values, key))  # symmetric
    assert torch.equal(g.edge_index, torch.stack([col, row]))
    again = twins.generate("tiny", seed=0)
    assert torch.equal(again.col, g.col) and torch.equal(again.x, g.x)  # deterministic
    s = twins.add_self_loops(g)
    assert s.nnz == g.nnz + g.n
    skey = s.row().long() * g.n + s.col.long()
    assert bool((skey[1:] > skey[:-1]).all())
    assert int((s.row() == s.col).sum()) == g.n


@needs_pyg
def test_init_forward_equals_pyg(tiny):
    args = train_vs_pyg.parse_args([])
    for kind in ("sage", "gat"):
        g = twins.add_self_loops(tiny) if kind == "gat" else tiny
        impls = ["sparseport", "pyg"] + (["pyg-csr"] if kind == "sage" else [])
        inp = train_vs_pyg.Inputs(g, torch.device("cpu"), kind == "sage")
        ours = models.build(kind, g.x.shape[1], g.num_classes, seed=0)
        with torch.no_grad():
            ref = train_vs_pyg.forward_fn(kind, "sparseport", ours, inp)()
            for impl in impls[1:]:
                twin = models.pyg_twin(ours)
                got = train_vs_pyg.forward_fn(kind, impl, twin, inp)()
                torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4 * float(ref.abs().max()),
                                           msg=lambda m: f"{kind} vs {impl}: {m}")
        check = train_vs_pyg.init_forward_check(kind, ours.state_dict(), args, inp, g, torch.device("cpu"), impls)
        assert all(v.get("allclose_rtol_1e_4") for v in check.values()), check


@needs_pyg
def test_training_matches_pyg_and_learns(tmp_path):
    out = tmp_path / "tiny.json"
    res = train_vs_pyg.main(["--graph", "tiny", "--device", "cpu", "--epochs", "3", "--no-compile",
                             "--impl", "sparseport,pyg", "--json", str(out)])
    assert out.exists()
    runs = {(r["model"], r["impl"]): r for r in res["runs"]}
    for kind in ("sage", "gat"):
        ours, pyg = runs[(kind, "sparseport")], runs[(kind, "pyg")]
        assert ours["status"] == "ok" and pyg["status"] == "ok", (ours["error"], pyg["error"])
        assert len(ours["losses"]) == 3
        torch.testing.assert_close(torch.tensor(ours["losses"]), torch.tensor(pyg["losses"]), rtol=1e-4, atol=1e-5)
        assert ours["losses"][-1] < ours["losses"][0], ours["losses"]
        assert res["init_forward"][kind]["pyg"].get("allclose_rtol_1e_4"), res["init_forward"]
    assert all(c["max_abs_loss_diff"] < 1e-4 for c in res["loss_comparisons"]), res["loss_comparisons"]


@needs_pyg
def test_training_under_autocast(tmp_path):
    """--autocast bf16: every run also under torch.autocast (CPU, eager, 2 epochs); sparseport's and
    PyG's loss curves stay near their float32 ones and near each other (bfloat16 rounding)."""
    res = train_vs_pyg.main(["--graph", "tiny", "--device", "cpu", "--epochs", "2", "--no-compile", "--no-stats",
                             "--impl", "sparseport,pyg", "--autocast", "bf16", "--json", str(tmp_path / "amp.json")])
    assert res["autocast"] == "bf16"
    runs = {(r["model"], r["impl"], r["autocast"]): r for r in res["runs"]}
    assert len(runs) == 8
    for kind in ("sage", "gat"):
        for impl in ("sparseport", "pyg"):
            r = runs[(kind, impl, "bf16")]
            assert r["status"] == "ok", r["error"]
            assert r["fp32_over_amp_epoch"] > 0 and r["max_abs_loss_diff_vs_fp32"] < 0.02, r
        ours, pyg = runs[(kind, "sparseport", "bf16")], runs[(kind, "pyg", "bf16")]
        torch.testing.assert_close(torch.tensor(ours["losses"]), torch.tensor(pyg["losses"]), rtol=0, atol=0.02)


def test_first_epoch_profile_ranks_host_time(tmp_path):
    """--profile-first: the first epoch runs under torch.profiler and the run keeps the ops with the
    most host time of their own, ranked, with the sparseport op among them; the epoch still trains
    (its loss is recorded and the next epoch's is lower)."""
    res = train_vs_pyg.main(["--graph", "tiny", "--device", "cpu", "--epochs", "2", "--no-compile", "--no-stats",
                             "--model", "sage", "--impl", "sparseport", "--profile-first", "200",
                             "--json", str(tmp_path / "first.json")])
    (run,) = res["runs"]
    assert run["status"] == "ok", run["error"]
    assert len(run["losses"]) == 2 and run["losses"][1] < run["losses"][0], run["losses"]
    prof = run["first_profile"]
    assert prof and all(p["ms"] > 0 and p["calls"] >= 1 for p in prof), prof
    assert [p["ms"] for p in prof] == sorted((p["ms"] for p in prof), reverse=True)
    assert any("sparseport" in p["name"] for p in prof), [p["name"] for p in prof]
    assert "profile" not in run  # --profile (a steady epoch's device time) was not asked for


def test_fused_sage_equals_sage_and_its_gradients(tiny):
    """models.SAGEConv._forward_fused (--sage-fused): both of its paths (in <= out: lin_r's GEMM adds
    into lin_l's result in place; in > out: one GEMM over [W_l; W_r], spmm on a strided half) give the
    output and every gradient of the plain layers, from the same parameters; under autocast the
    fused model takes the plain path."""
    A = models.csr_of(tiny)
    plain = models.build("sage", tiny.x.shape[1], tiny.num_classes, hidden=32, seed=3)
    fused = models.build("sage", tiny.x.shape[1], tiny.num_classes, hidden=32, seed=3, sage_fused=True)
    dims = [(c.in_channels, c.out_channels) for c in fused.convs]
    assert any(i <= o for i, o in dims) and any(i > o for i, o in dims), dims
    outs, grads = [], []
    for m in (plain, fused):
        x = tiny.x.clone().requires_grad_(True)
        out = m(x, A)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        outs.append(out.detach())
        grads.append([x.grad] + [p.grad for p in m.parameters()])
    # float32 sums in another order (one GEMM of K = 2 out against two and an add): a few ulps of
    # the largest magnitude, not of each element
    for got, want in zip([outs[1]] + grads[1], [outs[0]] + grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5 * float(want.abs().max()))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = fused(tiny.x, A), plain(tiny.x, A)
    assert got.dtype == want.dtype and torch.equal(got, want)
