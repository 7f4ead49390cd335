// SPDX-License-Identifier: Apache-2.0
// spmm max/min's arg and its backward (ABI 1.5) on one plugin, against the reference plugin, through
// the plugin tables (so these tests need nothing of the front end but contexts): the forward of a
// variant flagged SPARSEPORT_VARIANT_RECORDS_ARG, the plugin's csr_transpose with perm, and its
// spmm_arg_backward with and without A^T. Inputs are staged into the plugin's memory (device memory
// on a CUDA Kokkos). Shared by tests/openmp and tests/kokkos (which includes it as
// "openmp/arg_check.hpp").
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/conformance.hpp"
#include "../common/scoped.hpp"
#include "sparseport/sparseport.hpp"

namespace sp_arg {

using sparseport::Context;
using sparseport::HostCsr;
using sparseport::HostDense;
namespace spt = sparseport::testing;

// What the values of A and B look like.
enum class Kind {
  random,   // uniform in [-1, 1]
  ties,     // A in {1, 2, 0.5, -1}, B in {-2, ..., 2}: many equal products in a row
  nan_inf,  // random, with about 3% of B NaN and 2% +-inf
};
inline const char* name(Kind k) { return k == Kind::random ? "random" : k == Kind::ties ? "ties" : "nan_inf"; }

// A skewed matrix: the first and the last row empty, a mega-row holding `mega` of the entries, a few
// hubs, a fifth of the other rows empty, the rest of degree 1..8; columns random (unsorted, repeats
// allowed, so one row may hold a column twice: two entries with equal products).
template <class I, class V>
HostCsr<I, V> skewed(int64_t rows, int64_t cols, int64_t nnz, double mega, Kind kind, bool pattern, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> deg(static_cast<size_t>(rows), 0);
  const int64_t mega_row = rows / 3;
  deg[static_cast<size_t>(mega_row)] = static_cast<int64_t>(mega * static_cast<double>(nnz));
  int64_t placed = deg[static_cast<size_t>(mega_row)];
  std::uniform_int_distribution<int64_t> small(1, 8);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t i = 1; i + 1 < rows && placed < nnz; ++i) {
    if (i == mega_row) continue;
    const double x = u(rng);
    const int64_t d = x < 0.2 ? 0 : (x < 0.22 ? 50 + small(rng) * 20 : small(rng));
    deg[static_cast<size_t>(i)] = std::min(d, nnz - placed);
    placed += deg[static_cast<size_t>(i)];
  }
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::uniform_int_distribution<int> pick(0, 3);
  const double tie_values[] = {1.0, 2.0, 0.5, -1.0};
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < deg[static_cast<size_t>(i)]; ++k) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (!pattern) a.values.push_back(static_cast<V>(kind == Kind::ties ? tie_values[pick(rng)] : 2.0 * u(rng) - 1.0));
    }
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

template <class V>
HostDense<V> values_of(int64_t rows, int64_t cols, int64_t ld, Kind kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> small(-2, 2);
  HostDense<V> d(rows, cols, ld, spt::kPadding<V>);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t f = 0; f < cols; ++f) {
      double x = kind == Kind::ties ? double(small(rng)) : 2.0 * u(rng) - 1.0;
      if (kind == Kind::nan_inf) {
        const double r = u(rng);
        if (r < 0.03) x = std::numeric_limits<double>::quiet_NaN();
        else if (r < 0.04) x = std::numeric_limits<double>::infinity();
        else if (r < 0.05) x = -std::numeric_limits<double>::infinity();
      }
      d(i, f) = static_cast<V>(x);
    }
  return d;
}

// Bitwise equality (-0 differs from +0) of n values, except that any NaN equals any NaN: which of
// two NaNs an addition keeps (and so their sign) follows the operand order the compiler picked.
template <class T>
bool same_value_bits(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

template <class T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << want.size();
  int64_t bad = 0, first = -1;
  for (size_t k = 0; k < got.size(); ++k)
    if (!same_value_bits(got[k], want[k]) && bad++ == 0) first = static_cast<int64_t>(k);
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ, first at " << first
                                       << ": " << got[static_cast<size_t>(first)] << " against "
                                       << want[static_cast<size_t>(first)];
}

