// SPDX-License-Identifier: Apache-2.0
// Native 16-bit values (ABI 1.7, SPARSEPORT_VARIANT_VALUES16) in the cuda plugin: every variant
// flagged VALUES16, requested by name, on f16 and bf16 with int32 and int64 indices, against a
// double oracle computed from the 16-bit inputs themselves (so only the kernel's float32
// arithmetic and its one rounding of the result are measured):
//  - spmm (row_warp_vec4, row_warp, hub_split, vector_rows, merge_path, cusparse_spmv, cusparse):
//    F in {1, 3, 8, 32, 47, 64, 100, 256} where the variant applies (hub_split: 16-byte vectors at
//    F % 8 == 0, strided columns at 47 and 100), sum / mean / max / min (cuSPARSE:
//    sum), beta 0 (C filled with NaN first, which must not leak in) and beta 0.5 with alpha 1.25;
//    A with empty rows, short rows, a hub of 300 entries (one CTA item of hub_split) and one of
//    1500 (several items; merge_path: a row across chunks), and a pattern A (no values);
//  - sddmm (nnz_balanced, row_warp, vec4): the same F, A's values and a pattern;
//  - csr_attention.fused: F = Fv in {1, 3, 8, 32, 64, 100, 256} and F != Fv, shapes that take each
//    of its paths (16-byte vectors at 4 to 32 lanes and 1, 2 or 4 tiles a lane, one value a lane
//    at 4 to 32 lanes and up to 8 tiles, the wide kernels with their passes over Fv; misaligned
//    and padded rows), on a graph with empty rows, short rows, a row of 300 and one of 3000
//    entries, scale 0.125; the same bits twice and in deterministic mode; and the non-finite
//    scores (-inf among finite ones weighs 0; NaN, +inf and rows of -inf only give NaN);
//  - Decision::via_f32 is false after each call: the variant ran on the 16-bit arrays.
// Tolerance: |got - want| <= 2 ulp of the 16-bit type at |want| + max(2^-20, n 2^-24) x the sum of
// the magnitudes of the n terms the float32 accumulation added (n 2^-24: the worst case of n float32
// additions, which the 1500-entry hub and F = 256 dot products need where their sum cancels) + the
// 16-bit type's smallest subnormal; cuSPARSE, whose alpha/beta epilogue after ALG3 rounds twice,
// 3 ulp + 1 ulp of the magnitude.
// Without a GPU every test skips and says why.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_test.hpp"
#include "values16_math.hpp"
#include "sparseport/half.hpp"
#include "sparseport/plan.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261201;
const std::vector<int64_t> kFeatures = {1, 3, 8, 32, 47, 64, 100, 256};

// m rows: every 7th empty, row 5 a hub of 300 entries, row 11 a hub of 1500, the rest 1 to 12.
template <class I, class H>
HostCsr<I, H> make_matrix(int64_t m, int64_t k, bool pattern, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, k - 1), deg(1, 12);
  HostCsr<I, H> a;
  a.rows = m;
  a.cols = k;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t d = i == 5 ? 300 : i == 11 ? 1500 : (i % 7 == 3 ? 0 : deg(rng));
    for (int64_t t = 0; t < d; ++t) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (!pattern) a.values.push_back(rnd16<H>(rng));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

template <class H>
HostDense<H> make_dense_h(int64_t rows, int64_t cols, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  HostDense<H> d(rows, cols);
  for (auto& x : d.data) x = rnd16<H>(rng, lo, hi);
  return d;
}

struct SpmmCase {
  std::string variant;
  bool vendor = false;
};

const std::vector<SpmmCase> kSpmmVariants = {
    {"spmm.row_warp_vec4"}, {"spmm.row_warp"},         {"spmm.hub_split"},     {"spmm.vector_rows"},
    {"spmm.merge_path"},    {"spmm.cusparse_spmv", true}, {"spmm.cusparse", true},
};

// Whether the variant takes this call (the plugin's `applies` for 16-bit values; buffers from
// Context::allocate are 16-byte aligned and the dense operands here have ld == F).
bool spmm_applies(const std::string& v, int64_t F, Reduce r) {
  if (v == "spmm.row_warp_vec4") return F % 8 == 0;
  if (v == "spmm.vector_rows") return F <= 16;
  if (v == "spmm.cusparse_spmv") return F == 1 && r == Reduce::sum;
  if (v == "spmm.cusparse") return r == Reduce::sum;
  return true;
}

