#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sparseport::dist::spmm against PETSc's MatMatMult (issue 19) on this machine: installs Debian's
# PETSc if pkg-config cannot find it (PETSc is not in scripts/setup-deps.sh: CI does not need it),
# configures build/petsc, builds only sparseport_dist_vs_petsc and runs it at P = 1 and 2 ranks on
# rmat:18:16 and mdual (../shared/data, 1.03M entries), F = 32 and 128, double.
#   benchmarks/petsc/run.sh                  # everything, JSON lines to build/petsc/dist_vs_petsc.jsonl
#   REPS=10 RANKS="2" benchmarks/petsc/run.sh rmat:16:16   # other graphs, ranks, repetitions
# Two runs per P: threads as each library uses them (SparsePort's openmp context cores/P threads per
# rank; Debian's PETSc has no OpenMP, so 1 per rank), and, where cores/P > 1, one thread each
# (OMP_NUM_THREADS=1). mpirun --bind-to none: Open MPI would otherwise bind each rank to one core
# at P <= 2, and SparsePort's threads would share it.
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build/petsc}
REPS=${REPS:-20}
WARMUP=${WARMUP:-3}
RANKS=${RANKS:-"1 2"}
FEATURES=${FEATURES:-32,128}
OUT=${OUT:-$BUILD/dist_vs_petsc.jsonl}
DATA=${SPARSEPORT_DATA_DIR:-../shared/data}

if ! pkg-config --exists PETSc; then
  echo "run.sh: PETSc not found by pkg-config; installing Debian's libpetsc-real-dev" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y --no-install-recommends libpetsc-real-dev ||
    { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends libpetsc-real-dev; }
fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEPORT_ENABLE_CUDA=OFF >/dev/null
cmake --build "$BUILD" --target sparseport_dist_vs_petsc -j "${JOBS:-2}"
BIN="$BUILD/benchmarks/sparseport_dist_vs_petsc"

if [ "$#" -gt 0 ]; then
  GRAPHS=("$@")
else
  GRAPHS=("rmat:18:16")
  if [ -f "$DATA/mdual.mtx.gz" ]; then
    GRAPHS+=("$DATA/mdual.mtx.gz")
  else
    echo "run.sh: $DATA/mdual.mtx.gz not found: running the generated matrix only" >&2
  fi
fi

MPIRUN=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
# Idle OpenMP threads sleep instead of spinning (as in the other CPU results): on this shared 2-core
# VM a spinning thread that loses its core to another process stalls the whole parallel region.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# The scheduler's decisions (taken in the warm-up calls) go to a cache of this build's own.
export SPARSEPORT_CACHE_DIR=${SPARSEPORT_CACHE_DIR:-$BUILD/decision-cache}
CORES=$(nproc)
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
for P in $RANKS; do
  T=$((CORES / P > 0 ? CORES / P : 1))
  echo "run.sh: P = $P, SparsePort $T thread(s) per rank, PETSc 1" >&2
  OMP_NUM_THREADS=$T "${MPIRUN[@]}" -np "$P" "$BIN" --F "$FEATURES" --reps "$REPS" --warmup "$WARMUP" \
    --threads "$T" "${GRAPHS[@]}" | tee -a "$OUT"
  if [ "$T" -gt 1 ]; then
    echo "run.sh: P = $P, 1 thread each" >&2
    OMP_NUM_THREADS=1 "${MPIRUN[@]}" -np "$P" "$BIN" --F "$FEATURES" --reps "$REPS" --warmup "$WARMUP" \
      --threads 1 "${GRAPHS[@]}" | tee -a "$OUT"
  fi
done
echo "run.sh: results in $OUT" >&2