// |got - want| <= tol * bound element by element (bound: the result on |inputs|), NaN where want is.
template <class V>
::testing::AssertionResult within(const std::vector<V>& got, const std::vector<V>& want, const std::vector<V>& bound,
                                 double tol, const std::string& what) {
  int64_t bad = 0, first = -1;
  for (size_t k = 0; k < got.size(); ++k) {
    const double g = double(got[k]), w = double(want[k]);
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= tol * (std::abs(double(bound[k])) + 1e-300);
    if (!ok && bad++ == 0) first = static_cast<int64_t>(k);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ, first at " << first
                                       << ": " << got[static_cast<size_t>(first)] << " against "
                                       << want[static_cast<size_t>(first)];
}

template <class I>
constexpr int32_t index_tag() {
  return sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
}
template <class V>
constexpr int32_t value_tag() {
  return sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
}

// One problem: A (m x k), B (k x F), C's start (m x F, ld F + 1), dC (m x F, ld F + 2). arg has
// ld F + 3; its padding must survive (the sentinel below).
template <class I, class V>
struct Problem {
  HostCsr<I, V> a;
  HostDense<V> b, c0, dc;
  int64_t f = 0;
  sparseport_reduce reduce = SPARSEPORT_REDUCE_MAX;
  double alpha = 1.0, beta = 0.0;
  int64_t arg_ld() const { return f + 3; }
};

template <class I>
inline constexpr I kArgPadding = I(-12345);

template <class I, class V>
struct Forward {
  bool ok = false;  // the call returned SPARSEPORT_OK
  std::vector<V> c;  // m x (F + 1), padding included
  std::vector<I> arg;  // m x (F + 3)
};

template <class I, class V>
struct Grads {
  bool ok = false;  // the call returned SPARSEPORT_OK
  std::vector<V> db;  // k x (F + 1)
  std::vector<V> dv;  // nnz
};

inline void expect_ok(int rc, const sparseport_status& st, const std::string& what) {
  ASSERT_EQ(rc, SPARSEPORT_OK) << what << ": " << st.message;
}

// The forward through ctx's table, variant v, with arg.
template <class I, class V>
Forward<I, V> forward(const Context& ctx, const std::string& v, const Problem<I, V>& p, sparseport_exec ex) {
  spt::Stage s(ctx);
  const int64_t m = p.a.rows, nnz = p.a.nnz();
  std::vector<I> arg0(static_cast<size_t>(m * p.arg_ld()), kArgPadding<I>);
  I* arg = s.put(arg0);
  V* c = s.put(p.c0.data);
  const sparseport_spmm_args args{
      {m, p.a.cols, nnz, s.put(p.a.rowptr), s.put(p.a.colind), p.a.is_pattern() ? nullptr : s.put(p.a.values),
       index_tag<I>(), value_tag<V>()},
      {p.b.rows, p.b.cols, p.b.ld, s.put(p.b.data), value_tag<V>()},
      {m, p.f, p.c0.ld, c, value_tag<V>()},
      p.reduce,
      p.alpha,
      p.beta,
      arg,
      p.arg_ld()};
  sparseport_status st{};
  Forward<I, V> out;
  const int rc = ctx.plugin().table->spmm(&ex, v.c_str(), &args, &st);
  EXPECT_EQ(rc, SPARSEPORT_OK) << ctx.plugin().name << "/" << v << ": " << st.message;
  if (rc != SPARSEPORT_OK) return out;
  out.ok = true;
  out.c = s.get(c, p.c0.data.size());
  out.arg = s.get(arg, arg0.size());
  return out;
}

// A^T's rowptr, colind (A's rows) and the stable positions (A's row order, storage order within a
// row), computed here from the definition.
template <class I, class V>
struct HostTranspose {
  std::vector<I> rowptr, colind, perm;
};
template <class I, class V>
HostTranspose<I, V> transpose_of(const HostCsr<I, V>& a) {
  HostTranspose<I, V> t;
  t.rowptr.assign(static_cast<size_t>(a.cols) + 1, I(0));
  for (const I c : a.colind) ++t.rowptr[static_cast<size_t>(c) + 1];
  for (int64_t j = 0; j < a.cols; ++j) t.rowptr[static_cast<size_t>(j) + 1] += t.rowptr[static_cast<size_t>(j)];
  std::vector<I> next(t.rowptr.begin(), t.rowptr.end() - 1);
  t.colind.resize(a.colind.size());
  t.perm.resize(a.colind.size());
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      const I o = next[static_cast<size_t>(a.colind[static_cast<size_t>(e)])]++;
      t.colind[static_cast<size_t>(o)] = static_cast<I>(i);
      t.perm[static_cast<size_t>(o)] = e;
    }
  return t;
}

