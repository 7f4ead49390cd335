# SPDX-License-Identifier: Apache-2.0
# Finds Kokkos + Kokkos Kernels and defines the INTERFACE target SparsePort::kokkos_deps that
# carries them. Used by the build (cmake/options.cmake) and by the installed package config (a
# consumer of the kokkos component must compile and link against the same Kokkos the library
# uses, so that both share one Kokkos::initialize). Two installations are understood:
#  - a standard Kokkos 3.x/4.x install (Kokkos_ROOT / KokkosKernels_ROOT / CMAKE_PREFIX_PATH) that
#    exports Kokkos::kokkos and Kokkos::kokkoskernels;
#  - Debian's Trilinos packages, whose Kokkos::kokkos is broken (its include path /usr/lib/include
#    does not exist): there the plain target trilinos_kokkoskernels works, with
#    KokkosKernels_INCLUDE_DIRS (/usr/include/trilinos) as a SYSTEM include so that Kokkos 3.4's
#    headers do not flood a C++20 build with warnings.
# A Kokkos with the CUDA space (scripts/kokkos.sh cuda, or a user's) compiles its users through its
# nvcc_wrapper: see "CUDA" below. Sets SPARSEPORT_KOKKOS_FOUND, SPARSEPORT_KOKKOS_FLAVOUR (one line
# for the summary) and SPARSEPORT_KOKKOS_CUDA (ON when that Kokkos has the CUDA space).
set(SPARSEPORT_KOKKOS_FOUND OFF)
set(SPARSEPORT_KOKKOS_FLAVOUR "not found")
set(SPARSEPORT_KOKKOS_CUDA OFF)
if(TARGET SparsePort::kokkos_deps)
  set(SPARSEPORT_KOKKOS_FOUND ON)
  if(Kokkos_ENABLE_CUDA)
    set(SPARSEPORT_KOKKOS_CUDA ON)
  endif()
  return()
endif()

# CUDA. A Kokkos 3.x built with CUDA writes the CUDA::cudart and CUDA::cuda_driver targets it saw
# into its KokkosConfig.cmake, each defined only if no such target exists yet. Under CMake 4 that
# copy is broken (it links CUDA::cudart_static_deps, which it does not define, and names a
# two-line include folder), so importing Kokkos fails. Finding CUDAToolkit first defines the real
# targets and Kokkos keeps them. Quiet: for a host-only Kokkos it changes nothing.
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()
# Such a Kokkos also turns on, by default, a global compiler launcher that sends every C++ command
# carrying -DKOKKOS_DEPENDENCE to nvcc_wrapper and passes all the others through a shell script.
# SparsePort's own build instead names the few targets that need nvcc_wrapper
# (sparseport_kokkos_compilation in plugins/kokkos and tests/kokkos), so the rest of the project
# compiles with the C++ compiler alone. A consumer of the installed package keeps Kokkos's default.
if(PROJECT_NAME STREQUAL "SparsePort" AND NOT DEFINED Kokkos_LAUNCH_COMPILER)
  set(Kokkos_LAUNCH_COMPILER OFF)
endif()

# A user who points Kokkos_ROOT at one prefix holding both Kokkos and Kokkos Kernels (the usual
# HPC-site layout) should not also have to set KokkosKernels_ROOT.
set(_sp_kk_hints "")
if(DEFINED Kokkos_ROOT)
  list(APPEND _sp_kk_hints "${Kokkos_ROOT}")
elseif(DEFINED ENV{Kokkos_ROOT})
  list(APPEND _sp_kk_hints "$ENV{Kokkos_ROOT}")
endif()
find_package(KokkosKernels QUIET HINTS ${_sp_kk_hints})

if(KokkosKernels_FOUND AND TARGET Kokkos::kokkoskernels)
  add_library(SparsePort::kokkos_deps INTERFACE IMPORTED GLOBAL)
  target_link_libraries(SparsePort::kokkos_deps INTERFACE Kokkos::kokkoskernels)
  if(TARGET Kokkos::kokkos)
    target_link_libraries(SparsePort::kokkos_deps INTERFACE Kokkos::kokkos)
  endif()
  set(SPARSEPORT_KOKKOS_FOUND ON)
  set(SPARSEPORT_KOKKOS_FLAVOUR "Kokkos ${Kokkos_VERSION} via Kokkos::kokkoskernels (${KokkosKernels_DIR})")
  if(Kokkos_ENABLE_CUDA)
    set(SPARSEPORT_KOKKOS_CUDA ON)
    string(APPEND SPARSEPORT_KOKKOS_FLAVOUR ", CUDA space (${Kokkos_ARCH}) through nvcc_wrapper")
  endif()
elseif(KokkosKernels_FOUND AND TARGET trilinos_kokkoskernels)
  set(_sp_kk_inc "")
  foreach(d IN LISTS KokkosKernels_INCLUDE_DIRS)
    get_filename_component(d "${d}" ABSOLUTE)
    list(APPEND _sp_kk_inc "${d}")
  endforeach()
  add_library(SparsePort::kokkos_deps INTERFACE IMPORTED GLOBAL)
  target_link_libraries(SparsePort::kokkos_deps INTERFACE trilinos_kokkoskernels)
  target_include_directories(SparsePort::kokkos_deps SYSTEM INTERFACE ${_sp_kk_inc})
  set(SPARSEPORT_KOKKOS_FOUND ON)
  set(SPARSEPORT_KOKKOS_FLAVOUR "Trilinos packages (trilinos_kokkoskernels, SYSTEM include ${_sp_kk_inc})")
  unset(_sp_kk_inc)
endif()
unset(_sp_kk_hints)

# Routes the compile and link commands of the given targets through Kokkos's compiler (nvcc_wrapper
# for CUDA) when the Kokkos found has a device space; does nothing for a host-only Kokkos (Debian's,
# OpenMP) or a Kokkos without the helper. Kokkos's launcher redirects only the commands that carry
# -DKOKKOS_DEPENDENCE (Kokkos::kokkos's compile definition and link option); a target's other
# commands run unchanged.
function(sparseport_kokkos_compilation)
  if(COMMAND kokkos_compilation AND (Kokkos_ENABLE_CUDA OR Kokkos_ENABLE_HIP))
    kokkos_compilation(TARGET ${ARGN})
  endif()
endfunction()
