// SPDX-License-Identifier: Apache-2.0
// Every openmp variant (as the plugin lists them) agrees with a double-precision oracle at 1..7
// threads, on skewed inputs (a mega-row that crosses every thread boundary, hubs, empty rows,
// repeated and unsorted columns) and at widths that leave vector and scalar tails (F = 1, 13, 100).
#include <numeric>

#include "oracle.hpp"
#include "sparseport/errors.hpp"

namespace {

using namespace sparseport;
using namespace sp_test;

constexpr uint64_t kSeed = 977;
constexpr int kMaxThreads = 7;
constexpr int64_t kWidths[] = {1, 13, 100};

std::vector<std::string> variants(sparseport_op op) {
  std::vector<std::string> v = plugin("openmp").variants_of(op);
  EXPECT_FALSE(v.empty()) << "the openmp plugin lists no variant of " << op_name(op);
  return v;
}

template <class I, class V>
std::vector<std::vector<int64_t>> entries_by_row(const HostCsr<I, V>& a) {
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      rows[static_cast<size_t>(i)].push_back(e);
  return rows;
}

template <class I, class V>
double value_of(const HostCsr<I, V>& a, int64_t e) {
  return a.is_pattern() ? 1.0 : double(a.values[static_cast<size_t>(e)]);
}

template <class I, class V>
void check_spmm(bool pattern) {
  Context ctx = Context::create("openmp");
  const auto a = skewed_csr<I, V>(1500, 1200, 20000, 0.4, kSeed, !pattern);
  const auto rows = entries_by_row(a);
  struct Scaling {
    double alpha, beta;
  };
  for (int64_t F : kWidths) {
    const HostDense<V> b = random_dense<V>(a.cols, F, F + 3, kSeed + 1);
    const HostDense<V> c0 = random_dense<V>(a.rows, F, F + 1, kSeed + 2);
    for (Reduce r : kReduces)
      for (Scaling s : {Scaling{1.0, 0.0}, Scaling{-0.5, 2.0}}) {
        Expected want = reduce_rows(a.rows, F, r, rows, [&](int64_t e, int64_t f) {
          return value_of(a, e) * double(b(a.colind[static_cast<size_t>(e)], f));
        });
        for (int64_t i = 0; i < a.rows; ++i)
          for (int64_t f = 0; f < F; ++f) {
            const size_t k = static_cast<size_t>(i * F + f);
            const double old = s.beta != 0.0 ? double(c0(i, f)) : 0.0;
            want.value[k] = s.alpha * want.value[k] + s.beta * old;
            want.scale[k] = std::abs(s.alpha) * want.scale[k] + std::abs(s.beta * old);
          }
        for (const std::string& v : variants(SPARSEPORT_OP_SPMM))
          for (int t = 1; t <= kMaxThreads; ++t) {
            SCOPED_TRACE(v + ", F " + std::to_string(F) + ", " + name(r) + ", alpha " + std::to_string(s.alpha) +
                         ", beta " + std::to_string(s.beta) + ", " + std::to_string(t) + " threads, seed " +
                         std::to_string(kSeed));
            ctx.set_threads(t);
            HostDense<V> c = c0;
            // beta == 0 must ignore C's old contents, NaN included.
            if (s.beta == 0.0) std::fill(c.data.begin(), c.data.end(), std::numeric_limits<V>::quiet_NaN());
            try {
              spmm(ctx, a.view(), b.view(), c.mut(), {r, s.alpha, s.beta, v});
            } catch (const sparseport::Unsupported& e) {
              // A variant with conditions may refuse this input (spmm.graphblas: max/min when a row
              // repeats a column, which this matrix does); any other refusal is a failure.
              ASSERT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
              break;
            }
            ASSERT_TRUE(close_to(c, want, F));
          }
      }
  }
}

TEST(OpenMPThreads, SpmmFloatInt32) { check_spmm<int32_t, float>(false); }
TEST(OpenMPThreads, SpmmDoubleInt64Pattern) { check_spmm<int64_t, double>(true); }

TEST(OpenMPThreads, Sddmm) {
  Context ctx = Context::create("openmp");
  const auto a = skewed_csr<int32_t, float>(1500, 1200, 20000, 0.4, kSeed + 10);
  for (int64_t F : kWidths) {
    const HostDense<float> x = random_dense<float>(a.rows, F, F + 2, kSeed + 11);
    const HostDense<float> y = random_dense<float>(a.cols, F, F, kSeed + 12);
    Expected want;
    want.resize(static_cast<size_t>(a.nnz()));
    for (int64_t i = 0; i < a.rows; ++i)
      for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
        double d = 0, mag = 0;
        for (int64_t f = 0; f < F; ++f) {
          const double p = double(x(i, f)) * double(y(a.colind[static_cast<size_t>(e)], f));
          d += p;
          mag += std::abs(p);
        }
        const double w = a.values[static_cast<size_t>(e)];
        want.value[static_cast<size_t>(e)] = w * d;
        want.scale[static_cast<size_t>(e)] = std::abs(w) * mag;
        want.terms[static_cast<size_t>(e)] = static_cast<double>(F);
      }
    for (const std::string& v : variants(SPARSEPORT_OP_SDDMM))
      for (int t = 1; t <= kMaxThreads; ++t) {
        SCOPED_TRACE(v + ", F " + std::to_string(F) + ", " + std::to_string(t) + " threads, seed " +
                     std::to_string(kSeed + 10));
        ctx.set_threads(t);
        HostDense<float> out(a.nnz(), 1, -1, std::numeric_limits<float>::quiet_NaN());
        sddmm(ctx, a.view(), x.view(), y.view(), out.mut(), {v});
        ASSERT_TRUE(close_to(out, want, 1));
      }
  }
}

