#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a Kokkos + Kokkos Kernels for one execution space from Debian's `trilinos` source package
# (Trilinos 13.2: Kokkos 3.4.01, Kokkos Kernels 3.4.01), for building the `kokkos` plugin on a space
# that Debian's binary Kokkos (Serial only) lacks.
#
#   scripts/kokkos.sh openmp [PREFIX]   Kokkos with OpenMP + Serial for this machine's vector ISA
#                                       (AVX2/AVX-512, below), Kokkos Kernels without ETI
#   scripts/kokkos.sh cuda [PREFIX]     Kokkos with CUDA + Serial for one GPU architecture, built
#                                       through Kokkos's bin/nvcc_wrapper; Kokkos Kernels without
#                                       ETI and without the cuSPARSE/cuBLAS TPLs
#   scripts/kokkos.sh pack FILE         the two packages' sources without tests, docs and examples
#                                       (about 1 MB as .tar.xz) for a machine without the 166 MB
#                                       tarball or network: there, SPARSEPORT_KOKKOS_SOURCES=FILE
#
# Then: cmake ... -DKokkos_ROOT=PREFIX (the prefix holds both; KokkosKernels_ROOT is optional).
# The last line on stdout is the prefix (pack: the file); progress goes to stderr, build logs to
# files under the cache. The download (apt-get source with a private apt configuration: the
# system's sources are not touched), the extracted sources and the default prefix live under
# ${SPARSEPORT_KOKKOS_CACHE:-$HOME/.cache/sparseport/kokkos}:
#   src/trilinos_*.dsc, src/trilinos_*.orig.tar.gz   the source package (checked against the .dsc)
#   src/<sha12>/{kokkos,kokkos-kernels}              the two packages, extracted (never modified)
#   src/<sha12>-pack/{kokkos,kokkos-kernels}         the same, from a pack file (below)
#   src/<sha12>-cuda-<patch12>/{kokkos,...}          cuda: a copy, kokkos-3.4-cuda13.patch applied
#   build/<sha12>-<space>/{kokkos,kokkos-kernels}    build trees and logs
#   <sha12>-<space>/                                 the default prefix (include, lib, lib/cmake)
# where <sha12> is the start of the orig tarball's SHA-256 and <patch12> that of the patch. A
# prefix whose stamp file (.sparseport-kokkos.stamp) matches the tarball, the space, the patch and
# the options is reused as is; a machine without network can be given the two source files in
# src/ beforehand, or a pack (below).
#
# CUDA: Kokkos 3.4 predates CUDA 13 and Hopper. scripts/kokkos-3.4-cuda13.patch (each hunk
# explained at its top) adds Kokkos_ARCH_HOPPER90 and fixes what nvcc 13 rejects; it is applied to a
# copy of the sources. nvcc is taken from PATH, else /usr/local/cuda/bin; the host compiler is
# ${CXX:-g++}. Kokkos Kernels' configure imports the new Kokkos, whose exported CUDA::cudart is
# unusable under CMake 4 unless CUDAToolkit is found first: that is done through
# CMAKE_PROJECT_KokkosKernels_INCLUDE (cmake/SparsePortKokkos.cmake does the same for SparsePort).
#
# Environment:
#   SPARSEPORT_KOKKOS_JOBS     parallel jobs (default nproc)
#   CXX                        the host compiler (default g++)
#   SPARSEPORT_KOKKOS_ARCH     cuda: the Kokkos GPU architecture, Kokkos_ARCH_<this> (default
#                              HOPPER90, i.e. sm_90; e.g. AMPERE80). Kokkos 3.4 aborts at start-up
#                              on a device of another major compute capability.
#   SPARSEPORT_KOKKOS_HOST_ARCH  openmp: the host architecture, Kokkos_ARCH_<this> (default: SKX
#                              or HSW as /proc/cpuinfo allows, else none = the x86-64 baseline)
#   SPARSEPORT_KOKKOS_SOURCES  build from a pack instead of the orig tarball: a file written by
#                              `pack`, or a folder holding kokkos/, kokkos-kernels/ and
#                              trilinos-orig.sha256 (the orig tarball's SHA-256 and name). No
#                              download, no dpkg-dev; the stamp is the same as from the tarball.
set -euo pipefail

