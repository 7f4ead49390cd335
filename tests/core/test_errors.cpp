// SPDX-License-Identifier: Apache-2.0
// Bad arguments to each op raise the right class of errors.hpp, with a message that names the op
// (and backend), the argument and the numbers involved, and leave the outputs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

const sp::Context& ctx() {
  static const sp::Context c = sp::Context::create("reference");
  return c;
}

// f must throw exactly E (not a subclass) with every one of `parts` in its message.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const std::exception& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << "threw " << typeid(e).name() << " instead of " << typeid(E).name() << ": "
                                    << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
    return;
  }
  ADD_FAILURE() << "no exception; expected " << typeid(E).name();
}

// The 3 x 4 running example of the reference tests: row 0: cols 1 3; row 1 empty; row 2: cols 0 1 2.
struct Example {
  std::vector<int32_t> rowptr{0, 2, 2, 5}, colind{1, 3, 0, 1, 2};
  std::vector<float> values{2, -1, 1, 3, 0.5};
  sp::CsrView view() const {
    return sp::make_csr<int32_t, float>(3, 4, 5, rowptr.data(), colind.data(), values.data());
  }
};

bool untouched(const sp::HostDense<float>& d, float v) {
  for (float x : d.data)
    if (!(x == v)) return false;
  return true;
}

// ---- spmm ------------------------------------------------------------------------------------

TEST(Errors, SpmmShapes) {
  const Example a;
  const sp::HostDense<float> b_bad(5, 2), b(4, 2);
  sp::HostDense<float> c(3, 2, -1, 42.0f), c_bad(3, 3, -1, 42.0f);
  expect_error<sp::DimensionMismatch>([&] { sp::spmm(ctx(), a.view(), b_bad.view(), c.mut()); },
                                      {"sparseport::spmm[reference]", "B is 5x2", "4x2"});
  expect_error<sp::DimensionMismatch>([&] { sp::spmm(ctx(), a.view(), b.view(), c_bad.mut()); },
                                      {"sparseport::spmm", "C is 3x3", "3x2"});
  EXPECT_TRUE(untouched(c, 42.0f)) << "a refused call must not write C";
  EXPECT_TRUE(untouched(c_bad, 42.0f)) << "a refused call must not write C";
}

TEST(Errors, SpmmColumnOutOfRangeAndBadRowptr) {
  Example a;
  a.colind[4] = 4;  // row 2, cols = 4
  const sp::HostDense<float> b(4, 2);
  sp::HostDense<float> c(3, 2, -1, 42.0f);
  expect_error<sp::InvalidArgument>([&] { sp::spmm(ctx(), a.view(), b.view(), c.mut()); },
                                    {"sparseport::spmm", "row 2", "column 4", "[0, 4)"});
  Example d;
  d.rowptr = {0, 3, 2, 5};
  expect_error<sp::InvalidArgument>([&] { sp::spmm(ctx(), d.view(), b.view(), c.mut()); },
                                    {"sparseport::spmm", "rowptr", "row 1", "3", "2"});
  EXPECT_TRUE(untouched(c, 42.0f));
}

TEST(Errors, SpmmMixedValueTypesAndLeadingDimension) {
  const Example a;
  const sp::HostDense<double> b64(4, 2);
  sp::HostDense<float> c(3, 2);
  expect_error<sp::InvalidArgument>([&] { sp::spmm(ctx(), a.view(), b64.view(), c.mut()); },
                                    {"sparseport::spmm", "B", "f64", "f32"});
  const std::vector<float> b_data(8);
  expect_error<sp::InvalidArgument>(
      [&] { sp::spmm(ctx(), a.view(), sp::make_dense<float>(4, 2, 1, b_data.data()), c.mut()); },
      {"sparseport::spmm", "B", "ld 1", "2 columns"});
}

TEST(Errors, UnknownVariantIsUnsupported) {
  const Example a;
  const sp::HostDense<float> b(4, 2);
  sp::HostDense<float> c(3, 2);
  expect_error<sp::Unsupported>(
      [&] {
        sp::spmm(ctx(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 1, 0, "spmm.nope"});
      },
      {"sparseport::spmm", "spmm.nope", "spmm.serial"});
}

// ---- sddmm -----------------------------------------------------------------------------------