// Destinations of a skewed CSR's entries in row order: a sorted index with a mega-segment.
template <class I, class V>
std::vector<I> sorted_index(const HostCsr<I, V>& a) {
  std::vector<I> idx;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      idx.push_back(static_cast<I>(i));
  return idx;
}

void check_index_reduce(sparseport_op op) {
  Context ctx = Context::create("openmp");
  const int64_t n_out = 1500;
  const auto shape = skewed_csr<int32_t, float>(n_out, 1, 20000, 0.4, kSeed + 20, false);
  std::vector<int32_t> idx = sorted_index(shape);
  if (op == SPARSEPORT_OP_SCATTER_REDUCE) {
    // Unsorted, and the mega-segment's messages spread everywhere: the most contention.
    std::mt19937_64 rng(kSeed + 21);
    std::shuffle(idx.begin(), idx.end(), rng);
  }
  const int64_t E = static_cast<int64_t>(idx.size());
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(n_out));
  for (int64_t e = 0; e < E; ++e) rows_of[static_cast<size_t>(idx[static_cast<size_t>(e)])].push_back(e);
  for (int64_t F : kWidths) {
    const HostDense<float> src = random_dense<float>(E, F, F + 1, kSeed + 22);
    for (Reduce r : kReduces) {
      const Expected want =
          reduce_rows(n_out, F, r, rows_of, [&](int64_t e, int64_t f) { return double(src(e, f)); });
      for (const std::string& v : variants(op))
        for (int t = 1; t <= kMaxThreads; ++t) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", " + name(r) + ", " + std::to_string(t) +
                       " threads, seed " + std::to_string(kSeed + 20));
          ctx.set_threads(t);
          HostDense<float> out(n_out, F, F + 5, std::numeric_limits<float>::quiet_NaN());
          if (op == SPARSEPORT_OP_SEGMENT_REDUCE)
            segment_reduce(ctx, make_index(E, idx.data()), src.view(), out.mut(), {r, v});
          else
            scatter_reduce(ctx, make_index(E, idx.data()), src.view(), out.mut(), {r, v});
          ASSERT_TRUE(close_to(out, want, F));
        }
    }
  }
}

TEST(OpenMPThreads, SegmentReduce) { check_index_reduce(SPARSEPORT_OP_SEGMENT_REDUCE); }
TEST(OpenMPThreads, ScatterReduce) { check_index_reduce(SPARSEPORT_OP_SCATTER_REDUCE); }

