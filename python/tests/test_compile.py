# SPDX-License-Identifier: Apache-2.0
"""torch.compile(fullgraph=True) through a small GNN layer, forward and backward, on the CPU:
the graph holds the sparseport ops (no graph break), and results and gradients equal eager's."""
import pytest
import torch

import sparseport.torch as spt
from graphs import random_csr, rand


class Layer(torch.nn.Module):
    """GraphSAGE-style mean and max aggregation, an attention term and an edge-gated sum."""

    def __init__(self, f_in, f_out, dtype):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.lin = torch.nn.Linear(f_in, f_out, dtype=dtype)
        self.root = torch.nn.Linear(f_in, f_out, dtype=dtype)
        self.q = torch.nn.Linear(f_out, f_out, dtype=dtype)
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64).to(dtype) - 0.5)

    def forward(self, A, x, batch):
        h = spt.spmm(A, self.lin(x), "mean") + spt.spmm(A, self.lin(x), "max") + self.root(x)
        h = torch.relu(h)
        h = h + spt.csr_attention(A, self.q(h), h, h)
        gate = torch.sigmoid(spt.sddmm(A, h, h).values)
        h = spt.spmm(A.with_values(gate * A.values), h, "sum")
        pooled = spt.scatter_reduce(h, batch, 4, "mean") + spt.segment_reduce(h, batch.sort().values, 4, "max")
        return pooled.square().sum()


def run(fn, model, A, x, batch):
    model.zero_grad()
    values = A.values.detach().clone().requires_grad_(True)
    x = x.detach().clone().requires_grad_(True)
    loss = fn(A.with_values(values), x, batch)
    loss.backward()
    return [loss.detach(), x.grad, values.grad] + [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_compiled_layer_matches_eager(index_dtype):
    torch._dynamo.reset()
    dtype = torch.float64
    A = random_csr(30, 30, seed=1, index_dtype=index_dtype, dtype=dtype)
    x = rand(30, 6, seed=2, dtype=dtype)
    batch = torch.randint(0, 4, (30,), generator=torch.Generator().manual_seed(3))
    model = Layer(6, 8, dtype)

    from torch._inductor.compile_fx import compile_fx  # what backend="inductor" runs

    graphs = []

    def backend(gm, example_inputs):  # inductor, after noting the graph dynamo captured
        graphs.append(gm)
        return compile_fx(gm, example_inputs)

    compiled = torch.compile(model, fullgraph=True, backend=backend)
    eager = run(model, model, A, x, batch)
    got = run(compiled, model, A, x, batch)
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    assert len(graphs) == 1
    targets = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    for op in ("spmm", "sddmm", "csr_attention", "scatter_reduce", "segment_reduce", "segment_reduce_arg"):
        assert any(t.startswith(f"sparseport.{op}") for t in targets), sorted(targets)
    # a second call with other values reuses the compiled graph
    A2 = A.with_values(A.values * 0.5)
    for a, b in zip(run(compiled, model, A2, x, batch), run(model, model, A2, x, batch)):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    assert len(graphs) == 1
