// SPDX-License-Identifier: Apache-2.0
// spmv (spmm with one column, through its own entry point) and spmm at the small widths solvers use
// (F = 1, 2, 3, 4, 7, 8, 16: every lane tile of the small-F kernels, full and masked), on every
// plugin and variant against the reference in double: alpha/beta combinations (beta = 0 with NaN
// in y or C, alpha = 0), every reduce, strided vectors, both index and value types.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

struct Scaling {
  double alpha, beta;
};
// beta == 0 runs start from an output full of NaN: none of it may reach the result.
constexpr Scaling kScalings[] = {{1.0, 0.0}, {-1.5, 0.5}, {2.0, 0.0}, {0.5, 1.0}, {1.0, -2.0}, {0.0, 1.5}};

// A's products into an output like `start` through op (spmv or spmm) on every target, against the
// reference's spmm in double; the first call of each width also checks spmv's shape errors.
template <class I, class V, class Op>
void check_against_reference(const HostCsr<I, V>& a, int64_t F, int64_t ld_b, int64_t ld_c, Reduce r, Scaling s,
                             std::mt19937_64& rng, Op&& op) {
  SCOPED_TRACE("F " + std::to_string(F) + ", reduce " + name(r) + ", alpha " + std::to_string(s.alpha) + ", beta " +
               std::to_string(s.beta) + ", ld(B/x) " + std::to_string(ld_b) + ", ld(C/y) " + std::to_string(ld_c));
  const HostCsr<I, double> a64 = to_double(a), a_abs = to_double(a, true);
  const std::vector<int64_t> deg = row_degrees(a.view());
  const std::string oracle_v = oracle_variant(SPARSEPORT_OP_SPMM);
  const HostDense<V> b = random_dense<V>(a.cols, F, ld_b, rng);
  const HostDense<V> c0 = s.beta == 0.0 ? nan_dense<V>(a.rows, F, ld_c) : random_dense<V>(a.rows, F, ld_c, rng);
  HostDense<double> want = to_double(c0);
  spmm(oracle(), a64.view(), to_double(b).view(), want.mut(), {r, s.alpha, s.beta, oracle_v});
  // Sum and mean err relative to the sum of |terms|; max and min return one term, so max |term|.
  HostDense<double> bound = to_double(c0, true);
  spmm(oracle(), a_abs.view(), to_double(b, true).view(), bound.mut(),
       {r == Reduce::min ? Reduce::max : r, std::fabs(s.alpha), std::fabs(s.beta), oracle_v});
  for_each_target(SPARSEPORT_OP_SPMM, [&](const Target& t) {
    Stage st(*t.ctx);
    const DenseMutView c = st.dense_mut(c0);
    op(*t.ctx, st.csr(a), st.dense(b), c, SpmmOptions{r, s.alpha, s.beta, t.variant});
    t.ctx->synchronize();
    const HostDense<V> got = st.fetch<V>(c);
    expect_close(
        got, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + 2; }, t.variant + " out");
    expect_padding_kept(got, t.variant + " out");
  });
}

template <class I, class V>
void check_spmv(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const auto via_spmv = [](const Context& ctx, const CsrView& m, const DenseView& x, const DenseMutView& y,
                           const SpmvOptions& o) { spmv(ctx, m, x, y, o); };
  int run = 0;
  for (Scaling s : kScalings) {
    // Sums with contiguous vectors (what cusparseSpMV takes), then each reduce once more with
    // strided x and y (every other variant must take those).
    check_against_reference(a, 1, 1, 1, Reduce::sum, s, rng, via_spmv);
    const Reduce r = kReduces[run++ % std::size(kReduces)];
    check_against_reference(a, 1, 3, 2, r, s, rng, via_spmv);
  }
}

template <class I, class V>
void check_small_f(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const auto via_spmm = [](const Context& ctx, const CsrView& m, const DenseView& b, const DenseMutView& c,
                           const SpmmOptions& o) { spmm(ctx, m, b, c, o); };
  int run = 0;
  for (int64_t f : {1, 2, 3, 4, 7, 8, 16}) {
    // ld == F (16-byte vectors where F allows them) and a padded ld (scalar loads, masked columns).
    for (int64_t pad : {0, 1}) {
      const Reduce r = kReduces[run % std::size(kReduces)];
      const Scaling s = kScalings[run % std::size(kScalings)];
      ++run;
      check_against_reference(a, f, f + pad, f + 2 * pad, r, s, rng, via_spmm);
    }
  }
}

const std::vector<MatrixSpec> kSpecs = {
    {Shape::random},
    {Shape::empty_rows},
    {Shape::no_nnz},
    {Shape::dense_row},
    {Shape::mega_row},
    {Shape::power_law},
    {Shape::single_row},
    {Shape::random, true, true},
    {Shape::empty_rows, false, true, true},
    {Shape::mega_row, false, false, true},
};

class SpmvConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(SpmvConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("spmv/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_spmv<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SpmvConformance, ::testing::ValuesIn(with_all_types(kSpecs)), CaseName{});

class SpmvSmallFConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(SpmvSmallFConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("spmv_small_f/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_small_f<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SpmvSmallFConformance, ::testing::ValuesIn(with_all_types(kSpecs)), CaseName{});

// spmv names x and y (not spmm's B and C) and the numbers when a shape is wrong.
TEST(SpmvArguments, ShapeErrorsNameTheVectors) {
  const Context& ctx = oracle();
  HostCsr<int32_t, float> a;
  a.rows = 3;
  a.cols = 4;
  a.rowptr = {0, 1, 2, 2};
  a.colind = {0, 3};
  a.values = {1.0f, 2.0f};
  std::vector<float> x(4, 1.0f), y(3, 0.0f), wrong(5, 0.0f);
  const auto expect_message = [&](const DenseView& xv, const DenseMutView& yv, const std::string& want) {
    try {
      spmv(ctx, a.view(), xv, yv);
      ADD_FAILURE() << "spmv accepted the arguments; expected: " << want;
    } catch (const DimensionMismatch& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("sparseport::spmv[reference]"), std::string::npos) << e.what();
    }
  };
  expect_message(make_vector<float>(5, wrong.data()), make_vector<float>(3, y.data()), "x is 5x1 but must be 4x1");
  expect_message(make_vector<float>(4, x.data()), make_vector<float>(5, wrong.data()), "y is 5x1 but must be 3x1");
  expect_message(make_dense<float>(2, 2, 2, static_cast<const float*>(x.data())), make_vector<float>(3, y.data()),
                 "x is 2x2 but must be 4x1");
  // The right shapes run: y = A x.
  spmv(ctx, a.view(), make_vector<float>(4, x.data()), make_vector<float>(3, y.data()));
  EXPECT_EQ(y, (std::vector<float>{1.0f, 2.0f, 0.0f}));
}

}  // namespace
}  // namespace sparseport::testing
