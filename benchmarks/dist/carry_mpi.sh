#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Open MPI for a machine that has none and no network (the GPU machine), from Debian's packages
# (issue 19). Two steps:
#   here (Debian 12, network):  benchmarks/dist/carry_mpi.sh download [DIR]   # .debs into DIR
#   there (any x86-64 Linux):   source benchmarks/dist/carry_mpi.sh activate [DIR] [PREFIX]
# download fetches Open MPI 4.1 (openmpi-bin, libopenmpi-dev) and the libraries it loads that a
# CUDA image may lack (PMIx, libevent, hwloc, libfabric, UCX, verbs, PSM, libnl, munge, numa,
# ltdl; 7.4 MB) with `apt-get download` into DIR (default .device-data/mpi, git-ignored: name
# .device-data in the device tool's carry). activate unpacks them with `dpkg -x` into PREFIX
# (default /opt/sparseport-mpi; never /, whose own files they could replace) and exports what a
# relocated Open MPI needs: OPAL_PREFIX (Open MPI finds its components and help files under it
# instead of /usr), PMIX_INSTALL_PREFIX (the same for PMIx), PATH (mpiexec, mpicxx),
# LD_LIBRARY_PATH, and MPI_HOME/MPIEXEC for CMake's FindMPI. Checked here with the system's Open
# MPI and PMIx folders moved away: `mpiexec -np 2 hostname` ran from the relocated copy.
set -u
mode=${1:-}
dir=${2:-.device-data/mpi}
case "$mode" in
  download)
    mkdir -p "$dir"
    (cd "$dir" && apt-get download openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 \
      libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 \
      libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libmunge2 libnuma1 libltdl7 libpciaccess0 \
      libxnvctrl0 libjansson4)
    ;;
  activate)
    prefix=${3:-/opt/sparseport-mpi}
    mkdir -p "$prefix"
    for f in "$dir"/*.deb; do dpkg -x "$f" "$prefix"; done
    usr="$prefix/usr"
    lib="$usr/lib/x86_64-linux-gnu"
    # Debian names the programs *.openmpi and points the plain names at them by alternatives.
    for p in mpiexec mpirun mpicc mpicxx mpic++; do
      [ -e "$usr/bin/$p.openmpi" ] && ln -sf "$p.openmpi" "$usr/bin/$p"
    done
    [ -e "$usr/bin/mpirun" ] || ln -sf orterun "$usr/bin/mpirun"
    export OPAL_PREFIX="$usr"
    export PMIX_INSTALL_PREFIX="$lib/pmix2"
    export PATH="$usr/bin:$PATH"
    export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib:$lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export MPI_HOME="$usr"  # FindMPI looks for $MPI_HOME/bin/mpicxx
    export MPIEXEC="$usr/bin/mpiexec"
    # As root (the GPU machine), Open MPI wants these to launch at all.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # The GPU image has a PMIx of its own whose zlib component does not load with this one: a
    # warning only.
    export PMIX_MCA_pcompress_base_silence_warning=1
    missing=$(ldd "$lib/openmpi/lib/libmpi.so.40" "$usr/bin/orterun" 2>/dev/null | grep "not found" | sort -u)
    [ -z "$missing" ] || echo "carry_mpi.sh: missing libraries: $missing" >&2
    ;;
  *)
    echo "usage: carry_mpi.sh download [DIR] | source carry_mpi.sh activate [DIR] [PREFIX]" >&2
    ;;
esac
