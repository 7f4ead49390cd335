// SPDX-License-Identifier: Apache-2.0
// ABI 1.5 on a GPU, through the cuda plugin's slots, against the reference plugin's:
//  - spmm max/min recording arg (every variant flagged SPARSEPORT_VARIANT_RECORDS_ARG): the arg
//    equal entry for entry, C within rounding, on random inputs and adversarial ones (products
//    that tie within a row, repeated columns, NaN and infinities, empty rows, a matrix without
//    entries, a mega-row of 100 000 entries, int64 indices, padded arg rows);
//  - csr_transpose's perm, equal entry for entry;
//  - spmm_arg_backward: dB by the atomic scatter, by the gather over a given A^T and by the
//    gather over an A^T built in deterministic mode, and dvalues, in double and float, against the
//    reference (which sums in double), the gathers bitwise the same run to run; dB with a leading
//    dimension above F and dvalues with ld 2, their padding untouched.
// Without a GPU every test skips and says why.
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_abi.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261215;
constexpr int64_t kUnwritten = 777777;  // what arg holds before a call: a value no call writes

template <class I>
constexpr int32_t index_code() {
  return sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
}

std::vector<std::string> recording_variants() {
  std::vector<std::string> out;
  const sparseport_plugin& t = cuda_table();
  for (int32_t k = 0; k < t.n_variants; ++k)
    if (t.variants[k].op == SPARSEPORT_OP_SPMM && (t.variants[k].flags & SPARSEPORT_VARIANT_RECORDS_ARG) != 0)
      out.push_back(t.variants[k].name);
  return out;
}

// Rounds values of a and b to a few levels, so that products tie often.
template <class I, class V>
void quantize(HostCsr<I, V>& a, HostDense<V>& b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const V levels[] = {V(-1), V(0.5), V(1), V(2)};
  for (V& v : a.values) v = levels[rng() % 4];
  for (int64_t j = 0; j < b.rows; ++j)
    for (int64_t f = 0; f < b.cols; ++f) b(j, f) = static_cast<V>(static_cast<int64_t>(rng() % 7) - 3);
}

// Puts NaN and infinities into some values of a and rows of b (inf * 0 and NaN products).
template <class I, class V>
void poison(HostCsr<I, V>& a, HostDense<V>& b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const V nan = std::numeric_limits<V>::quiet_NaN(), inf = std::numeric_limits<V>::infinity();
  for (V& v : a.values) {
    const uint64_t r = rng() % 100;
    if (r == 0) v = nan;
    if (r == 1) v = inf;
    if (r == 2) v = V(0);
  }
  for (int64_t j = 0; j < b.rows; ++j)
    for (int64_t f = 0; f < b.cols; ++f) {
      const uint64_t r = rng() % 50;
      if (r == 0) b(j, f) = nan;
      if (r == 1) b(j, f) = -inf;
      if (r == 2) b(j, f) = V(0);
    }
}