// The float32 accumulation's error bound for n terms of total magnitude mag.
double acc_error(double mag, int64_t n) {
  return mag * std::max(std::ldexp(1.0, -20), static_cast<double>(n) * std::ldexp(1.0, -24));
}

// want[i,f], mag[i,f] (the magnitude of what was added) and err[i,f] (acc_error of it) from the
// 16-bit inputs.
template <class I, class H>
void spmm_oracle(const HostCsr<I, H>& a, const HostDense<H>& b, const HostDense<H>& c0, Reduce r, double alpha,
                 double beta, HostDense<double>& want, HostDense<double>& bound, HostDense<double>& err) {
  const int64_t F = b.cols;
  want = HostDense<double>(a.rows, F);
  bound = HostDense<double>(a.rows, F);
  err = HostDense<double>(a.rows, F);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
    for (int64_t f = 0; f < F; ++f) {
      const double old = beta != 0.0 ? to_d(c0(i, f)) : 0.0;
      if (e0 == e1) {
        want(i, f) = beta * old;
        bound(i, f) = std::abs(beta * old);
        err(i, f) = acc_error(bound(i, f), 1);
        continue;
      }
      double acc = 0.0, mag = 0.0;
      for (int64_t e = e0; e < e1; ++e) {
        const double w = a.is_pattern() ? 1.0 : to_d(a.values[static_cast<size_t>(e)]);
        const double p = w * to_d(b(a.colind[static_cast<size_t>(e)], f));
        mag += std::abs(p);
        if (r == Reduce::sum || r == Reduce::mean)
          acc += p;
        else if (e == e0 || (r == Reduce::max ? p > acc : p < acc))
          acc = p;
      }
      if (r == Reduce::mean) {
        acc /= static_cast<double>(e1 - e0);
        mag /= static_cast<double>(e1 - e0);
      }
      const int64_t n = r == Reduce::max || r == Reduce::min ? 2 : e1 - e0 + 2;
      if (r == Reduce::max || r == Reduce::min) mag = std::abs(acc);
      want(i, f) = alpha * acc + beta * old;
      bound(i, f) = std::abs(alpha) * mag + std::abs(beta * old);
      err(i, f) = acc_error(bound(i, f), n);
    }
  }
}

