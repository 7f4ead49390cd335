# SPDX-License-Identifier: Apache-2.0
"""SparsePort: portable sparse operators for GNNs and HPC codes.

The PyTorch operators live in :mod:`sparseport.torch` (imported on its own, so that
``import sparseport`` needs no torch). This module only exposes the native library's version,
its backends and its exception types:

- ``Error`` (a ``RuntimeError``): any error of the C++ library;
- ``InvalidArgument`` (``Error`` and ``ValueError``): bad shapes, types, indices, options;
- ``Unsupported`` (``Error`` and ``NotImplementedError``): a backend not compiled or an op it lacks;
- ``OutOfMemory`` (``Error`` and ``MemoryError``).
"""
from . import _C
from ._C import Error, InvalidArgument, OutOfMemory, Unsupported

__version__ = _C.version

__all__ = ["Error", "InvalidArgument", "OutOfMemory", "Unsupported", "backends", "__version__"]


def backends():
    """Every backend the library knows: ``[(name, status, reason)]``, status ``available``,
    ``no_device``, ``not_compiled`` or ``broken``."""
    return _C.plugins()