// One spmm with arg through the cuda plugin (variant), the same through the reference; arg must be
// equal everywhere (its padding untouched), C within rounding (NaN where the reference has NaN).
template <class I, class V>
void check_arg(const Context& ctx, const HostCsr<I, V>& a, const HostDense<V>& b, Reduce r, const std::string& variant,
               double alpha, double beta, int64_t arg_pad, uint64_t seed) {
  const int64_t m = a.rows, F = b.cols, ldarg = F + arg_pad;
  const std::string where = variant + ", " + name(r) + ", F " + std::to_string(F) + ", alpha " +
                            std::to_string(alpha) + ", beta " + std::to_string(beta) + ", arg ld " +
                            std::to_string(ldarg) + ", seed " + std::to_string(seed);
  SCOPED_TRACE(where);
  HostDense<V> c0 = random_dense<V>(m, F, F, seed + 1);
  if (beta == 0.0) std::fill(c0.data.begin(), c0.data.end(), std::numeric_limits<V>::quiet_NaN());
  const std::vector<I> arg0(static_cast<size_t>(m * ldarg), static_cast<I>(kUnwritten));

  HostDense<V> want_c = c0;
  std::vector<I> want_arg = arg0;
  const sparseport_exec none{};
  sparseport_status st{};
  const sparseport_spmm_args host{abi_of(a.view()), abi_of(b.view()), abi_of(want_c.mut()), static_cast<int32_t>(r),
                                  alpha,         beta,          want_arg.data(),     ldarg};
  expect_ok(reference_table().spmm(&none, "spmm.serial", &host, &st), st, "reference spmm");

  const auto da = to_device(ctx, a);
  const DevDense<V> db = to_device(ctx, b), dc = to_device(ctx, c0);
  const Buffer darg = upload(ctx, arg0);
  const sparseport_exec x = ctx.exec();
  const sparseport_spmm_args dev{abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), static_cast<int32_t>(r),
                                 alpha,        beta,           darg.data(),   ldarg};
  if (!spmm_variant_applies(variant, dev)) {
    bool some = false;
    for (const std::string& v : recording_variants()) some = some || spmm_variant_applies(v, dev);
    EXPECT_TRUE(some) << "no variant that records arg applies to this input";
    return;
  }
  expect_ok(cuda_table().spmm(&x, variant.c_str(), &dev, &st), st, "cuda spmm " + variant);
  const std::vector<I> got_arg = download<I>(ctx, darg.data(), want_arg.size());
  const HostDense<V> got_c = to_host(ctx, dc);

  for (int64_t i = 0; i < m; ++i)
    for (int64_t f = 0; f < ldarg; ++f) {
      const size_t k = static_cast<size_t>(i * ldarg + f);
      if (got_arg[k] == want_arg[k]) continue;
      const I e = got_arg[k], w = want_arg[k];
      auto product = [&](I p) -> double {
        if (p < 0 || p >= static_cast<I>(a.nnz())) return std::nan("");
        return value_of(a, p) * static_cast<double>(b(a.colind[static_cast<size_t>(p)], f < F ? f : 0));
      };
      ADD_FAILURE() << "arg[" << i << "," << f << "] = " << static_cast<int64_t>(e) << " (product " << product(e)
                    << ") but the reference gives " << static_cast<int64_t>(w) << " (product " << product(w)
                    << "); row " << i << " holds entries " << a.rowptr[static_cast<size_t>(i)] << " to "
                    << a.rowptr[static_cast<size_t>(i) + 1];
      return;
    }
  const double eps = std::numeric_limits<V>::epsilon();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t f = 0; f < F; ++f) {
      const double g = static_cast<double>(got_c(i, f)), w = static_cast<double>(want_c(i, f));
      if (std::isnan(w) || std::isnan(g)) {
        ASSERT_EQ(std::isnan(g), std::isnan(w)) << "C[" << i << "," << f << "] = " << g << " but the reference gives " << w;
        continue;
      }
      if (std::isinf(w) || std::isinf(g)) {
        ASSERT_EQ(g, w) << "C[" << i << "," << f << "]";
        continue;
      }
      const I e = want_arg[static_cast<size_t>(i * ldarg + f)];
      const double r_val = e < 0 ? 0.0 : value_of(a, e) * static_cast<double>(b(a.colind[static_cast<size_t>(e)], f));
      const double scale = std::abs(alpha * r_val) + (beta != 0.0 ? std::abs(beta * static_cast<double>(c0(i, f))) : 0.0);
      ASSERT_LE(std::abs(g - w), 4.0 * eps * scale + std::numeric_limits<V>::min())
          << "C[" << i << "," << f << "] = " << g << " but the reference gives " << w;
    }
}

template <class I, class V>
void check_arg_all(const Context& ctx, const HostCsr<I, V>& a, const HostDense<V>& b, uint64_t seed,
                   int64_t arg_pad = 0) {
  const std::vector<std::string> vs = recording_variants();
  ASSERT_FALSE(vs.empty()) << "the cuda plugin flags no spmm variant SPARSEPORT_VARIANT_RECORDS_ARG";
  for (const std::string& v : vs)
    for (Reduce r : {Reduce::max, Reduce::min}) {
      check_arg(ctx, a, b, r, v, 1.0, 0.0, arg_pad, seed);
      check_arg(ctx, a, b, r, v, -0.5, 2.0, arg_pad, seed + 7);
    }
}

