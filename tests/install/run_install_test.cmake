# SPDX-License-Identifier: Apache-2.0
# Run by CTest in script mode; every step must succeed, and the consumer must print its check line.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (exit ${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(cfg "${CONFIG}")
if(cfg STREQUAL "")
  set(cfg Release)
endif()
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${cfg})
step("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${cfg})
step("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
step("running the consumer" ${WORK_DIR}/consumer/consumer)
if(NOT step_output MATCHES "consumer: ok")
  message(FATAL_ERROR "install test: the consumer ran but did not report success:\n${step_output}")
endif()
message(STATUS "${step_output}")

# The kokkos component, when the library was built with it: find_package(... COMPONENTS kokkos),
# link SparsePort::kokkos, and run a program that initialises Kokkos itself.
if(KOKKOS_CONSUMER_DIR)
  step("configuring the kokkos consumer" ${CMAKE_COMMAND} -S ${KOKKOS_CONSUMER_DIR} -B ${WORK_DIR}/consumer_kokkos
       -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${cfg})
  step("building the kokkos consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer_kokkos)
  step("running the kokkos consumer" ${WORK_DIR}/consumer_kokkos/consumer_kokkos)
  if(NOT step_output MATCHES "consumer_kokkos: ok")
    message(FATAL_ERROR "install test: the kokkos consumer ran but did not report success:\n${step_output}")
  endif()
  message(STATUS "${step_output}")
endif()
