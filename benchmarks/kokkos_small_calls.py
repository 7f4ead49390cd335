#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The summary of benchmarks/kokkos_small_calls.sh: per block of its ncu.csv ("## matrix F=.. backend
variant" then Nsight Compute's CSV), each kernel of the op (Kokkos's start-up kernels, the CLI's
reference and conversions left out) with its calls, median duration, grid x block, registers and
the share of the SMs' warp slots it kept active. Standard library only.

    kokkos_small_calls.py NCU_CSV
"""
import csv
import io
import statistics
import sys

# Kernels that are not the op's: Kokkos's initialisation and the CLI's own work around the op.
# The CLI times the backend's vendor too (Kokkos Kernels' spmv, cuSPARSE) and fills its operands
# (Kokkos ViewFill, the cuda plugin's fill and csr kernels); hub_split's plan build (two scans) runs
# once and stays in.
NOT_THE_OP = ("query_cuda_kernel_arch", "init_lock_array", "convert_kernel", "KokkosSparse::", "ViewFill<",
              "ViewCopy<", "csr_kernel<", "matrix_scalar_multiply", "csr_partition", "csrmm", "do_nnz_count",
              "do_ia_perm", "do_reorder")


def blocks(path):
    out, cur = {}, None
    for line in open(path):
        if line.startswith("## "):
            cur = line[3:].strip()
            out[cur] = []
        elif cur and line.startswith('"'):
            out[cur].append(line)
    return out


def summary(name, lines):
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
        k = d["kernel"]
        if any(x in k for x in NOT_THE_OP):
            continue
        per.setdefault(k, []).append(d)
    out = [name]
    # The Kokkos kernels' names are long template types: the functor's own function names them.
    for k, ds in sorted(per.items(), key=lambda x: -statistics.median(float(d["gpu__time_duration.sum"]) for d in x[1])):
        t = statistics.median(float(d["gpu__time_duration.sum"]) for d in ds) / 1e3
        d = ds[-1]
        short = k.split("(")[0]
        for tag in ("hub_split_groups_device", "hub_split_device", "team_rows_device", "build_hubs",
                    "spmm_hub_kernel", "hub_split_op", "team_rows", "fill_kernel"):
            if tag in k:
                short = tag
                break
        out.append(f"  {len(ds):2d} x {t:8.2f} us  grid {d.get('launch__grid_size', '?'):>6} x {d.get('launch__block_size', '?'):>4}"
                   f"  regs {d.get('launch__registers_per_thread', '?'):>3}"
                   f"  warps active {float(d.get('sm__warps_active.avg.pct_of_peak_sustained_active', 'nan')):5.1f} %  {short[:60]}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for name, lines in blocks(argv[1]).items():
        print("\n".join(summary(name, lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