TEST(CudaSpmmArg, RecordingVariantsAreFlaggedAndOneAppliesEverywhere) {
  CUDA_TEST_REQUIRE_GPU();
  const std::vector<std::string> vs = recording_variants();
  ASSERT_FALSE(vs.empty());
  bool row_warp = false;
  for (const std::string& v : vs) row_warp = row_warp || v == "spmm.row_warp";
  EXPECT_TRUE(row_warp) << "spmm.row_warp (any F, any alignment) should record arg";
  // A variant that does not record is refused with arg, naming the ones that do.
  Context ctx = Context::create("cuda");
  const auto a = skewed_csr<int32_t, float>(50, 40, 300, 0.1, kSeed);
  const auto da = to_device(ctx, a);
  const DevDense<float> db = to_device(ctx, random_dense<float>(40, 8, 8, kSeed + 1));
  const DevDense<float> dc = to_device(ctx, HostDense<float>(50, 8, 8, 0.0f));
  const Buffer darg = upload(ctx, std::vector<int32_t>(50 * 8, 0));
  const sparseport_exec x = ctx.exec();
  const sparseport_spmm_args args{abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), SPARSEPORT_REDUCE_MAX, 1.0, 0.0,
                                  darg.data(), 8};
  sparseport_status st{};
  EXPECT_EQ(cuda_table().spmm(&x, "spmm.hub_split", &args, &st), SPARSEPORT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(st.message).find("spmm.row_warp"), std::string::npos) << st.message;
}

// Sizes as CudaSpmm.EveryVariantFloatInt32 (a mega-row of 8000, hubs, a fifth of the rows empty,
// repeated columns); at 0.1 600 x 500 with 4000 entries. F 1, 13, 32 (vec4 groups of 8), 64, 256
// (several tiles), and 36 with padded arg rows.
TEST(CudaSpmmArg, RandomFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, float>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 10);
  for (int64_t F : {1, 13, 32, 64, 256})
    check_arg_all(ctx, a, random_dense<float>(a.cols, F, F, kSeed + 11 + static_cast<uint64_t>(F)), kSeed + 12);
  check_arg_all(ctx, a, random_dense<float>(a.cols, 36, 36, kSeed + 13), kSeed + 14, 3);
}

TEST(CudaSpmmArg, RandomDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int64_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 20, false);
  for (int64_t F : {1, 16, 64})
    check_arg_all(ctx, a, random_dense<double>(a.cols, F, F, kSeed + 21 + static_cast<uint64_t>(F)), kSeed + 22, 1);
}

// Few distinct products (values in {-1, 0.5, 1, 2}, B in -3..3) over 40 columns, so most rows hold
// equal products, many of them from repeated columns: the first in storage order must win, for
// every column of F whichever lane holds it. Patterns tie even more (every value 1).
TEST(CudaSpmmArg, TiesGoToTheFirstEntry) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  for (int64_t F : {3, 32, 64, 100}) {
    auto a = skewed_csr<int32_t, float>(800, 40, 8000, 0.2, kSeed + 30);
    HostDense<float> b(a.cols, F, F);
    quantize(a, b, kSeed + 31 + static_cast<uint64_t>(F));
    check_arg_all(ctx, a, b, kSeed + 32);
    auto p = skewed_csr<int64_t, double>(800, 40, 8000, 0.2, kSeed + 33, false);
    HostDense<double> bp(p.cols, F, F);
    quantize(p, bp, kSeed + 34 + static_cast<uint64_t>(F));
    check_arg_all(ctx, p, bp, kSeed + 35);
  }
}

