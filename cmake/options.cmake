# SPDX-License-Identifier: Apache-2.0
# Every SparsePort option, in one place, with autodetected defaults.
include(CheckLanguage)
find_package(PkgConfig QUIET)

# ---- backends -------------------------------------------------------------------------------
find_package(OpenMP QUIET COMPONENTS CXX)
set(_sp_have_openmp OFF)
if(OpenMP_CXX_FOUND)
  set(_sp_have_openmp ON)
endif()
option(SPARSEPORT_ENABLE_OPENMP "Build the openmp plugin" ${_sp_have_openmp})

check_language(CUDA)
set(_sp_have_cuda OFF)
if(CMAKE_CUDA_COMPILER)
  set(_sp_have_cuda ON)
endif()
option(SPARSEPORT_ENABLE_CUDA "Build the cuda plugin (needs nvcc; runs only where a GPU is)" ${_sp_have_cuda})
# spmm.tc_window (tensor cores, issue 33) is compiled with the cuda plugin always and offered only when
# this is ON; the environment variable SPARSEPORT_CUDA_TENSOR_CORES (0 or 1) overrides it at run time.
# OFF until its GPU tests pass: on its first run (H200, 2026-12-02) 9 of its 14 failed, by a bug in
# the tests' matrices found afterwards, and it ran slower than spmm.hub_split on bf16 data.
option(SPARSEPORT_CUDA_TENSOR_CORES "Offer spmm.tc_window (tensor cores) in the cuda plugin" OFF)
# -lineinfo for the cuda plugin's kernels: compute-sanitizer and Nsight name source lines. OFF by
# default because CUDA loads a kernel file's module at its first launch, at about 1 ms per MB, and
# the line tables and the PTX text that -lineinfo embeds were 60 % of a module (spmm_vec4: 9.9 MB, of
# which 3.4 MB code); with them a first launch took 1.9x as long on an H100
# (benchmarks/results/2026-12-05-h100-module-preload.md). The code is the same either way.
option(SPARSEPORT_CUDA_LINEINFO "Compile the cuda plugin's kernels with -lineinfo (for sanitizers and profilers)" OFF)

# Kokkos: Debian's Trilinos packages or a user's Kokkos (Kokkos_ROOT); see SparsePortKokkos.cmake.
include(SparsePortKokkos)
option(SPARSEPORT_ENABLE_KOKKOS "Build the kokkos plugin" ${SPARSEPORT_KOKKOS_FOUND})

# SuiteSparse:GraphBLAS, the CPU vendor baseline (spmm.graphblas in the openmp plugin). Debian ships
# no CMake package for it (only a Find module under cmake/SuiteSparse), so look for the header and
# the library directly; GraphBLAS_ROOT is honoured by find_path/find_library.
find_path(SPARSEPORT_GRAPHBLAS_INCLUDE_DIR GraphBLAS.h PATH_SUFFIXES suitesparse)
find_library(SPARSEPORT_GRAPHBLAS_LIBRARY graphblas)
mark_as_advanced(SPARSEPORT_GRAPHBLAS_INCLUDE_DIR SPARSEPORT_GRAPHBLAS_LIBRARY)
set(_sp_have_graphblas OFF)
if(SPARSEPORT_GRAPHBLAS_INCLUDE_DIR AND SPARSEPORT_GRAPHBLAS_LIBRARY)
  set(_sp_have_graphblas ON)
endif()
option(SPARSEPORT_ENABLE_GRAPHBLAS "Offer spmm.graphblas (SuiteSparse:GraphBLAS) in the openmp plugin" ${_sp_have_graphblas})

set(_sp_have_hwloc OFF)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc>=2.0)
  if(HWLOC_FOUND)
    set(_sp_have_hwloc ON)
  endif()
endif()
option(SPARSEPORT_ENABLE_HWLOC "Read CPU signatures with hwloc" ${_sp_have_hwloc})

# The backends this version knows, in priority order. A backend is built when it is enabled and
# its plugin folder exists; otherwise sparseport::plugins() says why not.
set(SPARSEPORT_KNOWN_BACKENDS reference openmp cuda kokkos)

# The fastest CPU backend that will be built, so a program that names none is not serial.
set(_sp_default_backend reference)
if(SPARSEPORT_ENABLE_OPENMP AND EXISTS ${PROJECT_SOURCE_DIR}/plugins/openmp/CMakeLists.txt)
  set(_sp_default_backend openmp)
endif()
set(SPARSEPORT_DEFAULT_BACKEND "${_sp_default_backend}" CACHE STRING
    "Backend used when the program names none and SPARSEPORT_BACKEND is unset")