// err: the accumulation's bound (acc_error); vendor: cuSPARSE's extra rounding (1 ulp of bound).
template <class H>
::testing::AssertionResult close16(double got, double want, double bound, double err, bool vendor) {
  const double tol =
      (vendor ? 3 : 2) * ulp16<H>(std::abs(want)) + err + tiny16<H>() + (vendor ? ulp16<H>(bound) : 0.0);
  if (std::isfinite(got) && std::abs(got - want) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (tolerance " << tol << ")";
}

// C against the oracle element by element (close16), the first 5 misses reported.
template <class H>
void expect_spmm_close(const HostDense<H>& got, const HostDense<double>& want, const HostDense<double>& bound,
                       const HostDense<double>& err, bool vendor) {
  int bad = 0;
  for (int64_t i = 0; i < want.rows && bad < 5; ++i)
    for (int64_t f = 0; f < want.cols && bad < 5; ++f) {
      const auto ok = close16<H>(to_d(got(i, f)), want(i, f), bound(i, f), err(i, f), vendor);
      if (!ok) {
        ++bad;
        ADD_FAILURE() << "C[" << i << "," << f << "]: " << ok.message();
      }
    }
}

template <class I, class H>
void run_spmm_suite(bool pattern) {
  Context ctx = Context::create("cuda");
  const int64_t m = 97, k = 131;
  const HostCsr<I, H> a = make_matrix<I, H>(m, k, pattern, kSeed + sizeof(I) + (pattern ? 7 : 0));
  const DevCsr<I, H> da = to_device(ctx, a);
  for (const int64_t F : kFeatures) {
    const HostDense<H> b = make_dense_h<H>(k, F, kSeed + 100 + static_cast<uint64_t>(F));
    const HostDense<H> c_init = make_dense_h<H>(m, F, kSeed + 200 + static_cast<uint64_t>(F));
    HostDense<H> c_nan(m, F);
    for (auto& x : c_nan.data) x = H(std::numeric_limits<float>::quiet_NaN());
    const DevDense<H> db = to_device(ctx, b);
    for (const Reduce r : {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min}) {
      for (const double beta : {0.0, 0.5}) {
        const double alpha = beta == 0.0 ? 1.0 : 1.25;
        const HostDense<H>& c0 = beta == 0.0 ? c_nan : c_init;
        HostDense<double> want, bound, err;
        spmm_oracle(a, b, c0, r, alpha, beta, want, bound, err);
        for (const SpmmCase& vc : kSpmmVariants) {
          if (!spmm_applies(vc.variant, F, r)) continue;
          SCOPED_TRACE(vc.variant + " F=" + std::to_string(F) + " reduce=" + name(r) + " beta=" + std::to_string(beta) +
                       (sizeof(I) == 8 ? " int64" : " int32") + (std::is_same_v<H, half> ? " f16" : " bf16") +
                       (pattern ? " pattern" : ""));
          DevDense<H> dc = to_device(ctx, c0);
          SpmmOptions opt;
          opt.reduce = r;
          opt.alpha = alpha;
          opt.beta = beta;
          opt.variant = vc.variant;
          // cuSPARSE's own 16-bit path only on request (the plugin serves 16-bit calls of it on
          // float32 copies: its partial sums saturate on long rows); the rows here are <= 1500.
          if (vc.vendor) setenv("SPARSEPORT_CUSPARSE16", "1", 1);
          spmm(ctx, da.view, db.view(), dc.mut(), opt);
          if (vc.vendor) unsetenv("SPARSEPORT_CUSPARSE16");
          const Decision d = last_decision();
          EXPECT_EQ(d.variant, vc.variant);
          EXPECT_FALSE(d.via_f32) << vc.variant << " ran through float32 copies, not natively";
          expect_spmm_close(to_host(ctx, dc), want, bound, err, vc.vendor);
        }
      }
    }
  }
}

TEST(CudaValues16, SpmmF16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int32_t, half>(false);
}
TEST(CudaValues16, SpmmF16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int64_t, half>(false);
}
TEST(CudaValues16, SpmmBf16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int32_t, bfloat16>(false);
}
TEST(CudaValues16, SpmmBf16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int64_t, bfloat16>(false);
}
TEST(CudaValues16, SpmmPatternF16) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int32_t, half>(true);
}
TEST(CudaValues16, SpmmPatternBf16) {
  CUDA_TEST_REQUIRE_GPU();
  run_spmm_suite<int64_t, bfloat16>(true);
}

// hub_split at F = 32 in 16 bits gives a row a team of 2, 4 or 8 slices of 4 lanes on matrices
// that leave the GPU partly idle: 8 on a tiny matrix (the suite above, 97 rows), 4 and 2 on one of
// 6000 rows (more than a tiny one on a GPU of up to 168 SMs, fewer than two waves of 4-lane groups)
// by its mean row, about 24 and 13 entries here; every 500th row is 900 entries long (a CTA item
// above the team's threshold of 2 or 4 x 64-96 entries), every 13th empty. Sum and max, beta 0.
TEST(CudaValues16, SpmmHubSplitTeamsAtF32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const int64_t m = 6000, k = 5000, F = 32;
  for (const int64_t mean : {24, 12}) {
    std::mt19937_64 rng(kSeed + static_cast<uint64_t>(mean));
    std::uniform_int_distribution<int64_t> col(0, k - 1), deg(mean / 2, mean + mean / 2);
    HostCsr<int32_t, bfloat16> a;
    a.rows = m;
    a.cols = k;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t d = i % 500 == 7 ? 900 : (i % 13 == 4 ? 0 : deg(rng));
      for (int64_t t = 0; t < d; ++t) {
        a.colind.push_back(static_cast<int32_t>(col(rng)));
        a.values.push_back(rnd16<bfloat16>(rng));
      }
      a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
    }
    const HostDense<bfloat16> b = make_dense_h<bfloat16>(k, F, kSeed + 300 + static_cast<uint64_t>(mean));
    HostDense<bfloat16> c0(m, F);
    for (auto& x : c0.data) x = bfloat16(std::numeric_limits<float>::quiet_NaN());
    const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
    const DevDense<bfloat16> db = to_device(ctx, b);
    for (const Reduce r : {Reduce::sum, Reduce::max}) {
      SCOPED_TRACE("mean row " + std::to_string(mean) + " reduce=" + name(r));
      HostDense<double> want, bound, err;
      spmm_oracle(a, b, c0, r, 1.0, 0.0, want, bound, err);
      DevDense<bfloat16> dc = to_device(ctx, c0);
      SpmmOptions opt;
      opt.reduce = r;
      opt.variant = "spmm.hub_split";
      spmm(ctx, da.view, db.view(), dc.mut(), opt);
      EXPECT_FALSE(last_decision().via_f32);
      expect_spmm_close(to_host(ctx, dc), want, bound, err, false);
    }
  }
}

