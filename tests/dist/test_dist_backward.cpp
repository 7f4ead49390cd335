// SPDX-License-Identifier: Apache-2.0
// sparseport::dist's training ops (spmm_transpose, spmm_backward, sddmm_backward) against the
// single-process backward (sparseport::spmm_backward / sddmm_backward on the whole matrix, reference
// backend in double), under mpiexec with 1 to 4 ranks (CTest runs this program once per rank
// count), and choose_partition on generated graphs (host only). Every rank builds the same seeded
// inputs and checks its own rows. Inputs are small, so the program runs in seconds: a random
// matrix with empty rows and repeated columns, a power-law one (RMAT: hub rows and columns), one
// whose partition gives ranks no rows (an explicit split, and 3 rows on 4 ranks), rectangular ones
// (wide and tall), a pattern; int32/float and int64/double; F = 1 and 9; both ways in (scattered,
// each rank's own rows). Results must also be bitwise equal across repeated calls and between the
// shm and mpi transports. Bad arguments, some on one rank only, must throw on every rank, naming
// the op, the argument and the numbers; device contexts (where built and present) are refused.
//
// Every rank runs every test in the same order (the collectives must match): no ASSERT_ that
// returns before a collective. Rank 0 prints GoogleTest's output, the others only their failures.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/scoped.hpp"
#include "dist_test_util.hpp"
#include "sparseport/backward.hpp"
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
  // Row boundaries for from_local_rows: empty for an even split of the rows.
  std::vector<int64_t> row_starts;
};

template <class I, class V>
std::vector<Case<I, V>> make_cases() {
  std::mt19937_64 rng(g_seed);
  std::vector<Case<I, V>> cs;
  cs.push_back({"random 60x60, empty rows, repeated columns", random_csr<I, V>(60, 60, 7, 0.2, false, true, rng), {}});
  // RMAT with Graph500's skew: low ids are hub rows and hub columns (every rank's ghost).
  cs.push_back({"power-law rmat:8:6", sp::generate<I, V>("rmat:8:6", sp::GenOptions{g_seed % 1000 + 1, false}), {}});
  {
    // Rank 0 and (from 3 ranks on) the middle ranks own no rows; the last rank owns most. 41 x 50:
    // B's rows are split evenly, so a rank without rows of A still owns rows of A^T x.
    const auto a = random_csr<I, V>(41, 50, 6, 0.1, false, false, rng);
    std::vector<int64_t> starts(static_cast<size_t>(g_ranks) + 1, 0);
    for (int r = 1; r < g_ranks; ++r) starts[static_cast<size_t>(r)] = r < g_ranks - 1 ? 10 : 20;
    if (g_ranks > 1) starts[1] = 0;
    starts.back() = a.rows;
    cs.push_back({"ranks without rows (explicit split)", a, starts});
  }
  cs.push_back({"3 rows (ranks without rows)", from_rows<I, V>(3, 3, {{2}, {0, 1}, {1, 2}}, false, rng), {}});
  cs.push_back({"rectangular 30x70", random_csr<I, V>(30, 70, 8, 0.1, false, false, rng), {}});
  cs.push_back({"rectangular 70x25", random_csr<I, V>(70, 25, 5, 0.1, false, false, rng), {}});
  cs.push_back({"pattern 50x50", random_csr<I, V>(50, 50, 6, 0.1, true, false, rng), {}});
  return cs;
}

template <class V>
sp::HostDense<V> make_dense(int64_t rows, int64_t cols, uint64_t seed) {
  sp::HostDense<V> d(rows, cols);
  if (rows * cols > 0) sp::fill_random(d, seed, -2.0, 2.0);
  return d;
}

// ---- the single-process backward, in double ----------------------------------------------------

// A result and its rounding bound: the same computed on |inputs|.
struct Expected {
  sp::HostDense<double> want, bound;
};

// sparseport::spmm_backward on the whole matrix: dB (k x F) and dvalues (nnz x 1).
template <class I, class V>
std::pair<Expected, Expected> expected_spmm_backward(const sp::HostCsr<I, V>& a, const sp::HostDense<V>& b,
                                                     const sp::HostDense<V>& dc, sp::Reduce r) {
  std::pair<Expected, Expected> out;
  for (const bool absolute : {false, true}) {
    const auto ad = to_f64(a, absolute);
    const auto bd = to_f64(b, absolute);
    const auto dcd = to_f64(dc, absolute);
    sp::HostDense<double> db(a.cols, dc.cols), dv(a.nnz(), 1);
    sp::spmm_backward(reference_ctx(), ad.view(), bd.view(), dcd.view(), sp::SpmmGrads{db.mut(), dv.mut()},
                      sp::SpmmBackwardOptions{r, nullptr, {}, {}});
    (absolute ? out.first.bound : out.first.want) = std::move(db);
    (absolute ? out.second.bound : out.second.want) = std::move(dv);
  }
  return out;
}

