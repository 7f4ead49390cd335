#!/usr/bin/env bash
# Nsight Compute on rmat:17:16 and the ego-Twitter twin at F = 32: our spmm kernels against cuSPARSE's.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="sparseport_cli" TAIL=2 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -2
CLI=build-gpu/src/cli/sparseport
for g in rmat:17:16 chunglu:81000:34:2.5; do
  for v in hub_split merge_path nnz_balanced; do
    f=$OUT/ncu_${g//:/_}_$v.csv
    timeout 60 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
      --section LaunchStats -k "regex:spmm_hub_kernel|merge_wide_kernel|chunk_kernel" --launch-count 2 --csv --page details \
      $CLI run --op spmm --backend cuda --variant $v --F 32 --reps 1 -q $g >$f 2>/dev/null
    echo "ncu $g $v: rc $?"
  done
done
