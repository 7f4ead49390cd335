#!/usr/bin/env bash
# Session 36's last device time (~470 s): the cuda plugin alone, then issue 33's "hub_split at every
# width" (every spmm variant at full size at F = 47, 100 and 64 on two generated power-law graphs of
# >= 1M entries: hub_split's ms against the best) and issue 35's hit and mini-batch measures on main.
set -u
OUT=${OUT:-/tmp/gM1}; mkdir -p $OUT
B=build-gpu
nvidia-smi -L | tee $OUT/gpu.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEPORT_ENABLE_KOKKOS=OFF >$OUT/build.log 2>&1
timeout 240 ninja -C $B -j16 sparseport_cli cache_hit_cost minibatch_decisions >>$OUT/build.log 2>&1; echo "build rc $? at ${SECONDS}s"
grep -E "error|FAILED" $OUT/build.log | head -5
CLI=$B/src/cli/sparseport
for W in 47 100 64; do
  timeout 50 $CLI tune --oracle --op spmm --backend cuda --F $W --reps 10 --json rmat:20:16 chunglu:1000000:16:2.1 \
    >>$OUT/oracle-widths.jsonl 2>>$OUT/oracle.err.log; echo "F=$W rc $? at ${SECONDS}s"
done
python3 - $OUT/oracle-widths.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); ms = {k[3:]: v for k, v in r.items() if k.startswith("ms:")}
    best = min(ms.values()); hub = ms.get("spmm.hub_split", float("nan"))
    print(f"{r['graph']} F={r['F']} chosen {r['chosen']} best {r['best']} regret {r['regret']:.3f} hub_split/best {hub/best:.2f} "
          + " ".join(f"{k.split('.',1)[1]}={v:.3f}" for k, v in sorted(ms.items(), key=lambda x: x[1])))
PY
for g in er:1000:0.01 rmat:18:16; do timeout 45 $B/tests/scheduler/cache_hit_cost --backend cuda --op spmm --processes 6 --fill 200 $g 2>&1 | tail -n 1 | cut -c1-400; done
timeout 90 $B/tests/scheduler/minibatch_decisions --backend cuda --batches 1000 2>&1 | tail -n 12
cd $OUT && tar czf logs.tgz build.log oracle.err.log gpu.txt 2>/dev/null; rm -f build.log oracle.err.log gpu.txt; echo "done at ${SECONDS}s"