// A matrix without entries: C = beta * C in 16 bits (the plugin runs row_warp's empty rows).
TEST(CudaValues16, SpmmNoEntries) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, half> a;
  a.rows = 5;
  a.cols = 4;
  a.rowptr.assign(6, 0);
  const DevCsr<int32_t, half> da = to_device(ctx, a);
  const HostDense<half> b = make_dense_h<half>(4, 8, kSeed + 1);
  const HostDense<half> c0 = make_dense_h<half>(5, 8, kSeed + 2);
  const DevDense<half> db = to_device(ctx, b);
  for (const std::string v : {"spmm.row_warp_vec4", "spmm.row_warp"}) {
    DevDense<half> dc = to_device(ctx, c0);
    SpmmOptions opt;
    opt.beta = 0.5;
    opt.variant = v;
    spmm(ctx, da.view, db.view(), dc.mut(), opt);
    const HostDense<half> got = to_host(ctx, dc);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t f = 0; f < 8; ++f) EXPECT_EQ(to_d(got(i, f)), 0.5 * to_d(c0(i, f))) << v << " C[" << i << "," << f << "]";
  }
}

// ---- sddmm ---------------------------------------------------------------------------------------

bool sddmm_applies(const std::string& v, int64_t F) { return v != "sddmm.vec4" || F % 8 == 0; }

template <class I, class H>
void run_sddmm_suite(bool pattern) {
  Context ctx = Context::create("cuda");
  const int64_t m = 97, k = 131;
  const HostCsr<I, H> a = make_matrix<I, H>(m, k, pattern, kSeed + 300 + sizeof(I));
  const DevCsr<I, H> da = to_device(ctx, a);
  for (const int64_t F : kFeatures) {
    const HostDense<H> x = make_dense_h<H>(m, F, kSeed + 400 + static_cast<uint64_t>(F));
    const HostDense<H> y = make_dense_h<H>(k, F, kSeed + 500 + static_cast<uint64_t>(F));
    const DevDense<H> dx = to_device(ctx, x), dy = to_device(ctx, y);
    std::vector<double> want(static_cast<size_t>(a.nnz())), bound(want.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
        const int64_t c = a.colind[static_cast<size_t>(e)];
        double dot = 0.0, mag = 0.0;
        for (int64_t f = 0; f < F; ++f) {
          const double p = to_d(x(i, f)) * to_d(y(c, f));
          dot += p;
          mag += std::abs(p);
        }
        const double w = a.is_pattern() ? 1.0 : to_d(a.values[static_cast<size_t>(e)]);
        want[static_cast<size_t>(e)] = w * dot;
        bound[static_cast<size_t>(e)] = std::abs(w) * mag;
      }
    for (const std::string v : {"sddmm.nnz_balanced", "sddmm.row_warp", "sddmm.vec4"}) {
      if (!sddmm_applies(v, F)) continue;
      SCOPED_TRACE(v + " F=" + std::to_string(F) + (sizeof(I) == 8 ? " int64" : " int32") +
                   (std::is_same_v<H, half> ? " f16" : " bf16") + (pattern ? " pattern" : ""));
      HostDense<H> out0(a.nnz(), 1);
      for (auto& o : out0.data) o = H(std::numeric_limits<float>::quiet_NaN());
      DevDense<H> dout = to_device(ctx, out0);
      OpOptions opt;
      opt.variant = v;
      sddmm(ctx, da.view, dx.view(), dy.view(), dout.mut(), opt);
      const Decision d = last_decision();
      EXPECT_EQ(d.variant, v);
      EXPECT_FALSE(d.via_f32) << v << " ran through float32 copies, not natively";
      const HostDense<H> got = to_host(ctx, dout);
      int bad = 0;
      for (int64_t e = 0; e < a.nnz() && bad < 5; ++e) {
        const double b = bound[static_cast<size_t>(e)];
        const auto ok = close16<H>(to_d(got(e, 0)), want[static_cast<size_t>(e)], b, acc_error(b, F + 1), false);
        if (!ok) {
          ++bad;
          ADD_FAILURE() << "out[" << e << "]: " << ok.message();
        }
      }
    }
  }
}