// sparseport::sddmm_backward on the whole matrix: dX, dY, dvalues.
template <class I, class V>
std::vector<Expected> expected_sddmm_backward(const sp::HostCsr<I, V>& a, const sp::HostDense<V>& x,
                                              const sp::HostDense<V>& y, const sp::HostDense<V>& dout) {
  std::vector<Expected> out(3);
  for (const bool absolute : {false, true}) {
    const auto ad = to_f64(a, absolute);
    sp::HostDense<double> dx(a.rows, x.cols), dy(a.cols, x.cols), dv(a.nnz(), 1);
    sp::sddmm_backward(reference_ctx(), ad.view(), to_f64(x, absolute).view(), to_f64(y, absolute).view(),
                       to_f64(dout, absolute).view(), sp::SddmmGrads{dx.mut(), dy.mut(), dv.mut()});
    (absolute ? out[0].bound : out[0].want) = std::move(dx);
    (absolute ? out[1].bound : out[1].want) = std::move(dy);
    (absolute ? out[2].bound : out[2].want) = std::move(dv);
  }
  return out;
}

// This rank's rows of a result against the global rows from `first`; returns the failures.
template <class V>
int64_t compare_rows(const sp::HostDense<V>& got, int64_t first, const Expected& e, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = 0; j < got.cols; ++j) {
      const double g = double(got(i, j)), w = e.want(first + i, j);
      const double tol = kRelTol<V> * e.bound(first + i, j) + 1e-30;
      if (std::fabs(g - w) <= tol) continue;
      if (bad++ == 0)
        ADD_FAILURE() << what << ": [" << first + i << "," << j << "] is " << g << " but the single-process backward "
                      << "gives " << w << " (tolerance " << tol << ")";
    }
  return bad;
}

// ---- the gradients ------------------------------------------------------------------------------

template <class T>
class DistBackward : public ::testing::Test {};
using Types = ::testing::Types<std::pair<int32_t, float>, std::pair<int64_t, double>>;
TYPED_TEST_SUITE(DistBackward, Types, TypeNames);

// The results of one pass over every case, build, backend, F and op, in order: the same on every
// rank, so that passes under different transports (and repeated passes) compare element by element.
template <class V>
using Results = std::vector<std::vector<V>>;

