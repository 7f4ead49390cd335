// SPDX-License-Identifier: Apache-2.0
// Index contents in device memory are checked on the device (the cuda plugin's check_indices):
// every op and every variant refuses a bad rowptr, a column or index out of range and an
// unsorted sorted-index with InvalidArgument naming the op, the argument, the row or position
// and the values; nothing is written to the output, and the context keeps working. Then the
// modes: once per operand (a write or free through the library forgets it), always, off.
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda_test.hpp"
#include "sparseport/plan.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;

constexpr int64_t kF = 32;
constexpr float kPoison = 7.0f;

// rows x cols, two entries per row (columns 2i and 2i + 1, wrapped), all values 1.
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> rowptr, colind;
  std::vector<float> values;
  int64_t nnz() const { return static_cast<int64_t>(colind.size()); }
};

Csr two_per_row(int64_t rows, int64_t cols) {
  Csr a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.push_back(0);
  for (int64_t i = 0; i < rows; ++i) {
    a.colind.push_back(static_cast<int32_t>((2 * i) % cols));
    a.colind.push_back(static_cast<int32_t>((2 * i + 1) % cols));
    a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
  }
  a.values.assign(a.colind.size(), 1.0f);
  return a;
}

// One broken matrix and what the error must say (after "A").
struct BadCsr {
  std::string what;
  Csr a;
  std::vector<std::string> says;
};

// The cases of the table (one past the end, negative, not monotone, rowptr[m] != nnz),
// plus rowptr[0] != 0 and a column far out of range (which would poison the context if a kernel
// read it).
std::vector<BadCsr> bad_csrs(int64_t rows, int64_t cols) {
  std::vector<BadCsr> out;
  const Csr good = two_per_row(rows, cols);
  const std::string c = std::to_string(cols);
  auto add = [&](std::string what, std::function<void(Csr&)> f, std::vector<std::string> says) {
    BadCsr b{std::move(what), good, std::move(says)};
    f(b.a);
    out.push_back(std::move(b));
  };
  add("column == cols", [&](Csr& a) { a.colind[5] = static_cast<int32_t>(cols); },
      {"A row 2 has column " + c + " outside [0, " + c + ")", "entry 5"});
  add("negative column", [](Csr& a) { a.colind[3] = -1; }, {"A row 1 has column -1 outside"});
  add("column far out of range", [](Csr& a) { a.colind[0] = 1 << 30; },
      {"A row 0 has column 1073741824 outside"});
  add("rowptr not monotone", [](Csr& a) { a.rowptr[2] = a.rowptr[3] + 1; },
      {"A.rowptr decreases at row 2 (7 then 6)"});
  add("rowptr[m] != nnz", [&](Csr& a) { a.rowptr[static_cast<size_t>(rows)] -= 1; },
      {"A.rowptr[" + std::to_string(rows) + "] is " + std::to_string(2 * rows - 1) + " but A.nnz is " +
       std::to_string(2 * rows)});
  add("rowptr[0] != 0", [](Csr& a) { a.rowptr[0] = 1; }, {"A.rowptr[0] is 1 (need 0)"});
  return out;
}

struct DevMatrix {
  Buffer rowptr, colind, values;
  CsrView view;
};

DevMatrix upload_csr(const Context& ctx, const Csr& a) {
  DevMatrix d;
  d.rowptr = upload(ctx, a.rowptr);
  d.colind = upload(ctx, a.colind);
  d.values = upload(ctx, a.values);
  d.view = make_csr<int32_t, float>(a.rows, a.cols, a.nnz(), static_cast<const int32_t*>(d.rowptr.data()),
                                    static_cast<const int32_t*>(d.colind.data()),
                                    static_cast<const float*>(d.values.data()));
  return d;
}

DevDense<float> filled(const Context& ctx, int64_t rows, int64_t cols, float v) {
  HostDense<float> h(rows, cols);
  std::fill(h.data.begin(), h.data.end(), v);
  return to_device(ctx, h);
}

bool untouched(const Context& ctx, const DevDense<float>& d) {
  const HostDense<float> h = to_host(ctx, d);
  return std::all_of(h.data.begin(), h.data.end(), [](float x) { return x == kPoison; });
}

double total(const Context& ctx, const DevDense<float>& d) {
  double s = 0;
  for (float x : to_host(ctx, d).data) s += x;
  return s;
}

