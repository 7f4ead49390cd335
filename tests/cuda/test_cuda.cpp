// SPDX-License-Identifier: Apache-2.0
// The cuda plugin on a GPU: every variant of every op against a double-precision oracle on
// adversarial inputs (a mega-row split across CTAs and chunks, hubs, empty rows, repeated and
// unsorted columns, patterns, int64 indices, F not a multiple of 4, misaligned rows), host
// pointers refused with the op and the argument named, and plans built once and dropped when
// their matrix changes. Without a GPU (CI) every test but the first two skips and says why; those
// check the parsing of SPARSEPORT_TEST_SCALE (cuda_test.hpp) and that the plugin reports the
// missing device clearly.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <sstream>

#include "backends/cuda/preload.hpp"
#include "cuda_test.hpp"
#include "kernels/row_order.hpp"
#include "plugins/cuda/diagnostics.h"
#include "../common/scoped.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261122;
constexpr Reduce kReduces[] = {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min};

// Every variant of op but those that round float32 to TF32: they run only with the caller's consent
// and meet a TF32 tolerance (test_cuda_tc.cpp), not this file's float32 one.
std::vector<std::string> variants(sparseport_op op) {
  std::vector<std::string> v;
  for (const VariantInfo& x : plugin("cuda").variants)
    if (x.op == op && !x.tf32) v.push_back(x.name);
  EXPECT_FALSE(v.empty()) << "the cuda plugin lists no variant of " << op_name(op);
  return v;
}

sparseport_cuda_diagnostics diagnostics(const Context& ctx) {
  sparseport_cuda_diagnostics d{};
  EXPECT_EQ(sparseport_cuda_get_diagnostics(ctx.exec().state, &d), 0);
  return d;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// SPARSEPORT_TEST_SCALE, read and printed before the first test of the program (cuda_test.hpp).
[[maybe_unused]] const ::testing::Environment* const kScale =
    ::testing::AddGlobalTestEnvironment(new ScaleEnvironment);

// ---- without a GPU ---------------------------------------------------------------------------

TEST(CudaTestScale, OnlyNumbersInZeroToOneAreAccepted) {
  EXPECT_EQ(parse_test_scale(nullptr), 1.0);
  EXPECT_EQ(parse_test_scale(""), 1.0);
  EXPECT_EQ(parse_test_scale("1"), 1.0);
  EXPECT_EQ(parse_test_scale("0.1"), 0.1);
  EXPECT_EQ(parse_test_scale("2.5e-1"), 0.25);
  for (const char* bad : {"abc", "0", "-0.1", "1.5", "0.1x", "0.1 ", "nan", "inf", "1e-400"}) {
    try {
      (void)parse_test_scale(bad);
      ADD_FAILURE() << "SPARSEPORT_TEST_SCALE='" << bad << "' was accepted";
    } catch (const InvalidArgument& e) {
      const std::string want = std::string("SPARSEPORT_TEST_SCALE='") + bad + "' is not a number in (0, 1]";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(CudaNoGpu, PluginSaysWhyItCannotRun) {
  const std::string why = no_gpu_reason();
  if (why.empty()) GTEST_SKIP() << "skipped: a GPU is present (this test checks the machine without one)";
  const PluginInfo& p = plugin("cuda");
  EXPECT_EQ(p.status, PluginStatus::no_device) << "the cuda plugin is compiled in, so only the device can be missing";
  EXPECT_NE(p.reason.find("cudaGetDeviceCount"), std::string::npos) << p.reason;
  try {
    (void)Context::create("cuda");
    ADD_FAILURE() << "a cuda context was created without a GPU";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.reason), std::string::npos) << e.what();
  }
}

// ---- runtime -----------------------------------------------------------------------------------

TEST(CudaDevice, DescribesDevicesAndCopiesRoundTrip) {
  CUDA_TEST_REQUIRE_GPU();
  const PluginInfo& p = plugin("cuda");
  char buf[2048];
  sparseport_status st{};
  ASSERT_EQ(p.table->describe_devices(buf, sizeof buf, &st), SPARSEPORT_OK) << st.message;
  const std::string line = buf;
  for (const char* part : {"cuda:0", "cc ", "SMs", "L2", "GiB", "GB/s", "driver", "runtime", "cuSPARSE"})
    EXPECT_NE(line.find(part), std::string::npos) << "missing '" << part << "' in: " << line;
  std::printf("%s\n", line.c_str());

  Context ctx = Context::create("cuda");
  EXPECT_TRUE(ctx.device_memory());
  EXPECT_EQ(ctx.backend(), "cuda:0");
  std::vector<double> h(1000);
  std::iota(h.begin(), h.end(), 0.5);
  Buffer d = upload(ctx, h);
  EXPECT_EQ(download<double>(ctx, d.data(), h.size()), h);

  for (sparseport_op op : {SPARSEPORT_OP_SPMM, SPARSEPORT_OP_SDDMM, SPARSEPORT_OP_SEGMENT_REDUCE,
                           SPARSEPORT_OP_SCATTER_REDUCE, SPARSEPORT_OP_GATHER_SCATTER, SPARSEPORT_OP_CSR_ATTENTION,
                           SPARSEPORT_OP_CSR_SLICE_ROWS, SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE,
                           SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, SPARSEPORT_OP_CSR_TRANSPOSE}) {
    int defaults = 0;
    for (const VariantInfo& v : p.variants)
      if (v.op == op && v.is_default) ++defaults;
    EXPECT_EQ(defaults, 1) << op_name(op) << " needs exactly one default variant";
  }
  EXPECT_EQ(p.vendor_variant(SPARSEPORT_OP_SPMM), "spmm.cusparse");
  EXPECT_EQ(p.vendor_variant(SPARSEPORT_OP_SDDMM), "sddmm.cusparse");
}

TEST(CudaPointers, HostPointersAreRefusedNamingOpAndArgument) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = skewed_csr<int32_t, float>(60, 50, 300, 0.1, kSeed);
  const auto da = to_device(ctx, a);
  const HostDense<float> b = random_dense<float>(50, 8, 8, kSeed + 1);
  HostDense<float> c0(60, 8, 8, 7.0f);
  const DevDense<float> dc = to_device(ctx, c0);
  auto expect_refused = [](auto&& call, const std::string& op, const std::string& arg) {
    try {
      call();
      ADD_FAILURE() << op << " accepted host memory for " << arg;
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(op), std::string::npos) << msg;
      EXPECT_NE(msg.find(arg + " ("), std::string::npos) << msg;
      EXPECT_NE(msg.find("host memory"), std::string::npos) << msg;
    }
  };
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    if (v == "spmm.row_warp_vec4" && !aligned16(b.data.data())) continue;  // would not apply: Unsupported first
    if (v == "spmm.cusparse_spmv") continue;                                 // F == 1 only: Unsupported first
    if (v == "spmm.tc_window") continue;  // f16 / bf16 values only: Unsupported first
    expect_refused([&] { spmm(ctx, da.view, b.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, v}); }, "spmm", "B");
  }
  // Nothing was written when the input was refused.
  EXPECT_EQ(to_host(ctx, dc).data, c0.data);

  const DevDense<float> db = to_device(ctx, b);
  HostDense<float> host_c(60, 8, 8, 0.0f);
  expect_refused([&] { spmm(ctx, da.view, db.view(), host_c.mut()); }, "spmm", "C");
  expect_refused([&] { spmm(ctx, a.view(), db.view(), dc.mut()); }, "spmm", "A.rowptr");

  const HostDense<float> x = random_dense<float>(60, 8, 8, kSeed + 2);
  const DevDense<float> dx = to_device(ctx, x);
  const DevDense<float> dout = to_device(ctx, HostDense<float>(a.nnz(), 1, 1, 0.0f));
  expect_refused([&] { sddmm(ctx, da.view, dx.view(), b.view(), dout.mut()); }, "sddmm", "Y");

  std::vector<int32_t> idx(static_cast<size_t>(a.nnz()), 0);
  const DevDense<float> dsrc = to_device(ctx, random_dense<float>(a.nnz(), 8, 8, kSeed + 3));
  const DevDense<float> dseg = to_device(ctx, HostDense<float>(4, 8, 8, 0.0f));
  expect_refused([&] { segment_reduce(ctx, make_index(a.nnz(), idx.data()), dsrc.view(), dseg.mut()); },
                 "segment_reduce", "index");

  const DevDense<float> dk = to_device(ctx, random_dense<float>(50, 8, 8, kSeed + 4));
  const DevDense<float> datt = to_device(ctx, HostDense<float>(60, 8, 8, 0.0f));
  expect_refused([&] { csr_attention(ctx, da.view, dx.view(), dk.view(), b.view(), datt.mut()); }, "csr_attention",
                 "V");
  expect_refused([&] { (void)csr_transpose(ctx, a.view()); }, "csr_transpose", "A.rowptr");

  std::vector<float> host(16, 1.0f), back(16, 0.0f);
  try {
    ctx.copy_to_backend(host.data(), back.data(), 16 * sizeof(float));
    ADD_FAILURE() << "copy_to_backend accepted a host destination";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("dst"), std::string::npos) << e.what();
  }
}

