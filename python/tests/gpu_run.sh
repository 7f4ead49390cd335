#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine's part of the Python package's checks (issue 15), one device call each:
#   python/tests/gpu_run.sh cpp      build-gpu: test_cuda + test_conformance, run the backward,
#                                    stream and allocator tests and the conformance suite
#   python/tests/gpu_run.sh python   install ./python with the cuda plugin into the machine's torch
#                                    (offline, wheels from .device-data/wheels) and run pytest on
#                                    the CUDA, ops and autograd tests
#   python/tests/gpu_run.sh bench    the backward-op benchmark and the GNN examples against PyG
#                                    (AUTOCAST=bf16 or f16: train_vs_pyg.py --autocast too)
# Logs and JSON go to $OUT (default /tmp/sparseport-py-gpu).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/sparseport-py-gpu}
mkdir -p "$OUT"
W=$PWD/.device-data/wheels
P=$(python3 -c 'import sys; print(sys.prefix)')
for what in "$@"; do
  case $what in
    cpp)
      BUILD_TARGETS="test_cuda test_conformance" TAIL=3 bash tests/cuda/gpu_check.sh 420 configure build
      ( cd build-gpu/tests
        ./cuda/test_cuda --gtest_filter='CudaSpmmArg*:CudaTransposePerm*:CudaExternal*' >"$OUT/cuda_new.log" 2>&1
        echo "test_cuda (arg, backward, external): rc $?"; tail -n 3 "$OUT/cuda_new.log"
        timeout 200 ./test_conformance >"$OUT/conformance.log" 2>&1
        echo "test_conformance: rc $?"; grep -E "^\[  (PASSED|FAILED) |targets" "$OUT/conformance.log" | head -20 ) ;;
    python)
      python3 -m pip install -q --no-index --find-links "$W" nanobind scikit-build-core pytest torch_geometric 2>&1 | tail -2
      PIP_NO_INDEX=1 PIP_FIND_LINKS=$W SPARSEPORT_VENV=$P SPARSEPORT_PY_CUDA=ON SPARSEPORT_WERROR=OFF \
        SPARSEPORT_PY_BUILD_DIR=$PWD/build-python/gpu \
        bash python/tests/run.sh -q tests/test_cuda.py tests/test_ops.py tests/test_autograd.py tests/test_compile.py tests/test_values16.py \
        >"$OUT/pytest.log" 2>&1
      echo "pytest: rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/pytest.log" | tail -n 25 ;;
    bench)
      timeout "${BENCH_TIMEOUT:-150}" python3 benchmarks/python/bench_backward.py --device cuda --reps 10 \
        --json "$OUT/bench_backward.json" >"$OUT/bench_backward.log" 2>&1
      echo "bench_backward: rc $?"; tail -n 45 "$OUT/bench_backward.log"
      for spec in ${RUNS:-200k:both:20 products:sage:10}; do
        IFS=: read -r g model epochs <<<"$spec"
        timeout "${EXAMPLE_TIMEOUT:-200}" python3 examples/gnn/train_vs_pyg.py --graph "$g" --device cuda \
          --model "$model" --epochs "$epochs" --cache-dir /tmp/gnn $([ "$g" = products ] && echo --no-compile) \
          ${AUTOCAST:+--autocast "$AUTOCAST"} --json "$OUT/train_${g}_$model.json" \
          >"$OUT/train_${g}_$model.log" 2>&1
        echo "train_vs_pyg $g $model: rc $?"; tail -n 25 "$OUT/train_${g}_$model.log"
      done ;;
  esac
done