// f must throw InvalidArgument whose message holds `op` and every fragment of `says`.
::testing::AssertionResult refuses(const std::function<void()>& f, const std::string& op,
                                   const std::vector<std::string>& says) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    if (m.find("sparseport::" + op + "[cuda:0]") == std::string::npos)
      return ::testing::AssertionFailure() << "message does not name " << op << ": " << m;
    for (const std::string& s : says)
      if (m.find(s) == std::string::npos) return ::testing::AssertionFailure() << "no '" << s << "' in: " << m;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something else: " << e.what();
  }
  return ::testing::AssertionFailure() << "returned normally (a silent wrong answer)";
}

// Every variant of op, and "" (the scheduler's choice).
// (TF32 variants left out: they run only with the caller's consent; test_cuda_tc.cpp.)
std::vector<std::string> variants_and_auto(sparseport_op op) {
  std::vector<std::string> v = {""};
  for (const VariantInfo& x : plugin("cuda").variants)
    if (x.op == op && !x.tf32) v.push_back(x.name);
  return v;
}

class CudaValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    CUDA_TEST_REQUIRE_GPU();
    clear_plan_memo();
    ctx_ = Context::create("cuda:0");
    ctx_.set_validate(ValidateMode::once);
  }
  Context ctx_;
};

TEST_F(CudaValidation, SpmmEveryVariantRefusesBadIndicesAndWritesNothing) {
  const DevDense<float> b = filled(ctx_, 8, kF, 1.0f);
  for (const BadCsr& bad : bad_csrs(4, 8)) {
    const DevMatrix a = upload_csr(ctx_, bad.a);
    for (const std::string& v : variants_and_auto(SPARSEPORT_OP_SPMM)) {
      SCOPED_TRACE(bad.what + ", variant '" + v + "'");
      const DevDense<float> c = filled(ctx_, 4, kF, kPoison);
      EXPECT_TRUE(refuses([&] { spmm(ctx_, a.view, b.view(), c.mut(), {Reduce::sum, 1.0, 0.0, v}); }, "spmm", bad.says));
      EXPECT_TRUE(untouched(ctx_, c));
      for (Reduce r : {Reduce::mean, Reduce::max, Reduce::min}) {
        if (v == "spmm.cusparse") continue;  // sums only
        EXPECT_TRUE(refuses([&] { spmm(ctx_, a.view, b.view(), c.mut(), {r, 1.0, 0.0, v}); }, "spmm", bad.says));
      }
      // A plan of the scheduler's choice has the check ride on its summary of A: the same message.
      EXPECT_TRUE(refuses([&] { SpmmPlan p(ctx_, a.view, kF, {Reduce::sum, 1.0, 0.0, v}); }, "spmm", bad.says));
    }
  }
  // The context still works, and the table's valid input gives sum(C) = 8 F (256 at F = 32) with
  // every variant at a width it serves (vector_rows: F <= 16; cusparse_spmv: F == 1).
  const DevMatrix good = upload_csr(ctx_, two_per_row(4, 8));
  for (const std::string& v : variants_and_auto(SPARSEPORT_OP_SPMM)) {
    if (v == "spmm.tc_window") continue;  // f16 / bf16 values only: test_cuda_tc.cpp
    const bool small = v == "spmm.vector_rows";
    const int64_t F = v == "spmm.cusparse_spmv" ? 1 : small ? 16 : kF;
    const DevDense<float> bf = filled(ctx_, 8, F, 1.0f), c = filled(ctx_, 4, F, kPoison);
    spmm(ctx_, good.view, bf.view(), c.mut(), {Reduce::sum, 1.0, 0.0, v});
    EXPECT_EQ(total(ctx_, c), 8.0 * static_cast<double>(F)) << v;
  }
}

TEST_F(CudaValidation, SddmmAndAttentionEveryVariantRefuseBadIndices) {
  const DevDense<float> x = filled(ctx_, 4, kF, 1.0f), y = filled(ctx_, 8, kF, 1.0f);
  for (const BadCsr& bad : bad_csrs(4, 8)) {
    const DevMatrix a = upload_csr(ctx_, bad.a);
    for (const std::string& v : variants_and_auto(SPARSEPORT_OP_SDDMM)) {
      SCOPED_TRACE(bad.what + ", variant '" + v + "'");
      const DevDense<float> out = filled(ctx_, bad.a.nnz(), 1, kPoison);
      EXPECT_TRUE(refuses([&] { sddmm(ctx_, a.view, x.view(), y.view(), out.mut(), {v}); }, "sddmm", bad.says));
      EXPECT_TRUE(untouched(ctx_, out));
      EXPECT_THROW(SddmmPlan(ctx_, a.view, kF, {v}), InvalidArgument);
    }
    for (const std::string& v : variants_and_auto(SPARSEPORT_OP_CSR_ATTENTION)) {
      SCOPED_TRACE(bad.what + ", variant '" + v + "'");
      const DevDense<float> out = filled(ctx_, 4, kF, kPoison);
      EXPECT_TRUE(refuses([&] { csr_attention(ctx_, a.view, x.view(), y.view(), y.view(), out.mut(), {0.0, v}); },
                          "csr_attention", bad.says));
      EXPECT_TRUE(untouched(ctx_, out));
      EXPECT_THROW(AttentionPlan(ctx_, a.view, kF, {0.0, v}), InvalidArgument);
    }
  }
  const DevMatrix good = upload_csr(ctx_, two_per_row(4, 8));
  const DevDense<float> out = filled(ctx_, 8, 1, kPoison);
  sddmm(ctx_, good.view, x.view(), y.view(), out.mut());
  EXPECT_EQ(total(ctx_, out), 8.0 * kF);
}