// ---- spmm --------------------------------------------------------------------------------------

struct Scaling {
  double alpha, beta;
};

// Whether the variant applies (the contract of each variant's doc line), so that an Unsupported
// from the plugin is checked rather than tolerated.
bool spmm_applies(const std::string& v, int64_t F, const DenseView& b, const DenseMutView& c, Reduce r) {
  if (v == "spmm.row_warp_vec4")
    return F % 4 == 0 && b.ld % 4 == 0 && c.ld % 4 == 0 && aligned16(b.data) && aligned16(c.data);
  if (v == "spmm.vector_rows") return F <= 16;
  if (v == "spmm.tc_window") return false;  // f16 / bf16 values only (test_cuda_tc.cpp); these are float and double
  if (v == "spmm.cusparse") return r == Reduce::sum;
  if (v == "spmm.cusparse_spmv")
    return r == Reduce::sum && F == 1 && (b.ld == 1 || b.rows <= 1) && (c.ld == 1 || c.rows <= 1);
  return true;
}

struct Width {
  int64_t F, ldb, ldc, c_offset;
};

// C's columns F .. ld - 1 are still `start`'s, bit for bit (NaN included).
template <class V>
::testing::AssertionResult padding_kept(const HostDense<V>& got, const HostDense<V>& start) {
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t f = got.cols; f < got.ld; ++f) {
      const V g = got.data[static_cast<size_t>(i * got.ld + f)], w = start.data[static_cast<size_t>(i * got.ld + f)];
      if (std::memcmp(&g, &w, sizeof(V)) != 0)
        return ::testing::AssertionFailure() << "C[" << i << ", " << f << "] is padding past F = " << got.cols
                                             << " (ld " << got.ld << ") but was written: " << g;
    }
  return ::testing::AssertionSuccess();
}

// Every variant of spmm, or those of `only` when it is not empty; with `padding`, C's padding
// (columns F .. ld - 1) must be left as it was.
template <class I, class V>
void check_spmm(const Context& ctx, const HostCsr<I, V>& a, const std::vector<Width>& widths, uint64_t seed,
                const std::vector<std::string>& only = {}, bool padding = false) {
  const auto rows = entries_by_row(a);
  const auto da = to_device(ctx, a);
  for (const Width& w : widths) {
    const int64_t F = w.F;
    const HostDense<V> b = random_dense<V>(a.cols, F, w.ldb, seed + 1);
    const HostDense<V> c0 = random_dense<V>(a.rows, F, w.ldc, seed + 2);
    const DevDense<V> db = to_device(ctx, b);
    for (Reduce r : kReduces) {
      const Expected base = reduce_rows(static_cast<int64_t>(rows.size()), F, r, rows, [&](int64_t e, int64_t f) {
        return value_of(a, e) * static_cast<double>(b(a.colind[static_cast<size_t>(e)], f));
      });
      for (Scaling s : {Scaling{1.0, 0.0}, Scaling{-0.5, 2.0}}) {
        Expected want = base;
        for (int64_t i = 0; i < a.rows; ++i)
          for (int64_t f = 0; f < F; ++f) {
            const size_t k = static_cast<size_t>(i * F + f);
            const double old = s.beta != 0.0 ? static_cast<double>(c0(i, f)) : 0.0;
            want.value[k] = s.alpha * want.value[k] + s.beta * old;
            want.scale[k] = std::abs(s.alpha) * want.scale[k] + std::abs(s.beta * old);
          }
        HostDense<V> start = c0;
        // beta == 0 must ignore C's old contents, NaN included.
        if (s.beta == 0.0) std::fill(start.data.begin(), start.data.end(), std::numeric_limits<V>::quiet_NaN());
        for (const std::string& v : only.empty() ? variants(SPARSEPORT_OP_SPMM) : only) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", ldb " + std::to_string(w.ldb) + ", ldc " +
                       std::to_string(w.ldc) + ", C offset " + std::to_string(w.c_offset) + ", " + name(r) +
                       ", alpha " + std::to_string(s.alpha) + ", beta " + std::to_string(s.beta) + ", seed " +
                       std::to_string(seed));
          const DevDense<V> dc = to_device(ctx, start, w.c_offset);
          if (!spmm_applies(v, F, db.view(), dc.mut(), r)) {
            EXPECT_THROW(spmm(ctx, da.view, db.view(), dc.mut(), {r, s.alpha, s.beta, v}), Unsupported);
            continue;
          }
          spmm(ctx, da.view, db.view(), dc.mut(), {r, s.alpha, s.beta, v});
          const HostDense<V> got = to_host(ctx, dc);
          ASSERT_TRUE(close_to(got, want, F));
          if (padding) {
            ASSERT_TRUE(padding_kept(got, start));
          }
        }
      }
    }
  }
}

// At full scale 3000 x 2500 with 20000 entries: a mega-row of 8000 (16 CTA items of
// spmm.hub_split, about 63 chunks of spmm.nnz_balanced), hubs of 600. At 0.1 the floor, 600 x 500
// with 4000: a mega-row of 1600, still 4 items of 512 (hub_split below 4 M entries: items of 512,
// threshold 64, x 4 or x 2 with teams of slices) and about 13 chunks of 128 (nnz_balanced's
// minimum), 3 hubs of 600 (2 items each), and every width still picks its own lane shape.
TEST(CudaSpmm, EveryVariantFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, float>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 10);
  check_spmm(ctx, a,
             {{1, 1, 1, 0}, {13, 13, 13, 0}, {16, 16, 16, 0}, {32, 32, 32, 0}, {64, 64, 64, 0}, {256, 256, 256, 0},
              {32, 36, 33, 1}},
             kSeed + 10);
}

// Sizes as EveryVariantFloatInt32's (at 0.1: a mega-row of 1600 in 4000 entries, 2 hubs of 600).
TEST(CudaSpmm, EveryVariantDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int64_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 20, false);
  check_spmm(ctx, a, {{1, 1, 1, 0}, {16, 16, 16, 0}, {64, 64, 64, 0}}, kSeed + 20);
}

// 12000 entries, a mega-row of 3600. At 0.1 the floor, 500 x 450 with 4000: a mega-row of 1200,
// still 3 hub_split items of 512 and about 10 nnz_balanced chunks, 2 or 3 hubs of 600.
TEST(CudaSpmm, EveryVariantMixedTypes) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const Size full{2000, 1800, 12000}, at_least{500, 450, 4000};
  check_spmm(ctx, scaled_skewed_csr<int64_t, float>(full, at_least, 0.3, kSeed + 30), {{32, 32, 32, 0}}, kSeed + 30);
  check_spmm(ctx, scaled_skewed_csr<int32_t, double>(full, at_least, 0.3, kSeed + 40),
             {{13, 13, 13, 0}, {64, 68, 64, 0}}, kSeed + 40);
}

// spmm.hub_split gives each regular row a team of slices when m x G lanes cannot fill the GPU,
// F <= 64 and the mean row has at least 8 entries (any mean on a tiny matrix): 1500 rows take
// S = 4 at F = 32 and S = 2 at F = 36 (lanes of the tile idle) and 64; 6000 rows of mean degree
// ~10 take S = 2 at F = 32 (on 132 SMs); F >= 96 runs whole-warp groups. Most rows have fewer
// entries than slices, so empty slices are exercised too, and the threshold grows with S (rows of
// 50-210 entries stay in the teams). Three tests, so that sharded runs can put them side by side.
// At 0.1 the 1500 x 1200 matrix (30565 entries, a mega-row of 16000) is the floor, 250 x 200 with
// 6000 entries: still tiny (S = 4 / 2 / whole warps as above), a mega-row of 2400 (5 items of 512
// above the team's threshold), 4 hubs of 600 and 4 rows of 50-210 entries.
const Size kSmallFull{1500, 1200, 40000}, kSmallFloor{250, 200, 6000};

