// SPDX-License-Identifier: Apache-2.0
// sddmm on every plugin and variant against the reference in double: repeated and unsorted
// columns, patterns, F not a multiple of 4, ld > F for X, Y and out.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

template <class I, class V>
void check_sddmm(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> a64 = to_double(a), a_abs = to_double(a, true);
  const std::string oracle_v = oracle_variant(SPARSEPORT_OP_SDDMM);
  int run = 0;
  for (int64_t f : kWidths) {
    const int64_t ld_x = f + (run % 2 == 0 ? 0 : 2), ld_y = f + (run % 3 == 1 ? 5 : 0), ld_out = 1 + run % 2;
    ++run;
    SCOPED_TRACE("F " + std::to_string(f) + ", ld(X) " + std::to_string(ld_x) + ", ld(Y) " + std::to_string(ld_y) +
                 ", ld(out) " + std::to_string(ld_out));
    const HostDense<V> x = random_dense<V>(a.rows, f, ld_x, rng);
    const HostDense<V> y = random_dense<V>(a.cols, f, ld_y, rng);
    const HostDense<V> out0 = nan_dense<V>(a.nnz(), 1, ld_out);

    HostDense<double> want = to_double(out0), bound = to_double(out0);
    sddmm(oracle(), a64.view(), to_double(x).view(), to_double(y).view(), want.mut(), {oracle_v});
    sddmm(oracle(), a_abs.view(), to_double(x, true).view(), to_double(y, true).view(), bound.mut(), {oracle_v});

    for_each_target(SPARSEPORT_OP_SDDMM, [&](const Target& t) {
      Stage st(*t.ctx);
      const DenseMutView out = st.dense_mut(out0);
      sddmm(*t.ctx, st.csr(a), st.dense(x), st.dense(y), out, {t.variant});
      t.ctx->synchronize();
      const HostDense<V> got = st.fetch<V>(out);
      expect_close(
          got, want, bound, [&](int64_t) { return f + 1; }, t.variant + " out");
      expect_padding_kept(got, t.variant + " out");
    });
  }
}

class SddmmConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(SddmmConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("sddmm/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_sddmm<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SddmmConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::dense_row},
                             {Shape::mega_row, true, true},
                             {Shape::power_law},
                             {Shape::single_row},
                             {Shape::random, true, true},
                             {Shape::power_law, true, true, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
