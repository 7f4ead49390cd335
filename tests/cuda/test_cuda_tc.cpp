// SPDX-License-Identifier: Apache-2.0
// spmm.tc_window (issue 33): the tensor-core SpMM on f16 / bf16 values, requested by name, against a
// float64 oracle computed from the 16-bit inputs themselves (plain loops here).
//  - CudaTcFormat (no GPU needed): the host model of the window format (tc_window_format.hpp): the
//    tile layout is the mma B fragment's and a permutation, the sizes of hand-made matrices
//    (duplicates, unsorted columns, empty windows, a split mega-row), the part length's cost model
//    (the chain against the split windows' scratch sums: shorter parts at F = 32 than at 128 on a
//    skewed input, 32 where the warps are all busy), the sort key's width.
//  - CudaTc (GPU): random, power-law with a 10^5-entry mega-row (several parts, summed through the
//    float32 scratch), empty windows, a matrix without entries, duplicate + unsorted columns, int64
//    indices, rectangular A (rows != cols both ways), a pattern A, F in {1, 7, 8, 15, 16, 33, 64, 100,
//    128}, alpha / beta (beta 0 with NaN in C, which must not leak in), sum and mean, every part length
//    on one plan (the scratch's vector reductions at slices of 16, 32 and 64), B and C with
//    ld > F and misaligned starts (the path without cp.async); A's values changed in place between
//    calls (the plan's tiles are refreshed); feature slices of 16, 32 and 64 giving the same bits; the
//    plan's sizes (its note) equal to the host model's; max / min and float32 refused with reasons.
//  - CudaTcTf32 (GPU): spmm.tc_window_tf32, float32 as TF32, only with the caller's consent, within
//    the TF32 bound below on random, power-law (split windows), padded and misaligned inputs, int32
//    and int64; without consent refused by name and never chosen.
//  - Accuracy on rows of 10^5 entries: bf16 ones sum to bf16(100000) exactly (a 16-bit accumulator
//    would stop at 256), f16 halves to f16(50000), random values within the bound below.
// Tolerance (derived): every product of two 16-bit values is exact in float32 (11 + 11 significant bits
// at most), so the error is the float32 accumulation's plus one rounding to 16 bits. The tensor cores
// add a k-group of 16 products and the accumulator with float32 significands but truncate the aligned
// addends instead of rounding to nearest (Fasi et al., "Numerical behavior of NVIDIA tensor cores",
// 2021), an error below 2^-23 relative per addition; an output takes n terms through at most n + P
// additions (P: the parts of a split window, added into the scratch with float32 atomics, each a
// round-to-nearest), and mean's division and alpha/beta add 2 roundings of 2^-24. So
//   |got - want| <= 2 ulp16(|want|) + (n + P + 2) 2^-23 sum |a_k b_k| (|alpha| and |beta C| included)
//                   + the 16-bit type's smallest subnormal,
// n the row's entries; P <= n / 64 + 1 (parts of at least 4 blocks of 16) is folded in as
// n + 2 + n / 16 (generous, still far below a 16-bit accumulator's error: a bf16 running sum loses
// 2^-9 relative per addition).
// Without a GPU the CudaTc tests skip and say why; so they do while spmm.tc_window is off (the build
// option SPARSEPORT_CUDA_TENSOR_CORES, OFF by default, or the environment variable of that name, as
// the plugin reads them): `SPARSEPORT_CUDA_TENSOR_CORES=1 ctest -R CudaTc` runs them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda_test.hpp"
#include "values16_math.hpp"
#include "kernels/cuda/tc_window_format.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/half.hpp"
#include "sparseport/plan.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;
namespace cu = sparseport::cuda;

constexpr uint64_t kSeed = 20261203;
const std::vector<int64_t> kWidths = {1, 7, 8, 15, 16, 33, 64, 100, 128};

// ---- the host model (no GPU) -------------------------------------------------------------------

TEST(CudaTcFormat, FragPosCoversTheTileOnceInTheMmaBLayout) {
  std::vector<int> seen(cu::kTcTileValues, 0);
  for (int r = 0; r < cu::kTcWindowRows; ++r)
    for (int s = 0; s < cu::kTcBlockCols; ++s) {
      const int p = cu::tc_frag_pos(r, s);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, cu::kTcTileValues);
      ++seen[static_cast<size_t>(p)];
      // PTX ISA, mma.m16n8k16 B fragment: lane 4 g + t holds (k = 2t + i + 8 j, n = g) as its value 2 j + i.
      const int lane = p / 4, v = p % 4, g = lane / 4, t = lane % 4;
      EXPECT_EQ(g, r) << "slot " << s;
      EXPECT_EQ(2 * t + (v % 2) + 8 * (v / 2), s) << "row " << r;
    }
  for (int p = 0; p < cu::kTcTileValues; ++p) EXPECT_EQ(seen[static_cast<size_t>(p)], 1) << p;
}