TEST_F(CudaValidation, StructuralOpsRefuseBadIndices) {
  const std::vector<int32_t> rows_ok{0, 3, 1};
  const Buffer rows = upload(ctx_, rows_ok);
  const IndexView rv = make_index<int32_t>(3, static_cast<const int32_t*>(rows.data()));
  for (const BadCsr& bad : bad_csrs(8, 8)) {
    SCOPED_TRACE(bad.what);
    const DevMatrix a = upload_csr(ctx_, bad.a);
    EXPECT_TRUE(refuses([&] { (void)csr_slice_rows(ctx_, a.view, rv); }, "csr_slice_rows", bad.says));
    const DevDense<float> dense = filled(ctx_, 3, 8, kPoison);
    EXPECT_TRUE(refuses([&] { csr_slice_rows_dense(ctx_, a.view, rv, dense.mut()); }, "csr_slice_rows_dense",
                        bad.says));
    EXPECT_TRUE(untouched(ctx_, dense));
    EXPECT_TRUE(refuses([&] { (void)csr_induced_subgraph(ctx_, a.view, rv); }, "csr_induced_subgraph", bad.says));
    EXPECT_TRUE(refuses([&] { (void)csr_transpose(ctx_, a.view); }, "csr_transpose", bad.says));
  }
  // A bad row list or vertex set, on a sound matrix.
  const DevMatrix good = upload_csr(ctx_, two_per_row(8, 8));
  const Buffer far = upload(ctx_, std::vector<int32_t>{0, 8, 1});
  const Buffer neg = upload(ctx_, std::vector<int32_t>{0, 2, -3});
  const IndexView fv = make_index<int32_t>(3, static_cast<const int32_t*>(far.data()));
  const IndexView nv = make_index<int32_t>(3, static_cast<const int32_t*>(neg.data()));
  EXPECT_TRUE(refuses([&] { (void)csr_slice_rows(ctx_, good.view, fv); }, "csr_slice_rows", {"rows[1] is 8, outside [0, 8)"}));
  EXPECT_TRUE(refuses([&] { (void)csr_slice_rows(ctx_, good.view, nv); }, "csr_slice_rows", {"rows[2] is -3"}));
  EXPECT_TRUE(refuses([&] { (void)csr_induced_subgraph(ctx_, good.view, fv); }, "csr_induced_subgraph",
                      {"vertices[1] is 8, outside [0, 8)"}));
  const CsrMatrix t = csr_transpose(ctx_, good.view);
  EXPECT_EQ(t.nnz, 16);
}

