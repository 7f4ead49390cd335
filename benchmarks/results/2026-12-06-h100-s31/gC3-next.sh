#!/usr/bin/env bash
# For the next session (issue 36), on a warm machine with gpu_check's Kokkos-CUDA build: why kokkos hub_split
# trails the cuda plugin's hub_split on the skewed graphs and the
# small ones at F = 128.
# Nsight Compute of both variants' kernels on the same input: duration, achieved
# occupancy, warps launched, DRAM and L2 traffic, issue-slot use, the stall reasons.
set -u
# (--kernel-name-base demangled: a Kokkos kernel's base name is cuda_parallel_launch_local_memory;
# its demangled name holds the enclosing function, hub_split_groups_device. Session 31's try with
# the base name caught the index check, fills and the vendor's spmv instead.)
OUT=${OUT:-/tmp/gC3}; mkdir -p $OUT
export SPARSEPORT_DATA_DIR=$PWD/.device-data
B=build/kokkos-cuda; CLI=$B/src/cli/sparseport
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_bytes.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
# The lowest ratios of session 31 (kokkos best over cuda best): cora F = 128 0.61 (hub_split 26.0
# against 15.9 us), email-Enron F = 64 0.62, cit-HepPh F = 64 0.63 and F = 32 0.73.
for gf in cora:128 email-Enron:64 cit-HepPh:64 cit-HepPh:32; do
  g=${gf%%:*} f=${gf##*:}
  for b in cuda kokkos; do
      [ $SECONDS -gt 540 ] && break 2
      timeout 60 $NCU --metrics $M --kernel-name-base demangled -k regex:'hub' --launch-count 4 --csv \
        $CLI run --op spmm --reduce sum --backend $b --variant spmm.hub_split --F $f --reps 3 -q .device-data/$g.mtx.gz \
        >$OUT/ncu-$g-$f-$b.csv 2>$OUT/ncu-$g-$f-$b.err
      echo "$g F=$f $b rc $? at ${SECONDS}s"
  done
done
echo "done at ${SECONDS}s"
