// SPDX-License-Identifier: Apache-2.0
// spmm max/min's arg (spmm.rows, flagged SPARSEPORT_VARIANT_RECORDS_ARG), csr_transpose's perm and
// spmm_arg_backward (ABI 1.5) on the openmp plugin: against the reference plugin on skewed inputs
// (empty first and last rows, a mega-row across every thread boundary, hubs, repeated columns),
// with ties (few distinct values), NaN and +-inf in B, patterns, int64 indices, and widths around
// the arg loop's 64-column blocks; and the same bits at 1..4 threads.
#include "arg_check.hpp"

namespace {

using namespace sp_arg;

constexpr uint64_t kSeed = 4715;
const std::string kVariant = "spmm.rows";

std::vector<Kind> kinds() { return {Kind::random, Kind::ties, Kind::nan_inf}; }

TEST(OpenMPArg, RowsIsTheVariantThatRecordsArg) { expect_only_recording_variant("openmp", kVariant); }

template <class I, class V>
void check_against_reference() {
  Context ctx = Context::create("openmp");
  ctx.set_threads(3);
  uint64_t seed = kSeed;
  for (const Kind kind : kinds())
    for (const bool pattern : {false, true})
      for (const int64_t f : {1, 13, 64, 70, 130})
        for (const sparseport_reduce r : {SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN}) {
          const bool scaled = r == SPARSEPORT_REDUCE_MIN;
          SCOPED_TRACE(std::string(name(kind)) + (pattern ? ", pattern" : "") + ", F " + std::to_string(f) +
                       (r == SPARSEPORT_REDUCE_MAX ? ", max" : ", min") +
                       (scaled ? ", alpha -0.5, beta 2" : ", alpha 1, beta 0") + ", seed " + std::to_string(seed));
          const auto p = problem<I, V>(kind, pattern, f, r, scaled ? -0.5 : 1.0, scaled ? 2.0 : 0.0, 700, 500, 9000,
                                       0.4, seed++);
          if (kind == Kind::ties) {
            EXPECT_GT(ties(p), p.a.rows * p.f / 10) << "the ties input has few ties";
          }
          expect_matches_reference(ctx, kVariant, p, true);
        }
}

TEST(OpenMPArg, MatchesTheReferenceI32F32) { check_against_reference<int32_t, float>(); }
TEST(OpenMPArg, MatchesTheReferenceI64F32) { check_against_reference<int64_t, float>(); }
TEST(OpenMPArg, MatchesTheReferenceI32F64) { check_against_reference<int32_t, double>(); }
TEST(OpenMPArg, MatchesTheReferenceI64F64) { check_against_reference<int64_t, double>(); }

// No entries at all: every arg is -1, C = beta * C, every gradient 0.
TEST(OpenMPArg, EmptyMatrix) {
  Context ctx = Context::create("openmp");
  auto p = problem<int32_t, double>(Kind::random, false, 9, SPARSEPORT_REDUCE_MAX, 1.0, 0.5, 6, 4, 0, 0.0, kSeed);
  ASSERT_EQ(p.a.nnz(), 0);
  expect_matches_reference(ctx, kVariant, p, true);
  const Forward<int32_t, double> got = forward(ctx, kVariant, p, ctx.exec());
  for (int64_t i = 0; i < p.a.rows; ++i)
    for (int64_t j = 0; j < p.f; ++j) EXPECT_EQ(got.arg[static_cast<size_t>(i * p.arg_ld() + j)], -1);
}

// The forward, the gather, the deterministic scatter (columns over threads) and dvalues give the
// same bits at 1..4 threads, and the gather's bits are the scatter's.
template <class I, class V>
void check_threads() {
  Context ctx = Context::create("openmp");
  uint64_t seed = kSeed + 100;
  for (const Kind kind : kinds())
    for (const int64_t f : {1, 13, 70})
      for (const sparseport_reduce r : {SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN}) {
        SCOPED_TRACE(std::string(name(kind)) + ", F " + std::to_string(f) +
                     (r == SPARSEPORT_REDUCE_MAX ? ", max" : ", min") + ", seed " + std::to_string(seed));
        const auto p = problem<I, V>(kind, false, f, r, 1.5, -1.0, 1500, 1200, 20000, 0.4, seed++);
        Forward<I, V> first;
        Grads<I, V> first_gather;
        for (int t = 1; t <= 4; ++t) {
          SCOPED_TRACE(std::to_string(t) + " threads");
          ctx.set_threads(t);
          sparseport_exec ex = ctx.exec();
          const Forward<I, V> fwd = forward(ctx, kVariant, p, ex);
          ASSERT_TRUE(fwd.ok);
          ex.flags |= SPARSEPORT_EXEC_DETERMINISTIC;
          const Grads<I, V> gather = forced("gather", ctx, p, fwd.arg, true, ex);
          const Grads<I, V> scatter = forced("columns", ctx, p, fwd.arg, false, ex);
          const Grads<I, V> chosen = backward(ctx, p, p.b, p.dc, p.a, fwd.arg, true, ex);
          ASSERT_TRUE(gather.ok);
          ASSERT_TRUE(scatter.ok);
          ASSERT_TRUE(chosen.ok);
          EXPECT_TRUE(same_bits(scatter.db, gather.db, "dB scattered against gathered"));
          EXPECT_TRUE(same_bits(scatter.dv, gather.dv, "dvalues of the two calls"));
          EXPECT_TRUE(same_bits(chosen.db, gather.db, "dB on the path the plugin chose"));
          if (t == 1) {
            first = fwd;
            first_gather = gather;
            continue;
          }
          EXPECT_TRUE(same_bits(fwd.arg, first.arg, "arg against 1 thread"));
          EXPECT_TRUE(same_bits(fwd.c, first.c, "C against 1 thread"));
          EXPECT_TRUE(same_bits(gather.db, first_gather.db, "dB against 1 thread"));
          EXPECT_TRUE(same_bits(gather.dv, first_gather.dv, "dvalues against 1 thread"));
        }
      }
}

TEST(OpenMPArg, SameBitsForAnyThreadCountI32F32) { check_threads<int32_t, float>(); }
TEST(OpenMPArg, SameBitsForAnyThreadCountI64F64) { check_threads<int64_t, double>(); }

TEST(OpenMPArg, UnknownDbPathIsRefused) {
  Context ctx = Context::create("openmp");
  const auto p = problem<int32_t, float>(Kind::random, false, 4, SPARSEPORT_REDUCE_MAX, 1.0, 0.0, 20, 10, 50, 0.2, kSeed);
  const std::vector<int32_t> arg(static_cast<size_t>(p.a.rows * p.arg_ld()), -1);
  std::vector<float> db(static_cast<size_t>(p.a.cols * p.f));
  const sparseport_spmm_arg_backward_args args{
      {p.a.rows, p.a.cols, p.a.nnz(), p.a.rowptr.data(), p.a.colind.data(), p.a.values.data(), SPARSEPORT_I32,
       SPARSEPORT_F32},
      {p.b.rows, p.b.cols, p.b.ld, p.b.data.data(), SPARSEPORT_F32},
      {p.dc.rows, p.dc.cols, p.dc.ld, p.dc.data.data(), SPARSEPORT_F32},
      arg.data(),
      p.arg_ld(),
      {p.a.cols, p.f, p.f, db.data(), SPARSEPORT_F32},
      {p.a.nnz(), 1, 1, nullptr, SPARSEPORT_F32},
      nullptr,
      nullptr,
      nullptr};
  sparseport_test::ScopedEnv force("SPARSEPORT_ARG_BACKWARD_DB", "sideways");
  sparseport_status st{};
  const sparseport_exec ex = ctx.exec();
  EXPECT_EQ(ctx.plugin().table->spmm_arg_backward(&ex, &args, &st), SPARSEPORT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(st.message).find("SPARSEPORT_ARG_BACKWARD_DB='sideways'"), std::string::npos) << st.message;
}

TEST(OpenMPArg, TransposeWritesPerm) {
  Context ctx = Context::create("openmp");
  for (int t = 1; t <= 4; ++t) {
    SCOPED_TRACE(std::to_string(t) + " threads");
    ctx.set_threads(t);
    expect_transpose_with_perm(ctx, skewed<int32_t, float>(1500, 1200, 20000, 0.4, Kind::random, false, kSeed + t));
    expect_transpose_with_perm(ctx, skewed<int64_t, double>(300, 50, 4000, 0.5, Kind::ties, false, kSeed + t));
    expect_transpose_with_perm(ctx, skewed<int32_t, double>(200, 300, 1000, 0.3, Kind::random, true, kSeed + t));
  }
}

}  // namespace