usage() {
  echo "usage: scripts/kokkos.sh openmp|cuda [PREFIX]   (prints the prefix on its last stdout line)" >&2
  echo "       scripts/kokkos.sh pack FILE.tar.xz       (writes the sources for SPARSEPORT_KOKKOS_SOURCES)" >&2
  exit 2
}
log() { echo "kokkos.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || usage
space=$1
case "$space" in
  openmp | cuda) ;;
  pack) [ $# -eq 2 ] || usage ;;
  -h | --help) usage ;;
  *) log "unknown space '$space'"; usage ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SPARSEPORT_KOKKOS_CACHE:-$HOME/.cache/sparseport/kokkos}
jobs=${SPARSEPORT_KOKKOS_JOBS:-$(nproc 2>/dev/null || echo 2)}
sources=${SPARSEPORT_KOKKOS_SOURCES:-}
mkdir -p "$cache/src"
cache=$(cd "$cache" && pwd)
if [ "$space" = pack ]; then
  # An absolute path: the packing below runs in another folder.
  packfile=$2
  mkdir -p "$(dirname "$packfile")"
  packfile="$(cd "$(dirname "$packfile")" && pwd)/$(basename "$packfile")"
fi

# --- the CUDA toolchain (before the packages: a missing nvcc is said at once) ------------------
patchfile="$here/kokkos-3.4-cuda13.patch"
if [ "$space" = cuda ]; then
  if ! command -v nvcc >/dev/null 2>&1; then
    [ -x /usr/local/cuda/bin/nvcc ] || die "no nvcc on PATH nor in /usr/local/cuda/bin"
    export PATH="$PATH:/usr/local/cuda/bin"
  fi
  [ -f "$patchfile" ] || die "$patchfile is missing"
  arch=${SPARSEPORT_KOKKOS_ARCH:-HOPPER90}
  [[ "$arch" =~ ^[A-Z]+[0-9]+$ ]] || die "SPARSEPORT_KOKKOS_ARCH='$arch' is not a Kokkos architecture name (e.g. HOPPER90, AMPERE80)"
  patch_sha=$(sha256sum "$patchfile" | cut -d' ' -f1)
  nvcc_version=$(nvcc --version | grep -o 'V[0-9][0-9.]*' | head -n 1)
fi

# --- the host's SIMD architecture (openmp) --------------------------------------------------------
# Kokkos compiles itself and its users (the kokkos plugin) with its architecture's flags. Without
# one it targets the x86-64 baseline, SSE2, while the openmp plugin's kernels are compiled for
# AVX2 + FMA as well (chosen at run time): the kokkos plugin lost that much before a line of its own
# ran. So the openmp space is built for the widest vector ISA of this machine that Kokkos 3.4 names:
# SKX (AVX-512 F, BW, DQ and VL), HSW (AVX2 and FMA), else none. The result runs on this machine
# and its like, not on any x86-64: SPARSEPORT_KOKKOS_HOST_ARCH=none builds for the baseline (a
# binary to ship), or names a Kokkos architecture (HSW, SKX, ZEN2, ...). The cuda space keeps the
# host baseline: its host code only launches.
host_arch=none
if [ "$space" = openmp ]; then
  if [ -n "${SPARSEPORT_KOKKOS_HOST_ARCH:-}" ]; then
    host_arch=$SPARSEPORT_KOKKOS_HOST_ARCH
    host_why="SPARSEPORT_KOKKOS_HOST_ARCH"
  else
    cpu_flags=" $(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
    has_flags() {
      local f
      for f in "$@"; do [[ "$cpu_flags" == *" $f "* ]] || return 1; done
    }
    if has_flags avx512f avx512bw avx512dq avx512vl; then
      host_arch=SKX
    elif has_flags avx2 fma; then
      host_arch=HSW
    fi
    host_why="this machine's /proc/cpuinfo"
  fi
  [ "$host_arch" = none ] || [[ "$host_arch" =~ ^[A-Z][A-Z0-9]*$ ]] ||
    die "SPARSEPORT_KOKKOS_HOST_ARCH='$host_arch' is not a Kokkos architecture name (e.g. HSW, SKX) nor none"
