// SPDX-License-Identifier: Apache-2.0
// backward.hpp on every available backend against the gradients written out as plain loops in
// double: spmm_arg (every variant that records arg, bit for bit against the reference in the value
// type: ties and NaN included), spmm_backward for the four reductions with and without a
// Transpose, sddmm_backward and segment_sum_backward. Inputs: the conformance shapes (empty rows,
// mega-rows, repeated and unsorted columns, patterns) with B drawn from a few small integers so
// that many products tie, and a NaN case.
#include <cmath>

#include "common/conformance.hpp"
#include "sparseport/backward.hpp"

namespace sparseport::testing {
namespace {

// Every available backend, the reference included.
std::vector<std::shared_ptr<Context>> backends() {
  std::vector<std::shared_ptr<Context>> out;
  for (const PluginInfo& p : plugins())
    if (p.status == PluginStatus::available) out.push_back(context_for(p.name));
  return out;
}

bool records_arg(const Context& ctx, const std::string& variant) {
  for (const VariantInfo& v : ctx.plugin().variants)
    if (v.op == SPARSEPORT_OP_SPMM && v.name == variant) return v.records_arg;
  return false;
}

// B with entries from {-2, -1, 0, 1, 2}: products tie often, so the lowest-position rule matters.
template <class V>
HostDense<V> tie_dense(int64_t rows, int64_t cols, int64_t ld, std::mt19937_64& rng) {
  HostDense<V> d(rows, cols, ld, kPadding<V>);
  std::uniform_int_distribution<int> pick(-2, 2);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) d(i, j) = static_cast<V>(pick(rng));
  return d;
}

SpmmOptions reduce_opt(Reduce r, std::string variant = {}) {
  SpmmOptions o;
  o.reduce = r;
  o.variant = std::move(variant);
  return o;
}

SpmmBackwardOptions backward_opt(Reduce r) {
  SpmmBackwardOptions o;
  o.reduce = r;
  return o;
}

template <class I>
ArgMutView arg_view(std::vector<I>& v, int64_t rows, int64_t cols) {
  return {rows, cols, cols, v.data(), index_type_of<I>()};
}

template <class I, class V>
void check_spmm_arg(const MatrixSpec& spec, uint64_t seed, bool with_nan) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  for (const int64_t f : {int64_t{1}, int64_t{5}, int64_t{33}}) {
    HostDense<V> b = tie_dense<V>(a.cols, f, f, rng);
    if (with_nan && a.cols > 0) b(a.cols / 2, f - 1) = std::numeric_limits<V>::quiet_NaN();
    for (const Reduce r : {Reduce::max, Reduce::min}) {
      SCOPED_TRACE("F " + std::to_string(f) + ", reduce " + name(r));
      // The oracle compares products in the value type, as every plugin does: ties are ties in V.
      HostDense<V> want_c(a.rows, f);
      std::vector<I> want_arg(static_cast<size_t>(a.rows * f), I(-7));
      spmm_arg(oracle(), a.view(), b.view(), want_c.mut(), arg_view(want_arg, a.rows, f), reduce_opt(r, "spmm.serial"));
      for_each_target(SPARSEPORT_OP_SPMM, [&](const Target& t) {
        if (!records_arg(*t.ctx, t.variant)) return;
        Stage st(*t.ctx);
        const HostDense<V> c0 = nan_dense<V>(a.rows, f, f);
        const DenseMutView c = st.dense_mut(c0);
        std::vector<I> arg0(static_cast<size_t>(a.rows * f), I(-7));
        I* arg_dev = st.put(arg0);
        spmm_arg(*t.ctx, st.csr(a), st.dense(b), c, {a.rows, f, f, arg_dev, index_type_of<I>()}, reduce_opt(r, t.variant));
        t.ctx->synchronize();
        const std::vector<I> got = arg0.empty() ? arg0 : st.get(arg_dev, arg0.size());
        int64_t bad = 0;
        for (size_t k = 0; k < got.size(); ++k)
          if (got[k] != want_arg[k] && ++bad <= 5)
            ADD_FAILURE() << t.variant << " arg[" << k / static_cast<size_t>(f) << "," << k % static_cast<size_t>(f)
                          << "] = " << got[k] << ", the reference says " << want_arg[k];
        EXPECT_EQ(bad, 0) << t.variant << ": " << bad << " winners differ";
        const HostDense<V> got_c = st.fetch<V>(c);
        for (size_t k = 0; k < got_c.data.size(); ++k) {
          const V g = got_c.data[k], w = want_c.data[k];
          EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << t.variant << " C[" << k << "] " << g << " vs " << w;
        }
      });
    }
  }
}

