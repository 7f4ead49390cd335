// SPDX-License-Identifier: Apache-2.0
// The deterministic reductions give the same bits with 1, 2, 3 and 7 threads, and on a repeat run,
// on a skewed input: one segment holds half of the messages (so it crosses every thread boundary
// and many of the variant's fixed blocks), hub segments and empty segments around it.
#include <cstring>

#include "oracle.hpp"

namespace {

using namespace sparseport;
using namespace sp_test;

constexpr uint64_t kSeed = 20240611;
constexpr int kThreadCounts[] = {1, 2, 3, 7};

// Bitwise comparison that names the first differing element.
template <class V>
::testing::AssertionResult same_bits(const HostDense<V>& a, const HostDense<V>& b) {
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t f = 0; f < a.cols; ++f)
      if (std::memcmp(&a(i, f), &b(i, f), sizeof(V)) != 0)
        return ::testing::AssertionFailure() << "out[" << i << "," << f << "] is " << a(i, f) << " in one run and "
                                             << b(i, f) << " in the other";
  return ::testing::AssertionSuccess();
}

// The destination of every message of a skewed CSR, in order: a sorted segment index.
template <class I, class V>
std::vector<I> sorted_index(const HostCsr<I, V>& a) {
  std::vector<I> idx;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      idx.push_back(static_cast<I>(i));
  return idx;
}

template <class V>
HostDense<V> nan_dense(int64_t rows, int64_t cols) {
  return HostDense<V>(rows, cols, -1, std::numeric_limits<V>::quiet_NaN());
}

TEST(OpenMPDeterminism, SegmentReduceSortedDeterministicIsBitwiseIdenticalAcrossThreads) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  Context ctx = Context::create("openmp");
  const int64_t n_out = 3000;
  const auto shape = skewed_csr<int32_t, float>(n_out, 1, 60000, 0.5, kSeed, false);
  const std::vector<int32_t> idx = sorted_index(shape);
  const int64_t E = static_cast<int64_t>(idx.size());
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(n_out));
  for (int64_t e = 0; e < E; ++e) rows_of[static_cast<size_t>(idx[static_cast<size_t>(e)])].push_back(e);
  for (int64_t F : {1, 37, 64}) {
    const HostDense<float> src = random_dense<float>(E, F, F + 3, kSeed + static_cast<uint64_t>(F));
    for (Reduce r : kReduces) {
      SCOPED_TRACE("F " + std::to_string(F) + ", reduce " + name(r));
      const Expected want = reduce_rows(n_out, F, r, rows_of, [&](int64_t e, int64_t f) { return double(src(e, f)); });
      HostDense<float> first;
      for (int t : kThreadCounts) {
        SCOPED_TRACE(std::to_string(t) + " threads");
        ctx.set_threads(t);
        HostDense<float> out = nan_dense<float>(n_out, F);
        segment_reduce(ctx, make_index(E, idx.data()), src.view(), out.mut(),
                       {r, "segment_reduce.sorted_deterministic"});
        ASSERT_TRUE(close_to(out, want, F));
        if (t == kThreadCounts[0])
          first = out;
        else
          EXPECT_TRUE(same_bits(out, first));
      }
      HostDense<float> again = nan_dense<float>(n_out, F);
      ctx.set_threads(7);
      segment_reduce(ctx, make_index(E, idx.data()), src.view(), again.mut(), {r, "segment_reduce.sorted_deterministic"});
      EXPECT_TRUE(same_bits(again, first)) << "a repeat run with 7 threads";
    }
  }
}

TEST(OpenMPDeterminism, GatherScatterSortedDeterministicIsBitwiseIdenticalAcrossThreads) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  Context ctx = Context::create("openmp");
  const int64_t n_dst = 3000, n_src = 2500;
  // Rows of this CSR are the destinations (sorted), its columns the sources, its values the weights.
  const auto g = skewed_csr<int32_t, float>(n_dst, n_src, 60000, 0.5, kSeed + 1);
  const std::vector<int32_t> dst = sorted_index(g);
  const int64_t E = static_cast<int64_t>(dst.size());
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(n_dst));
  for (int64_t e = 0; e < E; ++e) rows_of[static_cast<size_t>(dst[static_cast<size_t>(e)])].push_back(e);
  for (int64_t F : {1, 37, 64}) {
    const HostDense<float> x = random_dense<float>(n_src, F, F, kSeed + 7 + static_cast<uint64_t>(F));
    for (Reduce r : kReduces) {
      SCOPED_TRACE("F " + std::to_string(F) + ", reduce " + name(r));
      const Expected want = reduce_rows(n_dst, F, r, rows_of, [&](int64_t e, int64_t f) {
        return double(g.values[static_cast<size_t>(e)]) * double(x(g.colind[static_cast<size_t>(e)], f));
      });
      const CooView edges = make_coo<int32_t, float>(n_dst, n_src, E, dst.data(), g.colind.data(), g.values.data());
      HostDense<float> first;
      for (int t : kThreadCounts) {
        SCOPED_TRACE(std::to_string(t) + " threads");
        ctx.set_threads(t);
        HostDense<float> out = nan_dense<float>(n_dst, F);
        gather_scatter(ctx, edges, x.view(), out.mut(), {r, "gather_scatter.sorted_deterministic"});
        ASSERT_TRUE(close_to(out, want, F));
        if (t == kThreadCounts[0])
          first = out;
        else
          EXPECT_TRUE(same_bits(out, first));
      }
    }
  }
}

// Doubles and 64-bit indices take the same path; one reduce is enough to show the bits hold there.
TEST(OpenMPDeterminism, SortedDeterministicHoldsForDoubleAndInt64) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  Context ctx = Context::create("openmp");
  const int64_t n_out = 2000, F = 19;
  const auto shape = skewed_csr<int64_t, double>(n_out, 1, 40000, 0.6, kSeed + 2, false);
  const std::vector<int64_t> idx = sorted_index(shape);
  const int64_t E = static_cast<int64_t>(idx.size());
  const HostDense<double> src = random_dense<double>(E, F, F, kSeed + 3);
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(n_out));
  for (int64_t e = 0; e < E; ++e) rows_of[static_cast<size_t>(idx[static_cast<size_t>(e)])].push_back(e);
  const Expected want =
      reduce_rows(n_out, F, Reduce::mean, rows_of, [&](int64_t e, int64_t f) { return src(e, f); });
  HostDense<double> first;
  for (int t : kThreadCounts) {
    SCOPED_TRACE(std::to_string(t) + " threads");
    ctx.set_threads(t);
    HostDense<double> out = nan_dense<double>(n_out, F);
    segment_reduce(ctx, make_index(E, idx.data()), src.view(), out.mut(),
                   {Reduce::mean, "segment_reduce.sorted_deterministic"});
    ASSERT_TRUE(close_to(out, want, F));
    if (t == kThreadCounts[0])
      first = out;
    else
      EXPECT_TRUE(same_bits(out, first));
  }
}

}  // namespace