TEST(CudaValues16, SddmmF16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_sddmm_suite<int32_t, half>(false);
}
TEST(CudaValues16, SddmmF16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_sddmm_suite<int64_t, half>(false);
}
TEST(CudaValues16, SddmmBf16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_sddmm_suite<int32_t, bfloat16>(false);
}
TEST(CudaValues16, SddmmBf16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_sddmm_suite<int64_t, bfloat16>(false);
}
TEST(CudaValues16, SddmmPatternBf16) {
  CUDA_TEST_REQUIRE_GPU();
  run_sddmm_suite<int32_t, bfloat16>(true);
}

// ---- csr_attention ---------------------------------------------------------------------------

// m rows over k keys: every 5th row empty, row 7 of 3000 entries, row 13 of 300, the rest 1 to 12
// (columns random, repeats allowed). A pattern: csr_attention ignores A's values.
template <class I, class H>
HostCsr<I, H> make_attention_graph(int64_t m, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, k - 1), deg(1, 12);
  HostCsr<I, H> a;
  a.rows = m;
  a.cols = k;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t d = i == 7 ? 3000 : i == 13 ? 300 : (i % 5 == 2 ? 0 : deg(rng));
    for (int64_t t = 0; t < d; ++t) a.colind.push_back(static_cast<I>(col(rng)));
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

// rows x cols with leading dimension ld, values in [-1, 1] (the padding too).
template <class H>
HostDense<H> make_padded_h(int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostDense<H> d(rows, cols, ld);
  for (auto& x : d.data) x = rnd16<H>(rng);
  return d;
}

