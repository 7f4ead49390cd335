// SPDX-License-Identifier: Apache-2.0
// sparseport::dist against the single-process ops, under mpiexec with 1 to 4 ranks (CTest runs this
// program once per rank count). Every rank builds the same seeded matrices, so each can check its
// own rows against the reference backend's result on the whole matrix (in double), and its halo
// traffic against predict_halo. Cases: empty rows, ranks that own no rows (3 rows on 4 ranks), rows
// whose columns are all remote, a mega-row, a pattern, no entries at all, a rectangular A,
// unsorted and repeated columns; int32/int64 indices, float/double, F = 1 and 33; spmm (also with
// alpha and beta) and gather_scatter with sum, mean, max and min, sddmm (per entry, in the rows'
// original order), and segment_reduce over each rank's messages, on every host backend; the
// matrix scattered from rank 0 and built from each rank's own rows.
//
// Every rank runs every test in the same order (the collectives must match): no ASSERT_ that
// returns before a collective. Rank 0 prints GoogleTest's usual output; the others print only
// their failures, prefixed with their rank. The exit code is non-zero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/scoped.hpp"
#include "dist_test_util.hpp"
#include "sparseport/dist.hpp"
#include "sparseport/sparseport.hpp"

namespace sp = sparseport;
namespace dist = sparseport::dist;

namespace {

using namespace sparseport_dist_test;  // g_rank, g_ranks, g_seed and the helpers the programs share

// ---- inputs ----------------------------------------------------------------------------------

template <class I, class V>
struct Case {
  std::string name;
  sp::HostCsr<I, V> a;
};

template <class I, class V>
std::vector<Case<I, V>> make_cases() {
  std::mt19937_64 rng(g_seed);
  std::vector<Case<I, V>> cs;
  cs.push_back({"random 97x97 with empty rows", random_csr<I, V>(97, 97, 9, 0.2, false, false, rng)});
  cs.push_back({"3 rows (ranks without rows)", from_rows<I, V>(3, 3, {{2}, {0, 1}, {1, 2}}, false, rng)});
  {
    // Row i holds columns in the opposite half: with 2 or more ranks, rows whose columns are all remote.
    const int64_t n = 40;
    std::vector<std::vector<int64_t>> c(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < 3; ++k) c[static_cast<size_t>(i)].push_back((i + n / 2 + 5 * k) % n);
    for (auto& r : c) std::sort(r.begin(), r.end());
    cs.push_back({"all-remote rows", from_rows<I, V>(n, n, c, false, rng)});
  }
  {
    // Row 7 holds every column (most of the entries); the others one or two.
    const int64_t n = 64;
    std::vector<std::vector<int64_t>> c(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) c[7].push_back(j);
    for (int64_t i = 0; i < n; ++i)
      if (i != 7)
        c[static_cast<size_t>(i)] =
            i % 3 == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{(i * 7) % n, (i * 13 + 1) % n};
    for (auto& r : c) {
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
    }
    cs.push_back({"mega-row", from_rows<I, V>(n, n, c, false, rng)});
  }
  cs.push_back({"pattern", random_csr<I, V>(50, 50, 6, 0.1, true, false, rng)});
  cs.push_back({"no entries", random_csr<I, V>(10, 10, 1, 1.0, false, false, rng)});
  cs.push_back({"rectangular 40x70", random_csr<I, V>(40, 70, 8, 0.1, false, false, rng)});
  cs.push_back({"unsorted with repeats", random_csr<I, V>(30, 30, 8, 0.1, false, true, rng)});
  return cs;
}

// B values by sign, so that a fake 0 from the other block shows: max over negative products,
// min over positive ones (A's values are in [0.5, 1.5), see from_rows; a pattern's are 1).
enum class Sign { mixed, negative, positive };

template <class V>
sp::HostDense<V> make_dense(int64_t rows, int64_t cols, Sign s, uint64_t seed) {
  sp::HostDense<V> d(rows, cols);
  const double lo = s == Sign::positive ? 0.5 : -2.0, hi = s == Sign::negative ? -0.5 : 2.0;
  if (rows * cols > 0) sp::fill_random(d, seed, lo, hi);
  return d;
}

// ---- the single-process result -----------------------------------------------------------------

// alpha * reduce(A B) + beta * C0 in double, and a bound on the rounding: the same on |A|, |B|, |C0|.
template <class I, class V>
void expected(const sp::HostCsr<I, V>& a, const sp::HostDense<V>& b, const sp::HostDense<V>& c0, sp::Reduce r,
              double alpha, double beta, sp::HostDense<double>& want, sp::HostDense<double>& bound) {
  for (const bool absolute : {false, true}) {
    const sp::HostCsr<I, double> ad = to_f64(a, absolute);
    const sp::HostDense<double> bd = to_f64(b, absolute);
    sp::HostDense<double> out = to_f64(c0, absolute);
    const sp::Reduce rr = absolute && (r == sp::Reduce::min) ? sp::Reduce::max : r;
    sp::spmm(reference_ctx(), ad.view(), bd.view(), out.mut(),
             sp::SpmmOptions{rr, absolute ? std::fabs(alpha) : alpha, absolute ? std::fabs(beta) : beta, {}});
    (absolute ? bound : want) = std::move(out);
  }
}

// The transport a call with this context must have agreed on (SPARSEPORT_DIST_TRANSPORT unset or
// forced by the CTest entry).
std::string expected_transport(const sp::Context& ctx) {
  const char* env = std::getenv("SPARSEPORT_DIST_TRANSPORT");
  if (!ctx.device_memory()) {
    const std::string forced = env != nullptr ? env : "";
    if (forced == "shm" || forced == "mpi") return forced;
    // Every rank of these tests is on one node: the shared window, except for one rank.
    return g_ranks > 1 ? "shm" : "mpi";
  }
  if (env != nullptr && *env != '\0' && std::string(env) != "auto") return env;
  // One GPU here (the GPU machine of the tests): NCCL for one rank, host-staged for ranks sharing it.
  return dist::has_nccl() && g_ranks == 1 ? "nccl" : "host-staged";
}

// Compares this rank's rows of the result with the expected global rows; returns the failures.
template <class V>
int64_t compare_rows(const sp::HostDense<V>& got, int64_t first_row, const sp::HostDense<double>& want,
                     const sp::HostDense<double>& bound, const std::string& what, const char* label = "C") {
  int64_t bad = 0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = 0; j < got.cols; ++j) {
      const double g = double(got(i, j)), w = want(first_row + i, j);
      const double tol = kRelTol<V> * bound(first_row + i, j) + 1e-30;
      if (std::fabs(g - w) <= tol) continue;
      if (bad++ == 0)
        ADD_FAILURE() << what << ": " << label << "[" << first_row + i << "," << j << "] is " << g
                      << " but the single-process result is " << w << " (tolerance " << tol << ")";
    }
  return bad;
}

// ---- the test --------------------------------------------------------------------------------

template <class T>
class DistOps : public ::testing::Test {};
using Types = ::testing::Types<std::pair<int32_t, float>, std::pair<int64_t, double>, std::pair<int32_t, double>,
                               std::pair<int64_t, float>>;
TYPED_TEST_SUITE(DistOps, Types, TypeNames);

