// SPDX-License-Identifier: Apache-2.0
// csr_transpose on every plugin and variant against the reference, compared exactly (the order
// within a result row is part of the contract: A's row order, storage order for repeats).
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

template <class I, class V>
void check_transpose(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> want = oracle().to_host<I, double>(
      csr_transpose(oracle(), to_double(a).view(), {oracle_variant(SPARSEPORT_OP_CSR_TRANSPOSE)}));
  for_each_target(SPARSEPORT_OP_CSR_TRANSPOSE, [&](const Target& t) {
    Stage st(*t.ctx);
    const CsrMatrix m = csr_transpose(*t.ctx, st.csr(a), {t.variant});
    t.ctx->synchronize();
    expect_same_csr(t.ctx->to_host<I, V>(m), want, t.variant);
  });
}

class TransposeConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(TransposeConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("csr_transpose/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_transpose<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, TransposeConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::no_rows},
                             {Shape::dense_row},
                             {Shape::mega_row, true, true},
                             {Shape::power_law, true, true},
                             {Shape::single_row},
                             {Shape::random, true, true, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
