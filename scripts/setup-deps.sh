#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages SparsePort builds with, only those missing (idempotent).
#
#   scripts/setup-deps.sh [SET...]      (no SET: all)
#
#   main       what scripts/main.sh builds: the `sparseport` program with the reference and openmp
#              backends (OpenMP comes with the compiler), hwloc for the CPU signature
#   tests      GoogleTest and Google Benchmark (SPARSEPORT_BUILD_TESTS / _BENCHMARKS need them)
#   kokkos     the kokkos plugin: Debian's Kokkos 3.4 (Serial only); Kokkos Kernels needs BLAS and LAPACK
#   graphblas  the CPU vendor baseline spmm.graphblas in the openmp plugin (libgraphblas7: 24 MB
#              download, 176 MB installed)
#   mpi        sparseport::dist, `sparseport run --dist` and the MPI tests (CTest label mpi); METIS 5
#              for dist::partition_metis (without it that function throws Unsupported)
#   python     the Python package's tests (python/tests/run.sh): a virtual environment, Python's headers
#   all        every set above: what scripts/test.sh installs
#
# Every set but `main` is optional: CMake leaves out what it does not find. Where apt-get cannot run
# (not root, not Debian, no network: the GPU machine), it says what is missing and goes on: CMake
# then builds whatever the machine has.
set -u
set_main=(build-essential cmake ninja-build pkgconf zlib1g-dev libhwloc-dev)
set_tests=(libgtest-dev libbenchmark-dev)
set_kokkos=(libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libblas-dev liblapack-dev)
set_graphblas=(libgraphblas-dev)
set_mpi=(libopenmpi-dev openmpi-bin libmetis-dev)
set_python=(python3 python3-venv python3-dev)

[ $# -eq 0 ] && set -- all
pkgs=()
for s in "$@"; do
  case "$s" in
    main) pkgs+=("${set_main[@]}") ;;
    tests) pkgs+=("${set_tests[@]}") ;;
    kokkos) pkgs+=("${set_kokkos[@]}") ;;
    graphblas) pkgs+=("${set_graphblas[@]}") ;;
    mpi) pkgs+=("${set_mpi[@]}") ;;
    python) pkgs+=("${set_python[@]}") ;;
    all) pkgs+=("${set_main[@]}" "${set_tests[@]}" "${set_kokkos[@]}" "${set_graphblas[@]}" "${set_mpi[@]}"
                "${set_python[@]}") ;;
    *) echo "setup-deps: unknown set '$s' (main, tests, kokkos, graphblas, mpi, python, all)" >&2; exit 2 ;;
  esac
done

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    case " ${missing[*]} " in *" $p "*) continue ;; esac
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
