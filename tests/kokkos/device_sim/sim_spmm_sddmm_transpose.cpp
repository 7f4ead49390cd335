// SPDX-License-Identifier: Apache-2.0
// The device paths of kernels/kokkos/{spmm, sddmm, csr_transpose}.cpp, as generated for a host space
// by generate.cmake (README.md in this folder), against the reference kernels: spmm.hub_split (lane
// groups and without) and spmm.team_rows over every reduce, F = 1-128, padded lds, alpha/beta, NaN
// in B and C, repeated calls and stale plans, team_rows's short rows (one masked batch) at F =
// 1-200; sddmm over F = 0-128 and padded lds; csr_transpose over hub columns across ranking
// blocks, repeated columns, empty and rectangular matrices.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include "kernels/kokkos/kernels.hpp"
#include "kernels/reference/kernels.hpp"
#include "kernels/row_order.hpp"

using namespace sparseport;
static int failures = 0, checks = 0;
static bool verbose = std::getenv("VERBOSE") != nullptr;

static void tally(int bad, const std::string& what) {
  ++checks;
  if (bad) ++failures;
  if (bad || verbose) std::printf("%s %s: %d bad\n", bad ? "FAIL" : "ok  ", what.c_str(), bad);
}

template <class I>
struct Mat {
  int64_t m = 0, n = 0;
  std::vector<I> rp, ci;
};

template <class I>
Mat<I> make(const std::vector<int64_t>& deg, int64_t n, std::mt19937_64& rng) {
  Mat<I> a;
  a.m = static_cast<int64_t>(deg.size()), a.n = n;
  a.rp.push_back(0);
  std::uniform_int_distribution<int64_t> col(0, n - 1);
  for (int64_t d : deg) {
    for (int64_t e = 0; e < d; ++e) a.ci.push_back(static_cast<I>(col(rng)));
    a.rp.push_back(static_cast<I>(a.ci.size()));
  }
  return a;
}

static std::vector<int64_t> powerlaw(int64_t m, std::mt19937_64& rng) {
  std::vector<int64_t> deg;
  for (int64_t i = 0; i < m; ++i) deg.push_back(i % 7 == 0 ? 0 : i % 11 == 0 ? 1 : 1 + static_cast<int64_t>(rng() % 9));
  if (m > 5) deg[5] = 100;
  if (m > 17) deg[17] = 9;   // just above T = 8
  if (m > 18) deg[18] = 16;  // exactly 2 T
  if (m > 40) deg[40] = 333;
  deg[static_cast<size_t>(m - 1)] = 57;
  deg[0] = 25;
  return deg;
}