TYPED_TEST(DistOps, EveryOpAndReduceMatchesOneProcess) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const std::vector<std::string> backends = test_backends();
  ASSERT_FALSE(backends.empty());  // the same on every rank
  int64_t calls = 0;
  for (const Case<I, V>& cs : make_cases<I, V>()) {
    const int me = g_rank;
    // The two ways in: scattered from rank 0 (balanced by entries), and each rank's own rows with
    // an even split of the rows.
    for (const auto& [how, d] : both_builds(cs.a)) {
      const std::string where = cs.name + " (" + how + ", " + std::to_string(g_ranks) + " ranks)";
      SCOPED_TRACE(where);
      EXPECT_EQ(d.rows(), cs.a.rows);
      EXPECT_EQ(d.cols(), cs.a.cols);
      EXPECT_EQ(d.nnz(), cs.a.nnz());
      EXPECT_EQ(d.local_block().nnz() + d.remote_block().nnz(),
                cs.a.rowptr[static_cast<size_t>(d.first_row() + d.local_rows())] -
                    cs.a.rowptr[static_cast<size_t>(d.first_row())]);
      if (cs.a.rows < g_ranks) {
        EXPECT_FALSE(all_ranks(d.local_rows() > 0)) << "some rank must own no rows";
      }
      if (cs.name == "all-remote rows" && g_ranks > 1) {
        // Rows with entries in the remote block only, on some rank.
        int64_t remote_only = 0;
        for (int64_t i = 0; i < d.local_rows(); ++i) {
          const auto deg = [i](const sp::HostCsr<I, V>& m) {
            return m.rowptr[static_cast<size_t>(i) + 1] - m.rowptr[static_cast<size_t>(i)];
          };
          remote_only += deg(d.local_block()) == 0 && deg(d.remote_block()) > 0;
        }
        EXPECT_GT(sum_over_ranks(remote_only), 0);
      }
      // The halo plan against the prediction from the partition alone.
      const dist::HaloVolume pred = dist::predict_halo(cs.a.view(), d.partition());
      const dist::HaloPlan& plan = d.halo();
      for (size_t k = 0; k < plan.send_peers.size(); ++k)
        EXPECT_EQ(plan.send_counts[k], pred.between(me, plan.send_peers[k]))
            << "rows sent to rank " << plan.send_peers[k];
      EXPECT_EQ(plan.send_total(), pred.sent_rows(me));
      EXPECT_EQ(plan.recv_total(), pred.received_rows(me));
      EXPECT_EQ(static_cast<int64_t>(d.ghost_cols().size()), pred.received_rows(me));

      for (const std::string& backend : backends) {
        const sp::Context ctx = make_context(backend);
        for (const int64_t f : {int64_t{1}, int64_t{33}}) {
          for (const auto& [reduce, sign] :
               std::vector<std::pair<sp::Reduce, Sign>>{{sp::Reduce::sum, Sign::mixed},
                                                        {sp::Reduce::mean, Sign::mixed},
                                                        {sp::Reduce::max, Sign::mixed},
                                                        {sp::Reduce::max, Sign::negative},
                                                        {sp::Reduce::min, Sign::mixed},
                                                        {sp::Reduce::min, Sign::positive}}) {
            const sp::HostDense<V> b = make_dense<V>(cs.a.cols, f, sign, g_seed + 1);
            const sp::HostDense<V> c0 = make_dense<V>(cs.a.rows, f, Sign::mixed, g_seed + 2);
            const sp::HostDense<V> b_local = dist::scatter_rows<V>(
                MPI_COMM_WORLD, g_rank == 0 ? b.view() : sp::DenseView{0, 0, 0, nullptr, sp::value_type_of<V>()},
                d.partition().col_starts);
            for (const bool gs : {false, true}) {
              // spmm with (alpha, beta) = (1, 0), and with (2, 0.5) once per reduce at F = 33.
              for (const auto& [alpha, beta] : std::vector<std::pair<double, double>>{{1.0, 0.0}, {2.0, 0.5}}) {
                if (beta != 0.0 && (gs || f != 33)) continue;
                const std::string what = where + ", " + backend + ", " + (gs ? "gather_scatter" : "spmm") + ", " +
                                         sp::name(reduce) + ", F " + std::to_string(f) +
                                         (beta != 0.0 ? ", alpha 2 beta 0.5" : "");
                sp::HostDense<double> want, bound;
                expected(cs.a, b, c0, reduce, alpha, beta, want, bound);
                sp::HostDense<V> c(d.local_rows(), f);
                for (int64_t i = 0; i < c.rows; ++i)
                  for (int64_t j = 0; j < f; ++j) c(i, j) = c0(d.first_row() + i, j);
                dist::CallStats st;
                InContext on(ctx);
                if (gs)
                  dist::gather_scatter(ctx, d, on.in(b_local), on.out(c), sp::ReduceOptions{reduce, {}}, &st);
                else
                  dist::spmm(ctx, d, on.in(b_local), on.out(c), sp::SpmmOptions{reduce, alpha, beta, {}}, &st);
                on.done();
                ++calls;
                EXPECT_EQ(std::string(st.transport), expected_transport(ctx)) << what;
                EXPECT_EQ(compare_rows(c, d.first_row(), want, bound, what), 0) << what;
                // Bytes actually moved (sent as posted, received as MPI counted them) against the prediction.
                const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));
                EXPECT_EQ(st.bytes_sent, pred.sent_rows(me) * row_bytes) << what;
                EXPECT_EQ(st.bytes_received, pred.received_rows(me) * row_bytes) << what;
                EXPECT_EQ(sum_over_ranks(st.bytes_sent), pred.bytes(f, sizeof(V))) << what;
                EXPECT_EQ(sum_over_ranks(st.bytes_received), pred.bytes(f, sizeof(V))) << what;
              }
            }
          }
        }
      }
    }
  }
  if (g_rank == 0) std::printf("[          ] %lld distributed calls checked\n", static_cast<long long>(calls));
}

// Every spmm variant of every backend under test, named explicitly (both blocks run it), but those that
// round float32 to TF32 (VariantInfo::tf32): they refuse to run without the caller's consent, and the
// TF32 bound is tests/cuda/test_cuda_tc.cpp's, not this float32 tolerance.
TYPED_TEST(DistOps, NamedVariants) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const Case<I, V> cs = make_cases<I, V>().front();
  const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &cs.a : nullptr);
  const int64_t f = 8;
  const sp::HostDense<V> b = make_dense<V>(cs.a.cols, f, Sign::mixed, g_seed + 3);
  const sp::HostDense<V> c0 = make_dense<V>(cs.a.rows, f, Sign::mixed, g_seed + 4);
  const sp::HostDense<V> b_local = dist::scatter_rows<V>(
      MPI_COMM_WORLD, g_rank == 0 ? b.view() : sp::DenseView{0, 0, 0, nullptr, sp::value_type_of<V>()},
      d.partition().col_starts);
  for (const std::string& backend : test_backends()) {
    const sp::Context ctx = make_context(backend);
    for (const sp::VariantInfo& info : ctx.plugin().variants) {
      if (info.op != SPARSEPORT_OP_SPMM || info.tf32) continue;
      const std::string& variant = info.name;
      for (const sp::Reduce reduce : {sp::Reduce::sum, sp::Reduce::mean, sp::Reduce::max, sp::Reduce::min}) {
        const std::string what = backend + " " + variant + " " + sp::name(reduce);
        sp::HostDense<V> c(d.local_rows(), f);
        // A variant may refuse an input (Unsupported); every rank must then skip it together.
        bool refused = false;
        InContext on(ctx);
        try {
          dist::spmm(ctx, d, on.in(b_local), on.out(c), sp::SpmmOptions{reduce, 1.0, 0.0, variant});
          on.done();
        } catch (const sp::Unsupported&) {
          refused = true;
        }
        if (!all_ranks(!refused)) continue;
        sp::HostDense<double> want, bound;
        expected(cs.a, b, c0, reduce, 1.0, 0.0, want, bound);
        EXPECT_EQ(compare_rows(c, d.first_row(), want, bound, what), 0) << what;
      }
    }
  }
}

