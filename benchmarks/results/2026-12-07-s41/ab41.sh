#!/usr/bin/env bash
# Probe-sample A/B on the 2-core VM: 4e2c69d (old) against main (new), openmp, alternating, fresh cache each run.
G=${G:-chunglu:2000000:8:2.1}
for k in 1 2 3; do
  for arm in old new; do
    if [ $arm = old ]; then BIN=/work/old41/build/src/cli/sparseport; else BIN=/work/main/build/default/src/cli/sparseport; fi
    D=$(mktemp -d)
    SPARSEPORT_CACHE_DIR=$D SPARSEPORT_LOG=scheduler $BIN run --op spmm --backend openmp --F 32 --reps 1 $G 2>&1 \
      | grep -E "probe \(timing" | sed -E "s/.*\[([0-9.]+) ms: features ([0-9.]+), model [0-9.]+, timing and guardrail ([0-9.]+) \(of it the probe sample ([0-9.]+)\)\].*/$arm run $k: decision \1 ms, features \2, timing \3, of it the probe sample \4/"
    rm -rf $D
  done
done
