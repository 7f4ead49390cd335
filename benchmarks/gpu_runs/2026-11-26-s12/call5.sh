#!/usr/bin/env bash
# Issue 21: the Python package on the GPU machine's torch 2.11 (install with the cuda plugin, pytest
# incl. test_values16.py and the CUDA tests), then GraphSAGE-mean and GAT on the 200k twin under
# torch.autocast(bf16) against our float32 epoch and PyG under the same autocast.
set -u
export PATH=$PATH:/usr/local/cuda/bin
timeout 330 bash python/tests/gpu_run.sh python
AUTOCAST=bf16 RUNS="200k:both:10" EXAMPLE_TIMEOUT=220 BENCH_TIMEOUT=1 timeout 240 bash python/tests/gpu_run.sh bench
