#!/usr/bin/env bash
# Session 39, GPU call 1: the cuda plugin alone; hub_split's strided columns (issue 33, item 4)
# checked (the CudaSpmm, CudaValues16 and CudaDeterminism tests) and timed against the scalar lanes
# they replace (SPARSEPORT_HUB_STRIDED=0), cuSPARSE (printed by `sparseport run` beside each) and
# hub_split at the next aligned width; then the whole suite. Run from the repository root with
# .device-data holding the shared matrices.
set -u
OUT=${OUT:-/tmp/gP1}; mkdir -p $OUT; B=build-gpu; LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt; git rev-parse HEAD >>$OUT/gpu.txt; git status --short >>$OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout 300 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" $OUT/build.log | head
(cd $B && timeout 150 ctest -j8 --timeout 140 -R "CudaSpmm|CudaValues16|CudaDeterminism" --output-on-failure >$OUT/ctest-hub.log 2>&1)
echo "ctest (hub) rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed" $OUT/ctest-hub.log; grep -E "\*\*\*Failed|Timeout|Failure" $OUT/ctest-hub.log | head
CLI=$B/src/cli/sparseport
run() { timeout 40 "$@" 2>>$OUT/run.err; }
# rmat:20:16 and chunglu at every strided shape and 47 against 48; the two largest shared matrices at 47.
for g in rmat:20:16 chunglu:1000000:16:2.1; do
  for F in 47 41 71 130; do
    echo "== $g F=$F" >>$OUT/run.err
    run $CLI run --op spmm --backend cuda --variant hub_split --F $F --reps 10 --json $g >>$OUT/ab.jsonl
    SPARSEPORT_HUB_STRIDED=0 run $CLI run --op spmm --backend cuda --variant hub_split --F $F --reps 10 --json $g | sed 's/^{/{"arm":"scalar",/' >>$OUT/ab.jsonl
  done
  run $CLI run --op spmm --backend cuda --variant hub_split --F 48 --reps 10 --json $g >>$OUT/ab.jsonl
  run $CLI run --op spmm --backend cuda --variant merge_path --F 47 --reps 10 --json $g >>$OUT/ab.jsonl
  run $CLI run --op spmm --backend cuda --variant hub_split --F 47 --dtype bf16 --reps 10 --json $g >>$OUT/ab.jsonl
  SPARSEPORT_HUB_STRIDED=0 run $CLI run --op spmm --backend cuda --variant hub_split --F 47 --dtype bf16 --reps 10 --json $g | sed 's/^{/{"arm":"scalar",/' >>$OUT/ab.jsonl
  echo "ab $g at ${SECONDS}s"
done
for g in .device-data/mdual.mtx.gz .device-data/cit-HepPh.mtx.gz .device-data/email-Enron.mtx.gz; do
  run $CLI run --op spmm --backend cuda --variant hub_split --F 47 --reps 20 --json $g >>$OUT/ab.jsonl
  SPARSEPORT_HUB_STRIDED=0 run $CLI run --op spmm --backend cuda --variant hub_split --F 47 --reps 20 --json $g | sed 's/^{/{"arm":"scalar",/' >>$OUT/ab.jsonl
done
echo "ab done at ${SECONDS}s"
left=$((LIMIT - 20 - SECONDS))
(cd $B && timeout $left ctest -j8 --timeout 150 -LE "long|mpi" --output-on-failure >$OUT/ctest.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed" $OUT/ctest.log; grep -E "\*\*\*Failed|\*\*\*Timeout|Exception" $OUT/ctest.log | head
cd $OUT && tar czf logs.tgz build.log ctest.log ctest-hub.log run.err gpu.txt 2>/dev/null; rm -f build.log; echo "done at ${SECONDS}s"
