#!/usr/bin/env bash
# cold.sh BIN SPEC@F ...: full-size calls a cold decision costs (decision + check beyond the op), as run2.sh of 2026-12-05
BIN=$1; shift
for arg in "$@"; do
  spec=${arg%@*}; F=${arg##*@}
  out=$(SPARSEPORT_LOG=scheduler SPARSEPORT_CACHE_DIR=$(mktemp -d) OMP_PROC_BIND=false timeout 300 $BIN run --op spmm --backend openmp --F $F --reps 3 $spec 2>&1)
  dec=$(echo "$out" | grep -oE "\[[0-9.]+ ms: features" | head -1 | grep -oE "[0-9.]+")
  chk=$(echo "$out" | grep -oE "\[[0-9.]+ ms beyond the op" | head -1 | grep -oE "[0-9.]+")
  op=$(echo "$out" | grep -E "^auto " | awk '{print $2}')
  ven=$(echo "$out" | grep -oE "vendor baseline: [a-z.]+, median [0-9.]+" | grep -oE "[0-9.]+$")
  skip=$(echo "$out" | grep -q "the vendor not timed at full size" && echo yes || echo no)
  blk=$(echo "$out" | grep -oE "on [0-9]+ blocks[^;]*it took [0-9.]+x|on [^;]*blocks of consecutive rows it took [0-9.]+x" | head -1)
  python3 -c "
d=float('${dec:-0}'); c=float('${chk:-0}'); o=float('${op:-0}' or 0); v=float('${ven:-0}' or 0)
print(f'$(basename $spec .mtx.gz) F=$F op {o:.3f} ms vendor/op {v/o if o else 0:.2f} decision {d:.2f} + check {c:.2f} = {d+c:.2f} ms = {(d+c)/o if o else 0:.2f} calls, vendor skipped: $skip')"
done