// One pass over the host backends (device contexts are refused: DeviceContextsAreRefused): every
// gradient checked against the single-process backward, each call made twice on the same matrix
// and the two bitwise equal; returns what it computed.
template <class I, class V>
Results<V> check_every_gradient(const std::string& transport, int64_t& calls) {
  Results<V> results;
  const auto keep = [&](const sp::HostDense<V>& d) {
    std::vector<V> v;
    for (int64_t i = 0; i < d.rows; ++i)
      for (int64_t j = 0; j < d.cols; ++j) v.push_back(d(i, j));
    results.push_back(std::move(v));
  };
  for (const Case<I, V>& cs : make_cases<I, V>()) {
    for (const auto& [how, d] : both_builds(cs.a, cs.row_starts)) {
      const std::string where =
          cs.name + " (" + how + ", " + std::to_string(g_ranks) + " ranks, " + transport + " transport)";
      SCOPED_TRACE(where);
      if (cs.a.rows < g_ranks || (!cs.row_starts.empty() && how == "from local rows" && g_ranks > 1)) {
        EXPECT_FALSE(all_ranks(d.local_rows() > 0)) << "some rank must own no rows";
      }
      const int64_t e0 = cs.a.rowptr[static_cast<size_t>(d.first_row())];
      const dist::HaloVolume pred = dist::predict_halo(cs.a.view(), d.partition());
      for (const std::string& backend : test_backends()) {
        const sp::Context ctx = make_context(backend);
        if (ctx.device_memory()) continue;
        for (const int64_t f : {int64_t{1}, int64_t{9}}) {
          const uint64_t seed = g_seed + 100 * static_cast<uint64_t>(f);
          const sp::HostDense<V> b = make_dense<V>(cs.a.cols, f, seed + 1);   // B, Y
          const sp::HostDense<V> dc = make_dense<V>(cs.a.rows, f, seed + 2);  // dC, X
          const sp::HostDense<V> dout = make_dense<V>(cs.a.nnz(), 1, seed + 3);
          const sp::HostDense<V> b_local = rows_of(b, d.first_col(), d.first_col() + d.local_cols());
          const sp::HostDense<V> dc_local = rows_of(dc, d.first_row(), d.first_row() + d.local_rows());
          const sp::HostDense<V> dout_local = rows_of(dout, e0, e0 + d.local_nnz());
          const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));

          // spmm_transpose: A^T x with alpha and beta, against spmm_backward's dB with alpha folded
          // into dC and beta's part added.
          {
            const std::string what = where + ", " + backend + ", spmm_transpose, F " + std::to_string(f);
            const sp::HostDense<V> out0 = make_dense<V>(cs.a.cols, f, seed + 4);
            sp::HostDense<V> dc2(cs.a.rows, f);
            for (int64_t i = 0; i < cs.a.rows; ++i)
              for (int64_t j = 0; j < f; ++j) dc2(i, j) = V(2) * dc(i, j);
            auto [db, dv] = expected_spmm_backward(cs.a, b, dc2, sp::Reduce::sum);
            for (int64_t i = 0; i < cs.a.cols; ++i)
              for (int64_t j = 0; j < f; ++j) {
                db.want(i, j) += 0.5 * double(out0(i, j));
                db.bound(i, j) += 0.5 * std::fabs(double(out0(i, j)));
              }
            std::vector<sp::HostDense<V>> got;
            for (int rep = 0; rep < 2; ++rep) {
              sp::HostDense<V> out = rows_of(out0, d.first_col(), d.first_col() + d.local_cols());
              dist::CallStats st;
              InContext on(ctx);
              dist::spmm_transpose(ctx, d, on.in(dc_local), on.out(out), sp::SpmmOptions{sp::Reduce::sum, 2.0, 0.5, {}},
                                   &st);
              on.done();
              ++calls;
              EXPECT_EQ(compare_rows(out, d.first_col(), db, what), 0) << what;
              // The reverse exchange moves the forward's rows the other way.
              EXPECT_EQ(st.bytes_sent, pred.received_rows(g_rank) * row_bytes) << what;
              EXPECT_EQ(st.bytes_received, pred.sent_rows(g_rank) * row_bytes) << what;
              EXPECT_EQ(sum_over_ranks(st.bytes_sent), pred.bytes(f, sizeof(V))) << what;
              if (!ctx.device_memory() && transport != "default") {
                EXPECT_EQ(std::string(st.transport), transport) << what;
              }
              EXPECT_EQ(st.boundary_ms, st.remote_ms + st.combine_ms) << what;
              EXPECT_EQ(st.interior_rows + st.boundary_rows, d.local_cols()) << what;
              got.push_back(std::move(out));
            }
            EXPECT_EQ(got[0].data, got[1].data) << what << ": two calls differ";
            keep(got[0]);
          }

          // spmm_backward, sum and mean: dB and dvalues together, then each alone.
          for (const sp::Reduce reduce : {sp::Reduce::sum, sp::Reduce::mean}) {
            const std::string what =
                where + ", " + backend + ", spmm_backward " + sp::name(reduce) + ", F " + std::to_string(f);
            const auto [db_want, dv_want] = expected_spmm_backward(cs.a, b, dc, reduce);
            std::vector<std::pair<sp::HostDense<V>, sp::HostDense<V>>> got;
            for (int rep = 0; rep < 2; ++rep) {
              sp::HostDense<V> db(d.local_cols(), f, f, std::numeric_limits<V>::quiet_NaN());
              sp::HostDense<V> dv(d.local_nnz(), 1, 1, std::numeric_limits<V>::quiet_NaN());
              dist::CallStats st;
              InContext on(ctx);
              dist::spmm_backward(ctx, d, on.in(b_local), on.in(dc_local), sp::SpmmGrads{on.out(db), on.out(dv)},
                                  sp::SpmmBackwardOptions{reduce, nullptr, {}, {}}, &st);
              on.done();
              ++calls;
              EXPECT_EQ(compare_rows(db, d.first_col(), db_want, what + " dB"), 0) << what;
              EXPECT_EQ(compare_rows(dv, e0, dv_want, what + " dvalues"), 0) << what;
              // dB's reverse exchange and dvalues' forward one.
              const int64_t moved = (pred.received_rows(g_rank) + pred.sent_rows(g_rank)) * row_bytes;
              EXPECT_EQ(st.bytes_sent, moved) << what;
              got.emplace_back(std::move(db), std::move(dv));
            }
            EXPECT_EQ(got[0].first.data, got[1].first.data) << what << ": dB differs between two calls";
            EXPECT_EQ(got[0].second.data, got[1].second.data) << what << ": dvalues differ between two calls";
            keep(got[0].first);
            keep(got[0].second);
            // One gradient at a time (the other's data null): the same bits.
            sp::HostDense<V> db(d.local_cols(), f), dv(d.local_nnz(), 1);
            InContext on(ctx);
            dist::spmm_backward(ctx, d, on.in(b_local), on.in(dc_local), sp::SpmmGrads{on.out(db), {}},
                                sp::SpmmBackwardOptions{reduce, nullptr, {}, {}});
            dist::spmm_backward(ctx, d, sp::DenseView{0, 0, 0, nullptr, sp::value_type_of<V>()}, on.in(dc_local),
                                sp::SpmmGrads{{}, {}}, sp::SpmmBackwardOptions{reduce, nullptr, {}, {}});
            dist::spmm_backward(ctx, d, on.in(b_local), on.in(dc_local), sp::SpmmGrads{{}, on.out(dv)},
                                sp::SpmmBackwardOptions{reduce, nullptr, {}, {}});
            on.done();
            calls += 2;
            EXPECT_EQ(db.data, got[0].first.data) << what << ": dB alone";
            EXPECT_EQ(dv.data, got[0].second.data) << what << ": dvalues alone";
          }

          // sddmm_backward: dX, dY, dvalues (dout with a leading dimension of 2).
          {
            const std::string what = where + ", " + backend + ", sddmm_backward, F " + std::to_string(f);
            const auto want = expected_sddmm_backward(cs.a, dc, b, dout);
            sp::HostDense<V> dout2(d.local_nnz(), 1, 2, std::numeric_limits<V>::quiet_NaN());
            for (int64_t e = 0; e < d.local_nnz(); ++e) dout2(e, 0) = dout_local(e, 0);
            std::vector<std::vector<sp::HostDense<V>>> got;
            for (int rep = 0; rep < 2; ++rep) {
              sp::HostDense<V> dx(d.local_rows(), f), dy(d.local_cols(), f), dv(d.local_nnz(), 1);
              InContext on(ctx);
              dist::sddmm_backward(ctx, d, on.in(dc_local), on.in(b_local), on.in(dout2),
                                   sp::SddmmGrads{on.out(dx), on.out(dy), on.out(dv)});
              on.done();
              ++calls;
              EXPECT_EQ(compare_rows(dx, d.first_row(), want[0], what + " dX"), 0) << what;
              EXPECT_EQ(compare_rows(dy, d.first_col(), want[1], what + " dY"), 0) << what;
              EXPECT_EQ(compare_rows(dv, e0, want[2], what + " dvalues"), 0) << what;
              got.push_back({std::move(dx), std::move(dy), std::move(dv)});
            }
            for (size_t k = 0; k < 3; ++k) {
              EXPECT_EQ(got[0][k].data, got[1][k].data) << what << ": gradient " << k << " differs between two calls";
              keep(got[0][k]);
            }
          }
        }
      }
    }
  }
  return results;
}