// ------------------------------------------------------------------------------------- spmm
template <class I, class V>
int spmm_compare(const Mat<I>& a, const std::vector<V>& av, bool pattern, const std::vector<V>& b, int64_t ldb, int64_t f,
                 int64_t ldc, const std::vector<V>& c0, int32_t reduce, double alpha, double beta, const std::string& what,
                 int calls) {
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
  const int32_t vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  auto args_of = [&](V* c) {
    sparseport_spmm_args x{};
    x.a = {a.m, a.n, static_cast<int64_t>(a.ci.size()), a.rp.data(), a.ci.data(), pattern ? nullptr : av.data(), it, vt};
    x.b = {a.n, f, ldb, b.data(), vt};
    x.c = {a.m, f, ldc, c, vt};
    x.reduce = reduce, x.alpha = alpha, x.beta = beta;
    return x;
  };
  std::vector<V> want = c0;
  reference::spmm(args_of(want.data()), false);
  // Scale of each sum: sum |a b| over the row.
  std::vector<double> scale(static_cast<size_t>(a.m * f), 0.0);
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t e = a.rp[i]; e < a.rp[i + 1]; ++e)
      for (int64_t j = 0; j < f; ++j)
        scale[static_cast<size_t>(i * f + j)] +=
            std::fabs((pattern ? 1.0 : double(av[e])) * double(b[static_cast<size_t>(a.ci[e] * ldb + j)]));
  int total = 0;
  const std::pair<const char*, void (*)(const sparseport_spmm_args&)> kernels[] = {
      {"hub_split", &kokkos::spmm_hub_split}, {"team_rows", &kokkos::spmm_team_rows}};
  for (int call = 0; call < 2 * calls; ++call) {
    const auto& kernel = kernels[call % 2];
    std::vector<V> got = c0;
    kernel.second(args_of(got.data()));
    const double tol = sizeof(V) == 4 ? 3e-6 : 1e-14;
    int bad = 0;
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t x = static_cast<size_t>(i * ldc + j);
        const double g = got[x], w = want[x];
        bool ok;
        if (j >= f) ok = std::memcmp(&got[x], &c0[x], sizeof(V)) == 0;
        else if (std::isnan(w)) ok = std::isnan(g);
        else if (std::isinf(w)) ok = g == w;
        else {
          const double s = scale[static_cast<size_t>(i * f + j)] * std::fabs(alpha) + (beta != 0 ? std::fabs(beta * double(c0[x])) : 0.0);
          ok = std::isfinite(g) && std::fabs(g - w) <= tol * 4 * (1.0 + s) * (a.rp[i + 1] - a.rp[i] + 2);
        }
        if (!ok && bad++ < 4)
          std::printf("  MISMATCH %s %s call %d row %lld (deg %lld) col %lld: got %.9g want %.9g\n", what.c_str(), kernel.first, call / 2,
                      (long long)i, (long long)(a.rp[i + 1] - a.rp[i]), (long long)j, g, w);
      }
    tally(bad, what + " " + kernel.first + " call " + std::to_string(call / 2));
    total += bad;
  }
  return total;
}