TEST(CudaTcFormat, SizesOfHandMadeMatrices) {
  // 20 rows = 3 windows (the last of 4 rows). Window 0: row 0 {5, 3, 5} (5 repeated, unsorted), row 1
  // {5}, row 7 {9}: slot columns 3, 5, 5' (the repeat; row 1's 5 shares slot 5), 9 = 4. Window 1
  // (rows 8-15) empty. Window 2: row 16 {1}, row 19 {1, 1, 1}: 1, 1', 1'' = 3.
  const std::vector<int32_t> rowptr = {0, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 9};
  const std::vector<int32_t> colind = {5, 3, 5, 5, 9, 1, 1, 1, 1};
  const cu::TcFormatSize z = cu::tc_format_size(rowptr, colind, 20);
  EXPECT_EQ(z.windows, 3);
  EXPECT_EQ(z.slot_columns, 7);
  EXPECT_EQ(z.blocks, 2);  // the empty window has none
  EXPECT_EQ(z.parts, 3);   // ... but a part (it writes beta * C)
  EXPECT_EQ(z.split_windows, 0);

  // One row of 100000 distinct columns in a window of 8: 6250 blocks, 196 parts of <= 32 blocks.
  std::vector<int64_t> rp = {0, 100000, 100000, 100001};
  std::vector<int64_t> ci(100001);
  for (int64_t i = 0; i < 100000; ++i) ci[static_cast<size_t>(i)] = (i * 7919) % 100000;  // unsorted, distinct
  ci[100000] = 3;
  const cu::TcFormatSize m = cu::tc_format_size(rp, ci, 3);
  EXPECT_EQ(m.windows, 1);
  EXPECT_EQ(m.slot_columns, 100000);  // row 2's column 3 joins row 0's slot column 3
  EXPECT_EQ(m.blocks, 6250);
  EXPECT_EQ(m.parts, 196);
  EXPECT_EQ(m.split_windows, 1);
  EXPECT_EQ(m.max_window_blocks, 6250);
  EXPECT_EQ(m.bytes(100001, 8, 32), 6250 * (256 + 128) + 196 * 32 + 100001 * 8);
}

// The part length's model (tc_part_cost_us): 0.9 us a block of the longest part's chain, or of the
// blocks each resident warp (32 an SM) takes, plus 32 F bytes a split part at 200 bytes a ns.
TEST(CudaTcFormat, PartLengthTradesTheChainAgainstTheScratch) {
  // email-Enron's counts (the host model on the graph: 19833 blocks, a window of 144, split parts at
  // 4, 8, 16, 32 blocks), on an H200's 132 SMs.
  const cu::TcPartCounts enron{19833, 144, {3771, 1578, 645, 214}};
  EXPECT_NEAR(cu::tc_part_cost_us(enron, 0, 32, 1, 132), 0.9 * (19833.0 / 4224) + 3771 * 32 * 32 / 200e3, 1e-9);
  EXPECT_NEAR(cu::tc_part_cost_us(enron, 3, 32, 1, 132), 0.9 * 32 + 214 * 32 * 32 / 200e3, 1e-9);
  EXPECT_NEAR(cu::tc_part_cost_us(enron, 2, 128, 2, 132), 0.9 * 16 + 645 * 32 * 128 / 200e3, 1e-9);
  EXPECT_EQ(cu::tc_part_blocks(enron, 32, 1, 132), 8);    // 15.3 us against 23.5 (4), 17.7 (16), 29.9 (32)
  EXPECT_EQ(cu::tc_part_blocks(enron, 128, 2, 132), 16);  // 27.6 against 85.7, 40.8, 33.2
  // On one SM the 32 warps have ~600 blocks each at every length: the chain is the same, the scratch
  // least with the longest parts.
  EXPECT_EQ(cu::tc_part_blocks(enron, 32, 1, 1), 32);
  EXPECT_EQ(cu::tc_part_blocks(enron, 32, 1, 0), 32);  // no SM count: one SM
  // No window longer than 4 blocks: every length gives the same parts, and a tie goes to 32.
  EXPECT_EQ(cu::tc_part_blocks(cu::TcPartCounts{5000, 4, {0, 0, 0, 0}}, 64, 1, 132), 32);
  EXPECT_EQ(cu::tc_part_blocks(cu::TcPartCounts{}, 64, 1, 132), 32);  // no blocks at all
  // A large matrix (rmat:20:16-like, 2^20 blocks): 248 blocks a warp at F = 32, so 32 at every F.
  const cu::TcPartCounts large{int64_t{1} << 20, 3000, {60000, 25000, 9000, 3000}};
  for (const int64_t F : {16, 32, 64, 128}) EXPECT_EQ(cu::tc_part_blocks(large, F, (F + 63) / 64, 132), 32) << F;

  // A skewed matrix: 64 hub windows of one row of 1024 distinct columns (64 blocks, split at every
  // length) and 64 windows of one entry.
  std::vector<int32_t> rp = {0}, ci;
  for (int w = 0; w < 128; ++w)
    for (int r = 0; r < cu::kTcWindowRows; ++r) {
      if (r == 0 && w % 2 == 0)
        for (int k = 0; k < 1024; ++k) ci.push_back((k * 37 + w) % 1024);  // distinct, unsorted
      else if (r == 0)
        ci.push_back(w);
      rp.push_back(static_cast<int32_t>(ci.size()));
    }
  const cu::TcPartCounts c = cu::tc_part_counts(rp, ci, 1024);
  EXPECT_EQ(c.blocks, 64 * 64 + 64);
  EXPECT_EQ(c.max_window_blocks, 64);
  for (int i = 0; i < cu::kTcPartLengths; ++i) {
    EXPECT_EQ(c.split_parts[i], 64 * (64 / cu::tc_part_length(i))) << i;
    EXPECT_EQ(c.split_parts[i], cu::tc_format_size(rp, ci, 1024, cu::tc_part_length(i)).split_parts()) << i;
  }
  // F = 32 (one warp a part): parts of 4, 8.8 us against 9.8 with 8 (the chain 3.6 against 7.2, the
  // scratch 5.2 against 2.6). F = 128 (two warps a part): 4x the scratch bytes, parts of 8, 17.7 us
  // against 24.6 with 4 and 19.6 with 16.
  EXPECT_EQ(cu::tc_part_blocks(c, 32, 1, 132), 4);
  EXPECT_EQ(cu::tc_part_blocks(c, 128, 2, 132), 8);
  EXPECT_LT(cu::tc_part_blocks(c, 32, 1, 132), cu::tc_part_blocks(c, 128, 2, 132));

  // The mega-row of SizesOfHandMadeMatrices (6250 blocks) in shorter parts.
  std::vector<int64_t> mrp = {0, 100000};
  std::vector<int64_t> mci(100000);
  for (int64_t i = 0; i < 100000; ++i) mci[static_cast<size_t>(i)] = (i * 7919) % 100000;
  const cu::TcFormatSize p4 = cu::tc_format_size(mrp, mci, 1, 4), p8 = cu::tc_format_size(mrp, mci, 1, 8);
  EXPECT_EQ(p4.blocks, 6250);
  EXPECT_EQ(p4.parts, 1563);  // ceil(6250 / 4)
  EXPECT_EQ(p8.parts, 782);   // ceil(6250 / 8)
  EXPECT_EQ(p4.split_windows, 1);
  EXPECT_EQ(p4.split_parts(), 1563);
  EXPECT_EQ(cu::tc_format_size(mrp, mci, 1).parts, 196);  // the default, 32
}

