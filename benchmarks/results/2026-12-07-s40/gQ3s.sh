#!/usr/bin/env bash
# The short form of gQ3.sh (if the device time left cannot hold the whole suite): build, the tests
# of the changed code, the Python package, the SAGE twin.
set -u
OUT=${OUT:-/tmp/gQ3s}; mkdir -p $OUT; B=build-gpu
nvidia-smi -L | tee $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 220 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
(CMAKE_BUILD_PARALLEL_LEVEL=12 timeout 250 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1; echo "python build rc $? at ${SECONDS}s" >>$OUT/pip.log) &
PB=$!
timeout 120 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.Cusparse*:CudaRowOrder*:CudaSpmm.HubSplit*:CudaSpmm.Every*' >$OUT/test_cuda.log 2>&1
echo "test_cuda rc $? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED" $OUT/test_cuda.log | head
wait $PB; tail -1 $OUT/pip.log
export SPARSEPORT_CACHE_DIR=$(mktemp -d)
SPARSEPORT_LOG=scheduler,cuda timeout 100 python3 examples/gnn/train_vs_pyg.py --graph products \
  --model sage --device cuda --epochs 6 --no-compile --impl sparseport,pyg-csr --json $OUT/sage.json \
  --cache-dir /tmp/gnn >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; grep -A3 "^model impl" $OUT/sage.log
grep -E "plan for|beyond the op|probe \(|\[[0-9.]+ ms: features" $OUT/sage.err | cut -c1-400
LIMIT=${LIMIT:-360}
for S in mesh3d:120:120:120:0 rmat:20:16; do for arm in 1 0; do
  [ $((LIMIT - SECONDS)) -lt 20 ] && break 2
  SPARSEPORT_CUSPARSE_SAMPLE=$arm SPARSEPORT_LOG=cuda timeout $((LIMIT - 3 - SECONDS)) $B/tests/cuda/cuda_timing --spmm --only spmm.cusparse \
    --F 64 $S >$OUT/timing-$S-$arm.txt 2>&1; echo "timing $S sample=$arm rc $? at ${SECONDS}s"
  grep -E "^spmm|plan for" $OUT/timing-$S-$arm.txt | cut -c1-420
done; done