template <class I, class V>
void spmm_suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const char* tn = sizeof(I) == 8 ? (sizeof(V) == 8 ? "<i64,f64>" : "<i64,f32>") : (sizeof(V) == 8 ? "<i32,f64>" : "<i32,f32>");
  const V nan = std::numeric_limits<V>::quiet_NaN();
  for (int64_t f : {1, 4, 8, 12, 32, 33, 64, 128}) {
    for (int variant = 0; variant < 2; ++variant) {
      Mat<I> a = make<I>(powerlaw(variant ? 97 : 300, rng), 150, rng);
      const int64_t nnz = static_cast<int64_t>(a.ci.size());
      std::vector<V> av(static_cast<size_t>(nnz));
      for (auto& x : av) x = static_cast<V>(u(rng));
      for (int64_t pad : {0, 3, 4}) {
        const int64_t ldb = f + pad, ldc = f + (pad == 3 ? 1 : pad);
        std::vector<V> b(static_cast<size_t>(a.n * ldb), V(77)), c0(static_cast<size_t>(a.m * ldc));
        for (int64_t r = 0; r < a.n; ++r)
          for (int64_t j = 0; j < f; ++j) b[static_cast<size_t>(r * ldb + j)] = static_cast<V>(u(rng));
        for (auto& x : c0) x = static_cast<V>(u(rng));
        for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MEAN, SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN}) {
          const std::string base = std::string("spmm") + tn + " F=" + std::to_string(f) + " pad=" + std::to_string(pad) +
                                   " m=" + std::to_string(a.m) + " reduce=" + std::to_string(reduce);
          spmm_compare(a, av, false, b, ldb, f, ldc, c0, reduce, 1.0, 0.0, base, 3);
          if (pad != 3) {
            spmm_compare(a, av, false, b, ldb, f, ldc, c0, reduce, 0.5, -1.25, base + " alpha/beta", 2);
            spmm_compare(a, av, true, b, ldb, f, ldc, c0, reduce, 1.0, 0.0, base + " pattern", 1);
          }
        }
        // NaN in B (rows 3 and 7) and in C (beta = 0 must not read it).
        if (pad == 4) {
          std::vector<V> bn = b, cn = c0;
          for (int64_t j = 0; j < f; j += 2) bn[static_cast<size_t>(3 * ldb + j)] = nan;
          bn[static_cast<size_t>(7 * ldb + f - 1)] = nan;
          for (int64_t j = 0; j < f; ++j) cn[static_cast<size_t>(2 * ldc + j)] = nan;
          for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN})
            spmm_compare(a, av, false, bn, ldb, f, ldc, cn, reduce, 1.0, 0.0,
                         std::string("spmm") + tn + " NaN F=" + std::to_string(f) + " reduce=" + std::to_string(reduce), 3);
        }
      }
    }
  }
  // Stale plan: same rowptr address, shape and nnz; rows' lengths changed in place.
  for (int64_t f : {8, 33, 128}) {
    std::vector<int64_t> deg(200, 5);
    deg[3] = 300;
    deg[150] = 150;
    deg[60] = 9;
    Mat<I> a = make<I>(deg, 120, rng);
    const int64_t nnz = static_cast<int64_t>(a.ci.size());
    std::vector<V> av(static_cast<size_t>(nnz));
    for (auto& x : av) x = static_cast<V>(u(rng));
    const int64_t ldb = f, ldc = f;
    std::vector<V> b(static_cast<size_t>(a.n * ldb)), c0(static_cast<size_t>(a.m * ldc));
    for (auto& x : b) x = static_cast<V>(u(rng));
    for (auto& x : c0) x = static_cast<V>(u(rng));
    auto run = [&](const char* what) {
      for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MEAN, SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN})
        spmm_compare(a, av, false, b, ldb, f, ldc, c0, reduce, 1.0, 0.5,
                     std::string("spmm") + tn + " " + what + " F=" + std::to_string(f) + " reduce=" + std::to_string(reduce), 3);
    };
    run("stale-before");
    auto relayout = [&](std::vector<int64_t> d2) {
      int64_t total = 0;
      for (int64_t d : d2) total += d;
      d2[0] += nnz - total;
      for (size_t i = 0; i < d2.size(); ++i) a.rp[i + 1] = static_cast<I>(a.rp[i] + d2[i]);
    };
    std::vector<int64_t> d2(200, 5);
    d2[3] = 7;     // planned hub, now short
    d2[150] = 400; // planned hub, grown
    d2[100] = 40;  // new hub, not planned
    d2[60] = 3;    // planned hub of 2 chunks, now short
    relayout(d2);
    run("stale-after");
    std::vector<int64_t> d3(200, 5);
    d3[3] = 200;   // shrunk, still a hub
    d3[150] = 12;  // shrunk to fewer chunks
    d3[60] = 8;    // exactly T: not a hub
    relayout(d3);
    run("stale-shrunk");
  }
  // No hubs at all; one row; all rows empty.
  {
    Mat<I> a = make<I>(std::vector<int64_t>(40, 3), 30, rng);
    std::vector<V> av(a.ci.size(), V(1)), b(static_cast<size_t>(30 * 8), V(0.5)), c0(static_cast<size_t>(40 * 8), V(2));
    spmm_compare(a, av, false, b, 8, 8, 8, c0, SPARSEPORT_REDUCE_SUM, 1.0, 1.0, std::string("spmm") + tn + " no-hubs", 3);
    Mat<I> e = make<I>(std::vector<int64_t>(40, 0), 30, rng);
    std::vector<V> ev;
    spmm_compare(e, ev, false, b, 8, 8, 8, c0, SPARSEPORT_REDUCE_MAX, 1.0, 1.0, std::string("spmm") + tn + " all-empty", 2);
    Mat<I> one = make<I>(std::vector<int64_t>(1, 1000), 30, rng);
    std::vector<V> ov(1000);
    for (auto& x : ov) x = static_cast<V>(u(rng));
    std::vector<V> c1(8, V(2));
    for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MAX})
      spmm_compare(one, ov, false, b, 8, 8, 8, c1, reduce, 1.0, 0.0, std::string("spmm") + tn + " one-hub-row", 3);
  }
}

