#!/usr/bin/env bash
# The new fused attention: its tests (test_cuda attention filters, conformance *Attention*), then
# attention against spmm on a cut of the suite; then spmm.hub_split's and fused attention's hub
# threshold on reddit-twin (mean degree 491) at T = 256 (default), 2048, 8192. Files under $OUT.
set -u
export PATH=$PATH:/usr/local/cuda/bin
export SPARSEPORT_DATA_DIR=${SPARSEPORT_DATA_DIR:-.device-data}
BUILD_TARGETS="test_cuda test_conformance sparseport_bench_cuda" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 300 configure build | tail -1
rm -rf $OUT/check
( timeout 120 build-gpu/tests/cuda/test_cuda --gtest_filter='CudaAttention*:CudaDeterminism.Attention*:CudaValidation.SddmmAndAttention*' >$OUT/test_cuda.log 2>&1
  echo "test_cuda: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/test_cuda.log | head -12 )
( timeout 90 build-gpu/tests/test_conformance --gtest_filter='*Attention*' >$OUT/conf.log 2>&1
  echo "conformance: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf.log | head -12 )
B=build-gpu/benchmarks/sparseport_bench_cuda
SPARSEPORT_BENCH_SIZE=full timeout 150 $B --sp_f=32,64,128,256 \
  --sp_graphs='band|er:200000|rmat:20|megarow:2000000|astro|cit-Hep|cora$|pubmed|polblogs|wiki-Vote|email|facebook|mdual|copter2|bcsstk16' \
  --benchmark_filter='^(csr_attention/cuda/csr_attention\.fused/|spmm/cuda/)' --benchmark_min_time=0.01 \
  --benchmark_out=$OUT/attn.json --benchmark_out_format=json >$OUT/attn.log 2>&1
echo "attention bench: rc $?"
python3 benchmarks/report.py $OUT/attn.json --summary --title attn 2>&1 | grep -A 80 "fused attention vs one spmm" | head -70
for t in 256 2048 8192; do
  SPARSEPORT_HUB_T=$t SPARSEPORT_BENCH_SIZE=full timeout 60 $B --sp_graphs=reddit-twin --sp_f=64,256 \
    --benchmark_filter='^(spmm/cuda/spmm\.(hub_split|cusparse)/|csr_attention/cuda/csr_attention\.fused/)' \
    --benchmark_min_time=0.01 --benchmark_out=$OUT/hubt$t.json --benchmark_out_format=json >/dev/null 2>&1
  echo "HUB_T=$t: rc $?"
  python3 - $OUT/hubt$t.json <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if "median_ms" in b: print("  ", b["name"], round(b["median_ms"], 3), "ms")
PY
done
