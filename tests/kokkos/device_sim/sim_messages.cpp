// SPDX-License-Identifier: Apache-2.0
// The device paths of the message reductions (kernels/kokkos/common.hpp's reduce_sorted and
// reduce_atomic, behind segment_reduce.cpp and gather_scatter.cpp), as generated for a host space by
// generate.cmake (README.md in this folder), against the reference kernels: segment_reduce
// (team_segments: sorted index; atomic: any order) and gather_scatter (team_segments, atomic) over
// every reduce, F = 1-64, padded lds, weights or none, hub segments of 3000 and 5000 messages, empty
// output rows (leading, trailing, all), NaN messages, and team_segments's chunks at the kernel's
// length and at 1 and 7 messages (every run crossing chunks), each call twice for the same bits.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kokkos/kernels.hpp"
#include "kernels/reference/kernels.hpp"

using namespace sparseport;
static int failures = 0, checks = 0;

// Output rows 0..n-1. Shape 0: row 3 a hub of 3000 messages, every 5th row empty, the rest 0-6
// messages. Shape 1: rows 0-9 and the last 20 empty, row 50 a hub of 5000, the rest 0-40. Shape 2:
// no messages at all.
static std::vector<int64_t> segment_lengths(int64_t n, int shape, std::mt19937_64& rng) {
  std::vector<int64_t> len(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    int64_t& l = len[static_cast<size_t>(r)];
    if (shape == 0) l = r % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 7);
    if (shape == 1) l = r < 10 || r >= n - 20 ? 0 : static_cast<int64_t>(rng() % 41);
  }
  if (shape == 0 && n > 3) len[3] = 3000;
  if (shape == 1 && n > 50) len[50] = 5000;
  return len;
}

// reduce_chunks's chunk length (kernels/kokkos/common.hpp, message_chunk): 0 takes the kernel's rule;
// 1 and 7 put chunk boundaries everywhere, so that runs cross many chunks (the hubs hundreds).
namespace sparseport::kokkos {
extern int64_t sim_message_chunk;
}
static const int64_t kChunks[] = {0, 1, 7};

// got against want (n x f within ld): NaN where want is NaN, equal infinities, else within a bound
// relative to the row's sum of |message| (scale, n x f).
template <class V>
int compare(const std::vector<V>& got, const std::vector<V>& want, const std::vector<double>& scale, int64_t n,
            int64_t f, int64_t ld, const std::string& what) {
  const double tol = sizeof(V) == 4 ? 4e-6 : 1e-14;
  int bad = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < ld; ++j) {
      const size_t x = static_cast<size_t>(r * ld + j);
      const double g = got[x], w = want[x];
      bool ok;
      if (j >= f) ok = std::memcmp(&got[x], &want[x], sizeof(V)) == 0;  // padding kept
      else if (std::isnan(w)) ok = std::isnan(g);
      else if (std::isinf(w)) ok = g == w;
      else ok = std::isfinite(g) && std::fabs(g - w) <= tol * (1.0 + scale[static_cast<size_t>(r * f + j)]);
      if (!ok && bad++ < 4) std::printf("  MISMATCH %s row %lld col %lld: got %.9g want %.9g\n", what.c_str(), (long long)r, (long long)j, g, w);
    }
  ++checks;
  if (bad) ++failures, std::printf("FAIL %s: %d bad\n", what.c_str(), bad);
  return bad;
}

// The variant is flagged deterministic: a second call gives the same bits.
template <class V>
void same_bits(const std::vector<V>& a, const std::vector<V>& b, const std::string& what) {
  ++checks;
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(V)) != 0) ++failures, std::printf("FAIL %s: bits differ between two calls\n", what.c_str());
}

// A team_segments variant (run(out)) at each chunk length of kChunks against want, each call twice
// for the same bits.
template <class V, class Run>
void at_each_chunk(Run run, const std::vector<V>& want, const std::vector<double>& scale, int64_t n, int64_t f,
                   int64_t ld, const std::string& what) {
  for (const int64_t chunk : kChunks) {
    sparseport::kokkos::sim_message_chunk = chunk;
    std::vector<V> got(want.size(), V(-9)), again = got;
    run(got.data());
    run(again.data());
    const std::string w = what + " chunk=" + std::to_string(chunk);
    compare(got, want, scale, n, f, ld, w);
    same_bits(got, again, w);
  }
  sparseport::kokkos::sim_message_chunk = 0;
}