TEST(CudaSpmm, SmallMatricesTeamsOfSlices) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_spmm(ctx, scaled_skewed_csr<int32_t, float>(kSmallFull, kSmallFloor, 0.4, kSeed + 45),
             {{32, 32, 32, 0}, {36, 36, 36, 0}, {64, 64, 64, 0}}, kSeed + 45);
}

TEST(CudaSpmm, SmallMatricesWholeWarpGroups) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_spmm(ctx, scaled_skewed_csr<int32_t, float>(kSmallFull, kSmallFloor, 0.4, kSeed + 45),
             {{96, 96, 96, 0}, {128, 128, 128, 0}, {256, 256, 256, 0}}, kSeed + 45);
}

// The size is what picks the teams here: more than 32 x SMs rows (not tiny), mean degree 8 to 15.
// Below full scale spmm.hub_split keeps such a size at F = 32 and 64 (at 0.1 the floor, 5000 rows
// with 45000 entries: mean 9, not tiny on up to 156 SMs, so S = 2 still), and F = 128 and 256
// (whole-warp groups at any size) run every variant on a scaled input (at 0.1 600 x 500 with 6000
// entries: a mega-row of 2400, 5 items of 512 at threshold 64, hubs of 600).
TEST(CudaSpmm, SmallMatricesTeamsOfSlicesDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const Size full{6000, 5000, 60000};
  if (full_scale()) {
    check_spmm(ctx, skewed_csr<int64_t, double>(6000, 5000, 60000, 0.4, kSeed + 46, false),
               {{32, 32, 32, 0}, {64, 64, 64, 0}, {128, 128, 128, 0}, {256, 256, 256, 0}}, kSeed + 46);
    return;
  }
  check_spmm(ctx, scaled_skewed_csr<int64_t, double>(full, {5000, 4200, 45000}, 0.4, kSeed + 46, false),
             {{32, 32, 32, 0}, {64, 64, 64, 0}}, kSeed + 46, {"spmm.hub_split"});
  check_spmm(ctx, scaled_skewed_csr<int64_t, double>(full, {600, 500, 6000}, 0.4, kSeed + 46, false),
             {{128, 128, 128, 0}, {256, 256, 256, 0}}, kSeed + 46);
}

// The widths of SpMV and few-vector SpMM (every lane tile of spmm.vector_rows and spmm.merge_path,
// full and masked, contiguous and padded, C misaligned) on the skewed input of
// EveryVariantFloatInt32: its mega-row of 8000 entries crosses 31 to 62 merge_path chunks (at 0.1
// still 6 to 12), whose pieces the fix-up kernel folds; the rows of 50-210 entries cross lanes.
TEST(CudaSpmm, SmallWidthsSkewed) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, float>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 60);
  check_spmm(ctx, a,
             {{1, 1, 1, 0}, {1, 3, 2, 0}, {2, 2, 2, 0}, {3, 3, 3, 0}, {4, 4, 4, 0}, {4, 4, 5, 1}, {7, 7, 7, 0},
              {8, 8, 8, 0}, {16, 16, 16, 0}, {16, 17, 16, 1}},
             kSeed + 60);
}

TEST(CudaSpmm, SmallWidthsDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int64_t, double>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 61, false);
  check_spmm(ctx, a, {{1, 1, 1, 0}, {2, 2, 2, 0}, {5, 5, 5, 0}, {16, 16, 16, 0}}, kSeed + 61);
}

// ---- spmm.merge_path above F = 16 (lanes across F: spmm_merge_path_wide.cu) ---------------------

// Power-law rows: degrees from a Pareto tail of exponent 1.2 from 2, capped at `cap` (most rows of
// a few entries, a few percent of tens, a few of hundreds to thousands), so rows end inside
// chunks, fill whole chunks and cross chunk ends. With `empty_runs`, the first and the last row
// and runs of 300 rows are empty: whole chunks of row ends only, and chunks that start or end in
// them. Columns random and unsorted, repeats allowed.
template <class I, class V>
HostCsr<I, V> power_law_csr(int64_t rows, int64_t cols, int64_t cap, uint64_t seed, bool with_values, bool empty_runs) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), val(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t d = std::min(cap, static_cast<int64_t>(2.0 * std::pow(1.0 - u(rng), -1.0 / 1.2)));
    if (empty_runs && (i == 0 || i == rows - 1 || (i / 300) % 3 == 1)) d = 0;
    for (int64_t k = 0; k < d; ++k) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (with_values) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

// For each F: B and C contiguous; both padded with rows that stay 16-byte aligned (ld a multiple
// of `vec`, the values of a 16-byte vector); B's rows unaligned (ld F + 1) with C padded and
// misaligned by one element. 16-byte vectors run in the first two where F % vec == 0, scalar lanes
// otherwise.
std::vector<Width> wide_widths(std::initializer_list<int64_t> fs, int64_t vec) {
  std::vector<Width> w;
  for (int64_t F : fs) {
    w.push_back({F, F, F, 0});
    w.push_back({F, F + vec, F + 2 * vec, 0});
    w.push_back({F, F + 1, F + 3, 1});
  }
  return w;
}

// The lane shapes of merge_path above F = 16, on the skewed input of SmallWidthsSkewed (a mega-row
// of 8000 entries across about 60 chunks of 128 path items, so its tails are folded in groups
// first; hubs of 600 across 4 or 5; rows of 50-210 entries across sub-groups): float4 lanes in
// sub-groups of 8 (F = 32: four sub-groups per warp), 16 (F = 64, 2), 32 (96, 128) and 32 with two
// vectors a lane (256); scalar lanes with one (17, and every F unaligned), two (64) and four
// (96 to 256, 256 in two tiles) columns; padding untouched. At 0.1 600 x 500 with 4000 entries: a
// mega-row of 1600 (about 12 chunks), 2 hubs of 600.
TEST(CudaSpmm, MergePathWideSkewed) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = scaled_skewed_csr<int32_t, float>({3000, 2500, 20000}, {600, 500, 4000}, 0.4, kSeed + 150);
  std::vector<Width> widths = wide_widths({17, 32, 64, 96, 128, 256}, 4);
  widths.push_back({64, 64, 68, 1});  // B aligned, C not: scalar lanes
  widths.push_back({20, 20, 20, 0});  // float4 lanes, sub-groups of 8 with 3 idle lanes
  check_spmm(ctx, a, widths, kSeed + 150, {"spmm.merge_path"}, true);
}

// Power-law rows, double values (double2 lanes: sub-groups of 16 at F = 32, 32 at 64, two vectors a
// lane at 66 (a tile of 128 partly idle), 96 and 128, 256 in two tiles), int64 indices. 3000 x 2500, about 28000 entries, some 20 rows
// above 128 entries; at 0.1 1000 x 1000 with about 9000.
TEST(CudaSpmm, MergePathWidePowerLawDoubleInt64) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = power_law_csr<int64_t, double>(scaled(3000, 1000), scaled(2500, 1000), 3000, kSeed + 151, true, false);
  check_spmm(ctx, a, wide_widths({17, 32, 64, 66, 96, 128, 256}, 2), kSeed + 151, {"spmm.merge_path"}, true);
}

// Runs of 300 empty rows between power-law ones (whole chunks of empty rows, and chunks that begin
// or end in them: beta * C or 0 for every reduction), a pattern (no values), int64 indices with
// float values and int32 with double.
TEST(CudaSpmm, MergePathWideEmptyRuns) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_spmm(ctx, power_law_csr<int64_t, float>(scaled(4000, 1500), 2000, 2000, kSeed + 152, false, true),
             wide_widths({17, 32, 64, 128}, 4), kSeed + 152, {"spmm.merge_path"}, true);
  check_spmm(ctx, power_law_csr<int32_t, double>(scaled(4000, 1500), 2000, 2000, kSeed + 153, true, true),
             wide_widths({32, 96}, 2), kSeed + 153, {"spmm.merge_path"}, true);
}