TEST(OpenMPThreads, GatherScatter) {
  Context ctx = Context::create("openmp");
  const int64_t n_dst = 1500, n_src = 1300;
  for (bool weighted : {true, false}) {
    const auto g = skewed_csr<int32_t, float>(n_dst, n_src, 20000, 0.4, kSeed + 30, weighted);
    const std::vector<int32_t> dst = sorted_index(g);
    const int64_t E = static_cast<int64_t>(dst.size());
    const auto rows_of = entries_by_row(g);
    const CooView edges = make_coo<int32_t, float>(n_dst, n_src, E, dst.data(), g.colind.data(),
                                                   weighted ? g.values.data() : nullptr);
    for (int64_t F : kWidths) {
      const HostDense<float> x = random_dense<float>(n_src, F, F, kSeed + 31);
      for (Reduce r : kReduces) {
        const Expected want = reduce_rows(n_dst, F, r, rows_of, [&](int64_t e, int64_t f) {
          return value_of(g, e) * double(x(g.colind[static_cast<size_t>(e)], f));
        });
        for (const std::string& v : variants(SPARSEPORT_OP_GATHER_SCATTER))
          for (int t = 1; t <= kMaxThreads; ++t) {
            SCOPED_TRACE(v + (weighted ? ", weighted" : ", unweighted") + ", F " + std::to_string(F) + ", " +
                         name(r) + ", " + std::to_string(t) + " threads, seed " + std::to_string(kSeed + 30));
            ctx.set_threads(t);
            HostDense<float> out(n_dst, F, -1, std::numeric_limits<float>::quiet_NaN());
            gather_scatter(ctx, edges, x.view(), out.mut(), {r, v});
            ASSERT_TRUE(close_to(out, want, F));
          }
      }
    }
  }
}

TEST(OpenMPThreads, CsrAttention) {
  Context ctx = Context::create("openmp");
  const auto a = skewed_csr<int32_t, float>(1200, 1000, 15000, 0.4, kSeed + 40);
  const auto rows = entries_by_row(a);
  for (int64_t F : {13, 64})
    for (int64_t Fv : {1, 37, 100}) {
      const HostDense<float> q = random_dense<float>(a.rows, F, F, kSeed + 41);
      const HostDense<float> k = random_dense<float>(a.cols, F, F + 3, kSeed + 42);
      const HostDense<float> v = random_dense<float>(a.cols, Fv, Fv, kSeed + 43);
      const double scale = 1.0 / std::sqrt(double(F));
      Expected want;
      want.resize(static_cast<size_t>(a.rows * Fv));
      for (int64_t i = 0; i < a.rows; ++i) {
        const std::vector<int64_t>& es = rows[static_cast<size_t>(i)];
        if (es.empty()) continue;
        std::vector<double> s;
        for (int64_t e : es) {
          double d = 0;
          for (int64_t f = 0; f < F; ++f) d += double(q(i, f)) * double(k(a.colind[static_cast<size_t>(e)], f));
          s.push_back(scale * d);
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t f = 0; f < Fv; ++f) {
          double o = 0, mag = 0;
          for (size_t j = 0; j < es.size(); ++j) {
            const double p = s[j] / sum * double(v(a.colind[static_cast<size_t>(es[j])], f));
            o += p;
            mag += std::abs(p);
          }
          const size_t kk = static_cast<size_t>(i * Fv + f);
          want.value[kk] = o;
          // Scores carry a dot product's rounding through exp: allow F terms' worth on top.
          want.scale[kk] = mag * (1.0 + double(F) * 0.5);
          want.terms[kk] = static_cast<double>(es.size());
        }
      }
      for (const std::string& var : variants(SPARSEPORT_OP_CSR_ATTENTION))
        for (int t = 1; t <= kMaxThreads; ++t) {
          SCOPED_TRACE(var + ", F " + std::to_string(F) + ", Fv " + std::to_string(Fv) + ", " + std::to_string(t) +
                       " threads, seed " + std::to_string(kSeed + 40));
          ctx.set_threads(t);
          HostDense<float> out(a.rows, Fv, Fv + 2, std::numeric_limits<float>::quiet_NaN());
          csr_attention(ctx, a.view(), q.view(), k.view(), v.view(), out.mut(), {0.0, var});
          ASSERT_TRUE(close_to(out, want, Fv));
        }
    }
}

