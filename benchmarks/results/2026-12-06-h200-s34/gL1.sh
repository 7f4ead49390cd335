#!/usr/bin/env bash
# Issue 35's GPU cold decisions on inputs of >= 1M entries (7.6-9.2 full-size calls, session 16):
# cuda-sm90.json has no trees of its own for spmm.merge_path and spmm.vector_rows, so every cold
# decision times both beside the two best predicted (each a warm-up and a timed call). This call
# builds the cuda plugin alone (no Kokkos) and collects spmm records on generated graphs for the
# rest of the call (CUDA_SPMM_ONLY=1); $OUT/corpus/cuda.jsonl.gz comes back. Then on the CPU:
#   .venv-model/bin/python scheduler/model/train.py --data OUT/corpus/cuda.jsonl.gz \
#       --device-class cuda-sm90 --keep-ops scheduler/models/cuda-sm90.json \
#       --out scheduler/models/cuda-sm90.json --report /tmp/cuda-sm90-spmm.md
# (spmm retrained, the other ops' trees kept); then the cuda oracle (sparseport tune --oracle --backend cuda).
set -u
OUT=${OUT:-/tmp/gL1}; mkdir -p $OUT
B=build-gpu
LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
echo "configured rc $? at ${SECONDS}s"
timeout 300 ninja -C $B -j16 sparseport_cli >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
CS=$((LIMIT - 40 - SECONDS))
CUDA_SPMM_ONLY=1 timeout $((CS + 30)) scheduler/model/collect.sh $B $OUT/corpus $CS cuda >$OUT/collect.log 2>&1
echo "collect rc $? at ${SECONDS}s"; tail -n 3 $OUT/collect.log; ls -l $OUT/corpus; tail -n 3 $OUT/corpus/collect-cuda.log
cd $OUT && tar czf logs.tgz build.log collect.log; rm -f build.log collect.log; echo "done at ${SECONDS}s"
