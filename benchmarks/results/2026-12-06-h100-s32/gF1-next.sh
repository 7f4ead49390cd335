#!/usr/bin/env bash
# For the next session, call 1 (issue 36; main after session 32, with the kokkos row order): build,
# then the whole suite the way users run it (ctest -j8, long and MPI tests left out), which no GPU has
# run on this tree (session 32 ran the kokkos tests, the spmm conformance and CudaRowOrder: 89 / 89).
# About 520 s on an H100 (build ~250 s, suite ~260 s).
set -u
OUT=${OUT:-/tmp/gF1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
timeout $((585 - SECONDS)) ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout" $OUT/ctest.log | head
cd $OUT && tar czf logs.tgz b ctest.log; rm -rf b ctest.log; echo "done at ${SECONDS}s"