// NaN in A's values and in B, infinities and zeros (inf * 0 = NaN): the first NaN product wins, and
// C holds NaN there; -inf products still have a winner (the first of them when all are -inf).
TEST(CudaSpmmArg, NaNAndInfinities) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  for (int64_t F : {5, 32}) {
    auto a = skewed_csr<int32_t, float>(1000, 60, 10000, 0.2, kSeed + 40);
    HostDense<float> b = random_dense<float>(a.cols, F, F, kSeed + 41);
    quantize(a, b, kSeed + 42);
    poison(a, b, kSeed + 43);
    check_arg_all(ctx, a, b, kSeed + 44);
    auto d = skewed_csr<int64_t, double>(1000, 60, 10000, 0.2, kSeed + 45);
    HostDense<double> bd = random_dense<double>(d.cols, F, F, kSeed + 46);
    poison(d, bd, kSeed + 47);
    check_arg_all(ctx, d, bd, kSeed + 48, 2);
  }
  // A column of B that is -inf everywhere: every product of a positive value is -inf.
  auto a = skewed_csr<int32_t, double>(300, 30, 2000, 0.1, kSeed + 49);
  for (double& v : a.values) v = std::abs(v) + 0.25;
  HostDense<double> b = random_dense<double>(a.cols, 4, 4, kSeed + 50);
  for (int64_t j = 0; j < b.rows; ++j) b(j, 2) = -std::numeric_limits<double>::infinity();
  check_arg_all(ctx, a, b, kSeed + 51);
}

// Every row empty but a few, and A without entries (the plugin's empty path): arg -1 there.
TEST(CudaSpmmArg, EmptyRowsAndNoEntries) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, float> a;
  a.rows = 70;
  a.cols = 20;
  a.rowptr.assign(71, 0);
  check_arg_all(ctx, a, random_dense<float>(a.cols, 8, 8, kSeed + 60), kSeed + 61, 1);
  HostCsr<int64_t, double> sparse;
  sparse.rows = 500;
  sparse.cols = 30;
  std::mt19937_64 rng(kSeed + 62);
  for (int64_t i = 0; i < sparse.rows; ++i) {
    if (i % 97 == 5)
      for (int t = 0; t < 5; ++t) {
        sparse.colind.push_back(static_cast<int64_t>(rng() % 30));
        sparse.values.push_back(static_cast<double>(rng() % 5) - 2.0);
      }
    sparse.rowptr.push_back(static_cast<int64_t>(sparse.colind.size()));
  }
  check_arg_all(ctx, sparse, random_dense<double>(sparse.cols, 12, 12, kSeed + 63), kSeed + 64);
}

// One row of 100 000 entries (at 0.1: 20 000) among 64, every value 1 and B in -3..3, so that each
// column's extreme ties all along the row; B's column 0 constant (every product of the row equal:
// the row's first entry wins max and min); column 499 of A used only by two entries at 90% and 95%
// of the row, where B(499, 1) is NaN (the first of them wins column 1). The other rows take
// values from a few levels.
template <class I, class V>
void check_mega_row(const Context& ctx, int64_t F, uint64_t seed) {
  const int64_t deg = scaled(100000, 20000);
  const int64_t mega = 17;
  HostCsr<I, V> a;
  a.rows = 64;
  a.cols = 500;
  std::mt19937_64 rng(seed);
  const V levels[] = {V(-1), V(0.5), V(1), V(2)};
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t d = i == mega ? deg : static_cast<int64_t>(rng() % 6);
    for (int64_t t = 0; t < d; ++t) {
      const bool late = i == mega && (t == deg * 9 / 10 || t == deg * 19 / 20);
      a.colind.push_back(static_cast<I>(late ? 499 : rng() % 499));
      a.values.push_back(i == mega ? V(1) : levels[rng() % 4]);
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  HostDense<V> b(a.cols, F, F);
  for (int64_t j = 0; j < b.rows; ++j)
    for (int64_t f = 0; f < F; ++f) b(j, f) = f == 0 ? V(3) : static_cast<V>(static_cast<int64_t>(rng() % 7) - 3);
  if (F > 1) b(499, 1) = std::numeric_limits<V>::quiet_NaN();
  check_arg_all(ctx, a, b, seed + 2);
}

TEST(CudaSpmmArg, MegaRow) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_mega_row<int32_t, float>(ctx, 8, kSeed + 70);
  check_mega_row<int32_t, float>(ctx, 64, kSeed + 71);
  check_mega_row<int64_t, double>(ctx, 33, kSeed + 72);
}

