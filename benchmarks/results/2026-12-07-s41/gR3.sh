#!/usr/bin/env bash
# Session 41's GPU call, all in one (device time is short): the C++ build and the Python package
# built side by side, the SAGE twin, the whole suite the way users run it, then compute-sanitizer
# memcheck and racecheck on spmm.cusparse's tests and hub_split's shared plan with what time is left.
set -u
OUT=${OUT:-/tmp/gR3}; mkdir -p $OUT; B=build-gpu
nvidia-smi -L | tee $OUT/gpu.txt; git log --oneline -1 | tee $OUT/commit.txt
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
(CMAKE_BUILD_PARALLEL_LEVEL=8 timeout 300 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1; echo "python build rc $? at ${SECONDS}s" >>$OUT/pip.log) &
PB=$!
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 300 ninja -C $B -j10 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
timeout 120 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.HubSplit*:CudaSpmm.Cusparse*:CudaRowOrder*' >$OUT/test_cuda.log 2>&1
echo "test_cuda rc $? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED|tests ran" $OUT/test_cuda.log | head
wait $PB; tail -1 $OUT/pip.log
export SPARSEPORT_CACHE_DIR=$(mktemp -d)
SPARSEPORT_LOG=scheduler,cuda timeout 120 python3 examples/gnn/train_vs_pyg.py --graph products \
  --model sage --device cuda --epochs 6 --no-compile --impl sparseport,pyg-csr --json $OUT/sage.json \
  --cache-dir /tmp/gnn >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; grep -A3 "^model impl" $OUT/sage.log
grep -E "plan for|beyond the op|probe \(|\[[0-9.]+ ms: features" $OUT/sage.err | cut -c1-400
unset SPARSEPORT_CACHE_DIR
(cd $B && timeout $((575 - SECONDS)) ctest -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT|Total Test" $OUT/ctest.log | head -20
F='CudaSpmm.Cusparse*:CudaSpmm.HubSplitShares*'
for tool in memcheck racecheck; do
  [ $((585 - SECONDS)) -lt 30 ] && { echo "$tool: no time left"; continue; }
  timeout $((585 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter="$F" >$OUT/$tool.log 2>&1
  echo "$tool rc $? at ${SECONDS}s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/$tool.log | head -5
done
