// SPDX-License-Identifier: Apache-2.0
// csr_slice_rows (CSR result, compared exactly) and csr_slice_rows_dense (dense rows, duplicates
// added up) on every plugin and variant against the reference: selections in any order with
// repeats, empty, every row reversed, the mega-row several times; repeated and unsorted columns.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

// Selections of rows from an m-row matrix, by name. The heaviest row is picked repeatedly in one.
std::vector<std::pair<std::string, std::vector<int64_t>>> selections(const std::vector<int64_t>& deg,
                                                                     std::mt19937_64& rng) {
  const int64_t m = static_cast<int64_t>(deg.size());
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({"empty", {}});
  if (m == 0) return out;
  std::uniform_int_distribution<int64_t> any(0, m - 1);
  std::vector<int64_t> random;
  for (int64_t t = 0; t < m + m / 2; ++t) random.push_back(any(rng));
  out.push_back({"random_with_repeats", random});
  std::vector<int64_t> reversed(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) reversed[static_cast<size_t>(i)] = m - 1 - i;
  out.push_back({"all_reversed", reversed});
  const int64_t heavy = std::max_element(deg.begin(), deg.end()) - deg.begin();
  out.push_back({"heaviest_thrice", {heavy, any(rng), heavy, heavy}});
  return out;
}

template <class I, class V>
void check_slice(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> a64 = to_double(a), a_abs = to_double(a, true);
  const std::vector<int64_t> deg = row_degrees(a.view());
  int run = 0;
  for (const auto& [sel_name, sel64] : selections(deg, rng)) {
    SCOPED_TRACE("selection " + sel_name + " (" + std::to_string(sel64.size()) + " rows)");
    const std::vector<I> sel = convert<I>(sel64);
    const IndexView sel_h = make_index<I>(static_cast<int64_t>(sel.size()), sel.data());
    const int64_t s = static_cast<int64_t>(sel.size());

    const HostCsr<I, double> want = oracle().to_host<I, double>(
        csr_slice_rows(oracle(), a64.view(), sel_h, {oracle_variant(SPARSEPORT_OP_CSR_SLICE_ROWS)}));
    for_each_target(SPARSEPORT_OP_CSR_SLICE_ROWS, [&](const Target& t) {
      Stage st(*t.ctx);
      const CsrMatrix m = csr_slice_rows(*t.ctx, st.csr(a), st.index(sel), {t.variant});
      t.ctx->synchronize();
      EXPECT_EQ(m.pattern, a.is_pattern()) << t.variant << ": a slice of a pattern is a pattern";
      expect_same_csr(t.ctx->to_host<I, V>(m), want, t.variant);
    });

    const int64_t ld = a.cols + (run++ % 2 == 0 ? 0 : 3);
    const HostDense<V> out0 = nan_dense<V>(s, a.cols, ld);
    HostDense<double> dense_want = to_double(out0), bound = to_double(out0);
    const std::string dense_v = oracle_variant(SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE);
    csr_slice_rows_dense(oracle(), a64.view(), sel_h, dense_want.mut(), {dense_v});
    csr_slice_rows_dense(oracle(), a_abs.view(), sel_h, bound.mut(), {dense_v});
    for_each_target(SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, [&](const Target& t) {
      Stage st(*t.ctx);
      const DenseMutView out = st.dense_mut(out0);
      csr_slice_rows_dense(*t.ctx, st.csr(a), st.index(sel), out, {t.variant});
      t.ctx->synchronize();
      const HostDense<V> got = st.fetch<V>(out);
      expect_close(
          got, dense_want, bound, [&](int64_t i) { return deg[static_cast<size_t>(sel64[static_cast<size_t>(i)])]; },
          t.variant + " out");
      expect_padding_kept(got, t.variant + " out");
    });
  }
}

class SliceRowsConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(SliceRowsConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("csr_slice_rows/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_slice<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SliceRowsConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::no_rows},
                             {Shape::dense_row},
                             {Shape::mega_row, true, true},
                             {Shape::power_law, true, true},
                             {Shape::single_row},
                             {Shape::random, false, true, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
