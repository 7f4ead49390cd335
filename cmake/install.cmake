# SPDX-License-Identifier: Apache-2.0
# `cmake --install` puts the umbrella library, the public headers and a package config that
# exports SparsePort::sparseport for find_package(SparsePort).
include(CMakePackageConfigHelpers)

install(TARGETS sparseport EXPORT SparsePortTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sparseport DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/sparseport/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparseport)
if(TARGET sparseport_cli)
  install(TARGETS sparseport_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(_sp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/SparsePort)
install(EXPORT SparsePortTargets NAMESPACE SparsePort:: DESTINATION ${_sp_cmake_dir})
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
