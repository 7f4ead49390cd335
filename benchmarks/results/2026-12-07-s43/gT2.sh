#!/usr/bin/env bash
# Session 43's second GPU call (the Python package built first where the machine is fresh):
# 1. Nsight Compute on the SAGE products twin's hub_split kernels (issue 33: is F = 256 bound by L2
#    gathers?), one epoch of ours; the rows with the longest durations are the full-size calls.
# 2. compute-sanitizer memcheck and racecheck on hub_split's shared plan (0ca9516, never sanitised).
set -u
OUT=${OUT:-/tmp/gT2}; mkdir -p $OUT; LIMIT=${LIMIT:-560}; B=build-gpu
nvidia-smi -L
M=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
W=$PWD/.device-data/wheels
if ! python3 -c "import sparseport" 2>/dev/null; then  # a fresh machine: the package first (as gT1.sh)
  python3 -m pip install -q --no-index --find-links $W nanobind scikit-build-core >$OUT/pip.log 2>&1
  CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 330 python3 -m pip install -q --no-build-isolation --force-reinstall --no-deps \
    -C build-dir=$PWD/build-python/gpu -C cmake.define.SPARSEPORT_ENABLE_CUDA=ON -C cmake.define.SPARSEPORT_WERROR=OFF \
    -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 ./python >>$OUT/pip.log 2>&1; echo "python build rc $? at ${SECONDS}s"
fi
if python3 -c "import sparseport" 2>/dev/null; then
  SPARSEPORT_CACHE_DIR=$(mktemp -d) timeout 200 ncu --clock-control none --target-processes all --metrics $M -k regex:spmm_hub_kernel -c 24 --csv --page raw \
    python3 examples/gnn/train_vs_pyg.py --graph products --model sage --device cuda --epochs 2 --no-compile --no-stats \
    --impl sparseport --cache-dir /tmp/gnn >$OUT/ncu.csv 2>$OUT/ncu.err
  echo "ncu rc $? at ${SECONDS}s"
  python3 - $OUT/ncu.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; data = [r for r in rows[2:] if len(r) == len(h)]
col = {n: h.index(n) for n in h}
keep = ["gpu__time_duration.sum", "launch__grid_size", "launch__registers_per_thread", "dram__bytes_read.sum",
        "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active"]
print("units:", [rows[1][col[k]] for k in keep if k in col])
for r in data:
    name = r[col["Kernel Name"]] if "Kernel Name" in col else "?"
    print(name[:90].replace("spmm_hub_kernel", "hub"), *[r[col[k]] for k in keep if k in col])
PY
else echo "no sparseport package: ncu step skipped"; fi
[ $((LIMIT - SECONDS)) -lt 250 ] && { echo "no time for the sanitizer at ${SECONDS}s"; exit 0; }
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF \
  -DSPARSEPORT_DATA_DIR=$PWD/.device-data >$OUT/build.log 2>&1
timeout $((LIMIT - 150 - SECONDS)) ninja -C $B -j18 tests/cuda/test_cuda >>$OUT/build.log 2>&1; echo "test_cuda build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
F='CudaSpmm.HubSplit*:CudaExternal.*'
timeout $(((LIMIT - SECONDS) * 2 / 3)) compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter="$F" >$OUT/memcheck.log 2>&1
echo "memcheck rc $? at ${SECONDS}s"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " $OUT/memcheck.log | head
timeout $((LIMIT - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.HubSplitShares*' >$OUT/racecheck.log 2>&1
echo "racecheck rc $? at ${SECONDS}s"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED) " $OUT/racecheck.log | head
