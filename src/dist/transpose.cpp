// SPDX-License-Identifier: Apache-2.0
// The transpose path: out = alpha A^T x + beta out over the row partition (dist::spmm_transpose,
// and the backward's dB = A^T dC and dY = (A o dout)^T X). A rank holds rows of A, so it can form
// A^T x only for the columns those rows touch: through L^T its own rows of the result, through R^T
// partial sums for the ghost columns, owned by other ranks. Those go back to their owners along
// the halo plan reversed (the rows a rank received in the forward exchange are the rows it now
// sends, in the same order), on a transport of their own, and the owner adds them. The partial
// sums are computed straight into the transport's send buffer (shm: the rank's window segment)
// and the owner's own rows (L^T) run while they fly.
//
// Why layers for the adds: a row owned here may receive a partial sum from several ranks (a hub
// column is a ghost of every rank). One spmm that added them all would sum them in an order the
// variant chooses (a merge-path split, a different variant on another transport's matrix), so the
// bits would depend on it. A layer adds at most one partial sum per row (1 * p + 1 * out: exact up
// to the one rounding of the add, the same in every variant), and the layers go in sender-rank
// order: out = ((own + p_first) + p_second) + ..., the same on every transport and every call.
#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/dist/ops_internal.hpp"

namespace sparseport::dist {
namespace {

using detail::Clock;
using detail::ms_since;
using detail::timed;

// b^T by a stable counting sort (the entries of each row of b^T in increasing row of b, as
// csr_transpose makes them), with per entry: its place in the rows' original order (orig of the
// block's entry) and mean's weight, A's value / deg(row) (1 / deg(row) for a pattern).
template <class I, class V>
void transpose_block(const HostCsr<I, V>& b, bool pattern, const std::vector<I>& orig, const std::vector<V>& inv_deg,
                     HostCsr<I, V>& t, std::vector<I>& t_orig, std::vector<V>& t_mean) {
  const size_t n = static_cast<size_t>(b.nnz());
  t.rows = b.cols;
  t.cols = b.rows;
  t.rowptr.assign(static_cast<size_t>(b.cols) + 1, I(0));
  for (const I c : b.colind) ++t.rowptr[static_cast<size_t>(c) + 1];
  for (size_t j = 0; j < static_cast<size_t>(b.cols); ++j) t.rowptr[j + 1] += t.rowptr[j];
  std::vector<I> next(t.rowptr.begin(), t.rowptr.end() - 1);
  t.colind.resize(n);
  if (!pattern) t.values.resize(n);
  t_orig.resize(n);
  t_mean.resize(n);
  for (int64_t i = 0; i < b.rows; ++i) {
    for (I e = b.rowptr[static_cast<size_t>(i)]; e < b.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      const size_t p = static_cast<size_t>(next[static_cast<size_t>(b.colind[static_cast<size_t>(e)])]++);
      t.colind[p] = static_cast<I>(i);
      t_orig[p] = orig[static_cast<size_t>(e)];
      // As sparseport::spmm_backward weighs mean: (1/deg) * value, in V.
      const V inv = inv_deg[static_cast<size_t>(i)];
      if (pattern) {
        t_mean[p] = inv;
      } else {
        t.values[p] = b.values[static_cast<size_t>(e)];
        t_mean[p] = inv * b.values[static_cast<size_t>(e)];
      }
    }
  }
}

// One layer's matrix with its columns (places in the receive buffer) replaced by their rows in the
// transport's in-place matrix of `rows` rows.
template <class I, class V>
const HostCsr<I, V>& in_place(std::optional<HostCsr<I, V>>& slot, const HostCsr<I, V>& layer,
                              const detail::Transport& t, int64_t rows) {
  if (slot && slot->cols == rows) return *slot;
  const std::vector<int64_t>& row = t.ghost_rows();
  HostCsr<I, V> k = layer;
  k.cols = rows;
  for (I& c : k.colind) c = static_cast<I>(row[static_cast<size_t>(c)]);
  slot = std::move(k);
  return *slot;
}

}  // namespace

namespace detail {

template <class I, class V>
typename DistCsr<I, V>::State::Reverse& reverse_of(typename DistCsr<I, V>::State& s) {
  if (s.reverse) return *s.reverse;
  typename DistCsr<I, V>::State::Reverse rv;
  const HostCsr<I, V>& loc = s.local;
  const HostCsr<I, V>& rem = s.remote;
  const int64_t m = loc.rows;
  const size_t n = s.remote_entry.size();

  // Each block kept its entries' relative order: the bit per entry is the whole mapping.
  rv.local_orig.reserve(static_cast<size_t>(loc.nnz()));
  rv.remote_orig.reserve(static_cast<size_t>(rem.nnz()));
  for (size_t e = 0; e < n; ++e) (s.remote_entry[e] ? rv.remote_orig : rv.local_orig).push_back(static_cast<I>(e));
  rv.iota.resize(std::max<size_t>(n, 1));
  std::iota(rv.iota.begin(), rv.iota.end(), I(0));

  // 1/deg per row (the full degree, both blocks), as sparseport::spmm_backward computes it.
  std::vector<V> inv_deg(static_cast<size_t>(m), V(0));
  for (int64_t i = 0; i < m; ++i) {
    const size_t k = static_cast<size_t>(i);
    const int64_t deg = (loc.rowptr[k + 1] - loc.rowptr[k]) + (rem.rowptr[k + 1] - rem.rowptr[k]);
    if (deg > 0) inv_deg[k] = V(1.0 / static_cast<double>(deg));
  }
  const auto per_entry = [&](const HostCsr<I, V>& b, std::vector<V>& out) {
    out.resize(static_cast<size_t>(b.nnz()));
    for (int64_t i = 0; i < b.rows; ++i)
      for (I e = b.rowptr[static_cast<size_t>(i)]; e < b.rowptr[static_cast<size_t>(i) + 1]; ++e)
        out[static_cast<size_t>(e)] = inv_deg[static_cast<size_t>(i)];
  };
  per_entry(loc, rv.local_inv_deg);
  per_entry(rem, rv.remote_inv_deg);
  transpose_block(loc, s.pattern, rv.local_orig, inv_deg, rv.local_t, rv.local_t_orig, rv.local_t_mean);
  transpose_block(rem, s.pattern, rv.remote_orig, inv_deg, rv.remote_t, rv.remote_t_orig, rv.remote_t_mean);

  // The halo plan reversed: the ghost rows' partial sums go to their owners, ghost after ghost
  // (ghost g is row g of R^T x, and the forward plan received it at place g); each owner receives
  // them where it packed those rows in the forward exchange.
  const HaloPlan& fw = s.plan;
  HaloPlan& rp = rv.plan;
  rp.send_peers = fw.recv_peers;
  rp.send_counts = fw.recv_counts;
  rp.send_displs = fw.recv_displs;
  rp.send_rows.resize(static_cast<size_t>(fw.recv_total()));
  std::iota(rp.send_rows.begin(), rp.send_rows.end(), int64_t{0});
  rp.recv_peers = fw.send_peers;
  rp.recv_counts = fw.send_counts;
  rp.recv_displs = fw.send_displs;

  // The layers (see the file comment): place k of the receive buffer holds a partial sum for this
  // rank's row send_rows[k]; the places are in sender-rank order, so the t-th one a row meets is
  // the t-th in that order.
  const int64_t cols = loc.cols;
  std::vector<int> seen(static_cast<size_t>(cols), 0);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> by_layer;  // (row, place) per layer
  for (size_t k = 0; k < fw.send_rows.size(); ++k) {
    const int64_t j = fw.send_rows[k];
    const size_t t = static_cast<size_t>(seen[static_cast<size_t>(j)]++);
    if (by_layer.size() <= t) by_layer.resize(t + 1);
    by_layer[t].emplace_back(j, static_cast<int64_t>(k));
  }
  for (const int c : seen) rv.boundary_rows += c > 0;
  for (auto& entries : by_layer) {
    std::sort(entries.begin(), entries.end());  // by row; one entry per row in a layer
    const int64_t lo = entries.front().first, hi = entries.back().first + 1;
    HostCsr<I, V> k;
    k.rows = hi - lo;
    k.cols = fw.send_total();
    k.rowptr.assign(static_cast<size_t>(k.rows) + 1, I(0));
    for (const auto& [j, place] : entries) {
      k.rowptr[static_cast<size_t>(j - lo) + 1] = I(1);
      k.colind.push_back(static_cast<I>(place));
    }
    for (size_t r = 0; r < static_cast<size_t>(k.rows); ++r) k.rowptr[r + 1] += k.rowptr[r];
    rv.layers.push_back(std::move(k));
    rv.layer_lo.push_back(lo);
  }
  rv.layers_in_place.resize(rv.layers.size());
  s.reverse = std::move(rv);
  return *s.reverse;
}

template <class I, class V>
void transpose_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local,
                      const DenseMutView& out_local, double alpha, double beta, const std::string& variant,
                      const BlockValues* values, CallStats& st, const std::string& w) {
  typename DistCsr<I, V>::State& s = a.state();
  Space& sp = s.space;
  sp.use(ctx);
  typename DistCsr<I, V>::State::Reverse& rv = reverse_of<I, V>(s);
  const auto started = Clock::now();
  st = CallStats();
  const int64_t f = x_local.cols;
  const auto finish = [&] {
    st.total_ms = ms_since(started);
    st.interior_ms = st.local_ms;
    st.boundary_ms = st.remote_ms + st.combine_ms;
    st.boundary_rows = rv.boundary_rows;
    st.interior_rows = a.local_cols() - rv.boundary_rows;
  };
  if (f == 0) {  // every rank has the same F (checked): nothing moves, out has no columns
    finish();
    return;
  }
  const auto block = [&](const HostCsr<I, V>& b, bool remote) {
    CsrView v = sp.place(b);
    if (values != nullptr) v.values = remote ? values->remote : values->local;
    return v;
  };
  Decision local;

  // 1. Receives first; then the partial sums for the ghosts' owners, straight into the send buffer.
  auto t0 = Clock::now();
  if (!sp.reverse_transport) sp.reverse_transport = choose_transport(s.comm, rv.plan, ctx, w, kReverseTag);
  Transport& t = *sp.reverse_transport;
  const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));
  const int64_t nsend = rv.plan.send_total(), nrecv = rv.plan.recv_total();
  V* recv = static_cast<V*>(sp.workspace(Space::reverse_recv, static_cast<size_t>(nrecv * row_bytes)));
  t.post_receives(recv, row_bytes);
  st.post_ms += ms_since(t0);
  try {
    V* send = static_cast<V*>(t.send_buffer(row_bytes));
    if (send == nullptr)
      send = static_cast<V*>(sp.workspace(Space::reverse_send, static_cast<size_t>(nsend * row_bytes)));
    if (nsend > 0)
      timed(ctx, st.remote_ms, [&] {  // synchronised: the transport reads the buffer from here on
        sparseport::spmm(ctx, block(rv.remote_t, true), x_local, make_dense<V>(nsend, f, f, send),
                         SpmmOptions{Reduce::sum, alpha, 0.0, variant});
        local = last_decision();
      });
    t0 = Clock::now();
    t.post_sends(send, row_bytes);
    st.post_ms += ms_since(t0);
  } catch (...) {
    t.drain();
    throw;
  }
  try {
    // 2. This rank's own rows while the partial sums fly.
    if (out_local.rows > 0)
      timed(ctx, st.local_ms, [&] {
        sparseport::spmm(ctx, block(rv.local_t, false), x_local, out_local,
                         SpmmOptions{Reduce::sum, alpha, beta, variant});
        if (rv.local_t.nnz() > 0 || local.variant.empty()) local = last_decision();
      });
    // 3. Wait; 4. add the received partial sums, layer after layer.
    const auto tw = Clock::now();
    const Transport::Done d = t.wait();
    st.wait_ms = ms_since(tw);
    st.exchange_ms = ms_since(started);
    st.bytes_sent = d.bytes_sent;
    st.bytes_received = d.bytes_received;
    st.messages_sent = d.messages_sent;
    st.messages_received = d.messages_received;
    st.transport = t.name();
    int64_t rows = 0;
    const void* at = t.ghosts_in_place(&rows);
    st.halo_in_place = at != nullptr;
    const DenseView received = at != nullptr ? make_dense<V>(rows, f, f, static_cast<const V*>(at))
                                             : make_dense<V>(nrecv, f, f, static_cast<const V*>(recv));
    if (!rv.layers.empty())
      timed(ctx, st.combine_ms, [&] {
        for (size_t l = 0; l < rv.layers.size(); ++l) {
          const HostCsr<I, V>& k =
              at != nullptr ? in_place(rv.layers_in_place[l], rv.layers[l], t, rows) : rv.layers[l];
          V* o = static_cast<V*>(out_local.data) + rv.layer_lo[l] * out_local.ld;
          sparseport::spmm(ctx, sp.place(k), received, make_dense<V>(k.rows, f, out_local.ld, o),
                           detail::exact_spmm(Reduce::sum, 1.0, 1.0));
        }
      });
  } catch (...) {
    t.drain();  // what was posted completes, so the other ranks' call finishes too
    throw;
  }
  st.local_decision = std::move(local);
  finish();
}

}  // namespace detail