// The gradients of spmm, written out: dB and dA (A's order) in double.
template <class I, class V>
void spmm_grads_oracle(const HostCsr<I, V>& a, const HostDense<V>& b, const HostDense<V>& dc, Reduce r,
                       const std::vector<I>& arg, HostDense<double>& db, std::vector<double>& dv, HostDense<double>& db_abs,
                       std::vector<double>& dv_abs) {
  const int64_t F = dc.cols;
  db = HostDense<double>(a.cols, F);
  db_abs = HostDense<double>(a.cols, F);
  dv.assign(static_cast<size_t>(a.nnz()), 0.0);
  dv_abs.assign(static_cast<size_t>(a.nnz()), 0.0);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
    const double scale = r == Reduce::mean ? 1.0 / static_cast<double>(e1 - e0) : 1.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t j = a.colind[static_cast<size_t>(e)];
      const double v = a.is_pattern() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(e)]);
      for (int64_t f = 0; f < F; ++f) {
        if ((r == Reduce::max || r == Reduce::min) && arg[static_cast<size_t>(i * F + f)] != static_cast<I>(e)) continue;
        const double g = static_cast<double>(dc(i, f)) * scale, bj = static_cast<double>(b(j, f));
        db(j, f) += g * v;
        db_abs(j, f) += std::fabs(g * v);
        dv[static_cast<size_t>(e)] += g * bj;
        dv_abs[static_cast<size_t>(e)] += std::fabs(g * bj);
      }
    }
  }
}

template <class I, class V>
void check_spmm_backward(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const int64_t max_deg = [&] {
    int64_t d = 0;
    for (int64_t x : row_degrees(a.view())) d = std::max(d, x);
    return d;
  }();
  for (const int64_t f : {int64_t{1}, int64_t{17}}) {
    const HostDense<V> b = tie_dense<V>(a.cols, f, f, rng);
    const HostDense<V> dc = random_dense<V>(a.rows, f, f, rng);
    for (const Reduce r : kReduces) {
      const bool arg_r = r == Reduce::max || r == Reduce::min;
      for (const bool with_t : {false, true}) {
        for (const auto& ctx : backends()) {
          SCOPED_TRACE(std::string("backend ") + ctx->backend() + ", F " + std::to_string(f) + ", reduce " + name(r) +
                       (with_t ? ", with a Transpose" : ", no Transpose"));
          Stage st(*ctx);
          const CsrView av = st.csr(a);
          const DenseView bv = st.dense(b);
          std::vector<I> arg(static_cast<size_t>(a.rows * f), I(-7));
          I* arg_dev = st.put(arg);
          if (arg_r) {
            const DenseMutView c = st.dense_mut(HostDense<V>(a.rows, f));
            spmm_arg(*ctx, av, bv, c, {a.rows, f, f, arg_dev, index_type_of<I>()}, reduce_opt(r));
            ctx->synchronize();
            if (!arg.empty()) arg = st.get(arg_dev, arg.size());
          }
          HostDense<double> want_db, want_db_abs;
          std::vector<double> want_dv, want_dv_abs;
          spmm_grads_oracle(a, b, dc, r, arg, want_db, want_dv, want_db_abs, want_dv_abs);

          const DenseMutView db = st.dense_mut(nan_dense<V>(a.cols, f, f));
          const DenseMutView dv = st.dense_mut(nan_dense<V>(a.nnz(), 1, 1));
          std::optional<Transpose> t;
          if (with_t) t.emplace(*ctx, av);
          SpmmBackwardOptions opt;
          opt.reduce = r;
          opt.transpose = with_t ? &*t : nullptr;
          opt.arg = {a.rows, f, f, arg_dev, index_type_of<I>()};
          spmm_backward(*ctx, av, bv, st.dense(dc), {db, dv}, opt);
          ctx->synchronize();
          expect_close(
              st.fetch<V>(db), want_db, want_db_abs, [&](int64_t) { return a.nnz() + 1; }, "dB");
          HostDense<double> want_dv_d(a.nnz(), 1), bound_dv(a.nnz(), 1);
          want_dv_d.data = want_dv;
          bound_dv.data = want_dv_abs;
          expect_close(
              st.fetch<V>(dv), want_dv_d, bound_dv, [&](int64_t) { return f + max_deg; }, "dvalues");
        }
      }
    }
  }
}