// The double oracle of csr_attention from the 16-bit inputs, with the tolerance of each value:
//   2 ulp of the 16-bit type at |want| (out is rounded once)
//   + acc_error(mag, n + 2): the float32 sums of the n weights and weighted V rows, mag the
//     softmax-weighted sum of |v| (as spmm's bound)
//   + (4 x 2^-20 + 4 ds) x max |v| over the row's V rows: expf's error, and the scores' float32
//     error, at most ds = |scale| (F + 6) 2^-24 max_j sum_f |q_f k_jf| (fma chains of F / G terms
//     and log2 G shuffle additions, then the scale), which moves the normalised weights by a
//     factor of at most exp(2 ds) each
//   + the 16-bit type's smallest subnormal.
// Non-finite scores: a NaN or +inf score, or only -inf ones, make the row NaN (want NaN).
template <class I, class H>
void attention_oracle(const HostCsr<I, H>& a, const HostDense<H>& q, const HostDense<H>& k, const HostDense<H>& v,
                      double scale, HostDense<double>& want, HostDense<double>& tol) {
  const int64_t F = q.cols, Fv = v.cols;
  want = HostDense<double>(a.rows, Fv);
  tol = HostDense<double>(a.rows, Fv);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
    if (e0 == e1) {
      for (int64_t f = 0; f < Fv; ++f) tol(i, f) = tiny16<H>();
      continue;
    }
    std::vector<double> sc;
    double dot_mag = 0.0, vmax = 0.0;
    bool nan_row = false;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t c = a.colind[static_cast<size_t>(e)];
      double d = 0.0, mag = 0.0;
      for (int64_t f = 0; f < F; ++f) {
        const double p = to_d(q(i, f)) * to_d(k(c, f));
        d += p;
        mag += std::abs(p);
      }
      sc.push_back(scale * d);
      if (std::isfinite(mag)) dot_mag = std::max(dot_mag, mag);
      for (int64_t f = 0; f < Fv; ++f) vmax = std::max(vmax, std::abs(to_d(v(c, f))));
      nan_row = nan_row || std::isnan(sc.back()) || sc.back() == std::numeric_limits<double>::infinity();
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (const double x : sc) mx = std::max(mx, x);
    nan_row = nan_row || mx == -std::numeric_limits<double>::infinity();
    const double ds = std::abs(scale) * static_cast<double>(F + 6) * std::ldexp(1.0, -24) * dot_mag;
    std::vector<double> w(sc.size());
    double l = 0.0;
    for (size_t j = 0; j < sc.size(); ++j) {
      w[j] = nan_row ? 0.0 : std::exp(sc[j] - mx);  // -inf: 0
      l += w[j];
    }
    for (int64_t f = 0; f < Fv; ++f) {
      if (nan_row) {
        want(i, f) = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double acc = 0.0, mag = 0.0;
      for (int64_t e = e0; e < e1; ++e) {
        const double x = to_d(v(a.colind[static_cast<size_t>(e)], f));
        acc += w[static_cast<size_t>(e - e0)] * x;
        mag += w[static_cast<size_t>(e - e0)] * std::abs(x);
      }
      want(i, f) = acc / l;
      tol(i, f) = 2 * ulp16<H>(std::abs(want(i, f))) + acc_error(mag / l, e1 - e0 + 2) +
                  (4 * std::ldexp(1.0, -20) + 4 * ds) * vmax + tiny16<H>();
    }
  }
}

// got against the oracle: NaN where want is NaN, else within tol; at most 5 failures reported.
template <class H>
void expect_attention(const HostDense<H>& got, const HostDense<double>& want, const HostDense<double>& tol) {
  int bad = 0;
  for (int64_t i = 0; i < want.rows && bad < 5; ++i)
    for (int64_t f = 0; f < want.cols && bad < 5; ++f) {
      const double g = to_d(got(i, f)), w = want(i, f);
      const bool ok = std::isnan(w) ? std::isnan(g) : (std::isfinite(g) && std::abs(g - w) <= tol(i, f));
      if (!ok) {
        ++bad;
        ADD_FAILURE() << "out[" << i << "," << f << "]: got " << g << ", want " << w << " (tolerance " << tol(i, f)
                      << ")";
      }
    }
}

template <class H>
bool same_bits(const HostDense<H>& x, const HostDense<H>& y) {
  return x.data.size() == y.data.size() &&
         (x.data.empty() || std::memcmp(x.data.data(), y.data.data(), x.data.size() * sizeof(H)) == 0);
}

// F, Fv; offset: values in front of Q, K, V and out (2 bytes: rows not 16-byte aligned); pad:
// leading dimension minus columns.
struct AttnShape {
  int64_t F, Fv, offset = 0, pad = 0;
};

// The paths of attention_values16.cu each shape takes (G lanes, NT tiles a lane):
const std::vector<AttnShape> kAttnShapes = {
    {1, 1},           // one value a lane, G 4
    {3, 3},           // one value a lane, G 4
    {8, 8},           // vectors, G 4
    {12, 12},         // one value a lane, G 16
    {32, 32},         // vectors, G 4
    {64, 64},         // vectors, G 8
    {100, 100},       // one value a lane, G 32, NT 4
    {256, 256},       // vectors, G 32, NT 1
    {64, 32},         // vectors, G 8, lanes past Fv
    {32, 64},         // vectors, G 8, lanes past F
    {16, 200},        // vectors, G 32
    {512, 512},       // vectors, G 32, NT 2
    {1000, 1000},     // vectors, G 32, NT 4
    {1040, 24},       // vectors, wide: q read per tile, one pass over Fv
    {24, 1040},       // vectors, wide: two passes over Fv
    {64, 64, 0, 8},   // vectors, ld 72
    {64, 64, 0, 3},   // one value a lane (ld 67), G 32, NT 2
    {64, 64, 1, 0},   // one value a lane (misaligned), G 32, NT 2
    {200, 200, 1, 0}, // one value a lane, G 32, NT 8
    {300, 40, 1, 0},  // one value a lane, wide
    {40, 300, 1, 0},  // one value a lane, wide: two passes over Fv
};

