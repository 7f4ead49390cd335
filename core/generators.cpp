// SPDX-License-Identifier: Apache-2.0
// Graph generators (graph.hpp): generate() parses a spec, hands it to its family's make_<family>
// (one file per family, see generators_internal.hpp) and adds the symmetric values; load_graph()
// takes a spec or a Matrix Market path and applies the read options to a generated matrix.
#include <cerrno>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "core/generators_internal.hpp"

namespace sparseport {

using namespace detail::gen;

namespace {

// v(i, j) = v(j, i), uniform in [0.5, 1.5): a symmetric pattern gives a symmetric matrix, values
// stay away from 0 (no cancellation in sums), and each is exact in V (see unit_exact).
template <class I, class V>
std::vector<V> make_values(const Pattern<I>& g, uint64_t seed) {
  const uint64_t key = detail::derive_key(seed, kTagValues);
  std::vector<V> v(g.colind.size());
  for (int64_t i = 0; i < g.n; ++i) {
    const uint64_t row_key = detail::derive_key(key, static_cast<uint64_t>(i));
    for (I k = g.rowptr[static_cast<size_t>(i)]; k < g.rowptr[static_cast<size_t>(i) + 1]; ++k) {
      const auto j = static_cast<uint64_t>(g.colind[static_cast<size_t>(k)]);
      const uint64_t r = j >= static_cast<uint64_t>(i) ? detail::word_at(row_key, j)
                                                       : detail::word_at(detail::derive_key(key, j), static_cast<uint64_t>(i));
      v[static_cast<size_t>(k)] = V(0.5) + detail::unit_exact<V>(r);
    }
  }
  return v;
}

// load_graph's options on a generated (sorted, merged) matrix: the union with A^T and/or no
// diagonal. Generated values are symmetric, so a position present in both keeps its one value.
template <class I, class V>
HostCsr<I, V> restructure(const HostCsr<I, V>& a, bool symmetrize, bool drop_self_loops, const std::string& spec) {
  if (symmetrize && a.rows != a.cols)
    throw InvalidArgument("sparseport::load_graph: cannot symmetrize '" + spec + "': it is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + ", and the union with its transpose needs a square matrix.");
  const int64_t n = a.rows;
  const bool vals = !a.is_pattern();
  std::vector<I> tptr(static_cast<size_t>(n) + 1, 0), trow;
  std::vector<V> tval;
  if (symmetrize) {
    for (const I j : a.colind) ++tptr[static_cast<size_t>(j) + 1];
    prefix_sum(tptr);
    trow.resize(a.colind.size());
    if (vals) tval.resize(a.colind.size());
    std::vector<I> cur(tptr.begin(), tptr.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k) {
        const I p = cur[static_cast<size_t>(a.colind[static_cast<size_t>(k)])]++;
        trow[static_cast<size_t>(p)] = static_cast<I>(i);
        if (vals) tval[static_cast<size_t>(p)] = a.values[static_cast<size_t>(k)];
      }
  }
  // Two passes over the merged rows: count (to check the index type), then write.
  HostCsr<I, V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  int64_t total = 0;
  for (int pass = 0; pass < 2; ++pass) {
    int64_t w = 0;
    for (int64_t i = 0; i < n; ++i) {
      I x = a.rowptr[static_cast<size_t>(i)], xe = a.rowptr[static_cast<size_t>(i) + 1];
      I y = tptr[static_cast<size_t>(i)], ye = tptr[static_cast<size_t>(i) + 1];
      while (x < xe || y < ye) {
        const bool take_a = y >= ye || (x < xe && a.colind[static_cast<size_t>(x)] <= trow[static_cast<size_t>(y)]);
        const I col = take_a ? a.colind[static_cast<size_t>(x)] : trow[static_cast<size_t>(y)];
        V val = V(1);
        if (vals) val = take_a ? a.values[static_cast<size_t>(x)] : tval[static_cast<size_t>(y)];
        if (take_a) {
          if (y < ye && trow[static_cast<size_t>(y)] == col) ++y;
          ++x;
        } else {
          ++y;
        }
        if (drop_self_loops && col == static_cast<I>(i)) continue;
        if (pass == 1) {
          out.colind[static_cast<size_t>(w)] = col;
          if (vals) out.values[static_cast<size_t>(w)] = val;
        }
        ++w;
      }
      if (pass == 1) out.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(w);
    }
    if (pass == 0) {
      total = w;
      if (total > kIndexMax<I>)
        throw InvalidArgument("sparseport::load_graph: symmetrizing '" + spec + "' gives " + std::to_string(total) +
                              " entries, more than " + kIndexName<I> + " indices can address (at most " +
                              std::to_string(kIndexMax<I>) + "); use int64 indices.");
      out.colind.resize(static_cast<size_t>(total));
      if (vals) out.values.resize(static_cast<size_t>(total));
    }
  }
  return out;
}

}  // namespace

namespace {

template <class I, class V>
HostCsr<I, V> generate_unguarded(std::string_view spec_text, const GenOptions& opt) {
  const Spec s(spec_text);
  const uint64_t seed = s.seed().value_or(opt.seed);
  Pattern<I> g;
  const std::string_view name = s.name();
  if (name == "er") {
    g = make_er<I>(s, detail::derive_key(seed, kTagEr));
  } else if (name == "rmat" || name == "rmatp") {
    g = make_rmat<I>(s, detail::derive_key(seed, kTagRmat));
  } else if (name == "powerlaw") {
    g = make_rmat<I>(Spec("rmat:16:8"), detail::derive_key(seed, kTagRmat));
  } else if (name == "hubs") {
    g = make_hubs<I>(s, detail::derive_key(seed, kTagHubs));
  } else if (name == "band") {
    g = make_band<I>(s);
  } else if (name == "megarow") {
    g = make_megarow<I>(s, detail::derive_key(seed, kTagMegarow));
  } else if (name == "chunglu") {
    g = make_chunglu<I>(s, detail::derive_key(seed, kTagChungLu));
  } else if (name == "sbm") {
    g = make_sbm<I>(s, detail::derive_key(seed, kTagSbm));
  } else if (name == "mesh2d" || name == "mesh3d" || name == "mesh3d27") {
    g = make_mesh<I>(s, detail::derive_key(seed, kTagMesh));
  } else if (name == "road") {
    g = make_road<I>(s, detail::derive_key(seed, kTagRoad));
  } else {
    g = make_bipartite<I>(s, detail::derive_key(seed, kTagBipartite));
  }
  HostCsr<I, V> a;
  a.rows = g.n;
  a.cols = g.cols < 0 ? g.n : g.cols;
  if (!opt.pattern) a.values = make_values<I, V>(g, seed);
  a.rowptr = std::move(g.rowptr);
  a.colind = std::move(g.colind);
  return a;
}

}  // namespace

// The specs' own checks refuse what the index type cannot address; what fits it can still be more
// than the host can hold (int64 indices, or N rows of int32 on a small machine).
template <class I, class V>
HostCsr<I, V> generate(std::string_view spec_text, const GenOptions& opt) {
  try {
    return generate_unguarded<I, V>(spec_text, opt);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("sparseport::generate: '" + std::string(spec_text) +
                          "' needs more host memory than could be allocated (std::bad_alloc); generate a smaller graph",
                      ENOMEM, "std::bad_alloc");
  }
}

template <class I, class V>
HostCsr<I, V> load_graph(const std::string& spec_or_path, const MmReadOptions& opt) {
  const std::string spec = spec_or_path.empty() ? std::string("powerlaw") : spec_or_path;
  if (!is_generator_spec(spec)) return read_matrix_market<I, V>(spec, opt);
  GenOptions gen;
  gen.pattern = !opt.keep_values;
  HostCsr<I, V> a = generate<I, V>(spec, gen);
  if (opt.symmetrize || opt.drop_self_loops) a = restructure(a, opt.symmetrize, opt.drop_self_loops, spec);
  if (opt.progress) opt.progress(1.0);
  return a;
}

#define SPARSEPORT_INSTANTIATE(I, V)                                                    \
  template HostCsr<I, V> generate<I, V>(std::string_view, const GenOptions&);           \
  template HostCsr<I, V> load_graph<I, V>(const std::string&, const MmReadOptions&);
SPARSEPORT_INSTANTIATE(int32_t, float)
SPARSEPORT_INSTANTIATE(int32_t, double)
SPARSEPORT_INSTANTIATE(int64_t, float)
SPARSEPORT_INSTANTIATE(int64_t, double)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport
