// SPDX-License-Identifier: Apache-2.0
#include "scheduler/values16.hpp"

#include "sparseport/errors.hpp"
#include "core/convert.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {

bool is_values16(int32_t t) { return t == SPARSEPORT_F16 || t == SPARSEPORT_BF16; }

ValueOperand values_out(sparseport_csr_mut& a) {
  ValueOperand o;
  o.out = &a.values;
  o.type = &a.value_type;
  o.rows = a.values != nullptr ? a.nnz : 0;
  o.cols = 1;
  o.read = false;
  o.written = true;
  return o;
}

ValueOperand dense_in(sparseport_dense& d) {
  ValueOperand o;
  o.in = &d.data;
  o.type = &d.value_type;
  o.ld = &d.ld;
  o.rows = d.rows;
  o.cols = d.cols;
  return o;
}

ValueOperand dense_out(sparseport_dense_mut& d, bool read) {
  ValueOperand o;
  o.out = &d.data;
  o.type = &d.value_type;
  o.ld = &d.ld;
  o.rows = d.data != nullptr ? d.rows : 0;
  o.cols = d.cols;
  o.read = read;
  o.written = true;
  return o;
}

namespace {

void convert(const PluginInfo& plugin, const sparseport_exec& exec, const sparseport_dense& src,
             const sparseport_dense_mut& dst, const std::string& where) {
  if (src.rows == 0 || src.cols == 0) return;
  if (plugin.table->memory_space == SPARSEPORT_MEMORY_HOST) {
    detail::convert_host(src, dst);
    return;
  }
  sparseport_status st{};
  if (plugin.table->convert(&exec, &src, &dst, &st) != SPARSEPORT_OK) detail::throw_status(st, where + "/convert");
}

}  // namespace

size_t args_size(sparseport_op op) {
  switch (op) {
    case SPARSEPORT_OP_SPMM: return sizeof(sparseport_spmm_args);
    case SPARSEPORT_OP_SDDMM: return sizeof(sparseport_sddmm_args);
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE: return sizeof(sparseport_segment_args);
    case SPARSEPORT_OP_GATHER_SCATTER: return sizeof(sparseport_gather_scatter_args);
    case SPARSEPORT_OP_CSR_ATTENTION: return sizeof(sparseport_attention_args);
    case SPARSEPORT_OP_CSR_SLICE_ROWS: return sizeof(sparseport_slice_rows_args);
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: return sizeof(sparseport_slice_rows_dense_args);
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: return sizeof(sparseport_induced_subgraph_args);
    case SPARSEPORT_OP_CSR_TRANSPOSE: return sizeof(sparseport_transpose_args);
    default: return 0;
  }
}

int32_t args_value_type(sparseport_op op, const void* args) {
  switch (op) {
    case SPARSEPORT_OP_SPMM: return static_cast<const sparseport_spmm_args*>(args)->c.value_type;
    case SPARSEPORT_OP_SDDMM: return static_cast<const sparseport_sddmm_args*>(args)->out.value_type;
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE: return static_cast<const sparseport_segment_args*>(args)->out.value_type;
    case SPARSEPORT_OP_GATHER_SCATTER: return static_cast<const sparseport_gather_scatter_args*>(args)->out.value_type;
    case SPARSEPORT_OP_CSR_ATTENTION: return static_cast<const sparseport_attention_args*>(args)->out.value_type;
    case SPARSEPORT_OP_CSR_SLICE_ROWS: return static_cast<const sparseport_slice_rows_args*>(args)->a.value_type;
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: return static_cast<const sparseport_slice_rows_dense_args*>(args)->a.value_type;
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: return static_cast<const sparseport_induced_subgraph_args*>(args)->a.value_type;
    case SPARSEPORT_OP_CSR_TRANSPOSE: return static_cast<const sparseport_transpose_args*>(args)->a.value_type;
    default: return SPARSEPORT_F32;
  }
}

