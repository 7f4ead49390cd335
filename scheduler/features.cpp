// SPDX-License-Identifier: Apache-2.0
#include "scheduler/features.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "scheduler/estimate.hpp"
#include "scheduler/summary.hpp"

namespace sparseport::scheduler {

std::string Features::text() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "rows=%lld nnz=%lld F=%lld mean_deg=%.2f p50=%lld p90=%lld p99=%lld max=%lld (%.1f%% of nnz) "
                "hubs>%lld=%lld >256=%lld >4096=%lld aligned16=%d empty=%.3f",
                static_cast<long long>(rows), static_cast<long long>(nnz), static_cast<long long>(features),
                mean_degree, static_cast<long long>(p50), static_cast<long long>(p90), static_cast<long long>(p99),
                static_cast<long long>(max_degree), 100.0 * max_row_share, static_cast<long long>(hub_threshold),
                static_cast<long long>(hubs), static_cast<long long>(over_256), static_cast<long long>(over_4096),
                aligned16 ? 1 : 0, degree_frac[0]);
  std::string s = buf;
  if (has_locality) {
    std::snprintf(buf, sizeof buf, " dist_mean=%.4f within32=%.3f within1k=%.3f within32k=%.3f block_reuse=%.2f "
                  "segment_fill=%.2f", dist_mean, within_32, within_1k, within_32k, block_reuse, segment_fill);
    s += buf;
  }
  return s;
}

namespace {

// The smallest degree of bucket b (bit_width(d) == b).
int64_t bucket_low(int b) { return b == 0 ? 0 : int64_t{1} << (b - 1); }
// A representative degree of bucket b: the geometric middle of [2^(b-1), 2^b).
double bucket_mid(int b) { return b == 0 ? 0.0 : std::ldexp(1.4142135623730951, b - 1); }

// Quantiles, hub counts and the nnz share of long rows from a degree histogram (row counts).
void from_histogram(Features& f, const std::array<int64_t, SPARSEPORT_SUMMARY_BUCKETS>& hist, int64_t rows) {
  if (rows <= 0) return;
  const auto quantile = [&](double q) -> int64_t {
    const int64_t target = static_cast<int64_t>(q * static_cast<double>(rows - 1));
    int64_t seen = 0;
    for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
      seen += hist[b];
      if (seen > target) return std::min(bucket_low(b), f.max_degree);
    }
    return f.max_degree;
  };
  f.p50 = quantile(0.50);
  f.p90 = quantile(0.90);
  f.p99 = quantile(0.99);
  double long_rows = 0;
  for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
    f.degree_frac[b] = static_cast<double>(hist[b]) / static_cast<double>(rows);
    if (bucket_low(b) > f.hub_threshold) f.hubs += hist[b];
    if (bucket_low(b) > 256) f.over_256 += hist[b];
    if (bucket_low(b) > 4096) f.over_4096 += hist[b];
    if (bucket_low(b) >= 256) long_rows += static_cast<double>(hist[b]) * bucket_mid(b);
  }
  f.nnz_share_256plus = f.nnz > 0 ? std::min(1.0, long_rows / static_cast<double>(f.nnz)) : 0;
}

Features base(const ProblemInfo& p, int64_t rows, int64_t cols, int64_t nnz, int64_t hub_threshold) {
  Features f;
  f.rows = rows;
  f.cols = cols;
  f.nnz = nnz;
  f.features = p.features;
  f.hub_threshold = hub_threshold;
  f.mean_degree = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0;
  const size_t vsz = static_cast<size_t>(sparseport_value_size(p.value_type));
  f.aligned16 = (p.features * vsz) % 16 == 0;
  return f;
}

}  // namespace

Features features_of(const sparseport_csr_summary& s, const ProblemInfo& p, int64_t hub_threshold) {
  Features f = base(p, s.rows, s.cols, s.nnz, hub_threshold);
  f.max_degree = s.max_degree;
  f.max_row_share = s.nnz > 0 ? static_cast<double>(s.max_degree) / static_cast<double>(s.nnz) : 0;
  std::array<int64_t, SPARSEPORT_SUMMARY_BUCKETS> hist{};
  std::copy(s.degree_hist, s.degree_hist + SPARSEPORT_SUMMARY_BUCKETS, hist.begin());
  from_histogram(f, hist, s.rows);
  if (s.nnz > 0) {
    f.has_locality = true;
    const double n = static_cast<double>(s.nnz);
    f.dist_mean = static_cast<double>(s.distance_sum) / n / 1048576.0;
    // bit_width(x) <= 5 means x < 32; <= 10: x < 1024; <= 15: x < 32768.
    double c = 0;
    for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
      c += static_cast<double>(s.distance_hist[b]);
      if (b == 5) f.within_32 = c / n;
      if (b == 10) f.within_1k = c / n;
      if (b == 15) f.within_32k = c / n;
    }
    if (s.block_distinct > 0) f.block_reuse = static_cast<double>(s.block_entries) / static_cast<double>(s.block_distinct);
    if (s.block_segments > 0)
      f.segment_fill = static_cast<double>(s.block_distinct) / static_cast<double>(s.block_segments);
  }
  return f;
}

