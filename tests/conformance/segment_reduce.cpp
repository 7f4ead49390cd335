// SPDX-License-Identifier: Apache-2.0
// segment_reduce (sorted index) and scatter_reduce (the same messages in shuffled order) on every
// plugin and variant against the reference in double: every reduce, empty segments (leading,
// trailing, most of them), E = 0, one segment holding everything, F not a multiple of 4, ld > F.
#include "common/conformance.hpp"

namespace sparseport::testing {
namespace {

enum class Segments {
  random,        // 1500 messages over 300 segments, some empty
  none,          // E = 0: every segment empty
  one_segment,   // 3000 messages, all in segment 5 of 40
  singletons,    // one message per segment
  mostly_empty,  // 300 messages over 2000 segments, the first and the last empty
  edges,         // everything in the first and the last segment
  skewed,        // heavy-tailed segment sizes
};
const char* name(Segments s) {
  switch (s) {
    case Segments::random:
      return "random";
    case Segments::none:
      return "none";
    case Segments::one_segment:
      return "one_segment";
    case Segments::singletons:
      return "singletons";
    case Segments::mostly_empty:
      return "mostly_empty";
    case Segments::edges:
      return "edges";
    case Segments::skewed:
      return "skewed";
  }
  return "?";
}

struct SegmentCase {
  Segments segments;
  Types types;
};
std::string name(const SegmentCase& c) { return std::string(name(c.segments)) + "_" + name(c.types); }

// A sorted index and the number of segments.
std::vector<int64_t> sorted_index(Segments s, int64_t& n, std::mt19937_64& rng) {
  std::vector<int64_t> idx;
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  switch (s) {
    case Segments::random:
      n = 300;
      for (int e = 0; e < 1500; ++e) idx.push_back(uniform(0, n - 1));
      break;
    case Segments::none:
      n = 20;
      break;
    case Segments::one_segment:
      n = 40;
      idx.assign(3000, 5);
      break;
    case Segments::singletons:
      n = 200;
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
      break;
    case Segments::mostly_empty:
      n = 2000;
      for (int e = 0; e < 300; ++e) idx.push_back(uniform(1, n - 2));
      break;
    case Segments::edges:
      n = 50;
      for (int e = 0; e < 800; ++e) idx.push_back(uniform(0, 1) == 0 ? 0 : n - 1);
      break;
    case Segments::skewed:
      n = 250;
      for (int64_t i = 0; i < n; ++i) {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        const int64_t size = static_cast<int64_t>(1.0 / std::pow(1.0 - u * 0.998, 1.1)) - 1;
        idx.insert(idx.end(), static_cast<size_t>(size), i);
      }
      break;
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

template <class I, class V>
void check_index_reduce(Segments kind, uint64_t seed, bool shuffled) {
  const sparseport_op op = shuffled ? SPARSEPORT_OP_SCATTER_REDUCE : SPARSEPORT_OP_SEGMENT_REDUCE;
  auto run_op = [&](const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                    const ReduceOptions& opt) {
    if (shuffled)
      scatter_reduce(ctx, index, src, out, opt);
    else
      segment_reduce(ctx, index, src, out, opt);
  };
  std::mt19937_64 rng(seed);
  int64_t n = 0;
  std::vector<int64_t> idx64 = sorted_index(kind, n, rng);
  // The same messages in another order: scatter_reduce must not depend on it.
  if (shuffled) std::shuffle(idx64.begin(), idx64.end(), rng);
  const std::vector<I> index = convert<I>(idx64);
  const int64_t e_count = static_cast<int64_t>(index.size());
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t i : idx64) ++count[static_cast<size_t>(i)];
  const std::string oracle_v = oracle_variant(op);
  int run = 0;
  for (int64_t f : kWidths) {
    for (Reduce r : kReduces) {
      const int64_t ld_src = f + (run % 2 == 1 ? 3 : 0), ld_out = f + (run % 3 == 2 ? 1 : 0);
      ++run;
      SCOPED_TRACE("F " + std::to_string(f) + ", reduce " + name(r) + ", ld(src) " + std::to_string(ld_src) +
                   ", ld(out) " + std::to_string(ld_out));
      const HostDense<V> src = random_dense<V>(e_count, f, ld_src, rng);
      const HostDense<V> out0 = nan_dense<V>(n, f, ld_out);
      const IndexView index_h = make_index<I>(e_count, index.data());

      HostDense<double> want = to_double(out0), bound = to_double(out0);
      run_op(oracle(), index_h, to_double(src).view(), want.mut(), {r, oracle_v});
      const Reduce bound_r = (r == Reduce::max || r == Reduce::min) ? Reduce::max : r;
      run_op(oracle(), index_h, to_double(src, true).view(), bound.mut(), {bound_r, oracle_v});

      for_each_target(op, [&](const Target& t) {
        Stage st(*t.ctx);
        const DenseMutView out = st.dense_mut(out0);
        run_op(*t.ctx, st.index(index), st.dense(src), out, {r, t.variant});
        t.ctx->synchronize();
        const HostDense<V> got = st.fetch<V>(out);
        expect_close(
            got, want, bound, [&](int64_t i) { return count[static_cast<size_t>(i)] + 1; }, t.variant + " out");
        expect_padding_kept(got, t.variant + " out");
      });
    }
  }
}

std::vector<SegmentCase> segment_cases() {
  std::vector<SegmentCase> out;
  for (Segments s : {Segments::random, Segments::none, Segments::one_segment, Segments::singletons,
                     Segments::mostly_empty, Segments::edges, Segments::skewed})
    for (const Types& t : kAllTypes) out.push_back({s, t});
  return out;
}

class IndexReduceConformance : public ::testing::TestWithParam<SegmentCase> {};

TEST_P(IndexReduceConformance, SegmentReduceMatchesReference) {
  const SegmentCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("segment_reduce/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_index_reduce<I, V>(c.segments, seed, false); });
}

TEST_P(IndexReduceConformance, ScatterReduceMatchesReference) {
  const SegmentCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("scatter_reduce/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_index_reduce<I, V>(c.segments, seed, true); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, IndexReduceConformance, ::testing::ValuesIn(segment_cases()), CaseName{});

}  // namespace
}  // namespace sparseport::testing