TEST_F(CudaValidation, SegmentScatterAndGatherScatterRefuseBadIndices) {
  const int64_t E = 8, N = 4;
  const DevDense<float> src = filled(ctx_, E, kF, 1.0f), x = filled(ctx_, N, kF, 1.0f);
  struct Case {
    std::string what;
    std::vector<int32_t> index;
    std::vector<std::string> says;
    bool sorted_only;  // a problem only for the sorted ops
  };
  const std::vector<Case> cases = {
      {"index == rows", {0, 0, 1, 1, 2, 4, 3, 3}, {"[5] is 4, outside [0, 4)"}, false},
      {"negative index", {0, 0, -1, 1, 2, 2, 3, 3}, {"[2] is -1, outside [0, 4)"}, false},
      {"far out of range", {0, 0, 1, 1, 2, 2, 3, 1 << 30}, {"[7] is 1073741824"}, false},
      {"not sorted", {0, 0, 1, 1, 3, 2, 3, 3}, {"must be sorted ascending", "[4] = 3 > ", "[5] = 2"}, true},
  };
  for (const Case& k : cases) {
    const Buffer idx = upload(ctx_, k.index);
    const IndexView iv = make_index<int32_t>(E, static_cast<const int32_t*>(idx.data()));
    for (const std::string& v : variants_and_auto(SPARSEPORT_OP_SEGMENT_REDUCE)) {
      SCOPED_TRACE(k.what + ", variant '" + v + "'");
      const DevDense<float> out = filled(ctx_, N, kF, kPoison);
      EXPECT_TRUE(refuses([&] { segment_reduce(ctx_, iv, src.view(), out.mut(), {Reduce::sum, v}); }, "segment_reduce",
                          k.says));
      EXPECT_TRUE(untouched(ctx_, out));
    }
    if (!k.sorted_only)
      for (const std::string& v : variants_and_auto(SPARSEPORT_OP_SCATTER_REDUCE)) {
        SCOPED_TRACE(k.what + ", variant '" + v + "'");
        const DevDense<float> out = filled(ctx_, N, kF, kPoison);
        EXPECT_TRUE(refuses([&] { scatter_reduce(ctx_, iv, src.view(), out.mut(), {Reduce::max, v}); },
                            "scatter_reduce", k.says));
        EXPECT_TRUE(untouched(ctx_, out));
      }
    // As gather_scatter's dst (sorted) and, when in-range-ness is the problem, as its src.
    const Buffer ok = upload(ctx_, std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3});
    const Buffer w = upload(ctx_, std::vector<float>(static_cast<size_t>(E), 1.0f));
    const auto* okp = static_cast<const int32_t*>(ok.data());
    const auto* kp = static_cast<const int32_t*>(idx.data());
    const auto* wp = static_cast<const float*>(w.data());
    for (const std::string& v : variants_and_auto(SPARSEPORT_OP_GATHER_SCATTER)) {
      SCOPED_TRACE(k.what + ", variant '" + v + "'");
      const DevDense<float> out = filled(ctx_, N, kF, kPoison);
      const CooView bad_dst = make_coo<int32_t, float>(N, N, E, kp, okp, wp);
      const CooView bad_src = make_coo<int32_t, float>(N, N, E, okp, kp, wp);
      EXPECT_TRUE(refuses([&] { gather_scatter(ctx_, bad_dst, x.view(), out.mut(), {Reduce::sum, v}); },
                          "gather_scatter", {"edges.row (dst)"}));
      if (!k.sorted_only) {
        EXPECT_TRUE(refuses([&] { gather_scatter(ctx_, bad_src, x.view(), out.mut(), {Reduce::sum, v}); },
                            "gather_scatter", {"edges.col (src)"}));
      }
      EXPECT_TRUE(untouched(ctx_, out));
      EXPECT_THROW(GatherScatterPlan(ctx_, bad_dst, kF, {Reduce::sum, v}), InvalidArgument);
    }
  }
  const Buffer idx = upload(ctx_, std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3});
  const DevDense<float> out = filled(ctx_, N, kF, kPoison);
  segment_reduce(ctx_, make_index<int32_t>(E, static_cast<const int32_t*>(idx.data())), src.view(), out.mut());
  EXPECT_EQ(total(ctx_, out), 8.0 * kF);
}

TEST_F(CudaValidation, Int64IndicesAndLargerMatrices) {
  // A larger matrix, so the check runs many blocks: the first bad entry is the one reported.
  // 200000 rows, 800k entries: 3907 blocks of 256 (the cap is 32 x SMs). At 0.1 20000 rows, 80k
  // entries: still 391 blocks, the first bad entry in one of the middle ones and the next 1000
  // entries (4 blocks) on.
  const int64_t rows = scaled(200000, 20000), cols = 5000;
  std::vector<int64_t> rowptr{0}, colind;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < 1 + i % 7; ++k) colind.push_back((i * 31 + k * 17) % cols);
    rowptr.push_back(static_cast<int64_t>(colind.size()));
  }
  const int64_t first_bad = static_cast<int64_t>(colind.size()) / 2 + 3;
  colind[static_cast<size_t>(first_bad)] = cols + 5;
  colind[static_cast<size_t>(first_bad) + 1000] = -7;  // a later one is not the one reported
  colind.back() = 1LL << 40;
  const Buffer rp = upload(ctx_, rowptr), ci = upload(ctx_, colind);
  const CsrView a = make_csr<int64_t, float>(rows, cols, static_cast<int64_t>(colind.size()),
                                             static_cast<const int64_t*>(rp.data()),
                                             static_cast<const int64_t*>(ci.data()), nullptr);
  const int64_t row = static_cast<int64_t>(std::upper_bound(rowptr.begin(), rowptr.end(), first_bad) - rowptr.begin()) - 1;
  const DevDense<float> b = filled(ctx_, cols, 8, 1.0f), c = filled(ctx_, rows, 8, kPoison);
  for (int rep = 0; rep < 3; ++rep)
    EXPECT_TRUE(refuses([&] { spmm(ctx_, a, b.view(), c.mut()); }, "spmm",
                        {"A row " + std::to_string(row) + " has column " + std::to_string(cols + 5),
                         "(entry " + std::to_string(first_bad) + ")"}));
}