TEST(CudaTcFormat, SortKeyWidth) {
  EXPECT_EQ(cu::tc_bits_for(1), 0);
  EXPECT_EQ(cu::tc_bits_for(2), 1);
  EXPECT_EQ(cu::tc_bits_for(1024), 10);
  EXPECT_EQ(cu::tc_bits_for(1025), 11);
  EXPECT_EQ(cu::tc_key_bits(8, 1), 3);  // one window, one column: the row in the window only
  EXPECT_EQ(cu::tc_key_bits(int64_t{1} << 31, int64_t{1} << 31), 28 + 31 + 3);
  EXPECT_GT(cu::tc_key_bits(int64_t{1} << 40, int64_t{1} << 40), 64);  // refused by applies()
}

// ---- GPU ---------------------------------------------------------------------------------------

bool tc_window_on() {
  const char* e = std::getenv("SPARSEPORT_CUDA_TENSOR_CORES");
  if (e != nullptr && *e != '\0') return std::strcmp(e, "0") != 0;
  return SPARSEPORT_CUDA_TENSOR_CORES_DEFAULT != 0;
}

#define TC_REQUIRE_GPU_AND_ON()                                                                      \
  do {                                                                                              \
    CUDA_TEST_REQUIRE_GPU();                                                                        \
    if (!tc_window_on())                                                                            \
      GTEST_SKIP() << "skipped: spmm.tc_window is off (SPARSEPORT_CUDA_TENSOR_CORES=1 turns it on)"; \
  } while (0)

template <class H>
HostDense<H> dense16(int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostDense<H> d(rows, cols, ld);
  for (auto& x : d.data) x = rnd16<H>(rng);
  return d;
}

// C (16-bit, on the host) against the oracle from the 16-bit inputs; the first 5 misses reported.
template <class I, class H>
void expect_close(const HostCsr<I, H>& a, const HostDense<H>& b, const HostDense<H>& c0, const HostDense<H>& got,
                  Reduce r, double alpha, double beta) {
  int bad = 0;
  for (int64_t i = 0; i < a.rows && bad < 5; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1], n = e1 - e0;
    for (int64_t f = 0; f < b.cols && bad < 5; ++f) {
      double acc = 0.0, mag = 0.0;
      for (int64_t e = e0; e < e1; ++e) {
        const double w = a.is_pattern() ? 1.0 : to_d(a.values[static_cast<size_t>(e)]);
        const double p = w * to_d(b(a.colind[static_cast<size_t>(e)], f));
        acc += p;
        mag += std::abs(p);
      }
      if (r == Reduce::mean && n > 0) acc /= static_cast<double>(n), mag /= static_cast<double>(n);
      const double old = beta != 0.0 ? to_d(c0(i, f)) : 0.0;
      const double want = alpha * acc + beta * old;
      const double bound = std::abs(alpha) * mag + std::abs(beta * old);
      const double tol = 2 * ulp16<H>(std::abs(want)) +
                         static_cast<double>(n + 2 + n / 16) * std::ldexp(1.0, -23) * bound + tiny16<H>();
      const double g = to_d(got(i, f));
      if (!(std::isfinite(g) && std::abs(g - want) <= tol)) {
        ++bad;
        ADD_FAILURE() << "C[" << i << "," << f << "] = " << g << ", want " << want << " (tolerance " << tol << ", row of "
                      << n << " entries)";
      }
    }
  }
}

struct Call {
  Reduce reduce = Reduce::sum;
  double alpha = 1.0, beta = 0.0;
  int64_t ldb_pad = 0, ldc_pad = 0, b_offset = 0, c_offset = 0;
};

// The calls each width gets: sum and mean, beta 0 (C full of NaN, which must not leak in) and 0.5
// (alpha 1.25); every other one with padded rows (ld > F) and misaligned starts (no vector loads or
// stores).
std::vector<Call> call_mix() {
  std::vector<Call> out;
  for (const Reduce r : {Reduce::sum, Reduce::mean}) {
    for (const double beta : {0.0, 0.5}) {
      Call k;
      k.reduce = r;
      k.beta = beta;
      k.alpha = beta == 0.0 ? 1.0 : 1.25;
      if (out.size() % 2 == 1) k.ldb_pad = 3, k.ldc_pad = 1, k.b_offset = 1, k.c_offset = 1;
      out.push_back(k);
    }
  }
  return out;
}

std::string describe(const Call& k) {
  return std::string(name(k.reduce)) + ", beta " + std::to_string(k.beta) +
         (k.ldb_pad != 0 ? ", padded and misaligned" : "");
}

