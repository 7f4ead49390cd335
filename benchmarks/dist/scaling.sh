#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Strong and weak scaling of `sparseport run --dist` (issue 19), one JSON line per run:
#   benchmarks/dist/scaling.sh CLI OUT.jsonl [RANKS] [CORES]
# CLI: a sparseport built with MPI; RANKS: e.g. "1 2 4 8" (default "1 2 4"); CORES: the cores to
# share among the ranks (default nproc): each rank runs the openmp backend with CORES/P threads.
#   strong: rmat:20:16 (1M rows, 16M entries) at F = 64, the same graph at every P;
#   weak:   rmat:(18 + log2 P):16, about 4M entries per rank, F = 64.
# Both spmm sum, float, verified against the single-process reference every run. mpirun
# --bind-to none: Open MPI binds each rank to one core at P <= 2, which would put all of a rank's
# threads on one core. No OMP_PROC_BIND: each rank sees every core, so a binding policy would pin
# the ranks' threads (and their MPI-polling master threads) to the same cores; measured on the
# GPU machine with OMP_PROC_BIND=spread: P = 2 took 7.3 s per call instead of about 0.1 s.
# STRONG_GRAPH replaces the strong graph (issue 37's target: rmat:22:16); WEAK_BASE the weak graph's
# scale at P = 1 (default 18); WEAK_THREADS fixes the threads per rank of the weak runs (issue 37: 4).
# WEAK_GRAPHS replaces the weak graphs, one per entry of RANKS (e.g. "band:1048576:16 band:2097152:16"):
# a larger RMAT is also more skewed and its B no longer fits the caches, so a family whose work per
# rank keeps its locality (band, mesh) separates the node's memory system from the exchange.
# Env: BACKEND (default openmp), OPS (default "spmm:sum"), REPS (default 20), KINDS (default
# "strong weak"), EXTRA (more flags). Each run's line is appended as soon as it ends.
set -euo pipefail
CLI=$1
OUT=$2
RANKS=${3:-"1 2 4"}
CORES=${4:-$(nproc)}
BACKEND=${BACKEND:-openmp}
OPS=${OPS:-"spmm:sum"}
REPS=${REPS:-20}
MPIRUN=(${MPIEXEC:-mpirun} --oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
: >"$OUT"
log2() { local n=$1 l=0; while [ "$n" -gt 1 ]; do n=$((n / 2)); l=$((l + 1)); done; echo $l; }
for kind in ${KINDS:-strong weak}; do
  run_index=-1
  for P in $RANKS; do
    run_index=$((run_index + 1))
    T=$((CORES / P > 0 ? CORES / P : 1))
    for opred in $OPS; do
      op=${opred%%:*}
      reduce=${opred#*:}
      if [ "$kind" = strong ]; then graph=${STRONG_GRAPH:-rmat:20:16}; else graph=rmat:$((${WEAK_BASE:-18} + $(log2 "$P"))):16; fi
      if [ "$kind" = weak ] && [ -n "${WEAK_GRAPHS:-}" ]; then
        read -r -a weak_graphs <<<"$WEAK_GRAPHS"
        graph=${weak_graphs[$run_index]:-}
        [ -n "$graph" ] || { echo "scaling.sh: WEAK_GRAPHS names no graph for the run at P=$P" >&2; exit 2; }
      fi
      [ "$kind" = weak ] && [ -n "${WEAK_THREADS:-}" ] && T=$WEAK_THREADS
      echo "scaling.sh: $kind P=$P threads=$T $op $reduce $graph" >&2
      line=$(OMP_NUM_THREADS=$T "${MPIRUN[@]}" -np "$P" "$CLI" run --dist \
        --backend "$BACKEND" --op "$op" --reduce "$reduce" --F 64 --reps "$REPS" --json --quiet ${EXTRA:-} "$graph")
      echo "{\"scaling\":\"$kind\",\"threads_per_rank\":$T,${line#\{}" >>"$OUT"
    done
  done
done
echo "scaling.sh: wrote $OUT" >&2
