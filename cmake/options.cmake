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

find_package(KokkosKernels QUIET)
set(_sp_have_kokkos OFF)
if(KokkosKernels_FOUND)
  set(_sp_have_kokkos ON)
endif()
option(SPARSEPORT_ENABLE_KOKKOS "Build the kokkos plugin" ${_sp_have_kokkos})

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
option(SPARSEPORT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

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
if(SPARSEPORT_ENABLE_KOKKOS AND NOT KokkosKernels_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_KOKKOS=ON but Kokkos Kernels was not found (Debian: libtrilinos-kokkos-kernels-dev; or set Kokkos_ROOT)")
endif()
if(SPARSEPORT_ENABLE_HWLOC AND NOT HWLOC_FOUND)
  message(FATAL_ERROR "SPARSEPORT_ENABLE_HWLOC=ON but hwloc >= 2.0 was not found by pkg-config (Debian: libhwloc-dev)")
endif()
if(NOT SPARSEPORT_DEFAULT_BACKEND IN_LIST SPARSEPORT_KNOWN_BACKENDS)
  message(FATAL_ERROR "SPARSEPORT_DEFAULT_BACKEND='${SPARSEPORT_DEFAULT_BACKEND}' is not one of: ${SPARSEPORT_KNOWN_BACKENDS}")
endif()
