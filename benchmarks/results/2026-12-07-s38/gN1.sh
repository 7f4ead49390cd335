#!/usr/bin/env bash
# Session 38, call 1: the cuda plugin alone (everything else off but the serial reference), the whole
# suite on this tree (ctest -j8, as users run it), then issue 33's "hub_split at every width" (every
# spmm variant at full size at F = 47, 100, 64 on two generated power-law graphs of >= 1M entries)
# and issue 35's GPU hit and mini-batch.
set -u
OUT=${OUT:-/tmp/gN1}; mkdir -p $OUT
B=build-gpu; LIMIT=${LIMIT:-590}
nvidia-smi -L | tee $OUT/gpu.txt; git rev-parse HEAD 2>/dev/null | tee -a $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 280 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
left=$((LIMIT - 130 - SECONDS))
(cd $B && timeout $left ctest -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|Total Test" $OUT/ctest.log; grep -E "\*\*\*Failed|\*\*\*Timeout|Exception|Not Run" $OUT/ctest.log | head -20
CLI=$B/src/cli/sparseport
for W in 47 100 64; do
  timeout 35 $CLI tune --oracle --op spmm --backend cuda --F $W --reps 10 --json rmat:20:16 chunglu:1000000:16:2.1 \
    >>$OUT/oracle-widths.jsonl 2>>$OUT/oracle.err.log; echo "F=$W rc $? at ${SECONDS}s"
done
python3 .device-data/widths.py $OUT/oracle-widths.jsonl
for g in er:1000:0.01 rmat:18:16; do timeout 20 $B/tests/scheduler/cache_hit_cost --backend cuda --op spmm --processes 6 --fill 200 $g 2>&1 | tail -n 1 | cut -c1-400; done
left=$((LIMIT - 5 - SECONDS)); [ $left -gt 10 ] && timeout $left $B/tests/scheduler/minibatch_decisions --backend cuda --batches 1000 2>&1 | tail -n 12
cd $OUT && tar czf logs.tgz build.log ctest.log oracle.err.log gpu.txt 2>/dev/null; rm -f build.log oracle.err.log gpu.txt; echo "done at ${SECONDS}s"
