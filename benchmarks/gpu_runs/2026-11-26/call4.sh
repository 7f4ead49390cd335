#!/usr/bin/env bash
# spmm.hub_split's hub threshold on long-row graphs: the directed halves of the twins (sparseport run
# cannot symmetrize; chunglu:232965:246:3.9 is reddit-twin's half, mean degree 246, and
# chunglu:2449029:25:3.3 products-twin's, mean 25) at F = 64 and 256, with SPARSEPORT_HUB_T = 256
# (the default above 4 M entries), 1024, 4096 and 16384, against cuSPARSE in the same process;
# then fused attention at the same thresholds (it shares hub_threshold_for).
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
rm -rf $OUT/check
cli=build-gpu/src/cli/sparseport
for g in chunglu:232965:246:3.9 chunglu:2449029:25:3.3; do
  for f in 64 256; do
    for t in 256 1024 4096 16384; do
      printf '%s F=%s T=%s: ' "$g" "$f" "$t"
      SPARSEPORT_HUB_T=$t timeout 90 $cli run --op spmm --backend cuda --variant all --F $f --reps 10 $g 2>&1 |
        awk '$1 ~ /^spmm\.(hub_split|merge_path|nnz_balanced|row_warp_vec4|cusparse)$/ {printf "%s %s  ", $1, $2} END {print ""}'
    done
  done
done
for t in 256 4096; do
  printf 'attention chunglu:232965:246:3.9 F=64 T=%s: ' "$t"
  SPARSEPORT_HUB_T=$t timeout 90 $cli run --op csr_attention --backend cuda --variant all --F 64 --reps 10 chunglu:232965:246:3.9 2>&1 |
    awk '$1 ~ /^csr_attention\./ {printf "%s %s  ", $1, $2} END {print ""}'
done