// One spmm.tc_window call on device copies of a, b, c0; returns C.
template <class I, class H>
HostDense<H> run_tc(const Context& ctx, const DevCsr<I, H>& da, const HostCsr<I, H>& a, const HostDense<H>& b,
                    const HostDense<H>& c0, const Call& k) {
  (void)a;
  const DevDense<H> db = to_device(ctx, b, k.b_offset);
  DevDense<H> dc = to_device(ctx, c0, k.c_offset);
  SpmmOptions opt;
  opt.reduce = k.reduce;
  opt.alpha = k.alpha;
  opt.beta = k.beta;
  opt.variant = "spmm.tc_window";
  spmm(ctx, da.view, db.view(), dc.mut(), opt);
  const Decision d = last_decision();
  EXPECT_EQ(d.variant, "spmm.tc_window");
  EXPECT_FALSE(d.via_f32) << "spmm.tc_window ran through float32 copies, not natively";
  return to_host(ctx, dc);
}

// A's structure on the device is still what was uploaded: no call of the variant writes into A.
template <class I, class H>
void expect_structure_intact(const Context& ctx, const DevCsr<I, H>& da, const HostCsr<I, H>& a, const char* when) {
  std::vector<I> rp(a.rowptr.size()), ci(a.colind.size());
  ctx.copy_to_host(rp.data(), da.rowptr.data(), rp.size() * sizeof(I));
  if (!ci.empty()) ctx.copy_to_host(ci.data(), da.colind.data(), ci.size() * sizeof(I));
  EXPECT_EQ(rp, a.rowptr) << "A.rowptr on the device " << when;
  EXPECT_EQ(ci, a.colind) << "A.colind on the device " << when;
}

// a against the oracle at every F of `widths`, sum and mean, beta 0 (C full of NaN) and 0.5.
template <class I, class H>
void check_matrix(const Context& ctx, const HostCsr<I, H>& a, const std::vector<int64_t>& widths, uint64_t seed,
                  const std::string& what) {
  // The test's own matrix is a CSR (HostCsr starts with rowptr {0}: a second 0 pushed by a generator
  // made rows + 2 pointers and rowptr[m] < nnz, which the library rightly refused on the first GPU run).
  ASSERT_EQ(a.rowptr.size(), static_cast<size_t>(a.rows) + 1) << what;
  ASSERT_EQ(static_cast<int64_t>(a.rowptr.back()), a.nnz()) << what;
  const DevCsr<I, H> da = to_device(ctx, a);
  expect_structure_intact(ctx, da, a, "after the upload");
  for (const int64_t F : widths) {
    for (const Call& k : call_mix()) {
      SCOPED_TRACE(what + ": F " + std::to_string(F) + ", " + describe(k) + (sizeof(I) == 8 ? ", int64" : ", int32") +
                   (std::is_same_v<H, half> ? ", f16" : ", bf16"));
      const HostDense<H> b = dense16<H>(a.cols, F, F + k.ldb_pad, seed + 10 * static_cast<uint64_t>(F));
      HostDense<H> c0 = dense16<H>(a.rows, F, F + k.ldc_pad, seed + 10 * static_cast<uint64_t>(F) + 1);
      if (k.beta == 0.0)
        for (auto& x : c0.data) x = H(std::numeric_limits<float>::quiet_NaN());
      const HostDense<H> got = run_tc(ctx, da, a, b, c0, k);
      expect_structure_intact(ctx, da, a, "after the call");
      expect_close(a, b, c0, got, k.reduce, k.alpha, k.beta);
    }
  }
}

// m x k, row degrees uniform in [0, max_deg], columns uniform (unsorted, repeats possible).
template <class I, class H>
HostCsr<I, H> random_csr(int64_t m, int64_t k, int64_t max_deg, uint64_t seed, bool pattern = false) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, k - 1), deg(0, max_deg);
  HostCsr<I, H> a;
  a.rows = m;
  a.cols = k;
  a.rowptr = {0};
  for (int64_t i = 0; i < m; ++i) {
    const int64_t d = deg(rng);
    for (int64_t t = 0; t < d; ++t) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (!pattern) a.values.push_back(rnd16<H>(rng));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

template <class I, class H>
void random_suite() {
  Context ctx = Context::create("cuda");
  check_matrix(ctx, random_csr<I, H>(1000, 800, 20, kSeed + sizeof(I)), kWidths, kSeed, "random 1000 x 800");
}

TEST(CudaTc, RandomF16Int32) {
  TC_REQUIRE_GPU_AND_ON();
  random_suite<int32_t, half>();
}
TEST(CudaTc, RandomBf16Int32) {
  TC_REQUIRE_GPU_AND_ON();
  random_suite<int32_t, bfloat16>();
}
TEST(CudaTc, RandomF16Int64) {
  TC_REQUIRE_GPU_AND_ON();
  random_suite<int64_t, half>();
}
TEST(CudaTc, RandomBf16Int64) {
  TC_REQUIRE_GPU_AND_ON();
  random_suite<int64_t, bfloat16>();
}

TEST(CudaTc, PatternAndRectangular) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  // Few rows, many columns; many rows, few columns (windows with long column runs and repeats);
  // a pattern (every value 1).
  check_matrix(ctx, random_csr<int32_t, bfloat16>(37, 5000, 300, kSeed + 1), {7, 64, 100}, kSeed + 2, "37 x 5000");
  check_matrix(ctx, random_csr<int32_t, half>(3001, 50, 40, kSeed + 3), {1, 16, 33}, kSeed + 4, "3001 x 50");
  check_matrix(ctx, random_csr<int64_t, half>(500, 700, 12, kSeed + 5, true), {8, 33, 128}, kSeed + 6, "pattern");
}