std::vector<ValueOperand> value_operands(sparseport_op op, void* args, std::vector<int32_t*>* tags) {
  std::vector<ValueOperand> v;
  switch (op) {
    case SPARSEPORT_OP_SPMM: {
      auto* a = static_cast<sparseport_spmm_args*>(args);
      v = {values_in(a->a), dense_in(a->b), dense_out(a->c, a->beta != 0.0)};
      break;
    }
    case SPARSEPORT_OP_SDDMM: {
      auto* a = static_cast<sparseport_sddmm_args*>(args);
      v = {values_in(a->a), dense_in(a->x), dense_in(a->y), dense_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE: {
      auto* a = static_cast<sparseport_segment_args*>(args);
      v = {dense_in(a->src), dense_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_GATHER_SCATTER: {
      auto* a = static_cast<sparseport_gather_scatter_args*>(args);
      v = {values_in(a->edges), dense_in(a->x), dense_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_CSR_ATTENTION: {
      auto* a = static_cast<sparseport_attention_args*>(args);
      a->a.values = nullptr;  // ignored by the op: only the pattern selects keys
      if (tags != nullptr) tags->push_back(&a->a.value_type);
      v = {dense_in(a->q), dense_in(a->k), dense_in(a->v), dense_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_CSR_SLICE_ROWS: {
      auto* a = static_cast<sparseport_slice_rows_args*>(args);
      v = {values_in(a->a), values_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: {
      auto* a = static_cast<sparseport_slice_rows_dense_args*>(args);
      v = {values_in(a->a), dense_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: {
      auto* a = static_cast<sparseport_induced_subgraph_args*>(args);
      v = {values_in(a->a), values_out(a->out)};
      break;
    }
    case SPARSEPORT_OP_CSR_TRANSPOSE: {
      auto* a = static_cast<sparseport_transpose_args*>(args);
      v = {values_in(a->a), values_out(a->out)};
      break;
    }
    default:
      break;
  }
  return v;
}

void* Scratch::get(size_t slot, size_t bytes, const std::string& where) {
  if (bufs_.size() <= slot) bufs_.resize(slot + 1, {nullptr, 0});
  auto& [p, n] = bufs_[slot];
  if (n >= bytes && p != nullptr) return p;
  if (p != nullptr) plugin_->table->release(state_, p);
  p = nullptr;
  n = 0;
  sparseport_status st{};
  if (plugin_->table->alloc(state_, bytes, &p, &st) != SPARSEPORT_OK) {
    p = nullptr;
    detail::throw_status(st, where + ": float32 copies of the 16-bit operands", bytes);
  }
  n = bytes;
  return p;
}

void Scratch::release() noexcept {
  for (auto& [p, n] : bufs_)
    if (p != nullptr) plugin_->table->release(state_, p);
  bufs_.clear();
}

void run_as_f32(const PluginInfo& plugin, const sparseport_exec& exec, std::vector<ValueOperand> ops,
                const std::vector<int32_t*>& tags, Scratch& scratch, const std::function<void()>& run32,
                const std::string& where) {
  if (plugin.table->memory_space == SPARSEPORT_MEMORY_DEVICE && plugin.table->convert == nullptr)
    throw Unsupported(where + ": backend '" + plugin.name +
                      "' has no variant that takes 16-bit values for this input, and cannot convert them to float32 "
                      "in its memory (no convert slot): 16-bit values are not supported there; use f32");
  // Pass 1: float32 copies (inputs converted, outputs read first converted too).
  struct Saved {
    const void* data;
    int32_t type;
    int64_t ld;
  };
  std::vector<Saved> saved(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    ValueOperand& o = ops[i];
    const void* data = o.in != nullptr ? *o.in : *o.out;
    saved[i] = {data, *o.type, o.ld != nullptr ? *o.ld : 1};
    if (!is_values16(*o.type)) continue;
    *o.type = SPARSEPORT_F32;
    if (data == nullptr || o.rows == 0 || o.cols == 0) continue;
    void* copy = scratch.get(i, static_cast<size_t>(o.rows * o.cols) * 4, where);
    const int64_t src_ld = o.ld != nullptr ? *o.ld : 1;
    if (o.read)
      convert(plugin, exec, {o.rows, o.cols, src_ld, data, saved[i].type}, {o.rows, o.cols, o.cols, copy, SPARSEPORT_F32},
              where);
    if (o.in != nullptr)
      *o.in = copy;
    else
      *o.out = copy;
    if (o.ld != nullptr) *o.ld = o.cols;
  }
  for (int32_t* t : tags)
    if (is_values16(*t)) *t = SPARSEPORT_F32;
  run32();
  // Pass 2: one rounding of each written float32 result into its 16-bit array.
  for (size_t i = 0; i < ops.size(); ++i) {
    const ValueOperand& o = ops[i];
    if (!o.written || !is_values16(saved[i].type) || saved[i].data == nullptr || o.rows == 0 || o.cols == 0) continue;
    convert(plugin, exec, {o.rows, o.cols, o.cols, *o.out, SPARSEPORT_F32},
            {o.rows, o.cols, saved[i].ld, const_cast<void*>(saved[i].data), saved[i].type}, where);
  }
}

}  // namespace sparseport::scheduler