// The plugin lists exactly one spmm variant flagged RECORDS_ARG, `variant`, has the backward slot
// and no set_external (a host plugin has no stream to lend).
inline void expect_only_recording_variant(const std::string& plugin, const std::string& variant) {
  const sparseport::PluginInfo& p = sparseport::plugin(plugin);
  ASSERT_NE(p.table, nullptr);
  EXPECT_NE(p.table->spmm_arg_backward, nullptr);
  EXPECT_EQ(p.table->set_external, nullptr);
  int flagged = 0;
  for (int32_t k = 0; k < p.table->n_variants; ++k) {
    const sparseport_variant& v = p.table->variants[k];
    if ((v.flags & SPARSEPORT_VARIANT_RECORDS_ARG) == 0) continue;
    ++flagged;
    EXPECT_EQ(std::string(v.name), variant);
  }
  EXPECT_EQ(flagged, 1);
}

// ctx's csr_transpose (its first variant) with perm; checks rowptr, colind, values and perm against
// the definition.
template <class I, class V>
void expect_transpose_with_perm(const Context& ctx, const HostCsr<I, V>& a) {
  const std::string v = ctx.plugin().variants_of(SPARSEPORT_OP_CSR_TRANSPOSE).at(0);
  SCOPED_TRACE(ctx.plugin().name + "/" + v);
  const HostTranspose<I, V> want = transpose_of(a);
  spt::Stage s(ctx);
  const int64_t nnz = a.nnz();
  I* orp = s.put(std::vector<I>(static_cast<size_t>(a.cols) + 1, I(-1)));
  I* oci = s.put(std::vector<I>(static_cast<size_t>(nnz), I(-1)));
  V* ov = a.is_pattern() ? nullptr : s.put(std::vector<V>(static_cast<size_t>(nnz), V(0)));
  I* perm = s.put(std::vector<I>(static_cast<size_t>(nnz), I(-1)));
  const sparseport_transpose_args args{
      {a.rows, a.cols, nnz, s.put(a.rowptr), s.put(a.colind), a.is_pattern() ? nullptr : s.put(a.values),
       index_tag<I>(), value_tag<V>()},
      {a.cols, a.rows, nnz, orp, oci, ov, index_tag<I>(), value_tag<V>()},
      perm};
  sparseport_status st{};
  const sparseport_exec ex = ctx.exec();
  ASSERT_EQ(ctx.plugin().table->csr_transpose(&ex, v.c_str(), &args, &st), SPARSEPORT_OK) << st.message;
  EXPECT_TRUE(same_bits(s.get(orp, want.rowptr.size()), want.rowptr, "A^T rowptr"));
  EXPECT_TRUE(same_bits(s.get(oci, want.colind.size()), want.colind, "A^T colind"));
  EXPECT_TRUE(same_bits(s.get(perm, want.perm.size()), want.perm, "A^T perm"));
  if (ov != nullptr) {
    std::vector<V> want_v(want.perm.size());
    for (size_t t = 0; t < want.perm.size(); ++t) want_v[t] = a.values[static_cast<size_t>(want.perm[t])];
    EXPECT_TRUE(same_bits(s.get(ov, want_v.size()), want_v, "A^T values"));
  }
  // Without perm (as an ABI 1.4 caller passes it) the rest is the same.
  const sparseport_transpose_args no_perm{args.a, args.out, nullptr};
  ASSERT_EQ(ctx.plugin().table->csr_transpose(&ex, v.c_str(), &no_perm, &st), SPARSEPORT_OK) << st.message;
  EXPECT_TRUE(same_bits(s.get(oci, want.colind.size()), want.colind, "A^T colind without perm"));
}

