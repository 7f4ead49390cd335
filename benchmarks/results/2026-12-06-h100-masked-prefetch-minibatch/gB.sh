#!/usr/bin/env bash
# Session 25, call B (after gA on the same machine, build-gpu kept): hub_split's regular rows, A/B
# over the 18 shared matrices and 3 generated graphs, F = 16-128; row_warp_vec4 and cuSPARSE are the
# controls in the same processes. Settings: masked last batches on/off (SPARSEPORT_ROWS_MASKED) and
# the next row loaded a turn ahead in a grid of W waves (SPARSEPORT_ROWS_PREFETCH=W); the baseline
# (masked, no prefetch) runs first and last so drift shows. Then the prefetch path under ctest.
set -u
OUT=${OUT:-/tmp/gB}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L
[ -x $B/tests/cuda/cuda_timing ] || { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF >$OUT/build.log 2>&1; timeout 300 ninja -C $B -j16 >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"; }
G="$(ls .device-data/*.mtx.gz) rmat:18:8 chunglu:1000000:4:2.1 rmat:20:16"
i=0
for set in 1:0 0:0 1:2 1:8 1:0; do
  i=$((i+1)); m=${set%:*}; w=${set#*:}
  SPARSEPORT_ROWS_MASKED=$m SPARSEPORT_ROWS_PREFETCH=$w timeout 150 $B/tests/cuda/cuda_timing --only spmm.hub_split,spmm.row_warp_vec4,spmm.cusparse --F 16,32,64,128 $G >$OUT/ab-$i-m$m-w$w.log 2>&1
  echo "pass $i masked=$m prefetch=$w rc $? at ${SECONDS}s"
done
grep -h "^spmm" $OUT/ab-1-m1-w0.log | head -3
SPARSEPORT_ROWS_PREFETCH=2 timeout 150 ctest --test-dir $B -j8 --timeout 120 -R "CudaSpmm|SpmmConformance|BackwardConformance" >$OUT/ctest-pf.log 2>&1
echo "ctest prefetch rc $? at ${SECONDS}s"; grep -E "tests passed|tests failed out|\(Failed\)" $OUT/ctest-pf.log | head
echo "done at ${SECONDS}s"