// Rows 0-15 and 24-40 empty (whole empty windows and an empty partial last window), rows 16-23 full.
TEST(CudaTc, EmptyWindows) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, bfloat16> a;
  a.rows = 41;
  a.cols = 30;
  std::mt19937_64 rng(kSeed + 7);
  a.rowptr = {0};
  for (int64_t i = 0; i < a.rows; ++i) {
    if (i >= 16 && i < 24)
      for (int64_t t = 0; t < 5 + i % 3; ++t) {
        a.colind.push_back(static_cast<int32_t>((i * 7 + t * 11) % 30));
        a.values.push_back(rnd16<bfloat16>(rng));
      }
    a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
  }
  check_matrix(ctx, a, {1, 15, 64, 100}, kSeed + 8, "empty windows");
}

// No entries at all: C = beta * C (the plugin answers nnz == 0 before the variant's kernels).
TEST(CudaTc, NoEntries) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, half> a;
  a.rows = 20;
  a.cols = 9;
  a.rowptr.assign(21, 0);
  check_matrix(ctx, a, {7, 16}, kSeed + 9, "no entries");
}

// Repeated (row, column) entries add up, each value as stored; columns in any order; a column
// repeated in several rows of a window and within a row.
TEST(CudaTc, DuplicateAndUnsortedColumns) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  std::mt19937_64 rng(kSeed + 11);
  HostCsr<int32_t, bfloat16> a;
  a.rows = 50;
  a.cols = 20;
  a.rowptr = {0};
  std::uniform_int_distribution<int> col(0, 4), reps(1, 4);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int t = 0; t < 6; ++t) {
      const int c = 19 - col(rng) * 3;  // descending-ish, 5 distinct columns
      for (int q = reps(rng); q > 0; --q) {
        a.colind.push_back(c);
        a.values.push_back(rnd16<bfloat16>(rng));
      }
    }
    a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
  }
  check_matrix(ctx, a, {8, 33}, kSeed + 12, "duplicates");
  HostCsr<int64_t, half> b;  // the same structure, int64 and f16
  b.rows = a.rows;
  b.cols = a.cols;
  b.rowptr.assign(a.rowptr.begin(), a.rowptr.end());  // assigned, not appended: HostCsr starts with {0}
  for (auto x : a.colind) b.colind.push_back(x);
  for (auto x : a.values) b.values.push_back(half(static_cast<float>(x)));
  check_matrix(ctx, b, {16, 100}, kSeed + 13, "duplicates int64");
}

// Power law with a mega-row of 10^5 entries (scaled: at least 4000, over 8 or more parts), hubs, empty
// rows.
TEST(CudaTc, PowerLawWithMegaRow) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, bfloat16>({30000, 200000, 200000}, {3000, 8000, 8000}, 0.5, kSeed + 14);
  check_matrix(ctx, a, {8, 33, 64}, kSeed + 15, "power law");
  const auto b = scaled_skewed_csr<int64_t, half>({30000, 200000, 200000}, {3000, 8000, 8000}, 0.5, kSeed + 16);
  check_matrix(ctx, b, {16, 128}, kSeed + 17, "power law int64");
}

// One plan, every part length (SPARSEPORT_TC_PART_BLOCKS, read at every call): each length's part list
// against the oracle, through the scratch's vector reductions at slices of 16 (F = 7: .v2, rows padded
// to 16 floats), 32 (F = 33: .v4) and 64 (F = 100 and 128: .v4 with the lane pairs' swapped halves,
// F = 100 padded to 128), and the note naming the length that ran.
TEST(CudaTc, EveryPartLengthOnOnePlan) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, bfloat16>({30000, 200000, 200000}, {3000, 8000, 8000}, 0.5, kSeed + 30);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  for (const int64_t F : {7, 33, 100, 128}) {
    const HostDense<bfloat16> b = dense16<bfloat16>(a.cols, F, F, kSeed + 31), c0(a.rows, F);
    for (const char* P : {"4", "8", "16", "32"}) {
      SCOPED_TRACE("F " + std::to_string(F) + ", parts of " + P);
      setenv("SPARSEPORT_TC_PART_BLOCKS", P, 1);
      expect_close(a, b, c0, run_tc(ctx, da, a, b, c0, Call{}), Reduce::sum, 1.0, 0.0);
      sparseport_cuda_diagnostics d{};
      ASSERT_EQ(sparseport_cuda_get_diagnostics(ctx.exec().state, &d), 0);
      const std::string note(d.note), tail = std::string(", part blocks ") + P;
      EXPECT_TRUE(note.size() >= tail.size() && note.compare(note.size() - tail.size(), tail.size(), tail) == 0)
          << note;
    }
    unsetenv("SPARSEPORT_TC_PART_BLOCKS");
  }
}

