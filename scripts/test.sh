#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the test suite: install missing packages, configure (the `cuda` preset where nvcc
# exists, so the CUDA plugin is compiled even without a GPU; its tests then skip, saying why) with
# SPARSEPORT_WERROR=ON, build, and run CTest without the `long` label; then the kokkos plugin on
# Kokkos-OpenMP and the Python package (below). Fails when any of the three fails. At the end (also
# when a stage fails) it prints each stage's wall time.
#
# The three builds compile much of the same code with the same flags (core, scheduler, the
# reference and openmp plugins, the program, the tests). They go through ccache, installed here
# where apt-get can run, so that the second and third compile of a file is a cache hit:
# CCACHE_BASEDIR makes paths under the checkout relative to the build folder, and build/<preset>
# and build/kokkos-openmp, both two levels down, then give the same hash for the same source and
# flags. Every build still configures, compiles (or takes from the cache what the compiler gave for
# that exact input), links and tests everything it did without ccache. SPARSEPORT_CCACHE=0: no ccache.
# CCACHE_DIR: the cache (default ~/.cache/sparseport/ccache, next to scripts/kokkos.sh's cache).
set -euo pipefail
cd "$(dirname "$0")/.."

# ---- stage times ------------------------------------------------------------------------------
stage_names=()
stage_secs=()
stage_now=
stage_t0=0
stage() {  # stage NAME COMMAND...: runs COMMAND (under set -e, as the rest) and records its wall time
  stage_now=$1
  stage_t0=$SECONDS
  shift
  "$@"
  stage_names+=("$stage_now")
  stage_secs+=($((SECONDS - stage_t0)))
  stage_now=
}
py_env_pid=
finish() {
  local rc=$? i
  if [ -n "$stage_now" ]; then
    stage_names+=("$stage_now: FAILED (exit $rc)")
    stage_secs+=($((SECONDS - stage_t0)))
  fi
  # The background install of the Python environment (below) does not outlive a failed run.
  [ -z "$py_env_pid" ] || kill -- "-$py_env_pid" 2>/dev/null || true
  echo
  echo "test.sh: wall time per stage"
  for i in "${!stage_names[@]}"; do
    printf '  %5d s  %s\n' "${stage_secs[$i]}" "${stage_names[$i]}"
  done
  printf '  %5d s  total (%d min %02d s)\n' "$SECONDS" $((SECONDS / 60)) $((SECONDS % 60))
  if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
    ccache --print-stats 2>/dev/null | awk '{s[$1] = $2}
      END {if (NR) printf "  ccache: %d hits (%d direct, %d preprocessed), %d misses\n",
           s["direct_cache_hit"] + s["preprocessed_cache_hit"], s["direct_cache_hit"],
           s["preprocessed_cache_hit"], s["cache_miss"]}' || true
  fi
  exit "$rc"
}
trap finish EXIT

stage "packages (scripts/setup-deps.sh)" scripts/setup-deps.sh

# ---- ccache -------------------------------------------------------------------------------------
use_ccache() {
  [ "${SPARSEPORT_CCACHE:-1}" != 0 ] || return 0
  if ! command -v ccache >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing ccache" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -qq --no-install-recommends ccache ||
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends ccache; }; } >/dev/null 2>&1 ||
      echo "test.sh: could not install ccache; every build compiles everything" >&2
  fi
  command -v ccache >/dev/null 2>&1 || return 0
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/sparseport/ccache}
  export CCACHE_BASEDIR=$PWD
  # CMake (3.17+) takes these for every new build folder: the wheel's and the install test's too.
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  ccache --zero-stats >/dev/null
}
stage "ccache" use_ccache
# Said on each configure below, so that a build folder configured otherwise before follows.
launcher=(-DCMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-}"
  -DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}")

# The Python environment (torch and the build tools from PyPI, about 3 GB the first time: mostly
# download) is installed in the background while the C++ builds below keep the cores busy; the
# Python stage waits for it. It runs in a session of its own, ended with the script.
mkdir -p build
py_env_log=build/python-env.log
setsid python/tests/run.sh --env-only >"$py_env_log" 2>&1 &
py_env_pid=$!