template <class I, class H>
void run_attention_suite() {
  Context ctx = Context::create("cuda");
  const int64_t m = 97, nk = 131;
  const double scale = 0.125;
  const HostCsr<I, H> a = make_attention_graph<I, H>(m, nk, kSeed + 600 + sizeof(I));
  const DevCsr<I, H> da = to_device(ctx, a);
  for (const AttnShape& sh : kAttnShapes) {
    const uint64_t seed = kSeed + 700 + static_cast<uint64_t>(sh.F * 4096 + sh.Fv);
    const HostDense<H> q = make_padded_h<H>(m, sh.F, sh.F + sh.pad, seed);
    const HostDense<H> k = make_padded_h<H>(nk, sh.F, sh.F + sh.pad, seed + 1);
    const HostDense<H> v = make_padded_h<H>(nk, sh.Fv, sh.Fv + sh.pad, seed + 2);
    HostDense<H> out0(m, sh.Fv, sh.Fv + sh.pad);
    for (auto& x : out0.data) x = H(std::numeric_limits<float>::quiet_NaN());
    const DevDense<H> dq = to_device(ctx, q, sh.offset), dk = to_device(ctx, k, sh.offset),
                      dv = to_device(ctx, v, sh.offset);
    HostDense<double> want, tol;
    attention_oracle(a, q, k, v, scale, want, tol);
    SCOPED_TRACE("csr_attention.fused F=" + std::to_string(sh.F) + " Fv=" + std::to_string(sh.Fv) +
                 " offset=" + std::to_string(sh.offset) + " pad=" + std::to_string(sh.pad) +
                 (sizeof(I) == 8 ? " int64" : " int32") + (std::is_same_v<H, half> ? " f16" : " bf16"));
    HostDense<H> first;
    for (int run = 0; run < 2; ++run) {
      DevDense<H> dout = to_device(ctx, out0, sh.offset);
      csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), dout.mut(), {scale, "csr_attention.fused"});
      const Decision d = last_decision();
      EXPECT_EQ(d.variant, "csr_attention.fused");
      EXPECT_FALSE(d.via_f32) << "csr_attention.fused ran through float32 copies, not natively";
      const HostDense<H> got = to_host(ctx, dout);
      if (run == 0) {
        expect_attention(got, want, tol);
        first = got;
      } else {
        EXPECT_TRUE(same_bits(first, got)) << "two runs gave different bits";
      }
    }
  }
}

TEST(CudaValues16, AttentionF16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_suite<int32_t, half>();
}
TEST(CudaValues16, AttentionF16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_suite<int64_t, half>();
}
TEST(CudaValues16, AttentionBf16Int32) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_suite<int32_t, bfloat16>();
}
TEST(CudaValues16, AttentionBf16Int64) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_suite<int64_t, bfloat16>();
}

// Deterministic mode: the scheduler's own choice for 16-bit attention is csr_attention.fused,
// natively (no timing against the float32 path), with the bits of a call that named it.
TEST(CudaValues16, AttentionDeterministicMode) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const int64_t m = 97, nk = 131, F = 64, Fv = 32;
  const HostCsr<int32_t, bfloat16> a = make_attention_graph<int32_t, bfloat16>(m, nk, kSeed + 800);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  const DevDense<bfloat16> dq = to_device(ctx, make_dense_h<bfloat16>(m, F, kSeed + 801)),
                           dk = to_device(ctx, make_dense_h<bfloat16>(nk, F, kSeed + 802)),
                           dv = to_device(ctx, make_dense_h<bfloat16>(nk, Fv, kSeed + 803));
  DevDense<bfloat16> named = to_device(ctx, HostDense<bfloat16>(m, Fv));
  DevDense<bfloat16> chosen = to_device(ctx, HostDense<bfloat16>(m, Fv));
  csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), named.mut(), {0.125, "csr_attention.fused"});
  ctx.set_deterministic(true);
  for (int run = 0; run < 2; ++run) {
    csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), chosen.mut(), {0.125, ""});
    const Decision d = last_decision();
    EXPECT_EQ(d.variant, "csr_attention.fused");
    EXPECT_FALSE(d.via_f32) << "deterministic mode ran 16-bit attention on float32 copies";
    EXPECT_TRUE(same_bits(to_host(ctx, named), to_host(ctx, chosen)));
  }
}

