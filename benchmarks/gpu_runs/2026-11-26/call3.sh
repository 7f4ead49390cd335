#!/usr/bin/env bash
# The GNN-scale twins (products-twin, reddit-twin) and the csr_slice_rows workloads of the CUDA
# suite (full size, their groups only), with the operand cap raised so that segment_reduce at
# F = 256 (128 GB of messages on products-twin) fits the H200. Run from the tree to measure.
set -u
COMMIT=${COMMIT:-unknown} SPARSEPORT_BENCH_MAX_GB=135 BENCH_ARGS='--sp_graphs=twin|slice' \
  bash benchmarks/run_gpu.sh 580 2>&1 | tail -n 120