// team_rows's rows of at most U / 2 entries, one masked batch each (lane_fold_n: U = 8, or 4
// where NK x W = 8, so U / 2 = 4 or 2), beside rows of U / 2 + 1 and more (the first entry,
// batches of U, then one at a time) and empty rows. F = 1-32, 33-64, 96-128 and 200 give 1, 2, 4
// and 8 lane slots (8: U = 4), pad 0 the 16-byte loads where F allows them (F = 12 and 200 in
// float: 2 slots of 4 columns, U = 4), pad 3 the scalar loads.
template <class I, class V>
void spmm_short_rows(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const char* tn = sizeof(I) == 8 ? (sizeof(V) == 8 ? "<i64,f64>" : "<i64,f32>")
                                  : (sizeof(V) == 8 ? "<i32,f64>" : "<i32,f32>");
  std::vector<int64_t> deg;
  for (int r = 0; r < 3; ++r)
    for (int64_t d : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 40}) deg.push_back(d);
  std::shuffle(deg.begin() + 15, deg.end(), rng);
  const Mat<I> a = make<I>(deg, 64, rng);
  std::vector<V> av(a.ci.size());
  for (auto& x : av) x = static_cast<V>(u(rng));
  for (int64_t f : {1, 4, 12, 32, 33, 64, 96, 128, 200})
    for (int64_t pad : {0, 3}) {
      const int64_t ldb = f + pad, ldc = f + pad;
      std::vector<V> b(static_cast<size_t>(a.n * ldb), V(77)), c0(static_cast<size_t>(a.m * ldc));
      for (int64_t r = 0; r < a.n; ++r)
        for (int64_t j = 0; j < f; ++j)
          b[static_cast<size_t>(r * ldb + j)] = static_cast<V>(u(rng));
      for (auto& x : c0) x = static_cast<V>(u(rng));
      for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MEAN, SPARSEPORT_REDUCE_MAX,
                             SPARSEPORT_REDUCE_MIN}) {
        const std::string base = std::string("spmm") + tn + " short rows F=" +
                                 std::to_string(f) + " pad=" + std::to_string(pad) +
                                 " reduce=" + std::to_string(reduce);
        spmm_compare(a, av, false, b, ldb, f, ldc, c0, reduce, 1.0, 0.0, base, 1);
        spmm_compare(a, av, false, b, ldb, f, ldc, c0, reduce, 0.5, -1.25, base + " a/b", 1);
        spmm_compare(a, av, true, b, ldb, f, ldc, c0, reduce, 1.0, 0.0, base + " pattern", 1);
      }
    }
}

