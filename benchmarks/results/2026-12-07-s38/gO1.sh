#!/usr/bin/env bash
# The next session's first GPU call (written in session 38, not run): on an H200, the cuda plugin
# alone, the whole suite, the cuda oracle on the 18 shared matrices at F = 32, 64, 128 with the
# retrained cuda-sm90 (issue 35: within 5 %, the model alone, cold calls), the three big inputs at
# F = 64 (cold calls on >= 1M entries), issue 33's chunglu at F = 100, and the GPU hit.
# Run from the repository root with .device-data holding the shared matrices and widths.py.
set -u
OUT=${OUT:-/tmp/gO1}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 280 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
left=$((LIMIT - 150 - SECONDS))
(cd $B && timeout $left ctest -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed" $OUT/ctest.log; grep -E "\*\*\*Failed|\*\*\*Timeout|Exception" $OUT/ctest.log | head
CLI=$B/src/cli/sparseport
for F in 32 64 128; do timeout 25 $CLI tune --oracle --op spmm --backend cuda --F $F --reps 10 --json $(ls -Sr .device-data/*.mtx.gz) \
  >$OUT/oracle-F$F.jsonl 2>/dev/null; echo "oracle F=$F rc $? at ${SECONDS}s"; done
timeout 60 $CLI tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json rmat:20:16 chunglu:1000000:16:2.1 mesh3d:80:80:80:0 \
  >$OUT/oracle-big.jsonl 2>/dev/null; echo "oracle big rc $? at ${SECONDS}s"
timeout 45 $CLI tune --oracle --op spmm --backend cuda --F 100 --reps 10 --json chunglu:1000000:16:2.1 >$OUT/oracle-widths.jsonl 2>/dev/null
python3 .device-data/widths.py $OUT/oracle-widths.jsonl
for g in er:1000:0.01 rmat:18:16; do timeout 20 $B/tests/scheduler/cache_hit_cost --backend cuda --op spmm --processes 6 --fill 200 $g 2>&1 | tail -n 1 | cut -c1-400; done
cd $OUT && tar czf logs.tgz build.log ctest.log gpu.txt 2>/dev/null; rm -f build.log gpu.txt; echo "done at ${SECONDS}s"