template <class I, class V>
::testing::AssertionResult same_csr(const HostCsr<I, V>& got, const HostCsr<I, V>& want) {
  if (got.rows != want.rows || got.cols != want.cols)
    return ::testing::AssertionFailure() << "shape " << got.rows << "x" << got.cols << ", want " << want.rows << "x"
                                         << want.cols;
  if (got.rowptr != want.rowptr) return ::testing::AssertionFailure() << "rowptr differs";
  if (got.colind != want.colind) return ::testing::AssertionFailure() << "colind differs";
  if (got.values != want.values) return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

TEST(OpenMPThreads, CsrSliceRowsBothForms) {
  Context ctx = Context::create("openmp");
  const auto a = skewed_csr<int32_t, float>(1500, 900, 20000, 0.4, kSeed + 50);
  std::mt19937_64 rng(kSeed + 51);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(a.rows - 1));
  std::vector<int32_t> sel(700);
  for (int32_t& r : sel) r = pick(rng);
  sel[5] = static_cast<int32_t>(a.rows / 3);  // the mega-row, twice
  sel[600] = static_cast<int32_t>(a.rows / 3);
  HostCsr<int32_t, float> want;
  want.rows = static_cast<int64_t>(sel.size());
  want.cols = a.cols;
  HostDense<float> want_dense(want.rows, a.cols);
  for (size_t t = 0; t < sel.size(); ++t) {
    for (int32_t e = a.rowptr[static_cast<size_t>(sel[t])]; e < a.rowptr[static_cast<size_t>(sel[t]) + 1]; ++e) {
      want.colind.push_back(a.colind[static_cast<size_t>(e)]);
      want.values.push_back(a.values[static_cast<size_t>(e)]);
      want_dense(static_cast<int64_t>(t), a.colind[static_cast<size_t>(e)]) += a.values[static_cast<size_t>(e)];
    }
    want.rowptr.push_back(static_cast<int32_t>(want.colind.size()));
  }
  const IndexView rows = make_index(static_cast<int64_t>(sel.size()), sel.data());
  for (int t = 1; t <= kMaxThreads; ++t) {
    ctx.set_threads(t);
    for (const std::string& v : variants(SPARSEPORT_OP_CSR_SLICE_ROWS)) {
      SCOPED_TRACE(v + ", " + std::to_string(t) + " threads, seed " + std::to_string(kSeed + 50));
      EXPECT_TRUE(same_csr(ctx.to_host<int32_t, float>(csr_slice_rows(ctx, a.view(), rows, {v})), want));
    }
    for (const std::string& v : variants(SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE)) {
      SCOPED_TRACE(v + ", " + std::to_string(t) + " threads, seed " + std::to_string(kSeed + 50));
      HostDense<float> out(want.rows, a.cols, a.cols + 3, std::numeric_limits<float>::quiet_NaN());
      csr_slice_rows_dense(ctx, a.view(), rows, out.mut(), {v});
      // Repeated columns add up in the order they are stored, as in the oracle above.
      for (int64_t i = 0; i < want.rows; ++i)
        for (int64_t j = 0; j < a.cols; ++j)
          ASSERT_EQ(out(i, j), want_dense(i, j)) << "out[" << i << "," << j << "]";
    }
  }
}

TEST(OpenMPThreads, CsrInducedSubgraph) {
  Context ctx = Context::create("openmp");
  const auto a = skewed_csr<int32_t, float>(1500, 1500, 20000, 0.4, kSeed + 60);
  std::vector<int32_t> all(static_cast<size_t>(a.rows));
  std::iota(all.begin(), all.end(), 0);
  std::mt19937_64 rng(kSeed + 61);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int32_t> vert(all.begin(), all.begin() + 800);
  vert[17] = static_cast<int32_t>(a.rows / 3);  // keep the mega-row (distinctness: it may repeat)
  if (std::count(vert.begin(), vert.end(), vert[17]) > 1) vert.erase(std::find(vert.begin(), vert.end(), vert[17]));
  std::vector<int32_t> map(static_cast<size_t>(a.rows), -1);
  for (size_t t = 0; t < vert.size(); ++t) map[static_cast<size_t>(vert[t])] = static_cast<int32_t>(t);
  HostCsr<int32_t, float> want;
  want.rows = want.cols = static_cast<int64_t>(vert.size());
  for (int32_t u : vert) {
    for (int32_t e = a.rowptr[static_cast<size_t>(u)]; e < a.rowptr[static_cast<size_t>(u) + 1]; ++e) {
      const int32_t to = map[static_cast<size_t>(a.colind[static_cast<size_t>(e)])];
      if (to < 0) continue;
      want.colind.push_back(to);
      want.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    want.rowptr.push_back(static_cast<int32_t>(want.colind.size()));
  }
  for (const std::string& v : variants(SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH))
    for (int t = 1; t <= kMaxThreads; ++t) {
      SCOPED_TRACE(v + ", " + std::to_string(t) + " threads, seed " + std::to_string(kSeed + 60));
      ctx.set_threads(t);
      const CsrMatrix m = csr_induced_subgraph(ctx, a.view(), make_index(static_cast<int64_t>(vert.size()), vert.data()), {v});
      EXPECT_TRUE(same_csr(ctx.to_host<int32_t, float>(m), want));
    }
}

TEST(OpenMPThreads, CsrTranspose) {
  Context ctx = Context::create("openmp");
  for (bool pattern : {false, true}) {
    const auto a = skewed_csr<int64_t, double>(1500, 1100, 20000, 0.4, kSeed + 70, !pattern);
    // The oracle: a stable counting sort, row by row, so entries keep A's row order.
    HostCsr<int64_t, double> want;
    want.rows = a.cols;
    want.cols = a.rows;
    want.rowptr.assign(static_cast<size_t>(a.cols) + 1, 0);
    for (int64_t c : a.colind) ++want.rowptr[static_cast<size_t>(c) + 1];
    for (size_t j = 1; j < want.rowptr.size(); ++j) want.rowptr[j] += want.rowptr[j - 1];
    want.colind.resize(a.colind.size());
    if (!pattern) want.values.resize(a.values.size());
    std::vector<int64_t> at(want.rowptr.begin(), want.rowptr.end() - 1);
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
        const int64_t pos = at[static_cast<size_t>(a.colind[static_cast<size_t>(e)])]++;
        want.colind[static_cast<size_t>(pos)] = i;
        if (!pattern) want.values[static_cast<size_t>(pos)] = a.values[static_cast<size_t>(e)];
      }
    for (const std::string& v : variants(SPARSEPORT_OP_CSR_TRANSPOSE))
      for (int t = 1; t <= kMaxThreads; ++t) {
        SCOPED_TRACE(v + (pattern ? ", pattern" : ", values") + ", " + std::to_string(t) + " threads, seed " +
                     std::to_string(kSeed + 70));
        ctx.set_threads(t);
        EXPECT_TRUE(same_csr(ctx.to_host<int64_t, double>(csr_transpose(ctx, a.view(), {v})), want));
      }
  }
}