// ---- csr_transpose's perm --------------------------------------------------------------------------

template <class I, class V>
void check_transpose_perm(const Context& ctx, const HostCsr<I, V>& a, uint64_t seed) {
  SCOPED_TRACE("csr_transpose with perm, " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + ", nnz " +
               std::to_string(a.nnz()) + (a.is_pattern() ? ", pattern" : "") + ", seed " + std::to_string(seed));
  const int64_t nnz = a.nnz();
  const bool values = !a.is_pattern();
  std::vector<I> want_rowptr(static_cast<size_t>(a.cols + 1)), want_colind(static_cast<size_t>(nnz)),
      want_perm(static_cast<size_t>(nnz));
  std::vector<V> want_values(values ? static_cast<size_t>(nnz) : 0);
  const sparseport_exec none{};
  sparseport_status st{};
  const sparseport_transpose_args host{
      abi_of(a.view()),
      {a.cols, a.rows, nnz, want_rowptr.data(), want_colind.data(), values ? want_values.data() : nullptr,
       index_code<I>(), static_cast<int32_t>(value_type_of<V>())},
      want_perm.data()};
  expect_ok(reference_table().csr_transpose(&none, "csr_transpose.serial", &host, &st), st, "reference csr_transpose");

  const auto da = to_device(ctx, a);
  Buffer rp = ctx.allocate(want_rowptr.size() * sizeof(I)), ci = ctx.allocate(std::max<size_t>(1, want_colind.size()) * sizeof(I)),
         pm = ctx.allocate(std::max<size_t>(1, want_perm.size()) * sizeof(I)),
         vv = ctx.allocate(std::max<size_t>(1, want_values.size()) * sizeof(V));
  const sparseport_exec x = ctx.exec();
  for (bool with_perm : {true, false}) {
    const sparseport_transpose_args dev{
        abi_of(da.view),
        {a.cols, a.rows, nnz, rp.data(), ci.data(), values ? vv.data() : nullptr, index_code<I>(),
         static_cast<int32_t>(value_type_of<V>())},
        with_perm ? pm.data() : nullptr};
    expect_ok(cuda_table().csr_transpose(&x, "csr_transpose.device", &dev, &st), st, "cuda csr_transpose");
    EXPECT_EQ(download<I>(ctx, rp.data(), want_rowptr.size()), want_rowptr);
    EXPECT_EQ(download<I>(ctx, ci.data(), want_colind.size()), want_colind);
    if (values) {
      EXPECT_EQ(download<V>(ctx, vv.data(), want_values.size()), want_values);
    }
    if (with_perm) {
      EXPECT_EQ(download<I>(ctx, pm.data(), want_perm.size()), want_perm);
    }
  }
}

TEST(CudaTransposePerm, EqualsTheReference) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_transpose_perm(ctx, scaled_skewed_csr<int32_t, float>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 80),
                       kSeed + 80);
  check_transpose_perm(ctx, scaled_skewed_csr<int64_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 81, false),
                       kSeed + 81);
  // Many rows in one column (a row of A^T longer than any of A's), repeated columns.
  auto hub = skewed_csr<int32_t, double>(2000, 300, 12000, 0.0, kSeed + 82);
  for (size_t e = 0; e < hub.colind.size(); e += 3) hub.colind[e] = 7;
  check_transpose_perm(ctx, hub, kSeed + 82);
  HostCsr<int64_t, float> empty;
  empty.rows = 10;
  empty.cols = 12;
  empty.rowptr.assign(11, 0);
  check_transpose_perm(ctx, empty, kSeed + 83);
}

// ---- spmm_arg_backward ---------------------------------------------------------------------------

