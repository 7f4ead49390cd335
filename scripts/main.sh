#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install missing packages, build the `default` preset, run `sparseport run` on the
# built-in power-law graph (SpMM on the configure-time default backend, checked against the
# reference). Extra arguments go to `sparseport run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target sparseport_cli
exec build/default/src/cli/sparseport run --op spmm "$@"
