#!/usr/bin/env bash
# Session 34's next call (issue 36's last piece): the kokkos-sm90 model's records with the current
# kokkos hub_split kernel (whole rows, session 30; the row order, session 32). Build (or reuse a warm
# build), then collect.sh kokkos-cuda on generated graphs only for the rest of the call; the corpus
# comes back as $OUT/corpus/kokkos.jsonl.gz. Then on the CPU:
#   .venv-model/bin/python scheduler/model/train.py --data OUT/corpus/kokkos.jsonl.gz \
#       --device-class kokkos-sm90 --out scheduler/models/kokkos-sm90.json --report /tmp/kokkos-sm90.md
# and a second call (gK2.sh: rebuild, kokkos oracle) for the model alone on the shared matrices.
set -u
OUT=${OUT:-/tmp/gK1}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda
LIMIT=${LIMIT:-585}
nvidia-smi -L | tee $OUT/gpu.txt
BUDGET=300 STEPS="kokkos configure build" tests/kokkos/gpu_check.sh $OUT/b .device-data/sparseport-kokkos-src.tar.gz >/dev/null 2>&1
grep -E "== (kokkos|configure|build):|FAILED:|error" $OUT/b/gpu_check.log | head -10
echo "built at ${SECONDS}s"
CS=$((LIMIT - 40 - SECONDS))
timeout $((CS + 30)) scheduler/model/collect.sh $B $OUT/corpus $CS kokkos-cuda >$OUT/collect.log 2>&1
echo "collect rc $? at ${SECONDS}s"; tail -n 3 $OUT/collect.log; ls -l $OUT/corpus; tail -n 4 $OUT/corpus/collect-kokkos-cuda.log 2>/dev/null
cd $OUT && tar czf logs.tgz b collect.log 2>/dev/null; rm -rf b collect.log; echo "done at ${SECONDS}s"