TEST(Errors, SddmmShapesAndTypes) {
  const Example a;
  const sp::HostDense<float> x(3, 2), y(4, 2), y_bad(4, 3);
  sp::HostDense<float> out(5, 1), out_short(4, 1, -1, 42.0f);
  expect_error<sp::DimensionMismatch>([&] { sp::sddmm(ctx(), a.view(), x.view(), y.view(), out_short.mut()); },
                                      {"sparseport::sddmm", "out is 4x1", "5x1"});
  EXPECT_TRUE(untouched(out_short, 42.0f));
  expect_error<sp::DimensionMismatch>([&] { sp::sddmm(ctx(), a.view(), x.view(), y_bad.view(), out.mut()); },
                                      {"sparseport::sddmm", "Y is 4x3", "4x2"});
  sp::HostDense<double> out64(5, 1);
  expect_error<sp::InvalidArgument>([&] { sp::sddmm(ctx(), a.view(), x.view(), y.view(), out64.mut()); },
                                    {"sparseport::sddmm", "out", "f64", "f32"});
}

// ---- segment_reduce / scatter_reduce ---------------------------------------------------------

TEST(Errors, SegmentReduceUnsortedIndex) {
  const std::vector<int32_t> index{0, 2, 3, 1, 3};
  const sp::HostDense<float> src(5, 2);
  sp::HostDense<float> out(4, 2, -1, 42.0f);
  expect_error<sp::InvalidArgument>(
      [&] { sp::segment_reduce(ctx(), sp::make_index(5, index.data()), src.view(), out.mut()); },
      {"sparseport::segment_reduce", "sorted", "index[2] = 3", "index[3] = 1"});
  EXPECT_TRUE(untouched(out, 42.0f));
  // The same index is fine for scatter_reduce.
  EXPECT_NO_THROW(sp::scatter_reduce(ctx(), sp::make_index(5, index.data()), src.view(), out.mut()));
}

TEST(Errors, SegmentReduceIndexOutOfRangeAndShapes) {
  const std::vector<int32_t> index{0, 4, 4};
  const sp::HostDense<float> src(3, 2), src_bad(4, 2);
  sp::HostDense<float> out(4, 2), out_bad(4, 3);
  for (auto op : {&sp::segment_reduce, &sp::scatter_reduce}) {
    const std::string name = op == &sp::segment_reduce ? "sparseport::segment_reduce" : "sparseport::scatter_reduce";
    expect_error<sp::InvalidArgument>([&] { op(ctx(), sp::make_index(3, index.data()), src.view(), out.mut(), {}); },
                                      {name, "index[1] is 4", "[0, 4)"});
    const std::vector<int32_t> ok{0, 1, 3};
    expect_error<sp::DimensionMismatch>([&] { op(ctx(), sp::make_index(3, ok.data()), src_bad.view(), out.mut(), {}); },
                                        {name, "src is 4x2", "3x2"});
    expect_error<sp::DimensionMismatch>([&] { op(ctx(), sp::make_index(3, ok.data()), src.view(), out_bad.mut(), {}); },
                                        {name, "out is 4x3", "4x2"});
    sp::HostDense<double> out64(4, 2);
    expect_error<sp::InvalidArgument>([&] { op(ctx(), sp::make_index(3, ok.data()), src.view(), out64.mut(), {}); },
                                      {name, "out", "f64", "f32"});
  }
}

// ---- gather_scatter --------------------------------------------------------------------------

TEST(Errors, GatherScatterIndicesAndShapes) {
  const std::vector<int32_t> dst{0, 2, 1}, dst_sorted{0, 1, 2}, src{0, 1, 5};
  const std::vector<float> w{1, 1, 1};
  const sp::HostDense<float> x(6, 2), x_bad(5, 2);
  sp::HostDense<float> out(3, 2, -1, 42.0f);
  expect_error<sp::InvalidArgument>(
      [&] {
        sp::gather_scatter(ctx(), sp::make_coo<int32_t, float>(3, 6, 3, dst.data(), src.data(), w.data()), x.view(),
                           out.mut());
      },
      {"sparseport::gather_scatter", "dst", "sorted", "= 2", "= 1"});
  const std::vector<int32_t> src_bad{0, 1, 6};
  expect_error<sp::InvalidArgument>(
      [&] {
        sp::gather_scatter(ctx(), sp::make_coo<int32_t, float>(3, 6, 3, dst_sorted.data(), src_bad.data(), w.data()),
                           x.view(), out.mut());
      },
      {"sparseport::gather_scatter", "src", "is 6", "[0, 6)"});
  expect_error<sp::DimensionMismatch>(
      [&] {
        sp::gather_scatter(ctx(), sp::make_coo<int32_t, float>(3, 6, 3, dst_sorted.data(), src.data(), w.data()),
                           x_bad.view(), out.mut());
      },
      {"sparseport::gather_scatter", "x is 5x2", "6x2"});
  EXPECT_TRUE(untouched(out, 42.0f));
}

// ---- csr_attention ---------------------------------------------------------------------------