set_property(CACHE SPARSEPORT_DEFAULT_BACKEND PROPERTY STRINGS ${SPARSEPORT_KNOWN_BACKENDS})

# ---- what to build --------------------------------------------------------------------------
option(SPARSEPORT_BUILD_CLI "Build the sparseport program" ON)
option(SPARSEPORT_BUILD_TESTS "Build the tests" ${PROJECT_IS_TOP_LEVEL})
option(SPARSEPORT_BUILD_BENCHMARKS "Build the Google Benchmark suites" ${PROJECT_IS_TOP_LEVEL})
option(SPARSEPORT_WERROR "Treat compiler warnings as errors" OFF)
# libFuzzer targets for every parser (tests/fuzz): clang only, and always with ASan + UBSan, which
# find what the fuzzer provokes; the library is compiled with libFuzzer's coverage instrumentation.
option(SPARSEPORT_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies SPARSEPORT_SANITIZE)" OFF)
option(SPARSEPORT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" ${SPARSEPORT_FUZZ})
option(SPARSEPORT_TSAN "Build with ThreadSanitizer (the tsan preset; not with SPARSEPORT_SANITIZE)" OFF)
if(SPARSEPORT_TSAN AND SPARSEPORT_SANITIZE)
  message(FATAL_ERROR "SPARSEPORT_TSAN and SPARSEPORT_SANITIZE cannot be combined: ThreadSanitizer and AddressSanitizer exclude each other")
endif()

set(_sp_data_default "")
if(EXISTS "${PROJECT_SOURCE_DIR}/../shared/data")
  get_filename_component(_sp_data_default "${PROJECT_SOURCE_DIR}/../shared/data" ABSOLUTE)
endif()
set(SPARSEPORT_DATA_DIR "${_sp_data_default}" CACHE PATH
    "Folder of real .mtx/.mtx.gz matrices for tests and benchmarks (empty: none)")

# An option switched on by hand for something this machine lacks is an error, not a silent skip.
if(SPARSEPORT_ENABLE_CUDA AND NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
endif()
if(SPARSEPORT_ENABLE_OPENMP AND NOT OpenMP_CXX_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_OPENMP=ON but the compiler has no OpenMP support")
endif()
if(SPARSEPORT_ENABLE_KOKKOS AND NOT SPARSEPORT_KOKKOS_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_KOKKOS=ON but Kokkos Kernels was not found (Debian: libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libblas-dev liblapack-dev; or set Kokkos_ROOT to a Kokkos install exporting Kokkos::kokkos and Kokkos::kokkoskernels)")
endif()
if(SPARSEPORT_ENABLE_GRAPHBLAS AND NOT _sp_have_graphblas)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_GRAPHBLAS=ON but GraphBLAS.h or libgraphblas was not found (Debian: libgraphblas-dev; or set GraphBLAS_ROOT)")
endif()
if(SPARSEPORT_ENABLE_GRAPHBLAS AND NOT SPARSEPORT_ENABLE_OPENMP)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_GRAPHBLAS=ON but SPARSEPORT_ENABLE_OPENMP=OFF: spmm.graphblas is offered by the openmp plugin")
endif()
if(SPARSEPORT_ENABLE_GRAPHBLAS AND NOT TARGET SparsePort::graphblas)
  add_library(SparsePort::graphblas UNKNOWN IMPORTED)
  set_target_properties(SparsePort::graphblas PROPERTIES IMPORTED_LOCATION "${SPARSEPORT_GRAPHBLAS_LIBRARY}")
  target_include_directories(SparsePort::graphblas SYSTEM INTERFACE "${SPARSEPORT_GRAPHBLAS_INCLUDE_DIR}")
endif()
if(SPARSEPORT_ENABLE_HWLOC AND NOT HWLOC_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_HWLOC=ON but hwloc >= 2.0 was not found by pkg-config (Debian: libhwloc-dev)")
endif()
if(SPARSEPORT_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "SPARSEPORT_FUZZ=ON needs clang (libFuzzer), but the C++ compiler is ${CMAKE_CXX_COMPILER_ID} (use the 'fuzz' preset, or -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)")
endif()
if(SPARSEPORT_FUZZ AND NOT SPARSEPORT_SANITIZE)
  message(FATAL_ERROR "SPARSEPORT_FUZZ=ON needs SPARSEPORT_SANITIZE=ON: the fuzz targets find memory errors and undefined behaviour through ASan and UBSan")
endif()
if(SPARSEPORT_FUZZ AND NOT SPARSEPORT_BUILD_TESTS)
  message(FATAL_ERROR "SPARSEPORT_FUZZ=ON needs SPARSEPORT_BUILD_TESTS=ON (the fuzz targets live in tests/fuzz)")
endif()
if(NOT SPARSEPORT_DEFAULT_BACKEND IN_LIST SPARSEPORT_KNOWN_BACKENDS)
  message(FATAL_ERROR "SPARSEPORT_DEFAULT_BACKEND='${SPARSEPORT_DEFAULT_BACKEND}' is not one of: ${SPARSEPORT_KNOWN_BACKENDS}")
endif()
# A default backend that will not be built would make every program that names none fail at run
# time with NotCompiled; say so now instead.
if(NOT SPARSEPORT_DEFAULT_BACKEND STREQUAL "reference")
  string(TOUPPER "${SPARSEPORT_DEFAULT_BACKEND}" _sp_default_upper)
  if(NOT SPARSEPORT_ENABLE_${_sp_default_upper})
    message(FATAL_ERROR "SPARSEPORT_DEFAULT_BACKEND=${SPARSEPORT_DEFAULT_BACKEND} but SPARSEPORT_ENABLE_${_sp_default_upper}=OFF: that backend is not built")
  endif()
endif()

# ---- distributed ops (src/dist) -------------------------------------------------------------
# MPI for sparseport::dist (SparsePort::dist, `sparseport run --dist`, the MPI tests). The core
# library never links MPI; only the dist library, the program and its tests do. The MPI-2 C++
# bindings are not used (OpenMPI's would add libmpi_cxx).
set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "Do not use the deprecated MPI C++ bindings")
find_package(MPI QUIET COMPONENTS CXX)
set(_sp_have_mpi OFF)
if(MPI_CXX_FOUND)
  set(_sp_have_mpi ON)
endif()
option(SPARSEPORT_ENABLE_MPI "Build sparseport::dist (distributed ops over MPI) and `sparseport run --dist`" ${_sp_have_mpi})
if(SPARSEPORT_ENABLE_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_MPI=ON but no MPI with C++ support was found (Debian: libopenmpi-dev openmpi-bin)")
endif()

# METIS 5 for sparseport::dist::partition_metis (a graph partition that cuts the halo). Only the
# dist library links it (PRIVATE); without it partition_metis throws Unsupported. Debian ships no
# CMake package for it, so look for the header and the library directly (elsewhere: CMAKE_PREFIX_PATH).
find_path(SPARSEPORT_METIS_INCLUDE_DIR metis.h)
find_library(SPARSEPORT_METIS_LIBRARY metis)
mark_as_advanced(SPARSEPORT_METIS_INCLUDE_DIR SPARSEPORT_METIS_LIBRARY)
set(_sp_have_metis OFF)
if(SPARSEPORT_ENABLE_MPI AND SPARSEPORT_METIS_INCLUDE_DIR AND SPARSEPORT_METIS_LIBRARY)
  set(_sp_have_metis ON)
endif()
option(SPARSEPORT_ENABLE_METIS "Partition sparseport::dist with METIS (dist::partition_metis)" ${_sp_have_metis})
if(SPARSEPORT_ENABLE_METIS AND NOT (SPARSEPORT_METIS_INCLUDE_DIR AND SPARSEPORT_METIS_LIBRARY))
  message(FATAL_ERROR "SPARSEPORT_ENABLE_METIS=ON but metis.h or libmetis was not found (Debian: libmetis-dev; or add its prefix to CMAKE_PREFIX_PATH)")
endif()
if(SPARSEPORT_ENABLE_METIS AND NOT SPARSEPORT_ENABLE_MPI)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_METIS=ON but SPARSEPORT_ENABLE_MPI=OFF: METIS is used by sparseport::dist only")
endif()

# NCCL for sparseport::dist's halo between GPUs (the nccl transport). It comes with the CUDA
# toolkit here (/usr/local/cuda) and on the GPU machine; only the dist library links it (PRIVATE).
set(_sp_have_nccl OFF)
if(SPARSEPORT_ENABLE_MPI AND SPARSEPORT_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  find_path(SPARSEPORT_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(SPARSEPORT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  mark_as_advanced(SPARSEPORT_NCCL_INCLUDE_DIR SPARSEPORT_NCCL_LIBRARY)
  if(CUDAToolkit_FOUND AND SPARSEPORT_NCCL_INCLUDE_DIR AND SPARSEPORT_NCCL_LIBRARY)
    set(_sp_have_nccl ON)
  endif()
endif()
option(SPARSEPORT_ENABLE_NCCL "The nccl transport of sparseport::dist (needs MPI, CUDA and NCCL)" ${_sp_have_nccl})
if(SPARSEPORT_ENABLE_NCCL AND NOT _sp_have_nccl)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_NCCL=ON but MPI, the cuda plugin or nccl.h/libnccl is missing")
endif()
