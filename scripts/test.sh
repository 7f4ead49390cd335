#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the test suite: install missing packages, configure (the `cuda` preset where nvcc
# exists, so the CUDA plugin is compiled even without a GPU; its tests then skip, saying why) with
# SPARSEPORT_WERROR=ON, build, and run CTest without the `long` label. Ends with CTest's summary.
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