// A mega-row of 12000 entries (about 95 chunks of 128 path items, so its tails are folded in groups
// of 32 before the fix-up folds the groups in order) next to hubs and short rows; then one of
// 144000 (about 1100 chunks: groups of 32, then groups of 32 x 32). Their sizes are the point, so
// they are kept at every scale (20000 and 160000 entries).
TEST(CudaSpmm, MergePathWideMegaRowAcrossManyChunks) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_spmm(ctx, skewed_csr<int32_t, double>(2000, 1500, 20000, 0.6, kSeed + 154), wide_widths({32, 128}, 2),
             kSeed + 154, {"spmm.merge_path"}, true);
  check_spmm(ctx, skewed_csr<int64_t, float>(2000, 1500, 20000, 0.6, kSeed + 155, false), wide_widths({32, 64, 100}, 4),
             kSeed + 155, {"spmm.merge_path"}, true);
  check_spmm(ctx, skewed_csr<int32_t, float>(2000, 1500, 160000, 0.9, kSeed + 156), {{64, 64, 64, 0}, {40, 41, 43, 1}},
             kSeed + 156, {"spmm.merge_path"}, true);
}

// spmm.hub_split's row order (kernels/row_order.hpp), on the host: a power-law degree
// sequence gets the rows of at most T entries, each window's rows longest first (equal lengths in
// row order) and no row outside its window; a uniform sequence, which gains nothing, gets none.
TEST(CudaRowOrder, PowerLawRowsSortedWithinWindowsUniformLeftAlone) {
  namespace ro = sparseport::row_order;
  const int64_t T = 64;
  const auto a = power_law_csr<int32_t, float>(5000, 4000, 300, kSeed + 160, false, false);
  const std::vector<int32_t> order = ro::regular_order(a.rowptr, T);
  auto deg = [&](int64_t r) { return int64_t{a.rowptr[static_cast<size_t>(r) + 1] - a.rowptr[static_cast<size_t>(r)]}; };
  std::vector<int32_t> regular;
  std::vector<int64_t> natural;
  for (int64_t r = 0; r < a.rows; ++r)
    if (deg(r) <= T) {
      regular.push_back(static_cast<int32_t>(r));
      natural.push_back(deg(r));
    }
  ASSERT_LT(regular.size(), static_cast<size_t>(a.rows)) << "the input should have rows above T";
  ASSERT_EQ(order.size(), regular.size()) << "a power-law input should be reordered";
  std::vector<int64_t> sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t w = i / static_cast<size_t>(ro::kOrderWindow);
    sorted.push_back(deg(order[i]));
    // Within the window of the same regular rows: rows keep their neighbours.
    std::vector<int32_t> win(regular.begin() + static_cast<std::ptrdiff_t>(w * ro::kOrderWindow),
                             regular.begin() + static_cast<std::ptrdiff_t>(std::min(regular.size(), (w + 1) * ro::kOrderWindow)));
    ASSERT_TRUE(std::binary_search(win.begin(), win.end(), order[i])) << "row " << order[i] << " left its window";
    if (i % static_cast<size_t>(ro::kOrderWindow) != 0) {
      const int64_t d0 = deg(order[i - 1]), d1 = deg(order[i]);
      ASSERT_TRUE(d0 > d1 || (d0 == d1 && order[i - 1] < order[i])) << "position " << i;
    }
  }
  std::vector<int32_t> perm = order;
  std::sort(perm.begin(), perm.end());
  EXPECT_EQ(perm, regular);
  EXPECT_GE(ro::cta_use(sorted), ro::kOrderGain * ro::cta_use(natural));
  std::printf("power law: CTA gather-round use %.2f in row order, %.2f sorted\n", ro::cta_use(natural), ro::cta_use(sorted));

  std::vector<int32_t> uniform(5001);
  for (size_t r = 0; r < uniform.size(); ++r) uniform[r] = static_cast<int32_t>(17 * r);
  EXPECT_TRUE(ro::regular_order(uniform, T).empty());
}

// The same order where a window holds a regular row of 4 windows' length or more (a threshold
// raised by SPARSEPORT_HUB_T or a dense graph's mean floor), which the comparison sort takes
// instead of the counting sort: rows of lengths 1..3 and 0 with a 5000-entry row every 700 rows.
TEST(CudaRowOrder, WindowsWithVeryLongRegularRowsSortTheSameWay) {
  namespace ro = sparseport::row_order;
  std::vector<int32_t> rowptr{0};
  for (int32_t r = 0; r < 3000; ++r) rowptr.push_back(rowptr.back() + (r % 700 == 5 ? 5000 : r % 4));
  const std::vector<int32_t> order = ro::regular_order(rowptr, 10000);
  ASSERT_EQ(order.size(), 3000u) << "every row is regular, and the long rows make sorting pay";
  auto deg = [&](int32_t r) { return rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]; };
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t w = i / static_cast<size_t>(ro::kOrderWindow);
    ASSERT_EQ(static_cast<size_t>(order[i]) / static_cast<size_t>(ro::kOrderWindow), w) << "row " << order[i] << " left its window";
    if (i % static_cast<size_t>(ro::kOrderWindow) != 0) {
      const int32_t d0 = deg(order[i - 1]), d1 = deg(order[i]);
      ASSERT_TRUE(d0 > d1 || (d0 == d1 && order[i - 1] < order[i])) << "position " << i;
    }
  }
  EXPECT_EQ(deg(order[0]), 5000) << "a window starts with its longest row";
}

// spmm.hub_split on power-law inputs that it takes in the sorted order (checked on the host with
// both thresholds its lane shapes use here), every reduction and width, padding untouched; empty
// rows too (runs of them sort to the end of each window).
TEST(CudaSpmm, HubSplitRowOrderPowerLaw) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = power_law_csr<int32_t, float>(scaled(20000, 5000), 8000, 400, kSeed + 161, true, false);
  const auto b = power_law_csr<int64_t, double>(scaled(20000, 5000), 8000, 400, kSeed + 162, false, true);
  for (int64_t t : {64, 128, 256}) {
    ASSERT_FALSE(sparseport::row_order::regular_order(a.rowptr, t).empty()) << "T " << t;
    ASSERT_FALSE(sparseport::row_order::regular_order(b.rowptr, t).empty()) << "T " << t;
  }
  check_spmm(ctx, a, wide_widths({13, 32, 64, 128, 256}, 4), kSeed + 161, {"spmm.hub_split"}, true);
  check_spmm(ctx, b, wide_widths({32, 64, 96}, 2), kSeed + 162, {"spmm.hub_split"}, true);
}

// spmm.hub_split's regular rows end in masked batches (kernels/cuda/spmm_rows.cuh, MASKED) in its
// float and double 4-wide kernels where a group walks a row alone: rows of 0 to 12 entries (so
// every remainder 0-7 after the batches of 8, and rows that are remainder only) beside hubs of 300
// (CTA items), columns repeated within rows, against float64 for every reduction and scaling. The
// note says which path ran: masked where F % 4 == 0, one at a time at F = 13 (scalar lanes). 8000
// rows of mean length 6: no teams of slices on any GPU of up to 250 SMs (spmm_hub.cu: a tiny
// matrix has rows x 32 <= SMs x 1024, and teams otherwise need a mean row of 8 or more).
template <class I, class V>
HostCsr<I, V> short_rows_with_hubs(uint64_t seed) {
  HostCsr<I, V> a;
  a.rows = 8000;
  a.cols = 3000;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, a.cols - 1);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t len = r % 800 == 7 ? 300 : r % 13;
    const int64_t c0 = col(rng);
    for (int64_t k = 0; k < len; ++k) {
      // Every fifth entry repeats the row's first column: duplicates fold like any other entry.
      a.colind.push_back(static_cast<I>(k % 5 == 4 ? c0 : col(rng)));
      a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

TEST(CudaSpmm, HubSplitShortRowsEndInMaskedBatches) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  auto run = [&](const auto& a, int64_t F, uint64_t seed) {
    SCOPED_TRACE("F " + std::to_string(F));
    check_spmm(ctx, a, {{F, F, F, 0}}, seed, {"spmm.hub_split"});
    const std::string note = diagnostics(ctx).note;
    const bool masked = note.find("masked batches") != std::string::npos;
    EXPECT_EQ(masked, F % 4 == 0) << note;
    EXPECT_NE(note.find("spmm.hub_split"), std::string::npos) << note;
  };
  const auto a = short_rows_with_hubs<int32_t, float>(kSeed + 163);
  for (int64_t F : {13, 16, 32, 64, 128}) run(a, F, kSeed + 163);
  const auto b = short_rows_with_hubs<int64_t, double>(kSeed + 164);
  for (int64_t F : {32, 64}) run(b, F, kSeed + 164);
}

