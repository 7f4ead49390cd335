// SPDX-License-Identifier: Apache-2.0
// spmm on every plugin and variant against the reference in double: every reduce, alpha/beta
// (beta = 0 with NaN in C), F not a multiple of 4, ld > F, both index and value types.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

struct Scaling {
  double alpha, beta;
};
// beta == 0 runs start from a C full of NaN: none of it may reach the result.
constexpr Scaling kScalings[] = {{1.0, 0.0}, {-1.5, 0.5}, {2.0, 0.0}, {0.5, 1.0}, {1.0, -2.0}};

template <class I, class V>
void check_spmm(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> a64 = to_double(a), a_abs = to_double(a, true);
  const std::vector<int64_t> deg = row_degrees(a.view());
  const std::string oracle_v = oracle_variant(SPARSEPORT_OP_SPMM);
  int run = 0;
  for (int64_t f : kWidths) {
    for (Reduce r : kReduces) {
      const int64_t ld_b = f + (run % 2 == 1 ? 3 : 0), ld_c = f + (run % 3 == 0 ? 0 : 1);
      const Scaling s = kScalings[run % std::size(kScalings)];
      ++run;
      SCOPED_TRACE("F " + std::to_string(f) + ", reduce " + name(r) + ", alpha " + std::to_string(s.alpha) + ", beta " +
                   std::to_string(s.beta) + ", ld(B) " + std::to_string(ld_b) + ", ld(C) " + std::to_string(ld_c));
      const HostDense<V> b = random_dense<V>(a.cols, f, ld_b, rng);
      const HostDense<V> c0 = s.beta == 0.0 ? nan_dense<V>(a.rows, f, ld_c) : random_dense<V>(a.rows, f, ld_c, rng);

      HostDense<double> want = to_double(c0);
      spmm(oracle(), a64.view(), to_double(b).view(), want.mut(), {r, s.alpha, s.beta, oracle_v});
      // Sum and mean err relative to the sum of |terms|; max and min return one term, so max |term|.
      const Reduce bound_r = (r == Reduce::max || r == Reduce::min) ? Reduce::max : r;
      HostDense<double> bound = to_double(c0, true);
      spmm(oracle(), a_abs.view(), to_double(b, true).view(), bound.mut(),
           {bound_r, std::fabs(s.alpha), std::fabs(s.beta), oracle_v});

      for_each_target(SPARSEPORT_OP_SPMM, [&](const Target& t) {
        Stage st(*t.ctx);
        const DenseMutView c = st.dense_mut(c0);
        spmm(*t.ctx, st.csr(a), st.dense(b), c, {r, s.alpha, s.beta, t.variant});
        t.ctx->synchronize();
        const HostDense<V> got = st.fetch<V>(c);
        expect_close(
            got, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + 2; }, t.variant + " C");
        expect_padding_kept(got, t.variant + " C");
      });
    }
  }
}

class SpmmConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(SpmmConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("spmm/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_spmm<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SpmmConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::dense_row},
                             {Shape::mega_row, true, true},
                             {Shape::power_law},
                             {Shape::single_row},
                             {Shape::random, true, true},
                             {Shape::empty_rows, false, true, true},
                             {Shape::mega_row, false, false, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
