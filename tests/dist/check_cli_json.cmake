# SPDX-License-Identifier: Apache-2.0
# `sparseport run --dist --json` on 2 ranks: exactly one JSON object on stdout (rank 0's), with the
# usual fields of `run --json` plus the distributed ones; the result verified against the
# single-process reference; the measured halo equal to the one predicted from the partition.
# Then `--dist` with an op it does not run is a usage error (exit 2).
# -DLAUNCHER=mpiexec|-n|2|flags... (| for ;)  -DCLI=path/to/sparseport
string(REPLACE "|" ";" launcher "${LAUNCHER}")

function(run_cli out_var rc_var)
  execute_process(COMMAND ${launcher} ${CLI} ${ARGN}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "sparseport ${ARGN}: exit ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

# Fails with `what` unless the if() condition `cond` (as text, e.g. "rc EQUAL 0") holds.
macro(expect cond what)
  cmake_language(EVAL CODE "if(NOT (${cond}))\nmessage(FATAL_ERROR [==[${what}]==])\nendif()")
endmacro()

# A 1000-vertex RMAT-like graph with hubs: every rank has local and remote entries, and mean
# needs the combine step.
run_cli(out rc run --dist --op spmm --reduce mean --F 16 --reps 3 --backend openmp --json --quiet rmat:10:8)
expect("rc EQUAL 0" "run --dist exited with ${rc}")
string(STRIP "${out}" out)
string(REGEX MATCHALL "\n" newlines "${out}")
list(LENGTH newlines n)
expect("n EQUAL 0" "expected exactly one line on stdout (rank 0's JSON object), got:\n${out}")

foreach(key op backend variant graph n nnz F dtype index reduce reps threads ms ms_min gflops gbps_gathered verified
            err_over_tol reference ranks halo_bytes halo_bytes_predicted comm_ms compute_ms transport)
  string(JSON value ERROR_VARIABLE e GET "${out}" ${key})
  expect("NOT e" "JSON field '${key}' is missing: ${e}")
  set(j_${key} "${value}")
endforeach()
expect("j_op STREQUAL spmm" "op is '${j_op}'")
expect("j_backend STREQUAL openmp" "backend is '${j_backend}'")
expect("j_reduce STREQUAL mean" "reduce is '${j_reduce}'")
expect("j_F EQUAL 16" "F is ${j_F}")
expect("j_n EQUAL 1024" "n is ${j_n}")
expect("j_ranks EQUAL 2" "ranks is ${j_ranks}")
expect("j_transport STREQUAL mpi" "transport is '${j_transport}'")
expect("j_verified STREQUAL ON" "verified is ${j_verified}")
expect("j_halo_bytes GREATER 0" "halo_bytes is ${j_halo_bytes}")
expect("j_halo_bytes EQUAL j_halo_bytes_predicted" "halo_bytes ${j_halo_bytes} != predicted ${j_halo_bytes_predicted}")
math(EXPR rows_moved "${j_halo_bytes} % (16 * 4)")
expect("rows_moved EQUAL 0" "halo_bytes ${j_halo_bytes} is not whole rows of 16 floats")
foreach(key ms comm_ms compute_ms)
  expect("j_${key} MATCHES \"^[0-9.eE+-]+$\"" "${key} is not a number: ${j_${key}}")
endforeach()

# An op --dist does not run: a usage error (found before MPI starts, so each rank says it).
run_cli(out rc run --dist --op sddmm --quiet rmat:8:4)
expect("rc EQUAL 2" "--dist --op sddmm exited with ${rc}, expected 2 (usage error)")
