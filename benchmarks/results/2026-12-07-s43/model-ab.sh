#!/usr/bin/env bash
# Session 43 (issue 35, CPU): the openmp cost model before (9767013's file, no GraphBLAS trees) and
# after de04d17 (GraphBLAS's and family:vendor's trees added with train.py --keep-variants), as
# SPARSEPORT_MODEL_DIR, on the 18 shared matrices at F = 32, 64, 128, rounds alternating old and
# merged. Run from the repository root with build/default built, alone on the machine (~7 min).
#   bash benchmarks/results/2026-12-07-s43/model-ab.sh && python3 benchmarks/results/2026-12-07-s43/ab_summary.py /tmp/s43/ev
set -u
D=/tmp/s43/ev; mkdir -p $D /tmp/s43/model-old /tmp/s43/model-merged
git show 9767013:scheduler/models/openmp-x86_64.json >/tmp/s43/model-old/openmp-x86_64.json
git show de04d17:scheduler/models/openmp-x86_64.json >/tmp/s43/model-merged/openmp-x86_64.json
for rep in 1 2 3 4; do for F in 32 64 128; do for m in old merged; do
  SPARSEPORT_MODEL_DIR=/tmp/s43/model-$m build/default/src/cli/sparseport tune --oracle --op spmm --backend openmp \
    --threads 2 --F $F --reps 5 --json ../shared/data/*.mtx.gz >$D/$m-F$F-r$rep.json 2>/dev/null
  echo "$m F=$F round $rep done at ${SECONDS}s"
done; done; done
