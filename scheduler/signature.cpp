// SPDX-License-Identifier: Apache-2.0
#include "scheduler/signature.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "scheduler/summary.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/version.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t seed) {
  // Four multiply-xorshift lanes over 8-byte words: the lanes do not wait on each other, so a
  // rowptr of millions of entries hashes in about the time it takes to read it.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h[4] = {seed ^ 0x243F6A8885A308D3ull, seed ^ 0x13198A2E03707344ull, seed ^ 0xA4093822299F31D0ull,
                   seed ^ 0x082EFA98EC4E6C89ull};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * kMul;
      h[l] ^= h[l] >> 29;
    }
  }
  uint64_t tail = bytes;
  for (; i < bytes; ++i) tail = (tail ^ p[i]) * kMul;
  uint64_t out = tail;
  for (uint64_t l : h) {
    out = (out ^ l) * kMul;
    out ^= out >> 32;
  }
  return out;
}

// Without snprintf: a new process's cache hit formats its key (graph_signature) on its hot path,
// where snprintf's first run after the caller's own large data touches cold code (issue 35).
std::string hex64(uint64_t h) {
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[static_cast<size_t>(i)] = "0123456789abcdef"[h & 15];
  return s;
}

std::string DeviceSignature::text() const {
  std::string s;
  for (const auto& [k, v] : hardware) s += k + "=" + v + "\n";
  for (const auto& [k, v] : versions) s += k + "=" + v + "\n";
  return s + "hash=" + hash + "\n";
}

std::string DeviceSignature::value(const std::string& key) const {
  for (const auto& [k, v] : hardware)
    if (k == key) return v;
  for (const auto& [k, v] : versions)
    if (k == key) return v;
  return {};
}

double DeviceSignature::number(const std::string& key, double fallback) const {
  const std::string v = value(key);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  return end == v.c_str() ? fallback : d;
}

DeviceSignature make_signature(std::vector<std::pair<std::string, std::string>> fields) {
  DeviceSignature s;
  for (auto& [k, v] : fields) {
    const bool version = k.size() > 8 && k.compare(k.size() - 8, 8, "_version") == 0;
    (version ? s.versions : s.hardware).emplace_back(std::move(k), std::move(v));
  }
  std::string hw;
  for (const auto& [k, v] : s.hardware) hw += k + "=" + v + "\n";
  s.hash = hex64(hash_bytes(hw.data(), hw.size()));
  for (const auto& [k, v] : s.versions) s.versions_line += (s.versions_line.empty() ? "" : ";") + k + "=" + v;
  return s;
}

namespace {

// Entries are never erased, and a std::map's nodes do not move: the references handed out stay valid.
// A function's static, so that a context made during static initialisation finds it constructed.
struct Signatures {
  std::mutex mu;
  std::map<std::tuple<const sparseport_plugin*, void*, int32_t>, DeviceSignature> made;
};
Signatures& signatures() {
  static Signatures s;
  return s;
}

}  // namespace

bool device_signature_made(const PluginInfo& plugin, const sparseport_exec& exec) {
  Signatures& s = signatures();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.made.count(std::make_tuple(plugin.table, exec.state, exec.threads)) != 0;
}

const DeviceSignature& device_signature(const PluginInfo& plugin, const sparseport_exec& exec) {
  Signatures& memo = signatures();
  const auto key = std::make_tuple(plugin.table, exec.state, exec.threads);
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    if (auto it = memo.made.find(key); it != memo.made.end()) return it->second;
  }
  std::string text;
  std::string buf(4096, '\0');
  sparseport_status st{};
  if (plugin.table->device_signature != nullptr) {
    if (plugin.table->device_signature(exec.state, buf.data(), buf.size(), &st) != SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: backend '" + plugin.name + "' could not read its device signature");
    text = buf.c_str();
  } else {
    // Without the slot: the description line stands in for the hardware (coarser, still stable).
    std::string desc;
    if (plugin.table->describe_devices != nullptr &&
        plugin.table->describe_devices(buf.data(), buf.size(), &st) == SPARSEPORT_OK)
      desc = buf.c_str();
    std::replace(desc.begin(), desc.end(), '\n', ' ');
    text = "description=" + desc + "\n";
  }
  std::vector<std::pair<std::string, std::string>> fields{{"backend", plugin.name}};
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "threads" && exec.threads > 0) v = std::to_string(exec.threads);
    fields.emplace_back(std::move(k), std::move(v));
  }
  fields.emplace_back("library_version", version());
  fields.emplace_back("abi_version",
                      std::to_string(SPARSEPORT_ABI_VERSION_MAJOR) + "." + std::to_string(SPARSEPORT_ABI_VERSION_MINOR));
  DeviceSignature sig = make_signature(std::move(fields));
  std::lock_guard<std::mutex> lock(memo.mu);
  return memo.made.emplace(key, std::move(sig)).first->second;
}

