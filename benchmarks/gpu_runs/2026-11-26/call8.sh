#!/usr/bin/env bash
# After the bench_cuda prepare-step merge: the slice rows (checked against the host) and a small
# spmm/sddmm set (gross check against the baseline) still run and verify.
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="sparseport_bench_cuda" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 250 configure build | tail -1
rm -rf $OUT/check
B=build-gpu/benchmarks/sparseport_bench_cuda
SPARSEPORT_BENCH_SIZE=full timeout 120 $B --sp_graphs='slice-report|probe-slice:rmat' --benchmark_min_time=0.01 2>&1 | grep -E "slice|ERROR" | head
timeout 60 $B --sp_graphs='rmat|er' --sp_f=32 --benchmark_filter='^(spmm|sddmm)/' --benchmark_min_time=0.01 2>&1 | grep -cE "manual_time +[0-9]"
timeout 60 $B --sp_graphs='rmat|er' --sp_f=32 --benchmark_filter='^(spmm|sddmm)/' --benchmark_min_time=0.01 2>&1 | grep -E "wrong|error:" | head -3
