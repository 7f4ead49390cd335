#!/usr/bin/env bash
# Session 40's second GPU call, on the warm machine after gQ1.sh (build-gpu kept): the whole suite
# the way users run it, then compute-sanitizer memcheck and racecheck on hub_split's tests and the
# cuSPARSE canonical-check test.
set -u
OUT=${OUT:-/tmp/gQ2}; mkdir -p $OUT; B=build-gpu
nvidia-smi -L | tee $OUT/gpu.txt
[ -x $B/tests/cuda/test_cuda ] || { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPARSEPORT_ENABLE_KOKKOS=OFF -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1; timeout 200 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; }
(cd $B && timeout 330 ctest -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT" $OUT/ctest.log | head -20
F='CudaSpmm.HubSplit*:CudaSpmm.CusparseTriesAlg3OnlyOnCanonicalRows'
for tool in memcheck racecheck; do
  timeout $((585 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter="$F" >$OUT/$tool.log 2>&1
  echo "$tool rc $? at ${SECONDS}s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/$tool.log | head -5
done
