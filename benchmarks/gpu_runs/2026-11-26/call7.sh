#!/usr/bin/env bash
# The suite of record (benchmarks/run_gpu.sh: every op and variant on the generated graphs and the
# real matrices of .device-data, F = 32..256, without the twin and slice groups, which call 3 ran),
# then the SpMV / F = 4 and 16 rows on the same inputs and the conjugate-gradient run.
set -u
export PATH=$PATH:/usr/local/cuda/bin
export SPARSEPORT_DATA_DIR=${SPARSEPORT_DATA_DIR:-.device-data}
COMMIT=${COMMIT:-unknown} BENCH_ARGS='--sp_graphs=^(?!.*(twin|slice))' bash benchmarks/run_gpu.sh 330 >$OUT/suite.log 2>&1
echo "suite: rc $?"; grep -A 12 "^## Best variant per input" $OUT/suite.log | head -16
B=build/cuda-bench/benchmarks/sparseport_bench_cuda
SPARSEPORT_BENCH_SIZE=full timeout 150 $B --sp_graphs='^(?!.*(twin|slice))' \
  --benchmark_filter='^spmv/|^spmm/cuda/[^/]+/[^/]+/(4|16)/' --benchmark_min_time=0.01 \
  --benchmark_out=$OUT/spmv.json --benchmark_out_format=json >$OUT/spmv.log 2>&1
echo "spmv group: rc $?"
python3 benchmarks/report.py $OUT/spmv.json --summary --title spmv 2>&1 | grep -A 10 "^## Best variant per input" | head -12
cmake --build build/cuda-bench --target sparseport_bench_cg -j 16 >/dev/null 2>&1 && {
  timeout 40 build/cuda-bench/benchmarks/sparseport_bench_cg --backend=cuda --n=2000 --iters=200 2>&1 | tail -12
  timeout 30 build/cuda-bench/benchmarks/sparseport_bench_cg --backend=cuda --n=2000 --iters=200 --f32 2>&1 | tail -8; }
