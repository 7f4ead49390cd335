#!/usr/bin/env bash
# Session 43: the features pass of a cold decision with the OpenMP workers spinning (default wait
# policy) or asleep (OMP_WAIT_POLICY=passive), alternating, 5 rounds, 5 matrices, F = 64.
cd /work/main
for rep in 1 2 3 4 5; do for w in default passive; do
  env $([ $w = passive ] && echo OMP_WAIT_POLICY=passive) SPARSEPORT_LOG=scheduler build/default/src/cli/sparseport tune --oracle --op spmm --backend openmp --threads 2 --F 64 --reps 3 \
    ../shared/data/copter2.mtx.gz ../shared/data/cit-HepPh.mtx.gz ../shared/data/mdual.mtx.gz ../shared/data/astro-ph.mtx.gz ../shared/data/email-Enron.mtx.gz 2>&1 \
    | grep -oE "csr[0-9x]+:[0-9]+:\w+: \w+ \(timing: [^)]*\) \[[0-9.]+ ms: features [0-9.]+" | sed -E "s/^csr[0-9]+x[0-9]+:([0-9]+):.*features ([0-9.]+)/$w $rep \1 \2/"
done; done
