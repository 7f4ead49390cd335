#!/usr/bin/env bash
# After gK1.sh and the CPU training: rebuild with the new scheduler/models/kokkos-sm90.json
# (embedded at build time), then the kokkos oracle over the 18 shared matrices x F = 32, 64, 128
# (the scheduler and the model alone, which never saw them).
set -u
OUT=${OUT:-/tmp/gK2}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
nvidia-smi -L | tee $OUT/gpu.txt
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
echo "built at ${SECONDS}s"
for run in 1 2; do
  BUDGET=120 STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o$run >/dev/null 2>&1
  echo "oracle $run done at ${SECONDS}s"
done
cd $OUT && tar czf logs.tgz b 2>/dev/null; rm -rf b; echo "done at ${SECONDS}s"
