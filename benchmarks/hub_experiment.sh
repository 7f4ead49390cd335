#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sweep behind spmm.hub_split's small-input threshold and item size (kernels/cuda/spmm_hub.cu):
# on the GPU machine, hub_split and cuSPARSE at F = 64 and 256 for every (SPARSEPORT_HUB_T,
# SPARSEPORT_HUB_CHUNK) pair, one JSON per pair under $OUT. Needs .device-data/ (see README.md).
set -u
OUT=${OUT:-/tmp/hub-experiment}
mkdir -p "$OUT"
B=build/cuda-bench
cmake --preset cuda -B $B -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_BUILD_TESTS=OFF -DSPARSEPORT_BUILD_CLI=OFF >/dev/null 2>&1 || exit 1
cmake --build $B --target sparseport_bench_cuda -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
for T in 256 64 32; do
  for CH in 2048 512 128; do
    SPARSEPORT_HUB_T=$T SPARSEPORT_HUB_CHUNK=$CH SPARSEPORT_BENCH_SIZE=full SPARSEPORT_DATA_DIR=.device-data \
      $B/benchmarks/sparseport_bench_cuda --sp_f=64,256 --sp_graphs='^(er:200000|rmat:20|megarow|band|[A-Za-z0-9-]+$)' \
      --benchmark_filter='^spmm/cuda/spmm.(hub_split|cusparse)/' --benchmark_min_time=0.01 \
      --benchmark_out="$OUT/hub_T${T}_C${CH}.json" --benchmark_out_format=json >"$OUT/hub_T${T}_C${CH}.log" 2>&1
    echo "T=$T CH=$CH rc=$? at ${SECONDS}s"
  done
done