// ---- problems -----------------------------------------------------------------------------------

ProblemInfo problem_info(sparseport_op op, const void* args) {
  ProblemInfo p;
  p.op = op;
  switch (op) {
    case SPARSEPORT_OP_SPMM: {
      const auto* a = static_cast<const sparseport_spmm_args*>(args);
      p.features = p.features_out = a->b.cols;
      p.value_type = a->a.value_type;
      p.index_type = a->a.index_type;
      p.reduce = a->reduce;
      break;
    }
    case SPARSEPORT_OP_SDDMM: {
      const auto* a = static_cast<const sparseport_sddmm_args*>(args);
      p.features = p.features_out = a->x.cols;
      p.value_type = a->a.value_type;
      p.index_type = a->a.index_type;
      break;
    }
    case SPARSEPORT_OP_CSR_ATTENTION: {
      const auto* a = static_cast<const sparseport_attention_args*>(args);
      p.features = a->q.cols;
      p.features_out = a->v.cols;
      p.value_type = a->q.value_type;
      p.index_type = a->a.index_type;
      break;
    }
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE: {
      const auto* a = static_cast<const sparseport_segment_args*>(args);
      p.features = p.features_out = a->src.cols;
      p.value_type = a->src.value_type;
      p.index_type = a->index.index_type;
      p.reduce = a->reduce;
      break;
    }
    case SPARSEPORT_OP_GATHER_SCATTER: {
      const auto* a = static_cast<const sparseport_gather_scatter_args*>(args);
      p.features = p.features_out = a->x.cols;
      p.value_type = a->x.value_type;
      p.index_type = a->edges.index_type;
      p.reduce = a->reduce;
      break;
    }
    default:
      p.scheduled = false;
  }
  return p;
}

std::string type_suffix(const ProblemInfo& p) {
  static const char* kReduce[] = {"sum", "mean", "max", "min"};
  std::string s = std::string(name(static_cast<ValueType>(p.value_type))) + "/" +
                  (p.index_type == SPARSEPORT_I64 ? "i64" : "i32");
  if (p.op == SPARSEPORT_OP_SPMM || p.op == SPARSEPORT_OP_SEGMENT_REDUCE || p.op == SPARSEPORT_OP_SCATTER_REDUCE ||
      p.op == SPARSEPORT_OP_GATHER_SCATTER)
    s += std::string("/") + kReduce[std::clamp(p.reduce, 0, 3)];
  if (p.op == SPARSEPORT_OP_CSR_ATTENTION) s += "/Fv" + std::to_string(p.features_out);
  return s;
}

