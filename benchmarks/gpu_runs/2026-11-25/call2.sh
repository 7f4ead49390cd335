#!/usr/bin/env bash
# Session 10, call 2: the Python package on cuda (pytest), the backward benchmark, GraphSAGE on the
# products-sized twin.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
OUT=$OUT timeout 300 bash python/tests/gpu_run.sh python
BENCH_TIMEOUT=${BENCH_TIMEOUT:-100} EXAMPLE_TIMEOUT=${EXAMPLE_TIMEOUT:-150} RUNS="${RUNS:-products:sage:10}" OUT=$OUT \
  bash python/tests/gpu_run.sh bench