// Fewer messages, rows or nonzeros than threads: parts of the team get empty ranges.
TEST(OpenMPThreads, TinyInputsOnSevenThreads) {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kMaxThreads);
  const int64_t F = 3;
  const std::vector<int32_t> idx = {1, 1};  // 2 messages into row 1 of 4
  const HostDense<float> src = random_dense<float>(2, F, F, kSeed + 80);
  for (Reduce r : kReduces)
    for (const std::string& v : variants(SPARSEPORT_OP_SEGMENT_REDUCE)) {
      SCOPED_TRACE(v + ", " + name(r));
      HostDense<float> out(4, F, -1, std::numeric_limits<float>::quiet_NaN());
      segment_reduce(ctx, make_index<int32_t>(2, idx.data()), src.view(), out.mut(), {r, v});
      for (int64_t f = 0; f < F; ++f) {
        const double a0 = src(0, f), a1 = src(1, f);
        const double want = r == Reduce::sum    ? a0 + a1
                            : r == Reduce::mean ? (a0 + a1) / 2
                            : r == Reduce::max  ? std::max(a0, a1)
                                                : std::min(a0, a1);
        EXPECT_NEAR(out(1, f), want, 1e-6);
        EXPECT_EQ(out(0, f), 0.0f);
        EXPECT_EQ(out(2, f), 0.0f);
        EXPECT_EQ(out(3, f), 0.0f);
      }
    }
  // No messages at all: every row is 0.
  for (const std::string& v : variants(SPARSEPORT_OP_SEGMENT_REDUCE)) {
    HostDense<float> out(4, F, -1, std::numeric_limits<float>::quiet_NaN());
    const HostDense<float> none(0, F);
    segment_reduce(ctx, make_index<int32_t>(0, nullptr), none.view(), out.mut(), {Reduce::max, v});
    for (float x : out.data) EXPECT_EQ(x, 0.0f) << v;
  }
  // One row, two nonzeros, and five empty rows for spmm.
  HostCsr<int32_t, float> a;
  a.rows = 6;
  a.cols = 2;
  a.rowptr = {0, 0, 0, 2, 2, 2, 2};
  a.colind = {1, 0};
  a.values = {2.0f, -1.0f};
  HostDense<float> b(2, F);
  for (int64_t f = 0; f < F; ++f) {
    b(0, f) = float(f + 1);
    b(1, f) = float(10 * (f + 1));
  }
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    HostDense<float> c(6, F, -1, std::numeric_limits<float>::quiet_NaN());
    spmm(ctx, a.view(), b.view(), c.mut(), {Reduce::sum, 1.0, 0.0, v});
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t f = 0; f < F; ++f)
        EXPECT_EQ(c(i, f), i == 2 ? 2.0f * b(1, f) - b(0, f) : 0.0f) << v << " row " << i << " col " << f;
  }
}

}  // namespace
