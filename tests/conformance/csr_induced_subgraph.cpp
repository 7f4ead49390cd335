// SPDX-License-Identifier: Apache-2.0
// csr_induced_subgraph on every plugin and variant against the reference, compared exactly:
// vertex sets sorted, shuffled, complete (a relabelling), empty, one vertex, around the mega-row.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

std::vector<std::pair<std::string, std::vector<int64_t>>> vertex_sets(const std::vector<int64_t>& deg,
                                                                      std::mt19937_64& rng) {
  const int64_t n = static_cast<int64_t>(deg.size());
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({"empty", {}});
  if (n == 0) return out;
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  out.push_back({"all_permuted", all});
  std::vector<int64_t> third(all.begin(), all.begin() + std::max<int64_t>(1, n / 3));
  out.push_back({"third_shuffled", third});
  std::sort(third.begin(), third.end());
  out.push_back({"third_sorted", third});
  const int64_t heavy = std::max_element(deg.begin(), deg.end()) - deg.begin();
  out.push_back({"heaviest_alone", {heavy}});
  // The heaviest vertex plus a tenth of the others, so its long row is cut down.
  std::vector<int64_t> around{heavy};
  for (int64_t v : all)
    if (v != heavy && static_cast<int64_t>(around.size()) <= n / 10) around.push_back(v);
  out.push_back({"heaviest_and_a_tenth", around});
  return out;
}

template <class I, class V>
void check_induced(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCsr<I, double> a64 = to_double(a);
  for (const auto& [set_name, set64] : vertex_sets(row_degrees(a.view()), rng)) {
    SCOPED_TRACE("vertex set " + set_name + " (" + std::to_string(set64.size()) + " vertices)");
    const std::vector<I> set = convert<I>(set64);
    const HostCsr<I, double> want = oracle().to_host<I, double>(
        csr_induced_subgraph(oracle(), a64.view(), make_index<I>(static_cast<int64_t>(set.size()), set.data()),
                             {oracle_variant(SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH)}));
    for_each_target(SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, [&](const Target& t) {
      Stage st(*t.ctx);
      const CsrMatrix m = csr_induced_subgraph(*t.ctx, st.csr(a), st.index(set), {t.variant});
      t.ctx->synchronize();
      expect_same_csr(t.ctx->to_host<I, V>(m), want, t.variant);
    });
  }
}

class InducedSubgraphConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(InducedSubgraphConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("csr_induced_subgraph/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_induced<I, V>(c.matrix, seed); });
}

// Square matrices (rows and columns are the same vertices); columns sorted and unique.
INSTANTIATE_TEST_SUITE_P(Inputs, InducedSubgraphConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random, false, false, false, true},
                             {Shape::empty_rows, false, false, false, true},
                             {Shape::no_nnz, false, false, false, true},
                             {Shape::no_rows, false, false, false, true},
                             {Shape::dense_row, false, false, false, true},
                             {Shape::mega_row, false, false, false, true},
                             {Shape::power_law, false, false, true, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