TYPED_TEST(DistBackward, EveryGradientMatchesOneProcessOnEveryTransport) {
  using I = typename TypeParam::first_type;
  using V = typename TypeParam::second_type;
  int64_t calls = 0;
  // Each transport forced in turn; each pass builds its own matrices (the transport is chosen at a
  // matrix's first exchange). On one node shm is the default.
  std::vector<Results<V>> passes;
  for (const char* transport : {"shm", "mpi"}) {
    const sparseport_test::ScopedEnv env("SPARSEPORT_DIST_TRANSPORT", transport);
    passes.push_back(check_every_gradient<I, V>(transport, calls));
  }
  ASSERT_EQ(passes[0].size(), passes[1].size());  // the same on every rank
  int64_t differ = 0;
  for (size_t k = 0; k < passes[0].size(); ++k) differ += passes[0][k] != passes[1][k];
  EXPECT_EQ(differ, 0) << differ << " of " << passes[0].size() << " results differ between shm and mpi";
  if (g_rank == 0) std::printf("[          ] %lld distributed backward calls checked\n", static_cast<long long>(calls));
}

// The layers of adds: a hub column that is a ghost of every other rank, its partial sums summed in
// one order whatever the transport; its row of dB against the single-process one.
TEST(DistBackward, HubColumnReceivesEveryRanksPartialSum) {
  using I = int32_t;
  using V = float;
  const int64_t n = 64;
  std::mt19937_64 rng(g_seed + 5);
  std::vector<std::vector<int64_t>> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i)] = {0, (i * 7 + 3) % n};  // column 0 in every row
  for (auto& r : c) {
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  const auto a = from_rows<I, V>(n, n, c, false, rng);
  const int64_t f = 5;
  const sp::HostDense<V> x = make_dense<V>(n, f, g_seed + 6);
  const auto [want, unused] = expected_spmm_backward(a, make_dense<V>(n, f, 1), x, sp::Reduce::sum);
  std::vector<std::vector<V>> got;
  for (const char* transport : {"shm", "mpi"}) {
    const sparseport_test::ScopedEnv env("SPARSEPORT_DIST_TRANSPORT", transport);
    const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
    sp::HostDense<V> out(d.local_cols(), f);
    dist::CallStats st;
    dist::spmm_transpose(reference_ctx(), d, rows_of(x, d.first_row(), d.first_row() + d.local_rows()).view(),
                         out.mut(), {}, &st);
    EXPECT_EQ(compare_rows(out, d.first_col(), want, transport), 0) << transport;
    if (d.first_col() == 0 && d.local_cols() > 0) {
      // Row 0 of dB: every other rank's rows reach column 0.
      EXPECT_GE(st.boundary_rows, g_ranks > 1 ? 1 : 0) << transport;
      EXPECT_EQ(st.messages_received, g_ranks - 1) << transport;
    }
    got.push_back(out.data);
  }
  EXPECT_EQ(got[0], got[1]) << "shm and mpi differ";
}