fi

# Build packages, installed only where missing, and only where apt-get can run (as setup-deps.sh).
need=()
if [ "$space" != pack ]; then
  command -v cmake >/dev/null 2>&1 || need+=(cmake)
  command -v "${CXX:-g++}" >/dev/null 2>&1 || need+=(g++)
fi
[ -n "$sources" ] || command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
# The patch is applied with patch(1), or git apply where patch is missing.
[ "$space" != cuda ] || command -v patch >/dev/null 2>&1 || command -v git >/dev/null 2>&1 || need+=(patch)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 ||
    die "missing ${need[*]} and cannot install them (need root and apt-get)"
  log "installing ${need[*]}"
  aptlog=$(mktemp /tmp/sparseport-apt.XXXXXX.log)
  { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
    >"$aptlog" 2>&1 || { tail -n 5 "$aptlog" >&2; die "apt-get failed (full log in $aptlog)"; }
fi

# One run at a time per cache (a second waits).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.lock"
  flock 9
fi

# --- the two packages: from a pack ... ------------------------------------------------------------
if [ -n "$sources" ]; then
  if [ -f "$sources" ]; then
    # A pack file: extracted once into the cache, under the name of the tarball's checksum (read
    # from the pack first, so that a pack extracted before is not extracted again).
    tmp="$cache/src/.pack.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    tar -xf "$sources" -C "$tmp" --wildcards --no-wildcards-match-slash '*/trilinos-orig.sha256' ||
      die "$sources holds no */trilinos-orig.sha256 (not written by 'scripts/kokkos.sh pack')"
    top=$(find "$tmp" -mindepth 2 -maxdepth 2 -name trilinos-orig.sha256 -printf '%h\n' | head -n 1)
    read -r sha orig <"$top/trilinos-orig.sha256"
    [[ "$sha" =~ ^[0-9a-f]{64}$ ]] || die "$sources: trilinos-orig.sha256 holds no SHA-256"
    src="$cache/src/${sha:0:12}-pack"
    if [ ! -f "$src/.complete" ]; then
      log "extracting $sources"
      tar -xf "$sources" -C "$tmp" || die "cannot extract $sources"
      rm -rf "$src"
      touch "$top/.complete"
      mv "$top" "$src"
    fi
    rm -rf "$tmp"
  else
    [ -d "$sources" ] || die "SPARSEPORT_KOKKOS_SOURCES=$sources is neither a file nor a folder"
    src=$(cd "$sources" && pwd)
    [ -f "$src/trilinos-orig.sha256" ] || die "$src has no trilinos-orig.sha256"
    read -r sha orig <"$src/trilinos-orig.sha256"
    [[ "$sha" =~ ^[0-9a-f]{64}$ ]] || die "$src/trilinos-orig.sha256 holds no SHA-256"
  fi
  [ -f "$src/kokkos/CMakeLists.txt" ] && [ -f "$src/kokkos-kernels/CMakeLists.txt" ] ||
    die "$src lacks kokkos/ or kokkos-kernels/"
  key=${sha:0:12}
  log "sources of $orig (SHA-256 ${key}...) from $sources"
else
  # --- ... or from the source package -------------------------------------------------------------
  find_dsc() { find "$cache/src" -maxdepth 1 -name 'trilinos_*.dsc' | sort -V | tail -n 1; }
  dsc=$(find_dsc)
  if [ -z "$dsc" ]; then
    command -v apt-get >/dev/null 2>&1 || die "no apt-get: put trilinos_*.dsc and its orig tarball in $cache/src"
    log "downloading Debian's trilinos source package (about 166 MB) into $cache/src"
    apt="$cache/apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
    echo 'deb-src http://deb.debian.org/debian bookworm main' >"$apt/sources.list"
    aptopts=(-q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache")
    # As root, apt would drop to the _apt user, who cannot write into a private cache under $HOME.
    [ "$(id -u)" -ne 0 ] || aptopts+=(-o APT::Sandbox::User=root)
    t0=$SECONDS
    apt-get "${aptopts[@]}" update >"$apt/update.log" 2>&1 ||
      { tail -n 5 "$apt/update.log" >&2; die "apt-get update failed (no network?)"; }
    rm -f "$apt"/dl/trilinos_*
    (cd "$apt/dl" && apt-get "${aptopts[@]}" source --download-only trilinos) >"$apt/source.log" 2>&1 ||
      { tail -n 5 "$apt/source.log" >&2; die "apt-get source trilinos failed"; }
    mv "$apt"/dl/trilinos_* "$cache/src/"
    rm -rf "$apt"  # the private index (about 20 MB) is not needed again
    log "downloaded in $((SECONDS - t0)) s"
    dsc=$(find_dsc)
    [ -n "$dsc" ] || die "apt-get source left no trilinos_*.dsc"
  fi

  # The orig tarball, checked against the SHA-256 and size the .dsc gives (the .dsc itself came
  # through apt, which checks it against the signed Sources index).
  read -r sha size orig < <(awk '/^Checksums-Sha256:/{f=1; next} /^[^ ]/{f=0}
    f && $3 ~ /\.orig\.tar\.(gz|xz|bz2)$/ {print $1, $2, $3; exit}' "$dsc") ||
    die "no orig tarball in the Checksums-Sha256 field of $dsc"
  tarball="$cache/src/$orig"
  [ -f "$tarball" ] || die "$orig (named by $dsc) is missing from $cache/src"
  [ "$(stat -c %s "$tarball")" = "$size" ] || die "$orig has the wrong size (expected $size; delete it to download again)"
  if [ ! -f "$tarball.sha256-ok" ] || [ "$(cat "$tarball.sha256-ok")" != "$sha" ]; then
    log "checking the SHA-256 of $orig"
    echo "$sha  $tarball" | sha256sum --check --status ||
      die "$orig does not match the SHA-256 in $(basename "$dsc") (delete it to download again)"
    echo "$sha" >"$tarball.sha256-ok"
  fi
  key=${sha:0:12}

  src="$cache/src/$key"
  if [ ! -f "$src/.complete" ]; then
    log "extracting packages/kokkos and packages/kokkos-kernels from $orig"
    rm -rf "$src" "$src.tmp"
    mkdir -p "$src.tmp"
    tar -xf "$tarball" -C "$src.tmp" --strip-components=2 --no-wildcards-match-slash --wildcards \
      '*/packages/kokkos' '*/packages/kokkos-kernels'
    [ -f "$src.tmp/kokkos/CMakeLists.txt" ] && [ -f "$src.tmp/kokkos-kernels/CMakeLists.txt" ] ||
      die "$orig has no packages/kokkos or packages/kokkos-kernels"
    touch "$src.tmp/.complete"
    mv "$src.tmp" "$src"
  fi
fi
kversion=$(awk -F'[ )]+' '/set\(Kokkos_VERSION_(MAJOR|MINOR|PATCH)/{v = v (v ? "." : "") $2} END{print v}' \
  "$src/kokkos/CMakeLists.txt")

# --- pack: the sources a build needs, as one compressed tarball -----------------------------------
if [ "$space" = pack ]; then
  # Left out: what only tests, benchmarks, examples and docs use (the builds here turn those off).
  # Kokkos adds example/ unconditionally (its CMakeLists.txt then adds nothing with examples off),
  # so that one file stays.
  # The compression follows the file name (tar -a: .tar.xz, .tar.gz, ...).
  name="sparseport-kokkos-$kversion-$key"
  stage=$(mktemp -d "$cache/.pack-stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/$name"
  tar -C "$src" -cf - \
    --exclude=kokkos/core/unit_test --exclude=kokkos/core/perf_test \
    --exclude=kokkos/containers/unit_tests --exclude=kokkos/containers/performance_tests \
    --exclude=kokkos/algorithms/unit_tests --exclude=kokkos/benchmarks --exclude='kokkos/example/[!C]*' \
    --exclude=kokkos/doc --exclude=kokkos/tpls/gtest \
    --exclude=kokkos-kernels/unit_test --exclude=kokkos-kernels/perf_test \
    --exclude=kokkos-kernels/example --exclude=kokkos-kernels/doc --exclude=kokkos-kernels/tpls/gtest \
    kokkos kokkos-kernels | tar -C "$stage/$name" -xf -
  echo "$sha  $orig" >"$stage/$name/trilinos-orig.sha256"
  # The temporary name keeps the suffix, from which tar -a picks the compression.
  tmpfile="$(dirname "$packfile")/.tmp-$(basename "$packfile")"
  tar -C "$stage" -caf "$tmpfile" --owner=0 --group=0 --numeric-owner "$name"
  mv "$tmpfile" "$packfile"
  log "wrote $packfile ($(du -h "$packfile" | cut -f1)): Kokkos $kversion + Kokkos Kernels from $orig, without tests, docs and examples"
  echo "$packfile"
  exit 0
fi

# --- cuda: a patched copy of the sources ---------------------------------------------------------
if [ "$space" = cuda ]; then
  psrc="$cache/src/$key-cuda-${patch_sha:0:12}"
  if [ ! -f "$psrc/.complete" ]; then
    log "applying $(basename "$patchfile") to a copy of the sources in $psrc"
    rm -rf "$psrc" "$psrc.tmp"
    mkdir -p "$psrc.tmp"
    cp -a "$src/kokkos" "$src/kokkos-kernels" "$psrc.tmp/"
    if command -v patch >/dev/null 2>&1; then
      (cd "$psrc.tmp" && patch -p1 --batch --forward --quiet) <"$patchfile" >"$psrc.patch.log" 2>&1
    else
      (cd "$psrc.tmp" && git apply -p1 --unsafe-paths "$patchfile") >"$psrc.patch.log" 2>&1
    fi || { cat "$psrc.patch.log" >&2; die "$(basename "$patchfile") does not apply to $src"; }
    touch "$psrc.tmp/.complete"
    mv "$psrc.tmp" "$psrc"
  fi
  src=$psrc
fi

# --- configure, build, install ------------------------------------------------------------------
# The host architecture is part of the default prefix's name: one cache may serve machines of
# different ISAs (a shared home), and each keeps its own build.
flavour=$space
[ "$host_arch" = none ] || flavour=$space-$(echo "$host_arch" | tr '[:upper:]' '[:lower:]')
prefix=${2:-$cache/$key-$flavour}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
stamp="$prefix/.sparseport-kokkos.stamp"
build="$cache/build/$key-$flavour"

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
common=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_CXX_STANDARD=17
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
  # Each installed library finds the others next to it (libkokkoskernels -> libkokkoscore).
  "-DCMAKE_INSTALL_RPATH=\$ORIGIN")
# Kokkos Kernels without explicit template instantiation (kernels are compiled where they are
# called; full ETI takes 11 minutes on 2 cores and never covers rank-2 strided spmv) and no TPLs.
kk_opts=(-DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
  -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF
  -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF
  -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
  -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
  -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF
  -DKokkosKernels_INST_EXECSPACE_THREADS=OFF -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF
  -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
  -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
  -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF)
case "$space" in
  openmp)
    kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON)
    [ "$host_arch" = none ] || kokkos_opts+=("-DKokkos_ARCH_$host_arch=ON")
    ;;
  cuda)
    # nvcc_wrapper compiles every Kokkos source as CUDA; it runs nvcc, which runs the host compiler.
    export NVCC_WRAPPER_DEFAULT_COMPILER="${CXX:-g++}"
    # The installed Kokkos forces CMAKE_CXX_EXTENSIONS off in its users (with a warning): said here.
    kokkos_opts=(-DCMAKE_CXX_COMPILER="$src/kokkos/bin/nvcc_wrapper" -DCMAKE_CXX_EXTENSIONS=OFF
      -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON
      "-DKokkos_ARCH_$arch=ON")
    # Kokkos Kernels through the installed wrapper (the same one users of the prefix get), its CUDA
    # instantiations off like the host ones, and CUDAToolkit found before Kokkos is imported.
    kk_opts+=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DCMAKE_CXX_EXTENSIONS=OFF
      -DKokkosKernels_INST_EXECSPACE_CUDA=OFF -DKokkosKernels_INST_MEMSPACE_CUDASPACE=OFF
      -DKokkosKernels_INST_MEMSPACE_CUDAUVMSPACE=OFF
      -DCMAKE_PROJECT_KokkosKernels_INCLUDE="$build/find-cudatoolkit.cmake")
    ;;
