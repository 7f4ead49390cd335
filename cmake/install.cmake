# SPDX-License-Identifier: Apache-2.0
# `cmake --install` puts the umbrella library, the public headers and a package config that
# exports SparsePort::sparseport for find_package(SparsePort).
include(CMakePackageConfigHelpers)

install(TARGETS sparseport EXPORT SparsePortTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sparseport DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h"
  PATTERN "dist.hpp" EXCLUDE)  # with sparseport::dist only (below)
if(TARGET sparseport_dist)
  install(FILES ${PROJECT_SOURCE_DIR}/include/sparseport/dist.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparseport)
endif()
install(FILES ${PROJECT_BINARY_DIR}/include/sparseport/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparseport)
if(TARGET sparseport_cli)
  install(TARGETS sparseport_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(_sp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/SparsePort)
install(EXPORT SparsePortTargets NAMESPACE SparsePort:: DESTINATION ${_sp_cmake_dir})
# sparseport::dist (with MPI) in an export set of its own, loaded only by the `dist` component,
# which finds MPI first: consumers of the core library never need MPI.
set(SPARSEPORT_HAVE_DIST OFF)
if(TARGET sparseport_dist)
  set(SPARSEPORT_HAVE_DIST ON)
  install(TARGETS sparseport_dist EXPORT SparsePortDistTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT SparsePortDistTargets NAMESPACE SparsePort:: DESTINATION ${_sp_cmake_dir})
endif()
# The kokkos component re-finds the Kokkos the library was built against; remember where it was.
set(SPARSEPORT_KOKKOS_ROOT_HINT "")
if(DEFINED Kokkos_ROOT)
  set(SPARSEPORT_KOKKOS_ROOT_HINT "${Kokkos_ROOT}")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SparsePortConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SparsePortConfig.cmake INSTALL_DESTINATION ${_sp_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SparsePortConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SparsePortConfig.cmake ${PROJECT_BINARY_DIR}/SparsePortConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/SparsePortKokkos.cmake
  DESTINATION ${_sp_cmake_dir})
