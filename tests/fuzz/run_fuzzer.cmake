# SPDX-License-Identifier: Apache-2.0
# One CTest fuzz run: FUZZER for SECONDS, starting from SEEDS (read, never written) in a fresh
# scratch corpus WORK/corpus; crash inputs go to WORK/artifacts. Prints libFuzzer's final stats and
# fails, with the end of the log, when the target crashed, leaked, hung or ran out of memory.
#   cmake -DFUZZER=... -DSEEDS=... -DWORK=... -DSECONDS=60 [-DDICT=...] -P run_fuzzer.cmake
foreach(v FUZZER SEEDS WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${v}=... is missing")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
set(args -max_total_time=${SECONDS} -timeout=30 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix=${WORK}/artifacts/)
if(DEFINED DICT AND EXISTS "${DICT}")
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND "${FUZZER}" ${args} "${WORK}/corpus" "${SEEDS}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
file(WRITE "${WORK}/fuzz.log" "${log}")
string(REGEX MATCHALL "[^\n]*(INITED|DONE|stat::)[^\n]*" summary "${log}")
string(REPLACE ";" "\n" summary "${summary}")
message("${FUZZER} ${args} ${WORK}/corpus ${SEEDS}\n${summary}")
if(NOT rc EQUAL 0)
  string(LENGTH "${log}" n)
  if(n GREATER 8000)
    math(EXPR start "${n} - 8000")
    string(SUBSTRING "${log}" ${start} -1 log)
  endif()
  file(GLOB crashes "${WORK}/artifacts/*")
  message(FATAL_ERROR "${log}\nthe fuzz target failed (exit ${rc}); inputs: ${crashes}; full log: ${WORK}/fuzz.log")
endif()