// ---- sddmm and segment_reduce ----------------------------------------------------------------

// out[e] = A.val[e] * X[row(e)] . Y[col(e)] on the whole matrix in double, and the same on |A|, |X|, |Y|.
template <class I, class V>
void expected_sddmm(const sp::HostCsr<I, V>& a, const sp::HostDense<V>& x, const sp::HostDense<V>& y,
                    sp::HostDense<double>& want, sp::HostDense<double>& bound) {
  for (const bool absolute : {false, true}) {
    sp::HostDense<double> out(a.nnz(), 1);
    sp::sddmm(reference_ctx(), to_f64(a, absolute).view(), to_f64(x, absolute).view(), to_f64(y, absolute).view(),
              out.mut());
    (absolute ? bound : want) = std::move(out);
  }
}

// The row of each entry of a global CSR: segment_reduce's index for messages in storage order.
template <class I, class V>
std::vector<I> entry_rows(const sp::HostCsr<I, V>& a) {
  std::vector<I> rows(static_cast<size_t>(a.nnz()));
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      rows[static_cast<size_t>(e)] = static_cast<I>(i);
  return rows;
}

// reduce over each row's entries of src (E x F, one row per entry) on the whole matrix in double,
// and the bound from |src| (max for max and min, as in expected()).
template <class I, class V>
void expected_segments(const sp::HostCsr<I, V>& a, const sp::HostDense<V>& src, sp::Reduce r,
                       sp::HostDense<double>& want, sp::HostDense<double>& bound) {
  const std::vector<I> index = entry_rows(a);
  for (const bool absolute : {false, true}) {
    sp::HostDense<double> out(a.rows, src.cols);
    const sp::Reduce rr = absolute && r == sp::Reduce::min ? sp::Reduce::max : r;
    sp::segment_reduce(reference_ctx(), sp::make_index<I>(a.nnz(), index.data()), to_f64(src, absolute).view(),
                       out.mut(), sp::ReduceOptions{rr, {}});
    (absolute ? bound : want) = std::move(out);
  }
}

TYPED_TEST(DistOps, SddmmMatchesOneProcess) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const std::vector<std::string> backends = test_backends();
  ASSERT_FALSE(backends.empty());
  int64_t calls = 0;
  for (const Case<I, V>& cs : make_cases<I, V>()) {
    for (const auto& [how, d] : both_builds(cs.a)) {
      const std::string where = cs.name + " (" + how + ", " + std::to_string(g_ranks) + " ranks)";
      SCOPED_TRACE(where);
      const int64_t e0 = cs.a.rowptr[static_cast<size_t>(d.first_row())];
      EXPECT_EQ(d.local_nnz(), cs.a.rowptr[static_cast<size_t>(d.first_row() + d.local_rows())] - e0);
      const dist::HaloVolume pred = dist::predict_halo(cs.a.view(), d.partition());
      for (const std::string& backend : backends) {
        const sp::Context ctx = make_context(backend);
        for (const int64_t f : {int64_t{1}, int64_t{33}}) {
          const std::string what = where + ", " + backend + ", sddmm, F " + std::to_string(f);
          const sp::HostDense<V> x = make_dense<V>(cs.a.rows, f, Sign::mixed, g_seed + 21);
          const sp::HostDense<V> y = make_dense<V>(cs.a.cols, f, Sign::mixed, g_seed + 22);
          sp::HostDense<double> want, bound;
          expected_sddmm(cs.a, x, y, want, bound);
          const sp::HostDense<V> x_local = rows_of(x, d.first_row(), d.first_row() + d.local_rows());
          const sp::HostDense<V> y_local = rows_of(y, d.first_col(), d.first_col() + d.local_cols());
          // out with a leading dimension of 3: the merge honours ld.
          sp::HostDense<V> out(d.local_nnz(), 1, 3, std::numeric_limits<V>::quiet_NaN());
          dist::CallStats st;
          InContext on(ctx);
          const sp::DenseMutView out_on = on.out(out);
          dist::sddmm(ctx, d, on.in(x_local), on.in(y_local), out_on, {}, &st);
          on.done();
          ++calls;
          // Entry k of this rank is global entry e0 + k.
          EXPECT_EQ(compare_rows(out, e0, want, bound, what, "out"), 0) << what;
          const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));
          EXPECT_EQ(st.bytes_sent, pred.sent_rows(g_rank) * row_bytes) << what;
          EXPECT_EQ(st.bytes_received, pred.received_rows(g_rank) * row_bytes) << what;
          EXPECT_EQ(sum_over_ranks(st.bytes_sent), pred.bytes(f, sizeof(V))) << what;

          // The per-entry result is segment_reduce's input as it stands (F = 1): the rows' largest
          // score, the first step of an edge softmax, against the same on the whole result.
          if (f == 33) {
            sp::HostDense<V> row_max(d.local_rows(), 1);
            dist::segment_reduce(ctx, d, out_on, on.out(row_max), sp::ReduceOptions{sp::Reduce::max, {}});
            on.done();
            sp::HostDense<V> scores(cs.a.nnz(), 1);
            for (int64_t e = 0; e < cs.a.nnz(); ++e) scores(e, 0) = static_cast<V>(want(e, 0));
            sp::HostDense<double> want_max, bound_max;
            expected_segments(cs.a, scores, sp::Reduce::max, want_max, bound_max);
            // The scores themselves are rounded to V here and there: bound by the sddmm's bound.
            sp::HostDense<double> tol(cs.a.rows, 1);
            for (int64_t i = 0; i < cs.a.rows; ++i)
              for (I e = cs.a.rowptr[static_cast<size_t>(i)]; e < cs.a.rowptr[static_cast<size_t>(i) + 1]; ++e)
                tol(i, 0) = std::max(tol(i, 0), 2 * bound(e, 0));
            EXPECT_EQ(compare_rows(row_max, d.first_row(), want_max, tol, what + " then segment_reduce max"), 0)
                << what;
          }
        }
      }
    }
  }
  if (g_rank == 0) std::printf("[          ] %lld distributed sddmm calls checked\n", static_cast<long long>(calls));
}

TYPED_TEST(DistOps, SegmentReduceMatchesOneProcess) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const std::vector<std::string> backends = test_backends();
  ASSERT_FALSE(backends.empty());
  for (const Case<I, V>& cs : make_cases<I, V>()) {
    for (const auto& [how, d] : both_builds(cs.a)) {
      const std::string where = cs.name + " (" + how + ", " + std::to_string(g_ranks) + " ranks)";
      SCOPED_TRACE(where);
      const int64_t e0 = cs.a.rowptr[static_cast<size_t>(d.first_row())];
      for (const std::string& backend : backends) {
        const sp::Context ctx = make_context(backend);
        for (const int64_t f : {int64_t{1}, int64_t{33}}) {
          for (const auto& [reduce, sign] :
               std::vector<std::pair<sp::Reduce, Sign>>{{sp::Reduce::sum, Sign::mixed},
                                                        {sp::Reduce::mean, Sign::mixed},
                                                        {sp::Reduce::max, Sign::negative},
                                                        {sp::Reduce::min, Sign::positive}}) {
            const std::string what =
                where + ", " + backend + ", segment_reduce, " + sp::name(reduce) + ", F " + std::to_string(f);
            const sp::HostDense<V> src = make_dense<V>(cs.a.nnz(), f, sign, g_seed + 23);
            sp::HostDense<double> want, bound;
            expected_segments(cs.a, src, reduce, want, bound);
            const sp::HostDense<V> src_local = rows_of(src, e0, e0 + d.local_nnz());
            sp::HostDense<V> out(d.local_rows(), f, f, std::numeric_limits<V>::quiet_NaN());
            dist::CallStats st;
            InContext on(ctx);
            dist::segment_reduce(ctx, d, on.in(src_local), on.out(out), sp::ReduceOptions{reduce, {}}, &st);
            on.done();
            EXPECT_EQ(compare_rows(out, d.first_row(), want, bound, what), 0) << what;
            EXPECT_EQ(st.bytes_sent, 0) << what;  // no halo
          }
        }
      }
    }
  }
}

