#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a Kokkos + Kokkos Kernels for one execution space from Debian's `trilinos` source package
# (Trilinos 13.2: Kokkos 3.4.01, Kokkos Kernels 3.4.01), for building the `kokkos` plugin on a space
# that Debian's binary Kokkos (Serial only) lacks.
#
#   scripts/kokkos.sh openmp [PREFIX]   Kokkos with OpenMP + Serial, Kokkos Kernels without ETI
#   scripts/kokkos.sh cuda [PREFIX]     not yet (stops with a message)
#
# Then: cmake ... -DKokkos_ROOT=PREFIX (the prefix holds both; KokkosKernels_ROOT is optional).
# The last line on stdout is the prefix; progress goes to stderr, build logs to files under the
# cache. The download (apt-get source with a private apt configuration: the system's sources are
# not touched), the extracted sources and the default prefix live under
# ${SPARSEPORT_KOKKOS_CACHE:-$HOME/.cache/sparseport/kokkos}:
#   src/trilinos_*.dsc, src/trilinos_*.orig.tar.gz   the source package (checked against the .dsc)
#   src/<sha12>/{kokkos,kokkos-kernels}              the two packages, extracted
#   build/<sha12>-<space>/{kokkos,kokkos-kernels}    build trees and logs
#   <sha12>-<space>/                                 the default prefix (include, lib, lib/cmake)
# where <sha12> is the start of the orig tarball's SHA-256. A prefix whose stamp file
# (.sparseport-kokkos.stamp) matches the tarball, the space and the options is reused as is; a
# machine without network can be given the two source files in src/ beforehand.
# Environment: SPARSEPORT_KOKKOS_JOBS (parallel jobs, default nproc), CXX (the host compiler).
set -euo pipefail

usage() { echo "usage: scripts/kokkos.sh openmp|cuda [PREFIX]   (prints the prefix on its last stdout line)" >&2; exit 2; }
log() { echo "kokkos.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || usage
space=$1
case "$space" in
  openmp) ;;
  cuda) die "the CUDA space is not supported yet (it needs a patched Kokkos 3.4 for nvcc 13 and \
Kokkos_ARCH_HOPPER90 through nvcc_wrapper; see issue 22). Use 'openmp', or point -DKokkos_ROOT at \
your own CUDA Kokkos." ;;
  -h|--help) usage ;;
  *) log "unknown space '$space'"; usage ;;
esac

cache=${SPARSEPORT_KOKKOS_CACHE:-$HOME/.cache/sparseport/kokkos}
jobs=${SPARSEPORT_KOKKOS_JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$cache/src"
cache=$(cd "$cache" && pwd)

# Build packages, installed only where missing, and only where apt-get can run (as setup-deps.sh).
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v "${CXX:-g++}" >/dev/null 2>&1 || need+=(g++)
command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
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

# --- the source package -------------------------------------------------------------------------
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

# --- the two packages ---------------------------------------------------------------------------
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
kversion=$(awk -F'[ )]+' '/set\(Kokkos_VERSION_(MAJOR|MINOR|PATCH)/{v = v (v ? "." : "") $2} END{print v}' \
  "$src/kokkos/CMakeLists.txt")

# --- configure, build, install ------------------------------------------------------------------
prefix=${2:-$cache/$key-$space}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
stamp="$prefix/.sparseport-kokkos.stamp"

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
common=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_CXX_STANDARD=17
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
  # Each installed library finds the others next to it (libkokkoskernels -> libkokkoscore).
  "-DCMAKE_INSTALL_RPATH=\$ORIGIN")
case "$space" in
  openmp) kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON) ;;
esac
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

# The stamp names everything the install depends on; any change rebuilds.
want=$(printf '%s\n' "trilinos-orig-sha256=$sha" "kokkos=$kversion" "space=$space" \
  "cxx=$(command -v "${CXX:-g++}") $("${CXX:-g++}" -dumpfullversion 2>/dev/null || true)" \
  "kokkos-options=${common[*]} ${kokkos_opts[*]}" "kokkoskernels-options=${kk_opts[*]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  log "Kokkos $kversion ($space) already installed in $prefix"
  echo "$prefix"
  exit 0
fi

build="$cache/build/$key-$space"
rm -rf "$build" "$stamp"
mkdir -p "$build"
step() {  # step NAME LOG COMMAND...: runs COMMAND, its output to LOG; on failure the log's tail
  local name=$1 out=$2; shift 2
  if ! nice "$@" >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    die "$name failed (full log in $out)"
  fi
}
t0=$SECONDS
log "building Kokkos $kversion ($space) with $jobs jobs into $prefix (logs in $build)"
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
