#!/usr/bin/env bash
# er:200000:2e-5 and two other uniform inputs whose B overflows L2 at F >= 64, with column tiles of
# 32 and 64 columns and in one pass (SPARSEPORT_L2_TILE), the row-engine variants and cuSPARSE.
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
rm -rf $OUT/check
cli=build-gpu/src/cli/sparseport
for g in er:200000:2e-5 er:400000:1e-5 mesh2d:700:700:1; do
  for f in 64 128; do
    for t in 0 32 64; do
      [ "$t" -ge "$f" ] && continue
      printf '%s F=%s tile=%s: ' "$g" "$f" "$t"
      SPARSEPORT_L2_TILE=$t timeout 60 $cli run --op spmm --backend cuda --variant all --F $f --reps 30 $g 2>&1 |
        awk '$1 ~ /^spmm\.(row_warp_vec4|hub_split|cusparse)$/ {printf "%s %s  ", $1, $2} END {print ""}'
    done
  done
done
