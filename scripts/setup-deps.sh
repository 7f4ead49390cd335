#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages SparsePort builds with, only those missing (idempotent).
# Where apt-get cannot run (not root, not Debian, no network: the GPU machine), it says what is
# missing and goes on: CMake then builds whatever the machine has.
set -u
pkgs=(build-essential cmake ninja-build pkgconf zlib1g-dev libgtest-dev libbenchmark-dev libhwloc-dev python3
  # The Python package's tests (python/tests/run.sh): a virtual environment and Python's headers.
  python3-venv python3-dev
  # The kokkos plugin (Debian's Kokkos 3.4, Serial only; Kokkos Kernels needs BLAS and LAPACK) and
  # the CPU vendor baseline spmm.graphblas. Without them CMake leaves those parts out.
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libblas-dev liblapack-dev libgraphblas-dev
  # MPI for sparseport::dist, `sparseport run --dist` and the MPI tests (CTest label mpi); METIS 5
  # for dist::partition_metis (without it that function throws Unsupported).
  libopenmpi-dev openmpi-bin libmetis-dev)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup-deps: missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-deps: cannot install them here (need root and apt-get); building with what is present" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/sparseport-apt.XXXXXX.log)
if { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "setup-deps: installed ${missing[*]}" >&2
else
  tail -n 5 "$log" >&2
  echo "setup-deps: apt-get failed (no network?; full log in $log); building with what is present" >&2
fi
exit 0
