# SPDX-License-Identifier: Apache-2.0
import os
import sys
import tempfile

# `python -m pytest` run from python/ puts python/ first on sys.path, where sparseport/ is the
# source folder without the compiled module: test the installed package instead.
_source_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _source_root]

# The scheduler's decision cache goes to a throwaway folder, not ~/.cache/sparseport.
os.environ.setdefault("SPARSEPORT_CACHE_DIR", tempfile.mkdtemp(prefix="sparseport-pytest-cache-"))
# Each test graph is new, so "auto" would time the variants of every op on every graph (about 0.1 s
# per decision on 2 cores): the suite runs the backends' default variants, and test_scheduler.py
# runs "auto" on purpose. (The C++ conformance tests cover every variant.)
os.environ.setdefault("SPARSEPORT_SCHEDULER", "off")

import pytest  # noqa: E402

import sparseport  # noqa: E402
import sparseport.torch as spt  # noqa: E402

CPU_BACKENDS = [name for name, status, _ in sparseport.backends() if status == "available" and name in ("reference", "openmp")]


def pytest_report_header(config):
    lines = [f"sparseport {sparseport.__version__}"]
    lines += [f"  backend {n}: {s}{' (' + r + ')' if r else ''}" for n, s, r in sparseport.backends()]
    return lines


@pytest.fixture(params=CPU_BACKENDS)
def backend(request):
    """Runs the test once per CPU backend compiled in (the CPU context is rebuilt for each)."""
    spt.set_cpu_backend(request.param)
    yield request.param
    spt.set_cpu_backend(None)
