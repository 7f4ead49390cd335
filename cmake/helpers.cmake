# SPDX-License-Identifier: Apache-2.0

# Warnings, sanitizers and the internal include root for one of our own targets.
function(sparseport_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${SPARSEPORT_WERROR}>>:-Werror>)
  if(SPARSEPORT_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

function(sparseport_print_summary)
  message(STATUS "SparsePort ${PROJECT_VERSION}")
  foreach(b IN LISTS SPARSEPORT_KNOWN_BACKENDS)
    message(STATUS "  backend ${b}: ${SPARSEPORT_STATUS_${b}}")
  endforeach()
  message(STATUS "  default backend: ${SPARSEPORT_DEFAULT_BACKEND}")
  message(STATUS "  hwloc: ${SPARSEPORT_ENABLE_HWLOC}; data dir: '${SPARSEPORT_DATA_DIR}'")
  if(SPARSEPORT_ENABLE_KOKKOS)
    message(STATUS "  kokkos: ${SPARSEPORT_KOKKOS_FLAVOUR}")
  endif()
  message(STATUS "  graphblas (spmm.graphblas in openmp): ${SPARSEPORT_ENABLE_GRAPHBLAS}")
endfunction()