// Non-finite scores, on both paths (F = 8: vectors; F = 3 and misaligned F = 8: one value a
// lane). Key 0 has K[0,0] = -inf (score -inf where q[i,0] > 0, +inf where q[i,0] < 0), key 6 a
// NaN; the rows put -inf first, in the middle, over more than a step of entries, alone, and next
// to NaN and +inf.
template <class H>
void run_attention_special(int64_t F, int64_t offset) {
  Context ctx = Context::create("cuda");
  const int64_t nk = 8, Fv = 8;
  const double scale = 0.125;
  const std::vector<std::vector<int32_t>> rows = {
      {0, 1, 2},                 // -inf first: softmax over keys 1 and 2
      {1, 0, 2, 3},              // -inf in the middle
      {0},                       // -inf only: NaN
      {0, 0},                    // -inf only: NaN
      {1, 6, 2},                 // NaN
      {1, 0},                    // q[5,0] < 0: +inf, NaN
      {},                        // empty: 0
      {3, 4, 0, 0, 5, 1, 2},     // -inf inside longer steps
      {0, 0, 0, 0, 0, 1},        // a whole step of -inf, then one finite score: V row 1
      {0, 0, 0, 0, 0, 0, 0, 6},  // -inf, then NaN
  };
  HostCsr<int32_t, H> a;
  a.rows = static_cast<int64_t>(rows.size());
  a.cols = nk;
  for (const auto& r : rows) {
    a.colind.insert(a.colind.end(), r.begin(), r.end());
    a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
  }
  const float inf = std::numeric_limits<float>::infinity();
  HostDense<H> q = make_dense_h<H>(a.rows, F, kSeed + 900), k = make_dense_h<H>(nk, F, kSeed + 901);
  const HostDense<H> v = make_dense_h<H>(nk, Fv, kSeed + 902);
  for (int64_t i = 0; i < a.rows; ++i) q(i, 0) = H(i == 5 ? -0.5f : 0.5f);
  k(0, 0) = H(-inf);
  k(6, 1) = H(std::numeric_limits<float>::quiet_NaN());
  HostDense<double> want, tol;
  attention_oracle(a, q, k, v, scale, want, tol);
  for (const int64_t i : {0, 1, 7, 8}) EXPECT_FALSE(std::isnan(want(i, 0))) << "the oracle's row " << i;
  for (const int64_t i : {2, 3, 4, 5, 9}) EXPECT_TRUE(std::isnan(want(i, 0))) << "the oracle's row " << i;
  const DevCsr<int32_t, H> da = to_device(ctx, a);
  const DevDense<H> dq = to_device(ctx, q, offset), dk = to_device(ctx, k, offset), dv = to_device(ctx, v, offset);
  HostDense<H> out0(a.rows, Fv);
  for (auto& x : out0.data) x = H(std::numeric_limits<float>::quiet_NaN());
  DevDense<H> dout = to_device(ctx, out0, offset);
  SCOPED_TRACE("F=" + std::to_string(F) + " offset=" + std::to_string(offset) +
               (std::is_same_v<H, half> ? " f16" : " bf16"));
  csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), dout.mut(), {scale, "csr_attention.fused"});
  EXPECT_FALSE(last_decision().via_f32);
  expect_attention(to_host(ctx, dout), want, tol);
}

TEST(CudaValues16, AttentionNonFiniteF16) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_special<half>(8, 0);
  run_attention_special<half>(3, 0);
  run_attention_special<half>(8, 1);
}
TEST(CudaValues16, AttentionNonFiniteBf16) {
  CUDA_TEST_REQUIRE_GPU();
  run_attention_special<bfloat16>(8, 0);
  run_attention_special<bfloat16>(3, 0);
  run_attention_special<bfloat16>(8, 1);
}

}  // namespace
