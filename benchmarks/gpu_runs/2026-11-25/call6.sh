#!/usr/bin/env bash
# Every kernel of one `sparseport run` call (vendor baseline and variant, warm-up and timed rep),
# F = 32, under Nsight Compute without cache or clock control: durations comparable to a real call.
set -u
cd "$(dirname "$0")/../../.."
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="sparseport_cli" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 200 configure build | tail -1
rm -rf $OUT/check
CLI=build-gpu/src/cli/sparseport
for g in rmat:17:16 chunglu:81000:34:2.5; do
  for v in merge_path hub_split; do
    timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --launch-count 40 --csv --page details \
      $CLI run --op spmm --backend cuda --variant $v --F 32 --reps 2 -q $g 2>/dev/null |
      python3 -c '
import csv, io, sys
t = sys.stdin.read()
t = t[t.index("\"ID\""):] if "\"ID\"" in t else ""
rows = list(csv.reader(io.StringIO(t)))
if not rows: print("no data"); sys.exit()
h = rows[0]; ii, ki, mi, vi, gi = (h.index(x) for x in ("ID", "Kernel Name", "Metric Name", "Metric Value", "Grid Size"))
for r in rows[1:]:
    if len(r) > vi and r[mi] == "Duration": print(r[ii], r[vi], "ns", r[gi], r[ki][:90])
' > $OUT/kernels_${g//:/_}_$v.txt
    echo "== $g $v"; cat $OUT/kernels_${g//:/_}_$v.txt | head -40
  done
done
