#!/usr/bin/env bash
# Session 35 (issue 36's last piece), one call instead of gK1 + CPU training + gK2: build, collect
# kokkos-cuda records on generated graphs (collect.sh), train kokkos-sm90 on the device (train.py, the
# wheels carried in .whl: lightgbm, scikit-learn; one LightGBM thread, as on the CPU, so the model is
# the one the CPU gets from the same corpus), then, if time is left, the kokkos oracle over the 18
# shared matrices with that model (SPARSEPORT_MODEL_DIR: no rebuild). Everything comes back in $OUT.
set -u
OUT=${OUT:-/tmp/gK4}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
LIMIT=${LIMIT:-585}; TRAIN=${TRAIN:-60}; ORACLE=${ORACLE:-0}
nvidia-smi -L | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site; python3 -c "import lightgbm, sklearn, scipy, numpy; print('py ok', lightgbm.__version__)"
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.xz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
echo "built at ${SECONDS}s"
CS=$((LIMIT - 20 - TRAIN - ORACLE - SECONDS))
timeout $((CS + 30)) scheduler/model/collect.sh $B $OUT/corpus $CS kokkos-cuda >$OUT/collect.log 2>&1
echo "collect rc $? at ${SECONDS}s"; tail -n 3 $OUT/collect.log; ls -l $OUT/corpus; tail -n 4 $OUT/corpus/collect-kokkos-cuda.log 2>/dev/null
mkdir -p $OUT/models
timeout $((TRAIN + ORACLE / 2)) python3 scheduler/model/train.py --data $OUT/corpus/kokkos.jsonl.gz --device-class kokkos-sm90 \
  --out $OUT/models/kokkos-sm90.json --report $OUT/models/kokkos-sm90.md >$OUT/train.log 2>&1
echo "train rc $? at ${SECONDS}s"; tail -n 9 $OUT/train.log
if [ "$ORACLE" -gt 0 ] && [ -s $OUT/models/kokkos-sm90.json ]; then
  mkdir -p /tmp/models && cp scheduler/models/*.json /tmp/models/ && cp $OUT/models/kokkos-sm90.json /tmp/models/
  SPARSEPORT_MODEL_DIR=/tmp/models BUDGET=$((LIMIT - 10 - SECONDS)) STEPS=oracle BENCH_F="32 64 128" tests/kokkos/gpu_check.sh $OUT/o1 >/dev/null 2>&1
  echo "oracle (new model) done at ${SECONDS}s"; tail -n 3 $OUT/o1/oracle.err.log
fi
[ -s $OUT/o1/oracle.jsonl ] && python3 .device-data/oracle_sum.py $OUT/o1/oracle.jsonl
# At most 8 files come back: the logs go into one archive.
cd $OUT && tar czf logs.tgz b collect.log train.log gpu.txt corpus/*.log o1/gpu_check.log o1/oracle.err.log 2>/dev/null
rm -rf b collect.log train.log gpu.txt corpus/*.log o1/gpu_check.log o1/oracle.err.log; find $OUT -type f | sort; echo "done at ${SECONDS}s"