// Rows of 10^5 entries (distinct columns). bf16 ones: exactly bf16(100000) = 99840 (a bf16 running
// sum stops at 256); f16 products of 0.5: f16(50000) = 49984 (the partial sums pass 65504, f16's
// largest, only in a 16-bit accumulator); random values: within the bound of the header.
TEST(CudaTc, AccuracyOnRowsOf100kEntries) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const int64_t n = 100000, F = 16;
  const auto row_matrix = [&](auto one, double value) {
    using H = decltype(one);
    HostCsr<int32_t, H> a;
    a.rows = 9;  // two windows: row 0 long, row 8 short
    a.cols = n;
    a.rowptr = {0};
    for (int64_t e = 0; e < n; ++e) {
      a.colind.push_back(static_cast<int32_t>((e * 7919) % n));
      a.values.push_back(H(static_cast<float>(value)));
    }
    for (int i = 1; i <= 8; ++i) a.rowptr.push_back(static_cast<int32_t>(n));
    a.colind.push_back(5);
    a.values.push_back(H(1.0f));
    a.rowptr.push_back(static_cast<int32_t>(n + 1));
    return a;
  };
  {
    const auto a = row_matrix(bfloat16{}, 1.0);
    const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
    HostDense<bfloat16> b(n, F, -1, bfloat16(1.0f)), c0(9, F);
    const HostDense<bfloat16> got = run_tc(ctx, da, a, b, c0, Call{});
    for (int64_t f = 0; f < F; ++f) EXPECT_EQ(to_d(got(0, f)), to_d(bfloat16(100000.0f))) << f;
  }
  {
    const auto a = row_matrix(half{}, 0.5);
    const DevCsr<int32_t, half> da = to_device(ctx, a);
    HostDense<half> b(n, F, -1, half(1.0f)), c0(9, F);
    const HostDense<half> got = run_tc(ctx, da, a, b, c0, Call{});
    for (int64_t f = 0; f < F; ++f) EXPECT_EQ(to_d(got(0, f)), to_d(half(50000.0f))) << f;
  }
  {
    auto a = row_matrix(bfloat16{}, 1.0);
    std::mt19937_64 rng(kSeed + 18);
    for (auto& v : a.values) v = rnd16<bfloat16>(rng);
    check_matrix(ctx, a, {16, 33}, kSeed + 19, "10^5 random");
  }
}

// A split window's scratch sums and tickets may outlive a call (the plan's, made by its first split
// call and put back to zero by the warps that read them): every call on one plan must start from
// zero. Repeated calls, F growing and shrinking (the scratch rows' width follows F), mean with beta
// (the finishing pass's other branch), calls wider than the first (F = 128, 200: scratch of their
// own), then narrower ones on the kept scratch again: each against the oracle, where sums left over
// would double the split rows.
TEST(CudaTc, SplitWindowsStartFromZeroAtEveryCallOnOnePlan) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, bfloat16>({30000, 200000, 200000}, {3000, 8000, 8000}, 0.5, kSeed + 40);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  setenv("SPARSEPORT_TC_PART_BLOCKS", "4", 1);  // the most split windows
  int call = 0;
  for (const int64_t F : {33, 33, 128, 7, 200, 33}) {
    const uint64_t seed = kSeed + 41 + 2 * static_cast<uint64_t>(call);
    const HostDense<bfloat16> b = dense16<bfloat16>(a.cols, F, F, seed), c0 = dense16<bfloat16>(a.rows, F, F, seed + 1);
    SCOPED_TRACE("call " + std::to_string(call) + ", F " + std::to_string(F));
    Call k;
    if (call % 2 == 1) k.reduce = Reduce::mean, k.alpha = 1.25, k.beta = 0.5;
    expect_close(a, b, c0, run_tc(ctx, da, a, b, c0, k), k.reduce, k.alpha, k.beta);
    ++call;
  }
  unsetenv("SPARSEPORT_TC_PART_BLOCKS");
}

// The plan keeps the structure; A's values may change in place between calls and must be used.
TEST(CudaTc, ValuesChangedInPlaceAreUsed) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, bfloat16> a = random_csr<int32_t, bfloat16>(300, 200, 30, kSeed + 20);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  const HostDense<bfloat16> b = dense16<bfloat16>(200, 33, 33, kSeed + 21);
  const HostDense<bfloat16> c0(300, 33);
  expect_close(a, b, c0, run_tc(ctx, da, a, b, c0, Call{}), Reduce::sum, 1.0, 0.0);
  std::mt19937_64 rng(kSeed + 22);
  for (auto& v : a.values) v = rnd16<bfloat16>(rng, -4.0, 4.0);
  ctx.copy_to_backend(da.values.data(), a.values.data(), a.values.size() * sizeof(bfloat16));
  expect_close(a, b, c0, run_tc(ctx, da, a, b, c0, Call{}), Reduce::sum, 1.0, 0.0);
}

// A warp covers a slice of 16, 32 or 64 features (SPARSEPORT_TC_SLICE): each output is the same
// sequence of mma over the same blocks whatever the slice, so the same bits (no split windows here:
// rows of at most 40 entries, 5 x 16 slot columns a window at most).
TEST(CudaTc, FeatureSlicesOf16To64GiveTheSameBits) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  // Parts of 32 blocks: no window of this matrix splits, so no sum depends on the order in which
  // a split window's parts arrive (the slices are this test's subject, not the parts).
  setenv("SPARSEPORT_TC_PART_BLOCKS", "32", 1);
  const auto a = random_csr<int32_t, half>(700, 900, 40, kSeed + 23);
  const DevCsr<int32_t, half> da = to_device(ctx, a);
  for (const int64_t F : {8, 40, 100, 128}) {
    const HostDense<half> b = dense16<half>(900, F, F, kSeed + 24), c0(700, F);
    setenv("SPARSEPORT_TC_SLICE", "16", 1);
    const HostDense<half> x = run_tc(ctx, da, a, b, c0, Call{});
    for (const char* slice : {"32", "64"}) {
      setenv("SPARSEPORT_TC_SLICE", slice, 1);
      const HostDense<half> y = run_tc(ctx, da, a, b, c0, Call{});
      for (size_t i = 0; i < x.data.size(); ++i)
        ASSERT_EQ(x.data[i].bits, y.data[i].bits) << "F " << F << ", slice " << slice << ", element " << i;
    }
    unsetenv("SPARSEPORT_TC_SLICE");
    expect_close(a, b, c0, x, Reduce::sum, 1.0, 0.0);
  }
  unsetenv("SPARSEPORT_TC_PART_BLOCKS");
}

