#!/usr/bin/env bash
# Session 40's third GPU call: the tree with (a) spmm.cusparse's ALG2/ALG3 race on a sample of A's
# rows from 4M entries, (b) hub_split's plan listing in one pass (row_order), (c) the probe's early
# cut of beaten variants. Build; the whole suite (ctest -j8) while the Python package builds; then
# on a quiet GPU: cuSPARSE first calls with the sample and without (SPARSEPORT_CUSPARSE_SAMPLE=0),
# and the SAGE twin with the scheduler's log.
set -u
OUT=${OUT:-/tmp/gQ3}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-590}
nvidia-smi -L | tee $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 220 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
(cd $B && timeout 330 ctest -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1; echo "ctest rc $? at ${SECONDS}s" >>$OUT/ctest.log) &
CT=$!
W=$PWD/.device-data/wheels
python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
CMAKE_BUILD_PARALLEL_LEVEL=8 timeout 250 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1
echo "python build rc $? at ${SECONDS}s"
wait $CT; tail -1 $OUT/ctest.log; grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT" $OUT/ctest.log | head -20
export SPARSEPORT_CACHE_DIR=$(mktemp -d)
SPARSEPORT_LOG=scheduler,cuda timeout 100 python3 examples/gnn/train_vs_pyg.py --graph products \
  --model sage --device cuda --epochs 6 --no-compile --impl sparseport,pyg-csr --json $OUT/sage.json \
  --cache-dir /tmp/gnn >$OUT/sage.log 2>$OUT/sage.err
echo "sage rc $? at ${SECONDS}s"; grep -A3 "^model impl" $OUT/sage.log
grep -E "plan for|beyond the op|probe \(|\[[0-9.]+ ms: features" $OUT/sage.err | cut -c1-400
for S in chunglu:2449029:25:2.1 rmat:20:16 mesh3d:120:120:120:0 band:2000000:8; do for arm in 1 0; do
  FS=64; [ $S = chunglu:2449029:25:2.1 ] && FS=47,256
  [ $((LIMIT - SECONDS)) -lt 25 ] && break 2
  SPARSEPORT_CUSPARSE_SAMPLE=$arm SPARSEPORT_LOG=cuda timeout $((LIMIT - 5 - SECONDS)) $B/tests/cuda/cuda_timing --spmm --only spmm.cusparse \
    --F $FS $S >$OUT/timing-$S-$arm.txt 2>&1; echo "timing $S sample=$arm rc $? at ${SECONDS}s"
  grep -E "^spmm|plan for" $OUT/timing-$S-$arm.txt | cut -c1-420
done; done
