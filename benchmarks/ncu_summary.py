#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The summary of an ncu.csv written by benchmarks/tc_small_calls.sh or kokkos_small_calls.sh: per
block ("## label" then Nsight Compute's CSV), each kernel with its calls and median duration, and,
where the profile has them, grid x block, registers and the share of the SMs' warp slots it kept
active, and the median of any other metric profiled (NCU_METRICS); the most total time first. With --op-only, the kernels that are not the op's are left out (Kokkos's
start-up kernels, the CLI's operand fills and conversions, the vendor's kernels that `sparseport run`
times beside the op). Standard library only.

    ncu_summary.py [--op-only] NCU_CSV
"""
import csv
import io
import statistics
import sys

# The CLI times the backend's vendor too (Kokkos Kernels' spmv, cuSPARSE) and fills its operands
# (Kokkos ViewFill, the cuda plugin's fill and csr kernels); hub_split's plan build (two scans) runs
# once and stays in.
NOT_THE_OP = ("query_cuda_kernel_arch", "init_lock_array", "convert_kernel", "KokkosSparse::", "ViewFill<",
              "ViewCopy<", "csr_kernel<", "matrix_scalar_multiply", "csr_partition", "csrmm", "do_nnz_count",
              "do_ia_perm", "do_reorder")
# The Kokkos kernels' names are long template types: the function that made the functor names them.
SHORT_NAMES = ("hub_split_groups_device", "hub_split_device", "team_rows_device", "build_hubs", "spmm_hub_kernel",
               "hub_split_op", "team_rows", "fill_kernel")


# The metrics printed in their own columns; any other one is printed as NAME MEDIAN after the name.
KNOWN = ("kernel", "gpu__time_duration.sum", "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
         "sm__warps_active.avg.pct_of_peak_sustained_active")


def blocks(path):
    out, cur = {}, None
    for line in open(path):
        if line.startswith("## "):
            cur = line[3:].strip()
            out[cur] = []
        elif cur and line.startswith('"'):
            out[cur].append(line)
    return out


def summary(name, lines, op_only):
    rows = list(csv.reader(io.StringIO("".join(lines))))
    if len(rows) < 2:
        return [f"{name}: no kernels profiled"]
    h = rows[0]
    ki, mi, vi, ii = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("ID")
    launches = {}
    for r in rows[1:]:
        launches.setdefault(r[ii], {"kernel": r[ki]})[r[mi]] = r[vi].replace(",", "")
    per = {}
    for d in launches.values():
        if not (op_only and any(x in d["kernel"] for x in NOT_THE_OP)):
            per.setdefault(d["kernel"], []).append(d)
    med = lambda ds: statistics.median(float(d["gpu__time_duration.sum"]) for d in ds) / 1e3
    out = [name]
    for k, ds in sorted(per.items(), key=lambda x: -sum(float(d["gpu__time_duration.sum"]) for d in x[1])):
        d = ds[-1]
        short = next((tag for tag in SHORT_NAMES if tag in k), k)
        shape = ""
        if "launch__grid_size" in d:
            shape = (f"  grid {d['launch__grid_size']:>6} x {d.get('launch__block_size', '?'):>4}"
                     f"  regs {d.get('launch__registers_per_thread', '?'):>3}  warps active"
                     f" {float(d.get('sm__warps_active.avg.pct_of_peak_sustained_active', 'nan')):5.1f} %")
        extra = "".join(f"  {m} {statistics.median(float(x[m]) for x in ds if m in x):.4g}"
                        for m in sorted(d) if m not in KNOWN)
        out.append(f"  {len(ds):3d} x {med(ds):8.2f} us{shape}  {short[:60]}{extra}")
    return out


def main(argv):
    args = argv[1:]
    op_only = "--op-only" in args
    args = [a for a in args if a != "--op-only"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for name, lines in blocks(args[0]).items():
        print("\n".join(summary(name, lines, op_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