// The plan the GPU built has the host model's sizes (its note, sparseport_cuda_get_diagnostics).
TEST(CudaTc, PlanSizesMatchTheHostModel) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, bfloat16>({20000, 50000, 150000}, {3000, 8000, 8000}, 0.4, kSeed + 25);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  const HostDense<bfloat16> b = dense16<bfloat16>(a.cols, 16, 16, kSeed + 26), c0(a.rows, 16);
  (void)run_tc(ctx, da, a, b, c0, Call{});
  sparseport_cuda_diagnostics d{};
  ASSERT_EQ(sparseport_cuda_get_diagnostics(ctx.exec().state, &d), 0);
  // The part length the call chose from the plan's counts, F = 16 (one warp a part) and the context's
  // device (current after create).
  int dev = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
  const int part_blocks = cu::tc_part_blocks(cu::tc_part_counts(a.rowptr, a.colind, a.rows), 16, 1, sms);
  const cu::TcFormatSize z = cu::tc_format_size(a.rowptr, a.colind, a.rows, part_blocks);
  EXPECT_GT(z.split_windows, 0) << "the mega-row should split";
  const std::string want = "spmm.tc_window plan: windows " + std::to_string(z.windows) + ", slot columns " +
                           std::to_string(z.slot_columns) + ", blocks " + std::to_string(z.blocks) + ", parts " +
                           std::to_string(z.parts) + ", split windows " + std::to_string(z.split_windows) +
                           ", part blocks " + std::to_string(part_blocks);
  EXPECT_EQ(std::string(d.note), want);
}

// max and min, and float32 values, do not apply; the reasons say why.
TEST(CudaTc, RefusesMaxMinAndFloat32WithReasons) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  const auto a = random_csr<int32_t, bfloat16>(20, 20, 4, kSeed + 27);
  const DevCsr<int32_t, bfloat16> da = to_device(ctx, a);
  const HostDense<bfloat16> b = dense16<bfloat16>(20, 8, 8, kSeed + 28), c0(20, 8);
  const DevDense<bfloat16> db = to_device(ctx, b);
  DevDense<bfloat16> dc = to_device(ctx, c0);
  SpmmOptions opt;
  opt.variant = "spmm.tc_window";
  opt.reduce = Reduce::max;
  try {
    spmm(ctx, da.view, db.view(), dc.mut(), opt);
    ADD_FAILURE() << "max ran";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("sums and means only"), std::string::npos) << e.what();
  }
  HostCsr<int32_t, float> f;
  f.rows = f.cols = 4;
  f.rowptr = {0, 1, 1, 1, 1};
  f.colind = {2};
  f.values = {1.0f};
  const DevCsr<int32_t, float> df = to_device(ctx, f);
  const DevDense<float> fb = to_device(ctx, HostDense<float>(4, 8)), fc = to_device(ctx, HostDense<float>(4, 8));
  opt.reduce = Reduce::sum;
  try {
    spmm(ctx, df.view, fb.view(), fc.mut(), opt);
    ADD_FAILURE() << "float32 ran";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("f16 and bf16 values only"), std::string::npos) << e.what();
  }
}

// ---- TF32 (spmm.tc_window_tf32) ----------------------------------------------------------------
// Tolerance (README "TF32"): A's and B's float32 values are rounded to TF32 (to nearest, 10 stored
// mantissa bits: relative error 2^-11 each), so each product is within 2^-10 + 2^-22 of the exact
// one relative to |a b|; the float32 accumulation then adds the 16-bit tests' (n + P + 2) 2^-23, and
// the float32 result one rounding:
//   |got - want| <= (2^-10 + 2^-22 + (n + 2 + n / 16) 2^-23) sum |a_k b_k| (alpha, beta included)
//                   + ulp32(|want|) + the smallest normal float.

// C from spmm.tc_window_tf32 on device copies, with consent on the context.
template <class I>
HostDense<float> run_tf32(const Context& ctx, const DevCsr<I, float>& da, const HostDense<float>& b,
                          const HostDense<float>& c0, const Call& k) {
  const DevDense<float> db = to_device(ctx, b, k.b_offset);
  DevDense<float> dc = to_device(ctx, c0, k.c_offset);
  SpmmOptions opt;
  opt.reduce = k.reduce;
  opt.alpha = k.alpha;
  opt.beta = k.beta;
  opt.variant = "spmm.tc_window_tf32";
  spmm(ctx, da.view, db.view(), dc.mut(), opt);
  EXPECT_EQ(last_decision().variant, "spmm.tc_window_tf32");
  return to_host(ctx, dc);
}

// The largest error seen, over the bound's sum |a b| (the measured relative error; the bound's
// leading term is 2^-10 = 9.8e-4), kept for the report line each test prints.
double g_tf32_worst = 0.0;

template <class I>
void expect_close_tf32(const HostCsr<I, float>& a, const HostDense<float>& b, const HostDense<float>& c0,
                       const HostDense<float>& got, Reduce r, double alpha, double beta) {
  int bad = 0;
  for (int64_t i = 0; i < a.rows && bad < 5; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1], n = e1 - e0;
    for (int64_t f = 0; f < b.cols && bad < 5; ++f) {
      double acc = 0.0, mag = 0.0;
      for (int64_t e = e0; e < e1; ++e) {
        const double w = a.is_pattern() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(e)]);
        const double p = w * static_cast<double>(b(a.colind[static_cast<size_t>(e)], f));
        acc += p;
        mag += std::abs(p);
      }
      if (r == Reduce::mean && n > 0) acc /= static_cast<double>(n), mag /= static_cast<double>(n);
      const double old = beta != 0.0 ? static_cast<double>(c0(i, f)) : 0.0;
      const double want = alpha * acc + beta * old;
      const double bound = std::abs(alpha) * mag + std::abs(beta * old);
      const double tol = (std::ldexp(1.0, -10) + std::ldexp(1.0, -22) +
                          static_cast<double>(n + 2 + n / 16) * std::ldexp(1.0, -23)) * bound +
                         std::ldexp(std::abs(want), -23) + static_cast<double>(std::numeric_limits<float>::min());
      const double g = static_cast<double>(got(i, f));
      if (bound > 0.0 && std::isfinite(g)) g_tf32_worst = std::max(g_tf32_worst, std::abs(g - want) / bound);
      if (!(std::isfinite(g) && std::abs(g - want) <= tol)) {
        ++bad;
        ADD_FAILURE() << "C[" << i << "," << f << "] = " << g << ", want " << want << " (tolerance " << tol
                      << ", row of " << n << " entries)";
      }
    }
  }
}