enum class DbPath { scatter, gather_given, gather_built };
const char* path_name(DbPath p) {
  return p == DbPath::scatter ? "atomic scatter" : p == DbPath::gather_given ? "gather over the given A^T"
                                                                              : "gather over an A^T built (deterministic)";
}

// A forward on the host (the reference, with arg), then the backward by the reference and by the
// cuda plugin on every path; dB and dvalues within rounding of the reference's double sums, the
// gathers the same bits on a second run, and the padding of dB and dvalues untouched.
template <class I, class V>
void check_backward(const Context& ctx, const HostCsr<I, V>& a, int64_t F, Reduce r, uint64_t seed,
                    bool ask_db = true, bool ask_dv = true) {
  SCOPED_TRACE(std::string("spmm_arg_backward, ") + name(r) + ", F " + std::to_string(F) + ", " +
               std::to_string(a.rows) + "x" + std::to_string(a.cols) + ", nnz " + std::to_string(a.nnz()) +
               (a.is_pattern() ? ", pattern" : "") + (ask_db ? ", dB" : "") + (ask_dv ? ", dvalues" : "") +
               ", seed " + std::to_string(seed));
  const int64_t m = a.rows, k = a.cols, nnz = a.nnz();
  const int64_t ldarg = F + 1, lddc = F + 2, lddb = F + 3, lddv = 2;
  const HostDense<V> b = random_dense<V>(k, F, F, seed);
  const HostDense<V> dc = random_dense<V>(m, F, lddc, seed + 1);
  const sparseport_exec none{};
  sparseport_status st{};
  HostDense<V> c(m, F, F);
  std::vector<I> arg(static_cast<size_t>(m * ldarg), I(-5));
  const sparseport_spmm_args fwd{abi_of(a.view()), abi_of(b.view()), abi_of(c.mut()), static_cast<int32_t>(r), 1.0, 0.0,
                                 arg.data(), ldarg};
  expect_ok(reference_table().spmm(&none, "spmm.serial", &fwd, &st), st, "reference spmm (forward)");

  const V nan = std::numeric_limits<V>::quiet_NaN();
  HostDense<V> want_db(k, F, lddb, nan);
  // The reference writes dvalues contiguously (it does not read dvalues.ld), so its copy has ld 1;
  // the device's has ld 2.
  HostDense<V> want_dv(nnz, 1, 1, nan);
  const sparseport_spmm_arg_backward_args host{abi_of(a.view()),
                                               abi_of(b.view()),
                                               abi_of(dc.view()),
                                               arg.data(),
                                               ldarg,
                                               abi_of(want_db.mut()),
                                               abi_of(want_dv.mut()),
                                               nullptr,
                                               nullptr,
                                               nullptr};
  expect_ok(reference_table().spmm_arg_backward(&none, &host, &st), st, "reference spmm_arg_backward");

  // Rounding allowance: the magnitudes of the terms of each sum, and their count.
  std::vector<double> db_scale(static_cast<size_t>(k * F), 0.0), db_terms(static_cast<size_t>(k * F), 0.0);
  std::vector<double> dv_scale(static_cast<size_t>(nnz), 0.0), dv_terms(static_cast<size_t>(nnz), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t f = 0; f < F; ++f) {
      const int64_t e = arg[static_cast<size_t>(i * ldarg + f)];
      if (e < 0) continue;
      const int64_t j = a.colind[static_cast<size_t>(e)];
      db_scale[static_cast<size_t>(j * F + f)] += std::abs(double(dc(i, f)) * value_of(a, e));
      db_terms[static_cast<size_t>(j * F + f)] += 1.0;
      dv_scale[static_cast<size_t>(e)] += std::abs(double(dc(i, f)) * double(b(j, f)));
      dv_terms[static_cast<size_t>(e)] += 1.0;
    }

  const auto da = to_device(ctx, a);
  const DevDense<V> d_b = to_device(ctx, b), d_dc = to_device(ctx, dc);
  const Buffer d_arg = upload(ctx, arg);
  // A^T with perm, by the cuda plugin (its perm is checked against the reference above).
  Buffer at_rp = ctx.allocate(static_cast<size_t>(k + 1) * sizeof(I)),
         at_ci = ctx.allocate(static_cast<size_t>(std::max<int64_t>(nnz, 1)) * sizeof(I)),
         at_pm = ctx.allocate(static_cast<size_t>(std::max<int64_t>(nnz, 1)) * sizeof(I));
  {
    sparseport_csr pattern = abi_of(da.view);
    pattern.values = nullptr;
    const sparseport_transpose_args t{pattern,
                                      {k, m, nnz, at_rp.data(), at_ci.data(), nullptr, index_code<I>(),
                                       static_cast<int32_t>(value_type_of<V>())},
                                      at_pm.data()};
    const sparseport_exec x = ctx.exec();
    expect_ok(cuda_table().csr_transpose(&x, "csr_transpose.device", &t, &st), st, "cuda csr_transpose (A^T)");
  }

  for (DbPath path : {DbPath::scatter, DbPath::gather_given, DbPath::gather_built}) {
    SCOPED_TRACE(path_name(path));
    std::vector<V> first_db, first_dv;
    for (int run = 0; run < (path == DbPath::scatter ? 1 : 2); ++run) {
      const DevDense<V> d_db = to_device(ctx, HostDense<V>(k, F, lddb, nan));
      const DevDense<V> d_dv = to_device(ctx, HostDense<V>(nnz, 1, lddv, nan));
      sparseport_exec x = ctx.exec();
      if (path == DbPath::gather_built) x.flags |= SPARSEPORT_EXEC_DETERMINISTIC;
      const bool given = path == DbPath::gather_given;
      sparseport_dense_mut out_db = abi_of(d_db.mut());
      sparseport_dense_mut out_dv = abi_of(d_dv.mut());
      if (!ask_db) out_db.data = nullptr;
      if (!ask_dv) out_dv.data = nullptr;
      const sparseport_spmm_arg_backward_args dev{abi_of(da.view),
                                                  abi_of(d_b.view()),
                                                  abi_of(d_dc.view()),
                                                  d_arg.data(),
                                                  ldarg,
                                                  out_db,
                                                  out_dv,
                                                  given ? at_rp.data() : nullptr,
                                                  given ? at_ci.data() : nullptr,
                                                  given ? at_pm.data() : nullptr};
      expect_ok(cuda_table().spmm_arg_backward(&x, &dev, &st), st, "cuda spmm_arg_backward");
      const HostDense<V> got_db = to_host(ctx, d_db), got_dv = to_host(ctx, d_dv);
      if (ask_db) {
        for (int64_t j = 0; j < k; ++j)
          for (int64_t f = 0; f < lddb; ++f) {
            const double g = double(got_db(j, f));
            if (f >= F) {
              ASSERT_TRUE(std::isnan(g)) << "dB[" << j << "," << f << "] is padding but was written: " << g;
              continue;
            }
            const size_t s = static_cast<size_t>(j * F + f);
            const double w = double(want_db(j, f));
            const double tol = sparseport_test::tolerance<V>(db_scale[s], db_terms[s], 8.0);
            ASSERT_LE(std::abs(g - w), tol) << "dB[" << j << "," << f << "] = " << g << " but the reference gives "
                                            << w << " (" << db_terms[s] << " terms)";
          }
        if (run == 0) first_db = got_db.data;
        else EXPECT_EQ(std::memcmp(first_db.data(), got_db.data.data(), first_db.size() * sizeof(V)), 0)
            << "dB differs between two runs of a gather";
      } else {
        for (const V& v : got_db.data) ASSERT_TRUE(std::isnan(double(v))) << "dB was not asked for but was written";
      }
      if (ask_dv) {
        for (int64_t e = 0; e < nnz; ++e) {
          const double g = double(got_dv(e, 0)), w = double(want_dv(e, 0));
          const double tol = sparseport_test::tolerance<V>(dv_scale[static_cast<size_t>(e)], dv_terms[static_cast<size_t>(e)], 8.0);
          ASSERT_LE(std::abs(g - w), tol) << "dvalues[" << e << "] = " << g << " but the reference gives " << w << " ("
                                          << dv_terms[static_cast<size_t>(e)] << " terms)";
          ASSERT_TRUE(std::isnan(double(got_dv(e, 1)))) << "dvalues padding at entry " << e << " was written";
        }
        if (run == 0) first_dv = got_dv.data;
        else EXPECT_EQ(std::memcmp(first_dv.data(), got_dv.data.data(), first_dv.size() * sizeof(V)), 0)
            << "dvalues differ between two runs";
      } else {
        for (const V& v : got_dv.data) ASSERT_TRUE(std::isnan(double(v))) << "dvalues were not asked for but were written";
      }
    }
  }
}