preset=default
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  preset=cuda
  export PATH="$PATH:/usr/local/cuda/bin"
fi
# CI builds with warnings as errors; the presets themselves leave SPARSEPORT_WERROR off for users.
stage "configure ($preset preset)" cmake --preset "$preset" -DSPARSEPORT_WERROR=ON "${launcher[@]}" >/dev/null
stage "build ($preset preset)" cmake --build --preset "$preset"
stage "CTest ($preset preset)" ctest --preset "$preset"

# The kokkos plugin on a Kokkos with the OpenMP space (Debian's Kokkos has the Serial space only):
# Kokkos and Kokkos Kernels 3.4 built from Debian's trilinos source by scripts/kokkos.sh (cached by
# the tarball's checksum), this library built against them (no CUDA), and every kokkos and
# conformance test on 2 threads, OMP_PROC_BIND unset (Kokkos warns about it: not on our stdout),
# and the kokkos exit, thread and fork endings (ExitAfterOp.kokkos.*: -R is case-sensitive; two
# threads and a forked child are where Kokkos-OpenMP 3.4 differs from the Serial space).
kokkos_install() {
  kokkos_prefix=$(scripts/kokkos.sh openmp | tail -n 1)
}
kokkos_build() {
  cmake -S . -B build/kokkos-openmp -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEPORT_ENABLE_CUDA=OFF \
    -DSPARSEPORT_WERROR=ON -DKokkos_ROOT="$kokkos_prefix" "${launcher[@]}" >/dev/null
  cmake --build build/kokkos-openmp
}
stage "Kokkos-OpenMP (scripts/kokkos.sh openmp)" kokkos_install
stage "configure and build (build/kokkos-openmp)" kokkos_build
stage "CTest (build/kokkos-openmp)" env -u OMP_PROC_BIND OMP_NUM_THREADS=2 \
  ctest --test-dir build/kokkos-openmp -j2 --output-on-failure -R 'Kokkos|Conformance|CliDevices|Install|ExitAfterOp\.kokkos'

# The Python package (python/): a virtual environment .venv-torch with torch, numpy, pytest,
# nanobind and scikit-build-core from PyPI (only what it lacks; installed in the background above),
# `pip install ./python` built by this project's CMake (warnings as errors; the cuda plugin only
# where a GPU is present; through ccache like the builds above), then pytest on python/tests:
# opcheck, gradcheck, torch.compile and the ops against torch; the CUDA tests skip without a GPU,
# printing why.
python_env_wait() {
  local pid=$py_env_pid
  py_env_pid=
  # A failed background install is tried again, in the foreground, by run.sh below.
  wait "$pid" || { echo "test.sh: the background install of the Python environment failed:" >&2; tail -n 20 "$py_env_log" >&2; }
  tail -n 1 "$py_env_log"
}
stage "Python environment (waiting for the background install)" python_env_wait
python_package() {
  # The wheel is compiled by the C++ build's compilers (scikit-build-core would take Python's, the
  # same GCC under another name, which ccache hashes) in build-python/wheel, two levels down like
  # build/<preset>: the library's objects are then mostly ccache hits.
  local cache=build/$preset/CMakeCache.txt
  SPARSEPORT_PY_CC=${SPARSEPORT_PY_CC:-$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")} \
  SPARSEPORT_PY_CXX=${SPARSEPORT_PY_CXX:-$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")} \
    python/tests/run.sh -q
}
stage "Python package (python/tests/run.sh)" python_package
# benchmarks/report.py: the Markdown from a synthetic Google Benchmark JSON, and its PNG figures
# (matplotlib, installed into the same environment by run.sh); tests/kokkos/bench_table.py, the
# table of the kokkos GPU check's bench step, on synthetic `sparseport run --json` lines.
stage "benchmarks/report.py tests" "${SPARSEPORT_VENV:-.venv-torch}/bin/python" -m pytest -q -rs benchmarks/python/test_report.py tests/kokkos/test_bench_table.py
