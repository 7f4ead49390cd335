# SPDX-License-Identifier: Apache-2.0

# Warnings, sanitizers and the internal include root for one of our own targets.
function(sparseport_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${SPARSEPORT_WERROR}>>:-Werror>
    # .cu files: the host compiler warns on their host code (not -Wpedantic: it flags every line
    # directive nvcc generates); with SPARSEPORT_WERROR, nvcc's own warnings (front end, ptxas)
    # and the host compiler's are errors. CCCL and cuSPARSE headers pass both (CUDA 13.0, GCC 12).
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${SPARSEPORT_WERROR}>>:--Werror=all-warnings -Xcompiler=-Werror>)
  if(SPARSEPORT_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(SPARSEPORT_TSAN)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
  if(SPARSEPORT_FUZZ)  # coverage feedback for libFuzzer; the fuzz binaries link -fsanitize=fuzzer
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
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
  message(STATUS "  mpi (sparseport::dist, run --dist): ${SPARSEPORT_ENABLE_MPI}")
  message(STATUS "  metis (dist::partition_metis): ${SPARSEPORT_ENABLE_METIS}")
  message(STATUS "  nccl (dist's transport between GPUs): ${SPARSEPORT_ENABLE_NCCL}")
endfunction()
