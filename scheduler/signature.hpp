// SPDX-License-Identifier: Apache-2.0
// Device and graph signatures, and the graph features the estimate reads (DESIGN.md section 4,
// steps 1 and 2). A problem is one op call's ABI argument struct; this file knows which part of
// each struct is the sparse operand, which is F, and which are the types.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/context.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::scheduler {

// 64-bit hash of bytes, four independent lanes so it runs at memory speed (not a crypto hash).
uint64_t hash_bytes(const void* data, size_t bytes, uint64_t seed = 0);
std::string hex64(uint64_t h);

struct DeviceSignature {
  std::vector<std::pair<std::string, std::string>> hardware;  // stable keys (model, cores, SMs ...)
  std::vector<std::pair<std::string, std::string>> versions;  // *_version keys, library and ABI included
  std::string hash;                                            // of the hardware keys only
  std::string versions_line;                                   // versions as "k=v;k=v" (make_signature)
  const std::string& versions_text() const { return versions_line; }
  std::string text() const;                                    // "key=value" lines, then hash=
  double number(const std::string& key, double fallback) const;
  std::string value(const std::string& key) const;
};

// Parses the plugin's "key=value" lines, overriding `threads` with the context's thread count
// when it sets one, and appends library_version and abi_version. Null slot: backend name plus
// describe_devices(). Kept per (plugin, state, threads) for the life of the process: the reference
// stays valid as long as the process runs. Every decision reads it, and a copy of its ~20 string
// pairs was a measurable part of a mini-batch's class decision (issue 35).
const DeviceSignature& device_signature(const PluginInfo& plugin, const sparseport_exec& exec);
// Whether this process has made the signature for this plugin, state and thread count already
// (the next device_signature() then costs a map lookup): for the test that contexts make it before
// the first op's decision.
bool device_signature_made(const PluginInfo& plugin, const sparseport_exec& exec);
// For tests: a signature from explicit fields.
DeviceSignature make_signature(std::vector<std::pair<std::string, std::string>> fields);

// The sparse operand of a problem as host-readable row structure.
struct Structure {
  int64_t rows = 0, cols = 0, nnz = 0;
  bool csr = true;              // false: a sorted (segment, gather) or unsorted (scatter) index array
  bool sorted = true;
  std::vector<int64_t> sample;  // a deterministic sample of colind (or of the index)
  // CSR rowptr as stored (int32 or int64): the caller's array for host memory, else a host copy.
  // Hashing reads these bytes directly; the widened copy below exists only once a decision needs
  // degrees (a cache hit never pays for it).
  int32_t index_type = SPARSEPORT_I32;
  const void* host_rowptr = nullptr;
  std::vector<char> copied_rowptr;
  std::vector<int64_t> rowptr;  // rows + 1 entries after widen_rowptr(); empty before

  const void* rowptr_bytes() const { return copied_rowptr.empty() ? host_rowptr : copied_rowptr.data(); }
  size_t rowptr_size() const { return static_cast<size_t>(rows + 1) * (index_type == SPARSEPORT_I64 ? 8 : 4); }
};
// Fills s.rowptr from the stored bytes (once).
void widen_rowptr(Structure& s);

// What the op's problem is: F, types, reduce, and where its sparse operand lives.
struct ProblemInfo {
  sparseport_op op = SPARSEPORT_OP_SPMM;
  int64_t features = 0;      // F (csr_attention: the width of Q and K)
  int64_t features_out = 0;  // output width (csr_attention: Fv; otherwise F)
  int32_t value_type = 0, index_type = 0, reduce = 0;
  bool scheduled = true;  // false for the structural ops (one variant per plugin, not probed)
};
ProblemInfo problem_info(sparseport_op op, const void* args);
std::string type_suffix(const ProblemInfo& p);  // "f32/i32/sum"

// Reads the sparse operand (copying from device memory when the plugin's memory is the device's):
// the CSR rowptr, or for an index array its run boundaries when sorted.
Structure read_structure(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args);
// The graph signature: shape, nnz, hash of rowptr, hash of the colind sample. Stable across runs.
std::string graph_signature(const Structure& s);
// A CSR operand's: shape, nnz, and its summary's two hashes (a sample each of rowptr and colind,
// plugin_abi.h), computed where the operand lives (summary.hpp).
std::string graph_signature(const sparseport_csr_summary& s);


}  // namespace sparseport::scheduler
