// SPDX-License-Identifier: Apache-2.0
// spmm max/min's arg (spmm.team_rows, flagged SPARSEPORT_VARIANT_RECORDS_ARG), csr_transpose's perm
// and spmm_arg_backward (ABI 1.5) on the kokkos plugin, against the reference plugin on skewed inputs
// (empty first and last rows, a mega-row, hubs, repeated columns), with ties, NaN and +-inf in B,
// patterns, int64 indices and widths around the host loop's 64-column blocks; and the same bits on a
// repeat run for the deterministic paths. Inputs are staged, so this runs on device-memory Kokkos
// too (there the gradients are compared within rounding: nvcc contracts into FMAs).
#include "openmp/arg_check.hpp"

namespace {

using namespace sp_arg;

constexpr uint64_t kSeed = 8102;
const std::string kVariant = "spmm.team_rows";

std::vector<Kind> kinds() { return {Kind::random, Kind::ties, Kind::nan_inf}; }

TEST(KokkosArg, TeamRowsIsTheVariantThatRecordsArg) { expect_only_recording_variant("kokkos", kVariant); }

template <class I, class V>
void check_against_reference() {
  Context ctx = Context::create("kokkos");
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
          expect_matches_reference(ctx, kVariant, p, !ctx.device_memory());
        }
}

TEST(KokkosArg, MatchesTheReferenceI32F32) { check_against_reference<int32_t, float>(); }
TEST(KokkosArg, MatchesTheReferenceI64F32) { check_against_reference<int64_t, float>(); }
TEST(KokkosArg, MatchesTheReferenceI32F64) { check_against_reference<int32_t, double>(); }
TEST(KokkosArg, MatchesTheReferenceI64F64) { check_against_reference<int64_t, double>(); }

TEST(KokkosArg, EmptyMatrix) {
  Context ctx = Context::create("kokkos");
  auto p = problem<int32_t, double>(Kind::random, false, 9, SPARSEPORT_REDUCE_MIN, 1.0, 0.5, 6, 4, 0, 0.0, kSeed);
  ASSERT_EQ(p.a.nnz(), 0);
  expect_matches_reference(ctx, kVariant, p, !ctx.device_memory());
}

// The forward, the gather, the deterministic scatter (blocks of dB's columns) and dvalues give
// the same bits when run again; on host spaces the gather's bits are also the scatter's.
template <class I, class V>
void check_repeatable() {
  Context ctx = Context::create("kokkos");
  uint64_t seed = kSeed + 100;
  for (const Kind kind : kinds())
    for (const int64_t f : {1, 13, 70})
      for (const sparseport_reduce r : {SPARSEPORT_REDUCE_MAX, SPARSEPORT_REDUCE_MIN}) {
        SCOPED_TRACE(std::string(name(kind)) + ", F " + std::to_string(f) +
                     (r == SPARSEPORT_REDUCE_MAX ? ", max" : ", min") + ", seed " + std::to_string(seed));
        const auto p = problem<I, V>(kind, false, f, r, 1.5, -1.0, 1500, 1200, 20000, 0.4, seed++);
        sparseport_exec ex = ctx.exec();
        ex.flags |= SPARSEPORT_EXEC_DETERMINISTIC;
        Forward<I, V> first;
        Grads<I, V> first_gather, first_scatter;
        for (int run = 0; run < 3; ++run) {
          SCOPED_TRACE("run " + std::to_string(run));
          const Forward<I, V> fwd = forward(ctx, kVariant, p, ex);
          ASSERT_TRUE(fwd.ok);
          const Grads<I, V> gather = forced("gather", ctx, p, fwd.arg, true, ex);
          const Grads<I, V> scatter = forced("columns", ctx, p, fwd.arg, false, ex);
          const Grads<I, V> chosen = backward(ctx, p, p.b, p.dc, p.a, fwd.arg, true, ex);
          ASSERT_TRUE(gather.ok);
          ASSERT_TRUE(scatter.ok);
          ASSERT_TRUE(chosen.ok);
          if (!ctx.device_memory()) {
            EXPECT_TRUE(same_bits(scatter.db, gather.db, "dB scattered against gathered"));
            EXPECT_TRUE(same_bits(scatter.dv, gather.dv, "dvalues of the two calls"));
            EXPECT_TRUE(same_bits(chosen.db, gather.db, "dB on the path the plugin chose"));
          }
          if (run == 0) {
            first = fwd, first_gather = gather, first_scatter = scatter;
            continue;
          }
          EXPECT_TRUE(same_bits(fwd.arg, first.arg, "arg against the first run"));
          EXPECT_TRUE(same_bits(fwd.c, first.c, "C against the first run"));
          EXPECT_TRUE(same_bits(gather.db, first_gather.db, "gathered dB against the first run"));
          EXPECT_TRUE(same_bits(scatter.db, first_scatter.db, "scattered dB against the first run"));
          EXPECT_TRUE(same_bits(gather.dv, first_gather.dv, "dvalues against the first run"));
        }
      }
}

TEST(KokkosArg, DeterministicPathsRepeatBitwiseI32F32) { check_repeatable<int32_t, float>(); }
TEST(KokkosArg, DeterministicPathsRepeatBitwiseI64F64) { check_repeatable<int64_t, double>(); }

TEST(KokkosArg, TransposeWritesPerm) {
  Context ctx = Context::create("kokkos");
  expect_transpose_with_perm(ctx, skewed<int32_t, float>(1500, 1200, 20000, 0.4, Kind::random, false, kSeed));
  expect_transpose_with_perm(ctx, skewed<int64_t, double>(300, 50, 4000, 0.5, Kind::ties, false, kSeed + 1));
  expect_transpose_with_perm(ctx, skewed<int32_t, double>(200, 300, 1000, 0.3, Kind::random, true, kSeed + 2));
}

}  // namespace
