#!/usr/bin/env bash
# Session 29, last call (issue 36), in the 246 s that failed starts left: main 637af14's kokkos
# plugin alone on Kokkos-CUDA (no cuda plugin: the shortest build with the kokkos kernels), and
# test_kokkos's KokkosSpmm.* on the GPU: does main's hub_split pass with this toolchain? Call 1's
# branch failed KokkosSpmm.HubSplit* with a loop of the same meaning in another form.
set -u
nvidia-smi -L
export SPARSEPORT_KOKKOS_SOURCES=$PWD/.device-data/sparseport-kokkos-src.tar.gz
prefix=$(timeout 60 scripts/kokkos.sh cuda 2>/tmp/kokkos.log | tail -n 1); echo "kokkos at ${SECONDS}s: $prefix"
B=build/kk
timeout 40 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEPORT_ENABLE_CUDA=OFF -DKokkos_ROOT="$prefix" \
  -DKokkos_DIR="$prefix/lib/cmake/Kokkos" -DKokkosKernels_DIR="$prefix/lib/cmake/KokkosKernels" >/tmp/cfg.log 2>&1
echo "configure rc $? at ${SECONDS}s"; grep -E "CMake Error" -A3 /tmp/cfg.log | head
timeout $((212 - SECONDS)) cmake --build $B --target test_kokkos --parallel 16 >/tmp/build.log 2>&1
echo "build rc $? at ${SECONDS}s"; grep -E "FAILED:|error:" /tmp/build.log | head -5
timeout $((234 - SECONDS)) $B/tests/kokkos/test_kokkos --gtest_filter='KokkosSpmm.*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|Failure" | head -30
echo "done at ${SECONDS}s"
