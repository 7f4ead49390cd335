#!/usr/bin/env bash
# Session 38, call 4 (warm machine): the cuda oracle on the 18 shared matrices at F = 32, 64, 128 with
# the shipped cuda-sm90 model and with gN3's (spmm retrained with every variant's trees), same binary.
set -u
OUT=${OUT:-/tmp/gN4}; mkdir -p $OUT; B=build-gpu
mkdir -p /tmp/mnew && cp scheduler/models/*.json /tmp/mnew/ && cp .device-data/cuda-sm90-new.json /tmp/mnew/cuda-sm90.json
M=$(ls -Sr .device-data/*.mtx.gz)
for F in 32 64 128; do
  for arm in shipped new; do
    if [ $arm = new ]; then export SPARSEPORT_MODEL_DIR=/tmp/mnew; else unset SPARSEPORT_MODEL_DIR; fi
    timeout 30 $B/src/cli/sparseport tune --oracle --op spmm --backend cuda --F $F --reps 10 --json $M > $OUT/oracle-$arm-F$F.jsonl 2>/dev/null
    echo "$arm F=$F rc $? at ${SECONDS}s"
  done
done
