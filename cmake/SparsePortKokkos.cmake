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
# Sets SPARSEPORT_KOKKOS_FOUND and SPARSEPORT_KOKKOS_FLAVOUR (one line for the summary).
set(SPARSEPORT_KOKKOS_FOUND OFF)
set(SPARSEPORT_KOKKOS_FLAVOUR "not found")
if(TARGET SparsePort::kokkos_deps)
  set(SPARSEPORT_KOKKOS_FOUND ON)
  return()
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
