#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the test suite: install missing packages, configure (the `cuda` preset where nvcc
# exists, so the CUDA plugin is compiled even without a GPU; its tests then skip, saying why) with
# SPARSEPORT_WERROR=ON, build, and run CTest without the `long` label; then the kokkos plugin on
# Kokkos-OpenMP and the Python package (below). Fails when any of the three fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
preset=default
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  preset=cuda
  export PATH="$PATH:/usr/local/cuda/bin"
fi
# CI builds with warnings as errors; the presets themselves leave SPARSEPORT_WERROR off for users.
cmake --preset "$preset" -DSPARSEPORT_WERROR=ON >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
# The kokkos plugin on a Kokkos with the OpenMP space (Debian's Kokkos has the Serial space only):
# Kokkos and Kokkos Kernels 3.4 built from Debian's trilinos source by scripts/kokkos.sh (cached by
# the tarball's checksum), this library built against them (no CUDA), and every kokkos and
# conformance test on 2 threads, OMP_PROC_BIND unset (Kokkos warns about it: not on our stdout).
kokkos_prefix=$(scripts/kokkos.sh openmp | tail -n 1)
cmake -S . -B build/kokkos-openmp -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEPORT_ENABLE_CUDA=OFF \
  -DSPARSEPORT_WERROR=ON -DKokkos_ROOT="$kokkos_prefix" >/dev/null
cmake --build build/kokkos-openmp
env -u OMP_PROC_BIND OMP_NUM_THREADS=2 ctest --test-dir build/kokkos-openmp -j2 --output-on-failure \
  -R 'Kokkos|Conformance|CliDevices|Install'
# The Python package (python/): a virtual environment .venv-torch with torch, numpy, pytest,
# nanobind and scikit-build-core from PyPI (only what it lacks), `pip install ./python` built by
# this project's CMake (warnings as errors; the cuda plugin only where a GPU is present), then
# pytest on python/tests: opcheck, gradcheck, torch.compile and the ops against torch; the CUDA
# tests skip without a GPU, printing why.
python/tests/run.sh -q
# benchmarks/report.py: the Markdown from a synthetic Google Benchmark JSON, and its PNG figures
# (matplotlib, installed into the same environment by run.sh).
"${SPARSEPORT_VENV:-.venv-torch}/bin/python" -m pytest -q -rs benchmarks/python/test_report.py
