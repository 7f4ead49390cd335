#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and tests the Python package: creates the virtual environment if missing (torch, numpy,
# pytest, nanobind, scikit-build-core, matplotlib for benchmarks/report.py; from PyPI, only what it lacks), installs ./python into it
# (the whole library is compiled by CMake; the build folder is kept, so a rebuild is incremental),
# then runs pytest on python/tests, printing why any test was skipped.
#
#   python/tests/run.sh [pytest arguments...]     (pytest runs in python/: tests/test_ops.py -k spmm)
#   python/tests/run.sh --env-only                 only the virtual environment (created or completed);
#                                                  scripts/test.sh runs this in the background while
#                                                  the C++ builds use the cores
#
# Environment:
#   SPARSEPORT_VENV           the virtual environment (default: <repo>/.venv-torch)
#   SPARSEPORT_VENV_SYSTEM    1: create it with --system-site-packages (a machine whose Python has
#                             torch already and no network, such as the GPU machine)
#   SPARSEPORT_PY_CUDA        ON, OFF or auto (default): auto builds the cuda plugin when nvcc is
#                             found and nvidia-smi lists a GPU, so that a machine without a GPU does
#                             not spend minutes compiling kernels it cannot run
#   SPARSEPORT_PY_BUILD_DIR   the CMake build folder (default: <repo>/build-python/wheel)
#   SPARSEPORT_PY_CC, SPARSEPORT_PY_CXX
#                             the C and C++ compilers of that build (default: scikit-build-core's
#                             choice, Python's sysconfig CC and CXX, e.g. x86_64-linux-gnu-g++);
#                             set for the build only, not for pytest (torch.compile reads CXX).
#                             scripts/test.sh passes those of its C++ build, whose objects ccache
#                             can then serve: ccache hashes the compiler's name
#   SPARSEPORT_WERROR         ON (default) or OFF: warnings are errors, as in CI
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
env_only=0
if [ "${1:-}" = --env-only ]; then
  env_only=1
  shift
fi
venv=${SPARSEPORT_VENV:-$root/.venv-torch}
build_dir=${SPARSEPORT_PY_BUILD_DIR:-$root/build-python/wheel}
cuda=${SPARSEPORT_PY_CUDA:-auto}
werror=${SPARSEPORT_WERROR:-ON}

t0=$SECONDS
if [ ! -x "$venv/bin/python" ]; then
  echo "run.sh: creating $venv"
  if [ "${SPARSEPORT_VENV_SYSTEM:-0}" = 1 ]; then
    python3 -m venv --system-site-packages "$venv"
  else
    python3 -m venv "$venv"
  fi
fi
py=$venv/bin/python

missing=()
for pkg in torch numpy pytest nanobind scikit_build_core matplotlib; do
  "$py" -c "import $pkg" 2>/dev/null || missing+=("${pkg//_/-}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run.sh: installing ${missing[*]}"
  "$py" -m pip install -q "${missing[@]}"
fi
t_env=$((SECONDS - t0))
if [ "$env_only" = 1 ]; then
  echo "run.sh: environment $venv ready in ${t_env}s"
  exit 0
fi

if [ "$cuda" = auto ]; then
  cuda=OFF
  if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
     command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    cuda=ON
  fi
fi
echo "run.sh: building ./python (SPARSEPORT_ENABLE_CUDA=$cuda, build folder $build_dir)"
t1=$SECONDS
# No build isolation: the build tools come from the environment (installed above), and the build
# folder is reused between runs.
build_env=()
[ -z "${SPARSEPORT_PY_CC:-}" ] || build_env+=("CC=$SPARSEPORT_PY_CC")
[ -z "${SPARSEPORT_PY_CXX:-}" ] || build_env+=("CXX=$SPARSEPORT_PY_CXX")
env "${build_env[@]}" "$py" -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  -C build-dir="$build_dir" \
  -C cmake.define.SPARSEPORT_ENABLE_CUDA="$cuda" \
  -C cmake.define.SPARSEPORT_WERROR="$werror" \
  "$root/python"
t_build=$((SECONDS - t1))

t2=$SECONDS
cd "$root/python"
set +e
"$venv/bin/pytest" -rs "$@"
rc=$?
set -e
echo "run.sh: environment ${t_env}s, build and install ${t_build}s, tests $((SECONDS - t2))s"
exit $rc