// spmm.hub_split's rows that 16-byte vectors cannot take, wider than 32 columns, go in one pass of
// strided columns (kernels/cuda/spmm_rows.cuh, STRIDED): each shape (3 columns a lane in groups of
// 16 at F <= 48, 2, 3 or 4 in groups of 32 above; tiles of 128 past 128) with F unaligned, with an
// aligned F on rows of ld F + 1, and C misaligned by one element; padding untouched; every
// reduction and scaling against float64, on the power-law input of HubSplitRowOrderPowerLaw
// (hubs as CTA items beside the regular rows). The scalar lanes it replaces
// (SPARSEPORT_HUB_STRIDED=0) give the same bits: both fold a column's entries in storage order.
TEST(CudaSpmm, HubSplitStridedColumns) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = power_law_csr<int32_t, float>(scaled(20000, 5000), 8000, 400, kSeed + 165, true, false);
  const auto b64 = power_law_csr<int64_t, float>(scaled(20000, 5000), 8000, 400, kSeed + 166, false, true);
  std::vector<Width> widths;
  for (int64_t F : {33, 47, 63, 71, 97, 130, 257}) {
    widths.push_back({F, F, F, 0});
    widths.push_back({F, F + 1, F + 3, 1});
  }
  widths.push_back({64, 65, 64, 0});
  check_spmm(ctx, a, widths, kSeed + 165, {"spmm.hub_split"}, true);
  check_spmm(ctx, b64, {{47, 47, 47, 0}, {100, 101, 103, 1}}, kSeed + 166, {"spmm.hub_split"}, true);

  const auto da = to_device(ctx, a);
  for (int64_t F : {47, 130}) {
    SCOPED_TRACE("F " + std::to_string(F));
    const DevDense<float> db = to_device(ctx, random_dense<float>(a.cols, F, F, kSeed + 167));
    const HostDense<float> c0(a.rows, F, F, 0.0f);
    auto run = [&](const char* strided) {
      const sparseport_test::ScopedEnv e("SPARSEPORT_HUB_STRIDED", strided);
      DevDense<float> dc = to_device(ctx, c0);
      spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
      return std::make_pair(to_host(ctx, dc), std::string(diagnostics(ctx).note));
    };
    const auto [strided, note] = run(nullptr);
    const auto [scalar, scalar_note] = run("0");
    EXPECT_NE(note.find("strided columns"), std::string::npos) << note;
    EXPECT_EQ(scalar_note.find("strided columns"), std::string::npos) << scalar_note;
    ASSERT_EQ(strided.data.size(), scalar.data.size());
    EXPECT_EQ(std::memcmp(strided.data.data(), scalar.data.data(), strided.data.size() * sizeof(float)), 0)
        << "strided columns and scalar lanes differ in bits";
  }
}

// spmm.hub_split's plan depends on rowptr's values only: a matrix whose rowptr holds the same values
// at another address (the transpose of a symmetric graph, a copy of A) shares the cached plan, with
// its own columns and values; one of the same shape whose rowptr differs (A's rows reversed) builds
// its own. The shared plan outlives the matrix it was built for. Each against float64, every
// reduction, both index types.
template <class I>
void check_shared_hub_plan(const Context& ctx, uint64_t seed) {
  const auto a = power_law_csr<I, float>(scaled(20000, 5000), 8000, 400, seed, true, false);
  HostCsr<I, float> same = a, other = a;
  for (size_t e = 0; e < same.colind.size(); ++e) {
    same.colind[e] = static_cast<I>((static_cast<int64_t>(same.colind[e]) * 7 + 3) % same.cols);
    same.values[e] = -0.5f * same.values[e];
  }
  other.colind.clear();
  other.values.clear();
  other.rowptr.assign(1, 0);
  for (int64_t r = a.rows - 1; r >= 0; --r) {
    for (I e = a.rowptr[static_cast<size_t>(r)]; e < a.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      other.colind.push_back(a.colind[static_cast<size_t>(e)]);
      other.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    other.rowptr.push_back(static_cast<I>(other.colind.size()));
  }
  ASSERT_NE(other.rowptr, a.rowptr);
  const std::string shared = "the plan shared with an equal rowptr's";
  const auto note = [&] { return std::string(diagnostics(ctx).note); };
  const std::vector<Width> width{{32, 32, 32, 0}};
  std::optional<DevCsr<I, float>> da(to_device(ctx, a));
  const DevDense<float> db = to_device(ctx, random_dense<float>(a.cols, 32, 32, seed + 1));
  DevDense<float> dc = to_device(ctx, random_dense<float>(a.rows, 32, 32, seed + 2));
  spmm(ctx, da->view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
  EXPECT_EQ(note().find(shared), std::string::npos) << note();
  check_spmm(ctx, same, width, seed + 3, {"spmm.hub_split"});
  EXPECT_NE(note().find(shared), std::string::npos) << note();
  check_spmm(ctx, other, width, seed + 4, {"spmm.hub_split"});
  EXPECT_EQ(note().find(shared), std::string::npos) << note();
  // A's arrays freed (its plan dropped from the cache): the copy's shared plan keeps the arrays.
  const auto dsame = to_device(ctx, same);
  spmm(ctx, dsame.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
  EXPECT_NE(note().find(shared), std::string::npos) << note();
  da.reset();
  check_spmm(ctx, same, width, seed + 5, {"spmm.hub_split"});  // another copy, at other addresses again
  EXPECT_NE(note().find(shared), std::string::npos) << note();
}

TEST(CudaSpmm, HubSplitSharesThePlanOfAnEqualRowptr) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_shared_hub_plan<int32_t>(ctx, kSeed + 167);
  check_shared_hub_plan<int64_t>(ctx, kSeed + 168);
}

TEST(CudaSpmm, MatrixWithoutEntriesScalesC) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  HostCsr<int32_t, float> a;
  a.rows = 50;
  a.cols = 40;
  a.rowptr.assign(51, 0);
  check_spmm(ctx, a, {{8, 8, 8, 0}}, kSeed + 50);
}

// spmm.cusparse tries ALG3 only on canonical CSR (columns strictly increasing in every row; its
// preprocessing wrote out of bounds on repeated columns), checked on the GPU when the plan is built:
// a repeat or a descent anywhere in one row of 5000 rules it out, a descent from one row to the next
// (every row restarts at column 0) and empty and one-entry rows do not. The plan's note says
// whether ALG3 was refused; every result against float64.
TEST(CudaSpmm, CusparseTriesAlg3OnlyOnCanonicalRows) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  auto matrix = [](int64_t broken_row, int kind) {
    HostCsr<int32_t, float> a;
    a.rows = 5000;
    a.cols = 3000;
    for (int64_t i = 0; i < a.rows; ++i) {
      const int64_t len = i % 7 == 3 ? 0 : (i % 7 == 5 ? 1 : 2 + i % 40);
      for (int64_t k = 0; k < len; ++k) {
        a.colind.push_back(static_cast<int32_t>((k * 37 + i % 11) % a.cols));  // increasing in k (k * 37 < cols)
        a.values.push_back(static_cast<float>((i + k) % 13) * 0.25f - 1.5f);
      }
      if (i == broken_row && len >= 3) {
        auto last = a.colind.end() - 1;
        if (kind == 0)
          *last = *(last - 1);  // a repeat
        else
          std::iter_swap(last - 2, last - 1);  // a descent, no repeat
      }
      a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
    }
    return a;
  };
  struct Case {
    int64_t broken_row;
    int kind;
    bool alg3;
  };
  // Rows 4038 and 4999 (the last) have 40 and 41 entries; -1: none broken.
  for (const Case c : {Case{-1, 0, true}, Case{4038, 0, false}, Case{4038, 1, false}, Case{4999, 1, false}}) {
    SCOPED_TRACE("broken row " + std::to_string(c.broken_row) + (c.kind == 0 ? " (repeat)" : " (descent)"));
    check_spmm(ctx, matrix(c.broken_row, c.kind), {{16, 16, 16, 0}}, kSeed + 170, {"spmm.cusparse"});
    const std::string note = diagnostics(ctx).note;
    EXPECT_NE(note.find("spmm.cusparse plan"), std::string::npos) << note;
    EXPECT_EQ(note.find("ALG3: not tried") == std::string::npos, c.alg3) << note;
  }
}