// A skewed matrix (at full scale a mega-row of 8000 and hubs of 600; at 0.1 600 x 500 with 4000
// entries), F 1, 7 (one tile of 4-lane groups), 64, 130 and 300 (several tiles of 32-lane groups).
TEST(CudaSpmmArgBackward, DoubleInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 90);
  for (int64_t F : {1, 7, 64, 130, 300})
    for (Reduce r : {Reduce::max, Reduce::min}) check_backward(ctx, a, F, r, kSeed + 91);
}

TEST(CudaSpmmArgBackward, DoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int64_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 92, false);
  for (int64_t F : {4, 64}) check_backward(ctx, a, F, Reduce::max, kSeed + 93);
}

TEST(CudaSpmmArgBackward, FloatAndOneGradientAtATime) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, float>({2000, 1800, 12000}, {500, 450, 4000}, 0.3, kSeed + 94);
  check_backward(ctx, a, 32, Reduce::max, kSeed + 95);
  check_backward(ctx, a, 32, Reduce::min, kSeed + 96, true, false);
  check_backward(ctx, a, 32, Reduce::max, kSeed + 97, false, true);
  const auto b = scaled_skewed_csr<int64_t, float>({2000, 1800, 12000}, {500, 450, 4000}, 0.3, kSeed + 98, false);
  check_backward(ctx, b, 20, Reduce::min, kSeed + 99);
}

