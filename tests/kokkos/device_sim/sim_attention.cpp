// SPDX-License-Identifier: Apache-2.0
// The device path of kernels/kokkos/csr_attention.cpp, as generated for a host space by
// generate.cmake (README.md in this folder), against the reference kernel: hubs split into items
// and merged, -inf / NaN / +inf scores and V values, stale plans, F or Fv = 0, no entries; padded
// lds (scalar loads) and unpadded ones (16-byte loads where F and Fv allow); each call twice, the
// two results bit for bit the same (the variant is flagged deterministic).
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>
#include "kernels/kokkos/kernels.hpp"
#include "kernels/reference/kernels.hpp"

using namespace sparseport;
static int failures = 0, checks = 0;
static bool g_pad = true;

template <class I, class V>
struct Case {
  int64_t m, n, f, fv, ldq, ldk, ldv, ldo;
  std::vector<I> rp, ci;
  std::vector<V> q, k, v;
  double scale;
};

template <class I, class V>
sparseport_attention_args args_of(Case<I, V>& c, V* out) {
  sparseport_attention_args a{};
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
  const int32_t vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  a.a = {c.m, c.n, static_cast<int64_t>(c.ci.size()), c.rp.data(), c.ci.data(), nullptr, it, vt};
  a.q = {c.m, c.f, c.ldq, c.q.data(), vt};
  a.k = {c.n, c.f, c.ldk, c.k.data(), vt};
  a.v = {c.n, c.fv, c.ldv, c.v.data(), vt};
  a.out = {c.m, c.fv, c.ldo, out, vt};
  a.scale = c.scale;
  return a;
}

template <class I, class V>
void check(Case<I, V>& c, const char* what) {
  std::vector<V> got(static_cast<size_t>(c.m * c.ldo), V(-7)), want(got.size(), V(-7)), again(got.size(), V(-7));
  kokkos::csr_attention(args_of(c, got.data()));
  kokkos::csr_attention(args_of(c, again.data()));
  reference::csr_attention(args_of(c, want.data()), true);
  const double tol = sizeof(V) == 4 ? 2e-4 : 1e-11;
  int bad = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.ldo; ++j) {
      const size_t x = static_cast<size_t>(i * c.ldo + j);
      const double g = got[x], w = want[x];
      bool ok;
      if (j >= c.fv) ok = got[x] == V(-7);  // padding kept
      else if (std::isnan(w)) ok = std::isnan(g);
      else if (std::isinf(w)) ok = g == w;
      else ok = std::isfinite(g) && std::fabs(g - w) <= tol * (1.0 + std::fabs(w));
      if (std::memcmp(&got[x], &again[x], sizeof(V)) != 0) ok = false;  // same bits run to run
      if (!ok && bad++ < 5)
        std::printf("  MISMATCH %s row %lld (deg %lld) col %lld: got %g want %g\n", what, (long long)i,
                    (long long)(c.rp[i + 1] - c.rp[i]), (long long)j, g, w);
    }
  if (std::getenv("DUMP") && std::strcmp(what, "adversarial") == 0 && c.fv > 0)
    for (int64_t r : {0, 5, 17, 30, 31, 32, 33, 34, 100, 200, 299})
      std::printf("    row %3lld deg %4lld: want[0] %-10g got[0] %-10g\n", (long long)r, (long long)(c.rp[r + 1] - c.rp[r]),
                  (double)want[static_cast<size_t>(r * c.ldo)], (double)got[static_cast<size_t>(r * c.ldo)]);
  ++checks;
  if (bad) ++failures;
  std::printf("%s %s<%s,%s> m=%lld nnz=%lld F=%lld Fv=%lld: %d bad\n", bad ? "FAIL" : "ok  ", what,
              sizeof(I) == 8 ? "i64" : "i32", sizeof(V) == 8 ? "f64" : "f32", (long long)c.m, (long long)c.ci.size(),
              (long long)c.f, (long long)c.fv, bad);
}

// Rows with the given degrees, random columns (repeats allowed).
template <class I, class V>
Case<I, V> make(const std::vector<int64_t>& deg, int64_t n, int64_t f, int64_t fv, double scale, std::mt19937_64& rng,
                int64_t lo = 0) {
  Case<I, V> c;
  c.m = static_cast<int64_t>(deg.size()), c.n = n, c.f = f, c.fv = fv, c.scale = scale;
  if (g_pad) c.ldq = f + 1, c.ldk = f + 3, c.ldv = fv + 2, c.ldo = fv + 1;
  else c.ldq = f, c.ldk = f, c.ldv = fv, c.ldo = fv;  // the 16-byte path where F, Fv are multiples of 4
  c.rp.push_back(0);
  std::uniform_int_distribution<int64_t> col(lo, n - 1);
  for (int64_t d : deg) {
    for (int64_t e = 0; e < d; ++e) c.ci.push_back(static_cast<I>(col(rng)));
    c.rp.push_back(static_cast<I>(c.ci.size()));
  }
  std::uniform_real_distribution<double> u(-1, 1), pos(0.1, 1);
  c.q.assign(static_cast<size_t>(c.m * c.ldq), V(99));
  c.k.assign(static_cast<size_t>(n * c.ldk), V(99));
  c.v.assign(static_cast<size_t>(n * c.ldv), V(99));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t x = 0; x < f; ++x) c.q[static_cast<size_t>(i * c.ldq + x)] = static_cast<V>(x == 0 ? pos(rng) : u(rng));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t x = 0; x < f; ++x) c.k[static_cast<size_t>(i * c.ldk + x)] = static_cast<V>(u(rng));
    for (int64_t x = 0; x < fv; ++x) c.v[static_cast<size_t>(i * c.ldv + x)] = static_cast<V>(u(rng));
  }
  return c;
}