Features features_of(Structure& s, const ProblemInfo& p, int64_t hub_threshold) {
  Features f = base(p, s.rows, s.cols, s.nnz, hub_threshold);
  std::vector<int64_t> deg;
  if (s.csr) {
    widen_rowptr(s);
    deg.resize(static_cast<size_t>(s.rows));
    for (int64_t i = 0; i < s.rows; ++i) deg[static_cast<size_t>(i)] = s.rowptr[i + 1] - s.rowptr[i];
  } else if (s.sorted) {
    // Run lengths inside the sampled blocks; a run cut by a block edge counts as what was seen.
    for (size_t i = 0; i < s.sample.size();) {
      size_t j = i + 1;
      while (j < s.sample.size() && s.sample[j] == s.sample[i] && (j % 256) != 0) ++j;
      deg.push_back(static_cast<int64_t>(j - i));
      i = j;
    }
  }
  if (deg.empty()) return f;
  std::array<int64_t, SPARSEPORT_SUMMARY_BUCKETS> hist{};
  for (int64_t d : deg) {
    f.max_degree = std::max(f.max_degree, d);
    ++hist[summary_bucket(static_cast<uint64_t>(d))];
  }
  const double total = s.csr ? static_cast<double>(std::max<int64_t>(1, s.nnz)) : static_cast<double>(s.sample.size());
  f.max_row_share = static_cast<double>(f.max_degree) / total;
  from_histogram(f, hist, static_cast<int64_t>(deg.size()));
  return f;
}

std::vector<std::pair<std::string, double>> inputs(const Features& f, const ProblemInfo& p, const Machine& m,
                                                   double floor_s) {
  const auto lg = [](double x) { return std::log2(std::max(x, 1e-30)); };
  const auto lg1 = [](double x) { return std::log2(1.0 + std::max(x, 0.0)); };
  const double vsz = static_cast<double>(sparseport_value_size(p.value_type));
  const auto frac = [&](int lo, int hi) {  // buckets lo..hi inclusive
    double s = 0;
    for (int b = lo; b <= std::min(hi, SPARSEPORT_SUMMARY_BUCKETS - 1); ++b) s += f.degree_frac[b];
    return s;
  };
  const double operand = static_cast<double>(std::max<int64_t>(1, f.cols)) * static_cast<double>(std::max<int64_t>(1, p.features)) * vsz;
  return {
      {"f:log2_rows", lg1(static_cast<double>(f.rows))},
      {"f:log2_cols", lg1(static_cast<double>(f.cols))},
      {"f:log2_nnz", lg1(static_cast<double>(f.nnz))},
      {"f:log2_F", lg1(static_cast<double>(p.features))},
      {"f:log2_mean_degree", lg1(f.mean_degree)},
      {"f:log2_p50", lg1(static_cast<double>(f.p50))},
      {"f:log2_p90", lg1(static_cast<double>(f.p90))},
      {"f:log2_p99", lg1(static_cast<double>(f.p99))},
      {"f:log2_max_degree", lg1(static_cast<double>(f.max_degree))},
      {"f:max_row_share", f.max_row_share},
      {"f:empty_frac", f.degree_frac[0]},
      {"f:frac_deg_1", frac(1, 1)},
      {"f:frac_deg_2_7", frac(2, 3)},
      {"f:frac_deg_8_31", frac(4, 5)},
      {"f:frac_deg_32_255", frac(6, 8)},
      {"f:frac_deg_256_4095", frac(9, 12)},
      {"f:frac_deg_4096plus", frac(13, SPARSEPORT_SUMMARY_BUCKETS - 1)},
      {"f:nnz_share_deg_256plus", f.nnz_share_256plus},
      {"f:dist_mean", f.has_locality ? f.dist_mean : -1},
      {"f:within_32", f.has_locality ? f.within_32 : -1},
      {"f:within_1k", f.has_locality ? f.within_1k : -1},
      {"f:within_32k", f.has_locality ? f.within_32k : -1},
      {"f:block_reuse", f.has_locality ? lg(f.block_reuse) : -1},
      {"f:segment_fill", f.has_locality ? lg(f.segment_fill) : -1},
      {"f:log2_operand_over_cache", lg(operand / std::max(1.0, m.cache_bytes))},
      {"f:gpu", m.gpu ? 1.0 : 0.0},
      {"f:log2_bandwidth", lg(m.bandwidth)},
      {"f:log2_cache", lg(std::max(1.0, m.cache_bytes))},
      {"f:log2_workers", lg(std::max(1.0, m.workers))},
      {"f:reduce", static_cast<double>(p.reduce)},
      {"f:value_bytes", vsz},
      {"f:log2_floor_s", lg(floor_s)},
  };
}

}  // namespace sparseport::scheduler