// Every sddmm variant of every host backend, named explicitly (both blocks run it).
TYPED_TEST(DistOps, SddmmNamedVariants) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const std::vector<Case<I, V>> cases = make_cases<I, V>();
  for (const Case<I, V>& cs : {cases[0], cases[3]}) {  // random, mega-row
    const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &cs.a : nullptr);
    const int64_t f = 8;
    const sp::HostDense<V> x = make_dense<V>(cs.a.rows, f, Sign::mixed, g_seed + 24);
    const sp::HostDense<V> y = make_dense<V>(cs.a.cols, f, Sign::mixed, g_seed + 25);
    sp::HostDense<double> want, bound;
    expected_sddmm(cs.a, x, y, want, bound);
    const sp::HostDense<V> x_local = rows_of(x, d.first_row(), d.first_row() + d.local_rows());
    const sp::HostDense<V> y_local = rows_of(y, d.first_col(), d.first_col() + d.local_cols());
    const int64_t e0 = cs.a.rowptr[static_cast<size_t>(d.first_row())];
    for (const std::string& backend : test_backends()) {
      const sp::Context ctx = make_context(backend);
      for (const std::string& variant : ctx.plugin().variants_of(SPARSEPORT_OP_SDDMM)) {
        const std::string what = cs.name + ", " + backend + " " + variant;
        sp::HostDense<V> out(d.local_nnz(), 1);
        bool refused = false;
        InContext on(ctx);
        try {
          dist::sddmm(ctx, d, on.in(x_local), on.in(y_local), on.out(out), sp::OpOptions{variant});
          on.done();
        } catch (const sp::Unsupported&) {
          refused = true;
        }
        if (!all_ranks(!refused)) continue;
        EXPECT_EQ(compare_rows(out, e0, want, bound, what, "out"), 0) << what;
      }
    }
  }
}

// An InvalidArgument (or subclass E) whose message names the op and the argument.
template <class E, class Fn>
void expect_refusal(Fn&& fn, const std::string& op, const std::string& arg) {
  (void)refusal_message<E>(std::forward<Fn>(fn), op, arg);
}

TEST(Dist, SddmmAndSegmentReduceRefuseBadOperands) {
  // The same bad operand on every rank, so every rank throws before anything is posted; afterwards
  // the matrix still works.
  std::mt19937_64 rng(3);
  using I = int32_t;
  using V = float;
  const auto a = random_csr<I, V>(20, 20, 4, 0.1, false, false, rng);
  const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const sp::Context ctx = sp::Context::create("reference");
  const int64_t f = 4, m = d.local_rows(), k = d.local_cols(), n = d.local_nnz();
  sp::HostDense<V> x(m, f), y(k, f), out(n, 1);
  sp::HostDense<V> x_short(m + 1, f), y_long(k + 1, f), x_narrow(m, f - 1), out_short(n + 1, 1), out_wide(n, 2);
  sp::HostDense<double> y_f64(k, f);
  using DM = sp::DimensionMismatch;
  expect_refusal<DM>([&] { dist::sddmm(ctx, d, x.view(), y_long.view(), out.mut()); }, "sddmm", "y_local");
  expect_refusal<DM>([&] { dist::sddmm(ctx, d, x_short.view(), y.view(), out.mut()); }, "sddmm", "x_local");
  expect_refusal<DM>([&] { dist::sddmm(ctx, d, x_narrow.view(), y.view(), out.mut()); }, "sddmm", "x_local");
  expect_refusal<DM>([&] { dist::sddmm(ctx, d, x.view(), y.view(), out_short.mut()); }, "sddmm", "out_local");
  expect_refusal<DM>([&] { dist::sddmm(ctx, d, x.view(), y.view(), out_wide.mut()); }, "sddmm", "out_local");
  expect_refusal<sp::InvalidArgument>([&] { dist::sddmm(ctx, d, x.view(), y_f64.view(), out.mut()); }, "sddmm",
                                      "y_local");
  sp::DenseView bad_ld = y.view();
  bad_ld.ld = f - 1;
  expect_refusal<sp::InvalidArgument>([&] { dist::sddmm(ctx, d, x.view(), bad_ld, out.mut()); }, "sddmm", "y_local");

  sp::HostDense<V> src(n, f), src_short(n + 1, f), seg(m, f), seg_wide(m, f + 1), seg_long(m + 1, f);
  expect_refusal<DM>([&] { dist::segment_reduce(ctx, d, src_short.view(), seg.mut()); }, "segment_reduce",
                     "src_local");
  expect_refusal<DM>([&] { dist::segment_reduce(ctx, d, src.view(), seg_wide.mut()); }, "segment_reduce",
                     "out_local");
  expect_refusal<DM>([&] { dist::segment_reduce(ctx, d, src.view(), seg_long.mut()); }, "segment_reduce",
                     "out_local");

  // Still usable: a correct call after the refusals.
  const sp::HostDense<V> xg = make_dense<V>(a.rows, f, Sign::mixed, g_seed + 26);
  const sp::HostDense<V> yg = make_dense<V>(a.cols, f, Sign::mixed, g_seed + 27);
  sp::HostDense<double> want, bound;
  expected_sddmm(a, xg, yg, want, bound);
  dist::sddmm(ctx, d, rows_of(xg, d.first_row(), d.first_row() + m).view(),
              rows_of(yg, d.first_col(), d.first_col() + k).view(), out.mut());
  const int64_t e0 = a.rowptr[static_cast<size_t>(d.first_row())];
  EXPECT_EQ(compare_rows(out, e0, want, bound, "sddmm after refusals", "out"), 0);

  // F = 0 (views with ld 1): nothing moves, and every entry is A.val * (an empty dot) = 0.
  const V none = 0;
  const sp::DenseView x0 = sp::make_dense<V>(m, 0, 1, &none), y0 = sp::make_dense<V>(k, 0, 1, &none);
  std::fill(out.data.begin(), out.data.end(), std::numeric_limits<V>::quiet_NaN());
  dist::CallStats st;
  dist::sddmm(ctx, d, x0, y0, out.mut(), {}, &st);
  EXPECT_EQ(st.bytes_sent, 0);
  int64_t nonzero = 0;
  for (int64_t e = 0; e < n; ++e) nonzero += out(e, 0) != V(0);
  EXPECT_EQ(nonzero, 0) << "sddmm with F = 0";
}

