#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install the missing packages the `sparseport` program needs (scripts/setup-deps.sh
# main), configure the `default` preset in build/main without the tests, the benchmarks and the
# optional plugins (kokkos, spmm.graphblas, MPI), build only the program, and run `sparseport run`
# on the built-in power-law graph (SpMM on the default backend, openmp, checked against the
# reference). Extra arguments go to `sparseport run`. scripts/test.sh builds everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh main
cmake --preset default -B build/main \
  -DSPARSEPORT_BUILD_TESTS=OFF -DSPARSEPORT_BUILD_BENCHMARKS=OFF \
  -DSPARSEPORT_ENABLE_KOKKOS=OFF -DSPARSEPORT_ENABLE_GRAPHBLAS=OFF -DSPARSEPORT_ENABLE_MPI=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_KokkosKernels=ON -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >/dev/null
cmake --build build/main --target sparseport_cli
exec build/main/src/cli/sparseport run --op spmm "$@"