template <class I>
void check_tf32(const Context& ctx, const HostCsr<I, float>& a, const std::vector<int64_t>& widths, uint64_t seed,
                const std::string& what) {
  ASSERT_EQ(a.rowptr.size(), static_cast<size_t>(a.rows) + 1) << what;
  const DevCsr<I, float> da = to_device(ctx, a);
  for (const int64_t F : widths) {
    for (const Call& k : call_mix()) {
      SCOPED_TRACE(what + ": F " + std::to_string(F) + ", " + describe(k) + (sizeof(I) == 8 ? ", int64" : ", int32"));
      const HostDense<float> b = random_dense<float>(a.cols, F, F + k.ldb_pad, seed + 10 * static_cast<uint64_t>(F));
      HostDense<float> c0 = random_dense<float>(a.rows, F, F + k.ldc_pad, seed + 10 * static_cast<uint64_t>(F) + 1);
      if (k.beta == 0.0)
        for (auto& x : c0.data) x = std::numeric_limits<float>::quiet_NaN();
      expect_close_tf32(a, b, c0, run_tf32(ctx, da, b, c0, k), k.reduce, k.alpha, k.beta);
    }
  }
}

template <class I>
HostCsr<I, float> to_f32(const HostCsr<I, bfloat16>& h, uint64_t seed) {
  HostCsr<I, float> a;
  a.rows = h.rows;
  a.cols = h.cols;
  a.rowptr = h.rowptr;
  a.colind = h.colind;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  if (!h.is_pattern())
    for (size_t e = 0; e < h.colind.size(); ++e) a.values.push_back(static_cast<float>(val(rng)));
  return a;
}

Context tf32_context() {
  Context ctx = Context::create("cuda");
  ctx.set_allow_tf32(true);
  return ctx;
}

TEST(CudaTcTf32, RandomInt32AndInt64WithinTheTf32Bound) {
  TC_REQUIRE_GPU_AND_ON();
  const Context ctx = tf32_context();
  g_tf32_worst = 0.0;
  check_tf32(ctx, to_f32(random_csr<int32_t, bfloat16>(1000, 800, 20, kSeed + 40), kSeed + 41), kWidths, kSeed + 42,
             "random 1000 x 800");
  check_tf32(ctx, to_f32(random_csr<int64_t, bfloat16>(3001, 50, 40, kSeed + 43), kSeed + 44), {1, 16, 33}, kSeed + 45,
             "random 3001 x 50 int64");
  check_tf32(ctx, to_f32(random_csr<int32_t, bfloat16>(500, 700, 12, kSeed + 46, true), kSeed + 47), {8, 100},
             kSeed + 48, "pattern");
  std::printf("[ tf32     ] largest |error| / sum |a b| seen: %.3g (bound's leading term 2^-10 = %.3g)\n",
              g_tf32_worst, std::ldexp(1.0, -10));
}

TEST(CudaTcTf32, PowerLawWithMegaRowWithinTheTf32Bound) {
  TC_REQUIRE_GPU_AND_ON();
  const Context ctx = tf32_context();
  g_tf32_worst = 0.0;
  const auto a = scaled_skewed_csr<int32_t, float>({30000, 200000, 200000}, {3000, 8000, 8000}, 0.5, kSeed + 49);
  check_tf32(ctx, a, {8, 33, 64}, kSeed + 50, "power law");
  std::printf("[ tf32     ] largest |error| / sum |a b| seen: %.3g\n", g_tf32_worst);
}

// Without consent: requested by name it does not apply (and says how to allow it); the scheduler's
// own choice never lands on it, even with the tensor cores offered.
TEST(CudaTcTf32, WithoutConsentRefusedAndNeverChosen) {
  TC_REQUIRE_GPU_AND_ON();
  Context ctx = Context::create("cuda");
  ctx.set_allow_tf32(false);
  const auto a = to_f32(random_csr<int32_t, bfloat16>(2000, 2000, 30, kSeed + 51), kSeed + 52);
  const DevCsr<int32_t, float> da = to_device(ctx, a);
  const HostDense<float> b = random_dense<float>(2000, 64, 64, kSeed + 53), c0(2000, 64);
  const DevDense<float> db = to_device(ctx, b);
  DevDense<float> dc = to_device(ctx, c0);
  SpmmOptions opt;
  opt.variant = "spmm.tc_window_tf32";
  try {
    spmm(ctx, da.view, db.view(), dc.mut(), opt);
    ADD_FAILURE() << "spmm.tc_window_tf32 ran without the caller's consent";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("TF32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set_allow_tf32"), std::string::npos) << e.what();
  }
  opt.variant.clear();
  for (int call = 0; call < 3; ++call) {
    spmm(ctx, da.view, db.view(), dc.mut(), opt);
    EXPECT_NE(last_decision().variant, "spmm.tc_window_tf32");
  }
}

}  // namespace