// ------------------------------------------------------------------------------------- sddmm
template <class I, class V>
void sddmm_check(const Mat<I>& a, bool pattern, int64_t f, int64_t ldx, int64_t ldy, int64_t ldo, std::mt19937_64& rng,
                 const std::string& what) {
  std::uniform_real_distribution<double> u(-1, 1);
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
  const int32_t vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  const int64_t nnz = static_cast<int64_t>(a.ci.size());
  std::vector<V> av(static_cast<size_t>(nnz)), x(static_cast<size_t>(a.m * ldx + 1), V(55)), y(static_cast<size_t>(a.n * ldy + 1), V(55));
  for (auto& v : av) v = static_cast<V>(u(rng));
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t k = 0; k < f; ++k) x[static_cast<size_t>(i * ldx + k)] = static_cast<V>(u(rng));
  for (int64_t i = 0; i < a.n; ++i)
    for (int64_t k = 0; k < f; ++k) y[static_cast<size_t>(i * ldy + k)] = static_cast<V>(u(rng));
  auto args_of = [&](V* out) {
    sparseport_sddmm_args s{};
    s.a = {a.m, a.n, nnz, a.rp.data(), a.ci.data(), pattern ? nullptr : av.data(), it, vt};
    s.x = {a.m, f, ldx, x.data(), vt};
    s.y = {a.n, f, ldy, y.data(), vt};
    s.out = {nnz, 1, ldo, out, vt};
    return s;
  };
  std::vector<V> want(static_cast<size_t>(nnz * ldo + 1), V(-9)), got = want;
  reference::sddmm(args_of(want.data()), false);
  kokkos::sddmm(args_of(got.data()));
  const double tol = sizeof(V) == 4 ? 2e-6 : 1e-14;
  int bad = 0;
  for (size_t z = 0; z < got.size(); ++z) {
    const double g = got[z], w = want[z];
    const bool ok = std::fabs(g - w) <= tol * (f + 1) * 4;
    if (!ok && bad++ < 4) std::printf("  MISMATCH %s at %zu: got %.9g want %.9g\n", what.c_str(), z, g, w);
  }
  tally(bad, what);
}

template <class I, class V>
void sddmm_suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const char* tn = sizeof(I) == 8 ? (sizeof(V) == 8 ? "<i64,f64>" : "<i64,f32>") : (sizeof(V) == 8 ? "<i32,f64>" : "<i32,f32>");
  std::vector<int64_t> huge(3000, 0);  // many empty rows, a row of 10^4, a few short
  huge[1234] = 10000;
  huge[0] = 3;
  huge[2999] = 5;
  for (int i = 100; i < 3000; i += 97) huge[static_cast<size_t>(i)] = i % 5;
  std::vector<int64_t> tail(50, 0);
  tail[49] = 70;  // empty rows, then one row at the end
  for (int64_t f : {0, 1, 4, 7, 16, 64, 100, 128}) {
    for (int shape = 0; shape < 4; ++shape) {
      Mat<I> a = shape == 0 ? make<I>(powerlaw(300, rng), 200, rng)
                 : shape == 1 ? make<I>(huge, 500, rng)
                 : shape == 2 ? make<I>(tail, 30, rng)
                              : make<I>(std::vector<int64_t>(9, 0), 30, rng);
      for (bool pattern : {false, true})
        for (int lds : {0, 1, 2}) {  // 2: lds > F, multiples of 4 (the 16-byte loads)
          const int64_t ldx = f + (lds == 1 ? 3 : lds == 2 ? 4 : 0), ldy = f + (lds == 1 ? 5 : lds == 2 ? 8 : 0), ldo = lds ? 2 : 1;
          sddmm_check<I, V>(a, pattern, f, ldx, ldy, ldo, rng,
                            std::string("sddmm") + tn + " F=" + std::to_string(f) + " shape=" + std::to_string(shape) +
                                (pattern ? " pattern" : "") + (lds == 1 ? " ld>F" : lds == 2 ? " ld>F4" : ""));
        }
    }
  }
}

