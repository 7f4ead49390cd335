# SPDX-License-Identifier: Apache-2.0
"""torch.library.opcheck for every custom op: schema, fake (meta) implementation, autograd
registration and AOT dispatch (static and dynamic shapes)."""
import pytest
import torch

from graphs import random_csr, rand

ops = torch.ops.sparseport


def samples(dtype=torch.float64):
    """(name, op, args) with float inputs of ``dtype`` that need grad and ones that do not
    (test_values16.py runs them in float16 and bfloat16)."""
    out = []
    for index_dtype in (torch.int32, torch.int64):
        A = random_csr(9, 7, seed=11, index_dtype=index_dtype, dtype=dtype)
        v = A.values.clone().requires_grad_(True)
        tag = str(index_dtype).split(".")[1]
        for reduce in ("sum", "mean", "max", "min"):
            out.append((f"spmm-{reduce}-{tag}", ops.spmm.default,
                        (A.rowptr, A.col, v, 7, rand(7, 4, seed=1, dtype=dtype, requires_grad=True), reduce)))
            out.append((f"spmm-pattern-{reduce}-{tag}", ops.spmm.default,
                        (A.rowptr, A.col, None, 7, rand(7, 4, seed=1, dtype=dtype), reduce)))
            index = torch.tensor([0, 0, 1, 3, 3, 3, 4, 6], dtype=index_dtype)
            src = rand(8, 3, seed=2, dtype=dtype, requires_grad=True)
            out.append((f"segment_reduce-{reduce}-{tag}", ops.segment_reduce.default, (src, index, 8, reduce)))
            out.append((f"scatter_reduce-{reduce}-{tag}", ops.scatter_reduce.default,
                        (src, index.flip(0).contiguous(), 8, reduce)))
            # the ops segment_reduce() / scatter_reduce() and their autograd run: max/min with the
            # winners (ties in column 0), the backward of every reduce (with the winners for max/min)
            tied = torch.cat([src.detach()[:, :1].round(), src.detach()[:, 1:]], 1).requires_grad_(True)
            grad = rand(8, 3, seed=6, dtype=dtype, requires_grad=True)
            for name, sorted_ in (("segment_reduce", True), ("scatter_reduce", False)):
                idx = index if sorted_ else index.flip(0).contiguous()
                arg = None
                if reduce in ("max", "min"):
                    arg_op = getattr(ops, f"{name}_arg").default
                    out.append((f"{name}_arg-{reduce}-{tag}", arg_op, (tied, idx, 8, reduce)))
                    arg = arg_op(tied, idx, 8, reduce)[1]
                out.append((f"{name}_backward-{reduce}-{tag}", getattr(ops, f"{name}_backward").default,
                            (grad, idx, arg, reduce)))
        X, Y = rand(9, 4, seed=3, dtype=dtype, requires_grad=True), rand(7, 4, seed=4, dtype=dtype, requires_grad=True)
        out.append((f"sddmm-{tag}", ops.sddmm.default, (A.rowptr, A.col, v, 7, X, Y)))
        out.append((f"sddmm-pattern-{tag}", ops.sddmm.default, (A.rowptr, A.col, None, 7, X, Y)))
        out.append((f"csr_attention-{tag}", ops.csr_attention.default,
                    (A.rowptr, A.col, 7, X, Y, rand(7, 2, seed=5, dtype=dtype, requires_grad=True), 0.5)))
        out.append((f"csr_transpose-{tag}", ops.csr_transpose.default, (A.rowptr, A.col, 7)))
    return out


SAMPLES = samples()


@pytest.mark.parametrize("name,op,args", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_opcheck(name, op, args):
    torch.library.opcheck(op, args)
