// SPDX-License-Identifier: Apache-2.0
// The float32 path for 16-bit values (f16, bf16): the op's 16-bit operands are converted to float32
// copies, the op runs on them as a float32 call (scheduled like any other), and its outputs are
// rounded back to 16 bits once. It is how a variant without SPARSEPORT_VARIANT_VALUES16 serves a
// 16-bit call, and the candidate a native 16-bit variant must beat (select.cpp times both).
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/context.hpp"

namespace sparseport::scheduler {

bool is_values16(int32_t value_type);
// sizeof the op's argument struct.
size_t args_size(sparseport_op op);
// The value type an op's arguments carry (the type of their dense operands).
int32_t args_value_type(sparseport_op op, const void* args);

// One value array of an op's arguments: where its pointer, type tag and ld live in the argument
// struct, its shape, and whether the op reads and/or writes it.
struct ValueOperand {
  const void** in = nullptr;  // read-only arrays (dense inputs, CSR values)
  void** out = nullptr;       // written arrays
  int32_t* type = nullptr;
  int64_t* ld = nullptr;  // null: contiguous (CSR values, rows x 1)
  int64_t rows = 0, cols = 0;
  bool read = true, written = false;
};

// The operands: a CSR's or COO's values (nnz x 1; none for a pattern), the values of a structural
// op's result, and dense arrays (`read`: an output whose old contents the op reads, as C with beta).
template <class Sparse>
ValueOperand values_in(Sparse& a) {
  ValueOperand o;
  o.in = &a.values;
  o.type = &a.value_type;
  o.rows = a.values != nullptr ? a.nnz : 0;
  o.cols = 1;
  return o;
}
ValueOperand values_out(sparseport_csr_mut& a);
ValueOperand dense_in(sparseport_dense& d);
ValueOperand dense_out(sparseport_dense_mut& d, bool read = false);

// Float32 copies held across calls, grown on demand; release() gives the memory back to the
// plugin (before its context goes away).
class Scratch {
 public:
  Scratch(const PluginInfo& plugin, void* state) : plugin_(&plugin), state_(state) {}
  ~Scratch() { release(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get(size_t slot, size_t bytes, const std::string& where);
  void release() noexcept;

 private:
  const PluginInfo* plugin_;
  void* state_;
  std::vector<std::pair<void*, size_t>> bufs_;
};

// The value arrays of `args` (a copy of the op's argument struct that the caller may rewrite), in
// a fixed order. tag: the type tags that must change with them (a CSR's value_type).
std::vector<ValueOperand> value_operands(sparseport_op op, void* args, std::vector<int32_t*>* tags);

// Converts every operand of `ops` that is read from 16 bits to float32 copies in `scratch`, points
// the operands at the copies, calls run32(), then rounds the written copies back into the original
// arrays. `tags` are set to float32 for the call. Throws Unsupported (message starting with `where`)
// when the plugin keeps device memory and cannot convert.
void run_as_f32(const PluginInfo& plugin, const sparseport_exec& exec, std::vector<ValueOperand> ops,
                const std::vector<int32_t*>& tags, Scratch& scratch, const std::function<void()>& run32,
                const std::string& where);

// Releases the float32 copies of every one-shot plan made for this plugin state (its context is
// going away).
void forget_state(void* state);

}  // namespace sparseport::scheduler