// ---- bad arguments ------------------------------------------------------------------------------

// E (exactly that kind, or a subclass) whose message names the op and the argument, and, on the
// rank whose check failed (the others report it: "(reported by rank N)"), each of `words`.
template <class E, class Fn>
void expect_refusal(Fn&& fn, const std::string& op, const std::string& arg, const std::vector<std::string>& words = {}) {
  const std::optional<std::string> msg = refusal_message<E>(std::forward<Fn>(fn), op, arg);
  if (!msg) return;
  const size_t by = msg->find("(reported by rank ");
  if (by != std::string::npos) {
    EXPECT_NE(std::atoi(msg->c_str() + by + 18), g_rank) << *msg;
    return;
  }
  for (const std::string& w : words) EXPECT_NE(msg->find(w), std::string::npos) << "'" << w << "' in: " << *msg;
}

std::string shape(int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

TEST(DistBackward, BadArgumentsThrowOnEveryRank) {
  using I = int32_t;
  using V = float;
  using DM = sp::DimensionMismatch;
  std::mt19937_64 rng(3);
  const auto a = random_csr<I, V>(20, 20, 4, 0.1, false, false, rng);
  const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const sp::Context& ctx = reference_ctx();
  const int64_t f = 4, m = d.local_rows(), k = d.local_cols(), n = d.local_nnz();
  const bool last = g_rank == g_ranks - 1;
  sp::HostDense<V> b(k, f), dc(m, f), db(k, f), dv(n, 1), x(m, f), y(k, f), dout(n, 1), dx(m, f), dy(k, f);
  // Wrong on the last rank only: every rank throws the same kind, naming it.
  sp::HostDense<V> dc_one_off(last ? m + 1 : m, f);
  expect_refusal<DM>([&] { dist::spmm_backward(ctx, d, b.view(), dc_one_off.view(), sp::SpmmGrads{db.mut(), dv.mut()}); },
                     "spmm_backward", "dc_local", {shape(last ? m + 1 : m, f), "local_rows x F"});
  sp::HostDense<V> db_wide(k, f + 1), dv_long(n + 2, 1);
  expect_refusal<DM>([&] { dist::spmm_backward(ctx, d, b.view(), dc.view(), sp::SpmmGrads{db_wide.mut(), {}}); },
                     "spmm_backward", "grads.db", {shape(k, f + 1), shape(k, f)});
  expect_refusal<DM>([&] { dist::spmm_backward(ctx, d, b.view(), dc.view(), sp::SpmmGrads{{}, dv_long.mut()}); },
                     "spmm_backward", "grads.dvalues", {shape(n + 2, 1), shape(n, 1)});
  sp::HostDense<V> b_narrow(k, f - 1);
  expect_refusal<DM>([&] { dist::spmm_backward(ctx, d, b_narrow.view(), dc.view(), sp::SpmmGrads{{}, dv.mut()}); },
                     "spmm_backward", "b_local", {shape(k, f - 1)});
  // F different on one rank (the shapes agree with its own F): refused on every rank.
  if (g_ranks > 1) {
    sp::HostDense<V> dc_f(m, last ? f + 2 : f), db_f(k, last ? f + 2 : f);
    expect_refusal<sp::InvalidArgument>(
        [&] { dist::spmm_backward(ctx, d, b.view(), dc_f.view(), sp::SpmmGrads{db_f.mut(), {}}); }, "spmm_backward",
        "dc_local", {std::to_string(f) + " to " + std::to_string(f + 2), "same on every rank"});
  }
  expect_refusal<sp::Unsupported>(
      [&] {
        dist::spmm_backward(ctx, d, b.view(), dc.view(), sp::SpmmGrads{db.mut(), {}},
                            sp::SpmmBackwardOptions{sp::Reduce::max, nullptr, {}, {}});
      },
      "spmm_backward", "reduce max");
  const sp::Transpose t(ctx, a.view());
  expect_refusal<sp::InvalidArgument>(
      [&] {
        dist::spmm_backward(ctx, d, b.view(), dc.view(), sp::SpmmGrads{db.mut(), {}},
                            sp::SpmmBackwardOptions{sp::Reduce::sum, &t, {}, {}});
      },
      "spmm_backward", "opt.transpose");
  sp::HostDense<double> dc64(m, f);
  expect_refusal<sp::InvalidArgument>(
      [&] {
        dist::spmm_backward(ctx, d, b.view(), dc64.view(), sp::SpmmGrads{db.mut(), {}});
      },
      "spmm_backward", "dc_local", {"f64"});

  sp::HostDense<V> dout_short(last ? n + 1 : n, 1), dy_long(k + 3, f);
  expect_refusal<DM>(
      [&] {
        dist::sddmm_backward(ctx, d, x.view(), y.view(), dout_short.view(), sp::SddmmGrads{dx.mut(), dy.mut(), dv.mut()});
      },
      "sddmm_backward", "dout_local", {shape(last ? n + 1 : n, 1)});
  expect_refusal<DM>(
      [&] { dist::sddmm_backward(ctx, d, x.view(), y.view(), dout.view(), sp::SddmmGrads{{}, dy_long.mut(), {}}); },
      "sddmm_backward", "grads.dy", {shape(k + 3, f), shape(k, f)});
  sp::HostDense<V> y_short(k + 1, f);
  expect_refusal<DM>(
      [&] { dist::sddmm_backward(ctx, d, x.view(), y_short.view(), dout.view(), sp::SddmmGrads{dx.mut(), {}, {}}); },
      "sddmm_backward", "y_local", {shape(k + 1, f)});

  sp::HostDense<V> out(k, f), out_wide(k, f + 1);
  expect_refusal<sp::InvalidArgument>(
      [&] { dist::spmm_transpose(ctx, d, x.view(), out.mut(), sp::SpmmOptions{sp::Reduce::mean, 1.0, 0.0, {}}); },
      "spmm_transpose", "reduce is mean");
  expect_refusal<DM>([&] { dist::spmm_transpose(ctx, d, x.view(), out_wide.mut()); }, "spmm_transpose", "out_local",
                     {shape(k, f + 1), shape(k, f)});
  // Null data on the last rank only (20 rows on at most 4 ranks: every rank has some).
  expect_refusal<sp::InvalidArgument>(
      [&] {
        sp::DenseView v = x.view();
        if (last) v.data = nullptr;
        dist::spmm_transpose(ctx, d, v, out.mut());
      },
      "spmm_transpose", "x_local.data is null");

  // Still usable after the refusals: a correct call on the same matrix.
  const sp::HostDense<V> xg = make_dense<V>(a.rows, f, g_seed + 7);
  const auto [want, unused] = expected_spmm_backward(a, make_dense<V>(a.cols, f, 1), xg, sp::Reduce::sum);
  sp::HostDense<V> got(k, f);
  dist::spmm_transpose(ctx, d, rows_of(xg, d.first_row(), d.first_row() + m).view(), got.mut());
  EXPECT_EQ(compare_rows(got, d.first_col(), want, "spmm_transpose after refusals"), 0);
}

// Device contexts are refused on every rank, naming the op, until the path has run on a GPU.
TEST(DistBackward, DeviceContextsAreRefused) {
  using I = int32_t;
  using V = float;
  std::mt19937_64 rng(5);
  const auto a = random_csr<I, V>(16, 16, 3, 0.0, false, false, rng);
  const auto d = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr);
  const int64_t f = 2, m = d.local_rows(), k = d.local_cols(), n = d.local_nnz();
  bool any = false;
  for (const std::string& backend : test_backends()) {  // the same list on every rank
    const sp::Context ctx = make_context(backend);
    if (!ctx.device_memory()) continue;
    any = true;
    sp::HostDense<V> x(m, f), y(k, f), dout(n, 1), dx(m, f), dy(k, f), dv(n, 1);
    InContext on(ctx);
    expect_refusal<sp::Unsupported>([&] { dist::spmm_transpose(ctx, d, on.in(x), on.out(dy)); }, "spmm_transpose",
                                    "device memory");
    expect_refusal<sp::Unsupported>(
        [&] { dist::spmm_backward(ctx, d, on.in(y), on.in(x), sp::SpmmGrads{on.out(dy), on.out(dv)}); },
        "spmm_backward", "device memory");
    expect_refusal<sp::Unsupported>(
        [&] {
          dist::sddmm_backward(ctx, d, on.in(x), on.in(y), on.in(dout), sp::SddmmGrads{on.out(dx), on.out(dy), {}});
        },
        "sddmm_backward", "device memory");
  }
  if (!any) GTEST_SKIP() << "no device backend usable here (built without CUDA, or no GPU): nothing to refuse";
}

