// SPDX-License-Identifier: Apache-2.0
// csr_attention on every plugin and variant against the reference in double: empty rows, a
// mega-row (a long softmax), repeated and unsorted keys, values ignored, Fv != F, the default and
// an explicit scale, ld > F.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

template <class I, class V>
void check_attention(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> a64 = to_double(a);
  const std::vector<int64_t> deg = row_degrees(a.view());
  const std::string oracle_v = oracle_variant(SPARSEPORT_OP_CSR_ATTENTION);
  constexpr int64_t kValueWidths[] = {4, 1, 33, 6, 17};
  int run = 0;
  for (int64_t f : kWidths) {
    const int64_t fv = run % 2 == 0 ? f : kValueWidths[run % std::size(kValueWidths)];
    // 0 asks for the default 1/sqrt(F). 30 at F = 17 and 33 gives scores near 100, where exp
    // overflows float unless the kernel shifts by the row maximum.
    constexpr double kScales[] = {0.0, 0.7, 3.0, 30.0, 30.0};
    const double scale = kScales[run % std::size(kScales)];
    const int64_t ld_q = f + run % 2, ld_k = f + (run % 3 == 0 ? 0 : 4), ld_v = fv + 1, ld_out = fv + run % 2;
    ++run;
    SCOPED_TRACE("F " + std::to_string(f) + ", Fv " + std::to_string(fv) + ", scale " + std::to_string(scale) +
                 ", ld(Q,K,V,out) " + std::to_string(ld_q) + "," + std::to_string(ld_k) + "," + std::to_string(ld_v) +
                 "," + std::to_string(ld_out));
    const HostDense<V> q = random_dense<V>(a.rows, f, ld_q, rng);
    const HostDense<V> k = random_dense<V>(a.cols, f, ld_k, rng);
    const HostDense<V> v = random_dense<V>(a.cols, fv, ld_v, rng);
    const HostDense<V> out0 = nan_dense<V>(a.rows, fv, ld_out);

    HostDense<double> want = to_double(out0), bound = to_double(out0);
    csr_attention(oracle(), a64.view(), to_double(q).view(), to_double(k).view(), to_double(v).view(), want.mut(),
                  {scale, oracle_v});
    // The softmax weights are positive and sum to 1, so sum_j p_j |v_j| bounds the terms of out.
    csr_attention(oracle(), a64.view(), to_double(q).view(), to_double(k).view(), to_double(v, true).view(),
                  bound.mut(), {scale, oracle_v});

    for_each_target(SPARSEPORT_OP_CSR_ATTENTION, [&](const Target& t) {
      Stage st(*t.ctx);
      const DenseMutView out = st.dense_mut(out0);
      csr_attention(*t.ctx, st.csr(a), st.dense(q), st.dense(k), st.dense(v), out, {scale, t.variant});
      t.ctx->synchronize();
      const HostDense<V> got = st.fetch<V>(out);
      expect_close(
          got, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + f + 4; }, t.variant + " out");
      expect_padding_kept(got, t.variant + " out");
    });
  }
}

class AttentionConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(AttentionConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("csr_attention/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_attention<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, AttentionConformance,
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
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