template <class I, class V>
void spmm_transpose(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseMutView& out_local,
                    const SpmmOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "spmm_transpose");
  typename DistCsr<I, V>::State& s = a.state();
  const int64_t f = x_local.cols;
  const std::vector<int64_t> agreed = detail::max_over_ranks(s.comm, {f, -f}, w);
  detail::agree_on_checks(s.comm, [&] {
    detail::refuse_device_context(ctx, w);
    if (agreed[0] != -agreed[1])
      throw InvalidArgument(w + ": x_local has " + std::to_string(-agreed[1]) + " to " + std::to_string(agreed[0]) +
                            " columns across the ranks; F must be the same on every rank");
    if (opt.reduce != Reduce::sum)
      throw InvalidArgument(w + ": reduce is " + name(opt.reduce) +
                            "; A^T x is computed with reduce sum only (a DistCsr of A^T runs the others)");
    const ValueType vt = value_type_of<V>();
    detail::check_dense_operand(x_local, vt, a.local_rows(), f, "x_local", "this rank's rows of x: local_rows x F", w);
    detail::check_dense_operand(out_local, vt, a.local_cols(), f, "out_local",
                                "this rank's rows of A^T x: local_cols x x_local.cols", w);
  });
  CallStats st;
  detail::transpose_blocks<I, V>(ctx, a, x_local, out_local, opt.alpha, opt.beta, opt.variant, nullptr, st, w);
  if (stats != nullptr) *stats = std::move(st);
}

#define SPARSEPORT_DIST_TRANSPOSE(I, V)                                                                          \
  template void spmm_transpose<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseMutView&, \
                                     const SpmmOptions&, CallStats*);                                            \
  template void detail::transpose_blocks<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&,           \
                                               const DenseMutView&, double, double, const std::string&,          \
                                               const detail::BlockValues*, CallStats&, const std::string&);      \
  template typename DistCsr<I, V>::State::Reverse& detail::reverse_of<I, V>(typename DistCsr<I, V>::State&);
SPARSEPORT_DIST_TRANSPOSE(int32_t, float)
SPARSEPORT_DIST_TRANSPOSE(int32_t, double)
SPARSEPORT_DIST_TRANSPOSE(int64_t, float)
SPARSEPORT_DIST_TRANSPOSE(int64_t, double)
#undef SPARSEPORT_DIST_TRANSPOSE

}  // namespace sparseport::dist
