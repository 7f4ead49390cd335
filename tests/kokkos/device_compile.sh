#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kokkos plugin's kernel files compiled for a GPU on a machine without one: nvcc's errors and
# warnings (the build's -Werror), each file's compile time, and what ptxas says of every kernel
# (registers, spill stores and loads, stack frame). Run it before a device call that changes a
# kokkos device path: a kernel that spills, or an A/B whose second set of kernels makes one file
# compile for ten minutes (2026-12-05: kernels/kokkos/spmm.cpp took 105 s here and 233 s with an A/B
# switch instantiated for every type, about ten minutes on the GPU machine), shows here first.
#
#   tests/kokkos/device_compile.sh OUT [FILE...]   (default kernels/kokkos/spmm.cpp)
#
#   OUT   where the logs go: kokkos.log, configure.log, <file>.log (nvcc's output with ptxas -v) and
#         <file>.tsv (registers, spill stores, spill loads, stack bytes, demangled kernel name, one
#         line a kernel, most registers first)
# Environment: SPARSEPORT_KOKKOS_SOURCES, SPARSEPORT_KOKKOS_CACHE, SPARSEPORT_KOKKOS_ARCH (HOPPER90:
# sm_90) and SPARSEPORT_KOKKOS_JOBS, as for scripts/kokkos.sh, which builds Kokkos for CUDA once
# (about a minute on 2 cores; nvcc is all it needs); B, the build folder (default
# build/kokkos-device-compile: the kokkos plugin only, configured against that Kokkos).
set -uo pipefail
OUT=${1:?usage: tests/kokkos/device_compile.sh OUT [FILE...]}
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
B=${B:-build/kokkos-device-compile}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(kernels/kokkos/spmm.cpp)

prefix=$(scripts/kokkos.sh cuda 2>"$OUT/kokkos.log" | tail -n 1)
[ -d "$prefix" ] || { echo "device_compile: scripts/kokkos.sh cuda failed (see $OUT/kokkos.log)" >&2; exit 1; }
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEPORT_ENABLE_CUDA=OFF -DSPARSEPORT_WERROR=ON \
  -DKokkos_ROOT="$prefix" -DKokkos_DIR="$prefix/lib/cmake/Kokkos" \
  -DKokkosKernels_DIR="$prefix/lib/cmake/KokkosKernels" >"$OUT/configure.log" 2>&1 ||
  { echo "device_compile: configure failed (see $OUT/configure.log)" >&2; exit 1; }

rc=0
for f in "${files[@]}"; do
  name=$(basename "$f" .cpp)
  # The build's own command for the file (the launcher that routes it through Kokkos's nvcc_wrapper
  # included, which compile_commands.json leaves out), with ptxas's report added: one word,
  # -Xptxas=-v (nvcc_wrapper passes "-Xptxas -v" on as two arguments, which nvcc refuses).
  obj=$(ninja -C "$B" -t targets all 2>/dev/null | grep -o "^plugins/kokkos/[^:]*/kernels/kokkos/$name\.cpp\.o" | head -n 1)
  cmd=""
  [ -n "$obj" ] && cmd="$(ninja -C "$B" -t commands "$obj" | tail -n 1) -Xptxas=-v"
  [ -n "$cmd" ] || { echo "device_compile: $f is not compiled by the kokkos plugin" >&2; rc=1; continue; }
  start=$(date +%s)
  (cd "$B" && eval "$cmd") >"$OUT/$name.log" 2>&1
  status=$?
  secs=$(($(date +%s) - start))
  python3 - "$OUT/$name.log" "$OUT/$name.tsv" <<'EOF'
import re, subprocess, sys
log = open(sys.argv[1]).read()
rows = []
for m in re.finditer(r"Compiling entry function '([^']+)' for '(sm_\d+)'(.*?)Used (\d+) registers", log, re.S):
    body = m.group(3)
    spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", body)
    stack, st, ld = (int(x) for x in spill.groups()) if spill else (0, 0, 0)
    rows.append([int(m.group(4)), st, ld, stack, m.group(1)])
names = subprocess.run(["c++filt"], input="\n".join(r[4] for r in rows), capture_output=True, text=True).stdout.splitlines()
for r, n in zip(rows, names):
    # Shorter: without the translation unit's internal namespace and the project's own.
    n = re.sub(r"_INTERNAL_\w+?::", "", n)
    r[4] = n.replace("sparseport::kokkos::(anonymous namespace)::", "").replace("sparseport::kokkos::", "")
rows.sort(key=lambda r: -r[0])
with open(sys.argv[2], "w") as out:
    for r in rows:
        out.write("\t".join(str(x) for x in r) + "\n")
spilling = [r for r in rows if r[1] or r[2]]
print(f"{len(rows)} kernels, registers at most {rows[0][0] if rows else 0}, {len(spilling)} spilling")
for r in spilling[:10]:
    print(f"  spills: {r[0]} registers, {r[1]} B stored, {r[2]} B loaded: {r[4][:160]}")
EOF
  echo "device_compile: $f: rc $status, ${secs} s ($OUT/$name.tsv)"
  ((status == 0)) || { grep -E "error|warning" "$OUT/$name.log" | head -n 20; rc=1; }
done
exit $rc
