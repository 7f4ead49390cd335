#!/usr/bin/env bash
# Session 25, call A: main on a GPU. Build (cuda plugin + CPU plugins found there), every test under
# ctest -j8 (long label and MPI left out), memcheck over the validation and scheduler tests of
# test_cuda, then the mini-batch loop with its control.
set -u
OUT=${OUT:-/tmp/gA}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L; echo "commit $(git rev-parse --short HEAD 2>/dev/null)"
t0=$SECONDS
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF >$OUT/build.log 2>&1
timeout 260 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head -20
timeout 240 ctest --test-dir $B -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1
echo "ctest rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)|Timeout|\*\*\*" $OUT/ctest.log | head -30
SAN_FILTER='CudaValidation*:CudaSummary*:CudaSpmm.HubSplit*' SAN_SHARDS=8 SAN_TIMEOUT=120 OUT=$OUT bash tests/cuda/gpu_check.sh 130 memcheck 2>&1 | grep -v "^GPU" | tail -8
echo "memcheck done at ${SECONDS}s"
MB=$B/tests/scheduler/minibatch_decisions
timeout 60 $MB --backend cuda --batches 300 >$OUT/mb-auto.log 2>&1; echo "mb auto rc $?"; tail -n 25 $OUT/mb-auto.log
timeout 40 $MB --backend cuda --batches 300 --variant spmm.row_warp_vec4 >$OUT/mb-ctl.log 2>&1; echo "mb ctl rc $?"; tail -n 12 $OUT/mb-ctl.log
SPARSEPORT_LOG=scheduler timeout 40 $MB --backend cuda --batches 40 >$OUT/mb-log.out 2>$OUT/mb-log.err; echo "mb log rc $?"; grep "class ->" $OUT/mb-log.err | tail -n 6 | sed 's/.*(\(.\{0,60\}\).*\[/... [/'
echo "done at ${SECONDS}s"