// A third of the entries in column 7 (one row of A^T thousands long), and A without entries.
TEST(CudaSpmmArgBackward, HubColumnAndNoEntries) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  auto hub = skewed_csr<int32_t, double>(2000, 300, scaled(30000, 6000), 0.1, kSeed + 100);
  for (size_t e = 0; e < hub.colind.size(); e += 3) hub.colind[e] = 7;
  check_backward(ctx, hub, 48, Reduce::max, kSeed + 101);
  HostCsr<int64_t, double> empty;
  empty.rows = 20;
  empty.cols = 15;
  empty.rowptr.assign(21, 0);
  check_backward(ctx, empty, 8, Reduce::min, kSeed + 102);
}

TEST(CudaSpmmArgBackward, PartOfTheTransposeIsRefused) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = skewed_csr<int32_t, float>(50, 40, 300, 0.1, kSeed + 110);
  const auto da = to_device(ctx, a);
  const DevDense<float> dc = to_device(ctx, random_dense<float>(50, 8, 8, kSeed + 111));
  const DevDense<float> db = to_device(ctx, HostDense<float>(40, 8, 8, 0.0f));
  const Buffer darg = upload(ctx, std::vector<int32_t>(50 * 8, -1));
  const Buffer rp = upload(ctx, std::vector<int32_t>(41, 0));
  const sparseport_exec x = ctx.exec();
  const sparseport_spmm_arg_backward_args args{abi_of(da.view), {0, 0, 0, nullptr, SPARSEPORT_F32}, abi_of(dc.view()),
                                               darg.data(),  8,
                                               abi_of(db.mut()), {0, 0, 0, nullptr, SPARSEPORT_F32},
                                               rp.data(),    nullptr,
                                               nullptr};
  sparseport_status st{};
  EXPECT_EQ(cuda_table().spmm_arg_backward(&x, &args, &st), SPARSEPORT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(st.message).find("at_perm"), std::string::npos) << st.message;
}

}  // namespace
