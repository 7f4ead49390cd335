// SPDX-License-Identifier: Apache-2.0
#include "scheduler/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sparseport::scheduler {

Machine machine(const DeviceSignature& sig) {
  Machine m;
  m.gpu = sig.value("kind") == "gpu";
  if (m.gpu) {
    // Achievable streaming bandwidth is about 85-90% of the datasheet number on Hopper.
    m.bandwidth = 0.85e9 * sig.number("peak_gbps", 2000);
    m.cache_bytes = sig.number("l2_bytes", 40e6);
    m.workers = sig.number("sms", 100) * 16;  // warps that keep the memory system busy
    m.launch_s = 4e-6;
  } else {
    const double threads = std::max(1.0, sig.number("threads", 1));
    // A core streams roughly 10-15 GB/s; a socket saturates well below cores x that.
    m.bandwidth = std::min(12e9 * threads, 100e9);
    m.cache_bytes = std::max(sig.number("l3_bytes", 0), sig.number("l2_bytes", 1 << 20));
    m.workers = threads;
    m.launch_s = 2e-6;
  }
  return m;
}

namespace {

bool has(const std::string& v, const char* part) { return v.find(part) != std::string::npos; }

// How a variant maps work to workers, read from its stable name.
enum class Mapping { rows, balanced, hub_split, atomic, serial, vendor };

Mapping mapping_of(const std::string& v) {
  if (has(v, "cusparse") || has(v, "graphblas") || has(v, "kokkoskernels")) return Mapping::vendor;
  if (has(v, "serial")) return Mapping::serial;
  if (has(v, "atomic")) return Mapping::atomic;
  if (has(v, "hub_split")) return Mapping::hub_split;
  if (has(v, "nnz_balanced") || has(v, "merge_path") || has(v, "sorted") || has(v, "fused") || has(v, "onepass"))
    return Mapping::balanced;
  return Mapping::rows;
}

// DRAM bytes of the problem: the structure once, the dense rows the pattern touches once, the
// output once, and the gathered rows beyond the first touch that miss the cache (in proportion
// to how much of the gathered operand fits in it). *hit_out: that fraction.
double traffic(const Machine& m, const Features& f, const ProblemInfo& p, double* hit_out) {
  const double vsz = static_cast<double>(sparseport_value_size(p.value_type)), isz = p.index_type == SPARSEPORT_I64 ? 8 : 4;
  const double F = static_cast<double>(std::max<int64_t>(1, p.features));
  const double nnz = static_cast<double>(f.nnz), rows = static_cast<double>(f.rows);
  const double cols = static_cast<double>(std::max<int64_t>(1, f.cols));
  const double structure = (rows + 1) * isz + nnz * (isz + vsz);
  double dense_in = std::min(nnz, cols) * F * vsz, out = rows * p.features_out * vsz;
  if (p.op == SPARSEPORT_OP_SDDMM) out = nnz * vsz, dense_in += rows * F * vsz;
  if (p.op == SPARSEPORT_OP_SEGMENT_REDUCE || p.op == SPARSEPORT_OP_SCATTER_REDUCE) dense_in = nnz * F * vsz;
  if (p.op == SPARSEPORT_OP_CSR_ATTENTION) dense_in += std::min(nnz, cols) * p.features_out * vsz;
  const double gathered = nnz * F * vsz * (p.op == SPARSEPORT_OP_CSR_ATTENTION ? 2 : 1);
  const double operand = cols * F * vsz;
  const double hit = std::clamp(m.cache_bytes / std::max(1.0, operand), 0.0, 1.0);
  const double regather = std::max(0.0, gathered - dense_in) * (1.0 - hit);
  if (hit_out != nullptr) *hit_out = hit;
  return structure + dense_in + out + regather;
}

}  // namespace

std::string mapping_name(const std::string& variant) {
  switch (mapping_of(variant)) {
    case Mapping::rows: return "rows";
    case Mapping::balanced: return "balanced";
    case Mapping::hub_split: return "hub_split";
    case Mapping::atomic: return "atomic";
    case Mapping::serial: return "serial";
    case Mapping::vendor: return "vendor";
  }
  return "rows";
}

double floor_seconds(const Machine& m, const Features& f, const ProblemInfo& p) {
  return traffic(m, f, p, nullptr) / m.bandwidth + m.launch_s;
}

std::vector<Estimate> estimate(const Machine& m, const Features& f, const ProblemInfo& p,
                               const std::vector<std::string>& variants) {
  const double vsz = static_cast<double>(sparseport_value_size(p.value_type));
  const double F = static_cast<double>(std::max<int64_t>(1, p.features));
  const double nnz = static_cast<double>(f.nnz);
  double hit = 0;
  const double bytes = traffic(m, f, p, &hit);
  const double stream_s = bytes / m.bandwidth;
  const double per_worker_bw = m.bandwidth / m.workers;
  const double longest = static_cast<double>(f.max_degree) * F * vsz;

  std::vector<Estimate> out_list;
  for (const std::string& v : variants) {
    Estimate e;
    e.variant = v;
    e.bytes = bytes;
    double t = stream_s, launches = 1;
    switch (mapping_of(v)) {
      case Mapping::rows:
        // One worker owns a whole row: the longest row bounds the time.
        e.imbalance_s = longest / per_worker_bw;
        // Lanes across F idle when F is narrower than a warp (GPU); vector_rows puts them across
        // a row's entries instead, and leaves none idle at small F.
        if (m.gpu && !has(v, "vector_rows") && F < 32) t /= 0.4 + 0.6 * F / 32;
        if (m.gpu && has(v, "vector_rows")) t *= 0.8;
        if (has(v, "vec4")) t *= 0.92;
        if (has(v, "unfused")) launches = 3, t *= 1.6;  // scores written and read back twice
        break;
      case Mapping::hub_split:
        e.imbalance_s = longest / (per_worker_bw * (m.gpu ? 16 : 1)) / 8;  // a hub gets CTAs, split 8 ways
        launches = 2;
        t *= 1.03;
        break;
      case Mapping::balanced:
        t *= m.gpu ? 1.05 : 1.02;  // carries at chunk boundaries
        if (has(v, "deterministic")) t *= 1.03;
        break;
      case Mapping::atomic:
        // Every element is an atomic read-modify-write: a CPU pays ~1 ns per element and thread,
        // a GPU's L2 atomics run at a fraction of its bandwidth.
        t += m.gpu ? nnz * F * 2 * vsz / (0.3 * m.bandwidth) : nnz * F * 1e-9 / m.workers;
        break;
      case Mapping::serial:
        t = bytes / std::min(m.bandwidth, 12e9) * (m.gpu ? 1 : std::max(1.0, m.workers / 2));
        e.imbalance_s = 0;
        break;
      case Mapping::vendor:
        t *= 1.1;  // unknown internals: assume a little over the floor
        break;
    }
    e.seconds = std::max(t, e.imbalance_s) + launches * m.launch_s;
    char why[160];
    std::snprintf(why, sizeof why, "%.3g ms (%s, %.3g MB, hit %.2f)", e.seconds * 1e3,
                  e.imbalance_s > t ? "longest row" : "bandwidth", bytes / 1e6, hit);
    e.why = why;
    out_list.push_back(e);
  }
  std::stable_sort(out_list.begin(), out_list.end(),
                   [](const Estimate& a, const Estimate& b) { return a.seconds < b.seconds; });
  return out_list;
}

}  // namespace sparseport::scheduler
