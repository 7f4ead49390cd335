#!/usr/bin/env bash
# Session 10, call 3: pytest on cuda (test_cuda.py), the backward benchmark, Nsight Compute on
# rmat:17:16 F = 32 per spmm variant.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links "$W" nanobind scikit-build-core pytest torch_geometric 2>&1 | tail -2
PIP_NO_INDEX=1 PIP_FIND_LINKS=$W SPARSEPORT_VENV=$(python3 -c 'import sys; print(sys.prefix)') SPARSEPORT_PY_CUDA=ON \
  SPARSEPORT_WERROR=OFF SPARSEPORT_PY_BUILD_DIR=$PWD/build-python/gpu timeout 260 \
  bash python/tests/run.sh -q tests/test_cuda.py >$OUT/pytest.log 2>&1
echo "pytest test_cuda.py: rc $?"; grep -E "passed|failed|FAILED" $OUT/pytest.log | tail -n 12
timeout 100 python3 benchmarks/python/bench_backward.py --device cuda --reps 10 --json $OUT/bench_backward.json \
  >$OUT/bench_backward.log 2>&1
echo "bench_backward: rc $?"; grep -A20 "^summary" $OUT/bench_backward.log
BUILD_TARGETS="sparseport_cli" TAIL=2 OUT=$OUT/check bash tests/cuda/gpu_check.sh 150 configure build >/dev/null
CLI=build-gpu/src/cli/sparseport
for v in cusparse hub_split merge_path nnz_balanced; do
  timeout 40 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section LaunchStats -k "regex:(?i)(spmm|csr|hub|merge|nnz|rows)" --launch-count 6 --csv --page details \
    $CLI run --op spmm --backend cuda --variant $v --F 32 --reps 1 -q rmat:17:16 >$OUT/ncu_$v.csv 2>$OUT/ncu_$v.err
  echo "ncu $v: rc $? $(wc -l <$OUT/ncu_$v.csv) lines"
done