template <class I, class V>
void suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const V inf = std::numeric_limits<V>::infinity(), nan = std::numeric_limits<V>::quiet_NaN();
  for (int64_t f : {1, 7, 8, 16, 32, 40}) {
    const int64_t fv = f == 7 ? 3 : f == 40 ? 33 : f == 16 ? 64 : f;
    // Power-law-ish: empty rows, a row of 1, short rows, hubs of lengths not multiples of T.
    std::vector<int64_t> deg;
    for (int i = 0; i < 300; ++i) deg.push_back(i % 7 == 0 ? 0 : i % 11 == 0 ? 1 : 1 + static_cast<int64_t>(rng() % 9));
    deg[5] = 1000;
    deg[17] = 4097;
    deg[299] = 2501;
    deg[0] = 333;
    for (double scale : {0.5, 30.0}) {
      Case<I, V> c = make<I, V>(deg, 400, f, fv, scale, rng);
      check(c, "powerlaw");
    }
    // Adversarial scores: random keys from 3 up; key 0 scores -inf (K[0] = (-inf, 0, ...), Q[i][0] > 0;
    // +inf where Q[i][0] < 0), key 1 NaN, V row 2 holds +inf in column 0.
    {
      std::vector<int64_t> d2 = deg;
      d2[100] = 800;
      d2[200] = 900;
      Case<I, V> c = make<I, V>(d2, 400, f, fv, 1.0, rng, 3);
      for (int64_t x = 0; x < f; ++x) c.k[static_cast<size_t>(0 * c.ldk + x)] = x == 0 ? -inf : V(0);
      c.k[static_cast<size_t>(1 * c.ldk + 0)] = nan;
      c.v[static_cast<size_t>(2 * c.ldv + 0)] = inf;
      auto set = [&](int64_t row, int64_t from, int64_t to, I key) {
        for (int64_t e = c.rp[row] + from; e < c.rp[row] + to && e < c.rp[row + 1]; ++e) c.ci[static_cast<size_t>(e)] = key;
      };
      auto deg_of = [&](int64_t row) { return static_cast<int64_t>(c.rp[row + 1] - c.rp[row]); };
      set(5, 0, deg_of(5), 0);        // hub, every score -inf: NaN row
      set(17, 0, 300, 0);             // hub, its first 300 scores -inf (whole items), then finite
      set(200, 200, 700, 0);          // hub, -inf in the middle (whole items of -inf only)
      set(299, 1700, 1701, 1);        // hub, one NaN score: NaN row
      c.q[static_cast<size_t>(0 * c.ldq + 0)] = V(-1);
      set(0, 100, 101, 0);            // hub, one +inf score: NaN row
      set(100, 10, 11, 2);            // hub, V's inf in column 0 twice
      set(100, 700, 701, 2);
      if (f == 0) {}
      for (int64_t r = 30; r < 60; ++r) {  // short rows
        if (deg_of(r) == 0) continue;
        if (r % 5 == 0) set(r, 0, 1, 0);              // leading -inf, then finite
        else if (r % 5 == 1) set(r, 0, deg_of(r), 0); // all -inf: NaN
        else if (r % 5 == 2) set(r, deg_of(r) - 1, deg_of(r), 1);  // NaN last
        else if (r % 5 == 3) set(r, 0, 1, 2);         // V's inf
      }
      check(c, "adversarial");
    }
  }
  // Stale plan: same rowptr address, shape and nnz; rewrite the structure in place (hub moved and
  // resized), then call again.
  {
    std::vector<int64_t> deg(200, 5);
    deg[3] = 3000;
    deg[150] = 1500;
    Case<I, V> c = make<I, V>(deg, 300, 16, 16, 1.0, rng);
    check(c, "stale-before");
    std::vector<int64_t> deg2(200, 5);
    deg2[3] = 40;       // a planned hub, now short
    deg2[150] = 4000;   // a planned hub, grown
    deg2[100] = 460;    // a new hub, not planned
    int64_t total = 0;
    for (int64_t d : deg2) total += d;
    deg2[0] += static_cast<int64_t>(c.ci.size()) - total;  // same nnz
    c.rp[0] = 0;
    for (size_t i = 0; i < deg2.size(); ++i) c.rp[i + 1] = static_cast<I>(c.rp[i] + deg2[i]);
    std::uniform_int_distribution<int64_t> col(0, c.n - 1);
    for (auto& x : c.ci) x = static_cast<I>(col(rng));
    check(c, "stale-after");
    // Shrunk but still a hub: items past its end are empty.
    std::vector<int64_t> deg3(200, 5);
    deg3[3] = 3000;
    deg3[150] = 700;
    total = 0;
    for (int64_t d : deg3) total += d;
    deg3[1] += static_cast<int64_t>(c.ci.size()) - total;
    for (size_t i = 0; i < deg3.size(); ++i) c.rp[i + 1] = static_cast<I>(c.rp[i] + deg3[i]);
    check(c, "stale-shrunk");
  }
  // F = 0 and Fv = 0; nnz = 0.
  {
    std::vector<int64_t> deg(50, 3);
    deg[7] = 900;
    Case<I, V> c = make<I, V>(deg, 60, 0, 5, 1.0, rng);
    check(c, "F=0");
    Case<I, V> d = make<I, V>(deg, 60, 4, 0, 1.0, rng);
    check(d, "Fv=0");
    Case<I, V> e = make<I, V>(std::vector<int64_t>(10, 0), 60, 4, 4, 1.0, rng);
    check(e, "nnz=0");
  }
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    for (bool pad : {true, false}) {
      g_pad = pad;
      suite<int32_t, float>(1);
      suite<int32_t, double>(2);
      suite<int64_t, float>(3);
      suite<int64_t, double>(4);
    }
  }
  Kokkos::finalize();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