esac

# The stamp names everything the install depends on; any change rebuilds.
want=$(printf '%s\n' "trilinos-orig-sha256=$sha" "kokkos=$kversion" "space=$space" \
  "cxx=$(command -v "${CXX:-g++}") $("${CXX:-g++}" -dumpfullversion 2>/dev/null || true)" \
  "kokkos-options=${common[*]} ${kokkos_opts[*]}" "kokkoskernels-options=${kk_opts[*]}")
if [ "$space" = cuda ]; then
  want=$(printf '%s\n' "$want" "patch-sha256=$patch_sha" "nvcc=$(command -v nvcc) $nvcc_version")
fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  log "Kokkos $kversion ($space) already installed in $prefix"
  echo "$prefix"
  exit 0
fi

rm -rf "$build" "$stamp"
mkdir -p "$build"
[ "$space" != cuda ] || echo 'find_package(CUDAToolkit REQUIRED)' >"$build/find-cudatoolkit.cmake"
step() {  # step NAME LOG COMMAND...: runs COMMAND, its output to LOG; on failure the log's tail
  local name=$1 out=$2; shift 2
  if ! nice "$@" >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    die "$name failed (full log in $out)"
  fi
}
t0=$SECONDS
if [ "$space" = openmp ]; then
  log "host SIMD architecture: $host_arch (from $host_why)"
