#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every #include of the library's own code points down the layers (README, "Layout").

The layers, bottom to top (a file may include its own layer and those below, never one above):
  0 ground     include/sparseport (the public headers), core (registry, errors, I/O, generators)
  1 device     backends/<b>, kernels/<b> (the device and the math)
  2 plugins    plugins/<b> (binds 1 into a plugin table)
  3 scheduler  scheduler/ (times candidates through the plugin table)
  4 front end  src/ops (validate, ask the scheduler, call one slot; Context)
  5 dist       src/dist (distributed ops over the public ones)
  6 users      src/cli, python, benchmarks, tests, examples
Also: a plugin never includes another plugin's folders, a kernel never the scheduler.
Prints each violation as FILE:LINE: and exits 1 when there is one.
  scripts/check_layers.py [REPO_ROOT]
"""
import pathlib
import re
import sys

LAYERS = [
    ("include/sparseport/", 0), ("core/", 0),
    ("backends/", 1), ("kernels/", 1),
    ("plugins/", 2),
    ("scheduler/", 3),
    ("src/ops/", 4),
    ("src/dist/", 5),
    ("src/cli/", 6), ("python/", 6), ("benchmarks/", 6), ("tests/", 6), ("examples/", 6),
]
SOURCES = {".h", ".hpp", ".cuh", ".cpp", ".cu", ".c", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
BACKENDS = ("reference", "openmp", "cuda", "kokkos")


def layer_of(path: str):
    for prefix, rank in LAYERS:
        if path.startswith(prefix):
            return rank
    return None


def backend_of(path: str):
    parts = path.split("/")
    if parts[0] in ("backends", "kernels", "plugins") and len(parts) > 1 and parts[1] in BACKENDS:
        return parts[1]
    return None


def target_path(name: str):
    # Public headers are included as "sparseport/x.hpp"; internal ones by their path from the root.
    return "include/" + name if name.startswith("sparseport/") else name


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    bad = []
    checked = 0
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.suffix not in SOURCES or not f.is_file() or rel.startswith(("build", ".")):
            continue
        here = layer_of(rel)
        if here is None:
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = target_path(m.group(1))
            there = layer_of(target)
            if there is None:
                continue  # a header beside the file, or generated
            checked += 1
            if there > here:
                bad.append(f"{rel}:{n}: includes {m.group(1)} (layer {there}) from layer {here}")
            mine, theirs = backend_of(rel), backend_of(target)
            if mine and theirs and mine != theirs:
                bad.append(f"{rel}:{n}: backend {mine} includes backend {theirs}'s {m.group(1)}")
    for b in bad:
        print(b)
    print(f"check_layers: {checked} includes of the library's own code checked, {len(bad)} point the wrong way")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
