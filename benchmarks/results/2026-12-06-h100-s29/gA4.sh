#!/usr/bin/env bash
# Session 29, call 3 (issue 36), on call 2's warm machine (its build): the whole suite under
# ctest -j8 in the Kokkos-CUDA build (both plugins), long and MPI tests left out.
set -u
OUT=${OUT:-/tmp/gA4}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
nvidia-smi -L
[ -x $B/src/cli/sparseport ] || { echo "no build: the machine is not call 2's"; exit 3; }
timeout 60 cmake --build $B --parallel 16 >$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
timeout $((590 - SECONDS)) ctest --test-dir $B -j8 --timeout 200 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*Exception|Total Test time" $OUT/ctest.log | head -30
echo "finished: $(grep -cE '^ *[0-9]+/[0-9]+ Test' $OUT/ctest.log) of $(ctest --test-dir $B -N -LE 'long|mpi' | tail -n 1)"
cd $OUT && gzip ctest.log; echo "done at ${SECONDS}s"
