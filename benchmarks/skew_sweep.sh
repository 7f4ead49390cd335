#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every cuda spmm variant against cuSPARSE (the faster of ALG2 and ALG3, same run) on skewed inputs
# of 0.1-5 M entries, the range where the issue of the kernels found the native kernels losing:
# generated power-law graphs (Chung-Lu and RMAT at several skews; no real matrix is needed) and the
# skewed matrices of SPARSEPORT_DATA_DIR that are present. One `sparseport run --variant all --json`
# per graph and width; results verified against the reference in double.
#   benchmarks/skew_sweep.sh SPARSEPORT_CLI OUT.jsonl [F list, default "32 64 128 256"]
# Summarise with benchmarks/skew_summary.py OUT.jsonl.
set -u
cli=$1
out=$2
widths=${3:-32 64 128 256}
data=${SPARSEPORT_DATA_DIR:-.device-data}
: >"$out"
# chunglu:81000:34:2.5 and chunglu:82000:12:2.4 have the rows, entries and mean degree of ego-Twitter
# (2.7 M entries) and soc-Slashdot0902 (0.96 M), with a heavier tail (max degree 15 k and 8 k).
graphs=(chunglu:81000:34:2.5 chunglu:82000:12:2.4 chunglu:80000:33:2.0 chunglu:300000:16:2.2 rmat:16:16 rmat:17:16
  rmatp:17:16:0.45:0.22:0.22 hubs:200000:8:64:4000)
for name in email-Enron wiki-Vote cit-HepPh facebook-combined astro-ph polblogs wb-cs-stanford; do
  [ -f "$data/$name.mtx.gz" ] && graphs+=("$data/$name.mtx.gz")
done
for g in "${graphs[@]}"; do
  for f in $widths; do
    "$cli" run --op spmm --backend cuda --variant all --F "$f" --reps 20 --json "$g" >>"$out" 2>>"$out.err" ||
      echo "skew_sweep: $g F=$f failed (see $out.err)" >&2
  done
done
