#!/usr/bin/env bash
# Issue 35's GPU cold decisions on >= 1M entries in one call (gL1.sh + the training + the oracle):
# build the cuda plugin alone, collect spmm records on generated graphs (CUDA_SPMM_ONLY=1: records
# for merge_path and vector_rows, which cuda-sm90.json has no trees of its own for), retrain spmm on
# the device (train.py --keep-ops: the other four ops' trees kept; wheels in .whl as in gK4.sh), then
# the cuda oracle with the shipped model and with the new one (SPARSEPORT_MODEL_DIR, same binary) on
# three generated inputs of >= 1M entries (cold_cost_ops: full-size calls a cold decision cost) and,
# time left, the 18 shared matrices at F = 64.
set -u
OUT=${OUT:-/tmp/gL2}; mkdir -p $OUT
B=${B:-build-gpu}  # B=build/kokkos-cuda on a machine gK4.sh left warm: its sparseport has the cuda plugin
LIMIT=${LIMIT:-585}; TRAIN=${TRAIN:-60}; ORACLE=${ORACLE:-150}
nvidia-smi -L | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site; python3 -c "import lightgbm, sklearn, scipy, numpy; print('py ok', lightgbm.__version__)"
[ -x $B/src/cli/sparseport ] || cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
echo "configured rc $? at ${SECONDS}s"
[ -x $B/src/cli/sparseport ] || timeout 300 ninja -C $B -j16 sparseport_cli >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
CS=$((LIMIT - 20 - TRAIN - ORACLE - SECONDS))
CUDA_SPMM_ONLY=1 timeout $((CS + 30)) scheduler/model/collect.sh $B $OUT/corpus $CS cuda >$OUT/collect.log 2>&1
echo "collect rc $? at ${SECONDS}s"; tail -n 3 $OUT/collect.log; ls -l $OUT/corpus; tail -n 3 $OUT/corpus/collect-cuda.log
mkdir -p $OUT/models
timeout $TRAIN python3 scheduler/model/train.py --data $OUT/corpus/cuda.jsonl.gz --device-class cuda-sm90 \
  --keep-ops scheduler/models/cuda-sm90.json --out $OUT/models/cuda-sm90.json --report $OUT/models/cuda-sm90.md >$OUT/train.log 2>&1
echo "train rc $? at ${SECONDS}s"; tail -n 9 $OUT/train.log
CLI=$B/src/cli/sparseport
BIG="rmat:20:16 chunglu:1000000:16:2.1 mesh3d:80:80:80:0"
timeout 100 $CLI tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json $BIG >$OUT/oracle-big-shipped.jsonl 2>$OUT/oracle.err.log
echo "oracle big (shipped model) rc $? at ${SECONDS}s"
if [ -s $OUT/models/cuda-sm90.json ]; then
  mkdir -p /tmp/models && cp scheduler/models/*.json /tmp/models/ && cp $OUT/models/cuda-sm90.json /tmp/models/
  SPARSEPORT_MODEL_DIR=/tmp/models timeout 100 $CLI tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json $BIG \
    >$OUT/oracle-big-new.jsonl 2>>$OUT/oracle.err.log
  echo "oracle big (new model) rc $? at ${SECONDS}s"
  # Issue 33's "hub_split at every width": every variant at full size at F = 47 and 100 (ms:spmm.hub_split
  # against the best), the scheduler's pick beside them.
  for W in 47 100; do SPARSEPORT_MODEL_DIR=/tmp/models timeout 45 $CLI tune --oracle --op spmm --backend cuda --F $W --reps 10 \
    --json rmat:20:16 chunglu:1000000:16:2.1 >>$OUT/oracle-widths.jsonl 2>>$OUT/oracle.err.log; done
  echo "oracle widths rc $? at ${SECONDS}s"
  left=$((LIMIT - 10 - SECONDS))
  [ $left -gt 20 ] && SPARSEPORT_MODEL_DIR=/tmp/models timeout $left $CLI tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json \
    $(ls -Sr .device-data/*.mtx.gz) >$OUT/oracle-shared-new.jsonl 2>>$OUT/oracle.err.log
  echo "oracle shared (new model) at ${SECONDS}s"
fi
# At most 8 files come back: the logs and the training report go into one archive.
cd $OUT && tar czf logs.tgz build.log collect.log oracle.err.log train.log gpu.txt corpus/*.log models/*.md 2>/dev/null
rm -f build.log collect.log oracle.err.log train.log gpu.txt corpus/*.log models/*.md; find $OUT -type f | sort; echo "done at ${SECONDS}s"