// The rest of the suite runs with SPARSEPORT_SCHEDULER=off (CTest); here the scheduler chooses each
// block's variant on each rank, and a second call replays the decision.
TEST(Dist, SchedulerChoosesEachBlocksVariant) {
  const sparseport_test::ScopedEnv scheduler_on("SPARSEPORT_SCHEDULER", "auto");
  std::mt19937_64 rng(g_seed + 6);
  const auto a = random_csr<int32_t, float>(3000, 3000, 16, 0.05, false, false, rng);
  const auto d = dist::DistCsr<int32_t, float>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const int64_t f = 16;
  const sp::HostDense<float> b = make_dense<float>(a.cols, f, Sign::mixed, g_seed + 7);
  const sp::HostDense<float> c0(a.rows, f);
  const sp::HostDense<float> b_local = dist::scatter_rows<float>(
      MPI_COMM_WORLD, g_rank == 0 ? b.view() : sp::DenseView{0, 0, 0, nullptr, sp::ValueType::f32},
      d.partition().col_starts);
  for (const std::string& backend : test_backends()) {
    const sp::Context ctx = make_context(backend);
    for (const sp::Reduce reduce : {sp::Reduce::sum, sp::Reduce::max}) {
      sp::HostDense<double> want, bound;
      expected(a, b, c0, reduce, 1.0, 0.0, want, bound);
      for (int call = 0; call < 2; ++call) {
        const std::string what = backend + " " + sp::name(reduce) + " call " + std::to_string(call);
        sp::HostDense<float> c(d.local_rows(), f);
        dist::CallStats st;
        InContext on(ctx);
        dist::spmm(ctx, d, on.in(b_local), on.out(c), sp::SpmmOptions{reduce, 1.0, 0.0, {}}, &st);
        on.done();
        EXPECT_EQ(compare_rows(c, d.first_row(), want, bound, what), 0) << what;
        if (d.local_rows() > 0) {
          EXPECT_FALSE(st.local_decision.variant.empty()) << what;
          EXPECT_NE(st.local_decision.source, "requested") << what;
        }
      }
    }
  }
}

// The transport is agreed by every rank: an unknown SPARSEPORT_DIST_TRANSPORT throws on every rank,
// naming it; a forced nccl that some rank cannot make (a host context, ranks sharing a GPU) too;
// then the same matrix works again with the default.
TEST(Dist, TransportChoiceIsAgreedByEveryRank) {
  std::mt19937_64 rng(g_seed + 8);
  const auto a = random_csr<int32_t, float>(40, 40, 4, 0.1, false, false, rng);
  const auto d = dist::DistCsr<int32_t, float>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const sp::HostDense<float> b = make_dense<float>(a.cols, 3, Sign::mixed, g_seed + 9);
  const sp::HostDense<float> c0(a.rows, 3);
  const sp::HostDense<float> b_local = dist::scatter_rows<float>(
      MPI_COMM_WORLD, g_rank == 0 ? b.view() : sp::DenseView{0, 0, 0, nullptr, sp::ValueType::f32},
      d.partition().col_starts);
  sp::HostDense<double> want, bound;
  expected(a, b, c0, sp::Reduce::sum, 1.0, 0.0, want, bound);
  for (const std::string& backend : test_backends()) {
    const sp::Context ctx = make_context(backend);
    const auto call = [&](const char* transport) {
      const sparseport_test::ScopedEnv env("SPARSEPORT_DIST_TRANSPORT", transport);
      sp::HostDense<float> c(d.local_rows(), 3);
      InContext on(ctx);
      dist::spmm(ctx, d, on.in(b_local), on.out(c));
      on.done();
      EXPECT_EQ(compare_rows(c, d.first_row(), want, bound, backend), 0) << backend;
    };
    expect_refusal<sp::InvalidArgument>([&] { call("carrier-pigeon"); }, "spmm", "SPARSEPORT_DIST_TRANSPORT");
    // nccl needs every rank on a GPU of its own: never so for host contexts, nor for ranks that
    // share this machine's GPU.
    const bool nccl_possible = ctx.device_memory() && dist::has_nccl() && g_ranks == 1;
    if (!nccl_possible)
      expect_refusal<sp::InvalidArgument>([&] { call("nccl"); }, "spmm", "SPARSEPORT_DIST_TRANSPORT=nccl");
    call("auto");
    if (ctx.device_memory()) call("host-staged");
  }
}

// The timeline of a call: every part present and non-negative, the rows split as the blocks say.
template <class I, class V>
void expect_timeline(const dist::CallStats& st, const dist::DistCsr<I, V>& d, const std::string& what) {
  for (const double v : {st.interior_ms, st.exchange_ms, st.wait_ms, st.boundary_ms, st.local_ms, st.remote_ms,
                         st.combine_ms, st.total_ms})
    EXPECT_TRUE(v >= 0 && std::isfinite(v)) << what << ": a time of " << v << " ms";
  EXPECT_EQ(st.interior_ms, st.local_ms) << what;
  EXPECT_EQ(st.boundary_ms, st.remote_ms + st.combine_ms) << what;
  EXPECT_GE(st.exchange_ms, st.wait_ms) << what;
  EXPECT_LE(st.exchange_ms, st.total_ms) << what;
  int64_t boundary = 0;
  for (int64_t i = 0; i < d.local_rows(); ++i)
    boundary += d.remote_block().rowptr[static_cast<size_t>(i) + 1] > d.remote_block().rowptr[static_cast<size_t>(i)];
  EXPECT_EQ(st.boundary_rows, boundary) << what;
  EXPECT_EQ(st.interior_rows, d.local_rows() - boundary) << what;
}

// The shared-window transport against MPI messages: the same bits for spmm (every reduce),
// gather_scatter and sddmm, both within the reference tolerance of the single-process result; new
// B values at every call (a row read from the wrong half of the double buffer, or before its owner
// packed it, would be the last call's), F changing between calls (the window grows, and rows
// narrower than its capacity are packed at their own stride).
TYPED_TEST(DistOps, ShmTransportMatchesMpiAndOneProcess) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  const sp::Context ctx = make_context("reference");
  if (ctx.device_memory()) GTEST_SKIP() << "host transports only";
  const std::vector<Case<I, V>> cases = make_cases<I, V>();
  std::mt19937_64 rng(g_seed + 31);
  const Case<I, V> big{"random 600x600", random_csr<I, V>(600, 600, 12, 0.05, false, false, rng)};
  int64_t calls = 0;
  for (const Case<I, V>& cs : {big, cases[0], cases[2], cases[3], cases[6]}) {
    // Per transport its own matrices: the transport is chosen at a matrix's first exchange.
    std::vector<std::vector<sp::HostDense<V>>> got(2);
    for (const int t : {0, 1}) {
      const char* transport = t == 0 ? "shm" : "mpi";
      const sparseport_test::ScopedEnv env("SPARSEPORT_DIST_TRANSPORT", transport);
      for (const auto& [how, d] : both_builds(cs.a)) {
        const std::string where = cs.name + " (" + how + ", " + std::to_string(g_ranks) + " ranks, " + transport + ")";
        SCOPED_TRACE(where);
        const dist::HaloVolume pred = dist::predict_halo(cs.a.view(), d.partition());
        uint64_t call_seed = g_seed + 100;
        for (const int64_t f : {int64_t{8}, int64_t{8}, int64_t{33}, int64_t{1}, int64_t{33}, int64_t{8}}) {
          for (const auto& [reduce, sign] :
               std::vector<std::pair<sp::Reduce, Sign>>{{sp::Reduce::sum, Sign::mixed},
                                                        {sp::Reduce::mean, Sign::mixed},
                                                        {sp::Reduce::max, Sign::negative},
                                                        {sp::Reduce::min, Sign::positive}}) {
            for (const int op : {0, 1, 2}) {  // spmm, gather_scatter, sddmm
              if (op == 2 && reduce != sp::Reduce::sum) continue;
              ++call_seed;
              const char* op_name = op == 0 ? "spmm" : op == 1 ? "gather_scatter" : "sddmm";
              const std::string what = where + ", " + op_name + ", " + sp::name(reduce) + ", F " + std::to_string(f);
              const sp::HostDense<V> b = make_dense<V>(cs.a.cols, f, sign, call_seed);
              const sp::HostDense<V> x = make_dense<V>(cs.a.rows, f, Sign::mixed, call_seed + 7);
              const sp::HostDense<V> c0 = make_dense<V>(cs.a.rows, f, Sign::mixed, call_seed + 13);
              const sp::HostDense<V> b_local = rows_of(b, d.first_col(), d.first_col() + d.local_cols());
              const sp::HostDense<V> x_local = rows_of(x, d.first_row(), d.first_row() + d.local_rows());
              const double alpha = op == 0 ? 2.0 : 1.0, beta = op == 0 ? 0.5 : 0.0;
              sp::HostDense<V> out = op == 2 ? sp::HostDense<V>(d.local_nnz(), 1)
                                             : rows_of(c0, d.first_row(), d.first_row() + d.local_rows());
              dist::CallStats st;
              if (op == 0)
                dist::spmm(ctx, d, b_local.view(), out.mut(), sp::SpmmOptions{reduce, alpha, beta, {}}, &st);
              else if (op == 1)
                dist::gather_scatter(ctx, d, b_local.view(), out.mut(), sp::ReduceOptions{reduce, {}}, &st);
              else
                dist::sddmm(ctx, d, x_local.view(), b_local.view(), out.mut(), {}, &st);
              ++calls;
              EXPECT_EQ(std::string(st.transport), transport) << what;  // forced, also on one rank
              // Every rank on this node, and Open MPI's window contiguous: shm reads in place.
              EXPECT_EQ(st.halo_in_place, t == 0 && pred.received_rows(g_rank) > 0 && f > 0) << what;
              expect_timeline(st, d, what);
              EXPECT_EQ(st.bytes_received, pred.received_rows(g_rank) * f * static_cast<int64_t>(sizeof(V))) << what;
              EXPECT_EQ(st.bytes_sent, pred.sent_rows(g_rank) * f * static_cast<int64_t>(sizeof(V))) << what;
              sp::HostDense<double> want, bound;
              if (op == 2) {
                expected_sddmm(cs.a, x, b, want, bound);
                EXPECT_EQ(compare_rows(out, cs.a.rowptr[static_cast<size_t>(d.first_row())], want, bound, what, "out"),
                          0)
                    << what;
              } else {
                expected(cs.a, b, op == 0 ? c0 : sp::HostDense<V>(cs.a.rows, f), reduce, alpha, beta, want, bound);
                EXPECT_EQ(compare_rows(out, d.first_row(), want, bound, what), 0) << what;
              }
              got[static_cast<size_t>(t)].push_back(std::move(out));
            }
          }
        }
      }
    }
    ASSERT_EQ(got[0].size(), got[1].size());  // the same on every rank
    int64_t differ = 0;
    for (size_t k = 0; k < got[0].size(); ++k) differ += got[0][k].data != got[1][k].data;
    EXPECT_EQ(differ, 0) << cs.name << ": " << differ << " of " << got[0].size() << " results differ between shm and mpi";
  }
  if (g_rank == 0) std::printf("[          ] %lld calls through shm and mpi checked\n", static_cast<long long>(calls));
}

