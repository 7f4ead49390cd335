// SPDX-License-Identifier: Apache-2.0
// gather_scatter on every plugin and variant against the reference in double: the edges of the
// test matrices in COO form (dst sorted; src in any order, repeated where the matrix repeats
// columns), weighted and unweighted, every reduce, F not a multiple of 4, ld > F.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

template <class I, class V>
void check_gather_scatter(const MatrixSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_matrix<I, V>(spec, rng);
  const HostCoo<I, V> edges = to_coo(a);
  const HostCoo<I, double> edges64 = to_coo(to_double(a)), edges_abs = to_coo(to_double(a, true));
  const std::vector<int64_t> deg = row_degrees(a.view());
  const std::string oracle_v = oracle_variant(SPARSEPORT_OP_GATHER_SCATTER);
  int run = 0;
  for (int64_t f : kWidths) {
    for (Reduce r : kReduces) {
      const int64_t ld_x = f + (run % 2 == 0 ? 2 : 0), ld_out = f + (run % 3 == 1 ? 3 : 0);
      ++run;
      SCOPED_TRACE("F " + std::to_string(f) + ", reduce " + name(r) + ", ld(x) " + std::to_string(ld_x) + ", ld(out) " +
                   std::to_string(ld_out));
      const HostDense<V> x = random_dense<V>(a.cols, f, ld_x, rng);
      const HostDense<V> out0 = nan_dense<V>(a.rows, f, ld_out);

      HostDense<double> want = to_double(out0), bound = to_double(out0);
      gather_scatter(oracle(), edges64.view(), to_double(x).view(), want.mut(), {r, oracle_v});
      const Reduce bound_r = (r == Reduce::max || r == Reduce::min) ? Reduce::max : r;
      gather_scatter(oracle(), edges_abs.view(), to_double(x, true).view(), bound.mut(), {bound_r, oracle_v});

      for_each_target(SPARSEPORT_OP_GATHER_SCATTER, [&](const Target& t) {
        Stage st(*t.ctx);
        const DenseMutView out = st.dense_mut(out0);
        gather_scatter(*t.ctx, st.coo(edges), st.dense(x), out, {r, t.variant});
        t.ctx->synchronize();
        const HostDense<V> got = st.fetch<V>(out);
        expect_close(
            got, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + 1; }, t.variant + " out");
        expect_padding_kept(got, t.variant + " out");
      });
    }
  }
}

class GatherScatterConformance : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(GatherScatterConformance, MatchesReference) {
  const MatrixCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("gather_scatter/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_gather_scatter<I, V>(c.matrix, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, GatherScatterConformance,
                         ::testing::ValuesIn(with_all_types({
                             {Shape::random},
                             {Shape::empty_rows},
                             {Shape::no_nnz},
                             {Shape::dense_row},
                             {Shape::mega_row},
                             {Shape::power_law},
                             {Shape::single_row},
                             {Shape::random, true, true},
                             {Shape::power_law, false, true, true},
                         })),
                         CaseName{});

}  // namespace
}  // namespace sparseport::testing