TEST_F(CudaValidation, OncePerOperandUntilTheLibraryWritesOrFreesIt) {
  Csr h = two_per_row(4, 8);
  DevMatrix a = upload_csr(ctx_, h);
  const DevDense<float> b = filled(ctx_, 8, kF, 1.0f), c = filled(ctx_, 4, kF, 0.0f);
  spmm(ctx_, a.view, b.view(), c.mut());  // checked once here
  // A write through the library forgets the operand: the next call checks it again.
  const int32_t bad = 8;
  ctx_.copy_to_backend(static_cast<int32_t*>(a.colind.data()) + 5, &bad, sizeof bad);
  EXPECT_TRUE(refuses([&] { spmm(ctx_, a.view, b.view(), c.mut()); }, "spmm", {"A row 2 has column 8"}));
  // Freed and allocated again (possibly at the same address): checked again.
  h.colind[5] = -2;
  a = DevMatrix{};
  a = upload_csr(ctx_, h);
  EXPECT_TRUE(refuses([&] { spmm(ctx_, a.view, b.view(), c.mut()); }, "spmm", {"has column -2"}));
}

TEST_F(CudaValidation, OffSkipsTheCheckAndAlwaysChecksEveryCall) {
  // rowptr[m] = nnz - 1 is a bad matrix whose kernels still read only inside the arrays.
  Csr h = two_per_row(4, 8);
  h.rowptr[4] -= 1;
  const DevMatrix a = upload_csr(ctx_, h);
  const DevDense<float> b = filled(ctx_, 8, kF, 1.0f), c = filled(ctx_, 4, kF, 0.0f);
  ctx_.set_validate(ValidateMode::off);
  EXPECT_EQ(ctx_.validate(), ValidateMode::off);
  EXPECT_NO_THROW(spmm(ctx_, a.view, b.view(), c.mut(), {Reduce::sum, 1.0, 0.0, "spmm.row_warp"}));
  ctx_.set_validate(ValidateMode::always);
  for (int rep = 0; rep < 3; ++rep)
    EXPECT_TRUE(refuses([&] { spmm(ctx_, a.view, b.view(), c.mut()); }, "spmm", {"A.rowptr[4] is 7"}));
}

TEST(CudaValidateMode, ReadFromTheEnvironment) {
  ::setenv("SPARSEPORT_VALIDATE", "always", 1);
  EXPECT_EQ(Context::create("reference").validate(), ValidateMode::always);
  ::setenv("SPARSEPORT_VALIDATE", "off", 1);
  Context ctx = Context::create("reference");
  EXPECT_EQ(ctx.validate(), ValidateMode::off);
  ::setenv("SPARSEPORT_VALIDATE", "sometimes", 1);
  try {
    (void)Context::create("reference");
    ADD_FAILURE() << "an invalid SPARSEPORT_VALIDATE was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("SPARSEPORT_VALIDATE is 'sometimes'"), std::string::npos) << e.what();
  }
  ::unsetenv("SPARSEPORT_VALIDATE");
  EXPECT_EQ(Context::create("reference").validate(), ValidateMode::once);
  ctx.set_validate(ValidateMode::from_env);
  EXPECT_EQ(ctx.validate(), ValidateMode::once);
}

TEST(CudaValidateMode, HostMemoryIsCheckedOnEveryCallUnlessOff) {
  // rowptr[m] = nnz - 1: a bad matrix whose kernels still read only inside the arrays.
  Csr h = two_per_row(4, 8);
  h.rowptr[4] -= 1;
  const CsrView a = make_csr<int32_t, float>(4, 8, h.nnz(), h.rowptr.data(), h.colind.data(), h.values.data());
  HostDense<float> b(8, kF), c(4, kF);
  std::fill(b.data.begin(), b.data.end(), 1.0f);
  Context ctx = Context::create("reference");
  ctx.set_validate(ValidateMode::once);
  for (int rep = 0; rep < 2; ++rep)
    EXPECT_THROW(spmm(ctx, a, b.view(), c.mut()), InvalidArgument) << "call " << rep;
  ctx.set_validate(ValidateMode::off);
  EXPECT_NO_THROW(spmm(ctx, a, b.view(), c.mut()));
}

}  // namespace
