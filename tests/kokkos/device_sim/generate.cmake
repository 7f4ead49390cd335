# SPDX-License-Identifier: Apache-2.0
# One source of kernels/kokkos made into its device-simulation copy (tests/kokkos/device_sim):
#   cmake -DIN=kernels/kokkos/spmm.cpp -DOUT=<build>/device_sim/kernels/kokkos/spmm.cpp -P generate.cmake
# The device branches are taken on a host space and the CUDA-sized shapes are replaced by what a host
# team can be (SPARSEPORT_SIM_* macros, set per build in CMakeLists.txt). Every replacement must
# apply as many times as listed: a kernel whose text moved fails the build here, by name, instead
# of quietly simulating the host path.
cmake_minimum_required(VERSION 3.20)

file(READ "${IN}" text)
get_filename_component(name "${IN}" NAME)

# replace(FROM TO COUNT): every FROM becomes TO, and there must be exactly COUNT of them (0: any
# number, at least one).
function(replace from to count)
  string(LENGTH "${text}" before)
  string(LENGTH "${from}" from_length)
  string(LENGTH "${to}" to_length)
  string(REPLACE "${from}" "${to}" after "${text}")
  string(LENGTH "${after}" now)
  if(from_length EQUAL to_length)
    message(FATAL_ERROR "device_sim: ${name}: a replacement of equal length cannot be counted: ${from}")
  endif()
  math(EXPR found "(${now} - ${before}) / (${to_length} - ${from_length})")
  if(found EQUAL 0 OR (NOT count EQUAL 0 AND NOT found EQUAL count))
    message(FATAL_ERROR "device_sim: ${name}: '${from}' found ${found} times, expected ${count} (the kernel's text changed: update tests/kokkos/device_sim/generate.cmake)")
  endif()
  set(text "${after}" PARENT_SCOPE)
endfunction()

if(name STREQUAL "common.hpp")
  # vector_length's cap: a CUDA warp's 32 lanes (a host space allows 1 or its own length).
  replace("const int64_t cap = Policy::vector_length_max();" "const int64_t cap = SPARSEPORT_SIM_VLMAX;" 1)
  # The message reductions (reduce_sorted, reduce_atomic: segment_reduce, gather_scatter).
  replace("if constexpr (!kDeviceMemory) {" "if constexpr (false) {  // device_sim" 2)
  # reduce_chunks: teams of what a host team can be, and the chunk length the test chooses.
  replace("inline constexpr int kMessageItemsPerTeam = 8;"
          "inline constexpr int kMessageItemsPerTeam = SPARSEPORT_SIM_ITEMS_PER_TEAM;" 1)
  replace("  return std::max(kMinMessageChunk, per_item);"
          "  extern int64_t sim_message_chunk;  // device_sim: tests/kokkos/device_sim/sim_plans.cpp\n  return sim_message_chunk > 0 ? sim_message_chunk : std::max(kMinMessageChunk, per_item);" 1)
else()
  replace("if constexpr (!kDeviceMemory) {" "if constexpr (false) {  // device_sim" 0)
endif()
if(name STREQUAL "spmm.cpp")
  replace("if constexpr (kDeviceMemory) {" "if constexpr (true) {  // device_sim" 1)
  # hub_split's lane groups: a team of kGroupItemsPerTeam x groups threads must fit a host team.
  replace("constexpr int kGroupItemsPerTeam = 2;" "constexpr int kGroupItemsPerTeam = SPARSEPORT_SIM_ITEMS_PER_TEAM;" 1)
  replace("const int groups = static_cast<int>(Policy::vector_length_max() / vl);"
          "const int groups = static_cast<int>(std::min<int64_t>(SPARSEPORT_SIM_VLMAX / vl, SPARSEPORT_SIM_GROUPS_CAP));" 1)
  replace("Policy::vector_length_max()" "int64_t{SPARSEPORT_SIM_VLMAX}" 2)
  # hub_split's plan with its row order of the whole rows, as on a device.
  replace("args.a.nnz, t, kDeviceMemory);" "args.a.nnz, t, true);  // device_sim" 1)
endif()
if(name STREQUAL "csr_transpose.cpp")
  # The result rows' sort: a team of real threads where the space has them.
  replace("Policy(teams, Kokkos::AUTO)" "Policy(teams, SPARSEPORT_SIM_TRANSPOSE_TEAM)" 1)
endif()

file(WRITE "${OUT}.tmp" "// Generated from ${IN} by tests/kokkos/device_sim/generate.cmake: do not edit.\n${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
