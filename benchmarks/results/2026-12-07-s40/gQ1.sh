#!/usr/bin/env bash
# The next session's first GPU call (written in session 39, not run), from a tree with branch
# cusparse-gpu-canonical (the canonical-CSR check on the GPU, the plan note's phase times):
#  1. build; test_cuda's CudaSpmm tests (CusparseTriesAlg3OnlyOnCanonicalRows among them);
#  2. cuda_timing's first calls of spmm.cusparse and hub_split at F = 47 and 256 on a
#     products-sized Chung-Lu graph, with the cuSPARSE plan notes (canonical check, each
#     algorithm's start: buffer, preprocessing, warm-up);
#  3. the Python package and the SAGE twin, 6 epochs, --profile 15 (where a steady epoch goes) and
#     the scheduler's and cuSPARSE's logs (where the first epoch goes).
# The whole suite then needs a second call: (cd build-gpu && ctest -j8 --timeout 150 -LE "long|mpi").
# Run from the repository root with .device-data holding the shared matrices and wheels/.
set -u
OUT=${OUT:-/tmp/gQ1}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt; git log --oneline -1 >>$OUT/gpu.txt; git status --short >>$OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 200 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
SPARSEPORT_LOG=cuda timeout 60 $B/tests/cuda/cuda_timing --spmm --only spmm.cusparse,spmm.hub_split --F 47,256 \
  chunglu:2449029:25:2.1 >$OUT/timing.txt 2>&1; echo "timing rc $? at ${SECONDS}s"; grep -E "^spmm|plan for" $OUT/timing.txt | cut -c1-300
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 200 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1
echo "python build rc $? at ${SECONDS}s"
export SPARSEPORT_CACHE_DIR=$(mktemp -d)
SPARSEPORT_LOG=scheduler,cuda timeout $((LIMIT - 10 - SECONDS)) python3 examples/gnn/train_vs_pyg.py --graph products \
  --model sage --device cuda --epochs 6 --no-compile --impl sparseport,pyg-csr --profile 15 --json $OUT/sage.json \
  --cache-dir /tmp/gnn >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; tail -n 45 $OUT/sage.log
grep -E "plan for|beyond the op|probe \(" $OUT/sage.err | cut -c1-300