// ------------------------------------------------------------------------------------- transpose
template <class I, class V>
void transpose_check(const Mat<I>& a, bool values, bool perm, const std::string& what) {
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
  const int32_t vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  const int64_t nnz = static_cast<int64_t>(a.ci.size());
  std::vector<V> av(static_cast<size_t>(nnz));
  for (int64_t e = 0; e < nnz; ++e) av[static_cast<size_t>(e)] = static_cast<V>(e * 0.5 + 1);
  struct Out {
    std::vector<I> rp, ci, perm;
    std::vector<V> v;
  };
  auto run = [&](bool ref) {
    Out o;
    o.rp.assign(static_cast<size_t>(a.n + 1), I(-3));
    o.ci.assign(static_cast<size_t>(nnz), I(-3));
    o.perm.assign(static_cast<size_t>(nnz), I(-3));
    o.v.assign(static_cast<size_t>(nnz), V(-3));
    sparseport_transpose_args t{};
    t.a = {a.m, a.n, nnz, a.rp.data(), a.ci.data(), values ? av.data() : nullptr, it, vt};
    t.out = {a.n, a.m, nnz, o.rp.data(), o.ci.data(), values ? o.v.data() : nullptr, it, vt};
    t.perm = perm ? o.perm.data() : nullptr;
    if (ref)
      reference::csr_transpose(t);
    else
      kokkos::csr_transpose(t);
    return o;
  };
  const Out want = run(true), got = run(false);
  int bad = 0;
  auto cmp = [&](const auto& g, const auto& w, const char* name) {
    for (size_t z = 0; z < g.size(); ++z)
      if (g[z] != w[z] && bad++ < 4)
        std::printf("  MISMATCH %s %s[%zu]: got %lld want %lld\n", what.c_str(), name, z, (long long)g[z], (long long)w[z]);
  };
  cmp(got.rp, want.rp, "rowptr");
  cmp(got.ci, want.ci, "colind");
  cmp(got.perm, want.perm, "perm");
  cmp(got.v, want.v, "values");
  tally(bad, what);
}

template <class I, class V>
void transpose_suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const char* tn = sizeof(I) == 8 ? (sizeof(V) == 8 ? "<i64,f64>" : "<i64,f32>") : (sizeof(V) == 8 ? "<i32,f64>" : "<i32,f32>");
  std::vector<Mat<I>> mats;
  mats.push_back(make<I>(powerlaw(300, rng), 200, rng));
  mats.push_back(make<I>(powerlaw(300, rng), 1000, rng));  // rectangular, many empty columns
  {
    // A hub column: column 7 in 10^4 entries (some rows hold it several times), others random.
    Mat<I> h = make<I>(powerlaw(2500, rng), 400, rng);
    int64_t put = 0;
    for (int64_t i = 0; i < h.m && put < 10000; ++i)
      for (int64_t e = h.rp[i]; e < h.rp[i + 1] && put < 10000; ++e)
        if (rng() % 4 != 0) h.ci[static_cast<size_t>(e)] = 7, ++put;
    // Column 9: 65 entries (just above kThreadSort), column 11: 64, column 13: 128, 15: 129
    int64_t c9 = 0, c11 = 0, c13 = 0, c15 = 0;
    for (auto& c : h.ci)
      if (c != 7) {
        if (c9 < 65) c = 9, ++c9;
        else if (c11 < 64) c = 11, ++c11;
        else if (c13 < 128) c = 13, ++c13;
        else if (c15 < 129) c = 15, ++c15;
        else if (c == 9 || c == 11 || c == 13 || c == 15) c = 0;
      }
    mats.push_back(h);
  }
  {
    // Repeated columns within a row: row i all column i % 5, rows of 3-200 entries.
    std::vector<int64_t> deg(60);
    for (int i = 0; i < 60; ++i) deg[static_cast<size_t>(i)] = 3 + (i * 37) % 200;
    Mat<I> r = make<I>(deg, 5, rng);
    for (int64_t i = 0; i < r.m; ++i)
      for (int64_t e = r.rp[i]; e < r.rp[i + 1]; ++e) r.ci[static_cast<size_t>(e)] = static_cast<I>((i + e % 2) % 5);
    mats.push_back(r);
  }
  {
    // Many hub columns over many ranking blocks: 60k entries, columns Zipf-like (column c ~ 1 / (c + 1)).
    Mat<I> z = make<I>(std::vector<int64_t>(3000, 20), 2000, rng);
    std::vector<double> w(2000);
    for (int c = 0; c < 2000; ++c) w[static_cast<size_t>(c)] = 1.0 / (c + 1);
    std::discrete_distribution<int> pick(w.begin(), w.end());
    for (auto& c : z.ci) c = static_cast<I>(pick(rng));
    mats.push_back(z);
  }
  mats.push_back(make<I>(std::vector<int64_t>(7, 0), 4, rng));  // nnz = 0
  {
    Mat<I> z;  // k = 0
    z.m = 3, z.n = 0, z.rp = {0, 0, 0, 0};
    mats.push_back(z);
  }
  {
    // Many columns (more than kColsPerTeam) with long ones spread across teams.
    std::vector<int64_t> deg(400, 0);
    for (int i = 0; i < 400; ++i) deg[static_cast<size_t>(i)] = (i * 13) % 90;
    Mat<I> w = make<I>(deg, 300, rng);
    for (auto& c : w.ci)
      if (rng() % 3 == 0) c = static_cast<I>(128 * (rng() % 3) + 5);  // columns 5, 133, 261 long
    mats.push_back(w);
  }
  for (size_t k = 0; k < mats.size(); ++k)
    for (bool values : {true, false})
      for (bool perm : {true, false})
        transpose_check<I, V>(mats[k], values, perm,
                              std::string("transpose") + tn + " mat " + std::to_string(k) + (values ? " values" : "") +
                                  (perm ? " perm" : ""));
}