// The backward through ctx's table from arg (host). with_at: pass A^T (built here, staged).
template <class I, class V>
Grads<I, V> backward(const Context& ctx, const Problem<I, V>& p, const HostDense<V>& b, const HostDense<V>& dc,
                     const HostCsr<I, V>& a, const std::vector<I>& arg, bool with_at, sparseport_exec ex) {
  spt::Stage s(ctx);
  const int64_t m = a.rows, k = a.cols, nnz = a.nnz();
  const int64_t ld_db = p.f + 1;
  V* db = s.put(std::vector<V>(static_cast<size_t>(k * ld_db), spt::kPadding<V>));
  // dvalues starts as NaN: every entry must be written, won or not.
  V* dv = s.put(std::vector<V>(static_cast<size_t>(nnz), std::numeric_limits<V>::quiet_NaN()));
  const HostTranspose<I, V> t = transpose_of(a);
  const sparseport_spmm_arg_backward_args args{
      {m, k, nnz, s.put(a.rowptr), s.put(a.colind), a.is_pattern() ? nullptr : s.put(a.values), index_tag<I>(),
       value_tag<V>()},
      {b.rows, b.cols, b.ld, s.put(b.data), value_tag<V>()},
      {dc.rows, dc.cols, dc.ld, s.put(dc.data), value_tag<V>()},
      s.put(arg),
      p.arg_ld(),
      {k, p.f, ld_db, db, value_tag<V>()},
      {nnz, 1, 1, dv, value_tag<V>()},
      with_at ? s.put(t.rowptr) : nullptr,
      with_at ? s.put(t.colind) : nullptr,
      with_at ? s.put(t.perm) : nullptr};
  sparseport_status st{};
  Grads<I, V> out;
  const auto slot = ctx.plugin().table->spmm_arg_backward;
  EXPECT_NE(slot, nullptr) << ctx.plugin().name << " has no spmm_arg_backward";
  if (slot == nullptr) return out;
  const int rc = slot(&ex, &args, &st);
  EXPECT_EQ(rc, SPARSEPORT_OK) << ctx.plugin().name << ": " << st.message;
  if (rc != SPARSEPORT_OK) return out;
  out.ok = true;
  out.db = s.get(db, static_cast<size_t>(k * ld_db));
  out.dv = s.get(dv, static_cast<size_t>(nnz));
  return out;
}

// The backward on one dB path (SPARSEPORT_ARG_BACKWARD_DB), deterministic flags as in ex.
template <class I, class V>
Grads<I, V> forced(const char* path, const Context& ctx, const Problem<I, V>& p, const std::vector<I>& arg,
                   bool with_at, sparseport_exec ex) {
  sparseport_test::ScopedEnv force("SPARSEPORT_ARG_BACKWARD_DB", path);
  return backward(ctx, p, p.b, p.dc, p.a, arg, with_at, ex);
}

template <class V>
HostDense<V> absolute(HostDense<V> d) {
  for (V& x : d.data) x = std::abs(x);
  return d;
}
template <class I, class V>
HostCsr<I, V> absolute(HostCsr<I, V> a) {
  for (V& x : a.values) x = std::abs(x);
  return a;
}

// The reference's answers for p: the forward (spmm.serial: products and comparisons in V, as every
// other plugin makes them), the gradients (in double) and their bounds (the gradients of |A|, |B|,
// |dC| through the same arg).
template <class I, class V>
struct Oracle {
  Forward<I, V> fwd;
  Grads<I, V> grads, bound;
};
template <class I, class V>
Oracle<I, V> oracle(const Problem<I, V>& p) {
  const Context& ref = spt::oracle();
  Oracle<I, V> o;
  o.fwd = forward(ref, "spmm.serial", p, ref.exec());
  if (!o.fwd.ok) return o;
  o.grads = backward(ref, p, p.b, p.dc, p.a, o.fwd.arg, false, ref.exec());
  o.bound = backward(ref, p, absolute(p.b), absolute(p.dc), absolute(p.a), o.fwd.arg, false, ref.exec());
  return o;
}

// C against the reference's: the same winners, so the same values up to the rounding of alpha and
// beta (an FMA on a GPU); NaN where the reference has NaN, padding kept.
template <class I, class V>
::testing::AssertionResult same_c(const Forward<I, V>& got, const Forward<I, V>& want, const Problem<I, V>& p) {
  std::vector<V> bound(want.c.size());
  for (int64_t i = 0; i < p.a.rows; ++i)
    for (int64_t f = 0; f < p.c0.ld; ++f) {
      const size_t k = static_cast<size_t>(i * p.c0.ld + f);
      const V old = p.beta != 0.0 ? std::abs(V(p.beta) * p.c0.data[k]) : V(0);
      bound[k] = f < p.f ? std::abs(want.c[k]) + old : V(0);
    }
  return within(got.c, want.c, bound, 4.0 * std::numeric_limits<V>::epsilon(), "C");
}

// The dB paths a plugin chooses between (kernels/<b>/spmm_arg_backward.cpp), each forced in turn
// with SPARSEPORT_ARG_BACKWARD_DB; "" lets the plugin choose.
inline const char* const kDbPaths[] = {"", "columns", "gather", "atomic"};