// ---- choosing the partition (host only) ------------------------------------------------------

// A clustered power-law graph: `clusters` RMAT graphs (hubs in each) as diagonal blocks, a few
// edges between them, and the vertex ids randomly permuted, so that contiguous ranges of ids cut
// nearly every edge while a graph partitioner finds the clusters.
sp::HostCsr<int32_t, float> clustered_power_law(int clusters, int scale, uint64_t seed) {
  const int64_t per = int64_t{1} << scale, n = per * clusters;
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n));
  std::mt19937_64 rng(seed);
  for (int c = 0; c < clusters; ++c) {
    const auto g = sp::generate<int32_t, float>("rmat:" + std::to_string(scale) + ":8",
                                                sp::GenOptions{seed + static_cast<uint64_t>(c), true});
    for (int64_t i = 0; i < g.rows; ++i)
      for (int32_t e = g.rowptr[static_cast<size_t>(i)]; e < g.rowptr[static_cast<size_t>(i) + 1]; ++e)
        rows[static_cast<size_t>(c * per + i)].push_back(c * per + g.colind[static_cast<size_t>(e)]);
  }
  std::uniform_int_distribution<int64_t> any(0, n - 1);
  for (int64_t k = 0; k < n / 16; ++k) rows[static_cast<size_t>(any(rng))].push_back(any(rng));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::shuffle(perm.begin(), perm.end(), rng);  // new id perm[old]
  std::vector<std::vector<int64_t>> relabelled(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    for (const int64_t j : rows[static_cast<size_t>(i)])
      relabelled[static_cast<size_t>(perm[static_cast<size_t>(i)])].push_back(perm[static_cast<size_t>(j)]);
  for (auto& r : relabelled) {
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  return from_rows<int32_t, float>(n, n, relabelled, false, rng);
}

TEST(DistPartitionChoice, BandKeepsRowsAndClusteredPowerLawTakesMetis) {
  const auto band = sp::generate<int32_t, float>("band:4000:9");
  const auto clustered = clustered_power_law(4, 8, g_seed % 1000 + 11);
  const int ranks = 4;
  using P = dist::PartitionPolicy;
  EXPECT_EQ(dist::partition_policy_from_name("metis", "--partition"), P::metis);
  expect_refusal<sp::InvalidArgument>([] { (void)dist::partition_policy_from_name("spectral", "--partition"); }, "",
                                      "--partition", {"spectral", "auto, rows or metis"});
  {
    const sparseport_test::ScopedEnv env("SPARSEPORT_DIST_PARTITION", "rows");
    EXPECT_EQ(dist::partition_policy_from_env(), P::rows);
  }

  // The band: contiguous rows are already optimal (each boundary cuts the band once) and the
  // degrees are flat, so auto does not even run METIS.
  const dist::PartitionChoice band_auto = dist::choose_partition(band.view(), ranks);
  EXPECT_EQ(band_auto.used, P::rows) << band_auto.reason;
  EXPECT_FALSE(band_auto.metis_ran) << band_auto.reason;
  EXPECT_LT(band_auto.degree_skew, dist::kMetisMinSkew);
  EXPECT_NE(band_auto.reason.find("skew"), std::string::npos) << band_auto.reason;
  EXPECT_EQ(band_auto.rows_halo.total_rows(),
            dist::predict_halo(band.view(), dist::partition_rows_by_entries(band.view(), ranks)).total_rows());
  EXPECT_EQ(band_auto.partition.row_starts, dist::partition_rows_by_entries(band.view(), ranks).row_starts);
  EXPECT_TRUE(band_auto.perm.empty());

  // The clustered power-law graph: skewed, and METIS finds the clusters that the scattered ids hide.
  const dist::PartitionChoice rows_forced = dist::choose_partition(clustered.view(), ranks, P::rows);
  EXPECT_EQ(rows_forced.used, P::rows);
  EXPECT_FALSE(rows_forced.metis_ran);
  EXPECT_GE(rows_forced.degree_skew, dist::kMetisMinSkew);
  if (!dist::has_metis()) {
    const dist::PartitionChoice c = dist::choose_partition(clustered.view(), ranks);
    EXPECT_EQ(c.used, P::rows);
    EXPECT_NE(c.reason.find("without METIS"), std::string::npos) << c.reason;
    EXPECT_THROW(dist::choose_partition(clustered.view(), ranks, P::metis), sp::Unsupported);
    GTEST_SKIP() << "sparseport::dist was built without METIS: the METIS half is skipped";
  }
  const dist::PartitionChoice c = dist::choose_partition(clustered.view(), ranks);
  EXPECT_EQ(c.used, P::metis) << c.reason;
  EXPECT_TRUE(c.metis_ran);
  EXPECT_GE(c.metis_ms, 0.0);
  EXPECT_LE(static_cast<double>(c.metis_halo.total_rows()),
            (1.0 - dist::kMetisMargin) * static_cast<double>(c.rows_halo.total_rows()))
      << c.reason;
  // What is reported is what the relabelled matrix then moves.
  const auto permuted = dist::permute_symmetric(clustered, c.perm);
  const dist::HaloVolume moved = dist::predict_halo(permuted.view(), c.partition);
  EXPECT_EQ(moved.rows, c.metis_halo.rows);
  EXPECT_EQ(c.rows_halo.rows, rows_forced.rows_halo.rows);
  if (g_rank == 0)
    std::printf("[          ] clustered power-law, %d ranks: %s; METIS %.1f ms\n", ranks, c.reason.c_str(), c.metis_ms);

  // Forced METIS on the band: it runs, but cannot beat the contiguous rows by the margin, which is
  // why auto would keep them even if the band were skewed.
  const dist::PartitionChoice band_metis = dist::choose_partition(band.view(), ranks, P::metis);
  EXPECT_EQ(band_metis.used, P::metis);
  EXPECT_TRUE(band_metis.metis_ran);
  EXPECT_GT(static_cast<double>(band_metis.metis_halo.total_rows()),
            (1.0 - dist::kMetisMargin) * static_cast<double>(band_metis.rows_halo.total_rows()));

  // One rank, or a rectangular A: rows, without METIS.
  EXPECT_EQ(dist::choose_partition(clustered.view(), 1).used, P::rows);
  std::mt19937_64 rng(4);
  const auto rect = random_csr<int32_t, float>(30, 40, 4, 0.0, false, false, rng);
  const dist::PartitionChoice r = dist::choose_partition(rect.view(), ranks);
  EXPECT_EQ(r.used, P::rows);
  EXPECT_FALSE(r.metis_ran);
}

}  // namespace

int main(int argc, char** argv) { return sparseport_dist_test::run_all_tests(argc, argv); }
