#!/usr/bin/env bash
# Session 38, call 3 (warm machine, build-gpu from gN1): spmm records on generated graphs (every cuda
# spmm variant, merge_path and vector_rows included), written as they come so a deadline keeps them;
# train cuda-sm90's spmm (other ops kept); the big-input oracle with the shipped and the new model.
set -u
OUT=${OUT:-/tmp/gN3}; mkdir -p $OUT; B=build-gpu; CS=${CS:-240}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 scheduler/model/corpus.py --max-nnz 8000000 | shuf --random-source=<(openssl enc -aes-256-ctr -pass pass:sparseport -nosalt </dev/zero 2>/dev/null) > /tmp/corpus.txt
wc -l < /tmp/corpus.txt
rm -f /tmp/cuda.jsonl
timeout $((CS + 20)) taskset -c 0 $B/src/cli/sparseport tune --collect /tmp/cuda.jsonl --graphs-from /tmp/corpus.txt --time-limit $CS \
  --op spmm --backend cuda --F 1,4,16,32,64,128,256,512 --reduce sum,max --reps 3 </dev/null > $OUT/collect.log 2>&1
echo "collect rc $? at ${SECONDS}s, $(wc -l < /tmp/cuda.jsonl) records, $(grep -c collected $OUT/collect.log) graphs"
gzip -c /tmp/cuda.jsonl > $OUT/cuda.jsonl.gz
timeout 60 python3 scheduler/model/train.py --data $OUT/cuda.jsonl.gz --device-class cuda-sm90 --keep-ops scheduler/models/cuda-sm90.json \
  --out $OUT/cuda-sm90.json --report $OUT/cuda-sm90.md > $OUT/train.log 2>&1; echo "train rc $? at ${SECONDS}s"; tail -n 12 $OUT/train.log
BIG="rmat:20:16 chunglu:1000000:16:2.1 mesh3d:80:80:80:0"
if [ -s $OUT/cuda-sm90.json ]; then
  mkdir -p /tmp/models && cp scheduler/models/*.json /tmp/models/ && cp $OUT/cuda-sm90.json /tmp/models/
  SPARSEPORT_MODEL_DIR=/tmp/models timeout 60 $B/src/cli/sparseport tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json $BIG > $OUT/oracle-big-new.jsonl 2>/dev/null
  echo "oracle new rc $? at ${SECONDS}s"
fi
left=$((${LIMIT:-440} - SECONDS)); [ $left -gt 25 ] && [ -s $OUT/cuda-sm90.json ] && SPARSEPORT_MODEL_DIR=/tmp/models timeout $left $B/src/cli/sparseport tune --oracle --op spmm --backend cuda --F 64 --reps 10 --json $(ls -Sr .device-data/*.mtx.gz) > $OUT/oracle-shared-new.jsonl 2>/dev/null
echo "done at ${SECONDS}s"