TEST(Dist, GatherRowsIsTheInverseOfScatterRows) {
  const int64_t rows = 11, f = 5;
  sp::HostDense<double> g(rows, f, f + 3);  // a leading dimension larger than cols
  sp::fill_random(g, g_seed + 5);
  std::vector<int64_t> starts(static_cast<size_t>(g_ranks) + 1);
  for (int r = 0; r <= g_ranks; ++r) starts[static_cast<size_t>(r)] = std::min<int64_t>(rows, 4 * r);
  starts.back() = rows;
  const sp::DenseView none{0, 0, 0, nullptr, sp::ValueType::f64};
  const sp::HostDense<double> mine = dist::scatter_rows<double>(MPI_COMM_WORLD, g_rank == 0 ? g.view() : none, starts);
  EXPECT_EQ(mine.rows, starts[static_cast<size_t>(g_rank) + 1] - starts[static_cast<size_t>(g_rank)]);
  for (int64_t i = 0; i < mine.rows; ++i)
    for (int64_t j = 0; j < f; ++j) EXPECT_EQ(mine(i, j), g(starts[static_cast<size_t>(g_rank)] + i, j));
  sp::HostDense<double> back(rows, f);
  dist::gather_rows<double>(MPI_COMM_WORLD, mine.view(), g_rank == 0 ? back.mut() : sp::DenseMutView{}, starts);
  if (g_rank == 0) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < f; ++j) EXPECT_EQ(back(i, j), g(i, j));
  }
}

TEST(Dist, PartitionBalancesEntries) {
  // A mega-row takes a rank of its own; the light rows are spread over the others.
  std::mt19937_64 rng(1);
  std::vector<std::vector<int64_t>> c(100);
  for (int64_t j = 0; j < 100; ++j) c[50].push_back(j);
  for (int64_t i = 0; i < 100; ++i)
    if (i != 50) c[static_cast<size_t>(i)] = {i};
  const auto a = from_rows<int32_t, float>(100, 100, c, false, rng);
  const dist::Partition p = dist::partition_rows_by_entries(a.view(), 4);
  ASSERT_EQ(p.row_starts.size(), 5u);
  EXPECT_EQ(p.row_starts.front(), 0);
  EXPECT_EQ(p.row_starts.back(), 100);
  EXPECT_EQ(p.col_starts, p.row_starts);  // square: B rows follow A rows
  // Weight = entries + rows; each rank's is within one row's weight of the mean (the boundaries are
  // the nearest to the ideal ones), so the mega-row's rank holds few other rows.
  const auto weight = [&](int r) {
    return a.rowptr[static_cast<size_t>(p.row_starts[static_cast<size_t>(r) + 1])] -
           a.rowptr[static_cast<size_t>(p.row_starts[static_cast<size_t>(r)])] + p.rows_of(r);
  };
  const double mean = (100.0 + 199.0) / 4;
  for (int r = 0; r < 4; ++r) EXPECT_LE(weight(r), mean + 101) << "rank " << r;
  EXPECT_LE(p.rows_of(p.owner_of_row(50)), 30);
  // 3 rows on 4 ranks: some rank owns none, and owner_of_row skips empty ranges.
  const auto t = from_rows<int64_t, double>(3, 3, {{0}, {1}, {2}}, false, rng);
  const dist::Partition q = dist::partition_rows_by_entries(t.view(), 4);
  int empty = 0;
  for (int r = 0; r < 4; ++r) empty += q.rows_of(r) == 0;
  EXPECT_GE(empty, 1);
  for (int64_t i = 0; i < 3; ++i) {
    const int o = q.owner_of_row(i);
    EXPECT_GE(i, q.row_starts[static_cast<size_t>(o)]);
    EXPECT_LT(i, q.row_starts[static_cast<size_t>(o) + 1]);
  }
  // A rectangular A: B's rows are split evenly.
  const auto r = random_csr<int32_t, float>(10, 30, 3, 0.0, false, false, rng);
  EXPECT_EQ(dist::partition_rows_by_entries(r.view(), 3).col_starts, (std::vector<int64_t>{0, 10, 20, 30}));
}