// The whole check of one problem on ctx's variant v: arg bitwise, C close, the gradients with and
// without A^T, on every dB path, close to the reference's (bitwise in double on host spaces for the
// deterministic calls: the same operations in the same order).
template <class I, class V>
void expect_matches_reference(const Context& ctx, const std::string& v, const Problem<I, V>& p, bool bitwise_f64) {
  const Oracle<I, V> o = oracle(p);
  ASSERT_TRUE(o.fwd.ok && o.grads.ok && o.bound.ok);
  const Forward<I, V> got = forward(ctx, v, p, ctx.exec());
  ASSERT_TRUE(got.ok);
  EXPECT_TRUE(same_bits(got.arg, o.fwd.arg, "arg"));
  EXPECT_TRUE(same_c(got, o.fwd, p));
  // Up to 130 terms in V against the reference's double sums: (terms) * eps of the bound.
  const double tol = std::is_same_v<V, float> ? 3e-5 : 1e-13;
  for (const char* path : kDbPaths)
    for (const bool with_at : {true, false})
      for (const bool deterministic : {true, false}) {
        SCOPED_TRACE(std::string("dB path ") + (*path != '\0' ? path : "(chosen)") + (with_at ? ", with" : ", without") +
                     " A^T" + (deterministic ? ", deterministic" : ""));
        sparseport_test::ScopedEnv force("SPARSEPORT_ARG_BACKWARD_DB", *path != '\0' ? path : nullptr);
        sparseport_exec ex = ctx.exec();
        if (deterministic) ex.flags |= SPARSEPORT_EXEC_DETERMINISTIC;
        const Grads<I, V> g = backward(ctx, p, p.b, p.dc, p.a, o.fwd.arg, with_at, ex);
        ASSERT_TRUE(g.ok);
        EXPECT_TRUE(within(g.db, o.grads.db, o.bound.db, tol, "dB"));
        EXPECT_TRUE(within(g.dv, o.grads.dv, o.bound.dv, tol, "dvalues"));
        if (std::is_same_v<V, double> && bitwise_f64 && deterministic) {
          EXPECT_TRUE(same_bits(g.db, o.grads.db, "dB (bitwise)"));
          EXPECT_TRUE(same_bits(g.dv, o.grads.dv, "dvalues (bitwise)"));
        }
      }
}

// How many elements of C have two or more entries whose products equal the row's max (kMax) or min:
// the cases where the first-in-storage-order rule decides arg. Products and comparisons in V.
template <class I, class V>
int64_t ties(const Problem<I, V>& p) {
  int64_t n = 0;
  const bool is_max = p.reduce == SPARSEPORT_REDUCE_MAX;
  for (int64_t i = 0; i < p.a.rows; ++i)
    for (int64_t f = 0; f < p.f; ++f) {
      V best = V(0);
      int64_t count = 0;
      for (I e = p.a.rowptr[static_cast<size_t>(i)]; e < p.a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
        const V x = (p.a.is_pattern() ? V(1) : p.a.values[static_cast<size_t>(e)]) *
                    p.b(p.a.colind[static_cast<size_t>(e)], f);
        if (std::isnan(x)) continue;
        if (count == 0 || (is_max ? x > best : x < best)) {
          best = x;
          count = 1;
        } else if (x == best) {
          ++count;
        }
      }
      n += count > 1 ? 1 : 0;
    }
  return n;
}

template <class I, class V>
Problem<I, V> problem(Kind kind, bool pattern, int64_t f, sparseport_reduce r, double alpha, double beta,
                      int64_t rows, int64_t cols, int64_t nnz, double mega, uint64_t seed) {
  Problem<I, V> p;
  p.a = skewed<I, V>(rows, cols, nnz, mega, kind, pattern, seed);
  p.b = values_of<V>(cols, f, f + 2, kind, seed + 1);
  p.c0 = values_of<V>(rows, f, f + 1, Kind::random, seed + 2);
  p.dc = values_of<V>(rows, f, f + 2, Kind::random, seed + 3);
  p.f = f;
  p.reduce = r;
  p.alpha = alpha;
  p.beta = beta;
  if (beta == 0.0)  // beta == 0 must not read C: start from NaN
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < f; ++j) p.c0(i, j) = std::numeric_limits<V>::quiet_NaN();
  return p;
}

}  // namespace sp_arg
