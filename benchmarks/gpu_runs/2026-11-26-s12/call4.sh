#!/usr/bin/env bash
# Issue 21: sparseport_bench_values16 over the suite's inputs (megarow left out: call 2 ended in a
# device fault on it at bf16 F = 256, see the results file), F = 32..256. Run from the root of the
# tree (the lead runs it inside a `git archive` of the commit).
set -u
export PATH=$PATH:/usr/local/cuda/bin
data=${SPARSEPORT_DATA_DIR:-$PWD/.device-data}
BUILD_TARGETS="sparseport_bench_values16" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
SPARSEPORT_DATA_DIR=$data timeout 390 build-gpu/benchmarks/sparseport_bench_values16 --F 32,64,128,256 \
  --min-calls 10 --min-ms 5 --deadline 370 --graphs '^(?!megarow)' --out $OUT/values16 >$OUT/bench16.log 2>&1
echo "bench_values16: rc $?"; sed -n '/## Summary/,/## spmm per input/p' $OUT/values16.md | head -30