namespace {

// Copies `count` index entries starting at `first` into int64 host values.
void read_indices(const PluginInfo& plugin, const sparseport_exec& exec, const void* base, int32_t index_type,
                  int64_t first, int64_t count, int64_t* out) {
  if (count <= 0) return;
  const size_t isz = index_type == SPARSEPORT_I64 ? 8 : 4;
  const char* src = static_cast<const char*>(base) + first * isz;
  std::vector<char> tmp;
  if (plugin.table->memory_space == SPARSEPORT_MEMORY_DEVICE) {
    tmp.resize(count * isz);
    sparseport_status st{};
    if (plugin.table->copy(exec.state, tmp.data(), src, tmp.size(), SPARSEPORT_COPY_DEVICE_TO_HOST, &st) !=
        SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: copying the sparse structure to the host failed");
    src = tmp.data();
  }
  if (isz == 8) {
    std::memcpy(out, src, count * 8);
  } else {
    const auto* s32 = reinterpret_cast<const int32_t*>(src);
    for (int64_t i = 0; i < count; ++i) out[i] = s32[i];
  }
}

// Evenly spaced blocks of an n-entry array: the deterministic sample (64 blocks of at most 256).
void sample_blocks(const PluginInfo& plugin, const sparseport_exec& exec, const void* base, int32_t index_type,
                   int64_t n, std::vector<int64_t>* out) {
  constexpr int64_t kBlocks = 64, kBlock = 256;
  if (n <= kBlocks * kBlock) {
    out->resize(n);
    read_indices(plugin, exec, base, index_type, 0, n, out->data());
    return;
  }
  out->resize(kBlocks * kBlock);
  for (int64_t b = 0; b < kBlocks; ++b) {
    const int64_t first = (n - kBlock) * b / (kBlocks - 1);
    read_indices(plugin, exec, base, index_type, first, kBlock, out->data() + b * kBlock);
  }
}

}  // namespace

Structure read_structure(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args) {
  Structure s;
  const sparseport_csr* csr = nullptr;
  if (op == SPARSEPORT_OP_SPMM) csr = &static_cast<const sparseport_spmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_SDDMM) csr = &static_cast<const sparseport_sddmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_CSR_ATTENTION) csr = &static_cast<const sparseport_attention_args*>(args)->a;
  if (csr != nullptr) {
    s.rows = csr->rows;
    s.cols = csr->cols;
    s.nnz = csr->nnz;
    s.index_type = csr->index_type;
    if (plugin.table->memory_space == SPARSEPORT_MEMORY_DEVICE) {
      // Kept between calls per thread: a fresh buffer of megabytes costs more in page faults than
      // the copy; the plan keeps its own copy only until it has decided.
      thread_local std::vector<char> staging;
      staging.resize(s.rowptr_size());
      sparseport_status st{};
      if (plugin.table->copy(exec.state, staging.data(), csr->rowptr, staging.size(), SPARSEPORT_COPY_DEVICE_TO_HOST,
                             &st) != SPARSEPORT_OK)
        detail::throw_status(st, "sparseport scheduler: copying rowptr to the host failed");
      s.copied_rowptr = staging;
    } else {
      s.host_rowptr = csr->rowptr;
    }
    sample_blocks(plugin, exec, csr->colind, csr->index_type, csr->nnz, &s.sample);
    return s;
  }
  // Index arrays: E entries, possibly on the device and much longer than a rowptr, so only a
  // sample of blocks is read; the row structure is estimated from the runs inside the blocks.
  s.csr = false;
  const void* index = nullptr;
  int32_t itype = SPARSEPORT_I32;
  if (op == SPARSEPORT_OP_SEGMENT_REDUCE || op == SPARSEPORT_OP_SCATTER_REDUCE) {
    const auto* a = static_cast<const sparseport_segment_args*>(args);
    s.rows = a->out.rows;
    s.cols = a->src.rows;
    s.nnz = a->index.n;
    index = a->index.data;
    itype = a->index.index_type;
    s.sorted = op == SPARSEPORT_OP_SEGMENT_REDUCE;
  } else if (op == SPARSEPORT_OP_GATHER_SCATTER) {
    const auto* a = static_cast<const sparseport_gather_scatter_args*>(args);
    s.rows = a->edges.rows;
    s.cols = a->edges.cols;
    s.nnz = a->edges.nnz;
    index = a->edges.row;
    itype = a->edges.index_type;
  } else {
    throw InvalidArgument(std::string("sparseport scheduler: op ") + std::to_string(op) + " is not scheduled");
  }
  sample_blocks(plugin, exec, index, itype, s.nnz, &s.sample);
  return s;
}

void widen_rowptr(Structure& s) {
  if (!s.csr || !s.rowptr.empty()) return;
  s.rowptr.resize(static_cast<size_t>(s.rows + 1));
  if (s.index_type == SPARSEPORT_I64) {
    std::memcpy(s.rowptr.data(), s.rowptr_bytes(), s.rowptr_size());
  } else {
    const auto* r = static_cast<const int32_t*>(s.rowptr_bytes());
    for (int64_t i = 0; i <= s.rows; ++i) s.rowptr[static_cast<size_t>(i)] = r[i];
  }
}

std::string graph_signature(const Structure& s) {
  uint64_t h = s.csr ? hash_bytes(s.rowptr_bytes(), s.rowptr_size(), 1) : 1;
  h = hash_bytes(s.sample.data(), s.sample.size() * sizeof(int64_t), h);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s%lldx%lld:%lld:%s", s.csr ? "csr" : (s.sorted ? "sorted" : "index"),
                static_cast<long long>(s.rows), static_cast<long long>(s.cols), static_cast<long long>(s.nnz),
                hex64(h).c_str());
  return buf;
}

std::string graph_signature(const sparseport_csr_summary& s) {
  // "csr<rows>x<cols>:<nnz>:<hash>", built without snprintf (hex64's reason).
  std::string g = "csr";
  g.reserve(64);
  g += std::to_string(s.rows);
  g += 'x';
  g += std::to_string(s.cols);
  g += ':';
  g += std::to_string(s.nnz);
  g += ':';
  g += hex64(mix64(s.rowptr_hash ^ mix64(s.colind_hash)));
  return g;
}

}  // namespace sparseport::scheduler