// From 4M entries (kSampleNnz in spmm_cusparse.cu) the plan races ALG2 and ALG3 on a sample of A's
// rows (16 runs of consecutive rows) and runs the race again at full size only where it was close:
// either way the answer is the reference's, for int32 and int64 indices, and the note says what
// the sample found. A's runs of rows differ (row lengths cycle, a hub every 4999 rows), so the
// sample's rowptr and colind are built from pieces of A that start at different entries.
TEST(CudaSpmm, CusparseRacesLargeInputsOnASample) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  auto matrix = [](auto index) {
    using I = decltype(index);
    HostCsr<I, float> a;
    a.rows = 300000;
    a.cols = 1 << 20;
    a.rowptr.reserve(static_cast<size_t>(a.rows) + 1);
    for (int64_t i = 0; i < a.rows; ++i) {
      const int64_t len = i % 4999 == 17 ? 3000 : 2 + (i * 7) % 29;
      const int64_t stride = a.cols / len;  // columns strictly increasing within the row
      for (int64_t k = 0; k < len; ++k) {
        a.colind.push_back(static_cast<I>(k * stride + (i * 131) % stride));
        a.values.push_back(static_cast<float>((i + 3 * k) % 17) * 0.125f - 1.0f);
      }
      a.rowptr.push_back(static_cast<I>(a.colind.size()));
    }
    return a;
  };
  const auto check = [&](const auto& a) {
    ASSERT_GE(a.colind.size(), size_t{1} << 22);
    check_spmm(ctx, a, {{8, 8, 8, 0}}, kSeed + 171, {"spmm.cusparse"});
    const std::string note = diagnostics(ctx).note;
    EXPECT_NE(note.find("spmm.cusparse plan"), std::string::npos) << note;
    EXPECT_NE(note.find("sample of 37488 rows"), std::string::npos) << note;  // 16 runs of 300000 / 128 rows
  };
  check(matrix(int32_t{}));
  check(matrix(int64_t{}));
}

// ---- sddmm -------------------------------------------------------------------------------------

template <class I, class V>
void check_sddmm(const Context& ctx, const HostCsr<I, V>& a, uint64_t seed) {
  const auto da = to_device(ctx, a);
  // Every shape of sddmm.nnz_balanced: 4, 8 (one or two lanes per dot product), 12 (four lanes,
  // walked), 32..256 (eight lanes, 1 to 8 vectors each, unrolled), 36 (eight lanes, walked), and
  // the scalar paths (1, 7, 130).
  for (int64_t F : {1, 4, 7, 8, 12, 32, 36, 64, 128, 130, 256}) {
    const HostDense<V> x = random_dense<V>(a.rows, F, F, seed + 1);
    const HostDense<V> y = random_dense<V>(a.cols, F, F, seed + 2);
    const DevDense<V> dx = to_device(ctx, x), dy = to_device(ctx, y);
    Expected want;
    want.resize(static_cast<size_t>(a.nnz()));
    for (int64_t i = 0; i < a.rows; ++i)
      for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
        double d = 0, mag = 0;
        for (int64_t f = 0; f < F; ++f) {
          const double p = static_cast<double>(x(i, f)) * static_cast<double>(y(a.colind[static_cast<size_t>(e)], f));
          d += p;
          mag += std::abs(p);
        }
        const double wv = value_of(a, e);
        want.value[static_cast<size_t>(e)] = wv * d;
        want.scale[static_cast<size_t>(e)] = std::abs(wv) * mag;
        want.terms[static_cast<size_t>(e)] = static_cast<double>(F);
      }
    for (int64_t ldo : {1, 3}) {
      for (const std::string& v : variants(SPARSEPORT_OP_SDDMM)) {
        SCOPED_TRACE(v + ", F " + std::to_string(F) + ", out.ld " + std::to_string(ldo) + ", seed " +
                     std::to_string(seed));
        const DevDense<V> dout = to_device(ctx, HostDense<V>(a.nnz(), 1, ldo, std::numeric_limits<V>::quiet_NaN()));
        if (v == "sddmm.vec4" && F % 4 != 0) {
          EXPECT_THROW(sddmm(ctx, da.view, dx.view(), dy.view(), dout.mut(), {v}), Unsupported);
          continue;
        }
        sddmm(ctx, da.view, dx.view(), dy.view(), dout.mut(), {v});
        ASSERT_TRUE(close_to(to_host(ctx, dout), want, 1));
      }
    }
  }
}

// 15000 entries, a mega-row of 6000 (one warp's row in sddmm.row_warp and vec4; nnz_balanced has
// no size threshold). At 0.1 the floor, 400 x 300 with 3000: a mega-row of 1200, 2 hubs of 600.
const Size kSddmmFull{2000, 1500, 15000}, kSddmmFloor{400, 300, 3000};

TEST(CudaSddmm, EveryVariantFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_sddmm(ctx, scaled_skewed_csr<int32_t, float>(kSddmmFull, kSddmmFloor, 0.4, kSeed + 60), kSeed + 60);
}

TEST(CudaSddmm, EveryVariantDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_sddmm(ctx, scaled_skewed_csr<int64_t, double>(kSddmmFull, kSddmmFloor, 0.4, kSeed + 70, false), kSeed + 70);
}

// ---- segment reductions ---------------------------------------------------------------------

template <class I, class V>
void check_segments(const Context& ctx, uint64_t seed, bool weighted) {
  // Destinations of a skewed CSR's entries in row order: sorted, with a mega-segment spanning many
  // chunks, hub segments and empty ones. 20000 messages, a mega-segment of 8000: about 63 chunks
  // of 128 (the minimum of nnz_balanced and of the deterministic variants at this size), 157
  // chunks and two fix-up passes in the deterministic ones. At 0.1 the floor, 450 x 360 with 6000
  // (5526 and 6000 placed): a mega-segment of 2400, about 19 chunks; 44-47 chunks, still two
  // fix-up passes.
  const auto a = scaled_skewed_csr<I, V>({1500, 1200, 20000}, {450, 360, 6000}, 0.4, seed, weighted);
  const auto rows = entries_by_row(a);
  std::vector<I> idx;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      idx.push_back(static_cast<I>(i));
  const int64_t E = static_cast<int64_t>(idx.size());
  // The same messages in a shuffled order for scatter_reduce.
  std::vector<int64_t> perm(static_cast<size_t>(E));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed + 5));
  std::vector<I> shuffled_idx(static_cast<size_t>(E));
  for (int64_t t = 0; t < E; ++t) shuffled_idx[static_cast<size_t>(t)] = idx[static_cast<size_t>(perm[static_cast<size_t>(t)])];
  const Buffer d_idx = upload(ctx, idx), d_shuffled = upload(ctx, shuffled_idx), d_col = upload(ctx, a.colind);
  Buffer d_w;
  if (weighted) d_w = upload(ctx, a.values);
  for (int64_t F : {1, 5, 64}) {
    for (int64_t ld : {F, F + 1}) {
      const HostDense<V> src = random_dense<V>(E, F, ld, seed + 1);
      HostDense<V> shuffled_src(E, F, ld);
      for (int64_t t = 0; t < E; ++t)
        for (int64_t f = 0; f < F; ++f) shuffled_src(t, f) = src(perm[static_cast<size_t>(t)], f);
      const HostDense<V> x = random_dense<V>(a.cols, F, ld, seed + 2);
      const DevDense<V> d_src = to_device(ctx, src), d_ssrc = to_device(ctx, shuffled_src), d_x = to_device(ctx, x);
      for (Reduce r : kReduces) {
        const Expected seg = reduce_rows(static_cast<int64_t>(rows.size()), F, r, rows, [&](int64_t e, int64_t f) { return static_cast<double>(src(e, f)); });
        const Expected gas = reduce_rows(static_cast<int64_t>(rows.size()), F, r, rows, [&](int64_t e, int64_t f) {
          return value_of(a, e) * static_cast<double>(x(a.colind[static_cast<size_t>(e)], f));
        });
        const HostDense<V> poison(a.rows, F, ld, std::numeric_limits<V>::quiet_NaN());
        for (const std::string& v : variants(SPARSEPORT_OP_SEGMENT_REDUCE)) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", ld " + std::to_string(ld) + ", " + name(r) + ", seed " +
                       std::to_string(seed));
          const DevDense<V> out = to_device(ctx, poison);
          segment_reduce(ctx, make_index(E, static_cast<const I*>(d_idx.data())), d_src.view(), out.mut(), {r, v});
          ASSERT_TRUE(close_to(to_host(ctx, out), seg, F));
        }
        for (const std::string& v : variants(SPARSEPORT_OP_SCATTER_REDUCE)) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", ld " + std::to_string(ld) + ", " + name(r));
          const DevDense<V> out = to_device(ctx, poison);
          scatter_reduce(ctx, make_index(E, static_cast<const I*>(d_shuffled.data())), d_ssrc.view(), out.mut(), {r, v});
          ASSERT_TRUE(close_to(to_host(ctx, out), seg, F));
        }
        const CooView edges = make_coo<I, V>(a.rows, a.cols, E, static_cast<const I*>(d_idx.data()),
                                             static_cast<const I*>(d_col.data()),
                                             weighted ? static_cast<const V*>(d_w.data()) : nullptr);
        for (const std::string& v : variants(SPARSEPORT_OP_GATHER_SCATTER)) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", ld " + std::to_string(ld) + ", " + name(r));
          const DevDense<V> out = to_device(ctx, poison);
          gather_scatter(ctx, edges, d_x.view(), out.mut(), {r, v});
          ASSERT_TRUE(close_to(to_host(ctx, out), gas, F));
        }
      }
    }
  }
}

