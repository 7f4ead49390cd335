#!/usr/bin/env bash
# Session 42's lean GPU call (device time nearly spent by failed starts): cusparse_start.cu first
# (a cuSPARSE plan's start step by step), then, if the Python package builds in time, one SAGE twin
# run of ours alone with its first epoch under torch.profiler (--profile-first).
set -u
OUT=${OUT:-/tmp/gS3}; mkdir -p $OUT; LIMIT=${LIMIT:-280}
nvidia-smi -L; W=$PWD/.device-data/wheels; S=benchmarks/results/2026-12-07-s42
nvcc -O2 -arch=sm_90 $S/cusparse_start.cu -lcusparse -o /tmp/cs && { /tmp/cs; echo "-- eager"; CUDA_MODULE_LOADING=EAGER /tmp/cs | head -3; }
echo "micro at ${SECONDS}s"
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
CMAKE_BUILD_PARALLEL_LEVEL=16 timeout $((LIMIT - 75 - SECONDS)) python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1; rc=$?; echo "python build rc $rc at ${SECONDS}s"
[ $rc = 0 ] || exit 0
SPARSEPORT_CACHE_DIR=$(mktemp -d) SPARSEPORT_LOG=scheduler,cuda timeout $((LIMIT - SECONDS)) python3 examples/gnn/train_vs_pyg.py \
  --graph products --model sage --device cuda --epochs 4 --no-compile --no-stats --impl sparseport --profile-first 30 \
  --json $OUT/sage.json --cache-dir /tmp/gnn >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; grep -A2 "^model impl" $OUT/sage.log
sed -n '/the first epoch (profiled/,/^$/p' $OUT/sage.log | cut -c1-170
grep -E "beyond the op|probe \(|class ->|checked at full|plan for" $OUT/sage.err | cut -c1-240