// hub_split's row order of the whole rows (HubPlan::order, kernels/row_order.hpp), under T = 64:
// rows of 1 and 60 entries alternating (a warp of natural order waits for the long ones; the order
// takes them longest first), two hubs, then the same rowptr relaid in place (a stale plan: the
// order lists every row once, so a hub that shrank and a row that grew past T are still written).
template <class I, class V>
void spmm_row_order(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const char* tn = sizeof(I) == 8 ? (sizeof(V) == 8 ? "<i64,f64>" : "<i64,f32>") : (sizeof(V) == 8 ? "<i32,f64>" : "<i32,f32>");
  std::vector<int64_t> deg(600);
  for (size_t i = 0; i < deg.size(); ++i) deg[i] = i % 2 ? 1 : 60;
  deg[5] = 400;
  deg[301] = 200;
  Mat<I> a = make<I>(deg, 500, rng);
  const int64_t order = static_cast<int64_t>(row_order::every_row_order(a.rp, 64).size());
  tally(order != a.m, std::string("row order") + tn + ": the plan's order holds every row (" + std::to_string(order) + ")");
  std::vector<V> av(a.ci.size());
  for (auto& x : av) x = static_cast<V>(u(rng));
  for (int64_t f : {8, 33, 64, 128}) {
    std::vector<V> b(static_cast<size_t>(a.n * f)), c0(static_cast<size_t>(a.m * f));
    for (auto& x : b) x = static_cast<V>(u(rng));
    for (auto& x : c0) x = static_cast<V>(u(rng));
    const auto run = [&](const char* what) {
      for (int32_t reduce : {SPARSEPORT_REDUCE_SUM, SPARSEPORT_REDUCE_MEAN, SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN})
        spmm_compare(a, av, false, b, f, f, f, c0, reduce, 1.0, 0.5,
                     std::string("spmm row order") + tn + " " + what + " F=" + std::to_string(f) + " reduce=" +
                         std::to_string(reduce), 2);
    };
    run("planned");
    const std::vector<I> kept = a.rp;
    std::vector<int64_t> d2 = deg;
    std::swap(d2[5], d2[6]);    // the hub of 400 entries now 1, its neighbour 400: not in the plan's hubs
    std::swap(d2[301], d2[2]);  // the hub of 200 entries now 60, row 2 now 200
    for (size_t i = 0; i < d2.size(); ++i) a.rp[i + 1] = static_cast<I>(a.rp[i] + d2[i]);
    run("stale");
    a.rp = kept;
  }
}