TEST(CudaSegment, EveryVariantFloatInt32Weighted) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_segments<int32_t, float>(ctx, kSeed + 80, true);
}

TEST(CudaSegment, EveryVariantDoubleInt64Unweighted) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_segments<int64_t, double>(ctx, kSeed + 90, false);
}

// ---- attention ---------------------------------------------------------------------------------

template <class I, class V>
void check_attention(const Context& ctx, const HostCsr<I, V>& a, const std::vector<int64_t>& Fs,
                     const std::vector<int64_t>& Fvs, uint64_t seed) {
  const auto da = to_device(ctx, a);
  const double tol = std::is_same_v<V, float> ? 2e-5 : 1e-12;
  for (int64_t F : Fs) {
    for (int64_t Fv : Fvs) {
      const HostDense<V> q = random_dense<V>(a.rows, F, F, seed + 1), k = random_dense<V>(a.cols, F, F, seed + 2),
                         vv = random_dense<V>(a.cols, Fv, Fv, seed + 3);
      const DevDense<V> dq = to_device(ctx, q), dk = to_device(ctx, k), dv = to_device(ctx, vv);
      for (double scale : {0.0, 0.7}) {
        const double sc = scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(F));
        HostDense<double> want(a.rows, Fv);
        for (int64_t i = 0; i < a.rows; ++i) {
          const I e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
          std::vector<double> s;
          for (I e = e0; e < e1; ++e) {
            double d = 0;
            for (int64_t f = 0; f < F; ++f) d += double(q(i, f)) * double(k(a.colind[static_cast<size_t>(e)], f));
            s.push_back(sc * d);
          }
          if (s.empty()) continue;
          const double mx = *std::max_element(s.begin(), s.end());
          double sum = 0;
          for (double& x : s) sum += (x = std::exp(x - mx));
          for (I e = e0; e < e1; ++e)
            for (int64_t f = 0; f < Fv; ++f)
              want(i, f) += s[static_cast<size_t>(e - e0)] / sum * double(vv(a.colind[static_cast<size_t>(e)], f));
        }
        for (const std::string& v : variants(SPARSEPORT_OP_CSR_ATTENTION)) {
          SCOPED_TRACE(v + ", F " + std::to_string(F) + ", Fv " + std::to_string(Fv) + ", scale " +
                       std::to_string(scale) + ", seed " + std::to_string(seed));
          const DevDense<V> out = to_device(ctx, HostDense<V>(a.rows, Fv, Fv, std::numeric_limits<V>::quiet_NaN()));
          csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), out.mut(), {scale, v});
          const HostDense<V> got = to_host(ctx, out);
          for (int64_t i = 0; i < a.rows; ++i)
            for (int64_t f = 0; f < Fv; ++f)
              ASSERT_LE(std::abs(double(got(i, f)) - want(i, f)), tol)
                  << "out[" << i << "," << f << "] = " << got(i, f) << " but the oracle gives " << want(i, f);
        }
      }
    }
  }
}

// A mega-row of 1800 entries (longer than one warp's softmax), hubs, empty rows.
TEST(CudaAttention, EveryVariantFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_attention(ctx, skewed_csr<int32_t, float>(800, 700, 6000, 0.3, kSeed + 100), {4, 33}, {3, 64, 200},
                  kSeed + 100);
}

TEST(CudaAttention, EveryVariantDoubleInt64) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_attention(ctx, skewed_csr<int64_t, double>(800, 700, 6000, 0.3, kSeed + 110), {4, 33}, {3, 64, 200},
                  kSeed + 110);
}

// A small matrix with a mean degree of about 20: csr_attention.fused gives a row several slices
// (each its own online softmax, merged by shuffles) at F = 32 and 64, one or two register tiles of
// q, K and V per lane at 128 and 256, and several passes when Fv is wider than a tile. Rows above
// 64 entries (the threshold below 4 M entries once a row exceeds 256) go to CTA items of 256: the
// mega-row of 16000 to 63. At 0.1 the floor, 250 x 200 with 6000 entries (mean degree 21-24, full
// slices still): a mega-row of 2400, 10 items, and above kLongRow (1024), so the unfused softmax
// still gives it a whole CTA; 3-4 hubs of 600.
TEST(CudaAttention, SmallMatrixSlicesAndTiles) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_attention(ctx, scaled_skewed_csr<int32_t, float>(kSmallFull, kSmallFloor, 0.4, kSeed + 120),
                  {32, 64, 128, 256}, {32, 256}, kSeed + 120);
  check_attention(ctx, scaled_skewed_csr<int64_t, double>(kSmallFull, kSmallFloor, 0.4, kSeed + 130), {32, 64}, {64},
                  kSeed + 130);
}

// ---- structure ---------------------------------------------------------------------------------

template <class I, class V>
void expect_same_csr(const HostCsr<I, V>& got, const HostCsr<I, V>& want) {
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.cols, want.cols);
  EXPECT_EQ(got.rowptr, want.rowptr);
  EXPECT_EQ(got.colind, want.colind);
  EXPECT_EQ(got.values, want.values);
}