TEST(Dist, PartitionByCostWeighsRowsAgainstEntriesAndTheFitMeasuresTheWeight) {
  // Hub rows first (20 rows of 200 entries), then a tail of 4000 rows of 1 entry: 8000 entries in
  // 4020 rows, as rmat puts its hubs first.
  std::mt19937_64 rng(3);
  std::vector<std::vector<int64_t>> c(4020);
  for (int64_t i = 0; i < 4020; ++i) {
    if (i < 20)
      for (int64_t j = 0; j < 200; ++j) c[static_cast<size_t>(i)].push_back((i * 7 + j * 13) % 4020);
    else
      c[static_cast<size_t>(i)] = {(i * 31) % 4020};
  }
  const auto a = from_rows<int32_t, float>(4020, 4020, c, false, rng);
  const auto rows_and_entries = [&](const dist::Partition& p, int r) {
    const int64_t lo = p.row_starts[static_cast<size_t>(r)], hi = p.row_starts[static_cast<size_t>(r) + 1];
    return std::pair<int64_t, int64_t>{hi - lo, a.rowptr[static_cast<size_t>(hi)] - a.rowptr[static_cast<size_t>(lo)]};
  };
  // Weight 1 is the entry-balanced partition.
  EXPECT_EQ(dist::partition_rows_by_cost(a.view(), 2, 1.0).row_starts,
            dist::partition_rows_by_entries(a.view(), 2).row_starts);
  // Weight 0 balances entries alone: the hubs (4000 entries) on rank 0, the tail on rank 1.
  EXPECT_EQ(dist::partition_rows_by_cost(a.view(), 2, 0.0).row_starts, (std::vector<int64_t>{0, 20, 4020}));
  // A heavy row weight balances rows: rank 0 takes the hubs and half the tail less their share.
  const dist::Partition heavy = dist::partition_rows_by_cost(a.view(), 2, 1000.0);
  EXPECT_NEAR(static_cast<double>(heavy.row_starts[1]), 2010.0, 5.0);
  // Times from a known cost (a = 0.002 ms per entry, b = 0.01 per row: a row costs 5 entries) on
  // the entry-balanced blocks: the fit returns 5, and the partition with it predicts even ranks.
  const dist::Partition even = dist::partition_rows_by_entries(a.view(), 2);
  std::vector<dist::RankCost> measured;
  for (int r = 0; r < 2; ++r) {
    const auto [rows, entries] = rows_and_entries(even, r);
    measured.push_back({entries, rows, 0.002 * static_cast<double>(entries) + 0.01 * static_cast<double>(rows)});
  }
  const double w = dist::fit_row_weight(measured);
  EXPECT_NEAR(w, 5.0, 1e-6);
  const double before = dist::predicted_imbalance(a.view(), even, measured);
  const double after = dist::predicted_imbalance(a.view(), dist::partition_rows_by_cost(a.view(), 2, w), measured);
  EXPECT_GT(before, 1.1) << "the tail's rank has more rows for the same entries";
  EXPECT_LT(after, 1.01) << "within one row's cost of even";
  // Blocks of one shape cannot tell rows from entries; nor one rank; nor a fit making rows cost
  // less than nothing: the fallback.
  EXPECT_EQ(dist::fit_row_weight({{100, 10, 1.0}, {200, 20, 2.0}}, 1.5), 1.5);
  EXPECT_EQ(dist::fit_row_weight({{100, 10, 1.0}}, 2.5), 2.5);
  EXPECT_EQ(dist::fit_row_weight({{100, 10, 5.0}, {100, 50, 1.0}}), 1.0);
  EXPECT_EQ(dist::predicted_imbalance(a.view(), even, {{100, 10, 1.0}}), 1.0) << "no fit: no prediction";
  // A bad weight is refused, naming the function and the number.
  try {
    (void)dist::partition_rows_by_cost(a.view(), 2, -1.0);
    ADD_FAILURE() << "a negative row weight was accepted";
  } catch (const sp::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("partition_rows_by_cost: row_weight is -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)dist::partition_rows_by_cost(a.view(), 2, std::nan("")), sp::InvalidArgument);
  EXPECT_THROW((void)dist::partition_rows_by_cost(a.view(), 0, 1.0), sp::InvalidArgument);
}

TEST(Dist, BadArgumentsThrowOnEveryRank) {
  // A wrong row count on one rank: every rank throws InvalidArgument (none is left waiting).
  std::mt19937_64 rng(2);
  const auto a = random_csr<int32_t, float>(8, 8, 3, 0.0, false, false, rng);
  std::vector<int64_t> even(static_cast<size_t>(g_ranks) + 1);
  for (int r = 0; r <= g_ranks; ++r) even[static_cast<size_t>(r)] = 8 * r / g_ranks;
  auto mine = rows_of(a, even[static_cast<size_t>(g_rank)], even[static_cast<size_t>(g_rank) + 1]);
  if (g_rank == g_ranks - 1) {  // one row short
    mine = rows_of(a, even[static_cast<size_t>(g_rank)], even[static_cast<size_t>(g_rank) + 1] - 1);
  }
  using D = dist::DistCsr<int32_t, float>;
  EXPECT_THROW(D::from_local_rows(MPI_COMM_WORLD, mine, even), sp::InvalidArgument);
  // Root's invalid matrix: everyone throws.
  sp::HostCsr<int32_t, float> bad = a;
  bad.colind[0] = 99;
  EXPECT_THROW(D::scatter(MPI_COMM_WORLD, g_rank == 0 ? &bad : nullptr), sp::InvalidArgument);
  // An operand of the wrong shape is refused before anything is posted (here on every rank).
  const auto d = D::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const sp::Context ctx = sp::Context::create("reference");
  sp::HostDense<float> b(d.local_cols() + 1, 4), c(d.local_rows(), 4);
  EXPECT_THROW(dist::spmm(ctx, d, b.view(), c.mut()), sp::DimensionMismatch);
}

// ---- METIS partition and relabelling ---------------------------------------------------------
// Host-only checks (no MPI calls; every rank runs them alike), then one distributed spmm on the
// permuted matrix. Without METIS, partition_metis must throw Unsupported (checked, then skipped).

void expect_valid_relabelling(const dist::Relabelled& r, int64_t n, int ranks, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(static_cast<int64_t>(r.perm.size()), n);
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (const int64_t o : r.perm) {
    ASSERT_GE(o, 0);
    ASSERT_LT(o, n);
    EXPECT_EQ(seen[static_cast<size_t>(o)], 0) << "vertex " << o << " twice";
    seen[static_cast<size_t>(o)] = 1;
  }
  EXPECT_EQ(r.partition.ranks(), ranks);
  EXPECT_EQ(r.partition.row_starts.front(), 0);
  EXPECT_EQ(r.partition.rows(), n);
  EXPECT_EQ(r.partition.col_starts, r.partition.row_starts);
  for (int q = 0; q < ranks; ++q) EXPECT_GE(r.partition.rows_of(q), 0);
}

TEST(DistMetis, PartitionIsValidAndPermutingKeepsTheProduct) {
  std::mt19937_64 rng(g_seed + 11);
  const auto mesh = sp::generate<int32_t, double>("mesh2d:24:24:1");
  const auto rnd = random_csr<int64_t, double>(97, 97, 9, 0.2, false, true, rng);  // unsorted, repeats, empty rows
  if (!dist::has_metis()) {
    EXPECT_THROW(dist::partition_metis(mesh.view(), 2), sp::Unsupported);
    GTEST_SKIP() << "sparseport::dist was built without METIS (SPARSEPORT_ENABLE_METIS=OFF)";
  }
  const sp::HostCsr<int64_t, double> mesh64 = [&] {
    sp::HostCsr<int64_t, double> m;
    m.rows = mesh.rows;
    m.cols = mesh.cols;
    m.rowptr.assign(mesh.rowptr.begin(), mesh.rowptr.end());
    m.colind.assign(mesh.colind.begin(), mesh.colind.end());
    m.values = mesh.values;
    return m;
  }();
  for (const auto& [name, a] : std::vector<std::pair<std::string, sp::HostCsr<int64_t, double>>>{
           {"mesh2d:24:24:1", mesh64}, {"random 97x97", rnd}}) {
    const sp::HostDense<double> b = make_dense<double>(a.cols, 5, Sign::mixed, g_seed + 12);
    sp::HostDense<double> ab(a.rows, 5);
    sp::spmm(reference_ctx(), a.view(), b.view(), ab.mut());
    for (const int ranks : {1, 2, 3, 4, 8}) {
      const std::string what = name + " into " + std::to_string(ranks);
      const dist::Relabelled r = dist::partition_metis(a.view(), ranks);
      expect_valid_relabelling(r, a.rows, ranks, what);
      // Balanced by deg + 1, loosely (METIS allows 3%; a vertex is indivisible).
      const double total = static_cast<double>(a.nnz() + a.rows);
      for (int q = 0; q < ranks; ++q) {
        int64_t w = 0;
        for (int64_t i = r.partition.row_starts[static_cast<size_t>(q)];
             i < r.partition.row_starts[static_cast<size_t>(q) + 1]; ++i) {
          const int64_t o = r.perm[static_cast<size_t>(i)];
          w += a.rowptr[static_cast<size_t>(o) + 1] - a.rowptr[static_cast<size_t>(o)] + 1;
        }
        EXPECT_LE(static_cast<double>(w), 1.1 * total / ranks + 12) << what << ", part " << q;
      }
      // P A P^T (P B) == P (A B) on the reference backend.
      const auto ap = dist::permute_symmetric(a, r.perm);
      EXPECT_TRUE(sp::validate(ap.view()).ok()) << what;
      EXPECT_EQ(ap.nnz(), a.nnz()) << what;
      const sp::HostDense<double> bp = dist::permute_rows(b, r.perm);
      sp::HostDense<double> got(a.rows, 5);
      sp::spmm(reference_ctx(), ap.view(), bp.view(), got.mut());
      const sp::HostDense<double> want = dist::permute_rows(ab, r.perm);
      const sp::HostDense<double> back = dist::unpermute_rows(got, r.perm);
      int64_t bad = 0;
      for (int64_t i = 0; i < a.rows; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          bad += std::fabs(got(i, j) - want(i, j)) > 1e-12 * (1 + std::fabs(want(i, j)));
          bad += std::fabs(back(i, j) - ab(i, j)) > 1e-12 * (1 + std::fabs(ab(i, j)));
        }
      EXPECT_EQ(bad, 0) << what;
    }
  }
  // Deterministic: the same partition twice.
  EXPECT_EQ(dist::partition_metis(mesh.view(), 4).perm, dist::partition_metis(mesh.view(), 4).perm);
  // Bad arguments.
  const auto rect = random_csr<int32_t, float>(10, 12, 3, 0.0, false, false, rng);
  EXPECT_THROW(dist::partition_metis(rect.view(), 2), sp::InvalidArgument);
  EXPECT_THROW(dist::partition_metis(mesh.view(), 0), sp::InvalidArgument);
  EXPECT_THROW(dist::permute_symmetric(rect, std::vector<int64_t>(10, 0)), sp::InvalidArgument);
  std::vector<int64_t> dup(static_cast<size_t>(mesh.rows));
  for (size_t i = 0; i < dup.size(); ++i) dup[i] = static_cast<int64_t>(i);
  dup[1] = 0;
  EXPECT_THROW(dist::permute_symmetric(mesh, dup), sp::InvalidArgument);
  EXPECT_THROW(dist::permute_symmetric(mesh, std::vector<int64_t>{0, 1}), sp::InvalidArgument);
}

TEST(DistMetis, CutsTheHaloOfARenumberedMesh) {
  // Random ids: a contiguous range of them is a random vertex set, so nearly every vertex has a
  // neighbour on another rank; METIS finds the grid's blocks (halo ~ perimeters, O(sqrt(n) P)).
  const auto a = sp::generate<int32_t, float>("mesh2d:64:64:1", sp::GenOptions{7, true});
  if (!dist::has_metis()) {
    GTEST_SKIP() << "sparseport::dist was built without METIS";
  }
  for (const int ranks : {1, 2, 4, 8}) {
    const dist::HaloVolume contiguous = dist::predict_halo(a.view(), dist::partition_rows_by_entries(a.view(), ranks));
    const dist::Relabelled r = dist::partition_metis(a.view(), ranks);
    const auto ap = dist::permute_symmetric(a, r.perm);
    const dist::HaloVolume metis = dist::predict_halo(ap.view(), r.partition);
    if (ranks == 1) {
      EXPECT_EQ(contiguous.total_rows(), 0);
      EXPECT_EQ(metis.total_rows(), 0);
      continue;
    }
    EXPECT_GT(contiguous.total_rows(), a.rows / 4) << ranks << " ranks";
    EXPECT_LT(4 * metis.total_rows(), contiguous.total_rows())
        << ranks << " ranks: METIS halo " << metis.total_rows() << " rows, contiguous " << contiguous.total_rows();
  }
}

TEST(DistMetis, SpmmOnThePermutedMatrixMatchesOneProcess) {
  if (!dist::has_metis()) {
    GTEST_SKIP() << "sparseport::dist was built without METIS";  // alike on every rank
  }
  using I = int64_t;
  using V = double;
  const auto a = sp::generate<I, V>("mesh2d:30:30:1");
  // Rank 0 partitions; the permutation goes to every rank (each compares its own rows).
  dist::Relabelled r;
  if (g_rank == 0) r = dist::partition_metis(a.view(), g_ranks);
  r.perm.resize(static_cast<size_t>(a.rows));
  MPI_Bcast(r.perm.data(), static_cast<int>(a.rows), MPI_INT64_T, 0, MPI_COMM_WORLD);
  const auto ap = dist::permute_symmetric(a, r.perm);
  const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &ap : nullptr, 0,
                                              g_rank == 0 ? &r.partition : nullptr);
  if (g_rank == 0) {
    EXPECT_EQ(d.partition().row_starts, r.partition.row_starts);  // root's partition was used
  }
  const dist::HaloVolume pred = dist::predict_halo(ap.view(), d.partition());
  const int64_t f = 7;
  const sp::HostDense<V> b = make_dense<V>(a.cols, f, Sign::mixed, g_seed + 13);
  const sp::DenseView none{0, 0, 0, nullptr, sp::value_type_of<V>()};
  const sp::HostDense<V> bp = dist::permute_rows(b, r.perm);
  const sp::HostDense<V> b_local =
      dist::scatter_rows<V>(MPI_COMM_WORLD, g_rank == 0 ? bp.view() : none, d.partition().col_starts);
  for (const sp::Reduce reduce : {sp::Reduce::sum, sp::Reduce::mean}) {
    const std::string what = std::string("METIS-relabelled mesh, ") + sp::name(reduce);
    sp::HostDense<V> c(d.local_rows(), f);
    dist::CallStats st;
    dist::spmm(reference_ctx(), d, b_local.view(), c.mut(), sp::SpmmOptions{reduce, 1.0, 0.0, {}}, &st);
    EXPECT_EQ(sum_over_ranks(st.bytes_sent), pred.bytes(f, sizeof(V))) << what;
    // Back in the original order on rank 0, against one process on the original matrix.
    sp::HostDense<V> cp(g_rank == 0 ? a.rows : 0, f);
    dist::gather_rows<V>(MPI_COMM_WORLD, c.view(), g_rank == 0 ? cp.mut() : sp::DenseMutView{}, d.partition().row_starts);
    if (g_rank == 0) {
      const sp::HostDense<V> got = dist::unpermute_rows(cp, r.perm);
      sp::HostDense<double> want, bound;
      expected(a, b, sp::HostDense<V>(a.rows, f), reduce, 1.0, 0.0, want, bound);
      EXPECT_EQ(compare_rows(got, 0, want, bound, what), 0) << what;
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return sparseport_dist_test::run_all_tests(argc, argv); }
