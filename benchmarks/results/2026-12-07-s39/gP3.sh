#!/usr/bin/env bash
# Session 39, GPU call 3: the Python package with the cuda plugin (offline, wheels from
# .device-data/wheels), then the products-sized GraphSAGE twin against PyG's CSR path (issue 33's
# epoch target, issue 35's first epoch), eager, 8 epochs, a cold decision cache.
set -u
OUT=${OUT:-/tmp/gP3}; mkdir -p $OUT; LIMIT=${LIMIT:-580}
nvidia-smi -L | tee $OUT/gpu.txt; git rev-parse HEAD >>$OUT/gpu.txt
python3 -c "import torch, torch_geometric; print('torch', torch.__version__, 'pyg', torch_geometric.__version__)" 2>&1 | tee -a $OUT/gpu.txt
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1; echo "pip rc $?"
CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 330 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1
echo "build rc $? at ${SECONDS}s"; tail -n 5 $OUT/pip.log
export SPARSEPORT_CACHE_DIR=$(mktemp -d)
SPARSEPORT_LOG=scheduler timeout $((LIMIT - 10 - SECONDS)) python3 examples/gnn/train_vs_pyg.py --graph products --model sage \
  --device cuda --epochs 8 --no-compile --impl sparseport,pyg-csr --json $OUT/sage.json --cache-dir /tmp/gnn \
  >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; tail -n 20 $OUT/sage.log; tail -n 5 $OUT/sage.err | cut -c1-300