template <class I, class V>
void check_sddmm_backward(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const int64_t f = 7;
  const HostDense<V> x = random_dense<V>(a.rows, f, f + 1, rng), y = random_dense<V>(a.cols, f, f, rng);
  const HostDense<V> dout = random_dense<V>(a.nnz(), 1, 2, rng);  // ld 2: a strided column
  HostDense<double> dx(a.rows, f), dy(a.cols, f), dv(a.nnz(), 1), dx_abs(a.rows, f), dy_abs(a.cols, f),
      dv_abs(a.nnz(), 1);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      const int64_t j = a.colind[static_cast<size_t>(e)];
      const double v = a.is_pattern() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(e)]);
      const double g = static_cast<double>(dout(e, 0));
      for (int64_t c = 0; c < f; ++c) {
        const double xi = static_cast<double>(x(i, c)), yj = static_cast<double>(y(j, c));
        dx(i, c) += v * g * yj;
        dx_abs(i, c) += std::fabs(v * g * yj);
        dy(j, c) += v * g * xi;
        dy_abs(j, c) += std::fabs(v * g * xi);
        dv(e, 0) += g * xi * yj;
        dv_abs(e, 0) += std::fabs(g * xi * yj);
      }
    }
  }
  for (const auto& ctx : backends()) {
    SCOPED_TRACE(std::string("backend ") + ctx->backend());
    Stage st(*ctx);
    const CsrView av = st.csr(a);
    const DenseMutView gx = st.dense_mut(nan_dense<V>(a.rows, f, f)), gy = st.dense_mut(nan_dense<V>(a.cols, f, f)),
                       gv = st.dense_mut(nan_dense<V>(a.nnz(), 1, 1));
    sddmm_backward(*ctx, av, st.dense(x), st.dense(y), st.dense(dout), {gx, gy, gv});
    ctx->synchronize();
    const auto terms = [&](int64_t) { return a.nnz() + f; };
    expect_close(st.fetch<V>(gx), dx, dx_abs, terms, "dX");
    expect_close(st.fetch<V>(gy), dy, dy_abs, terms, "dY");
    expect_close(st.fetch<V>(gv), dv, dv_abs, terms, "dvalues");
  }
}

class BackwardConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(BackwardConformance, SpmmArgMatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("spmm_arg/" + name(c));
  with_types(c.types, [&]<class I, class V>() {
    check_spmm_arg<I, V>(c.matrix, seed, false);
    check_spmm_arg<I, V>(c.matrix, seed + 1, true);
  });
}

TEST_P(BackwardConformance, SpmmBackwardMatchesLoops) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("spmm_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_spmm_backward<I, V>(c.matrix, seed); });
}

TEST_P(BackwardConformance, SddmmBackwardMatchesLoops) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("sddmm_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_sddmm_backward<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, BackwardConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::mega_row, true, true},
                             {Shape::power_law, false, false, true},
                             {Shape::random, true, true, true},
                         })),
                         CaseName{});

TEST(BackwardConformance, SegmentSumBackwardIsAGather) {
  std::mt19937_64 rng(case_seed("segment_sum_backward"));
  const int64_t n = 37, e = 500, f = 6;
  std::vector<int64_t> index(static_cast<size_t>(e));
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  for (auto& i : index) i = pick(rng);
  const HostDense<double> dout = random_dense<double>(n, f, f, rng);
  for (const auto& ctx : backends()) {
    SCOPED_TRACE(ctx->backend());
    Stage st(*ctx);
    const DenseMutView ds = st.dense_mut(nan_dense<double>(e, f, f));
    segment_sum_backward(*ctx, st.index(index), st.dense(dout), ds);
    ctx->synchronize();
    const HostDense<double> got = st.fetch<double>(ds);
    for (int64_t k = 0; k < e; ++k)
      for (int64_t c = 0; c < f; ++c) ASSERT_EQ(got(k, c), dout(index[static_cast<size_t>(k)], c)) << k << "," << c;
  }
}

TEST(BackwardConformance, BadArgumentsNameTheOpAndNumbers) {
  HostCsr<int32_t, float> a;
  a.rows = 2;
  a.cols = 3;
  a.rowptr = {0, 1, 2};
  a.colind = {0, 2};
  a.values = {1.f, 2.f};
  const HostDense<float> b(3, 4), c(2, 4), dc(2, 4);
  HostDense<float> out(2, 4);
  std::vector<int32_t> arg(8);
  const Context& ctx = oracle();
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message([&] { spmm_arg(ctx, a.view(), b.view(), out.mut(), {2, 4, 4, arg.data(), IndexType::i32}, reduce_opt(Reduce::sum)); })
                .find("sparseport::spmm_arg[reference]: reduce is sum"),
            std::string::npos);
  EXPECT_NE(message([&] { spmm_arg(ctx, a.view(), b.view(), out.mut(), {2, 3, 4, arg.data(), IndexType::i32}, reduce_opt(Reduce::max)); })
                .find("arg is 2 x 3 with ld 4; need 2 x 4"),
            std::string::npos);
  HostDense<float> db(3, 4);
  EXPECT_NE(message([&] { spmm_backward(ctx, a.view(), b.view(), dc.view(), {db.mut(), {}}, backward_opt(Reduce::max)); })
                .find("needs the forward's arg"),
            std::string::npos);
  HostDense<float> bad_db(2, 4);
  EXPECT_NE(message([&] { spmm_backward(ctx, a.view(), b.view(), dc.view(), {bad_db.mut(), {}}, backward_opt(Reduce::sum)); })
                .find("dB"),
            std::string::npos);
}

}  // namespace
}  // namespace sparseport::testing
