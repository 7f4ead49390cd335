#!/usr/bin/env bash
# Session 45 (issue 35): the FEATURES pass on the openmp plugin's OpenMP team (run_parts, ABI 1.10)
# against the scheduler's own threads. Same CLI binary, the library swapped by LD_LIBRARY_PATH:
# OLD = a build of the tree before the change (git worktree add ../ab-old 0d7e055; cmake --preset
# default; cmake --build build/default --target sparseport), NEW = this tree's build/default.
# Alternating rounds, a fresh decision cache per call; prints CSV: round,arm,graph,F,decision_ms,features_ms.
# GRAPHS: names of ../shared/data/NAME.mtx.gz, or generator specs (anything with a ':').
set -u
OLD=${OLD:-/work/ab-old/build/default/src/ops}; NEW=${NEW:-$PWD/build/default/src/ops}
ROUNDS=${ROUNDS:-4}; FS=${FS:-64}
GRAPHS=${GRAPHS:-"copter2 mdual cit-HepPh wing astro-ph email-Enron bcsstk16 4elt"}
echo "round,arm,graph,F,decision_ms,features_ms"
for r in $(seq $ROUNDS); do
  for arm in old new; do
    lib=$OLD; [ $arm = new ] && lib=$NEW
    for g in $GRAPHS; do for F in $FS; do
      C=$(mktemp -d); input=../shared/data/$g.mtx.gz; case $g in *:*) input=$g;; esac
      line=$(LD_LIBRARY_PATH=$lib SPARSEPORT_CACHE_DIR=$C SPARSEPORT_LOG=scheduler build/default/src/cli/sparseport tune \
        --oracle --op spmm --backend openmp --threads 2 --F $F --reps 3 $input 2>&1 |
        grep -m1 -o "\[[0-9.]* ms: features [0-9.]*")
      rm -rf $C
      echo "$r,$arm,$g,$F,$(echo "$line" | sed -E 's/\[([0-9.]*) ms: features ([0-9.]*)/\1,\2/')"
    done; done
  done
done