TEST(Errors, AttentionShapesTypesAndScale) {
  const Example a;  // 3 x 4
  const sp::HostDense<float> q(3, 2), k(4, 2), k_bad(4, 3), v(4, 5), v_bad(3, 5);
  sp::HostDense<float> out(3, 5, -1, 42.0f);
  expect_error<sp::DimensionMismatch>(
      [&] { sp::csr_attention(ctx(), a.view(), q.view(), k_bad.view(), v.view(), out.mut()); },
      {"sparseport::csr_attention", "K is 4x3", "4x2"});
  expect_error<sp::DimensionMismatch>(
      [&] { sp::csr_attention(ctx(), a.view(), q.view(), k.view(), v_bad.view(), out.mut()); },
      {"sparseport::csr_attention", "V is 3x5", "4x5"});
  expect_error<sp::InvalidArgument>(
      [&] {
        sp::csr_attention(ctx(), a.view(), q.view(), k.view(), v.view(), out.mut(),
                          {std::numeric_limits<double>::quiet_NaN(), ""});
      },
      {"sparseport::csr_attention", "scale", "nan"});
  const sp::HostDense<double> v64(4, 5);
  expect_error<sp::InvalidArgument>(
      [&] { sp::csr_attention(ctx(), a.view(), q.view(), k.view(), v64.view(), out.mut()); },
      {"sparseport::csr_attention", "V", "f64", "f32"});
  EXPECT_TRUE(untouched(out, 42.0f));
}

// ---- csr_slice_rows --------------------------------------------------------------------------

TEST(Errors, SliceRowsIndexRangeTypeAndShape) {
  const Example a;
  const std::vector<int32_t> rows{0, 3};
  expect_error<sp::InvalidArgument>([&] { sp::csr_slice_rows(ctx(), a.view(), sp::make_index(2, rows.data())); },
                                    {"sparseport::csr_slice_rows", "rows[1] is 3", "[0, 3)"});
  const std::vector<int64_t> rows64{0, 1};
  expect_error<sp::InvalidArgument>([&] { sp::csr_slice_rows(ctx(), a.view(), sp::make_index(2, rows64.data())); },
                                    {"sparseport::csr_slice_rows", "rows", "i64", "i32"});
  const std::vector<int32_t> ok{0, 2};
  sp::HostDense<float> out(2, 3, -1, 42.0f);
  expect_error<sp::DimensionMismatch>(
      [&] { sp::csr_slice_rows_dense(ctx(), a.view(), sp::make_index(2, ok.data()), out.mut()); },
      {"sparseport::csr_slice_rows_dense", "out is 2x3", "2x4"});
  EXPECT_TRUE(untouched(out, 42.0f));
}

// ---- csr_induced_subgraph --------------------------------------------------------------------

TEST(Errors, InducedSubgraphSquareDistinctInRange) {
  const Example rect;  // 3 x 4
  const std::vector<int32_t> v{0, 1};
  expect_error<sp::DimensionMismatch>(
      [&] { sp::csr_induced_subgraph(ctx(), rect.view(), sp::make_index(2, v.data())); },
      {"sparseport::csr_induced_subgraph", "3x4", "square"});
  const std::vector<int32_t> rp{0, 1, 2, 3}, ci{1, 2, 0};
  const sp::CsrView sq = sp::make_csr<int32_t, float>(3, 3, 3, rp.data(), ci.data());
  const std::vector<int32_t> dup{1, 0, 1};
  expect_error<sp::InvalidArgument>([&] { sp::csr_induced_subgraph(ctx(), sq, sp::make_index(3, dup.data())); },
                                    {"sparseport::csr_induced_subgraph", "vertices[0]", "vertices[2]", "both 1"});
  const std::vector<int32_t> out_of_range{2, 3};
  expect_error<sp::InvalidArgument>(
      [&] { sp::csr_induced_subgraph(ctx(), sq, sp::make_index(2, out_of_range.data())); },
      {"sparseport::csr_induced_subgraph", "vertices[1] is 3", "[0, 3)"});
}

// ---- csr_transpose ---------------------------------------------------------------------------

TEST(Errors, TransposeBadStructure) {
  Example a;
  a.colind[0] = -1;
  expect_error<sp::InvalidArgument>([&] { sp::csr_transpose(ctx(), a.view()); },
                                    {"sparseport::csr_transpose", "row 0", "column -1", "[0, 4)"});
  Example b;
  const sp::CsrView short_nnz =
      sp::make_csr<int32_t, float>(3, 4, 4, b.rowptr.data(), b.colind.data(), b.values.data());
  expect_error<sp::InvalidArgument>([&] { sp::csr_transpose(ctx(), short_nnz); },
                                    {"sparseport::csr_transpose", "rowptr[3] is 5", "nnz is 4"});
}

}  // namespace