fi
log "building Kokkos $kversion ($space${arch:+, $arch}$([ "$host_arch" = none ] || echo ", host $host_arch")) with $jobs jobs into $prefix (logs in $build)"
step "Kokkos configure" "$build/kokkos-configure.log" cmake -S "$src/kokkos" -B "$build/kokkos" \
  "${generator[@]}" "${common[@]}" "${kokkos_opts[@]}"
step "Kokkos build" "$build/kokkos-build.log" cmake --build "$build/kokkos" --parallel "$jobs"
step "Kokkos install" "$build/kokkos-install.log" cmake --install "$build/kokkos"
log "Kokkos done in $((SECONDS - t0)) s"
t1=$SECONDS
step "Kokkos Kernels configure" "$build/kokkoskernels-configure.log" cmake -S "$src/kokkos-kernels" \
  -B "$build/kokkos-kernels" "${generator[@]}" "${common[@]}" -DKokkos_ROOT="$prefix" "${kk_opts[@]}"
step "Kokkos Kernels build" "$build/kokkoskernels-build.log" cmake --build "$build/kokkos-kernels" --parallel "$jobs"
step "Kokkos Kernels install" "$build/kokkoskernels-install.log" cmake --install "$build/kokkos-kernels"
log "Kokkos Kernels done in $((SECONDS - t1)) s"
[ -f "$prefix/lib/cmake/Kokkos/KokkosConfig.cmake" ] && [ -f "$prefix/lib/cmake/KokkosKernels/KokkosKernelsConfig.cmake" ] ||
  die "the install in $prefix lacks lib/cmake/Kokkos or lib/cmake/KokkosKernels"
echo "$want" >"$stamp"
log "Kokkos $kversion + Kokkos Kernels ($space) installed in $prefix in $((SECONDS - t0)) s"
echo "$prefix"