template <class I, class V>
void suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
  const int32_t vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  const std::string tn = std::string(sizeof(I) == 8 ? "<i64," : "<i32,") + (sizeof(V) == 8 ? "f64>" : "f32>");
  const V nan = std::numeric_limits<V>::quiet_NaN();
  const int64_t n = 200, src_rows = 150;
  for (int shape : {0, 1, 2})
  for (int64_t f : {1, 3, 8, 32, 33, 64}) {
    const std::vector<int64_t> len = segment_lengths(n, shape, rng);
    std::vector<I> dst;
    for (int64_t r = 0; r < n; ++r) dst.insert(dst.end(), static_cast<size_t>(len[static_cast<size_t>(r)]), static_cast<I>(r));
    const int64_t e = static_cast<int64_t>(dst.size());
    std::vector<I> pick(static_cast<size_t>(e));
    for (auto& p : pick) p = static_cast<I>(rng() % src_rows);
    std::vector<V> w(static_cast<size_t>(e));
    for (auto& x : w) x = static_cast<V>(u(rng));
    for (int pad : {0, 3}) {
      const int64_t ld = f + pad, ldo = f + (pad ? 1 : 0);
      // segment_reduce's messages (E x F) and gather_scatter's source rows (src_rows x F), with NaN
      // in message 7 and source row 11.
      std::vector<V> msgs(static_cast<size_t>(e * ld), V(55)), x(static_cast<size_t>(src_rows * ld), V(55));
      for (int64_t k = 0; k < e; ++k)
        for (int64_t j = 0; j < f; ++j) msgs[static_cast<size_t>(k * ld + j)] = static_cast<V>(u(rng));
      for (int64_t k = 0; k < src_rows; ++k)
        for (int64_t j = 0; j < f; ++j) x[static_cast<size_t>(k * ld + j)] = static_cast<V>(u(rng));
      if (e > 7) msgs[static_cast<size_t>(7 * ld)] = nan;
      x[static_cast<size_t>(11 * ld + f - 1)] = nan;
      for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MEAN, SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN}) {
        const std::string base = tn + " shape=" + std::to_string(shape) + " F=" + std::to_string(f) + " pad=" + std::to_string(pad) + " reduce=" + std::to_string(reduce);
        // segment_reduce, sorted (team_segments) and shuffled (atomic: any order; same rows).
        for (bool shuffled : {false, true}) {
          std::vector<I> idx = dst;
          std::vector<V> m = msgs;
          if (shuffled) {
            std::vector<int64_t> order(static_cast<size_t>(e));
            for (int64_t k = 0; k < e; ++k) order[static_cast<size_t>(k)] = k;
            std::shuffle(order.begin(), order.end(), rng);
            for (int64_t k = 0; k < e; ++k) {
              idx[static_cast<size_t>(k)] = dst[static_cast<size_t>(order[static_cast<size_t>(k)])];
              for (int64_t j = 0; j < ld; ++j)
                m[static_cast<size_t>(k * ld + j)] = msgs[static_cast<size_t>(order[static_cast<size_t>(k)] * ld + j)];
            }
          }
          std::vector<double> scale(static_cast<size_t>(n * f), 0.0);
          for (int64_t k = 0; k < e; ++k)
            for (int64_t j = 0; j < f; ++j)
              scale[static_cast<size_t>(idx[static_cast<size_t>(k)] * f + j)] += std::fabs(double(m[static_cast<size_t>(k * ld + j)]));
          auto args_of = [&](V* out) {
            sparseport_segment_args a{};
            a.index = {e, idx.data(), it};
            a.src = {e, f, ld, m.data(), vt};
            a.out = {n, f, ldo, out, vt};
            a.reduce = reduce;
            return a;
          };
          std::vector<V> want(static_cast<size_t>(n * ldo), V(-9));
          reference::segment_reduce(args_of(want.data()), true);
          if (shuffled) {
            std::vector<V> got = want;
            std::fill(got.begin(), got.end(), V(-9));
            kokkos::segment_reduce_atomic(args_of(got.data()));
            compare(got, want, scale, n, f, ldo, "segment_reduce.atomic" + base);
            continue;
          }
          at_each_chunk([&](V* out) { kokkos::segment_reduce_team_segments(args_of(out)); }, want, scale, n, f, ldo,
                        "segment_reduce.team_segments" + base);
        }
        // gather_scatter, weighted and not, by both variants (dst sorted, as the op requires).
        for (bool weighted : {true, false}) {
          std::vector<double> scale(static_cast<size_t>(n * f), 0.0);
          for (int64_t k = 0; k < e; ++k)
            for (int64_t j = 0; j < f; ++j)
              scale[static_cast<size_t>(dst[static_cast<size_t>(k)] * f + j)] +=
                  std::fabs((weighted ? double(w[static_cast<size_t>(k)]) : 1.0) *
                            double(x[static_cast<size_t>(pick[static_cast<size_t>(k)] * ld + j)]));
          auto args_of = [&](V* out) {
            sparseport_gather_scatter_args a{};
            a.edges = {n, src_rows, e, dst.data(), pick.data(), weighted ? w.data() : nullptr, it, vt};
            a.x = {src_rows, f, ld, x.data(), vt};
            a.out = {n, f, ldo, out, vt};
            a.reduce = reduce;
            return a;
          };
          std::vector<V> want(static_cast<size_t>(n * ldo), V(-9)), got2 = want;
          reference::gather_scatter(args_of(want.data()), true);
          kokkos::gather_scatter_atomic(args_of(got2.data()));
          const std::string what = base + (weighted ? " weighted" : "");
          compare(got2, want, scale, n, f, ldo, "gather_scatter.atomic" + what);
          at_each_chunk([&](V* out) { kokkos::gather_scatter_team_segments(args_of(out)); }, want, scale, n, f, ldo,
                        "gather_scatter.team_segments" + what);
        }
      }
    }
  }
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::printf("space %s concurrency %d, lanes %d\n", Kokkos::DefaultExecutionSpace::name(),
                Kokkos::DefaultExecutionSpace().concurrency(), SPARSEPORT_SIM_VLMAX);
    suite<int32_t, float>(21);
    suite<int32_t, double>(22);
    suite<int64_t, float>(23);
    suite<int64_t, double>(24);
  }
  Kokkos::finalize();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
