#!/usr/bin/env bash
# Session 32, call 2 (issue 36), on the warm machine of call 1 (gD1.sh's Kokkos-CUDA build):
# why kokkos hub_split trails the cuda plugin's hub_split on the small and skewed graphs.
# 1. Nsight Compute of both variants' hub kernels on the lowest inputs of session 31.
# 2. The chunk length T as an A/B (SPARSEPORT_HUB_T, read per call): the kokkos default takes
#    T = max(32, nnz / (4 x workers), 4 x mean) = 32 on graphs of a few thousand rows, so rows of
#    33-168 entries split into 32-entry chunks with atomics, a ticket and a finishing pass, where the
#    cuda plugin's threshold there is 64 and its items 512 entries long (one CTA, no atomics).
set -u
OUT=${OUT:-/tmp/gC4}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda; CLI=$B/src/cli/sparseport
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_bytes.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
for gf in cora:128 email-Enron:64 cit-HepPh:64; do
  g=${gf%%:*} f=${gf##*:}
  for b in cuda kokkos; do
      [ $SECONDS -gt 200 ] && break 2
      timeout 50 $NCU --metrics $M --kernel-name-base demangled -k regex:'hub' --launch-count 3 --csv \
        $CLI run --op spmm --reduce sum --backend $b --variant spmm.hub_split --F $f --reps 2 -q .device-data/$g.mtx.gz \
        >$OUT/ncu-$g-$f-$b.csv 2>$OUT/ncu-$g-$f-$b.err
      echo "$g F=$f $b rc $? at ${SECONDS}s"
  done
done
mkdir -p .device-data/small
for g in cora citeseer bcsstk13 polblogs email-Enron cit-HepPh facebook-combined; do ln -sf ../$g.mtx.gz .device-data/small/; done
SPARSEPORT_DATA_DIR=$PWD/.device-data/small BUDGET=$((560 - SECONDS)) STEPS=bench BENCH_F="32 64 128" BENCH_REPS=20 BENCH_GRAPHS="" \
  BENCH_KOKKOS_ENVS="- SPARSEPORT_HUB_T=64 SPARSEPORT_HUB_T=512" tests/kokkos/gpu_check.sh $OUT/bench >/dev/null 2>&1
echo "bench done at ${SECONDS}s"; grep -A30 "^op  *rows" $OUT/bench/gpu_check.log | head -80
echo "done at ${SECONDS}s"
