#!/usr/bin/env bash
# Session 35, after gK4.sh on the same warm machine: the kokkos oracle over the 18 shared matrices x
# F = 32, 64, 128 with the model gK4.sh trained (scheduler/models/kokkos-sm90.json in the tree sent,
# read at run time through SPARSEPORT_MODEL_DIR: no rebuild).
set -u
OUT=${OUT:-/tmp/gK5}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
nvidia-smi -L | tee $OUT/gpu.txt
for run in ${RUNS:-1}; do
  SPARSEPORT_MODEL_DIR=$PWD/scheduler/models BUDGET=${BUDGET:-130} STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o$run >/dev/null 2>&1
  echo "oracle $run done at ${SECONDS}s"; tail -n 3 $OUT/o$run/oracle.err.log
done