int main(int argc, char** argv) {
  // hub_split's chunk length T = 8 (as SPARSEPORT_HUB_T sets it for the cuda plugin too): the inputs'
  // rows of 9, 16, 25, 57, 100 and 333 entries are hubs of 2 to 42 chunks.
  setenv("SPARSEPORT_HUB_T", "8", 0);
  Kokkos::initialize(argc, argv);
  {
    const char* which = std::getenv("SUITE");
    const std::string s = which ? which : "all";
    std::printf("space %s concurrency %d, lanes %d, groups at most %d, items a team %d, transpose team %d\n",
                Kokkos::DefaultExecutionSpace::name(), Kokkos::DefaultExecutionSpace().concurrency(),
                SPARSEPORT_SIM_VLMAX, SPARSEPORT_SIM_GROUPS_CAP, SPARSEPORT_SIM_ITEMS_PER_TEAM,
                SPARSEPORT_SIM_TRANSPOSE_TEAM);
    // spmm.hub_split with its lane groups (the default rule, then the first rule), then without.
    for (const char* groups : {"", "narrow", "0"}) {
      if (s != "all" && s != "spmm") break;
      if (*groups != 0) setenv("SPARSEPORT_KOKKOS_GROUPS", groups, 1);
      std::printf("spmm, SPARSEPORT_KOKKOS_GROUPS=%s\n", *groups != 0 ? groups : "(unset)");
      spmm_suite<int32_t, float>(1);
      spmm_suite<int32_t, double>(2);
      spmm_suite<int64_t, float>(3);
      spmm_suite<int64_t, double>(4);
    }
    if (s == "all" || s == "spmm") {
      std::printf("spmm, short rows\n");
      spmm_short_rows<int32_t, float>(13);
      spmm_short_rows<int32_t, double>(14);
      spmm_short_rows<int64_t, float>(15);
      spmm_short_rows<int64_t, double>(16);
    }
    // The default groups with one item a team (SPARSEPORT_KOKKOS_GROUP_ITEMS=1: teams of G threads,
    // the barrier shared by one item's groups only).
    if (s == "all" || s == "spmm") {
      unsetenv("SPARSEPORT_KOKKOS_GROUPS");
      setenv("SPARSEPORT_KOKKOS_GROUP_ITEMS", "1", 1);
      std::printf("spmm, SPARSEPORT_KOKKOS_GROUP_ITEMS=1\n");
      spmm_suite<int32_t, float>(1);
      spmm_suite<int64_t, double>(4);
      unsetenv("SPARSEPORT_KOKKOS_GROUP_ITEMS");
    }
    if (s == "all" || s == "spmm") {
      setenv("SPARSEPORT_HUB_T", "64", 1);
      std::printf("spmm, the row order (SPARSEPORT_HUB_T=64)\n");
      spmm_row_order<int32_t, float>(21);
      spmm_row_order<int64_t, double>(22);
      setenv("SPARSEPORT_HUB_T", "8", 1);
    }
    // Every row an item of the lane groups (SPARSEPORT_KOKKOS_HUB_ROWS=0, the A/B setting), where
    // by default whole rows go to team threads beside the hubs' chunks.
    if (s == "all" || s == "spmm") {
      setenv("SPARSEPORT_KOKKOS_HUB_ROWS", "0", 1);
      std::printf("spmm, SPARSEPORT_KOKKOS_HUB_ROWS=0\n");
      spmm_suite<int32_t, float>(1);
      spmm_suite<int64_t, double>(4);
      unsetenv("SPARSEPORT_KOKKOS_HUB_ROWS");
    }
    if (s == "all" || s == "sddmm") {
      sddmm_suite<int32_t, float>(5);
      sddmm_suite<int32_t, double>(6);
      sddmm_suite<int64_t, float>(7);
      sddmm_suite<int64_t, double>(8);
    }
    if (s == "all" || s == "transpose") {
      transpose_suite<int32_t, float>(9);
      transpose_suite<int32_t, double>(10);
      transpose_suite<int64_t, float>(11);
      transpose_suite<int64_t, double>(12);
    }
  }
  Kokkos::finalize();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