template <class I, class V>
void check_structure(const Context& ctx, bool pattern, uint64_t seed) {
  const auto a = skewed_csr<I, V>(2000, 2000, 16000, 0.2, seed, !pattern);
  const auto da = to_device(ctx, a);
  std::mt19937_64 rng(seed + 1);

  // Slicing: any order, repeats, the mega-row and empty rows included.
  std::vector<I> rows;
  std::uniform_int_distribution<int64_t> pick(0, a.rows - 1);
  for (int t = 0; t < 500; ++t) rows.push_back(static_cast<I>(pick(rng)));
  rows.push_back(static_cast<I>(a.rows / 3));
  rows.push_back(rows.front());
  const Buffer d_rows = upload(ctx, rows);
  const IndexView rv = make_index(static_cast<int64_t>(rows.size()), static_cast<const I*>(d_rows.data()));
  HostCsr<I, V> want;
  want.rows = static_cast<int64_t>(rows.size());
  want.cols = a.cols;
  for (I r : rows) {
    for (I e = a.rowptr[static_cast<size_t>(r)]; e < a.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      want.colind.push_back(a.colind[static_cast<size_t>(e)]);
      if (!pattern) want.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    want.rowptr.push_back(static_cast<I>(want.colind.size()));
  }
  {
    SCOPED_TRACE("csr_slice_rows, seed " + std::to_string(seed));
    expect_same_csr(ctx.to_host<I, V>(csr_slice_rows(ctx, da.view, rv)), want);
  }
  {
    SCOPED_TRACE("csr_slice_rows_dense, seed " + std::to_string(seed));
    const DevDense<V> out =
        to_device(ctx, HostDense<V>(want.rows, a.cols, a.cols + 1, std::numeric_limits<V>::quiet_NaN()));
    csr_slice_rows_dense(ctx, da.view, rv, out.mut());
    const HostDense<V> got = to_host(ctx, out);
    HostDense<double> dense(want.rows, a.cols);
    for (int64_t t = 0; t < want.rows; ++t)
      for (I e = want.rowptr[static_cast<size_t>(t)]; e < want.rowptr[static_cast<size_t>(t) + 1]; ++e)
        dense(t, want.colind[static_cast<size_t>(e)]) += pattern ? 1.0 : double(want.values[static_cast<size_t>(e)]);
    for (int64_t t = 0; t < want.rows; ++t)
      for (int64_t j = 0; j < a.cols; ++j)
        ASSERT_NEAR(double(got(t, j)), dense(t, j), 1e-5) << "out[" << t << "," << j << "]";
  }
  {
    SCOPED_TRACE("csr_slice_rows with no rows");
    const CsrMatrix m = csr_slice_rows(ctx, da.view, make_index<I>(0, nullptr));
    EXPECT_EQ(m.rows, 0);
    EXPECT_EQ(m.nnz, 0);
  }

  // Induced subgraph on 700 distinct vertices in a random order.
  std::vector<I> all(static_cast<size_t>(a.rows));
  std::iota(all.begin(), all.end(), I(0));
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<I> vs(all.begin(), all.begin() + 700);
  std::vector<int64_t> map(static_cast<size_t>(a.rows), -1);
  for (size_t t = 0; t < vs.size(); ++t) map[static_cast<size_t>(vs[t])] = static_cast<int64_t>(t);
  HostCsr<I, V> sub;
  sub.rows = sub.cols = static_cast<int64_t>(vs.size());
  for (I r : vs) {
    for (I e = a.rowptr[static_cast<size_t>(r)]; e < a.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      const int64_t c = map[static_cast<size_t>(a.colind[static_cast<size_t>(e)])];
      if (c < 0) continue;
      sub.colind.push_back(static_cast<I>(c));
      if (!pattern) sub.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    sub.rowptr.push_back(static_cast<I>(sub.colind.size()));
  }
  const Buffer d_vs = upload(ctx, vs);
  {
    SCOPED_TRACE("csr_induced_subgraph, seed " + std::to_string(seed));
    expect_same_csr(ctx.to_host<I, V>(csr_induced_subgraph(
                        ctx, da.view, make_index(static_cast<int64_t>(vs.size()), static_cast<const I*>(d_vs.data())))),
                    sub);
  }

  // Transpose: stable, so each result row lists A's rows in increasing order.
  HostCsr<I, V> t;
  t.rows = a.cols;
  t.cols = a.rows;
  std::vector<std::vector<int64_t>> by_col(static_cast<size_t>(a.cols));
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      by_col[static_cast<size_t>(a.colind[static_cast<size_t>(e)])].push_back(e);
  std::vector<int64_t> row_of_e(static_cast<size_t>(a.nnz()));
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      row_of_e[static_cast<size_t>(e)] = i;
  for (const auto& es : by_col) {
    for (int64_t e : es) {
      t.colind.push_back(static_cast<I>(row_of_e[static_cast<size_t>(e)]));
      if (!pattern) t.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    t.rowptr.push_back(static_cast<I>(t.colind.size()));
  }
  {
    SCOPED_TRACE("csr_transpose, seed " + std::to_string(seed));
    expect_same_csr(ctx.to_host<I, V>(csr_transpose(ctx, da.view)), t);
  }
}

TEST(CudaStructure, SliceInducedTransposeFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_structure<int32_t, float>(ctx, false, kSeed + 120);
}

TEST(CudaStructure, SliceInducedTransposeDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  check_structure<int64_t, double>(ctx, true, kSeed + 130);
}

// ---- plans ---------------------------------------------------------------------------------------

TEST(CudaPlans, BuiltOnceReusedAndDroppedWhenTheMatrixChanges) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = skewed_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed + 140);
  // Same structure sizes, other columns and values: written over A's arrays in place below.
  auto a2 = skewed_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed + 141);
  a2.rowptr = a.rowptr;
  a2.colind.resize(a.colind.size());
  a2.values.resize(a.values.size());
  for (size_t e = 0; e < a2.colind.size(); ++e) a2.colind[e] = static_cast<int32_t>((a.colind[e] * 7 + 3) % a.cols);

  auto da = std::make_unique<DevCsr<int32_t, float>>(to_device(ctx, a));
  const int64_t F = 64;
  const HostDense<float> b1 = random_dense<float>(a.cols, F, F, kSeed + 142), b2 = random_dense<float>(a.cols, F, F, kSeed + 143);
  const DevDense<float> db1 = to_device(ctx, b1), db2 = to_device(ctx, b2);
  const DevDense<float> dc = to_device(ctx, HostDense<float>(a.rows, F, F, 0.0f));
  auto expected = [&](const HostCsr<int32_t, float>& m, const HostDense<float>& b) {
    return reduce_rows(m.rows, F, Reduce::sum, entries_by_row(m), [&](int64_t e, int64_t f) {
      return value_of(m, e) * double(b(m.colind[static_cast<size_t>(e)], f));
    });
  };
  const SpmmOptions vendor{Reduce::sum, 1.0, 0.0, "spmm.cusparse"};

  spmm(ctx, da->view, db1.view(), dc.mut(), vendor);
  EXPECT_TRUE(close_to(to_host(ctx, dc), expected(a, b1), F));
  spmm(ctx, da->view, db2.view(), dc.mut(), vendor);  // other B: the same plan
  EXPECT_TRUE(close_to(to_host(ctx, dc), expected(a, b2), F));
  sparseport_cuda_diagnostics d = diagnostics(ctx);
  EXPECT_EQ(d.plan_misses, 1u);
  EXPECT_EQ(d.plan_hits, 1u);
  EXPECT_EQ(d.plan_entries, 1u);
  const std::string note = d.note;
  EXPECT_NE(note.find("-> ALG"), std::string::npos) << note;
  std::printf("%s\n", note.c_str());

  spmm(ctx, da->view, db1.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
  spmm(ctx, da->view, db2.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
  EXPECT_TRUE(close_to(to_host(ctx, dc), expected(a, b2), F));
  d = diagnostics(ctx);
  EXPECT_EQ(d.plan_entries, 2u);
  EXPECT_EQ(d.plan_misses, 2u);
  EXPECT_EQ(d.plan_hits, 2u);

  // Writing new columns into A's colind through the backend drops the vendor plan (it watches
  // colind), so the next call sees the new matrix.
  ctx.copy_to_backend(da->colind.data(), a2.colind.data(), a2.colind.size() * sizeof(int32_t));
  ctx.copy_to_backend(da->values.data(), a2.values.data(), a2.values.size() * sizeof(float));
  d = diagnostics(ctx);
  EXPECT_EQ(d.plan_invalidated, 1u);
  EXPECT_EQ(d.plan_entries, 1u);
  spmm(ctx, da->view, db1.view(), dc.mut(), vendor);
  EXPECT_TRUE(close_to(to_host(ctx, dc), expected(a2, b1), F));
  d = diagnostics(ctx);
  EXPECT_EQ(d.plan_misses, 3u);

  // Freeing the matrix drops every plan that watched it.
  da.reset();
  d = diagnostics(ctx);
  EXPECT_EQ(d.plan_entries, 0u);
  EXPECT_EQ(d.poisoned, 0);
}

// The module preload (backends/cuda/preload.hpp, SPARSEPORT_CUDA_PRELOAD=1): every .cu file of
// kernels/cuda registers its module (a file without SPARSEPORT_CUDA_MODULE would load at its first
// launch again, inside a decision), a context made with the preload on loads them all without an
// error, and the spmm files, which a decision times first, load before the sddmm and attention ones.
TEST(CudaPreload, EveryKernelFileRegistersItsModuleAndTheFirstContextLoadsThemAll) {
  CUDA_TEST_REQUIRE_GPU();
  const sparseport_test::ScopedEnv on("SPARSEPORT_CUDA_PRELOAD", "1");
  std::vector<std::string> files;
  std::stringstream list(SPARSEPORT_CUDA_KERNEL_FILES);
  for (std::string f; std::getline(list, f, ',');) files.push_back(f);
  ASSERT_GT(files.size(), 20u) << SPARSEPORT_CUDA_KERNEL_FILES;

  const Context ctx = Context::create("cuda");
  const sparseport::cuda::PreloadReport r = sparseport::cuda::preload_wait(0);
  ASSERT_TRUE(r.started) << "creating a cuda context did not start the preload";
  EXPECT_EQ(r.error, "");
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(r.registered), sorted(files)) << "a kernels/cuda file lacks SPARSEPORT_CUDA_MODULE, or registers twice";
  EXPECT_EQ(sorted(r.loaded), sorted(r.registered));
  auto position = [&](const std::string& prefix, bool last) {
    int at = last ? -1 : static_cast<int>(r.loaded.size());
    for (int i = 0; i < static_cast<int>(r.loaded.size()); ++i)
      if (r.loaded[i].rfind(prefix, 0) == 0) at = last ? std::max(at, i) : std::min(at, i);
    return at;
  };
  EXPECT_LT(position("spmm_", true), position("sddmm_", false));
  EXPECT_LT(position("sddmm_", true), position("attention_", false));
  std::printf("preloaded %zu modules in %.1f ms\n", r.loaded.size(), r.milliseconds);
}

}  // namespace
