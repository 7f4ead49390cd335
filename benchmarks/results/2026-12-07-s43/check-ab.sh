#!/usr/bin/env bash
# Session 43 (issue 35, CPU): the full-size check's block path with the pick timed twice before the
# vendor (de04d17) and without (b57a8cd): two builds of libsparseport.so.0 in /tmp/s43/bin-old and
# /tmp/s43/bin-new (build/default at each commit, the library copied), swapped in by LD_LIBRARY_PATH;
# the same oracle as model-ab.sh, 3 rounds alternating.
set -u
D=/tmp/s43/ev4; mkdir -p $D
for rep in 1 2 3; do for F in 32 64 128; do for m in old new; do
  LD_LIBRARY_PATH=/tmp/s43/bin-$m build/default/src/cli/sparseport tune --oracle --op spmm --backend openmp --threads 2 \
    --F $F --reps 5 --json ../shared/data/*.mtx.gz >$D/$m-F$F-r$rep.json 2>/dev/null
  echo "$m F=$F round $rep done at ${SECONDS}s"
done; done; done
