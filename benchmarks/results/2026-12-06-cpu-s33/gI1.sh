#!/usr/bin/env bash
# Session 33, the last 374 s of device time: the cuda plugin alone (no Kokkos), test_conformance only,
# then its 16-bit tests (the attention backward's new subnormal floor, 2b15d9f) on every backend of
# the build, the cuda plugin's included, then what time is left of the rest of it.
set -u
OUT=${OUT:-/tmp/gI1}; mkdir -p $OUT
B=build-gpu
LIMIT=${LIMIT:-250}
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
echo "configured rc $? at ${SECONDS}s"
timeout $((LIMIT - 40 - SECONDS)) ninja -C $B -j16 test_conformance >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
timeout $((LIMIT - 25 - SECONDS)) $B/tests/test_conformance --gtest_brief=1 --gtest_filter='*Values16Conformance*' >$OUT/v16.log 2>&1
echo "values16 rc $? at ${SECONDS}s"; tail -n 4 $OUT/v16.log
timeout $((LIMIT - 5 - SECONDS)) $B/tests/test_conformance --gtest_brief=1 --gtest_filter='-*Values16Conformance*' >$OUT/rest.log 2>&1
echo "rest rc $? at ${SECONDS}s"; tail -n 4 $OUT/rest.log
cd $OUT && tar czf logs.tgz build.log v16.log rest.log; rm -f build.log v16.log rest.log
